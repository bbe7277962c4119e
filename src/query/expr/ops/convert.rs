//! Type conversion: `$convert` (`to` as a type name or number, `onError`, `onNull`) and its
//! shorthands `$toBool $toDate $toDecimal $toDouble $toInt $toLong $toObjectId $toString`,
//! plus `$isNumber` and `$type`.
//!
//! The conversions are mongod 7.0's table; a pair it does not list is 241 ConversionFailure
//! "Unsupported conversion from X to Y in $convert with no onError value", and `onError`
//! catches exactly the ConversionFailure errors (a bad `to` is not one). A string becomes a
//! date through `date::parse_date_string`, the one home of date parsing.

use super::super::value::{iso_date_string, nullish, truthy, type_name};
use super::super::{Compiler, Context, Node, Operator, Value};
use super::arith::{format_g, Num};
use super::{apply, op, operands, Arity};
use crate::error::{Error, ErrorCode, Result};
use crate::query::decimal;
use crate::query::decimal::Rounding;
use bson::oid::ObjectId;
use bson::{Bson, DateTime};

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;

/// A conversion target: a BSON type number (`-1` minKey, `127` maxKey, `0` missing).
type Target = i32;

const SHORTHANDS: &[(&str, Target)] = &[
    ("$toDouble", 1),
    ("$toString", 2),
    ("$toObjectId", 7),
    ("$toBool", 8),
    ("$toDate", 9),
    ("$toInt", 16),
    ("$toLong", 18),
    ("$toDecimal", 19),
];

/// `$convert`'s `to` names: `$type`'s names, and `"missing"` (0), which never converts.
fn type_names() -> impl Iterator<Item = &'static (&'static str, Target)> {
    crate::query::path::TYPE_ALIASES
        .iter()
        .chain(std::iter::once(&("missing", 0)))
}

fn target_name(t: Target) -> &'static str {
    type_names()
        .find(|(_, n)| *n == t)
        .map_or("missing", |(name, _)| name)
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    if let Some((short, target)) = SHORTHANDS.iter().find(|(n, _)| *n == name) {
        return Some(compile_shorthand(short, *target, arg, c));
    }
    Some(match name {
        "$convert" => compile_convert(arg, c),
        "$isNumber" => apply("$isNumber", arg, c, Arity::Exactly(1), |_, v| {
            let value = v.into_iter().next().flatten();
            Ok(Some(Bson::Boolean(
                value.as_ref().and_then(Num::of).is_some(),
            )))
        }),
        "$type" => apply("$type", arg, c, Arity::Exactly(1), |_, v| {
            let value = v.into_iter().next().flatten();
            Ok(Some(Bson::String(type_name(&value).to_owned())))
        }),
        _ => return None,
    })
}

#[derive(Debug)]
struct Convert {
    input: Node,
    to: Node,
    on_error: Option<Node>,
    on_null: Option<Node>,
}

fn compile_shorthand(name: &str, target: Target, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let args = operands(name, arg, c, Arity::Any)?;
    let n = args.len();
    let Some(input) = args.into_iter().next().filter(|_| n == 1) else {
        return Err(Error::new(
            ErrorCode::Location50723,
            format!("{name} requires a single argument, got {n}"),
        ));
    };
    Ok(op(Convert {
        input,
        to: Node::Const(Bson::String(target_name(target).to_owned())),
        on_error: None,
        on_null: None,
    }))
}

fn compile_convert(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::failed_to_parse(format!(
            "$convert expects an object of named arguments but found: {}",
            type_name(&Some(arg.clone()))
        )));
    };
    let (mut input, mut to, mut on_error, mut on_null) = (None, None, None, None);
    for (k, v) in d {
        let slot = match k.as_str() {
            "input" => &mut input,
            "to" => &mut to,
            "onError" => &mut on_error,
            "onNull" => &mut on_null,
            _ => {
                return Err(Error::failed_to_parse(format!(
                    "$convert found an unknown argument: {k}"
                )))
            }
        };
        *slot = Some(c.compile(v)?);
    }
    let input =
        input.ok_or_else(|| Error::failed_to_parse("Missing 'input' parameter to $convert"))?;
    let to = to.ok_or_else(|| Error::failed_to_parse("Missing 'to' parameter to $convert"))?;
    Ok(op(Convert {
        input,
        to,
        on_error,
        on_null,
    }))
}

