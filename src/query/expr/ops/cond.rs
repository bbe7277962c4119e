//! Conditional operators, each evaluating only the branch it takes: `$cond` (array or
//! `{if, then, else}` form), `$ifNull` (the first operand that is not `null`, `undefined` or
//! missing, else the last operand's value) and `$switch`.

use super::super::value::{nullish, truthy};
use super::super::{Compiler, Context, Node, Operator, Value};
use super::{op, operands, Arity};
use crate::error::{Error, ErrorCode, Result};
use crate::query::path::type_name;
use bson::Bson;

#[cfg(test)]
#[path = "cond_tests.rs"]
mod tests;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$cond" => compile_cond(arg, c),
        "$ifNull" => compile_if_null(arg, c),
        "$switch" => compile_switch(arg, c),
        _ => return None,
    })
}

#[derive(Debug)]
struct Cond {
    test: Node,
    then: Node,
    otherwise: Node,
}

fn compile_cond(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        let mut args = operands("$cond", arg, c, Arity::Exactly(3))?.into_iter();
        let (Some(test), Some(then), Some(otherwise)) = (args.next(), args.next(), args.next())
        else {
            return Err(Error::internal("$cond lost an operand"));
        };
        return Ok(op(Cond {
            test,
            then,
            otherwise,
        }));
    };
    let (mut test, mut then, mut otherwise) = (None, None, None);
    for (k, v) in d {
        let slot = match k.as_str() {
            "if" => &mut test,
            "then" => &mut then,
            "else" => &mut otherwise,
            _ => {
                return Err(Error::new(
                    ErrorCode::Location17083,
                    format!("Unrecognized parameter to $cond: {k}"),
                ))
            }
        };
        *slot = Some(c.compile(v)?);
    }
    let missing =
        |code, field: &str| Error::new(code, format!("Missing '{field}' parameter to $cond"));
    Ok(op(Cond {
        test: test.ok_or_else(|| missing(ErrorCode::Location17080, "if"))?,
        then: then.ok_or_else(|| missing(ErrorCode::Location17081, "then"))?,
        otherwise: otherwise.ok_or_else(|| missing(ErrorCode::Location17082, "else"))?,
    }))
}

impl Operator for Cond {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        if truthy(&self.test.eval(cx)?) {
            self.then.eval(cx)
        } else {
            self.otherwise.eval(cx)
        }
    }
}

#[derive(Debug)]
struct IfNull {
    args: Vec<Node>,
}

fn compile_if_null(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let args = operands("$ifNull", arg, c, Arity::Any)?;
    if args.len() < 2 {
        return Err(Error::new(
            ErrorCode::Location1257300,
            format!("$ifNull needs at least two arguments, had: {}", args.len()),
        ));
    }
    Ok(op(IfNull { args }))
}

impl Operator for IfNull {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let last = self.args.len().saturating_sub(1);
        for (i, arg) in self.args.iter().enumerate() {
            let value = arg.eval(cx)?;
            if !nullish(&value) || i == last {
                return Ok(value);
            }
        }
        Ok(None)
    }
}

#[derive(Debug)]
struct Switch {
    branches: Vec<(Node, Node)>,
    default: Option<Node>,
}

fn compile_switch(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location40060,
            format!(
                "$switch requires an object as an argument, found: {}",
                type_name(arg)
            ),
        ));
    };
    let mut branches = Vec::new();
    let mut default = None;
    for (k, v) in d {
        match k.as_str() {
            "branches" => {
                let Bson::Array(items) = v else {
                    return Err(Error::new(
                        ErrorCode::Location40061,
                        format!(
                            "$switch expected an array for 'branches', found: {}",
                            type_name(v)
                        ),
                    ));
                };
                for item in items {
                    branches.push(compile_branch(item, c)?);
                }
            }
            "default" => default = Some(c.compile(v)?),
            _ => {
                return Err(Error::new(
                    ErrorCode::Location40067,
                    format!("$switch found an unknown argument: {k}"),
                ))
            }
        }
    }
    if branches.is_empty() {
        return Err(Error::new(
            ErrorCode::Location40068,
            "$switch requires at least one branch.",
        ));
    }
    Ok(op(Switch { branches, default }))
}

fn compile_branch(item: &Bson, c: &mut Compiler<'_>) -> Result<(Node, Node)> {
    let Bson::Document(branch) = item else {
        return Err(Error::new(
            ErrorCode::Location40062,
            format!(
                "$switch expected each branch to be an object, found: {}",
                type_name(item)
            ),
        ));
    };
    let (mut case, mut then) = (None, None);
    for (k, v) in branch {
        match k.as_str() {
            "case" => case = Some(c.compile(v)?),
            "then" => then = Some(c.compile(v)?),
            _ => {
                return Err(Error::new(
                    ErrorCode::Location40063,
                    format!("$switch found an unknown argument to a branch: {k}"),
                ))
            }
        }
    }
    let case = case.ok_or_else(|| {
        Error::new(
            ErrorCode::Location40064,
            "$switch requires each branch have a 'case' expression",
        )
    })?;
    let then = then.ok_or_else(|| {
        Error::new(
            ErrorCode::Location40065,
            "$switch requires each branch have a 'then' expression.",
        )
    })?;
    Ok((case, then))
}

impl Operator for Switch {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        for (case, then) in &self.branches {
            if truthy(&case.eval(cx)?) {
                return then.eval(cx);
            }
        }
        match &self.default {
            Some(default) => default.eval(cx),
            None => Err(Error::new(
                ErrorCode::Location40066,
                "$switch could not find a matching branch for an input, and no default was \
                 specified.",
            )),
        }
    }
}
