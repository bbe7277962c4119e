//! The window functions of `$setWindowFields`: every accumulator over a frame (through
//! `query::accumulator`'s states), `$covariancePop`/`$covarianceSamp`, and the order functions
//! `$rank $denseRank $documentNumber $shift $derivative $integral $expMovingAvg $linearFill
//! $locf`, parsed with mongod's rules and computed over one sorted partition.
//!
//! Owns: each function's parsing and its values over a partition. Does not own: frames
//! (`frames.rs`), partitioning and memory (`mod.rs`), or the accumulators' arithmetic.
//!
//! An accumulator's state cannot be read without being finished, so each document's frame is
//! folded afresh: time is O(partition size × frame size), and consecutive documents with the
//! same frame (the default whole-partition frame, ties of a range frame) share one result.

use super::frames::{numeric, Frame};
use super::partition::PartitionRows;
use super::series::{covariance, derivative, integral, linear_fill};
use super::SortBy;
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::Accumulator;
use crate::query::compare::compare_values_with;
use crate::query::expr::{Expression, Value, Variables};
use crate::query::size::{held_value, value_size};
use bson::{Bson, Document};

/// Names mongod 7.0 knows as window functions.
const KNOWN: &[&str] = &[
    "$addToSet",
    "$avg",
    "$bottom",
    "$bottomN",
    "$count",
    "$covariancePop",
    "$covarianceSamp",
    "$denseRank",
    "$derivative",
    "$documentNumber",
    "$expMovingAvg",
    "$first",
    "$firstN",
    "$integral",
    "$last",
    "$lastN",
    "$linearFill",
    "$locf",
    "$max",
    "$maxN",
    "$median",
    "$min",
    "$minN",
    "$percentile",
    "$push",
    "$rank",
    "$shift",
    "$stdDevPop",
    "$stdDevSamp",
    "$sum",
    "$top",
    "$topN",
];

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RankKind {
    Rank,
    Dense,
    DocumentNumber,
}

#[derive(Debug)]
pub enum Function {
    Accumulate {
        acc: Accumulator,
        frame: Frame,
    },
    Covariance {
        sample: bool,
        arg: Expression,
        frame: Frame,
    },
    Rank(RankKind),
    Shift {
        output: Expression,
        by: i64,
        default: Bson,
    },
    Derivative {
        input: Expression,
        unit: Option<i64>,
        frame: Frame,
    },
    Integral {
        input: Expression,
        unit: Option<i64>,
        frame: Frame,
    },
    ExpMovingAvg {
        input: Expression,
        alpha: f64,
    },
    LinearFill(Expression),
    Locf(Expression),
}

fn parse_error(message: impl Into<String>) -> Error {
    Error::failed_to_parse(message)
}

/// What a partition offers its functions: the documents in order (in memory or read back
/// from a spill file) and, with a single-field `sortBy`, each document's value of it.
pub struct Partition<'a> {
    pub rows: &'a PartitionRows,
    pub keys: &'a [Value],
    /// Ranks tie under this (the operation's collation).
    pub collation: Option<&'a crate::query::collation::Collation>,
}

impl Partition<'_> {
    pub fn len(&self) -> usize {
        self.rows.len()
    }
}

