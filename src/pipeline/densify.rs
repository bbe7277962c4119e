//! `$densify`: documents generated where a numeric or date field skips values of its sequence
//! `range.bounds` (`"full"`, `"partition"` or `[lo, hi)`) stepped by `range.step` (in
//! `range.unit`s for dates), within the partitions of `partitionByFields`.
//!
//! Owns: parsing `$densify` with mongod's rules and generating the documents. The sequence is
//! anchored at the lower bound (the smallest value for `"full"`, each partition's smallest
//! for `"partition"`) and advanced by adding the step again and again, as mongod does; values
//! at the upper bound or past it are not generated, nor values a document of the partition
//! already has. A generated document holds only the field and the partition fields, and is a
//! computed row (no stored document backs it, so it never expires); input rows keep their
//! documents' expiry (TTL-18). Documents whose field is null or missing pass through
//! unchanged. Output is sorted as mongod's desugared `$sort` does: by the partition fields
//! (not with `"full"`) and the field. Like mongod, at most 500,000 documents are generated.

use super::memory::{held_row, Blocking, StageLimits};
use super::{Row, Rows};
use crate::calendar::{unit::add, TimeUnit, Zone};
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::OrdBson;
use crate::query::collation::Collation;
use crate::query::compare::{compare_values, compare_values_with, is_number};
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// mongod's `internalQueryMaxAllowedDensifyDocs`.
const MAX_GENERATED: usize = 500_000;

/// How many steps of `step` a numeric range `[lo, hi)` holds; `None` when a bound is not a
/// plain number.
fn numeric_steps(lo: &Bson, hi: &Bson, step: &Bson) -> Option<usize> {
    let number = |v: &Bson| match v {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(d) if d.is_finite() => Some(*d),
        _ => None,
    };
    let steps = ((number(hi)? - number(lo)?) / number(step)?).ceil();
    // A float-to-integer cast saturates; a negative or NaN count is no steps.
    Some(if steps > 0.0 { steps as usize } else { 0 })
}

#[derive(Debug)]
pub struct Densify {
    field: Vec<String>,
    partitions: Vec<(String, Vec<String>)>,
    step: Bson,
    unit: Option<TimeUnit>,
    bounds: Bounds,
    /// Partition values compare under this (the operation's collation; `None`: simple).
    collation: Option<Collation>,
}

#[derive(Debug, PartialEq)]
enum Bounds {
    Full,
    Partition,
    Explicit(Box<(Bson, Bson)>),
}

const STAGE: &str = "$densify";

fn unknown(path: &str) -> Error {
    Error::new(
        ErrorCode::IDLUnknownField,
        format!("BSON field '{STAGE}.{path}' is an unknown field."),
    )
}

fn missing(path: &str) -> Error {
    Error::new(
        ErrorCode::Location40414,
        format!("BSON field '{STAGE}.{path}' is missing but a required field"),
    )
}

fn wrong_type(path: &str, value: &Bson, expected: &str) -> Error {
    Error::type_mismatch(format!(
        "BSON field '{STAGE}.{path}' is the wrong type '{}', expected type '{expected}'",
        crate::query::path::type_name(value)
    ))
}

