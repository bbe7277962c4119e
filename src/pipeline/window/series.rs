//! The numeric window functions over a partition's series of (sort value, input) points:
//! `$covariancePop`/`$covarianceSamp`, `$derivative`, `$integral` (trapezoids) and
//! `$linearFill`, with mongod's run-time errors.
//!
//! Owns: the arithmetic, in doubles. Does not own: parsing or frames (`functions.rs`,
//! `frames.rs`).

use super::frames::numeric;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::{compare_values, is_number};
use crate::query::expr::value::type_name;
use crate::query::expr::Value;
use bson::Bson;
use std::cmp::Ordering;

pub(super) fn covariance(pairs: &[(f64, f64)], sample: bool) -> Bson {
    let n = pairs.len() as f64;
    if pairs.is_empty() || (sample && pairs.len() < 2) {
        return Bson::Null;
    }
    let (mx, my) = pairs
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x / n, sy + y / n));
    let c: f64 = pairs.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    Bson::Double(c / if sample { n - 1.0 } else { n })
}

/// A sort value as a number: milliseconds for a date (with a unit), else the number itself.
fn abscissa(v: &Value, unit: Option<i64>, name: &str, codes: [ErrorCode; 2]) -> Result<f64> {
    match (unit, v) {
        (Some(_), Some(Bson::DateTime(d))) => Ok(d.timestamp_millis() as f64),
        (Some(_), _) => Err(Error::new(
            codes[0],
            format!("{name} with 'unit' expects the sortBy field to be a Date"),
        )),
        (None, Some(v)) if is_number(v) => Ok(numeric(v).unwrap_or(f64::NAN)),
        (None, _) => Err(Error::new(
            codes[1],
            format!("{name} (with no 'unit') expects the sortBy field to be numeric"),
        )),
    }
}

pub(super) fn derivative(
    keys: &[Value],
    ys: &[Value],
    lo: usize,
    hi: usize,
    unit: Option<i64>,
) -> Result<Value> {
    let key = |i: usize| keys.get(i).cloned().flatten();
    if unit.is_none()
        && [lo, hi]
            .iter()
            .any(|&i| matches!(key(i), Some(Bson::DateTime(_))))
    {
        return Err(Error::new(
            ErrorCode::Location5624901,
            "$derivative where the sortBy is a Date requires an 'unit'",
        ));
    }
    let codes = [ErrorCode::Location5624900, ErrorCode::Location5624902];
    let run = abscissa(&key(hi), unit, "$derivative", codes)?
        - abscissa(&key(lo), unit, "$derivative", codes)?;
    let y = |i: usize| ys.get(i).cloned().flatten();
    let (y1, y2) = (y(lo), y(hi));
    let rise = match (y1.as_ref().and_then(numeric), y2.as_ref().and_then(numeric)) {
        (Some(a), Some(b)) => b - a,
        _ if [&y1, &y2]
            .iter()
            .any(|v| matches!(v, None | Some(Bson::Null | Bson::Undefined))) =>
        {
            return Err(Error::new(
                ErrorCode::Location5624903,
                "$derivative input must not be null or missing",
            ))
        }
        _ => {
            return Err(Error::type_mismatch(format!(
                "cant $subtract a {} from a {}",
                type_name(&y1),
                type_name(&y2)
            )))
        }
    };
    if run == 0.0 {
        return Ok(Some(Bson::Null));
    }
    // Per millisecond; a unit re-expresses it per unit, as mongod does.
    Ok(Some(Bson::Double(rise / run * unit.unwrap_or(1) as f64)))
}

