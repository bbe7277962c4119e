//! Array operators: element access (`$arrayElemAt`, `$first`, `$last`, `$slice`), searching
//! (`$in`, `$indexOfArray`), building and reshaping (`$concatArrays`, `$range`,
//! `$reverseArray`, `$zip`, `$arrayToObject`, `$objectToArray`), `$isArray` and `$size`.
//! `$firstN`/`$lastN`/`$maxN`/`$minN` live in `n.rs`, `$sortArray` in `sort.rs`.
//!
//! Owns: these operators and the helpers other families share with them (operands evaluated
//! with the comparator at hand, index arguments, mongod's number formatting in messages).
//! Does not own: set semantics (`set.rs`) or how values compare ([`Comparator`]).

mod n;
mod shape;
mod sort;
#[cfg(test)]
mod tests;

use super::super::value::{integral_i32, nullish, render, type_name, Comparator};
use super::super::{Compiler, Context, Node, Operator, SizeTally, Value};
use super::{apply, op, operands, Arity};
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use bson::Bson;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$arrayElemAt" => apply("$arrayElemAt", arg, c, Arity::Exactly(2), |n, v| {
            let [array, index] = take(v);
            elem_at(n, false, array, index)
        }),
        "$first" => apply("$first", arg, c, Arity::Exactly(1), |n, v| {
            let [array] = take(v);
            elem_at(n, true, array, Some(Bson::Int32(0)))
        }),
        "$last" => apply("$last", arg, c, Arity::Exactly(1), |n, v| {
            let [array] = take(v);
            elem_at(n, true, array, Some(Bson::Int32(-1)))
        }),
        "$slice" => apply("$slice", arg, c, Arity::Between(2, 3), slice),
        "$concatArrays" => apply("$concatArrays", arg, c, Arity::Any, concat_arrays),
        "$isArray" => apply("$isArray", arg, c, Arity::Exactly(1), |_, v| {
            let [value] = take(v);
            Ok(Some(Bson::Boolean(matches!(value, Some(Bson::Array(_))))))
        }),
        "$size" => apply("$size", arg, c, Arity::Exactly(1), size),
        "$reverseArray" => apply("$reverseArray", arg, c, Arity::Exactly(1), reverse),
        "$in" => compared("$in", arg, c, Arity::Exactly(2), is_in),
        "$indexOfArray" => compared("$indexOfArray", arg, c, Arity::Between(2, 4), index_of),
        "$objectToArray" => apply("$objectToArray", arg, c, Arity::Exactly(1), shape::to_array),
        "$arrayToObject" => apply(
            "$arrayToObject",
            arg,
            c,
            Arity::Exactly(1),
            shape::to_object,
        ),
        "$range" => apply("$range", arg, c, Arity::Between(2, 3), shape::range),
        "$zip" => shape::compile_zip(arg, c),
        "$firstN" | "$lastN" | "$maxN" | "$minN" => n::compile(name, arg, c),
        "$sortArray" => sort::compile(arg, c),
        _ => return None,
    })
}

/// The first `N` evaluated operands (missing past the end); the arity check already ran.
pub(super) fn take<const N: usize>(values: Vec<Value>) -> [Value; N] {
    let mut it = values.into_iter();
    std::array::from_fn(|_| it.next().flatten())
}

/// The step of a [`Compared`] operator: its name, the comparator, its evaluated operands.
pub(super) type CmpFunc = fn(&'static str, &Comparator, Vec<Value>) -> Result<Value>;

/// An operator that evaluates every operand, then computes with the expression's comparator.
#[derive(Debug)]
pub(super) struct Compared {
    name: &'static str,
    args: Vec<Node>,
    cmp: Comparator,
    f: CmpFunc,
}

impl Operator for Compared {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            values.push(arg.eval(cx)?);
        }
        (self.f)(self.name, &self.cmp, values)
    }
}

/// Compiles `{name: arg}` as a [`Compared`] operator.
pub(super) fn compared(
    name: &'static str,
    arg: &Bson,
    c: &mut Compiler<'_>,
    arity: Arity,
    f: CmpFunc,
) -> Result<Node> {
    let args = operands(name, arg, c, arity)?;
    Ok(op(Compared {
        name,
        args,
        cmp: c.comparator(),
        f,
    }))
}