impl Densify {
    pub fn parse(arg: &Bson, collation: Option<&Collation>) -> Result<Densify> {
        let Bson::Document(spec) = arg else {
            return Err(Error::failed_to_parse(format!(
                "The {STAGE} stage specification must be an object, found {}",
                crate::query::path::type_name(arg)
            )));
        };
        let (mut field, mut partitions, mut range) = (None, Vec::new(), None);
        for (k, v) in spec {
            match k.as_str() {
                "field" => match v {
                    Bson::String(f) => field = Some(f.as_str()),
                    other => return Err(wrong_type(k, other, "string")),
                },
                "partitionByFields" => {
                    partitions = super::fill::parse_string_array_in(STAGE, k, v)?
                }
                "range" => match v {
                    Bson::Document(d) => range = Some(d),
                    other => return Err(wrong_type(k, other, "object")),
                },
                other => return Err(unknown(other)),
            }
        }
        let field = field.ok_or_else(|| missing("field"))?;
        let range = range.ok_or_else(|| missing("range"))?;
        let (mut step, mut unit, mut bounds) = (None, None, None);
        for (k, v) in range {
            match k.as_str() {
                "step" => step = Some(v),
                "unit" => match v {
                    Bson::String(u) => unit = Some(u.as_str()),
                    other => return Err(wrong_type("range.unit", other, "string")),
                },
                "bounds" => bounds = Some(v),
                other => return Err(unknown(&format!("range.{other}"))),
            }
        }
        let step = step.ok_or_else(|| missing("range.step"))?.clone();
        let bounds = bounds.ok_or_else(|| missing("range.bounds"))?;
        if !is_number(&step) || compare_values(&step, &Bson::Int32(0)) != Ordering::Greater {
            return Err(Error::new(
                ErrorCode::Location5733401,
                "The step parameter in a range statement must be a strictly positive numeric value",
            ));
        }
        let unit = match unit {
            Some(unit) => {
                if crate::query::expr::value::integral_i64(&step).is_none() {
                    return Err(Error::new(
                        ErrorCode::Location6586400,
                        "The step parameter in a range statement must be a whole number when \
                         densifying a date range",
                    ));
                }
                Some(TimeUnit::parse(unit)?)
            }
            None => None,
        };
        let bounds = parse_bounds(bounds, &step, unit)?;
        if matches!(step, Bson::Decimal128(_)) {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                "$densify over decimal values is not supported by this server",
            ));
        }
        if bounds == Bounds::Partition && partitions.is_empty() {
            return Err(Error::new(
                ErrorCode::Location5733408,
                "One cannot specify the bounds as 'partition' without specifying a non-empty \
                 array of partitionByFields. You may have meant to specify 'full' bounds.",
            ));
        }
        let field = super::window::output_path(field)?;
        let partitions = partitions
            .into_iter()
            .map(|p| super::window::output_path(&p).map(|path| (p, path)))
            .collect::<Result<_>>()?;
        Ok(Densify {
            field,
            partitions,
            step,
            unit,
            bounds,
            collation: collation.cloned(),
        })
    }

    /// Runs the stage over every input row; returns the output rows with their sizes.
    pub fn apply(&self, rows: Rows, limits: &StageLimits) -> Result<Vec<(usize, Row)>> {
        let mut memory = limits.budget(Blocking::Sort);
        // (partition key, field value or None, size, row)
        let mut all: Vec<(Bson, Option<Bson>, usize, Row)> = Vec::new();
        for row in rows {
            let row = row?;
            let size = held_row(&row)?;
            memory.charge(size)?;
            let value = match crate::query::path::get(&row.doc, &self.field) {
                None | Some(Bson::Null | Bson::Undefined) => None,
                Some(v) => Some(self.check_value(v)?),
            };
            all.push((self.partition_key(&row.doc), value, size, row));
        }
        // Partitions are keyed by their collation keys; each keeps the first key value seen,
        // which the documents generated in it take.
        let collation = self.collation.as_ref();
        let mut seen: BTreeMap<OrdBson, (Bson, Vec<Bson>)> = BTreeMap::new();
        for (key, value, _, _) in &all {
            let (_, values) = seen
                .entry(OrdBson::keyed(key, collation))
                .or_insert_with(|| (key.clone(), Vec::new()));
            values.extend(value.clone());
        }
        if seen.is_empty() && matches!(self.bounds, Bounds::Explicit(..)) {
            // Explicit bounds are densified even when no document has the field.
            let empty = Bson::Document(Document::new());
            seen.insert(OrdBson(empty.clone()), (empty, Vec::new()));
        }
        let (global_min, global_max) = extremes(seen.values().flat_map(|(_, v)| v));
        let mut generated = 0usize;
        for (key, values) in seen.values() {
            let (lo, hi) = match &self.bounds {
                Bounds::Full => (global_min.clone(), global_max.clone()),
                Bounds::Partition => extremes(values.iter()),
                Bounds::Explicit(ends) => (Some(ends.0.clone()), Some(ends.1.clone())),
            };
            let (Some(lo), Some(hi)) = (lo, hi) else {
                continue;
            };
            // Every generated document is held until the output is sorted: a numeric range
            // that must generate more than mongod's cap is refused with the cap's error before
            // it is generated (and before it passes the stage's memory). Steps the partition's
            // own values take are not generated, so they are subtracted.
            let steps = numeric_steps(&lo, &hi, &self.step).filter(|_| self.unit.is_none());
            if let Some(steps) = steps {
                if steps.saturating_sub(values.len()).saturating_add(generated) > MAX_GENERATED {
                    return Err(too_many(MAX_GENERATED + 1));
                }
            }
            let mut have: Vec<&Bson> = values.iter().collect();
            have.sort_by(|a, b| compare_values(a, b));
            let mut current = lo;
            while compare_values(&current, &hi) == Ordering::Less {
                let exists = have
                    .binary_search_by(|v| compare_values(v, &current))
                    .is_ok();
                if !exists {
                    generated += 1;
                    if generated > MAX_GENERATED {
                        return Err(too_many(generated));
                    }
                    let doc = self.generated(key, current.clone())?;
                    let row = Row::computed(doc);
                    let size = held_row(&row)?;
                    memory.charge(size)?;
                    all.push((key.clone(), Some(current.clone()), size, row));
                }
                crate::query::guard::tick()?;
                let next = self.next(&current)?;
                if compare_values(&next, &current) != Ordering::Greater {
                    // A step below the precision of a double near `current` (1.0 at 1e17):
                    // mongod generates the same value again until it passes its cap, so the
                    // answer is the cap's error, given at once.
                    return Err(too_many(MAX_GENERATED + 1));
                }
                current = next;
            }
        }
        let full = self.bounds == Bounds::Full;
        all.sort_by(|a, b| {
            let partition = if full {
                Ordering::Equal
            } else {
                compare_values_with(&a.0, &b.0, collation)
            };
            partition.then_with(|| {
                compare_values(
                    a.1.as_ref().unwrap_or(&Bson::Null),
                    b.1.as_ref().unwrap_or(&Bson::Null),
                )
            })
        });
        Ok(all
            .into_iter()
            .map(|(_, _, size, row)| (size, row))
            .collect())
    }

    fn check_value(&self, v: &Bson) -> Result<Bson> {
        let fits = match (self.unit, v) {
            (Some(_), Bson::DateTime(_)) => true,
            (None, v) => is_number(v) && !matches!(v, Bson::Decimal128(_)),
            _ => false,
        };
        if !fits {
            return Err(Error::new(
                ErrorCode::Location5733201,
                "PlanExecutor error during aggregation :: caused by :: Densify field type must be \
                 numeric or a date",
            ));
        }
        Ok(v.clone())
    }

    /// The partition fields' values, as a document (missing fields left out).
    fn partition_key(&self, doc: &Document) -> Bson {
        let mut key = Document::new();
        for (name, path) in &self.partitions {
            if let Some(v) = crate::query::path::get(doc, path) {
                key.insert(name.clone(), v.clone());
            }
        }
        Bson::Document(key)
    }

    fn generated(&self, key: &Bson, value: Bson) -> Result<Document> {
        let mut doc = Document::new();
        if let Bson::Document(key) = key {
            for (name, path) in &self.partitions {
                if let Some(v) = key.get(name) {
                    crate::query::path::set(&mut doc, path, v.clone())?;
                }
            }
        }
        crate::query::path::set(&mut doc, &self.field, value)?;
        Ok(doc)
    }

    /// The value after `v` in the sequence.
    fn next(&self, v: &Bson) -> Result<Bson> {
        let overflow = || {
            Error::new(
                ErrorCode::Overflow,
                "$densify stepped past the range of values",
            )
        };
        if let (Some(unit), Bson::DateTime(d)) = (self.unit, v) {
            let step = crate::query::expr::value::integral_i64(&self.step).unwrap_or(1);
            let ms = add(d.timestamp_millis(), unit, step, &Zone::Utc).ok_or_else(overflow)?;
            return Ok(Bson::DateTime(bson::DateTime::from_millis(ms)));
        }
        Ok(match (v, &self.step) {
            (Bson::Int32(a), Bson::Int32(b)) => a
                .checked_add(*b)
                .map_or_else(|| Bson::Int64(i64::from(*a) + i64::from(*b)), Bson::Int32),
            (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
                let (a, b) = (as_i64(v), as_i64(&self.step));
                a.checked_add(b)
                    .map_or_else(|| Bson::Double(a as f64 + b as f64), Bson::Int64)
            }
            _ => Bson::Double(as_f64(v) + as_f64(&self.step)),
        })
    }
}

