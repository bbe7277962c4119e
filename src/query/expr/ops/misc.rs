//! Miscellaneous operators: `$rand`, `$binarySize`, `$bsonSize`, `$toHashedIndexKey`,
//! `$tsSecond`, `$tsIncrement`, `$meta` (refused: this server keeps no text, search, geo or
//! sort metadata), and `$function` (refused when evaluated: this server runs no JavaScript).
//!
//! `$rand` draws each value from the operating system (`getrandom`), so evaluation stays a pure
//! function of the document apart from that draw, and needs no generator state shared across
//! threads.

use super::super::value::{nullish, type_name};
use super::super::{Compiler, Context, Node, Operator, Value};
use super::{apply, op, Arity};
use crate::error::{Error, ErrorCode, Result};
use bson::Bson;

#[cfg(test)]
#[path = "misc_tests.rs"]
mod tests;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    let one = Arity::Exactly(1);
    Some(match name {
        "$rand" => compile_rand(arg),
        "$binarySize" => apply("$binarySize", arg, c, one, binary_size),
        "$bsonSize" => apply("$bsonSize", arg, c, one, bson_size),
        "$toHashedIndexKey" => c.compile(arg).map(|input| op(HashedKey { input })),
        "$tsSecond" => apply("$tsSecond", arg, c, one, |n, v| timestamp_part(n, v, true)),
        "$tsIncrement" => apply("$tsIncrement", arg, c, one, |n, v| {
            timestamp_part(n, v, false)
        }),
        "$meta" => compile_meta(arg),
        "$function" => compile_function(arg, c),
        _ => return None,
    })
}

#[derive(Debug)]
struct Rand;

fn compile_rand(arg: &Bson) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location10065,
            "invalid parameter: expected an object ($rand)",
        ));
    };
    if !d.is_empty() {
        return Err(Error::new(
            ErrorCode::Location3040501,
            "$rand does not currently accept arguments",
        ));
    }
    Ok(op(Rand))
}

impl Operator for Rand {
    fn eval(&self, _cx: &mut Context<'_>) -> Result<Value> {
        let bits = getrandom::u64()
            .map_err(|e| Error::internal(format!("cannot draw a random number: {e}")))?;
        // The top 53 bits scaled by 2^-53: uniform over [0, 1), every value a multiple of 2^-53.
        Ok(Some(Bson::Double(
            (bits >> 11) as f64 / (1u64 << 53) as f64,
        )))
    }
}

fn binary_size(_: &'static str, values: Vec<Value>) -> Result<Value> {
    let value = values.into_iter().next().flatten();
    Ok(Some(match &value {
        v if nullish(v) => Bson::Null,
        Some(Bson::String(s)) => length(s.len())?,
        Some(Bson::Binary(b)) => length(b.bytes.len())?,
        _ => {
            return Err(Error::new(
                ErrorCode::Location51276,
                format!(
                    "$binarySize requires a string or BinData argument, found: {}",
                    type_name(&value)
                ),
            ))
        }
    }))
}

fn length(n: usize) -> Result<Bson> {
    i32::try_from(n)
        .map(Bson::Int32)
        .map_err(|_| Error::internal("length does not fit an int"))
}

fn bson_size(_: &'static str, values: Vec<Value>) -> Result<Value> {
    let value = values.into_iter().next().flatten();
    match &value {
        v if nullish(v) => Ok(Some(Bson::Null)),
        Some(Bson::Document(d)) => Ok(Some(length(crate::query::size::document_size(d))?)),
        _ => Err(Error::new(
            ErrorCode::Location31393,
            format!(
                "$bsonSize requires a document input, found: {}",
                type_name(&value)
            ),
        )),
    }
}

fn timestamp_part(name: &'static str, values: Vec<Value>, seconds: bool) -> Result<Value> {
    let value = values.into_iter().next().flatten();
    match &value {
        v if nullish(v) => Ok(Some(Bson::Null)),
        Some(Bson::Timestamp(t)) => Ok(Some(Bson::Int64(i64::from(if seconds {
            t.time
        } else {
            t.increment
        })))),
        _ => Err(Error::new(
            if seconds {
                ErrorCode::Location5687301
            } else {
                ErrorCode::Location5687302
            },
            format!(
                " Argument to {name} must be a timestamp, but is {}",
                type_name(&value)
            ),
        )),
    }
}

/// `$toHashedIndexKey`: the key a hashed index stores for the value (missing hashes as null).
#[derive(Debug)]
struct HashedKey {
    input: Node,
}

impl Operator for HashedKey {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let value = self.input.eval(cx)?.unwrap_or(Bson::Null);
        Ok(Some(Bson::Int64(crate::query::hash::hash64(&value)?)))
    }
}

const META_KINDS: &[&str] = &[
    "textScore",
    "randVal",
    "searchScore",
    "searchHighlights",
    "geoNearDistance",
    "geoNearPoint",
    "recordId",
    "indexKey",
    "sortKey",
    "searchScoreDetails",
    "timeseriesBucketMinTime",
    "timeseriesBucketMaxTime",
];

fn compile_meta(arg: &Bson) -> Result<Node> {
    let Bson::String(kind) = arg else {
        return Err(Error::new(
            ErrorCode::Location17307,
            "$meta only supports string arguments",
        ));
    };
    if !META_KINDS.contains(&kind.as_str()) {
        return Err(Error::new(
            ErrorCode::Location17308,
            format!("Unsupported argument to $meta: {kind}"),
        ));
    }
    if kind == "textScore" {
        // mongod's answer for a text score outside a $text query; this server has no $text.
        return Err(Error::new(
            ErrorCode::Location40218,
            "query requires text score metadata, but it is not available",
        ));
    }
    Err(Error::new(
        ErrorCode::NotImplemented,
        format!("$meta: '{kind}' is not supported by this server"),
    ))
}

#[derive(Debug)]
struct Function {
    args: Node,
}

/// `$function`'s argument checks as mongod's parser makes them; evaluating it is refused with
/// mongod's answer when server-side JavaScript is disabled.
fn compile_function(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location31260,
            format!(
                "$function requires an object as an argument, found: {}",
                type_name(&Some(arg.clone()))
            ),
        ));
    };
    let Some(body) = d.get("body") else {
        return Err(Error::new(
            ErrorCode::Location31261,
            "The body function must be specified.",
        ));
    };
    let body = c.compile(body)?;
    match body.as_const() {
        None => {
            return Err(Error::new(
                ErrorCode::Location31432,
                "The body function must be a constant expression",
            ))
        }
        Some(Bson::String(_) | Bson::JavaScriptCode(_)) => {}
        Some(_) => {
            return Err(Error::new(
                ErrorCode::Location31262,
                "The body function must evaluate to type string or code",
            ))
        }
    }
    let Some(args) = d.get("args") else {
        return Err(Error::new(
            ErrorCode::Location31263,
            "The args field must be specified.",
        ));
    };
    let args = c.compile(args)?;
    match d.get("lang") {
        None => Err(Error::new(
            ErrorCode::Location31418,
            "The lang field must be specified.",
        )),
        Some(Bson::String(lang)) if lang == "js" => Ok(op(Function { args })),
        Some(_) => Err(Error::new(
            ErrorCode::Location31419,
            "Currently the only supported language specifier is 'js'.",
        )),
    }
}

impl Operator for Function {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let _ = self.args.eval(cx)?;
        Err(Error::new(
            ErrorCode::Location31264,
            "Cannot run server-side javascript without the javascript engine enabled",
        ))
    }
}
