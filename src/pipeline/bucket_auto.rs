//! `$bucketAuto`: documents sorted by a `groupBy` value and cut into `buckets` buckets of about
//! equal size, as mongod 7.0 cuts them: each bucket takes `round(n / buckets)` documents (at
//! least one; the last takes the rest) plus any that share its last value, its `_id` is
//! `{min, max}` with `max` the next bucket's `min` (the last bucket's own largest value); with
//! a `granularity` the boundaries are rounded to the series (granularity.rs) and documents
//! below a rounded-up boundary join the bucket.
//!
//! Owns: parsing (mongod's codes 40239–40261) and the cutting. The input is sorted as entries
//! of (`groupBy` value, the accumulators' arguments evaluated on the document) within the
//! stage's 100 MB; past it, 292 without `allowDiskUse`, and with it the entries spill through
//! the external sort (`memory::SpillingSort`) as mongod's sorter does, and the buckets are cut
//! while the sorted runs are merged (the bucket size needs only the entry count, known once
//! the input is sorted). One bucket's accumulators may hold at most 100 MB.

use super::bucket::{default_outputs, is_group_by};
use super::granularity::Granularity;
use super::group::{parse_output, Outputs};
use super::memory::{held_row, Blocking, Entries, SpillingSort, StageMemory};
use super::{Row, Rows, StageLimits};
use crate::engine::cursor::HeldIter;
use crate::engine::exec::spill::{DocOrder, SpillDir};
use crate::engine::exec::stages::MAX_BLOCKING_SORT_BYTES;
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::State;
use crate::query::compare::{compare_values, compare_values_with, is_number};
use crate::query::expr::{Expression, Value, Variables};
use crate::query::path::{render, type_name};

use bson::{doc, Bson, Document};
use std::cmp::Ordering;
use std::sync::Arc;