/// mongod's error once more than [`MAX_GENERATED`] documents were generated.
fn too_many(generated: usize) -> Error {
    Error::new(
        ErrorCode::Location5897900,
        format!(
            "Generated {generated} documents in $densify, which is over the limit of \
             {MAX_GENERATED}. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to \
             allow more generated documents"
        ),
    )
}

fn as_i64(v: &Bson) -> i64 {
    match v {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        _ => 0,
    }
}

fn as_f64(v: &Bson) -> f64 {
    match v {
        Bson::Int32(n) => f64::from(*n),
        Bson::Int64(n) => *n as f64,
        Bson::Double(d) => *d,
        _ => f64::NAN,
    }
}

fn extremes<'a>(values: impl Iterator<Item = &'a Bson>) -> (Option<Bson>, Option<Bson>) {
    let mut lo: Option<&Bson> = None;
    let mut hi: Option<&Bson> = None;
    for v in values {
        if lo.is_none_or(|l| compare_values(v, l) == Ordering::Less) {
            lo = Some(v);
        }
        if hi.is_none_or(|h| compare_values(v, h) == Ordering::Greater) {
            hi = Some(v);
        }
    }
    (lo.cloned(), hi.cloned())
}

fn parse_bounds(bounds: &Bson, step: &Bson, unit: Option<TimeUnit>) -> Result<Bounds> {
    match bounds {
        Bson::Array(items) => {
            let (Some(lo), Some(hi), 2) = (items.first(), items.get(1), items.len()) else {
                return Err(Error::new(
                    ErrorCode::Location5733403,
                    "A bounding array in a range statement must have exactly two elements",
                ));
            };
            if compare_values(lo, hi) == Ordering::Greater {
                return Err(Error::new(
                    ErrorCode::Location5733402,
                    "A bounding array must be an ascending array of either two dates or two numbers",
                ));
            }
            if is_number(lo) {
                if unit.is_some() {
                    return Err(Error::new(
                        ErrorCode::Location5733409,
                        "Numeric bounds may not have unit parameter",
                    ));
                }
                if !is_number(hi) {
                    return Err(Error::new(
                        ErrorCode::Location5733406,
                        "A bounding array must contain either both dates or both numeric types",
                    ));
                }
                if std::mem::discriminant(lo) != std::mem::discriminant(hi)
                    || std::mem::discriminant(lo) != std::mem::discriminant(step)
                {
                    return Err(Error::new(
                        ErrorCode::Location5876900,
                        "Upper bound, lower bound, and step must all have the same type",
                    ));
                }
                return Ok(Bounds::Explicit(Box::new((lo.clone(), hi.clone()))));
            }
            if let Bson::DateTime(_) = lo {
                if !matches!(hi, Bson::DateTime(_)) {
                    return Err(Error::new(
                        ErrorCode::Location5733405,
                        "A bounding array must contain either both dates or both numeric types",
                    ));
                }
                if unit.is_none() {
                    return Err(Error::new(
                        ErrorCode::Location5733410,
                        "A bounding array of dates must specify a unit",
                    ));
                }
                return Ok(Bounds::Explicit(Box::new((lo.clone(), hi.clone()))));
            }
            Err(Error::new(
                ErrorCode::Location5946800,
                "Explicit bounds must be numeric or dates",
            ))
        }
        Bson::String(s) if s == "full" => Ok(Bounds::Full),
        Bson::String(s) if s == "partition" => Ok(Bounds::Partition),
        Bson::String(_) => Err(Error::new(
            ErrorCode::Location5946802,
            "Bounds string must either be 'full' or 'partition'",
        )),
        _ => Err(Error::new(
            ErrorCode::Location5733404,
            "The bounds in a range statement must be the string 'full', 'partition', or an \
             ascending array of two numbers or two dates",
        )),
    }
}

#[cfg(test)]
#[path = "densify_tests.rs"]
mod tests;
