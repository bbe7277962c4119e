//! Operators that reshape values: `$objectToArray`, `$arrayToObject`, `$range`, `$zip`.

use super::super::super::value::{integral_i32, nullish, render, type_name};
use super::super::super::{Compiler, Context, Node, Operator, SizeTally, Value};
use super::super::op;
use super::take;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use bson::{doc, Bson, Document};

pub(super) fn to_array(_: &'static str, v: Vec<Value>) -> Result<Value> {
    match take(v) {
        [None | Some(Bson::Null | Bson::Undefined)] => Ok(Some(Bson::Null)),
        [Some(Bson::Document(d))] => Ok(Some(Bson::Array(
            d.into_iter()
                .map(|(k, v)| Bson::Document(doc! {"k": k, "v": v}))
                .collect(),
        ))),
        [other] => Err(Error::new(
            ErrorCode::Location40390,
            format!(
                "$objectToArray requires a document input, found: {}",
                type_name(&other)
            ),
        )),
    }
}

fn no_nul(key: &str, code: ErrorCode) -> Result<()> {
    match key.contains('\0') {
        true => Err(Error::new(
            code,
            "Key field cannot contain an embedded null byte",
        )),
        false => Ok(()),
    }
}

/// `[[k, v], ...]` or `[{k, v}, ...]` (the first element decides) into a document; a repeated
/// key keeps its first position and takes its last value, as mongod's `MutableDocument`.
pub(super) fn to_object(_: &'static str, v: Vec<Value>) -> Result<Value> {
    let items = match take(v) {
        [None | Some(Bson::Null | Bson::Undefined)] => return Ok(Some(Bson::Null)),
        [Some(Bson::Array(items))] => items,
        [other] => {
            return Err(Error::new(
                ErrorCode::Location40386,
                format!(
                    "$arrayToObject requires an array input, found: {}",
                    type_name(&other)
                ),
            ))
        }
    };
    let pairs = match items.first() {
        None => return Ok(Some(Bson::Document(Document::new()))),
        Some(Bson::Array(_)) => true,
        Some(Bson::Document(_)) => false,
        Some(other) => {
            return Err(Error::new(
                ErrorCode::Location40398,
                format!(
                    "Unrecognised input type format for $arrayToObject: {}",
                    crate::query::path::type_name(other)
                ),
            ))
        }
    };
    let mut out = Document::new();
    for item in items {
        let (key, value) = if pairs {
            pair_entry(item)?
        } else {
            object_entry(item)?
        };
        out.insert(key, value);
    }
    Ok(Some(Bson::Document(out)))
}

fn pair_entry(item: Bson) -> Result<(String, Bson)> {
    let Bson::Array(pair) = item else {
        return Err(Error::new(
            ErrorCode::Location40396,
            format!(
                "$arrayToObject requires a consistent input format. Elements mustall be arrays \
                 or all be objects. Array was detected, now found: {}",
                crate::query::path::type_name(&item)
            ),
        ));
    };
    if pair.len() != 2 {
        return Err(Error::new(
            ErrorCode::Location40397,
            format!(
                "$arrayToObject requires an array of size 2 arrays,found array of size: {}",
                pair.len()
            ),
        ));
    }
    let mut it = pair.into_iter();
    let (key, value) = (it.next(), it.next());
    match key {
        Some(Bson::String(key)) => {
            no_nul(&key, ErrorCode::Location4940400)?;
            Ok((key, value.unwrap_or(Bson::Null)))
        }
        other => Err(Error::new(
            ErrorCode::Location40395,
            format!(
                "$arrayToObject requires an array of key-value pairs, where the key must be of \
                 type string. Found key type: {}",
                type_name(&other)
            ),
        )),
    }
}

