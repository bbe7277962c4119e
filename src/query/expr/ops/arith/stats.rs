//! The expression forms of the numeric accumulators: `$sum $avg $stdDevPop $stdDevSamp` over
//! one array operand's elements or over several operands, folded through `$group`'s own
//! accumulators (`query::accumulator`), so both agree on types and rounding; and
//! `$median`/`$percentile` over an `input`, parsed and computed by the `$percentile`
//! accumulator's rules (`accumulator::stats`: method `approximate`, which mongod computes
//! exactly on an expression's small inputs).

use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::{op, operands, Arity};
use crate::error::Result;
use crate::query::accumulator::{stats, Accumulator};
use crate::query::expr::Variables;
use bson::Bson;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$sum" | "$avg" | "$stdDevPop" | "$stdDevSamp" => compile_folded(name, arg, c),
        "$percentile" => compile_quantile("$percentile", arg, c, false),
        "$median" => compile_quantile("$median", arg, c, true),
        _ => return None,
    })
}

/// The values an accumulator expression sees: one array operand's elements, else every operand.
pub(in crate::query::expr::ops) fn accumulated(values: Vec<Value>) -> Vec<Value> {
    if values.len() == 1 {
        if let Some(Some(Bson::Array(items))) = values.first() {
            return items.iter().cloned().map(Some).collect();
        }
    }
    values
}

/// An accumulator's expression form: the operands' values folded through the accumulator.
#[derive(Debug)]
struct Folded {
    accumulator: Accumulator,
    args: Vec<Node>,
}

fn compile_folded(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let args = operands(name, arg, c, Arity::Any)?;
    // The accumulator's own argument is never evaluated here: values come from the operands.
    let accumulator = Accumulator::compile(name, &Bson::Null, &Variables::default())?;
    Ok(op(Folded { accumulator, args }))
}

impl Operator for Folded {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            values.push(arg.eval(cx)?);
        }
        self.accumulator.fold(accumulated(values)).map(Some)
    }
}

#[derive(Debug)]
struct Quantile {
    input: Node,
    ps: Vec<f64>,
    median: bool,
}

/// `{input, p, method}` (`p` only for `$percentile`), parsed by the accumulator's rules.
fn compile_quantile(name: &str, arg: &Bson, c: &mut Compiler<'_>, median: bool) -> Result<Node> {
    let form = (stats::Form::Expression, median);
    let (input, ps) = stats::parse(name, arg, form, |v| c.compile(v), |n| n)?;
    Ok(op(Quantile { input, ps, median }))
}

impl Operator for Quantile {
    /// An array's numbers go through the accumulator's state; a number alone is every
    /// percentile; anything else has none (nulls).
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let mut state = stats::Percentile::new(self.ps.clone(), self.median);
        match self.input.eval(cx)? {
            Some(Bson::Array(items)) => {
                for item in &items {
                    state.add(item);
                }
            }
            Some(scalar) => {
                if let Some(all) = state.clone().of_scalar(&scalar) {
                    return Ok(Some(all));
                }
            }
            None => {}
        }
        Ok(Some(state.finish()))
    }
}