/// mongod's `computeTargetType`.
fn target_of(to: &Bson) -> Result<Target> {
    match to {
        Bson::String(s) => type_names()
            .find(|(name, _)| name == s)
            .map(|(_, t)| *t)
            .ok_or_else(|| Error::bad_value(format!("Unknown type name: {s}"))),
        other => {
            let Some(n) = Num::of(other) else {
                return Err(Error::failed_to_parse(format!(
                    "$convert's 'to' argument must be a string or number, but is {}",
                    type_name(&Some(other.clone()))
                )));
            };
            let Some(code) = super::super::value::integral_i32(other) else {
                let _ = n;
                return Err(Error::failed_to_parse(
                    "In $convert, numeric 'to' argument is not an integer",
                ));
            };
            // 0 is EOO, mongod's "missing": valid here, and no value converts to it.
            if matches!(code, -1..=19 | 127) {
                Ok(code)
            } else {
                Err(Error::failed_to_parse(format!(
                    "In $convert, numeric value for 'to' does not correspond to a BSON type: {code}"
                )))
            }
        }
    }
}

impl Operator for Convert {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let to = self.to.eval(cx)?;
        let input = self.input.eval(cx)?;
        let target = match &to {
            Some(t) if !nullish(&to) => Some(target_of(t)?),
            _ => None,
        };
        if nullish(&input) {
            return match &self.on_null {
                Some(on_null) => on_null.eval(cx),
                None => Ok(Some(Bson::Null)),
            };
        }
        let (Some(target), Some(input)) = (target, input) else {
            return Ok(Some(Bson::Null));
        };
        match convert(&input, target) {
            Err(e) if e.code == ErrorCode::ConversionFailure => match &self.on_error {
                Some(on_error) => on_error.eval(cx),
                None => Err(e),
            },
            other => other.map(Some),
        }
    }
}

fn failure(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::ConversionFailure, message)
}

fn overflow(shown: &str) -> Error {
    failure(format!(
        "Conversion would overflow target type in $convert with no onError value: {shown}"
    ))
}

fn finite(x: f64) -> Result<()> {
    if x.is_nan() {
        return Err(failure(
            "Attempt to convert NaN value to integer type in $convert with no onError value",
        ));
    }
    if x.is_infinite() {
        return Err(failure(
            "Attempt to convert infinity value to integer type in $convert with no onError value",
        ));
    }
    Ok(())
}

fn double_to_long(x: f64) -> Result<i64> {
    finite(x)?;
    // 2^63 is exact as a double; the upper bound is exclusive.
    if x >= i64::MIN as f64 && x < 9_223_372_036_854_775_808.0 {
        Ok(x as i64)
    } else {
        Err(overflow(&format_g(x)))
    }
}

fn decimal_to_long(d: &bson::Decimal128) -> Result<i64> {
    let value = decimal::from_bson(d);
    if value.is_nan() {
        finite(f64::NAN)?;
    }
    if value.is_infinite() {
        finite(f64::INFINITY)?;
    }
    decimal::to_i64(value, Rounding::Down).ok_or_else(|| overflow(&d.to_string()))
}

