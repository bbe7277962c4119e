//! Accumulators: the running state of `$sum`, `$avg`, `$min`, `$max`, `$first`, `$last`,
//! `$push`, `$addToSet` and `$count` over a sequence of values. `$group` runs one per group and
//! output field; `$bucket`, `$setWindowFields` and the expression forms over arrays use the same
//! states, so each accumulator's arithmetic and type rules live here once.
//!
//! Owns: parsing `{$op: arg}` into an [`Accumulator`], and each accumulator's state, result and
//! the bytes it holds (for the per-stage memory limit). Does not own: grouping, windows, or
//! evaluating the argument expression per document (the stage does that with
//! [`Accumulator::arg`]).

use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::compare_values;
use crate::query::expr::{Expression, Value, Variables};
use crate::query::size::value_size;
use bson::Bson;
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// A BSON value ordered by the BSON total order, for maps and sets keyed by value.
#[derive(Debug, Clone)]
pub struct OrdBson(pub Bson);

impl PartialEq for OrdBson {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for OrdBson {}
impl PartialOrd for OrdBson {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdBson {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_values(&self.0, &other.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Sum,
    Avg,
    Min,
    Max,
    First,
    Last,
    Push,
    AddToSet,
}

/// A compiled `{$op: arg}`.
#[derive(Debug, Clone)]
pub struct Accumulator {
    op: Op,
    arg: Expression,
}

impl Accumulator {
    /// Compiles the accumulator `op_name` with argument `arg` (an output field of `$group`).
    pub fn compile(op_name: &str, arg: &Bson, vars: &Variables) -> Result<Accumulator> {
        let op = match op_name {
            "$sum" => Op::Sum,
            "$avg" => Op::Avg,
            "$min" => Op::Min,
            "$max" => Op::Max,
            "$first" => Op::First,
            "$last" => Op::Last,
            "$push" => Op::Push,
            "$addToSet" => Op::AddToSet,
            "$count" => {
                if !matches!(arg, Bson::Document(d) if d.is_empty()) {
                    return Err(Error::bad_value(
                        "$count takes no arguments, i.e. $count:{}",
                    ));
                }
                return Ok(Accumulator {
                    op: Op::Sum,
                    arg: Expression::compile(&Bson::Int32(1), vars)?,
                });
            }
            "$stdDevPop" | "$stdDevSamp" | "$mergeObjects" | "$top" | "$bottom" | "$topN"
            | "$bottomN" | "$firstN" | "$lastN" | "$maxN" | "$minN" | "$median" | "$percentile"
            | "$accumulator" => {
                return Err(Error::new(
                    ErrorCode::NotImplemented,
                    format!("the {op_name} accumulator is not supported by this server"),
                ))
            }
            other => {
                return Err(Error::new(
                    ErrorCode::Location15952,
                    format!("unknown group operator '{other}'"),
                ))
            }
        };
        if matches!(arg, Bson::Array(_)) {
            return Err(Error::new(
                ErrorCode::Location40237,
                format!("The {op_name} accumulator is a unary operator"),
            ));
        }
        Ok(Accumulator {
            op,
            arg: Expression::compile(arg, vars)?,
        })
    }

    /// The expression each input document contributes.
    pub fn arg(&self) -> &Expression {
        &self.arg
    }

    /// A fresh state.
    pub fn start(&self) -> State {
        State::new(self.op)
    }
}

/// One accumulator's running state.
#[derive(Debug)]
pub enum State {
    Sum(Sum),
    Avg(Sum),
    Min(Option<Bson>),
    Max(Option<Bson>),
    First(Option<Bson>),
    Last(Bson),
    Push(Vec<Bson>),
    AddToSet(BTreeSet<OrdBson>),
}

/// A running numeric sum that widens as mongod's does: int32, then int64 on overflow or when a
/// long is added, then double on int64 overflow or when a double is added.
#[derive(Debug, Default)]
pub struct Sum {
    int: i64,
    double: f64,
    widest: Width,
    overflowed: bool,
    count: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, PartialOrd)]
enum Width {
    #[default]
    Int,
    Long,
    Double,
}

impl Sum {
    fn add(&mut self, value: &Bson) -> Result<()> {
        let (n, width) = match value {
            Bson::Int32(n) => (i64::from(*n), Width::Int),
            Bson::Int64(n) => (*n, Width::Long),
            Bson::Double(d) => {
                self.double += d;
                self.widest = Width::Double;
                self.count += 1;
                return Ok(());
            }
            Bson::Decimal128(_) => {
                return Err(Error::new(
                    ErrorCode::NotImplemented,
                    "$sum and $avg over decimal values are not supported by this server",
                ))
            }
            _ => return Ok(()),
        };
        self.count += 1;
        if self.widest < width {
            self.widest = width;
        }
        match self.int.checked_add(n) {
            Some(sum) if !self.overflowed => self.int = sum,
            _ => {
                self.overflowed = true;
                self.double += n as f64;
            }
        }
        Ok(())
    }