impl Function {
    /// Parses one output field's `{$fn: arg, window: {...}}`.
    pub fn parse(spec: &Document, sort: Option<&SortBy>, vars: &Variables) -> Result<Function> {
        let Some((name, arg)) = spec
            .iter()
            .find(|(k, _)| k.starts_with('$'))
            .map(|(k, v)| (k.as_str(), v))
        else {
            let first = spec
                .keys()
                .next()
                .map(|k| format!(", {k}"))
                .unwrap_or_default();
            return Err(parse_error(format!(
                "Expected a $-prefixed window function{first}"
            )));
        };
        if !KNOWN.contains(&name) {
            return Err(parse_error(format!("Unrecognized window function, {name}")));
        }
        let mut window = None;
        for (k, v) in spec {
            if k == "window" {
                if window.is_some() {
                    return Err(parse_error(format!(
                        "saw multiple 'window' fields in '{name}' expression"
                    )));
                }
                window = Some(v);
            } else if k != name {
                if KNOWN.contains(&k.as_str()) {
                    return Err(parse_error(
                        "Cannot specify two functions in window function spec",
                    ));
                }
                if matches!(name, "$rank" | "$denseRank" | "$documentNumber") {
                    return Err(Error::new(
                        ErrorCode::Location5371601,
                        "Rank style window functions take no other arguments",
                    ));
                }
                return Err(parse_error(format!(
                    "Window function found an unknown argument: {k}"
                )));
            }
        }
        let frame = |window: Option<&Bson>| match window {
            Some(w) => Frame::parse(w, sort, vars),
            None => Ok(Frame::WHOLE),
        };
        let no_window = |window: Option<&Bson>| match window {
            Some(_) => Err(parse_error(format!(
                "'window' field is not allowed in {name}"
            ))),
            None => Ok(()),
        };
        Ok(match name {
            "$rank" | "$denseRank" | "$documentNumber" => {
                if window.is_some() {
                    return Err(Error::new(
                        ErrorCode::Location5371601,
                        "Rank style window functions take no other arguments",
                    ));
                }
                if !matches!(arg, Bson::Document(d) if d.is_empty()) {
                    return Err(Error::new(
                        ErrorCode::Location5371603,
                        format!("{name} must be specified with '{{}}' as the value"),
                    ));
                }
                single_sort(sort, name, ErrorCode::Location5371602)?;
                Function::Rank(match name {
                    "$rank" => RankKind::Rank,
                    "$denseRank" => RankKind::Dense,
                    _ => RankKind::DocumentNumber,
                })
            }
            "$shift" => {
                if window.is_some() {
                    return Err(parse_error("$shift does not accept a 'window' field"));
                }
                let f = parse_shift(arg, vars)?;
                if sort.is_none() {
                    return Err(parse_error("'$shift' requires a sortBy"));
                }
                f
            }
            "$derivative" | "$integral" => {
                let sort = sort.ok_or_else(|| parse_error(format!("{name} requires a sortBy")))?;
                if sort.fields.len() != 1 {
                    return Err(parse_error(format!(
                        "{name} requires a non-compound sortBy"
                    )));
                }
                let Bson::Document(args) = arg else {
                    return Err(parse_error(format!(
                        "{name} expects an object, but got a {}: {}",
                        crate::query::path::type_name(arg),
                        crate::query::path::render(arg)
                    )));
                };
                let mut input = None;
                let mut unit = None;
                for (k, v) in args {
                    match k.as_str() {
                        "input" => input = Some(Expression::compile(v, vars)?),
                        "unit" => unit = Some(parse_unit(v)?),
                        other => {
                            return Err(parse_error(format!(
                                "{name} got unexpected argument: {other}"
                            )))
                        }
                    }
                }
                let input = input
                    .ok_or_else(|| parse_error(format!("{name} requires an 'input' expression")))?;
                if name == "$derivative" {
                    let window = window.ok_or_else(|| {
                        parse_error("$derivative requires explicit window bounds")
                    })?;
                    Function::Derivative {
                        input,
                        unit,
                        frame: frame(Some(window))?,
                    }
                } else {
                    Function::Integral {
                        input,
                        unit,
                        frame: frame(window)?,
                    }
                }
            }
            "$expMovingAvg" => {
                no_window(window)?;
                parse_exp_moving_avg(arg, sort, vars)?
            }
            "$linearFill" => {
                no_window(window)?;
                single_sort(sort, name, ErrorCode::Location605001)?;
                Function::LinearFill(Expression::compile(arg, vars)?)
            }
            "$locf" => {
                no_window(window)?;
                Function::Locf(Expression::compile(arg, vars)?)
            }
            "$covariancePop" | "$covarianceSamp" => Function::Covariance {
                sample: name == "$covarianceSamp",
                arg: Expression::compile(arg, vars)?,
                frame: frame(window)?,
            },
            _ => Function::Accumulate {
                acc: Accumulator::compile(name, arg, vars)?,
                frame: frame(window)?,
            },
        })
    }