/// The conversion of one value to one type, as mongod's `ConversionTable`.
fn convert(input: &Bson, target: Target) -> Result<Bson> {
    let unsupported = || {
        failure(format!(
            "Unsupported conversion from {} to {} in $convert with no onError value",
            type_name(&Some(input.clone())),
            target_name(target)
        ))
    };
    let dec_bson = |d| Bson::Decimal128(decimal::to_bson(d));
    Ok(match (input, target) {
        // To bool: every type but minKey/maxKey-free pairs; numbers and dates by truthiness.
        (Bson::Boolean(_), 8) => input.clone(),
        (Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_), 8) => {
            Bson::Boolean(truthy(&Some(input.clone())))
        }
        (Bson::DateTime(_), 8) => Bson::Boolean(true),
        (
            Bson::String(_)
            | Bson::ObjectId(_)
            | Bson::Document(_)
            | Bson::Array(_)
            | Bson::Binary(_)
            | Bson::RegularExpression(_)
            | Bson::DbPointer(_)
            | Bson::JavaScriptCode(_)
            | Bson::Symbol(_)
            | Bson::JavaScriptCodeWithScope(_)
            | Bson::Timestamp(_)
            | Bson::MinKey
            | Bson::MaxKey,
            8,
        ) => Bson::Boolean(true),

        // From double.
        (Bson::Double(_), 1) => input.clone(),
        (Bson::Double(x), 2) => Bson::String(format_double(*x)),
        (Bson::Double(x), 9) => Bson::DateTime(DateTime::from_millis(double_to_long(*x)?)),
        (Bson::Double(x), 16) => {
            finite(*x)?;
            if *x >= f64::from(i32::MIN) && *x <= f64::from(i32::MAX) {
                Bson::Int32(*x as i32)
            } else {
                return Err(overflow(&format_g(*x)));
            }
        }
        (Bson::Double(x), 18) => Bson::Int64(double_to_long(*x)?),
        (Bson::Double(x), 19) => dec_bson(decimal::from_f64(*x, 15)),

        // From string.
        (Bson::String(s), 1) => Bson::Double(parse_double(s)?),
        (Bson::String(_), 2) => input.clone(),
        (Bson::String(s), 7) => Bson::ObjectId(parse_object_id(s)?),
        (Bson::String(s), 9) => Bson::DateTime(super::date::parse_date_string(s)?),
        (Bson::String(s), 16) => {
            let i = parse_long(s)?;
            Bson::Int32(i32::try_from(i).map_err(|_| parse_failure(s, "Overflow"))?)
        }
        (Bson::String(s), 18) => Bson::Int64(parse_long(s)?),
        (Bson::String(s), 19) => dec_bson(parse_decimal(s)?),

        // From objectId.
        (Bson::ObjectId(o), 2) => Bson::String(o.to_hex()),
        (Bson::ObjectId(_), 7) => input.clone(),
        // The id's creation time, in whole seconds.
        (Bson::ObjectId(o), 9) => Bson::DateTime(o.timestamp()),

        // From bool.
        (Bson::Boolean(b), 1) => Bson::Double(if *b { 1.0 } else { 0.0 }),
        (Bson::Boolean(b), 2) => Bson::String(b.to_string()),
        (Bson::Boolean(b), 16) => Bson::Int32(i32::from(*b)),
        (Bson::Boolean(b), 18) => Bson::Int64(i64::from(*b)),
        (Bson::Boolean(b), 19) => dec_bson(decimal::from_i64(i64::from(*b))),

        // From date.
        (Bson::DateTime(d), 1) => Bson::Double(d.timestamp_millis() as f64),
        (Bson::DateTime(d), 2) => Bson::String(iso_date_string(*d)),
        (Bson::DateTime(_), 9) => input.clone(),
        (Bson::DateTime(d), 18) => Bson::Int64(d.timestamp_millis()),
        (Bson::DateTime(d), 19) => dec_bson(decimal::from_i64(d.timestamp_millis())),

        // From timestamp.
        (Bson::Timestamp(t), 9) => Bson::DateTime(DateTime::from_millis(i64::from(t.time) * 1000)),

        // From int.
        (Bson::Int32(i), 1) => Bson::Double(f64::from(*i)),
        (Bson::Int32(i), 2) => Bson::String(i.to_string()),
        (Bson::Int32(_), 16) => input.clone(),
        (Bson::Int32(i), 18) => Bson::Int64(i64::from(*i)),
        (Bson::Int32(i), 19) => dec_bson(decimal::from_i64(i64::from(*i))),

        // From long.
        (Bson::Int64(i), 1) => Bson::Double(*i as f64),
        (Bson::Int64(i), 2) => Bson::String(i.to_string()),
        (Bson::Int64(i), 9) => Bson::DateTime(DateTime::from_millis(*i)),
        (Bson::Int64(i), 16) => Bson::Int32(i32::try_from(*i).map_err(|_| overflow(""))?),
        (Bson::Int64(_), 18) => input.clone(),
        (Bson::Int64(i), 19) => dec_bson(decimal::from_i64(*i)),

        // From decimal.
        (Bson::Decimal128(d), 1) => {
            let value = decimal::from_bson(d);
            let x = decimal::to_f64(value);
            if x.is_infinite() && value.is_finite() {
                return Err(overflow(&d.to_string()));
            }
            Bson::Double(x)
        }
        (Bson::Decimal128(d), 2) => Bson::String(d.to_string()),
        (Bson::Decimal128(d), 9) => Bson::DateTime(DateTime::from_millis(decimal_to_long(d)?)),
        (Bson::Decimal128(d), 16) => {
            let i = decimal_to_long(d)?;
            Bson::Int32(i32::try_from(i).map_err(|_| overflow(&d.to_string()))?)
        }
        (Bson::Decimal128(d), 18) => Bson::Int64(decimal_to_long(d)?),
        (Bson::Decimal128(_), 19) => input.clone(),

        _ => return Err(unsupported()),
    })
}