    fn total(&self) -> Bson {
        if self.overflowed || self.widest == Width::Double {
            return Bson::Double(self.int as f64 + self.double);
        }
        match (self.widest, i32::try_from(self.int)) {
            (Width::Int, Ok(small)) => Bson::Int32(small),
            _ => Bson::Int64(self.int),
        }
    }

    fn average(&self) -> Bson {
        if self.count == 0 {
            return Bson::Null;
        }
        Bson::Double((self.int as f64 + self.double) / self.count as f64)
    }
}

/// `$min`/`$max`: keeps the value that orders `wanted` of the best so far, ignoring null,
/// undefined and missing values.
fn keep_extreme(best: &mut Option<Bson>, value: Option<Bson>, wanted: Ordering) {
    let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) else {
        return;
    };
    if best
        .as_ref()
        .is_none_or(|b| compare_values(&v, b) == wanted)
    {
        *best = Some(v);
    }
}

/// [`keep_extreme`], returning how many bytes the kept value grew (or shrank).
fn replace_extreme(best: &mut Option<Bson>, value: Option<Bson>, wanted: Ordering) -> isize {
    let size = |v: &Option<Bson>| v.as_ref().map_or(0, value_size) as isize;
    let before = size(best);
    keep_extreme(best, value, wanted);
    size(best) - before
}

impl State {
    fn new(op: Op) -> State {
        match op {
            Op::Sum => State::Sum(Sum::default()),
            Op::Avg => State::Avg(Sum::default()),
            Op::Min => State::Min(None),
            Op::Max => State::Max(None),
            Op::First => State::First(None),
            Op::Last => State::Last(Bson::Null),
            Op::Push => State::Push(Vec::new()),
            Op::AddToSet => State::AddToSet(BTreeSet::new()),
        }
    }

    /// Adds a value; returns how many bytes the state holds more (or fewer) afterwards.
    pub fn add(&mut self, value: Value) -> Result<isize> {
        let size = |v: &Option<Bson>| v.as_ref().map_or(0, value_size) as isize;
        Ok(match self {
            State::Sum(s) | State::Avg(s) => {
                if let Some(v) = value {
                    s.add(&v)?;
                }
                0
            }
            State::Min(best) => replace_extreme(best, value, Ordering::Less),
            State::Max(best) => replace_extreme(best, value, Ordering::Greater),
            State::First(first) => {
                if first.is_none() {
                    *first = Some(value.unwrap_or(Bson::Null));
                    size(first)
                } else {
                    0
                }
            }
            State::Last(last) => {
                let before = value_size(last) as isize;
                *last = value.unwrap_or(Bson::Null);
                value_size(last) as isize - before
            }
            State::Push(items) => {
                let added = size(&value);
                items.extend(value);
                added
            }
            State::AddToSet(set) => match value {
                Some(v) => {
                    let added = value_size(&v) as isize;
                    if set.insert(OrdBson(v)) {
                        added
                    } else {
                        0
                    }
                }
                None => 0,
            },
        })
    }

    pub fn finish(self) -> Bson {
        match self {
            State::Sum(s) => s.total(),
            State::Avg(s) => s.average(),
            State::Min(v) | State::Max(v) | State::First(v) => v.unwrap_or(Bson::Null),
            State::Last(v) => v,
            State::Push(items) => Bson::Array(items),
            State::AddToSet(set) => Bson::Array(set.into_iter().map(|v| v.0).collect()),
        }
    }
}
