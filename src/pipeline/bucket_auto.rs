//! `$bucketAuto`: documents sorted by a `groupBy` value and cut into `buckets` buckets of about
//! equal size, as mongod 7.0 cuts them: each bucket takes `round(n / buckets)` documents (at
//! least one; the last takes the rest) plus any that share its last value, its `_id` is
//! `{min, max}` with `max` the next bucket's `min` (the last bucket's own largest value); with
//! a `granularity` the boundaries are rounded to the series (granularity.rs) and documents
//! below a rounded-up boundary join the bucket.
//!
//! Owns: parsing (mongod's codes 40239–40261) and the cutting. Holds every document within the
//! stage's 100 MB; it does not spill (146 with `allowDiskUse`, 292 without).

use super::bucket::{default_outputs, is_group_by};
use super::granularity::Granularity;
use super::group::{parse_output, Outputs};
use super::memory::Blocking;
use super::{Row, Rows, StageLimits};
use crate::engine::cursor::HeldIter;
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::State;
use crate::query::compare::{compare_values, compare_values_with, is_number};
use crate::query::expr::{Expression, Variables};
use crate::query::path::{render, type_name};
use crate::query::size::{document_size, value_size};
use bson::{doc, Bson, Document};
use std::cmp::Ordering;

#[derive(Debug)]
pub struct BucketAuto {
    group_by: Expression,
    buckets: usize,
    outputs: Outputs,
    granularity: Option<Granularity>,
    /// Values order under this (the operation's collation; `None`: simple).
    collation: Option<crate::query::collation::Collation>,
}

impl BucketAuto {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<BucketAuto> {
        let Bson::Document(spec) = arg else {
            return Err(Error::new(
                ErrorCode::Location40240,
                format!(
                    "The argument to $bucketAuto must be an object, but found type: {}",
                    type_name(arg)
                ),
            ));
        };
        let (mut group_by, mut buckets, mut outputs, mut granularity) =
            (None, None, Vec::new(), None);
        for (name, value) in spec {
            match name.as_str() {
                "groupBy" => {
                    if !is_group_by(value) {
                        return Err(Error::new(
                            ErrorCode::Location40239,
                            format!(
                                "The $bucketAuto 'groupBy' field must be defined as a $-prefixed \
                                 path or an expression object, but found: {}",
                                render(value)
                            ),
                        ));
                    }
                    group_by = Some(Expression::compile(value, vars)?);
                }
                "buckets" => {
                    if !is_number(value) {
                        return Err(Error::new(
                            ErrorCode::Location40241,
                            format!(
                                "The $bucketAuto 'buckets' field must be a numeric value, but \
                                 found type: {}",
                                type_name(value)
                            ),
                        ));
                    }
                    let Some(n) = crate::query::expr::value::integral_i32(value) else {
                        return Err(Error::new(
                            ErrorCode::Location40242,
                            format!(
                                "The $bucketAuto 'buckets' field must be representable as a \
                                 32-bit integer, but found {}",
                                render(value)
                            ),
                        ));
                    };
                    buckets = Some(n);
                }
                "output" => {
                    let Bson::Document(out) = value else {
                        return Err(Error::new(
                            ErrorCode::Location40244,
                            format!(
                                "The $bucketAuto 'output' field must be an object, but found \
                                 type: {}",
                                type_name(value)
                            ),
                        ));
                    };
                    for (field, acc) in out {
                        outputs.push(parse_output(field, acc, vars)?);
                    }
                }
                "granularity" => {
                    let Bson::String(g) = value else {
                        return Err(Error::new(
                            ErrorCode::Location40261,
                            format!(
                                "The $bucketAuto 'granularity' field must be a string, but found \
                                 type: {}",
                                type_name(value)
                            ),
                        ));
                    };
                    granularity = Some(Granularity::parse(g).ok_or_else(|| {
                        Error::new(
                            ErrorCode::Location40257,
                            format!("Unknown rounding granularity '{g}'"),
                        )
                    })?);
                }
                other => {
                    return Err(Error::new(
                        ErrorCode::Location40245,
                        format!("Unrecognized option to $bucketAuto: {other}"),
                    ))
                }
            }
        }
        let (Some(group_by), Some(buckets)) = (group_by, buckets) else {
            return Err(Error::new(
                ErrorCode::Location40246,
                "$bucketAuto requires 'groupBy' and 'buckets' to be specified",
            ));
        };
        if buckets <= 0 {
            return Err(Error::new(
                ErrorCode::Location40243,
                format!(
                    "The $bucketAuto 'buckets' field must be greater than 0, but found: {buckets}"
                ),
            ));
        }
        if outputs.is_empty() {
            outputs = default_outputs(vars)?;
        }
        Ok(BucketAuto {
            group_by,
            buckets: usize::try_from(buckets).unwrap_or(1),
            outputs,
            granularity,
            collation: vars.collation().cloned(),
        })
    }

