//! Object operators: `$getField`, `$setField`, `$unsetField`, `$mergeObjects`.
//!
//! `$getField`/`$setField` name a field literally, so names with `.` or a leading `$` are
//! reachable; the `field` must be a constant string in the expression itself (a field path or
//! variable there is mongod's 5654600/4161108, anything computed 5654601/4161106).

use super::super::value::{nullish, render, type_name};
use super::super::{Compiler, Context, Node, Operator, Value};
use super::{op, operands, Arity};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$getField" => compile_get(arg, c),
        "$setField" => compile_set(false, arg, c),
        "$unsetField" => compile_set(true, arg, c),
        "$mergeObjects" => operands(name, arg, c, Arity::Any).map(|args| op(Merge { args })),
        _ => return None,
    })
}

/// The literal field name of `$getField`/`$setField`, with mongod's codes
/// (`path`, `not_constant`, `not_string`).
fn literal_field(
    name: &str,
    spec: &Bson,
    c: &mut Compiler<'_>,
    codes: (ErrorCode, ErrorCode, ErrorCode),
) -> Result<String> {
    if let Bson::String(s) = spec {
        if s.starts_with('$') {
            return Err(Error::new(
                codes.0,
                format!(
                    "'{s}' is a field path reference which is not allowed in this context. Did \
                     you mean {{$literal: '{s}'}}?"
                ),
            ));
        }
    }
    match c.compile(spec)? {
        Node::Const(Bson::String(s)) => Ok(s),
        Node::Const(other) => Err(Error::new(
            codes.2,
            format!(
                "{name} requires 'field' to evaluate to type String, but got {}",
                crate::query::path::type_name(&other)
            ),
        )),
        _ => Err(Error::new(
            codes.1,
            format!(
                "{name} requires 'field' to evaluate to a constant, but got a non-constant \
                 argument"
            ),
        )),
    }
}

#[derive(Debug)]
struct GetField {
    field: String,
    input: Node,
}

fn compile_get(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let codes = (
        ErrorCode::Location5654600,
        ErrorCode::Location5654601,
        ErrorCode::Location5654602,
    );
    let current = Bson::String("$$CURRENT".into());
    let (field, input) = match arg {
        // `{$getField: {$literal: "a.b"}}`: the argument is the field's expression.
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            (Some(arg), Some(&current))
        }
        Bson::Document(d) => {
            let (mut field, mut input) = (None, None);
            for (k, v) in d {
                match k.as_str() {
                    "field" => field = Some(v),
                    "input" => input = Some(v),
                    other => {
                        return Err(Error::new(
                            ErrorCode::Location3041701,
                            format!("$getField found an unknown argument: {other}"),
                        ))
                    }
                }
            }
            (field, input)
        }
        other => (Some(other), Some(&current)),
    };
    let field = field.ok_or_else(|| {
        Error::new(
            ErrorCode::Location3041702,
            "$getField requires 'field' to be specified",
        )
    })?;
    let input = input.ok_or_else(|| {
        Error::new(
            ErrorCode::Location3041703,
            "$getField requires 'input' to be specified",
        )
    })?;
    let field = literal_field("$getField", field, c, codes)?;
    let input = c.compile(input)?;
    Ok(op(GetField { field, input }))
}

impl Operator for GetField {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        match self.input.eval(cx)? {
            None => Ok(None),
            Some(Bson::Null | Bson::Undefined) => Ok(Some(Bson::Null)),
            Some(Bson::Document(d)) => Ok(d.get(&self.field).cloned()),
            Some(_) => Ok(None),
        }
    }
}

#[derive(Debug)]
struct SetField {
    field: String,
    input: Node,
    /// `None` for `$unsetField`.
    value: Option<Node>,
}

fn compile_set(unset: bool, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let name = if unset { "$unsetField" } else { "$setField" };
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location4161100,
            format!("{name} only supports an object as its argument"),
        ));
    };
    let (mut field, mut input, mut value) = (None, None, None);
    for (k, v) in d {
        match k.as_str() {
            "field" => field = Some(v),
            "input" => input = Some(v),
            "value" if !unset => value = Some(v),
            other => {
                return Err(Error::new(
                    ErrorCode::Location4161101,
                    format!("{name} found an unknown argument: {other}"),
                ))
            }
        }
    }
    let field = field.ok_or_else(|| {
        Error::new(
            ErrorCode::Location4161102,
            format!("{name} requires 'field' to be specified"),
        )
    })?;
    if !unset && value.is_none() {
        return Err(Error::new(
            ErrorCode::Location4161103,
            format!("{name} requires 'value' to be specified"),
        ));
    }
    let input = input.ok_or_else(|| {
        Error::new(
            ErrorCode::Location4161109,
            format!("{name} requires 'input' to be specified"),
        )
    })?;
    let codes = (
        ErrorCode::Location4161108,
        ErrorCode::Location4161106,
        ErrorCode::Location4161107,
    );
    let field = literal_field(name, field, c, codes)?;
    if field.contains('\0') {
        // No BSON field name can hold a NUL byte. mongod 7.0 has no check of its own here; later
        // versions refuse the name with this code.
        return Err(Error::new(
            ErrorCode::Location9534700,
            format!("{name} requires 'field' to not contain a null byte"),
        ));
    }
    let input = c.compile(input)?;
    let value = value.map(|v| c.compile(v)).transpose()?;
    Ok(op(SetField {
        field,
        input,
        value,
    }))
}

impl Operator for SetField {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let input = self.input.eval(cx)?;
        if nullish(&input) {
            return Ok(Some(Bson::Null));
        }
        let Some(Bson::Document(mut d)) = input else {
            return Err(Error::new(
                ErrorCode::Location4161105,
                "$setField requires 'input' to evaluate to type Object",
            ));
        };
        let value = match &self.value {
            Some(node) => node.eval(cx)?,
            None => None,
        };
        match value {
            // An existing field keeps its position.
            Some(v) => {
                d.insert(self.field.clone(), v);
            }
            None => {
                d.remove(&self.field);
            }
        }
        Ok(Some(Bson::Document(d)))
    }
}

/// `$mergeObjects`: later fields win and keep the first one's position; nullish operands are
/// skipped. A single operand that evaluates to an array merges its elements (mongod evaluates
/// accumulator-style expressions that way).
#[derive(Debug)]
struct Merge {
    args: Vec<Node>,
}

fn merge_into(out: &mut Document, value: Value) -> Result<()> {
    match value {
        None | Some(Bson::Null | Bson::Undefined) => Ok(()),
        Some(Bson::Document(d)) => {
            for (k, v) in d {
                out.insert(k, v);
            }
            Ok(())
        }
        other => Err(Error::new(
            ErrorCode::Location40400,
            format!(
                "$mergeObjects requires object inputs, but input {} is of type {}",
                render(&other),
                type_name(&other)
            ),
        )),
    }
}

impl Operator for Merge {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut out = Document::new();
        if let [single] = self.args.as_slice() {
            match single.eval(cx)? {
                Some(Bson::Array(items)) => {
                    for item in items {
                        merge_into(&mut out, Some(item))?;
                    }
                }
                other => merge_into(&mut out, other)?,
            }
        } else {
            for arg in &self.args {
                merge_into(&mut out, arg.eval(cx)?)?;
            }
        }
        Ok(Some(Bson::Document(out)))
    }
}
