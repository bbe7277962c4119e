//! `$bucket`: documents grouped into the ranges `[boundaries[i], boundaries[i+1])` of a
//! `groupBy` value (or a constant `default` bucket), each bucket's `_id` its lower boundary,
//! with `output` accumulators (`{count: {$sum: 1}}` when none), in `_id` order. mongod runs it
//! as a `$group` over a `$switch` and a `$sort`; so does this stage, through `group.rs` (and so
//! it spills as `$group` does).
//!
//! Owns: parsing `$bucket` with mongod's codes (40191–40202) and choosing a document's bucket.

use super::group::{accumulate, into_rows, parse_output, Grouped, Outputs};
use super::memory::Blocking;
use super::{Rows, StageLimits};
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::stats::constant;
use crate::query::accumulator::Accumulator;
use crate::query::collation::Collation;
use crate::query::compare::{compare_values_with, type_bracket};
use crate::query::expr::{Expression, Variables};
use crate::query::path::{render, type_name};
use bson::{Bson, Document};
use std::cmp::Ordering;

#[derive(Debug)]
pub struct Bucket {
    group_by: Expression,
    boundaries: Vec<Bson>,
    default: Option<Bson>,
    outputs: Outputs,
    /// Values and boundaries compare under this (the operation's collation).
    collation: Option<Collation>,
}

/// Whether `spec` is an expression `$bucket`/`$bucketAuto` accept as `groupBy`: a `$` path or
/// an object whose first field is an operator.
pub fn is_group_by(spec: &Bson) -> bool {
    match spec {
        Bson::String(s) => s.starts_with('$'),
        Bson::Document(d) => d.keys().next().is_some_and(|k| k.starts_with('$')),
        _ => false,
    }
}

/// The value of a constant expression.
fn constant_value(spec: &Bson, vars: &Variables) -> Result<Option<Bson>> {
    let expr = Expression::compile(spec, vars)?;
    if !constant(expr.node()) {
        return Ok(None);
    }
    Ok(Some(expr.eval(&Document::new())?.unwrap_or(Bson::Null)))
}

/// The default output of `$bucket`/`$bucketAuto`: `{count: {$sum: 1}}`.
pub fn default_outputs(vars: &Variables) -> Result<Outputs> {
    Ok(vec![(
        "count".to_owned(),
        Accumulator::compile("$sum", &Bson::Int32(1), vars)?,
    )])
}

impl Bucket {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<Bucket> {
        let Bson::Document(spec) = arg else {
            return Err(Error::new(
                ErrorCode::Location40201,
                format!(
                    "Argument to $bucket stage must be an object, but found type: {}.",
                    type_name(arg)
                ),
            ));
        };
        let (mut group_by, mut boundaries, mut default, mut outputs) =
            (None, Vec::new(), None, Vec::new());
        for (name, value) in spec {
            match name.as_str() {
                "groupBy" => {
                    if !is_group_by(value) {
                        return Err(Error::new(
                            ErrorCode::Location40202,
                            format!(
                                "The $bucket 'groupBy' field must be defined as a $-prefixed \
                                 path or an expression, but found: {}.",
                                render(value)
                            ),
                        ));
                    }
                    group_by = Some(Expression::compile(value, vars)?);
                }
                "boundaries" => boundaries = parse_boundaries(value, vars)?,
                "default" => {
                    default = Some(constant_value(value, vars)?.ok_or_else(|| {
                        Error::new(
                            ErrorCode::Location40195,
                            format!(
                                "The $bucket 'default' field must be a constant expression, but \
                                 found: {}.",
                                render(value)
                            ),
                        )
                    })?);
                }
                "output" => {
                    let Bson::Document(out) = value else {
                        return Err(Error::new(
                            ErrorCode::Location40196,
                            format!(
                                "The $bucket 'output' field must be an object, but found type: \
                                 {}.",
                                type_name(value)
                            ),
                        ));
                    };
                    for (field, acc) in out {
                        outputs.push(parse_output(field, acc, vars)?);
                    }
                }
                other => {
                    return Err(Error::new(
                        ErrorCode::Location40197,
                        format!("Unrecognized option to $bucket: {other}."),
                    ))
                }
            }
        }
        let (Some(group_by), false) = (group_by, boundaries.is_empty()) else {
            return Err(Error::new(
                ErrorCode::Location40198,
                "$bucket requires 'groupBy' and 'boundaries' to be specified.",
            ));
        };
        let collation = vars.collation();
        let compare_values = |a: &Bson, b: &Bson| compare_values_with(a, b, collation);
        if let (Some(d), Some(lo), Some(hi)) = (&default, boundaries.first(), boundaries.last()) {
            if compare_values(d, lo) != Ordering::Less && compare_values(d, hi) == Ordering::Less {
                return Err(Error::new(
                    ErrorCode::Location40199,
                    "The $bucket 'default' field must be less than the lowest boundary or \
                     greater than or equal to the highest boundary.",
                ));
            }
        }
        if outputs.is_empty() {
            outputs = default_outputs(vars)?;
        }
        Ok(Bucket {
            group_by,
            boundaries,
            default,
            outputs,
            collation: collation.cloned(),
        })
    }

