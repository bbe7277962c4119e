//! Arithmetic operators: `$abs $add $ceil $divide $exp $floor $ln $log $log10 $mod $multiply
//! $pow $round $sqrt $subtract $trunc`, and the expression forms of `$sum $avg $stdDevPop
//! $stdDevSamp $median $percentile` (in `stats`).
//!
//! Numeric promotion follows mongod: int32 results widen to int64 when they overflow, int64 to
//! double (or an error where mongod gives one), and a decimal operand makes the result decimal
//! (computed in `query::decimal`, the arithmetic `$inc` and `$mul` use too). A double meeting a
//! decimal is first rounded to 15 significant digits, as mongod's `coerceToDecimal` does. Owns: these operators and the numeric view of a value
//! ([`Num`]). Does not own: comparisons (`compare`), conversions (`convert`).

mod round;
mod stats;
mod sum;

pub(super) use stats::accumulated as stats_accumulated;
#[cfg(test)]
mod tests;

use super::super::value::{nullish, type_name};
use super::super::{Compiler, Node, Value};
use super::{apply, Arity};
use crate::error::{Error, ErrorCode, Result};
use crate::query::decimal::Rounding;
use crate::query::decimal::{self, Dec};
use bson::{Bson, DateTime};
use sum::{widest_of, Widest};

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    let one = Arity::Exactly(1);
    let two = Arity::Exactly(2);
    Some(match name {
        "$abs" => apply("$abs", arg, c, one, |n, v| single(n, v, abs)),
        "$ceil" => apply("$ceil", arg, c, one, |n, v| single(n, v, ceil)),
        "$floor" => apply("$floor", arg, c, one, |n, v| single(n, v, floor)),
        "$exp" => apply("$exp", arg, c, one, |n, v| single(n, v, exp)),
        "$ln" => apply("$ln", arg, c, one, |n, v| single(n, v, ln)),
        "$log10" => apply("$log10", arg, c, one, |n, v| single(n, v, log10)),
        "$sqrt" => apply("$sqrt", arg, c, one, |n, v| single(n, v, sqrt)),
        "$add" => apply("$add", arg, c, Arity::Any, |_, v| sum::add(v)),
        "$multiply" => apply("$multiply", arg, c, Arity::Any, |_, v| sum::multiply(v)),
        "$subtract" => apply("$subtract", arg, c, two, |_, v| pair(v, subtract)),
        "$divide" => apply("$divide", arg, c, two, |_, v| pair(v, divide)),
        "$mod" => apply("$mod", arg, c, two, |_, v| pair(v, modulo)),
        "$log" => apply("$log", arg, c, two, |_, v| pair(v, log)),
        "$pow" => apply("$pow", arg, c, two, |_, v| pair(v, pow)),
        "$round" => apply("$round", arg, c, Arity::Between(1, 2), round::round),
        "$trunc" => apply("$trunc", arg, c, Arity::Between(1, 2), round::trunc),
        _ => return stats::compile(name, arg, c),
    })
}

/// A number as mongod's arithmetic sees it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Num {
    Int(i32),
    Long(i64),
    Double(f64),
    Decimal(Dec),
}

impl Num {
    pub(super) fn of(value: &Bson) -> Option<Num> {
        match value {
            Bson::Int32(i) => Some(Num::Int(*i)),
            Bson::Int64(i) => Some(Num::Long(*i)),
            Bson::Double(d) => Some(Num::Double(*d)),
            Bson::Decimal128(d) => Some(Num::Decimal(decimal::from_bson(d))),
            _ => None,
        }
    }

    /// mongod's `coerceToDouble`.
    pub(super) fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => f64::from(i),
            Num::Long(i) => i as f64,
            Num::Double(d) => d,
            Num::Decimal(d) => decimal::to_f64(d),
        }
    }

    /// mongod's `coerceToDecimal`: doubles keep 15 significant digits.
    pub(super) fn to_dec(self) -> Dec {
        match self {
            Num::Int(i) => decimal::from_i64(i64::from(i)),
            Num::Long(i) => decimal::from_i64(i),
            Num::Double(d) => decimal::from_f64(d, 15),
            Num::Decimal(d) => d,
        }
    }

    /// mongod's `coerceToLong` for numbers: doubles and decimals truncate toward zero and
    /// saturate.
    pub(super) fn to_i64(self) -> i64 {
        match self {
            Num::Int(i) => i64::from(i),
            Num::Long(i) => i,
            Num::Double(d) => d as i64,
            Num::Decimal(d) => decimal::to_i64(d, Rounding::Down).unwrap_or(0),
        }
    }

    pub(super) fn is_decimal(self) -> bool {
        matches!(self, Num::Decimal(_))
    }

    pub(super) fn is_double(self) -> bool {
        matches!(self, Num::Double(_))
    }
}