#[derive(Debug)]
pub struct BucketAuto {
    group_by: Expression,
    buckets: usize,
    outputs: Outputs,
    granularity: Option<Granularity>,
    /// The stage's budget (mongod's 100 MB; smaller in tests).
    limit: usize,
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
            limit: MAX_BLOCKING_SORT_BYTES,
            collation: vars.collation().cloned(),
        })
    }

    #[cfg(test)]
    fn with_limit(mut self, limit: usize) -> BucketAuto {
        self.limit = limit;
        self
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
                Bson::Decimal128(d) => crate::query::decimal::bson_to_f64(d),
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

    /// Sorts the input by `groupBy` value (each entry its value and the accumulators'
    /// arguments evaluated on its document, spilled past the budget with `allowDiskUse`), then
    /// cuts the sorted entries into buckets, streaming them when the sort spilled.
    pub fn apply(self, rows: Rows, limits: &StageLimits, spill: Option<&SpillDir>) -> Result<Rows> {
        let collation = self.collation.clone();
        let order: DocOrder = Arc::new(move |a: &Document, b: &Document| {
            compare_values_with(
                a.get("k").unwrap_or(&Bson::Null),
                b.get("k").unwrap_or(&Bson::Null),
                collation.as_ref(),
            )
        });
        let budget =
            StageMemory::with_limit(Blocking::BucketAuto, limits.allow_disk_use, self.limit);
        let mut sorter = SpillingSort::new(budget.fresh(), order, spill);
        for row in rows {
            let doc = row?.doc;
            let key = self.key_of(&doc)?;
            let mut args = Document::new();
            for (i, (_, acc)) in self.outputs.iter().enumerate() {
                if let Some(v) = acc.arg().eval(&doc)? {
                    args.insert(i.to_string(), v);
                }
            }
            sorter.push(doc! {"k": key, "a": args})?;
        }
        let total = sorter.count();
        let spilled = sorter.spills() > 0;
        let approx = if total == 0 {
            1
        } else {
            ((total as f64 / self.buckets as f64).round() as usize).max(1)
        };
        let buckets = Buckets {
            budget,
            input: sorter.finish(&limits.held),
            stage: self,
            approx,
            number: 0,
            next_min: None,
            previous_max: None,
        };
        if spilled {
            return Ok(Box::new(buckets.map(|b| b.map(Row::computed))));
        }
        let out = buckets
            .map(|b| {
                let row = Row::computed(b?);
                Ok((held_row(&row)?, row))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(HeldIter::new(out, limits.held.clone()).map(Ok)))
    }
}

/// An entry of the sorted input: the `groupBy` value and the accumulators' arguments.
type Entry = (Bson, Vec<Value>);

/// The buckets cut from the sorted entries, one at a time.
struct Buckets {
    stage: BucketAuto,
    input: Entries,
    /// Entries a bucket takes before equal values and granularity extend it.
    approx: usize,
    number: usize,
    next_min: Option<Entry>,
    previous_max: Option<Bson>,
    /// What one bucket's accumulators hold.
    budget: StageMemory,
}

impl Buckets {
    fn pull(&mut self) -> Result<Option<Entry>> {
        let Some(entry) = self.input.next() else {
            return Ok(None);
        };
        let mut entry = entry?;
        let key = entry.remove("k").unwrap_or(Bson::Null);
        let args = match entry.remove("a") {
            Some(Bson::Document(args)) => args,
            _ => return Err(Error::internal("a sorted $bucketAuto entry is malformed")),
        };
        let values = (0..self.stage.outputs.len())
            .map(|i| args.get(i.to_string()).cloned())
            .collect();
        Ok(Some((key, values)))
    }

    fn add(&mut self, bucket: &mut Open, entry: Entry) -> Result<()> {
        let delta = bucket.add(entry)?;
        self.budget.note_delta(delta);
        if self.budget.over_limit() {
            return Err(self.budget.exceeded_by_one());
        }
        Ok(())
    }

    fn next_bucket(&mut self) -> Result<Option<Document>> {
        let first = match self.next_min.take() {
            Some(first) => first,
            None => match self.pull()? {
                Some(first) => first,
                None => return Ok(None),
            },
        };
        self.number += 1;
        self.budget.reset();
        let mut bucket = Open::new(&self.stage, &first.0)?;
        if let Some(g) = &self.stage.granularity {
            bucket.min = self
                .previous_max
                .clone()
                .unwrap_or_else(|| g.round_down(&first.0));
        }
        self.add(&mut bucket, first)?;
        let last = self.number == self.stage.buckets;
        let mut taken = 1;
        while taken < self.approx || last {
            let Some(entry) = self.pull()? else { break };
            self.add(&mut bucket, entry)?;
            taken += 1;
        }
        let mut next = self.pull()?;
        if let Some(g) = self.stage.granularity {
            let boundary = g.round_up(&bucket.max);
            while let Some(entry) = next.take() {
                if compare_values(&boundary, &entry.0) == Ordering::Greater {
                    self.add(&mut bucket, entry)?;
                    next = self.pull()?;
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
                if compare_values_with(&bucket.max, &entry.0, self.stage.collation.as_ref())
                    == Ordering::Equal
                {
                    self.add(&mut bucket, entry)?;
                    next = self.pull()?;
                } else {
                    next = Some(entry);
                    break;
                }
            }
            if let Some((k, _)) = &next {
                bucket.max = k.clone();
            }
        }
        self.next_min = next;
        self.previous_max = Some(bucket.max.clone());
        let doc = bucket.finish(&self.stage.outputs);
        crate::query::depth::check_document(&doc)?;
        Ok(Some(doc))
    }
}

impl Iterator for Buckets {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_bucket().transpose()
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

    /// Adds an entry; returns how many bytes the states grew by.
    fn add(&mut self, (key, values): Entry) -> Result<isize> {
        self.max = key;
        let mut grown = 0;
        for (state, value) in self.states.iter_mut().zip(values) {
            grown += state.add(value)?;
        }
        Ok(grown)
    }

    fn finish(self, outputs: &Outputs) -> Document {
        let mut out = doc! {"_id": {"min": self.min, "max": self.max}};
        for (state, (name, _)) in self.states.into_iter().zip(outputs) {
            out.insert(name.clone(), state.finish());
        }
        out
    }
}

#[cfg(test)]
#[path = "bucket_auto_tests.rs"]
mod tests;