/// A number as a double (mongod's `coerceToDouble`); `None` for a non-number.
pub(super) fn to_f64(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => Some(crate::query::decimal::bson_to_f64(d)),
        _ => None,
    }
}

/// A number truncated toward zero and saturated to `i64` (mongod's `coerceToLong`).
pub(super) fn to_i64_trunc(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        other => to_f64(other).map(|d| if d.is_nan() { 0 } else { d as i64 }),
    }
}

/// A double as mongod's string streams print it (`%g`: six significant digits).
pub(super) fn fmt_g(d: f64) -> String {
    if d.is_nan() {
        return "nan".to_owned();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sci = format!("{d:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        strip(&format!("{d:.decimals$}"))
    }
}

/// An index argument of `$indexOfArray`/`$indexOfBytes`/`$indexOfCP`: an integral,
/// non-negative 32-bit number (40096/40097, mongod's messages, missing space included).
pub(super) fn index_arg(name: &str, value: &Value, what: &str) -> Result<usize> {
    let Some(i) = value.as_ref().and_then(integral_i32) else {
        return Err(Error::new(
            ErrorCode::Location40096,
            format!(
                "{name}requires an integral {what}, found a value of type: {}, with value: {}",
                type_name(value),
                render(value)
            ),
        ));
    };
    usize::try_from(i).map_err(|_| {
        Error::new(
            ErrorCode::Location40097,
            format!(
                "{name} requires a nonnegative {what}, found: {}",
                render(value)
            ),
        )
    })
}

fn elem_at(name: &str, single: bool, array: Value, index: Value) -> Result<Value> {
    if nullish(&array) || nullish(&index) {
        return Ok(Some(Bson::Null));
    }
    let items = match array {
        Some(Bson::Array(items)) => items,
        other => {
            let which = if single { "argument" } else { "first argument" };
            return Err(Error::new(
                ErrorCode::Location28689,
                format!(
                    "{name}'s {which} must be an array, but is {}",
                    type_name(&other)
                ),
            ));
        }
    };
    let index = index.unwrap_or(Bson::Null);
    if !is_number(&index) {
        return Err(Error::new(
            ErrorCode::Location28690,
            format!(
                "{name}'s second argument must be a numeric value, but is {}",
                crate::query::path::type_name(&index)
            ),
        ));
    }
    let Some(i) = integral_i32(&index) else {
        return Err(Error::new(
            ErrorCode::Location28691,
            format!(
                "{name}'s second argument must be representable as a 32-bit integer: {}",
                fmt_g(to_f64(&index).unwrap_or(f64::NAN))
            ),
        ));
    };
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let i = i64::from(i);
    let at = if i < 0 { len + i } else { i };
    Ok(usize::try_from(at)
        .ok()
        .and_then(|at| items.into_iter().nth(at)))
}

fn slice(_: &'static str, v: Vec<Value>) -> Result<Value> {
    let with_start = v.len() == 3;
    let [array, second, count] = take(v);
    if nullish(&array) || nullish(&second) {
        return Ok(Some(Bson::Null));
    }
    let items = match array {
        Some(Bson::Array(items)) => items,
        other => {
            return Err(Error::new(
                ErrorCode::Location28724,
                format!(
                    "First argument to $slice must be an array, but is of type: {}",
                    type_name(&other)
                ),
            ))
        }
    };
    let second = second.unwrap_or(Bson::Null);
    if !is_number(&second) {
        return Err(Error::new(
            ErrorCode::Location28725,
            format!(
                "Second argument to $slice must be a numeric value, but is of type: {}",
                crate::query::path::type_name(&second)
            ),
        ));
    }
    let Some(second) = integral_i32(&second).map(i64::from) else {
        return Err(Error::new(
            ErrorCode::Location28726,
            format!(
                "Second argument to $slice can't be represented as a 32-bit integer: {}",
                fmt_g(to_f64(&second).unwrap_or(f64::NAN))
            ),
        ));
    };
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let (start, end) = if !with_start {
        if second >= 0 {
            (0, second.min(len))
        } else {
            ((len + second).max(0), len)
        }
    } else {
        let start = if second < 0 {
            (len + second).max(0)
        } else {
            second.min(len)
        };
        if nullish(&count) {
            return Ok(Some(Bson::Null));
        }
        let count = count.unwrap_or(Bson::Null);
        if !is_number(&count) {
            return Err(Error::new(
                ErrorCode::Location28727,
                format!(
                    "Third argument to $slice must be numeric, but is of type: {}",
                    crate::query::path::type_name(&count)
                ),
            ));
        }
        let Some(n) = integral_i32(&count) else {
            return Err(Error::new(
                ErrorCode::Location28728,
                format!(
                    "Third argument to $slice can't be represented as a 32-bit integer: {}",
                    fmt_g(to_f64(&count).unwrap_or(f64::NAN))
                ),
            ));
        };
        if n <= 0 {
            return Err(Error::new(
                ErrorCode::Location28729,
                format!("Third argument to $slice must be positive: {n}"),
            ));
        }
        (start, (start + i64::from(n)).min(len))
    };
    let start = usize::try_from(start).unwrap_or(0);
    let end = usize::try_from(end).unwrap_or(0);
    Ok(Some(Bson::Array(
        items.into_iter().take(end).skip(start).collect(),
    )))
}

fn concat_arrays(_: &'static str, v: Vec<Value>) -> Result<Value> {
    let mut out = Vec::new();
    let mut size = SizeTally::array();
    for value in v {
        match value {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
            Some(Bson::Array(items)) => {
                for item in items {
                    size.add_element(&item)?;
                    out.push(item);
                }
            }
            other => {
                return Err(Error::new(
                    ErrorCode::Location28664,
                    format!(
                        "$concatArrays only supports arrays, not {}",
                        type_name(&other)
                    ),
                ))
            }
        }
    }
    Ok(Some(Bson::Array(out)))
}

/// mongod's `Value::createIntOrLong`.
pub(super) fn int_or_long(n: usize) -> Bson {
    match i32::try_from(n) {
        Ok(i) => Bson::Int32(i),
        Err(_) => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
    }
}

fn size(_: &'static str, v: Vec<Value>) -> Result<Value> {
    match take(v) {
        [Some(Bson::Array(items))] => Ok(Some(int_or_long(items.len()))),
        [other] => Err(Error::new(
            ErrorCode::Location17124,
            format!(
                "The argument to $size must be an array, but was of type: {}",
                type_name(&other)
            ),
        )),
    }
}

fn reverse(_: &'static str, v: Vec<Value>) -> Result<Value> {
    match take(v) {
        [None | Some(Bson::Null | Bson::Undefined)] => Ok(Some(Bson::Null)),
        [Some(Bson::Array(mut items))] => {
            items.reverse();
            Ok(Some(Bson::Array(items)))
        }
        [other] => Err(Error::new(
            ErrorCode::Location34435,
            format!(
                "The argument to $reverseArray must be an array, but was of type: {}",
                type_name(&other)
            ),
        )),
    }
}

fn is_in(_: &'static str, cmp: &Comparator, v: Vec<Value>) -> Result<Value> {
    let [needle, haystack] = take(v);
    let Some(Bson::Array(items)) = haystack else {
        return Err(Error::new(
            ErrorCode::Location40081,
            format!(
                "$in requires an array as a second argument, found: {}",
                type_name(&haystack)
            ),
        ));
    };
    // Elements are present values; a missing needle equals none of them.
    let found = needle
        .as_ref()
        .is_some_and(|n| items.iter().any(|item| cmp.equal(item, n)));
    Ok(Some(Bson::Boolean(found)))
}

fn index_of(name: &'static str, cmp: &Comparator, v: Vec<Value>) -> Result<Value> {
    let count = v.len();
    let [array, needle, start, end] = take(v);
    let items = match array {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
        Some(Bson::Array(items)) => items,
        other => {
            return Err(Error::new(
                ErrorCode::Location40090,
                format!(
                    "$indexOfArray requires an array as a first argument, found: {}",
                    type_name(&other)
                ),
            ))
        }
    };
    let start = match count > 2 {
        true => index_arg(name, &start, "starting index")?,
        false => 0,
    };
    let end = match count > 3 {
        true => index_arg(name, &end, "ending index")?.min(items.len()),
        false => items.len(),
    };
    let found = items
        .into_iter()
        .enumerate()
        .take(end)
        .skip(start)
        .find(|(_, item)| needle.as_ref().is_some_and(|n| cmp.equal(item, n)));
    Ok(Some(Bson::Int32(found.map_or(-1, |(i, _)| {
        i32::try_from(i).unwrap_or(i32::MAX)
    }))))
}
