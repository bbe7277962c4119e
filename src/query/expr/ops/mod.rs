//! The operator table: each family compiles the operator names it owns, and the shared
//! machinery for operators that evaluate all their operands first ([`Apply`]).
//!
//! A family's `compile(name, arg, compiler)` returns `None` for a name it does not own. A name
//! no family owns is mongod's 168 "Unrecognized expression".

mod arith;
mod array;
mod boolean;
mod compare;
mod cond;
mod convert;
mod date;
mod misc;
mod object;
mod set;
mod string;
mod trig;
mod vars;

pub(crate) use arith::{format_g, format_g_digits};

use super::{Compiler, Context, Node, Operator, Value};
use crate::error::{Error, ErrorCode, Result};
use bson::Bson;
use std::sync::Arc;

/// A family's compile function.
type Family = fn(&str, &Bson, &mut Compiler<'_>) -> Option<Result<Node>>;

const FAMILIES: &[Family] = &[
    vars::compile,
    arith::compile,
    compare::compile,
    boolean::compile,
    cond::compile,
    trig::compile,
    convert::compile,
    array::compile,
    set::compile,
    object::compile,
    string::compile,
    date::compile,
    misc::compile,
];

/// Compiles `{name: arg}`.
pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    for family in FAMILIES {
        if let Some(node) = family(name, arg, c) {
            return node;
        }
    }
    Err(Error::new(
        ErrorCode::InvalidPipelineOperator,
        format!("Unrecognized expression '{name}'"),
    ))
}

/// How many operands an operator takes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arity {
    Exactly(usize),
    Between(usize, usize),
    Any,
}

/// The operands of `{name: arg}`: the elements of an array, or `arg` itself as the only one,
/// checked against `arity` with mongod's errors.
pub(super) fn operands(
    name: &str,
    arg: &Bson,
    c: &mut Compiler<'_>,
    arity: Arity,
) -> Result<Vec<Node>> {
    let specs: Vec<&Bson> = match arg {
        Bson::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let n = specs.len();
    match arity {
        Arity::Exactly(k) if n != k => {
            return Err(Error::new(
                ErrorCode::Location16020,
                format!("Expression {name} takes exactly {k} arguments. {n} were passed in."),
            ))
        }
        Arity::Between(lo, hi) if n < lo || n > hi => {
            return Err(Error::new(
                ErrorCode::Location28667,
                format!(
                    "Expression {name} takes at least {lo} arguments, and at most {hi}, but {n} \
                     were passed in."
                ),
            ))
        }
        _ => {}
    }
    specs.into_iter().map(|s| c.compile(s)).collect()
}

/// The evaluation step of an [`Apply`] operator: its name and its evaluated operands.
pub(super) type Func = fn(&'static str, Vec<Value>) -> Result<Value>;

/// An operator that evaluates every operand, then computes from the values.
#[derive(Debug)]
pub(super) struct Apply {
    name: &'static str,
    args: Vec<Node>,
    f: Func,
}

impl Operator for Apply {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            values.push(arg.eval(cx)?);
        }
        (self.f)(self.name, values)
    }
}

/// Compiles `{name: arg}` as an [`Apply`] of `f` with `arity` operands.
pub(super) fn apply(
    name: &'static str,
    arg: &Bson,
    c: &mut Compiler<'_>,
    arity: Arity,
    f: Func,
) -> Result<Node> {
    let args = operands(name, arg, c, arity)?;
    Ok(Node::Op(Arc::new(Apply { name, args, f })))
}

/// Wraps an operator.
pub(super) fn op(operator: impl Operator + 'static) -> Node {
    Node::Op(Arc::new(operator))
}
