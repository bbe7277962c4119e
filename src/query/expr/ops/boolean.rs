//! Boolean operators: `$and`, `$or` (short-circuiting, as mongod's), `$not`.

use super::super::value::truthy;
use super::super::{Compiler, Context, Node, Operator, Value};
use super::{apply, op, operands, Arity};
use crate::error::Result;
use bson::Bson;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$and" => operands(name, arg, c, Arity::Any).map(|args| op(Junction { all: true, args })),
        "$or" => operands(name, arg, c, Arity::Any).map(|args| op(Junction { all: false, args })),
        "$not" => apply("$not", arg, c, Arity::Exactly(1), |_, v| {
            Ok(Some(Bson::Boolean(!v.first().is_some_and(truthy))))
        }),
        _ => return None,
    })
}

/// `$and` (`all`) or `$or`: stops at the first operand that decides.
#[derive(Debug)]
struct Junction {
    all: bool,
    args: Vec<Node>,
}

impl Operator for Junction {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        for arg in &self.args {
            if truthy(&arg.eval(cx)?) != self.all {
                return Ok(Some(Bson::Boolean(!self.all)));
            }
        }
        Ok(Some(Bson::Boolean(self.all)))
    }
}
