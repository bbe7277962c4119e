//! `$round` and `$trunc`, with an optional place argument in [-20, 100]: mongod rounds through
//! Decimal128 (`quantize`), half to even for `$round` and toward zero for `$trunc`, so a double
//! rounds by its decimal digits (`$round: [2.5]` is 2, `$round: [1.005, 2]` is 1.0).

use super::super::super::value::{nullish, type_name};
use super::super::super::Value;
use super::{format_g, int_or_long, Num};
use crate::error::{Error, ErrorCode, Result};
use crate::query::decimal;
use crate::query::decimal::Rounding;
use bson::Bson;

pub(super) fn round(name: &'static str, values: Vec<Value>) -> Result<Value> {
    round_or_trunc(name, values, Rounding::HalfEven)
}

pub(super) fn trunc(name: &'static str, values: Vec<Value>) -> Result<Value> {
    round_or_trunc(name, values, Rounding::Down)
}

/// mongod's `coerceToLong` of the place argument (16004 for a non-number, 31109 for a double
/// out of range), then its integral (32-bit) and range checks.
fn places(name: &str, value: &Bson) -> Result<i32> {
    let Some(n) = Num::of(value) else {
        return Err(Error::new(
            ErrorCode::Location16004,
            format!(
                "can't convert from BSON type {} to long",
                type_name(&Some(value.clone()))
            ),
        ));
    };
    let as_long = match n {
        Num::Double(d) if !(d >= i64::MIN as f64 && d < i64::MAX as f64) => {
            return Err(Error::new(
                ErrorCode::Location31109,
                format!("Can't coerce out of range value {} to long", format_g(d)),
            ))
        }
        _ => n.to_i64(),
    };
    let integral = match n {
        Num::Int(_) => true,
        Num::Long(i) => i32::try_from(i).is_ok(),
        Num::Double(d) => d.fract() == 0.0 && i32::try_from(d as i64).is_ok(),
        Num::Decimal(d) => decimal::to_i64(d, Rounding::Down).is_some_and(|i| {
            i32::try_from(i).is_ok() && decimal::quantize(d, 0, Rounding::Down) == d
        }),
    };
    if !integral {
        return Err(Error::new(
            ErrorCode::Location51082,
            format!("precision argument to  {name} must be a integral value"),
        ));
    }
    if !(-20..=100).contains(&as_long) {
        return Err(Error::new(
            ErrorCode::Location51083,
            format!(
                "cannot apply {name} with precision value {as_long} value must be in [-20, 100]"
            ),
        ));
    }
    i32::try_from(as_long).map_err(|_| Error::internal("precision out of range"))
}

fn round_or_trunc(name: &'static str, values: Vec<Value>, rounding: Rounding) -> Result<Value> {
    let mut it = values.into_iter();
    let value = it.next().flatten();
    if nullish(&value) {
        return Ok(Some(Bson::Null));
    }
    let Some(n) = value.as_ref().and_then(Num::of) else {
        return Err(Error::new(
            ErrorCode::Location51081,
            format!(
                "{name} only supports numeric types, not {}",
                type_name(&value)
            ),
        ));
    };
    let place = match it.next() {
        None => 0,
        Some(p) if nullish(&p) => return Ok(Some(Bson::Null)),
        Some(Some(p)) => places(name, &p)?,
        Some(None) => return Ok(Some(Bson::Null)),
    };
    Ok(Some(match n {
        Num::Decimal(d) if d.is_infinite() => Bson::Decimal128(decimal::to_bson(d)),
        Num::Decimal(d) => {
            Bson::Decimal128(decimal::to_bson(decimal::quantize(d, place, rounding)))
        }
        Num::Double(x) => {
            let d = decimal::from_f64(x, 34);
            if d.is_infinite() {
                Bson::Double(x)
            } else {
                Bson::Double(decimal::to_f64(decimal::quantize(d, place, rounding)))
            }
        }
        Num::Int(_) | Num::Long(_) if place >= 0 => value.unwrap_or(Bson::Null),
        Num::Int(_) | Num::Long(_) => {
            let i = n.to_i64();
            let out = decimal::quantize(decimal::from_i64(i), place, rounding);
            let Some(out) = decimal::to_i64(out, Rounding::HalfEven) else {
                return Err(Error::new(
                    ErrorCode::Location51080,
                    format!(
                        "invalid conversion from Decimal128 result in {name} resulting from \
                         arguments: [{i}, {place}]"
                    ),
                ));
            };
            match n {
                Num::Long(_) => Bson::Int64(out),
                _ => int_or_long(out),
            }
        }
    }))
}