fn object_entry(item: Bson) -> Result<(String, Bson)> {
    let Bson::Document(mut d) = item else {
        return Err(Error::new(
            ErrorCode::Location40391,
            format!(
                "$arrayToObject requires a consistent input format. Elements mustall be arrays \
                 or all be objects. Object was detected, now found: {}",
                crate::query::path::type_name(&item)
            ),
        ));
    };
    if d.len() != 2 {
        return Err(Error::new(
            ErrorCode::Location40392,
            format!(
                "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number \
                 of keys:{}",
                d.len()
            ),
        ));
    }
    let rendered = crate::query::path::render_document(&d);
    let (Some(key), Some(value)) = (d.remove("k"), d.remove("v")) else {
        return Err(Error::new(
            ErrorCode::Location40393,
            format!(
                "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both \
                 keys from: {rendered}"
            ),
        ));
    };
    match key {
        Bson::String(key) => {
            no_nul(&key, ErrorCode::Location4940401)?;
            Ok((key, value))
        }
        other => Err(Error::new(
            ErrorCode::Location40394,
            format!(
                "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' \
                 must be of type string. Found type: {}",
                crate::query::path::type_name(&other)
            ),
        )),
    }
}

/// mongod's `internalQueryMaxRangeBytes` default: what `$range`'s output may cost.
const MAX_RANGE_BYTES: i64 = 100 * 1024 * 1024;
/// What mongod counts per element (`sizeof(Value)`) and for the array itself.
const VALUE_BYTES: i64 = 16;
const VECTOR_BYTES: i64 = 24;

fn range_bound(value: &Value, codes: (ErrorCode, ErrorCode), what: &str) -> Result<i64> {
    if !value.as_ref().is_some_and(is_number) {
        return Err(Error::new(
            codes.0,
            format!(
                "$range requires a numeric {what} value, found value of type: {}",
                type_name(value)
            ),
        ));
    }
    value
        .as_ref()
        .and_then(integral_i32)
        .map(i64::from)
        .ok_or_else(|| {
            let article = if what == "ending" { "an" } else { "a" };
            Error::new(
                codes.1,
                format!(
                    "$range requires {article} {what} value that can be represented as a 32-bit \
                     integer, found value: {}",
                    render(value)
                ),
            )
        })
}

pub(super) fn range(_: &'static str, v: Vec<Value>) -> Result<Value> {
    let with_step = v.len() == 3;
    let [start, end, step] = take(v);
    let mut current = range_bound(
        &start,
        (ErrorCode::Location34443, ErrorCode::Location34444),
        "starting",
    )?;
    let end = range_bound(
        &end,
        (ErrorCode::Location34445, ErrorCode::Location34446),
        "ending",
    )?;
    let step = match with_step {
        false => 1,
        true => {
            if !step.as_ref().is_some_and(is_number) {
                return Err(Error::new(
                    ErrorCode::Location34447,
                    format!(
                        "$range requires a numeric step value, found value of type:{}",
                        type_name(&step)
                    ),
                ));
            }
            let Some(step) = step.as_ref().and_then(integral_i32).map(i64::from) else {
                return Err(Error::new(
                    ErrorCode::Location34448,
                    format!(
                        "$range requires a step value that can be represented as a 32-bit \
                         integer, found value: {}",
                        render(&step)
                    ),
                ));
            };
            if step == 0 {
                return Err(Error::new(
                    ErrorCode::Location34449,
                    "$range requires a non-zero step value",
                ));
            }
            step
        }
    };
    let steps = (end - current) / step;
    let length = if steps >= 0 { steps + 1 } else { 0 };
    let needed = VECTOR_BYTES + length * VALUE_BYTES;
    if needed >= MAX_RANGE_BYTES {
        return Err(Error::new(
            ErrorCode::ExceededMemoryLimit,
            format!(
                "$range would use too much memory ({needed} bytes) and cannot spill to disk. \
                 Memory limit: {MAX_RANGE_BYTES} bytes"
            ),
        ));
    }
    let mut out = Vec::with_capacity(usize::try_from(length).unwrap_or(0).min(1 << 20));
    let mut size = SizeTally::array();
    while if step > 0 {
        current < end
    } else {
        current > end
    } {
        let value = Bson::Int32(i32::try_from(current).unwrap_or(i32::MAX));
        size.add_element(&value)?;
        out.push(value);
        current += step;
    }
    Ok(Some(Bson::Array(out)))
}