    /// The function's value for each document of `part`, in order (`None`: leave the field
    /// out). `charge` is told how many bytes the computation holds more (or fewer).
    pub fn compute(
        &self,
        part: &Partition<'_>,
        charge: &mut dyn FnMut(isize) -> Result<()>,
    ) -> Result<Vec<Value>> {
        let n = part.len();
        let eval_all = |e: &Expression| -> Result<Vec<Value>> { part.rows.eval_all(e) };
        match self {
            Function::Accumulate { acc, frame } => {
                let values = eval_all(acc.arg())?;
                let held = values
                    .iter()
                    .flatten()
                    .map(held_value)
                    .sum::<Result<usize>>()?;
                charge(held as isize)?;
                let out = over_frames(
                    frame,
                    part,
                    |lo, hi| {
                        let mut state = acc.start();
                        let mut grown = 0isize;
                        for v in values.get(lo..=hi).into_iter().flatten() {
                            crate::query::guard::tick()?;
                            let delta = state.add(v.clone())?;
                            grown += delta;
                            charge(delta)?;
                        }
                        charge(-grown)?;
                        Ok(Some(state.finish()))
                    },
                    || {
                        let state = acc.start();
                        Some(state.finish())
                    },
                )?;
                charge(-(held as isize))?;
                Ok(out)
            }
            Function::Covariance { sample, arg, frame } => {
                let pairs: Vec<Option<(f64, f64)>> = eval_all(arg)?
                    .iter()
                    .map(|v| match v {
                        Some(Bson::Array(xy)) if xy.len() == 2 => {
                            match (xy.first().and_then(numeric), xy.get(1).and_then(numeric)) {
                                (Some(x), Some(y)) => Some((x, y)),
                                _ => None,
                            }
                        }
                        _ => None,
                    })
                    .collect();
                over_frames(
                    frame,
                    part,
                    |lo, hi| {
                        let window: Vec<(f64, f64)> = pairs
                            .get(lo..=hi)
                            .into_iter()
                            .flatten()
                            .flatten()
                            .copied()
                            .collect();
                        Ok(Some(covariance(&window, *sample)))
                    },
                    || Some(Bson::Null),
                )
            }
            Function::Rank(kind) => {
                let mut out = Vec::with_capacity(n);
                let (mut rank, mut dense) = (0usize, 0usize);
                let mut previous: Option<Bson> = None;
                for (i, key) in part.keys.iter().enumerate() {
                    let key = key.clone().unwrap_or(Bson::Null);
                    let tie = previous
                        .as_ref()
                        .is_some_and(|p| compare_values_with(p, &key, part.collation).is_eq());
                    if !tie {
                        rank = i + 1;
                        dense += 1;
                    }
                    previous = Some(key);
                    let value = match kind {
                        RankKind::Rank => rank,
                        RankKind::Dense => dense,
                        RankKind::DocumentNumber => i + 1,
                    };
                    out.push(Some(whole_number(value)));
                }
                Ok(out)
            }
            Function::Shift {
                output,
                by,
                default,
            } => {
                let values = eval_all(output)?;
                Ok((0..n)
                    .map(|i| {
                        let j = i64::try_from(i).ok().and_then(|i| i.checked_add(*by));
                        match j.and_then(|j| usize::try_from(j).ok()).filter(|&j| j < n) {
                            Some(j) => values.get(j).cloned().flatten(),
                            None => Some(default.clone()),
                        }
                    })
                    .collect())
            }
            Function::Derivative { input, unit, frame } => {
                let ys = eval_all(input)?;
                over_frames(
                    frame,
                    part,
                    |lo, hi| derivative(part.keys, &ys, lo, hi, *unit),
                    || Some(Bson::Null),
                )
            }
            Function::Integral { input, unit, frame } => {
                let ys = eval_all(input)?;
                over_frames(
                    frame,
                    part,
                    |lo, hi| integral(part.keys, &ys, lo, hi, *unit),
                    || Some(Bson::Null),
                )
            }
            Function::ExpMovingAvg { input, alpha } => {
                let mut average: Option<f64> = None;
                eval_all(input)?
                    .iter()
                    .map(|v| {
                        if let Some(x) = v.as_ref().and_then(numeric) {
                            average = Some(match average {
                                None => x,
                                Some(a) => x * alpha + a * (1.0 - alpha),
                            });
                        }
                        Ok(Some(average.map_or(Bson::Null, Bson::Double)))
                    })
                    .collect()
            }
            Function::Locf(input) => {
                let mut last = Bson::Null;
                Ok(eval_all(input)?
                    .into_iter()
                    .map(|v| {
                        if let Some(v) = v.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) {
                            last = v;
                        }
                        Some(last.clone())
                    })
                    .collect())
            }
            Function::LinearFill(input) => linear_fill(part.keys, &eval_all(input)?),
        }
    }
}

/// Computes `f(lo, hi)` for each document's frame, reusing the previous result while the
/// frame stays the same; `empty` for a document whose frame covers nothing.
fn over_frames(
    frame: &Frame,
    part: &Partition<'_>,
    mut f: impl FnMut(usize, usize) -> Result<Value>,
    empty: impl Fn() -> Value,
) -> Result<Vec<Value>> {
    let n = part.len();
    let mut out = Vec::with_capacity(n);
    let mut last: Option<((usize, usize), Value)> = None;
    for i in 0..n {
        match frame.endpoints(i, n, part.keys)? {
            None => out.push(empty()),
            Some(ends) => {
                let value = match &last {
                    Some((prev, value)) if *prev == ends => value.clone(),
                    _ => f(ends.0, ends.1)?,
                };
                // Each document's value is held until the partition is written out: with a
                // growing frame ($push over ["unbounded", "current"]) the column holds the
                // square of the partition, so its growth is work the operation is checked on
                // (time, and the server's memory limit).
                let bytes = value.as_ref().map_or(0, value_size);
                crate::query::guard::tick_n(crate::query::guard::units_for_bytes(bytes))?;
                last = Some((ends, value.clone()));
                out.push(value);
            }
        }
    }
    Ok(out)
}

