//! Decimal128 arithmetic for the expression operators, computed by libdecNumber (the `dec`
//! crate): IEEE 754-2008 decimal with 34 digits and round-half-even, as mongod computes.
//!
//! bson stores Decimal128 in the BID encoding and libdecNumber's `decQuad` is DPD, so values
//! cross between them through their canonical strings, which both parse exactly. `exp`, `ln`,
//! `log10`, `pow` and `sqrt` are correctly rounded here; mongod's Intel library may differ in the
//! last digit. Owns: conversions between bson decimals, doubles, integers and `dec` values, and
//! the operations. Does not own: which operator promotes to decimal when (the operators do).

use bson::Decimal128 as BsonDecimal;
use dec::{Context, Decimal, Decimal128 as D128, Rounding};
use std::cmp::Ordering;

/// A decimal value being computed with.
pub(in crate::query::expr::ops) type Dec = D128;

/// Working width for the transcendental functions: 36 digits, rounded to 34 at the end.
type Wide = Decimal<12>;

fn cx() -> Context<D128> {
    Context::<D128>::default()
}

fn nan() -> Dec {
    D128::NAN
}

/// A bson decimal as a value to compute with.
pub(in crate::query::expr::ops) fn from_bson(d: &BsonDecimal) -> Dec {
    cx().parse(d.to_string()).unwrap_or_else(|_| nan())
}

/// A computed value as a bson decimal.
pub(in crate::query::expr::ops) fn to_bson(d: Dec) -> BsonDecimal {
    let text = if d.is_nan() {
        "NaN".to_owned()
    } else {
        d.to_string()
    };
    text.parse()
        .unwrap_or_else(|_| "NaN".parse().unwrap_or(BsonDecimal::from_bytes([0; 16])))
}

pub(in crate::query::expr::ops) fn from_i64(i: i64) -> Dec {
    cx().from_i128(i128::from(i))
}

/// A double as mongod converts it: rounded to `digits` significant digits (15 for a double
/// operand meeting a decimal, 34 where mongod asks for the full width).
pub(in crate::query::expr::ops) fn from_f64(f: f64, digits: usize) -> Dec {
    if f.is_nan() {
        return nan();
    }
    if f.is_infinite() {
        return cx()
            .parse(if f > 0.0 { "Infinity" } else { "-Infinity" })
            .unwrap_or_else(|_| nan());
    }
    let precision = digits.saturating_sub(1);
    cx().parse(format!("{f:.precision$e}"))
        .unwrap_or_else(|_| nan())
}

/// A double's shortest round-trip digits as a decimal (results computed in double precision).
pub(in crate::query::expr::ops) fn from_f64_shortest(f: f64) -> Dec {
    if !f.is_finite() {
        return from_f64(f, 34);
    }
    cx().parse(format!("{f:e}")).unwrap_or_else(|_| nan())
}

/// The nearest double.
pub(in crate::query::expr::ops) fn to_f64(d: Dec) -> f64 {
    if d.is_nan() {
        return f64::NAN;
    }
    if d.is_infinite() {
        return if d.is_negative() {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    d.to_string().parse().unwrap_or(f64::NAN)
}

/// The value rounded to an integer with `rounding`, if it fits an `i64`.
pub(in crate::query::expr::ops) fn to_i64(d: Dec, rounding: Rounding) -> Option<i64> {
    let rounded = quantize(d, 0, rounding);
    if !rounded.is_finite() {
        return None;
    }
    let text = rounded.to_standard_notation_string();
    text.parse::<i64>().ok()
}

pub(in crate::query::expr::ops) fn add(a: Dec, b: Dec) -> Dec {
    cx().add(a, b)
}

pub(in crate::query::expr::ops) fn sub(a: Dec, b: Dec) -> Dec {
    cx().sub(a, b)
}

pub(in crate::query::expr::ops) fn mul(a: Dec, b: Dec) -> Dec {
    cx().mul(a, b)
}

pub(in crate::query::expr::ops) fn div(a: Dec, b: Dec) -> Dec {
    cx().div(a, b)
}

/// The remainder of truncating division (sign of the dividend), as mongod's `modulo`.
pub(in crate::query::expr::ops) fn rem(a: Dec, b: Dec) -> Dec {
    cx().rem(a, b)
}

pub(in crate::query::expr::ops) fn abs(a: Dec) -> Dec {
    cx().abs(a)
}

/// `d` rounded to `places` digits after the point (negative: before it) with `rounding`; NaN
/// when the result needs more than 34 digits.
pub(in crate::query::expr::ops) fn quantize(d: Dec, places: i32, rounding: Rounding) -> Dec {
    let mut c = cx();
    let Ok(quantum) = c.parse(format!("1E{}", -i64::from(places))) else {
        return nan();
    };
    c.set_rounding(rounding);
    c.quantize(d, quantum)
}

pub(in crate::query::expr::ops) fn compare(a: Dec, b: Dec) -> Option<Ordering> {
    cx().partial_cmp(a, b)
}

pub(in crate::query::expr::ops) fn is_positive(d: Dec) -> bool {
    compare(d, from_i64(0)) == Some(Ordering::Greater)
}

fn wide(d: Dec) -> Wide {
    Wide::from(d)
}

fn wide_cx() -> Context<Wide> {
    let mut c = Context::<Wide>::default();
    // 34 digits, so the final narrowing to Decimal128 rounds only once; decimal128's exponent
    // range, which also keeps within the bounds libdecNumber's exp/ln/log10/power accept (a
    // wider range makes them answer NaN).
    let _ = c.set_precision(34);
    let _ = c.set_max_exponent(6144);
    let _ = c.set_min_exponent(-6143);
    c
}

pub(in crate::query::expr::ops) fn exp(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().exp(&mut w);
    w.to_decimal128()
}

pub(in crate::query::expr::ops) fn ln(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().ln(&mut w);
    w.to_decimal128()
}

pub(in crate::query::expr::ops) fn log10(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().log10(&mut w);
    w.to_decimal128()
}

/// `log(d) / log(base)`, as mongod's `logarithm(base)`.
pub(in crate::query::expr::ops) fn log(d: Dec, base: Dec) -> Dec {
    let mut c = wide_cx();
    let (mut x, mut b) = (wide(d), wide(base));
    c.ln(&mut x);
    c.ln(&mut b);
    c.div(&mut x, &b);
    x.to_decimal128()
}

pub(in crate::query::expr::ops) fn pow(base: Dec, exponent: Dec) -> Dec {
    let mut w = wide(base);
    wide_cx().pow(&mut w, &wide(exponent));
    w.to_decimal128()
}

pub(in crate::query::expr::ops) fn sqrt(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().sqrt(&mut w);
    w.to_decimal128()
}
