//! The expression forms of the numeric accumulators: `$sum $avg $stdDevPop $stdDevSamp` over
//! one array operand's elements or over several operands (non-numbers are skipped, as the
//! accumulators skip them), and `$median`/`$percentile` over an `input` (method
//! `approximate`, which mongod computes exactly on an expression's small inputs: the discrete
//! percentile, the value at rank `ceil(p·n) − 1` of the sorted numbers).

use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::{apply, op, Arity};
use super::{dec_value, decimal, format_g, int_or_long, Num};
use crate::error::{Error, ErrorCode, Result};
use crate::query::path::{render, type_name};
use bson::Bson;
use decimal::Dec;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$sum" => apply("$sum", arg, c, Arity::Any, |_, v| Ok(sum(&numbers(v)))),
        "$avg" => apply("$avg", arg, c, Arity::Any, |_, v| Ok(avg(&numbers(v)))),
        "$stdDevPop" => apply("$stdDevPop", arg, c, Arity::Any, |_, v| {
            Ok(std_dev(&numbers(v), false))
        }),
        "$stdDevSamp" => apply("$stdDevSamp", arg, c, Arity::Any, |_, v| {
            Ok(std_dev(&numbers(v), true))
        }),
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

fn numbers(values: Vec<Value>) -> Vec<Num> {
    accumulated(values)
        .iter()
        .filter_map(|v| v.as_ref().and_then(Num::of))
        .collect()
}

/// mongod's `AccumulatorSum`: an int while the sum fits, then a long, then a double; a double
/// anywhere makes a double, a decimal a decimal.
fn sum(nums: &[Num]) -> Value {
    let mut ints: i128 = 0;
    let mut double = 0.0f64;
    let mut compensation = 0.0f64;
    let mut dec: Option<Dec> = None;
    let (mut has_long, mut has_double) = (false, false);
    for n in nums {
        match *n {
            Num::Int(i) => ints += i128::from(i),
            Num::Long(i) => {
                has_long = true;
                ints += i128::from(i);
            }
            Num::Double(d) => {
                has_double = true;
                // Neumaier's compensated sum, as mongod's DoubleDoubleSummation keeps error terms.
                let t = double + d;
                compensation += if double.abs() >= d.abs() {
                    (double - t) + d
                } else {
                    (d - t) + double
                };
                double = t;
            }
            Num::Decimal(d) => {
                dec = Some(decimal::add(dec.unwrap_or_else(|| decimal::from_i64(0)), d));
            }
        }
    }
    let non_decimal = ints as f64 + double + compensation;
    if let Some(d) = dec {
        let rest = if has_double {
            decimal::from_f64(non_decimal, 34)
        } else {
            i64::try_from(ints)
                .map_or_else(|_| decimal::from_f64(non_decimal, 34), decimal::from_i64)
        };
        return dec_value(decimal::add(d, rest));
    }
    if has_double {
        return Some(Bson::Double(non_decimal));
    }
    Some(match i64::try_from(ints) {
        Ok(i) if has_long => Bson::Int64(i),
        Ok(i) => int_or_long(i),
        Err(_) => Bson::Double(non_decimal),
    })
}

fn avg(nums: &[Num]) -> Value {
    if nums.is_empty() {
        return Some(Bson::Null);
    }
    let count = nums.len() as f64;
    match sum(nums) {
        Some(Bson::Decimal128(d)) => {
            let n = i64::try_from(nums.len()).unwrap_or(i64::MAX);
            dec_value(decimal::div(decimal::from_bson(&d), decimal::from_i64(n)))
        }
        Some(total) => Some(Bson::Double(
            Num::of(&total).map_or(f64::NAN, Num::to_f64) / count,
        )),
        None => Some(Bson::Null),
    }
}

/// Welford's running variance, as mongod's `AccumulatorStdDev`.
fn std_dev(nums: &[Num], sample: bool) -> Value {
    let (mut count, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    for n in nums {
        let x = n.to_f64();
        count += 1.0;
        let delta = x - mean;
        mean += delta / count;
        m2 += delta * (x - mean);
    }
    let divisor = if sample { count - 1.0 } else { count };
    if divisor <= 0.0 {
        return Some(Bson::Null);
    }
    Some(Bson::Double((m2 / divisor).sqrt()))
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