    fn key_of(&self, doc: &Document) -> Result<Bson> {
        let key = self.group_by.eval(doc)?;
        if self.granularity.is_some() {
            let Some(k) = key.as_ref().filter(|k| is_number(k)) else {
                return Err(Error::new(
                    ErrorCode::Location40258,
                    format!(
                        "$bucketAuto can specify a 'granularity' with numeric boundaries only, \
                         but found a value with type: {}",
                        crate::query::expr::value::type_name(&key)
                    ),
                ));
            };
            let x = match k {
                Bson::Int32(i) => f64::from(*i),
                Bson::Int64(i) => *i as f64,
                Bson::Double(d) => *d,
                Bson::Decimal128(d) => crate::query::compare::Dec::decode(d).to_f64(),
                _ => 0.0,
            };
            if x.is_nan() {
                return Err(Error::new(
                    ErrorCode::Location40259,
                    "$bucketAuto can specify a 'granularity' with numeric boundaries only, but \
                     found a NaN",
                ));
            }
            if x < 0.0 {
                return Err(Error::new(
                    ErrorCode::Location40260,
                    "$bucketAuto can specify a 'granularity' with non-negative numbers only, but \
                     found a negative number",
                ));
            }
        }
        Ok(key.unwrap_or(Bson::Null))
    }

    pub fn apply(self, rows: Rows, limits: &StageLimits) -> Result<Rows> {
        let mut memory = limits.budget(Blocking::BucketAuto);
        let mut sorted = Vec::new();
        for row in rows {
            let doc = row?.doc;
            let key = self.key_of(&doc)?;
            memory.charge(document_size(&doc) + value_size(&key))?;
            sorted.push((key, doc));
        }
        let collation = self.collation.as_ref();
        sorted.sort_by(|a, b| compare_values_with(&a.0, &b.0, collation));
        let approx = if sorted.is_empty() {
            1
        } else {
            ((sorted.len() as f64 / self.buckets as f64).round() as usize).max(1)
        };
        let mut input = sorted.into_iter();
        let mut out = Vec::new();
        let mut next_min: Option<(Bson, Document)> = None;
        let mut previous_max: Option<Bson> = None;
        let mut number = 0;
        loop {
            let Some(first) = next_min.take().or_else(|| input.next()) else {
                break;
            };
            number += 1;
            let mut bucket = Open::new(&self, &first.0)?;
            if let Some(g) = &self.granularity {
                bucket.min = previous_max
                    .clone()
                    .unwrap_or_else(|| g.round_down(&first.0));
            }
            bucket.add(&self.outputs, first)?;
            let last = number == self.buckets;
            let mut taken = 1;
            while taken < approx || last {
                let Some(entry) = input.next() else { break };
                bucket.add(&self.outputs, entry)?;
                taken += 1;
            }
            let mut next = input.next();
            if let Some(g) = &self.granularity {
                let boundary = g.round_up(&bucket.max);
                while let Some(entry) = next.take() {
                    if compare_values(&boundary, &entry.0) == Ordering::Greater {
                        bucket.add(&self.outputs, entry)?;
                        next = input.next();
                    } else {
                        next = Some(entry);
                        break;
                    }
                }
                let zero = matches!(boundary, Bson::Double(d) if d == 0.0)
                    || matches!(boundary, Bson::Int32(0) | Bson::Int64(0));
                bucket.max = match &next {
                    Some((k, _)) if zero => g.round_down(k),
                    _ => boundary,
                };
            } else {
                while let Some(entry) = next.take() {
                    if compare_values_with(&bucket.max, &entry.0, collation) == Ordering::Equal {
                        bucket.add(&self.outputs, entry)?;
                        next = input.next();
                    } else {
                        next = Some(entry);
                        break;
                    }
                }
                if let Some((k, _)) = &next {
                    bucket.max = k.clone();
                }
            }
            next_min = next;
            previous_max = Some(bucket.max.clone());
            let doc = bucket.finish(&self.outputs);
            crate::query::depth::check_document(&doc)?;
            out.push((document_size(&doc), Row::computed(doc)));
        }
        Ok(Box::new(HeldIter::new(out, limits.held.clone()).map(Ok)))
    }
}

/// A bucket being filled.
struct Open {
    min: Bson,
    max: Bson,
    states: Vec<State>,
}

impl Open {
    fn new(stage: &BucketAuto, first: &Bson) -> Result<Open> {
        Ok(Open {
            min: first.clone(),
            max: first.clone(),
            states: stage
                .outputs
                .iter()
                .map(|(_, acc)| acc.start_group(&Bson::Null))
                .collect::<Result<_>>()?,
        })
    }

    fn add(&mut self, outputs: &Outputs, (key, doc): (Bson, Document)) -> Result<()> {
        self.max = key;
        for (state, (_, acc)) in self.states.iter_mut().zip(outputs) {
            state.add(acc.arg().eval(&doc)?)?;
        }
        Ok(())
    }

    fn finish(self, outputs: &Outputs) -> Document {
        let mut out = doc! {"_id": {"min": self.min, "max": self.max}};
        for (state, (name, _)) in self.states.into_iter().zip(outputs) {
            out.insert(name.clone(), state.finish());
        }
        out
    }
}
