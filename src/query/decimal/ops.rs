//! Decimal128 arithmetic, computed by libdecNumber (the `dec` crate): IEEE 754-2008 decimal with
//! 34 digits, round-half-even and the standard's overflow (to ±Infinity only beyond
//! 9.999…E+6144), underflow and NaN rules, as mongod computes with Intel's library. The basic
//! operations (`add`, `sub`, `mul`, `div`, `rem`, `quantize`) are correctly rounded in both
//! libraries, so they agree to the last digit and exponent; `exp`, `ln`, `log10`, `pow` and
//! `sqrt` are correctly rounded here, where mongod's library may differ in the last digit.
//!
//! Owns: the operations. Does not own: conversions (`convert`) or which operator promotes to
//! decimal when (the callers do).

use super::{cx, nan, Dec};
use dec::{Context, Decimal, Rounding};
use std::cmp::Ordering;

/// Working width for the transcendental functions: 36 digits, rounded to 34 at the end.
type Wide = Decimal<12>;

pub(crate) fn add(a: Dec, b: Dec) -> Dec {
    cx().add(a, b)
}

pub(crate) fn sub(a: Dec, b: Dec) -> Dec {
    cx().sub(a, b)
}

pub(crate) fn mul(a: Dec, b: Dec) -> Dec {
    cx().mul(a, b)
}

pub(crate) fn div(a: Dec, b: Dec) -> Dec {
    cx().div(a, b)
}

/// The remainder of truncating division (sign of the dividend), as mongod's `modulo`.
pub(crate) fn rem(a: Dec, b: Dec) -> Dec {
    cx().rem(a, b)
}

pub(crate) fn abs(a: Dec) -> Dec {
    cx().abs(a)
}

/// `d` rounded to `places` digits after the point (negative: before it) with `rounding`; NaN
/// when the result needs more than 34 digits.
pub(crate) fn quantize(d: Dec, places: i32, rounding: Rounding) -> Dec {
    let mut c = cx();
    let Ok(quantum) = c.parse(format!("1E{}", -i64::from(places))) else {
        return nan();
    };
    c.set_rounding(rounding);
    c.quantize(d, quantum)
}

pub(crate) fn compare(a: Dec, b: Dec) -> Option<Ordering> {
    cx().partial_cmp(a, b)
}

pub(crate) fn is_positive(d: Dec) -> bool {
    compare(d, Dec::ZERO) == Some(Ordering::Greater)
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

pub(crate) fn exp(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().exp(&mut w);
    w.to_decimal128()
}

pub(crate) fn ln(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().ln(&mut w);
    w.to_decimal128()
}

pub(crate) fn log10(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().log10(&mut w);
    w.to_decimal128()
}

/// `log(d) / log(base)`, as mongod's `logarithm(base)`.
pub(crate) fn log(d: Dec, base: Dec) -> Dec {
    let mut c = wide_cx();
    let (mut x, mut b) = (wide(d), wide(base));
    c.ln(&mut x);
    c.ln(&mut b);
    c.div(&mut x, &b);
    x.to_decimal128()
}

pub(crate) fn pow(base: Dec, exponent: Dec) -> Dec {
    let mut w = wide(base);
    wide_cx().pow(&mut w, &wide(exponent));
    w.to_decimal128()
}

pub(crate) fn sqrt(d: Dec) -> Dec {
    let mut w = wide(d);
    wide_cx().sqrt(&mut w);
    w.to_decimal128()
}
