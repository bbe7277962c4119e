//! Substrings and searches, by UTF-8 byte (`$substrBytes`, `$substr`, `$indexOfBytes`) or by
//! code point (`$substrCP`, `$indexOfCP`). A byte range that would split a code point is
//! mongod's 28656/28657, never a repaired string.

use super::super::super::value::{integral_i32, nullish, render, type_name};
use super::super::super::{Compiler, Node, Value};
use super::super::array::{index_arg, take, to_i64_trunc};
use super::super::{apply, Arity};
use super::coerce_to_string;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use bson::Bson;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        // `$substr` is the deprecated name of `$substrBytes`; mongod reports either as the latter.
        "$substrBytes" | "$substr" => {
            apply("$substrBytes", arg, c, Arity::Exactly(3), substr_bytes)
        }
        "$substrCP" => apply("$substrCP", arg, c, Arity::Exactly(3), substr_cp),
        "$indexOfBytes" => apply(
            "$indexOfBytes",
            arg,
            c,
            Arity::Between(2, 4),
            index_of_bytes,
        ),
        "$indexOfCP" => apply("$indexOfCP", arg, c, Arity::Between(2, 4), index_of_cp),
        _ => return None,
    })
}

fn is_continuation(byte: Option<&u8>) -> bool {
    byte.is_some_and(|b| b & 0xC0 == 0x80)
}

fn substr_bytes(name: &'static str, v: Vec<Value>) -> Result<Value> {
    let [input, lower, length] = take(v);
    let s = coerce_to_string(&input)?;
    let numeric = |value: &Value, code, what: &str| match value
        .as_ref()
        .filter(|v| is_number(v))
        .and_then(to_i64_trunc)
    {
        Some(n) => Ok(n),
        None => Err(Error::new(
            code,
            format!(
                "{name}:  {what} must be a numeric type (is BSON type {})",
                type_name(value)
            ),
        )),
    };
    let lower = numeric(&lower, ErrorCode::Location16034, "starting index")?;
    let length = numeric(&length, ErrorCode::Location16035, "length")?;
    let Ok(lower) = usize::try_from(lower) else {
        return Err(Error::new(
            ErrorCode::Location50752,
            format!("{name}:  starting index must be non-negative (got: {lower})"),
        ));
    };
    let length = usize::try_from(length).unwrap_or(s.len());
    let bytes = s.as_bytes();
    if is_continuation(bytes.get(lower)) {
        return Err(Error::new(
            ErrorCode::Location28656,
            format!("{name}:  Invalid range, starting index is a UTF-8 continuation byte."),
        ));
    }
    let end = lower.saturating_add(length);
    if is_continuation(bytes.get(end)) {
        return Err(Error::new(
            ErrorCode::Location28657,
            format!("{name}:  Invalid range, ending index is in the middle of a UTF-8 character."),
        ));
    }
    let end = end.min(s.len());
    Ok(Some(Bson::String(
        s.get(lower..end).unwrap_or_default().to_owned(),
    )))
}

fn substr_cp(name: &'static str, v: Vec<Value>) -> Result<Value> {
    let [input, lower, length] = take(v);
    let s = coerce_to_string(&input)?;
    let int = |value: &Value, codes: (ErrorCode, ErrorCode), what: &str| {
        if !value.as_ref().is_some_and(is_number) {
            return Err(Error::new(
                codes.0,
                format!(
                    "{name}: {what} must be a numeric type (is BSON type {})",
                    type_name(value)
                ),
            ));
        }
        value.as_ref().and_then(integral_i32).ok_or_else(|| {
            Error::new(
                codes.1,
                format!(
                    "{name}: {what} cannot be represented as a 32-bit integral value: {}",
                    render(value)
                ),
            )
        })
    };
    let start = int(
        &lower,
        (ErrorCode::Location34450, ErrorCode::Location34451),
        "starting index",
    )?;
    let length = int(
        &length,
        (ErrorCode::Location34452, ErrorCode::Location34453),
        "length",
    )?;
    let Ok(length) = usize::try_from(length) else {
        return Err(Error::new(
            ErrorCode::Location34454,
            format!("{name}: length must be a nonnegative integer."),
        ));
    };
    let Ok(start) = usize::try_from(start) else {
        return Err(Error::new(
            ErrorCode::Location34455,
            format!("{name}: the starting index must be nonnegative integer."),
        ));
    };
    Ok(Some(Bson::String(
        s.chars().skip(start).take(length).collect(),
    )))
}

/// The string operands of `$indexOfBytes`/`$indexOfCP`; `None` when the first is nullish.
fn search_operands(
    name: &str,
    input: Value,
    token: Value,
    codes: (ErrorCode, ErrorCode),
) -> Result<Option<(String, String)>> {
    if nullish(&input) {
        return Ok(None);
    }
    let Some(Bson::String(input)) = input else {
        return Err(Error::new(
            codes.0,
            format!(
                "{name} requires a string as the first argument, found: {}",
                type_name(&input)
            ),
        ));
    };
    let Some(Bson::String(token)) = token else {
        return Err(Error::new(
            codes.1,
            format!(
                "{name} requires a string as the second argument, found: {}",
                type_name(&token)
            ),
        ));
    };
    Ok(Some((input, token)))
}

fn position(found: Option<usize>) -> Value {
    Some(Bson::Int32(
        found.map_or(-1, |i| i32::try_from(i).unwrap_or(i32::MAX)),
    ))
}

fn index_of_bytes(name: &'static str, v: Vec<Value>) -> Result<Value> {
    let count = v.len();
    let [input, token, start, end] = take(v);
    let codes = (ErrorCode::Location40091, ErrorCode::Location40092);
    let Some((input, token)) = search_operands(name, input, token, codes)? else {
        return Ok(Some(Bson::Null));
    };
    let start = match count > 2 {
        true => index_arg(name, &start, "starting index")?,
        false => 0,
    };
    let end = match count > 3 {
        true => index_arg(name, &end, "ending index")?.min(input.len()),
        false => input.len(),
    };
    if start > input.len() || end < start {
        return Ok(position(None));
    }
    let hay = input.as_bytes().get(start..end).unwrap_or_default();
    let needle = token.as_bytes();
    let found = match needle.is_empty() {
        true => Some(0),
        false => hay.windows(needle.len()).position(|w| w == needle),
    };
    Ok(position(found.map(|i| i + start)))
}

fn index_of_cp(name: &'static str, v: Vec<Value>) -> Result<Value> {
    let count = v.len();
    let [input, token, start, end] = take(v);
    let codes = (ErrorCode::Location40093, ErrorCode::Location40094);
    let Some((input, token)) = search_operands(name, input, token, codes)? else {
        return Ok(Some(Bson::Null));
    };
    let start = match count > 2 {
        true => index_arg(name, &start, "starting index")?,
        false => 0,
    };
    let offsets: Vec<usize> = input.char_indices().map(|(i, _)| i).collect();
    let end = match count > 3 {
        true => index_arg(name, &end, "ending index")?.min(offsets.len()),
        false => offsets.len(),
    };
    if end < start {
        return Ok(position(None));
    }
    if start == 0 && input.is_empty() && token.is_empty() {
        return Ok(position(Some(0)));
    }
    let found = (start..end).find(|cp| {
        offsets
            .get(*cp)
            .and_then(|at| input.get(*at..))
            .is_some_and(|rest| rest.starts_with(token.as_str()))
    });
    Ok(position(found))
}
