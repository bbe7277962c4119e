//! `$firstN`, `$lastN`, `$maxN`, `$minN` as expressions over an array: `{n, input}`, the
//! array's elements folded into the accumulator's own state (`query::accumulator::n`), so the
//! argument, `n` and selection rules live once.

use super::super::super::value::Comparator;
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::n::{parse_input_n, validate_n, Pick};
use crate::query::accumulator::State;
use bson::Bson;

#[derive(Debug)]
struct TakeN {
    pick: Pick,
    n: Node,
    input: Node,
    cmp: Comparator,
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let pick = match name {
        "$firstN" => Pick::First,
        "$lastN" => Pick::Last,
        "$maxN" => Pick::Max,
        _ => Pick::Min,
    };
    let (input, n) = parse_input_n(name, pick, arg, |v| c.compile(v))?;
    Ok(op(TakeN {
        pick,
        n,
        input,
        cmp: c.comparator(),
    }))
}

impl Operator for TakeN {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let n = validate_n(&self.n.eval(cx)?)?;
        let Some(Bson::Array(items)) = self.input.eval(cx)? else {
            return Err(Error::new(
                ErrorCode::Location5788200,
                "Input must be an array",
            ));
        };
        let mut state = State::of_n(self.pick, n, &self.cmp);
        for item in items {
            state.add(Some(item))?;
        }
        Ok(Some(state.finish()))
    }
}
