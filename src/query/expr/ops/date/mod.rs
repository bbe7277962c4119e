//! Date operators, with mongod 7.0's semantics, codes and messages: the date parts (`$year` …
//! `$isoWeekYear`, `$dateToParts`, `$dateFromParts`), `$dateToString`, `$dateFromString`, and
//! the calendar arithmetic `$dateAdd`, `$dateSubtract`, `$dateDiff`, `$dateTrunc`; all in UTC or
//! a time zone.
//!
//! Owns: the operators, what they accept as a date (a date, a Timestamp, an ObjectId), how
//! their `timezone` operands are read, and the string formats (`format`, `parse`, `free_form`,
//! with `scan` the reader they share). Does not own: the calendar, time zones and unit
//! arithmetic (`crate::calendar`).

mod arithmetic;
mod format;
mod free_form;
mod parse;
mod parts;
mod scan;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_arithmetic;
#[cfg(test)]
mod tests_strings;

use super::super::value::{nullish, render, type_name};
use super::super::{Compiler, Context, Node, Value};
use crate::calendar::Zone;
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, DateTime, Document};

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    parts::compile(name, arg, c)
        .or_else(|| format::compile(name, arg, c))
        .or_else(|| parse::compile(name, arg, c))
        .or_else(|| arithmetic::compile(name, arg, c))
}

/// Parses a date string as `$dateFromString` without a format or time zone does (used by
/// `$convert`/`$toDate` of a string).
pub(super) fn parse_date_string(s: &str) -> Result<DateTime> {
    parse::from_string(s, &Zone::Utc, None).map(DateTime::from_millis)
}

/// Milliseconds since the epoch of a value mongod can read as a date: a date, a Timestamp
/// (its seconds) or an ObjectId (its creation second).
fn date_millis(value: &Bson) -> Option<i64> {
    match value {
        Bson::DateTime(d) => Some(d.timestamp_millis()),
        Bson::Timestamp(ts) => Some(i64::from(ts.time) * 1000),
        Bson::ObjectId(oid) => Some(oid.timestamp().timestamp_millis()),
        _ => None,
    }
}

/// mongod's `coerceToDate`: 16006 for anything [`date_millis`] does not read.
fn coerce_to_date(value: &Bson) -> Result<i64> {
    date_millis(value).ok_or_else(|| {
        Error::new(
            ErrorCode::Location16006,
            format!(
                "can't convert from BSON type {} to Date",
                crate::query::path::type_name(value)
            ),
        )
    })
}

/// A `timezone` operand: absent means UTC; a constant is resolved once, when compiled.
#[derive(Debug)]
struct ZoneArg {
    node: Option<Node>,
    resolved: Option<Result<Option<Zone>>>,
}

impl ZoneArg {
    fn new(node: Option<Node>) -> ZoneArg {
        let resolved = match &node {
            None => Some(Ok(Some(Zone::Utc))),
            Some(Node::Const(v)) => Some(zone_of(&Some(v.clone()))),
            Some(_) => None,
        };
        ZoneArg { node, resolved }
    }

    /// The zone, `None` when the operand is null or missing; 40517 or 40485 when it is not a
    /// zone.
    fn eval(&self, cx: &mut Context<'_>) -> Result<Option<Zone>> {
        if let Some(resolved) = &self.resolved {
            return resolved.clone();
        }
        match &self.node {
            Some(node) => zone_of(&node.eval(cx)?),
            None => Ok(Some(Zone::Utc)),
        }
    }

    /// As [`ZoneArg::eval`], with mongod's context for `$dateDiff`/`$dateTrunc` errors.
    fn eval_in(&self, cx: &mut Context<'_>, name: &str) -> Result<Option<Zone>> {
        self.eval(cx).map_err(|e| {
            Error::new(
                e.code,
                format!(
                    "{name} parameter 'timezone' value parsing failed :: caused by :: {}",
                    e.message
                ),
            )
        })
    }
}

fn zone_of(value: &Value) -> Result<Option<Zone>> {
    match value {
        v if nullish(v) => Ok(None),
        Some(Bson::String(s)) => Zone::parse(s).map(Some),
        other => Err(Error::new(
            ErrorCode::Location40517,
            format!(
                "timezone must evaluate to a string, found {}",
                type_name(other)
            ),
        )),
    }
}

/// The operands of an object argument, by field name, compiled.
struct Fields {
    fields: Vec<(String, Node)>,
}

impl Fields {
    /// Compiles `d`'s fields; a name outside `known` is `unknown(name)`.
    fn compile(
        d: &Document,
        known: &[&str],
        c: &mut Compiler<'_>,
        unknown: impl Fn(&str) -> Error,
    ) -> Result<Fields> {
        let mut fields = Vec::with_capacity(d.len());
        for (k, v) in d {
            if !known.contains(&k.as_str()) {
                return Err(unknown(k));
            }
            fields.push((k.clone(), c.compile(v)?));
        }
        Ok(Fields { fields })
    }

    fn take(&mut self, name: &str) -> Option<Node> {
        let at = self.fields.iter().position(|(k, _)| k == name)?;
        Some(self.fields.swap_remove(at).1)
    }

    /// A required field, or `missing`.
    fn require(&mut self, name: &str, missing: impl FnOnce() -> Error) -> Result<Node> {
        self.take(name).ok_or_else(missing)
    }
}

/// The object argument of `name`, or `code`'s "only supports an object" error.
fn object_arg<'a>(arg: &'a Bson, code: ErrorCode, message: &str) -> Result<&'a Document> {
    match arg {
        Bson::Document(d) => Ok(d),
        _ => Err(Error::new(code, message)),
    }
}

/// Evaluates an optional operand; `None` for an absent one.
fn eval_opt(node: &Option<Node>, cx: &mut Context<'_>) -> Result<Option<Value>> {
    node.as_ref().map(|n| n.eval(cx)).transpose()
}

/// The value unless it is null, undefined or missing.
fn present(value: Value) -> Option<Bson> {
    match value {
        None | Some(Bson::Null | Bson::Undefined) => None,
        Some(v) => Some(v),
    }
}

/// A value as mongod's `Value::toString` prints it in messages.
fn shown(value: &Value) -> String {
    render(value)
}