pub(super) fn integral(
    keys: &[Value],
    ys: &[Value],
    lo: usize,
    hi: usize,
    unit: Option<i64>,
) -> Result<Value> {
    let codes = [ErrorCode::Location5423901, ErrorCode::Location5423902];
    let mut total = 0.0;
    let mut previous: Option<(f64, f64)> = None;
    for i in lo..=hi {
        let y = ys.get(i).cloned().flatten();
        let key = keys.get(i).cloned().flatten();
        let date_or_number =
            matches!(key, Some(Bson::DateTime(_))) || key.as_ref().is_some_and(is_number);
        let Some(y) = y
            .as_ref()
            .filter(|v| is_number(v))
            .and_then(numeric)
            .filter(|_| date_or_number)
        else {
            return Err(Error::new(
                ErrorCode::Location5423900,
                "The input value of $integral window function must be a vector of 2 value, the \
                 first value must be numeric or date type and the second must be numeric.",
            ));
        };
        let x = abscissa(&key, unit, "$integral", codes)?;
        if let Some((px, py)) = previous {
            total += (x - px) * (y + py) / 2.0;
        }
        previous = Some((x, y));
    }
    Ok(Some(Bson::Double(total / unit.unwrap_or(1) as f64)))
}

/// `$linearFill`: nulls between two numbers are interpolated along the sort value.
pub(super) fn linear_fill(keys: &[Value], ys: &[Value]) -> Result<Vec<Value>> {
    let mut points: Vec<Option<(f64, f64)>> = Vec::with_capacity(ys.len());
    let mut last_key: Option<Bson> = None;
    for (y, key) in ys.iter().zip(keys) {
        let nullish = matches!(y, None | Some(Bson::Null | Bson::Undefined));
        if !nullish && !y.as_ref().is_some_and(is_number) {
            return Err(Error::type_mismatch(format!(
                "Value to be filled must be numeric or nullish, but found {}",
                type_name(y)
            )));
        }
        let x = match key {
            Some(Bson::DateTime(d)) => d.timestamp_millis() as f64,
            Some(k) if is_number(k) => numeric(k).unwrap_or(f64::NAN),
            _ => {
                return Err(Error::type_mismatch(format!(
                    "Value of the sortBy field must be numeric or a date, but found {}",
                    type_name(key)
                )))
            }
        };
        let key = key.clone().unwrap_or(Bson::Null);
        if let Some(previous) = &last_key {
            if compare_values(previous, &key) == Ordering::Equal {
                return Err(Error::new(
                    ErrorCode::Location6050106,
                    "There can be no repeated values in the sort field",
                ));
            }
            if matches!(previous, Bson::DateTime(_)) != matches!(key, Bson::DateTime(_)) {
                return Err(Error::type_mismatch(format!(
                    "Conflicting sort value types, previously received type {}, but found {}",
                    crate::query::path::type_name(previous),
                    crate::query::path::type_name(&key)
                )));
            }
        }
        last_key = Some(key);
        points.push(if nullish {
            None
        } else {
            y.as_ref().and_then(numeric).map(|y| (x, y))
        });
    }
    let xs: Vec<f64> = keys
        .iter()
        .map(|k| match k {
            Some(Bson::DateTime(d)) => d.timestamp_millis() as f64,
            Some(k) => numeric(k).unwrap_or(f64::NAN),
            None => f64::NAN,
        })
        .collect();
    // The next known point after each position, found from the right.
    let mut next: Vec<Option<(f64, f64)>> = vec![None; points.len()];
    let mut seen = None;
    for (slot, p) in next.iter_mut().zip(&points).rev() {
        *slot = seen;
        if p.is_some() {
            seen = *p;
        }
    }
    let mut out = Vec::with_capacity(ys.len());
    let mut before: Option<(f64, f64)> = None;
    for (i, y) in ys.iter().enumerate() {
        if let Some(p) = points.get(i).copied().flatten() {
            before = Some(p);
            out.push(y.clone());
            continue;
        }
        let after = next.get(i).copied().flatten();
        out.push(Some(match (before, after, xs.get(i)) {
            (Some((x1, y1)), Some((x2, y2)), Some(x)) => {
                Bson::Double(y1 + (x - x1) * ((y2 - y1) / (x2 - x1)))
            }
            _ => Bson::Null,
        }));
    }
    Ok(out)
}
