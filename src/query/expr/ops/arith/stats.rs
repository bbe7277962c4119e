//! The expression forms of the numeric accumulators: `$sum $avg $stdDevPop $stdDevSamp` over
//! one array operand's elements or over several operands, folded through `$group`'s own
//! accumulators (`query::accumulator`), so both agree on types and rounding; and
//! `$median`/`$percentile` over an `input` (method
//! `approximate`, which mongod computes exactly on an expression's small inputs: the discrete
//! percentile, the value at rank `ceil(p·n) − 1` of the sorted numbers).

use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::{op, operands, Arity};
use super::{format_g, Num};
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::Accumulator;
use crate::query::expr::Variables;
use crate::query::path::{render, type_name};
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

/// The IDL-style parse of `{input, p, method}` (`p` only for `$percentile`): unknown field
/// 40415, missing field 40414, a non-string method 14, a method other than `approximate` 2.
fn compile_quantile(name: &str, arg: &Bson, c: &mut Compiler<'_>, median: bool) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location7436200,
            format!(
                "specification must be an object; found {name}: {}",
                render(arg)
            ),
        ));
    };
    let known: &[&str] = if median {
        &["input", "method"]
    } else {
        &["input", "p", "method"]
    };
    if let Some(k) = d.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(Error::new(
            ErrorCode::IDLUnknownField,
            format!("BSON field '{name}.{k}' is an unknown field."),
        ));
    }
    for field in known {
        if !d.contains_key(*field) {
            return Err(Error::new(
                ErrorCode::Location40414,
                format!("BSON field '{name}.{field}' is missing but a required field"),
            ));
        }
    }
    match d.get("method") {
        Some(Bson::String(m)) if m == "approximate" => {}
        Some(Bson::String(_)) => {
            return Err(Error::bad_value(
                "Currently only 'approximate' can be used as percentile 'method'.",
            ))
        }
        Some(other) => {
            return Err(Error::type_mismatch(format!(
                "BSON field '{name}.method' is the wrong type '{}', expected type 'string'",
                type_name(other)
            )))
        }
        None => {}
    }
    let input = c.compile(d.get("input").unwrap_or(&Bson::Null))?;
    let ps = if median {
        vec![0.5]
    } else {
        parse_p(d.get("p").unwrap_or(&Bson::Null), c)?
    };
    Ok(op(Quantile { input, ps, median }))
}

fn parse_p(spec: &Bson, c: &mut Compiler<'_>) -> Result<Vec<f64>> {
    let node = c.compile(spec)?;
    let Some(value) = constant(&node) else {
        return Err(Error::new(
            ErrorCode::Location7750300,
            format!(
                "The $percentile 'p' field must be an array of constant values, but found value: \
                 {}.",
                render(spec)
            ),
        ));
    };
    let msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: ";
    let items = match &value {
        Bson::Array(items) if !items.is_empty() => items,
        other => {
            return Err(Error::new(
                ErrorCode::Location7750301,
                format!("{msg}{}", render(other)),
            ))
        }
    };
    let mut ps = Vec::with_capacity(items.len());
    for item in items {
        let Some(p) = Num::of(item).map(Num::to_f64) else {
            return Err(Error::new(
                ErrorCode::Location7750302,
                format!("{msg}{}", render(item)),
            ));
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::new(
                ErrorCode::Location7750303,
                format!("{msg}{}", format_g(p)),
            ));
        }
        ps.push(p);
    }
    Ok(ps)
}

/// The value of a node built only from constants (`[0.5, 0.9]` compiles to an array of
/// constants); recursion follows the compiled tree, whose depth the compiler bounds.
fn constant(node: &Node) -> Option<Bson> {
    match node {
        Node::Const(v) => Some(v.clone()),
        Node::Array(items) => items
            .iter()
            .map(constant)
            .collect::<Option<Vec<_>>>()
            .map(Bson::Array),
        Node::Doc(fields) => fields
            .iter()
            .map(|(k, v)| constant(v).map(|v| (k.clone(), v)))
            .collect::<Option<bson::Document>>()
            .map(Bson::Document),
        _ => None,
    }
}

impl Quantile {
    fn format(&self, values: Vec<Option<f64>>) -> Value {
        let to_bson = |v: Option<f64>| v.map_or(Bson::Null, Bson::Double);
        if self.median {
            return Some(
                values
                    .into_iter()
                    .next()
                    .flatten()
                    .map_or(Bson::Null, Bson::Double),
            );
        }
        Some(Bson::Array(values.into_iter().map(to_bson).collect()))
    }
}

impl Operator for Quantile {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let input = self.input.eval(cx)?;
        let mut samples: Vec<f64> = match &input {
            Some(Bson::Array(items)) => items
                .iter()
                .filter_map(|v| Num::of(v).map(Num::to_f64))
                .collect(),
            Some(v) => match Num::of(v) {
                Some(n) => {
                    let x = n.to_f64();
                    return Ok(self.format(self.ps.iter().map(|_| Some(x)).collect()));
                }
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        if samples.is_empty() {
            return Ok(self.format(self.ps.iter().map(|_| None).collect()));
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let picked = self
            .ps
            .iter()
            .map(|p| {
                let rank = if *p >= 1.0 {
                    n - 1
                } else {
                    ((p * n as f64).ceil() as usize)
                        .saturating_sub(1)
                        .min(n - 1)
                };
                samples.get(rank).copied()
            })
            .collect();
        Ok(self.format(picked))
    }
}