/// mongod's `performFormatDouble`.
fn format_double(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if x.is_nan() {
        return "NaN".to_owned();
    }
    format_g(x)
}

fn parse_failure(s: &str, reason: &str) -> Error {
    failure(format!(
        "Failed to parse number '{s}' in $convert with no onError value: {reason}"
    ))
}

fn reject_hex(s: &str) -> Result<()> {
    if s.starts_with("0x") {
        return Err(failure(format!(
            "Illegal hexadecimal input in $convert with no onError value: {s}"
        )));
    }
    Ok(())
}

/// A base-10 integer, the whole string (mongod's `NumberParser` with base 10).
fn parse_long(s: &str) -> Result<i64> {
    reject_hex(s)?;
    if s.is_empty() {
        return Err(parse_failure(s, "No digits"));
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(parse_failure(s, "Did not consume whole string."));
    }
    s.parse::<i64>()
        .map_err(|_| parse_failure(s, "Out of range"))
}

/// A decimal floating-point number, the whole string (as `strtod`, without hexadecimal).
fn parse_double(s: &str) -> Result<f64> {
    reject_hex(s)?;
    let lower = s.to_ascii_lowercase();
    let body = lower.strip_prefix(['-', '+']).unwrap_or(&lower);
    let special = matches!(body, "inf" | "infinity" | "nan");
    let numeric = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'-' | b'+'));
    if !(special || numeric) {
        return Err(parse_failure(s, "Did not consume whole string."));
    }
    s.parse::<f64>()
        .map_err(|_| parse_failure(s, "Did not consume whole string."))
}

fn parse_decimal(s: &str) -> Result<decimal::Dec> {
    reject_hex(s)?;
    parse_double(s)?;
    s.parse::<bson::Decimal128>()
        .map(|d| decimal::from_bson(&d))
        .map_err(|_| parse_failure(s, "Did not consume whole string."))
}

fn parse_object_id(s: &str) -> Result<ObjectId> {
    let fail = |reason: String| {
        failure(format!(
            "Failed to parse objectId '{s}' in $convert with no onError value: {reason}"
        ))
    };
    if s.len() != 24 {
        return Err(fail(format!(
            "Invalid string length for parsing to OID, expected 24 but found {}",
            s.len()
        )));
    }
    ObjectId::parse_str(s).map_err(|_| fail(format!("Invalid character found in hex string: {s}")))
}
