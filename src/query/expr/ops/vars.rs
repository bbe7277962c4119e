//! Operators that bind variables: `$let`, `$map`, `$filter`, `$reduce`; and `$literal`.

use super::super::value::truthy;
use super::super::{Compiler, Context, Node, Operator, SizeTally, Value};
use super::op;
use crate::error::{Error, ErrorCode, Result};
use crate::query::guard;
use crate::query::path::{render, type_name};
use bson::{Bson, Document};

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$literal" => Ok(Node::Const(arg.clone())),
        "$let" => compile_let(arg, c),
        "$map" => compile_map(arg, c),
        "$filter" => compile_filter(arg, c),
        "$reduce" => compile_reduce(arg, c),
        _ => return None,
    })
}

/// An object argument's fields by name, with mongod's per-operator codes for a non-object
/// argument and an unknown field.
fn fields<'a>(
    name: &str,
    arg: &'a Bson,
    known: &[&str],
    (not_object, unknown): (ErrorCode, ErrorCode),
    unknown_message: &str,
) -> Result<&'a Document> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            not_object,
            format!("{name} only supports an object as its argument"),
        ));
    };
    if let Some(k) = d.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(Error::new(unknown, format!("{unknown_message}{k}")));
    }
    Ok(d)
}

fn required<'a>(
    d: &'a Document,
    field: &str,
    code: ErrorCode,
    message: String,
) -> Result<&'a Bson> {
    d.get(field).ok_or_else(|| Error::new(code, message))
}

/// The `as` name of `$map`/`$filter` (default `this`).
fn as_name(d: &Document, name: &str) -> Result<String> {
    match d.get("as") {
        None => Ok("this".to_owned()),
        Some(Bson::String(s)) => Ok(s.clone()),
        Some(other) => Err(Error::failed_to_parse(format!(
            "{name} 'as' must be a string, found {}",
            type_name(other)
        ))),
    }
}

/// The array `$map`, `$filter` and `$reduce` walk: `None` for a null, undefined or missing
/// input (they answer null), `error` for anything else that is not an array.
fn array_input(value: Value, error: impl FnOnce(&Bson) -> Error) -> Result<Option<Vec<Bson>>> {
    match value {
        None | Some(Bson::Null | Bson::Undefined) => Ok(None),
        Some(Bson::Array(items)) => Ok(Some(items)),
        Some(other) => Err(error(&other)),
    }
}

#[derive(Debug)]
struct Let {
    vars: Vec<(usize, Node)>,
    body: Node,
}

fn compile_let(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let d = fields(
        "$let",
        arg,
        &["vars", "in"],
        (ErrorCode::Location16874, ErrorCode::Location16875),
        "Unrecognized parameter to $let: ",
    )?;
    let vars = required(
        d,
        "vars",
        ErrorCode::Location16876,
        "Missing 'vars' parameter to $let".into(),
    )?;
    let body = required(
        d,
        "in",
        ErrorCode::Location16877,
        "Missing 'in' parameter to $let".into(),
    )?;
    let Bson::Document(vars) = vars else {
        return Err(Error::new(
            ErrorCode::Location10065,
            "invalid parameter: expected an object (vars)",
        ));
    };
    // The values see the outer scope only; the body sees every variable.
    let mut values = Vec::with_capacity(vars.len());
    for (name, spec) in vars {
        values.push((name, c.compile(spec)?));
    }
    let mut bound = Vec::with_capacity(values.len());
    for (name, node) in values {
        bound.push((c.bind(name)?, node));
    }
    let body = c.compile(body);
    c.unbind(bound.len());
    Ok(op(Let {
        vars: bound,
        body: body?,
    }))
}

impl Operator for Let {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut values = Vec::with_capacity(self.vars.len());
        for (_, node) in &self.vars {
            values.push(node.eval(cx)?);
        }
        for ((slot, _), value) in self.vars.iter().zip(values) {
            cx.bind(*slot, value);
        }
        self.body.eval(cx)
    }
}

#[derive(Debug)]
struct Map {
    input: Node,
    slot: usize,
    body: Node,
}

fn compile_map(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let d = fields(
        "$map",
        arg,
        &["input", "as", "in"],
        (ErrorCode::Location16878, ErrorCode::Location16879),
        "Unrecognized parameter to $map: ",
    )?;
    let input = required(
        d,
        "input",
        ErrorCode::Location16880,
        "Missing 'input' parameter to $map".into(),
    )?;
    let body = required(
        d,
        "in",
        ErrorCode::Location16882,
        "Missing 'in' parameter to $map".into(),
    )?;
    let name = as_name(d, "$map")?;
    let input = c.compile(input)?;
    let slot = c.bind(&name)?;
    let body = c.compile(body);
    c.unbind(1);
    Ok(op(Map {
        input,
        slot,
        body: body?,
    }))
}