#[derive(Debug)]
struct Zip {
    inputs: Vec<Node>,
    defaults: Vec<Node>,
    longest: bool,
}

pub(super) fn compile_zip(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location34460,
            format!(
                "$zip only supports an object as an argument, found {}",
                crate::query::path::type_name(arg)
            ),
        ));
    };
    let mut zip = Zip {
        inputs: Vec::new(),
        defaults: Vec::new(),
        longest: false,
    };
    for (field, value) in d {
        match (field.as_str(), value) {
            ("inputs", Bson::Array(items)) => {
                for item in items {
                    zip.inputs.push(c.compile(item)?);
                }
            }
            ("inputs", other) => {
                return Err(Error::new(
                    ErrorCode::Location34461,
                    format!(
                        "inputs must be an array of expressions, found {}",
                        crate::query::path::type_name(other)
                    ),
                ))
            }
            ("defaults", Bson::Array(items)) => {
                for item in items {
                    zip.defaults.push(c.compile(item)?);
                }
            }
            ("defaults", other) => {
                return Err(Error::new(
                    ErrorCode::Location34462,
                    format!(
                        "defaults must be an array of expressions, found {}",
                        crate::query::path::type_name(other)
                    ),
                ))
            }
            ("useLongestLength", Bson::Boolean(b)) => zip.longest = *b,
            // mongod names the type of the whole argument here, not of the field.
            ("useLongestLength", _) => {
                return Err(Error::new(
                    ErrorCode::Location34463,
                    "useLongestLength must be a bool, found object",
                ))
            }
            (other, _) => {
                return Err(Error::new(
                    ErrorCode::Location34464,
                    format!("$zip found an unknown argument: {other}"),
                ))
            }
        }
    }
    if zip.inputs.is_empty() {
        return Err(Error::new(
            ErrorCode::Location34465,
            "$zip requires at least one input array",
        ));
    }
    if !zip.longest && !zip.defaults.is_empty() {
        return Err(Error::new(
            ErrorCode::Location34466,
            "cannot specify defaults unless useLongestLength is true",
        ));
    }
    if !zip.defaults.is_empty() && zip.defaults.len() != zip.inputs.len() {
        return Err(Error::new(
            ErrorCode::Location34467,
            "defaults and inputs must have the same length",
        ));
    }
    Ok(op(zip))
}

impl Operator for Zip {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut columns = Vec::with_capacity(self.inputs.len());
        for input in &self.inputs {
            match input.eval(cx)? {
                value if nullish(&value) => return Ok(Some(Bson::Null)),
                Some(Bson::Array(items)) => columns.push(items),
                other => {
                    return Err(Error::new(
                        ErrorCode::Location34468,
                        format!(
                            "$zip found a non-array expression in input: {}",
                            render(&other)
                        ),
                    ))
                }
            }
        }
        let min = columns.iter().map(Vec::len).min().unwrap_or(0);
        let max = columns.iter().map(Vec::len).max().unwrap_or(0);
        let mut defaults = vec![Bson::Null; columns.len()];
        if min != max {
            for (slot, node) in defaults.iter_mut().zip(&self.defaults) {
                *slot = node.eval(cx)?.unwrap_or(Bson::Null);
            }
        }
        let rows = if self.longest { max } else { min };
        let mut out = Vec::with_capacity(rows);
        // Defaults repeat on every row past a short input: the result can far outgrow the
        // inputs, so its size is counted as it is built.
        let mut size = SizeTally::array();
        for row in 0..rows {
            let tuple = Bson::Array(
                columns
                    .iter()
                    .zip(&defaults)
                    .map(|(column, default)| column.get(row).unwrap_or(default).clone())
                    .collect(),
            );
            size.add_element(&tuple)?;
            out.push(tuple);
        }
        Ok(Some(Bson::Array(out)))
    }
}