/// A decimal result.
pub(super) fn dec_value(d: Dec) -> Value {
    Some(Bson::Decimal128(decimal::to_bson(d)))
}

/// mongod's `Value::createIntOrLong`.
pub(super) fn int_or_long(i: i64) -> Bson {
    i32::try_from(i).map_or(Bson::Int64(i), Bson::Int32)
}

/// A double as mongod's `str::stream` prints it (C's `%g`: six significant digits).
pub(crate) fn format_g(x: f64) -> String {
    format_g_digits(x, 6)
}

/// A double as C's `%.<digits>g` prints it with glibc (`digits` ≥ 1), except that NaN is
/// `nan` whatever its sign.
pub(crate) fn format_g_digits(x: f64, digits: usize) -> String {
    let digits = digits.max(1);
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let sci = format!("{x:.prec$e}", prec = digits - 1);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    let exponent_limit = i32::try_from(digits).unwrap_or(i32::MAX);
    if (-4..exponent_limit).contains(&exponent) {
        let decimals = usize::try_from(exponent_limit - 1 - exponent).unwrap_or(0);
        trim(&format!("{x:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.unsigned_abs())
    }
}

/// The single operand of a one-number operator (mongod's `ExpressionSingleNumericArg`):
/// null for nullish input, 28765 for anything but a number.
pub(super) fn single(
    name: &'static str,
    values: Vec<Value>,
    f: impl FnOnce(Num) -> Result<Bson>,
) -> Result<Value> {
    let value = values.into_iter().next().flatten();
    if nullish(&value) {
        return Ok(Some(Bson::Null));
    }
    let Some(n) = value.as_ref().and_then(Num::of) else {
        return Err(Error::new(
            ErrorCode::Location28765,
            format!(
                "{name} only supports numeric types, not {}",
                type_name(&value)
            ),
        ));
    };
    f(n).map(Some)
}

/// The two operands of a binary operator.
fn pair(values: Vec<Value>, f: fn(Value, Value) -> Result<Value>) -> Result<Value> {
    let mut it = values.into_iter();
    let a = it.next().flatten();
    let b = it.next().flatten();
    f(a, b)
}

fn abs(n: Num) -> Result<Bson> {
    Ok(match n {
        Num::Double(d) => Bson::Double(d.abs()),
        Num::Decimal(d) => Bson::Decimal128(decimal::to_bson(decimal::abs(d))),
        Num::Int(_) | Num::Long(_) => {
            let i = n.to_i64();
            let Some(a) = i.checked_abs() else {
                return Err(Error::new(
                    ErrorCode::Location28680,
                    "can't take $abs of long long min",
                ));
            };
            match n {
                Num::Long(_) => Bson::Int64(a),
                _ => int_or_long(a),
            }
        }
    })
}

/// `$ceil`/`$floor`: integers are unchanged; decimals round to a zero exponent.
fn to_integer(n: Num, rounding: Rounding, f: fn(f64) -> f64) -> Bson {
    match n {
        Num::Double(d) => Bson::Double(f(d)),
        Num::Decimal(d) if d.is_infinite() || d.is_nan() => Bson::Decimal128(decimal::to_bson(d)),
        Num::Decimal(d) => Bson::Decimal128(decimal::to_bson(decimal::quantize(d, 0, rounding))),
        Num::Int(i) => Bson::Int32(i),
        Num::Long(i) => Bson::Int64(i),
    }
}

fn ceil(n: Num) -> Result<Bson> {
    Ok(to_integer(n, Rounding::Ceiling, f64::ceil))
}

fn floor(n: Num) -> Result<Bson> {
    Ok(to_integer(n, Rounding::Floor, f64::floor))
}

pub(super) fn decimal_bson(d: Dec) -> Bson {
    Bson::Decimal128(decimal::to_bson(d))
}

fn exp(n: Num) -> Result<Bson> {
    Ok(match n {
        Num::Decimal(d) => decimal_bson(decimal::exp(d)),
        _ => Bson::Double(n.to_f64().exp()),
    })
}

/// The 28766/28761 check of `$ln`/`$log10`: positive, or NaN.
fn positive(name: &str, code: ErrorCode, x: f64) -> Result<()> {
    if x > 0.0 || x.is_nan() {
        return Ok(());
    }
    Err(Error::new(
        code,
        format!(
            "{name}'s argument must be a positive number, but is {}",
            format_g(x)
        ),
    ))
}

fn ln(n: Num) -> Result<Bson> {
    if let Num::Decimal(d) = n {
        if decimal::is_positive(d) {
            return Ok(decimal_bson(decimal::ln(d)));
        }
    }
    let x = n.to_f64();
    positive("$ln", ErrorCode::Location28766, x)?;
    Ok(Bson::Double(x.ln()))
}

fn log10(n: Num) -> Result<Bson> {
    if let Num::Decimal(d) = n {
        if decimal::is_positive(d) {
            return Ok(decimal_bson(decimal::log10(d)));
        }
    }
    let x = n.to_f64();
    positive("$log10", ErrorCode::Location28761, x)?;
    Ok(Bson::Double(x.log10()))
}

fn sqrt(n: Num) -> Result<Bson> {
    let negative = || {
        Error::new(
            ErrorCode::Location28714,
            "$sqrt's argument must be greater than or equal to 0",
        )
    };
    if let Num::Decimal(d) = n {
        // NaN passes through without an error.
        if decimal::compare(d, decimal::from_i64(0)) == Some(std::cmp::Ordering::Less) {
            return Err(negative());
        }
        return Ok(decimal_bson(decimal::sqrt(d)));
    }
    let x = n.to_f64();
    if x < 0.0 {
        return Err(negative());
    }
    Ok(Bson::Double(x.sqrt()))
}

fn subtract(a: Value, b: Value) -> Result<Value> {
    let (na, nb) = (a.as_ref().and_then(Num::of), b.as_ref().and_then(Num::of));
    if let (Some(x), Some(y)) = (na, nb) {
        let widest = widest_of(x).max(widest_of(y));
        return Ok(Some(match widest {
            Widest::Decimal => decimal_bson(decimal::sub(x.to_dec(), y.to_dec())),
            Widest::Double => Bson::Double(x.to_f64() - y.to_f64()),
            Widest::Long => match x.to_i64().checked_sub(y.to_i64()) {
                Some(d) => Bson::Int64(d),
                None => Bson::Double(x.to_f64() - y.to_f64()),
            },
            Widest::Int => int_or_long(x.to_i64() - y.to_i64()),
        }));
    }
    if nullish(&a) || nullish(&b) {
        return Ok(Some(Bson::Null));
    }
    match (&a, &b) {
        (Some(Bson::DateTime(x)), Some(Bson::DateTime(y))) => Ok(Some(Bson::Int64(
            x.timestamp_millis().wrapping_sub(y.timestamp_millis()),
        ))),
        (Some(Bson::DateTime(x)), _) if nb.is_some() => {
            let ms = nb.map_or(0, Num::to_i64);
            Ok(Some(Bson::DateTime(DateTime::from_millis(
                x.timestamp_millis().wrapping_sub(ms),
            ))))
        }
        (Some(Bson::DateTime(_)), _) => Err(Error::type_mismatch(format!(
            "can't $subtract {} from Date",
            type_name(&b)
        ))),
        _ => Err(Error::type_mismatch(format!(
            "can't $subtract {} from {}",
            type_name(&b),
            type_name(&a)
        ))),
    }
}

fn divide(a: Value, b: Value) -> Result<Value> {
    let (na, nb) = (a.as_ref().and_then(Num::of), b.as_ref().and_then(Num::of));
    if let (Some(x), Some(y)) = (na, nb) {
        let by_zero = || Error::bad_value("can't $divide by zero");
        if x.is_decimal() || y.is_decimal() {
            let denominator = y.to_dec();
            if denominator.is_zero() {
                return Err(by_zero());
            }
            return Ok(dec_value(decimal::div(x.to_dec(), denominator)));
        }
        let denominator = y.to_f64();
        if denominator == 0.0 {
            return Err(by_zero());
        }
        return Ok(Some(Bson::Double(x.to_f64() / denominator)));
    }
    if nullish(&a) || nullish(&b) {
        return Ok(Some(Bson::Null));
    }
    Err(Error::type_mismatch(format!(
        "$divide only supports numeric types, not {} and {}",
        type_name(&a),
        type_name(&b)
    )))
}

fn modulo(a: Value, b: Value) -> Result<Value> {
    let (na, nb) = (a.as_ref().and_then(Num::of), b.as_ref().and_then(Num::of));
    let (Some(x), Some(y)) = (na, nb) else {
        if nullish(&a) || nullish(&b) {
            return Ok(Some(Bson::Null));
        }
        return Err(Error::new(
            ErrorCode::Location16611,
            format!(
                "$mod only supports numeric types, not {} and {}",
                type_name(&a),
                type_name(&b)
            ),
        ));
    };
    if x.is_decimal() || y.is_decimal() {
        let divisor = y.to_dec();
        if divisor.is_zero() {
            return Err(Error::new(ErrorCode::Location5733415, "can't $mod by zero"));
        }
        return Ok(dec_value(decimal::rem(x.to_dec(), divisor)));
    }
    let right = y.to_f64();
    if right == 0.0 {
        return Err(Error::new(ErrorCode::Location16610, "can't $mod by zero"));
    }
    if x.is_double() || (y.is_double() && right.fract() != 0.0) || !right.is_finite() {
        return Ok(Some(Bson::Double(x.to_f64() % right)));
    }
    // An integral double divisor computes as an integer of the other operand's width.
    Ok(Some(match (x, y) {
        (Num::Long(_), _) | (_, Num::Long(_)) => {
            Bson::Int64(x.to_i64().checked_rem(y.to_i64()).unwrap_or(0))
        }
        _ => {
            let (l, r) = (x.to_i64(), y.to_i64());
            match (i32::try_from(l), i32::try_from(r)) {
                (Ok(l), Ok(r)) => Bson::Int32(l.checked_rem(r).unwrap_or(0)),
                _ => Bson::Int64(l.checked_rem(r).unwrap_or(0)),
            }
        }
    }))
}

fn log(a: Value, b: Value) -> Result<Value> {
    if nullish(&a) || nullish(&b) {
        return Ok(Some(Bson::Null));
    }
    let Some(x) = a.as_ref().and_then(Num::of) else {
        return Err(Error::new(
            ErrorCode::Location28756,
            format!("$log's argument must be numeric, not {}", type_name(&a)),
        ));
    };
    let Some(base) = b.as_ref().and_then(Num::of) else {
        return Err(Error::new(
            ErrorCode::Location28757,
            format!("$log's base must be numeric, not {}", type_name(&b)),
        ));
    };
    if x.is_decimal() || base.is_decimal() {
        let (xd, bd) = (x.to_dec(), base.to_dec());
        let one = decimal::from_i64(1);
        if decimal::is_positive(xd)
            && decimal::is_positive(bd)
            && decimal::compare(bd, one) != Some(std::cmp::Ordering::Equal)
        {
            return Ok(dec_value(decimal::log(xd, bd)));
        }
    }
    let (xf, bf) = (x.to_f64(), base.to_f64());
    if !(xf > 0.0 || xf.is_nan()) {
        return Err(Error::new(
            ErrorCode::Location28758,
            format!(
                "$log's argument must be a positive number, but is {}",
                format_g(xf)
            ),
        ));
    }
    if !((bf > 0.0 && bf != 1.0) || bf.is_nan()) {
        return Err(Error::new(
            ErrorCode::Location28759,
            format!(
                "$log's base must be a positive number not equal to 1, but is {}",
                format_g(bf)
            ),
        ));
    }
    Ok(Some(Bson::Double(xf.ln() / bf.ln())))
}

fn pow(a: Value, b: Value) -> Result<Value> {
    if nullish(&a) || nullish(&b) {
        return Ok(Some(Bson::Null));
    }
    let Some(base) = a.as_ref().and_then(Num::of) else {
        return Err(Error::new(
            ErrorCode::Location28762,
            format!("$pow's base must be numeric, not {}", type_name(&a)),
        ));
    };
    let Some(exponent) = b.as_ref().and_then(Num::of) else {
        return Err(Error::new(
            ErrorCode::Location28763,
            format!("$pow's exponent must be numeric, not {}", type_name(&b)),
        ));
    };
    let zero_negative = || {
        Error::new(
            ErrorCode::Location28764,
            "$pow cannot take a base of 0 and a negative exponent",
        )
    };
    if base.is_decimal() || exponent.is_decimal() {
        let (bd, ed) = (base.to_dec(), exponent.to_dec());
        if bd.is_zero() && ed.is_negative() {
            return Err(zero_negative());
        }
        return Ok(dec_value(decimal::pow(bd, ed)));
    }
    let (bf, ef) = (base.to_f64(), exponent.to_f64());
    if bf == 0.0 && ef < 0.0 {
        return Err(zero_negative());
    }
    if base.is_double() || exponent.is_double() {
        return Ok(Some(Bson::Double(bf.powf(ef))));
    }
    let long_result = matches!(base, Num::Long(_)) || matches!(exponent, Num::Long(_));
    let format = |r: i64| {
        if long_result {
            Bson::Int64(r)
        } else {
            int_or_long(r)
        }
    };
    let (b, e) = (base.to_i64(), exponent.to_i64());
    Ok(Some(match b {
        0 => format(if e == 0 { 1 } else { 0 }),
        1 => format(1),
        -1 => format(if e % 2 == 0 { 1 } else { -1 }),
        _ => match u32::try_from(e).ok().and_then(|e| b.checked_pow(e)) {
            Some(r) => format(r),
            None => Bson::Double(bf.powf(ef)),
        },
    }))
}