impl Operator for Map {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let Some(items) = array_input(self.input.eval(cx)?, |other| {
            Error::new(
                ErrorCode::Location16883,
                format!("input to $map must be an array not {}", type_name(other)),
            )
        })?
        else {
            return Ok(Some(Bson::Null));
        };
        let mut out = Vec::with_capacity(items.len());
        let mut size = SizeTally::array();
        for item in items {
            cx.bind(self.slot, Some(item));
            let value = self.body.eval(cx)?.unwrap_or(Bson::Null);
            size.add_element(&value)?;
            out.push(value);
        }
        Ok(Some(Bson::Array(out)))
    }
}

#[derive(Debug)]
struct Filter {
    input: Node,
    slot: usize,
    cond: Node,
    limit: Option<Node>,
}

fn compile_filter(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let d = fields(
        "$filter",
        arg,
        &["input", "as", "cond", "limit"],
        (ErrorCode::Location28646, ErrorCode::Location28647),
        "Unrecognized parameter to $filter: ",
    )?;
    let input = required(
        d,
        "input",
        ErrorCode::Location28648,
        "Missing 'input' parameter to $filter".into(),
    )?;
    let cond = required(
        d,
        "cond",
        ErrorCode::Location28650,
        "Missing 'cond' parameter to $filter".into(),
    )?;
    let name = as_name(d, "$filter")?;
    let input = c.compile(input)?;
    let limit = d.get("limit").map(|l| c.compile(l)).transpose()?;
    let slot = c.bind(&name)?;
    let cond = c.compile(cond);
    c.unbind(1);
    Ok(op(Filter {
        input,
        slot,
        cond: cond?,
        limit,
    }))
}

impl Filter {
    fn limit(&self, cx: &mut Context<'_>) -> Result<Option<usize>> {
        let Some(limit) = &self.limit else {
            return Ok(None);
        };
        let value = limit.eval(cx)?;
        if super::super::value::nullish(&value) {
            return Ok(None);
        }
        let n = value
            .as_ref()
            .and_then(super::super::value::integral_i32)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Location327391,
                    format!(
                        "$filter: limit must be represented as a 32-bit integral value: {}",
                        super::super::value::render(&value)
                    ),
                )
            })?;
        if n < 1 {
            return Err(Error::new(
                ErrorCode::Location327392,
                format!("$filter: limit must be greater than 0: {n}"),
            ));
        }
        Ok(usize::try_from(n).ok())
    }
}

impl Operator for Filter {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let Some(items) = array_input(self.input.eval(cx)?, |other| {
            Error::new(
                ErrorCode::Location28651,
                format!("input to $filter must be an array not {}", type_name(other)),
            )
        })?
        else {
            return Ok(Some(Bson::Null));
        };
        let limit = self.limit(cx)?.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for item in items {
            if out.len() >= limit {
                break;
            }
            guard::tick()?;
            cx.bind(self.slot, Some(item.clone()));
            if truthy(&self.cond.eval(cx)?) {
                out.push(item);
            }
        }
        Ok(Some(Bson::Array(out)))
    }
}

#[derive(Debug)]
struct Reduce {
    input: Node,
    initial: Node,
    this: usize,
    value: usize,
    body: Node,
}

fn compile_reduce(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let d = fields(
        "$reduce",
        arg,
        &["input", "initialValue", "in"],
        (ErrorCode::Location40075, ErrorCode::Location40076),
        "$reduce found an unknown argument: ",
    )?;
    let input = required(
        d,
        "input",
        ErrorCode::Location40077,
        "$reduce requires 'input' to be specified".into(),
    )?;
    let initial = required(
        d,
        "initialValue",
        ErrorCode::Location40078,
        "$reduce requires 'initialValue' to be specified".into(),
    )?;
    let body = required(
        d,
        "in",
        ErrorCode::Location40079,
        "$reduce requires 'in' to be specified".into(),
    )?;
    let input = c.compile(input)?;
    let initial = c.compile(initial)?;
    let this = c.bind("this")?;
    let value = c.bind("value")?;
    let body = c.compile(body);
    c.unbind(2);
    Ok(op(Reduce {
        input,
        initial,
        this,
        value,
        body: body?,
    }))
}

impl Operator for Reduce {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let Some(items) = array_input(self.input.eval(cx)?, |other| {
            Error::new(
                ErrorCode::Location40080,
                format!(
                    "$reduce requires that 'input' be an array, found: {}",
                    render(other)
                ),
            )
        })?
        else {
            return Ok(Some(Bson::Null));
        };
        let mut acc = self.initial.eval(cx)?;
        for item in items {
            guard::tick()?;
            cx.bind(self.this, Some(item));
            cx.bind(self.value, acc);
            acc = self.body.eval(cx)?;
            // Each step may wrap the accumulator once more; stop before it is too deep to
            // clone, compare or drop without overflowing the stack.
            if let Some(v) = &acc {
                super::super::value::check_depth(v)?;
            }
        }
        Ok(acc)
    }
}