    /// The `_id` of the bucket `value` falls in.
    fn bucket_of(&self, value: Option<Bson>) -> Result<Bson> {
        let compare_values =
            |a: &Bson, b: &Bson| compare_values_with(a, b, self.collation.as_ref());
        if let Some(v) = &value {
            for pair in self.boundaries.windows(2) {
                if let [lo, hi] = pair {
                    if compare_values(v, lo) != Ordering::Less
                        && compare_values(v, hi) == Ordering::Less
                    {
                        return Ok(lo.clone());
                    }
                }
            }
        }
        self.default.clone().ok_or_else(|| {
            Error::new(
                ErrorCode::Location40066,
                "$switch could not find a matching branch for an input, and no default was \
                 specified.",
            )
        })
    }

    pub fn apply(
        self,
        rows: Rows,
        limits: &StageLimits,
        spill: Option<&crate::engine::exec::spill::SpillDir>,
    ) -> Result<Rows> {
        let mut memory = limits.budget(Blocking::Group).spilling_to(spill);
        let keyed = rows.map(|row| {
            let doc = row?.doc;
            let key = self.bucket_of(self.group_by.eval(&doc)?)?;
            Ok((key, doc))
        });
        let collation = self.collation.as_ref();
        let grouped = match accumulate(&self.outputs, keyed, &mut memory, collation)? {
            Grouped::Memory(mut docs) => {
                docs.sort_by(|a, b| {
                    compare_values_with(
                        a.get("_id").unwrap_or(&Bson::Null),
                        b.get("_id").unwrap_or(&Bson::Null),
                        collation,
                    )
                });
                Grouped::Memory(docs)
            }
            spilled => spilled,
        };
        into_rows(grouped, limits)
    }
}

fn parse_boundaries(value: &Bson, vars: &Variables) -> Result<Vec<Bson>> {
    let Bson::Array(items) = value else {
        return Err(Error::new(
            ErrorCode::Location40200,
            format!(
                "The $bucket 'boundaries' field must be an array, but found type: {}.",
                type_name(value)
            ),
        ));
    };
    let mut boundaries = Vec::with_capacity(items.len());
    for item in items {
        boundaries.push(constant_value(item, vars)?.ok_or_else(|| {
            Error::new(
                ErrorCode::Location40191,
                format!(
                    "The $bucket 'boundaries' field must be an array of constant values, but \
                     found value: {}.",
                    render(item)
                ),
            )
        })?);
    }
    if boundaries.len() < 2 {
        return Err(Error::new(
            ErrorCode::Location40192,
            format!(
                "The $bucket 'boundaries' field must have at least 2 values, but found {} \
                 value(s).",
                boundaries.len()
            ),
        ));
    }
    for (i, pair) in boundaries.windows(2).enumerate() {
        let [lo, hi] = pair else { continue };
        if type_bracket(lo) != type_bracket(hi) {
            return Err(Error::new(
                ErrorCode::Location40193,
                format!(
                    "All values in the the 'boundaries' option to $bucket must have the same \
                     type. Found conflicting types {} and {}.",
                    type_name(lo),
                    type_name(hi)
                ),
            ));
        }
        if compare_values_with(lo, hi, vars.collation()) != Ordering::Less {
            return Err(Error::new(
                ErrorCode::Location40194,
                format!(
                    "The 'boundaries' option to $bucket must be sorted, but elements {} and {} \
                     are not in ascending order ({} is not less than {}).",
                    i,
                    i + 1,
                    render(lo),
                    render(hi)
                ),
            ));
        }
    }
    Ok(boundaries)
}