fn whole_number(n: usize) -> Bson {
    i32::try_from(n).map_or_else(
        |_| Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
        Bson::Int32,
    )
}

fn single_sort(sort: Option<&SortBy>, name: &str, code: ErrorCode) -> Result<()> {
    match sort {
        Some(s) if s.fields.len() == 1 => Ok(()),
        _ => Err(Error::new(
            code,
            format!(
                "{name} must be specified with a top level sortBy expression with exactly one \
                 element"
            ),
        )),
    }
}

/// `unit` of `$derivative`/`$integral`: week or smaller, in milliseconds.
fn parse_unit(v: &Bson) -> Result<i64> {
    let Bson::String(s) = v else {
        return Err(parse_error(format!(
            "unit' must be a string, but got {}",
            crate::query::path::type_name(v)
        )));
    };
    crate::calendar::TimeUnit::parse(s)?
        .utc_millis()
        .ok_or_else(|| Error::new(ErrorCode::Location5490710, "unit must be 'week' or smaller"))
}

fn parse_shift(arg: &Bson, vars: &Variables) -> Result<Function> {
    let Bson::Document(args) = arg else {
        return Err(parse_error("Argument to $shift must be an object"));
    };
    let (mut output, mut by, mut default) = (None, None, Bson::Null);
    for (k, v) in args {
        match k.as_str() {
            "output" => output = Some(Expression::compile(v, vars)?),
            "default" => {
                let e = Expression::compile(v, vars)?;
                default = e.as_const().cloned().ok_or_else(|| {
                    parse_error("'$shift:default' expression must yield a constant value.")
                })?;
            }
            "by" => {
                let n = crate::query::expr::value::integral_i32(v).ok_or_else(|| {
                    parse_error(format!(
                        "'$shift:by' field must be an integer, but found  by: {}",
                        crate::query::path::render(v)
                    ))
                })?;
                by = Some(i64::from(n));
            }
            _ => return Err(parse_error("Unknown argument in $shift")),
        }
    }
    let output = output.ok_or_else(|| parse_error("$shift requires an 'output' expression."))?;
    let by = by.ok_or_else(|| parse_error("$shift requires 'by' as an integer value."))?;
    Ok(Function::Shift {
        output,
        by,
        default,
    })
}

fn parse_exp_moving_avg(arg: &Bson, sort: Option<&SortBy>, vars: &Variables) -> Result<Function> {
    let shape = || {
        parse_error(
            "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either \
             an 'N' field or an 'alpha' field",
        )
    };
    let Bson::Document(args) = arg else {
        return Err(parse_error(
            "$expMovingAvg must have exactly one argument that is an object",
        ));
    };
    if args.len() != 2 || !args.contains_key("input") {
        return Err(shape());
    }
    if sort.is_none() {
        return Err(parse_error("$expMovingAvg requires an explicit 'sortBy'"));
    }
    let input = Expression::compile(args.get("input").unwrap_or(&Bson::Null), vars)?;
    let alpha = if let Some(n) = args.get("N") {
        let Some(f) = numeric(n) else {
            return Err(parse_error(format!(
                "'N' field must be an integer, but found type {}",
                crate::query::path::type_name(n)
            )));
        };
        if f.fract() != 0.0 {
            return Err(parse_error(format!(
                "'N' field must be an integer, but found  N: {}. To use a non-integer, use the \
                 'alpha' argument instead",
                crate::query::path::render(n)
            )));
        }
        if f <= 0.0 {
            return Err(parse_error(format!(
                "'N' must be greater than zero. Got {}",
                f as i64
            )));
        }
        2.0 / (f + 1.0)
    } else if let Some(a) = args.get("alpha") {
        let alpha = numeric(a).ok_or_else(|| parse_error("'alpha' must be a number"))?;
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(parse_error(format!(
                "'alpha' must be between 0 and 1 (exclusive), found alpha: {}",
                crate::query::path::render(a)
            )));
        }
        alpha
    } else {
        return Err(parse_error(format!(
            "Got unrecognized field in $expMovingAvg{}",
            shape().message
        )));
    };
    Ok(Function::ExpMovingAvg { input, alpha })
}

#[cfg(test)]
#[path = "functions_tests.rs"]
mod tests;
