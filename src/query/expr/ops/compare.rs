//! Comparison operators: `$cmp $eq $gt $gte $lt $lte $ne` (exactly two operands, compared by the
//! expression's comparator, so missing sorts before `null` and equals only missing), and the
//! expression forms of `$max`/`$min` over one array operand's elements or several operands,
//! skipping `null`, `undefined` and missing.

use super::super::value::{nullish, Comparator};
use super::super::{Compiler, Context, Node, Operator, Value};
use super::arith::stats_accumulated;
use super::{op, operands, Arity};
use crate::error::Result;
use bson::Bson;
use std::cmp::Ordering;

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Cmp,
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    let kind = match name {
        "$cmp" => Kind::Cmp,
        "$eq" => Kind::Eq,
        "$ne" => Kind::Ne,
        "$gt" => Kind::Gt,
        "$gte" => Kind::Gte,
        "$lt" => Kind::Lt,
        "$lte" => Kind::Lte,
        "$max" => return Some(extreme(name, arg, c, Ordering::Greater)),
        "$min" => return Some(extreme(name, arg, c, Ordering::Less)),
        _ => return None,
    };
    let comparator = c.comparator();
    Some(operands(name, arg, c, Arity::Exactly(2)).map(|args| {
        op(Compare {
            kind,
            args,
            comparator,
        })
    }))
}

#[derive(Debug)]
struct Compare {
    kind: Kind,
    args: Vec<Node>,
    comparator: Comparator,
}

impl Operator for Compare {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut values = Vec::with_capacity(2);
        for arg in &self.args {
            values.push(arg.eval(cx)?);
        }
        let (a, b) = match values.as_slice() {
            [a, b] => (a, b),
            _ => return Ok(Some(Bson::Null)),
        };
        let order = self.comparator.compare_values(a, b);
        Ok(Some(match self.kind {
            Kind::Cmp => Bson::Int32(match order {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            }),
            Kind::Eq => Bson::Boolean(order == Ordering::Equal),
            Kind::Ne => Bson::Boolean(order != Ordering::Equal),
            Kind::Gt => Bson::Boolean(order == Ordering::Greater),
            Kind::Gte => Bson::Boolean(order != Ordering::Less),
            Kind::Lt => Bson::Boolean(order == Ordering::Less),
            Kind::Lte => Bson::Boolean(order != Ordering::Greater),
        }))
    }
}

/// `$max` (`keep` is `Greater`) or `$min`.
#[derive(Debug)]
struct Extreme {
    keep: Ordering,
    args: Vec<Node>,
    comparator: Comparator,
}

fn extreme(name: &str, arg: &Bson, c: &mut Compiler<'_>, keep: Ordering) -> Result<Node> {
    let comparator = c.comparator();
    let args = operands(name, arg, c, Arity::Any)?;
    Ok(op(Extreme {
        keep,
        args,
        comparator,
    }))
}

impl Operator for Extreme {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            values.push(arg.eval(cx)?);
        }
        let mut best: Option<Bson> = None;
        for value in stats_accumulated(values) {
            if nullish(&value) {
                continue;
            }
            let Some(value) = value else { continue };
            best = match best {
                Some(b) if self.comparator.compare(&value, &b) != self.keep => Some(b),
                _ => Some(value),
            };
        }
        Ok(Some(best.unwrap_or(Bson::Null)))
    }
}
