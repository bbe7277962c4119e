//! Decimal128 numbers: the one home for reading, converting and computing with them. Pure.
//!
//! Owns: the BID bits of a bson Decimal128 (`parts`), the crossing between bson's Decimal128
//! (BID) and libdecNumber's `decQuad` (DPD, the `dec` crate's `Decimal128`, here `Dec`), bit by
//! bit through the coefficient and exponent so every value — negative zero, subnormals, the
//! largest exponents — crosses unchanged; the conversions mongod makes (an int32/int64 exactly,
//! a double rounded to 15 or 34 significant digits as `Decimal128(double, kRoundTo15Digits |
//! kRoundTo34Digits)`, a decimal to the nearest double or to an integer); and the arithmetic
//! (`ops`) with decimal128's rounding (34 digits, half-even) and overflow rules.
//!
//! Does not own: which operation promotes to decimal when (update operators, expressions and
//! accumulators decide, each as mongod does), the BSON order of decimals against other numbers
//! (`compare`, from `Parts`), or the index key encoding (`storage::keys`, from `Parts`).

mod ops;
mod parts;
#[cfg(test)]
mod tests;

pub(crate) use dec::Rounding;
pub(crate) use ops::*;
pub(crate) use parts::Parts;

use bson::Decimal128 as BsonDecimal;
use dec::Context;

/// A decimal value being computed with.
pub(crate) type Dec = dec::Decimal128;

/// The sign bit, in the same place in the BID and DPD encodings.
const SIGN_BIT: u128 = 1 << 127;

/// decimal128's context: 34 digits, exponents -6176..=6111, round half to even.
fn cx() -> Context<Dec> {
    Context::<Dec>::default()
}

fn nan() -> Dec {
    Dec::NAN
}

fn with_sign(d: Dec, negative: bool) -> Dec {
    let bits = u128::from_le_bytes(d.to_le_bytes());
    let bits = if negative {
        bits | SIGN_BIT
    } else {
        bits & !SIGN_BIT
    };
    Dec::from_le_bytes(bits.to_le_bytes())
}

fn infinity(negative: bool) -> Dec {
    // DPD infinity: combination field 11110, as in BID.
    with_sign(
        Dec::from_le_bytes((0x1E_u128 << 122).to_le_bytes()),
        negative,
    )
}

/// A bson decimal as a value to compute with, unchanged (sign, coefficient and exponent).
pub(crate) fn from_bson(d: &BsonDecimal) -> Dec {
    match Parts::of(d) {
        Parts::NaN => nan(),
        Parts::Infinity { negative } => infinity(negative),
        Parts::Finite {
            negative,
            coefficient,
            exponent,
        } => {
            let mut c = cx();
            // At most 34 digits and an exponent in decimal128's range: both steps are exact.
            let mut value = c.from_u128(coefficient);
            c.set_exponent(&mut value, exponent);
            with_sign(value, negative)
        }
    }
}

/// A computed value as a bson decimal, unchanged.
pub(crate) fn to_bson(d: Dec) -> BsonDecimal {
    let parts = if d.is_nan() {
        Parts::NaN
    } else if d.is_infinite() {
        Parts::Infinity {
            negative: d.is_signed(),
        }
    } else {
        Parts::Finite {
            negative: d.is_signed(),
            coefficient: d.coefficient().unsigned_abs(),
            exponent: d.exponent(),
        }
    };
    // A decQuad's coefficient and exponent are always in decimal128's range.
    parts
        .encode()
        .or_else(|| Parts::NaN.encode())
        .unwrap_or_else(|| BsonDecimal::from_bytes([0; 16]))
}

/// An integer, exactly (mongod's `Decimal128(int64_t)`).
pub(crate) fn from_i64(i: i64) -> Dec {
    cx().from_i128(i128::from(i))
}

/// A wide integer (an exact running total), rounded half-even to 34 digits if it needs more.
pub(crate) fn from_i128(i: i128) -> Dec {
    cx().from_i128(i)
}

/// A double as mongod converts it: rounded half-even to `digits` significant digits, keeping
/// them all (`2.5` to 15 digits is `2.50000000000000`). 15 is `kRoundTo15Digits`, what
/// arithmetic mixing a double into a decimal uses; 34 is `kRoundTo34Digits`.
pub(crate) fn from_f64(f: f64, digits: usize) -> Dec {
    if f.is_nan() {
        return nan();
    }
    if f.is_infinite() {
        return infinity(f < 0.0);
    }
    // Formatting with a precision rounds the double's exact binary value correctly.
    let precision = digits.saturating_sub(1);
    cx().parse(format!("{f:.precision$e}"))
        .unwrap_or_else(|_| nan())
}

/// A double's shortest round-trip digits as a decimal (results computed in double precision).
pub(crate) fn from_f64_shortest(f: f64) -> Dec {
    if !f.is_finite() {
        return from_f64(f, 34);
    }
    cx().parse(format!("{f:e}")).unwrap_or_else(|_| nan())
}

/// The nearest double (mongod's `Decimal128::toDouble`).
pub(crate) fn to_f64(d: Dec) -> f64 {
    Parts::of(&to_bson(d)).to_f64()
}

/// A bson decimal's nearest double.
pub(crate) fn bson_to_f64(d: &BsonDecimal) -> f64 {
    Parts::of(d).to_f64()
}

/// The value rounded to an integer with `rounding`, if it fits an `i64`.
pub(crate) fn to_i64(d: Dec, rounding: Rounding) -> Option<i64> {
    let rounded = quantize(d, 0, rounding);
    if !rounded.is_finite() {
        return None;
    }
    rounded.to_standard_notation_string().parse::<i64>().ok()
}

/// A bson decimal rounded to an integer, ties to even, and whether that was exact; `None` for
/// NaN, infinities and results outside `i64` (Intel's `bid128_to_int64_rnint`, mongod's
/// `Decimal128::toLong`).
pub(crate) fn nearest_i64(d: &BsonDecimal) -> Option<(i64, bool)> {
    let value = from_bson(d);
    let n = to_i64(value, Rounding::HalfEven)?;
    let exact = compare(value, from_i64(n)) == Some(std::cmp::Ordering::Equal);
    Some((n, exact))
}

/// The integer a bson decimal holds exactly, or `None` for NaN, infinities, fractions and
/// values outside `i64` (mongod's `toLongExact`).
pub(crate) fn exact_i64(d: &BsonDecimal) -> Option<i64> {
    nearest_i64(d).and_then(|(n, exact)| exact.then_some(n))
}

/// Any BSON number as an exact integer, if it has no fractional part and fits an `i64`
/// (a Decimal128 judged through its nearest double, as the filter's and the options' readers
/// always have); `None` for anything else.
pub(crate) fn integral(value: &bson::Bson) -> Option<i64> {
    let f = match value {
        bson::Bson::Int32(i) => return Some(i64::from(*i)),
        bson::Bson::Int64(i) => return Some(*i),
        bson::Bson::Double(d) => *d,
        bson::Bson::Decimal128(d) => bson_to_f64(d),
        _ => return None,
    };
    (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
}
