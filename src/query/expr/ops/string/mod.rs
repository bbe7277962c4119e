//! String operators: `$concat`, `$split`, `$strLenBytes`, `$strLenCP`, `$strcasecmp`,
//! `$toLower`, `$toUpper`, `$replaceOne`, `$replaceAll`; substrings and searches by byte or
//! code point in `substr.rs`; `$trim`/`$ltrim`/`$rtrim` in `trim.rs`; `$regexFind`,
//! `$regexFindAll`, `$regexMatch` in `regex.rs`.
//!
//! Owns: mongod's `coerceToString` (what `$substr`, `$toLower`, `$toUpper` and `$strcasecmp`
//! accept). Strings are UTF-8; byte offsets that would split a code point are mongod's errors.
//! Case mapping is ASCII-only, as mongod's (`boost::to_lower` in the C locale).

mod regex;
mod substr;
#[cfg(test)]
mod tests;
mod trim;

use super::super::value::{iso_date_string, nullish, render, type_name};
use super::super::{Compiler, Context, Node, Operator, SizeTally, Value};
use super::array::{fmt_g, take};
use super::{apply, op, Arity};
use crate::error::{Error, ErrorCode, Result};
use crate::query::guard;
use bson::Bson;
use std::cmp::Ordering;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$concat" => apply("$concat", arg, c, Arity::Any, concat),
        "$split" => apply("$split", arg, c, Arity::Exactly(2), split),
        "$strLenBytes" => apply(
            "$strLenBytes",
            arg,
            c,
            Arity::Exactly(1),
            |_, v| match take(v) {
                [Some(Bson::String(s))] => Ok(Some(Bson::Int32(len_i32(s.len(), 34470)?))),
                [other] => Err(Error::new(
                    ErrorCode::Location34473,
                    format!(
                        "$strLenBytes requires a string argument, found: {}",
                        type_name(&other)
                    ),
                )),
            },
        ),
        "$strLenCP" => apply("$strLenCP", arg, c, Arity::Exactly(1), |_, v| {
            match take(v) {
                [Some(Bson::String(s))] => {
                    Ok(Some(Bson::Int32(len_i32(s.chars().count(), 34472)?)))
                }
                [other] => Err(Error::new(
                    ErrorCode::Location34471,
                    format!(
                        "$strLenCP requires a string argument, found: {}",
                        type_name(&other)
                    ),
                )),
            }
        }),
        "$toLower" => apply("$toLower", arg, c, Arity::Exactly(1), |_, v| {
            let [s] = take(v);
            Ok(Some(Bson::String(
                coerce_to_string(&s)?.to_ascii_lowercase(),
            )))
        }),
        "$toUpper" => apply("$toUpper", arg, c, Arity::Exactly(1), |_, v| {
            let [s] = take(v);
            Ok(Some(Bson::String(
                coerce_to_string(&s)?.to_ascii_uppercase(),
            )))
        }),
        "$strcasecmp" => apply("$strcasecmp", arg, c, Arity::Exactly(2), |_, v| {
            let [a, b] = take(v);
            let a = coerce_to_string(&a)?.to_ascii_uppercase();
            let b = coerce_to_string(&b)?.to_ascii_uppercase();
            Ok(Some(Bson::Int32(match a.cmp(&b) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            })))
        }),
        "$replaceOne" => compile_replace("$replaceOne", false, arg, c),
        "$replaceAll" => compile_replace("$replaceAll", true, arg, c),
        "$trim" | "$ltrim" | "$rtrim" => trim::compile(name, arg, c),
        "$regexFind" | "$regexFindAll" | "$regexMatch" => regex::compile(name, arg, c),
        other => return substr::compile(other, arg, c),
    })
}

fn len_i32(len: usize, code: i32) -> Result<i32> {
    i32::try_from(len).map_err(|_| {
        let code = match code {
            34470 => ErrorCode::Location34470,
            _ => ErrorCode::Location34472,
        };
        Error::new(code, "string length could not be represented as an int.")
    })
}

/// mongod's `Value::coerceToString`: strings as they are, numbers and dates printed,
/// null/undefined/missing as `""`; other types are 16007.
pub(super) fn coerce_to_string(value: &Value) -> Result<String> {
    Ok(match value {
        None | Some(Bson::Null | Bson::Undefined) => String::new(),
        Some(Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s)) => s.clone(),
        Some(Bson::Int32(i)) => i.to_string(),
        Some(Bson::Int64(i)) => i.to_string(),
        Some(Bson::Double(d)) => fmt_g(*d),
        Some(Bson::Decimal128(d)) => d.to_string(),
        Some(Bson::DateTime(d)) => iso_date_string(*d),
        Some(Bson::Timestamp(_)) => {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                "converting a timestamp to a string is not supported by this server",
            ))
        }
        Some(other) => {
            return Err(Error::new(
                ErrorCode::Location16007,
                format!(
                    "can't convert from BSON type {} to String",
                    crate::query::path::type_name(other)
                ),
            ))
        }
    })
}

