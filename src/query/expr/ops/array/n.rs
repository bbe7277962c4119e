//! `$firstN`, `$lastN`, `$maxN`, `$minN` as expressions over an array: `{n, input}`.

use super::super::super::value::{render, Comparator};
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use super::{to_f64, to_i64_trunc};
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use bson::Bson;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    First,
    Last,
    Max,
    Min,
}

#[derive(Debug)]
struct TakeN {
    pick: Pick,
    n: Node,
    input: Node,
    cmp: Comparator,
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let (pick, not_object) = match name {
        "$firstN" => (Pick::First, ErrorCode::Location5787801),
        "$lastN" => (Pick::Last, ErrorCode::Location5787801),
        "$maxN" => (Pick::Max, ErrorCode::Location5787900),
        _ => (Pick::Min, ErrorCode::Location5787900),
    };
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            not_object,
            format!(
                "specification must be an object; found {name}: {}",
                crate::query::path::render(arg)
            ),
        ));
    };
    let (mut n, mut input) = (None, None);
    for (field, value) in d {
        match field.as_str() {
            "n" => n = Some(c.compile(value)?),
            "input" => input = Some(c.compile(value)?),
            other => {
                return Err(Error::new(
                    ErrorCode::Location5787901,
                    format!("Unknown argument for 'n' operator: {other}"),
                ))
            }
        }
    }
    let n = n.ok_or_else(|| Error::new(ErrorCode::Location5787906, "Missing value for 'n'"))?;
    let input =
        input.ok_or_else(|| Error::new(ErrorCode::Location5787907, "Missing value for 'input'"))?;
    Ok(op(TakeN {
        pick,
        n,
        input,
        cmp: c.comparator(),
    }))
}

/// mongod's `AccumulatorN::validateN`: a positive integral number.
fn validate_n(value: &Value) -> Result<usize> {
    let not_integral = |code| {
        Error::new(
            code,
            format!(
                "Value for 'n' must be of integral type, but found {}",
                render(value)
            ),
        )
    };
    let Some(v) = value.as_ref().filter(|v| is_number(v)) else {
        return Err(not_integral(ErrorCode::Location5787902));
    };
    let n = to_i64_trunc(v).unwrap_or(0);
    if Some(n as f64) != to_f64(v) {
        return Err(not_integral(ErrorCode::Location5787903));
    }
    if n <= 0 {
        return Err(Error::new(
            ErrorCode::Location5787908,
            format!("'n' must be greater than 0, found {n}"),
        ));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

impl Operator for TakeN {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let n = validate_n(&self.n.eval(cx)?)?;
        let Some(Bson::Array(mut items)) = self.input.eval(cx)? else {
            return Err(Error::new(
                ErrorCode::Location5788200,
                "Input must be an array",
            ));
        };
        let out = match self.pick {
            Pick::First => items.into_iter().take(n).collect(),
            Pick::Last => {
                let skip = items.len().saturating_sub(n);
                items.into_iter().skip(skip).collect()
            }
            Pick::Min | Pick::Max => {
                // Nullish values take no part, as in mongod's accumulators.
                items.retain(|v| !matches!(v, Bson::Null | Bson::Undefined));
                items.sort_by(|a, b| self.cmp.compare(a, b));
                if self.pick == Pick::Max {
                    items.reverse();
                }
                items.truncate(n);
                items
            }
        };
        Ok(Some(Bson::Array(out)))
    }
}