fn concat(_: &'static str, v: Vec<Value>) -> Result<Value> {
    let mut out = String::new();
    for value in v {
        match value {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
            Some(Bson::String(s)) => {
                guard::check_string_bytes(out.len().saturating_add(s.len()))?;
                out.push_str(&s);
            }
            other => {
                return Err(Error::new(
                    ErrorCode::Location16702,
                    format!("$concat only supports strings, not {}", type_name(&other)),
                ))
            }
        }
    }
    Ok(Some(Bson::String(out)))
}

fn split(_: &'static str, v: Vec<Value>) -> Result<Value> {
    let [input, separator] = take(v);
    if nullish(&input) || nullish(&separator) {
        return Ok(Some(Bson::Null));
    }
    let Some(Bson::String(input)) = input else {
        return Err(Error::new(
            ErrorCode::Location40085,
            format!(
                "$split requires an expression that evaluates to a string as a first argument, \
                 found: {}",
                type_name(&input)
            ),
        ));
    };
    let Some(Bson::String(separator)) = separator else {
        return Err(Error::new(
            ErrorCode::Location40086,
            format!(
                "$split requires an expression that evaluates to a string as a second argument, \
                 found: {}",
                type_name(&separator)
            ),
        ));
    };
    if separator.is_empty() {
        return Err(Error::new(
            ErrorCode::Location40087,
            "$split requires a non-empty separator",
        ));
    }
    let mut size = SizeTally::array();
    let mut parts = Vec::new();
    for part in input.split(separator.as_str()) {
        let part = Bson::String(part.to_owned());
        size.add_element(&part)?;
        parts.push(part);
    }
    Ok(Some(Bson::Array(parts)))
}

#[derive(Debug)]
struct Replace {
    name: &'static str,
    all: bool,
    input: Node,
    find: Node,
    replacement: Node,
}

fn compile_replace(
    name: &'static str,
    all: bool,
    arg: &Bson,
    c: &mut Compiler<'_>,
) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location51751,
            format!(
                "{name} requires an object as an argument, found: {}",
                crate::query::path::type_name(arg)
            ),
        ));
    };
    let (mut input, mut find, mut replacement) = (None, None, None);
    for (k, v) in d {
        let slot = match k.as_str() {
            "input" => &mut input,
            "find" => &mut find,
            "replacement" => &mut replacement,
            other => {
                return Err(Error::new(
                    ErrorCode::Location51750,
                    format!("{name} found an unknown argument: {other}"),
                ))
            }
        };
        *slot = Some(c.compile(v)?);
    }
    let missing =
        |code, what: &str| Error::new(code, format!("{name} requires '{what}' to be specified"));
    Ok(op(Replace {
        name,
        all,
        input: input.ok_or_else(|| missing(ErrorCode::Location51749, "input"))?,
        find: find.ok_or_else(|| missing(ErrorCode::Location51748, "find"))?,
        replacement: replacement.ok_or_else(|| missing(ErrorCode::Location51747, "replacement"))?,
    }))
}

impl Replace {
    fn string(&self, value: &Value, what: &str, code: ErrorCode) -> Result<()> {
        match value {
            None | Some(Bson::Null | Bson::Undefined | Bson::String(_)) => Ok(()),
            other => Err(Error::new(
                code,
                format!(
                    "{} requires that '{what}' be a string, found: {}",
                    self.name,
                    render(other)
                ),
            )),
        }
    }
}

impl Operator for Replace {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let input = self.input.eval(cx)?;
        let find = self.find.eval(cx)?;
        let replacement = self.replacement.eval(cx)?;
        self.string(&input, "input", ErrorCode::Location51746)?;
        self.string(&find, "find", ErrorCode::Location51745)?;
        self.string(&replacement, "replacement", ErrorCode::Location51744)?;
        let (Some(Bson::String(input)), Some(Bson::String(find)), Some(Bson::String(with))) =
            (input, find, replacement)
        else {
            return Ok(Some(Bson::Null));
        };
        // The result's length is known before it is built: refuse one too long to hold.
        let replaced = match (self.all, find.is_empty()) {
            (false, _) => usize::from(input.contains(find.as_str())),
            (true, true) => input.chars().count() + 1,
            (true, false) => input.matches(find.as_str()).count(),
        };
        let length = (input.len().saturating_sub(replaced * find.len()))
            .saturating_add(replaced.saturating_mul(with.len()));
        guard::check_string_bytes(length)?;
        guard::tick_n(guard::units_for_bytes(length))?;
        let out = match (self.all, find.is_empty()) {
            (false, _) => input.replacen(find.as_str(), &with, 1),
            // An empty `find` matches before every code point and at the end (mongod inserts
            // between bytes, which can only differ inside a multi-byte code point).
            (true, true) => {
                let mut out = String::with_capacity(input.len() + with.len());
                for ch in input.chars() {
                    out.push_str(&with);
                    out.push(ch);
                }
                out.push_str(&with);
                out
            }
            (true, false) => input.replace(find.as_str(), &with),
        };
        Ok(Some(Bson::String(out)))
    }
}
