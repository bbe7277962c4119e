//! Accumulators: the running state of every `$group` accumulator of mongod 7.0 — `$sum`,
//! `$avg`, `$min`, `$max`, `$first`, `$last`, `$push`, `$addToSet`, `$count`, `$mergeObjects`,
//! `$stdDevPop`, `$stdDevSamp`, `$median`, `$percentile`, `$firstN`, `$lastN`, `$minN`,
//! `$maxN`, `$top`, `$bottom`, `$topN`, `$bottomN` — over a sequence of values. `$group`,
//! `$bucket` and `$bucketAuto` run one per group and output field; window functions and the
//! expression forms over arrays use the same states ([`Accumulator::fold`] folds a list of
//! values into a fresh state and finishes it), so each accumulator's arithmetic and type rules
//! live here once. `$accumulator` is refused: mayfly runs no JavaScript.
//!
//! Owns: parsing `{$op: arg}` into an [`Accumulator`], each accumulator's state, result, the
//! bytes it holds (for the per-stage memory limit), and its partial form for spilled groups
//! ([`State::partial`]/[`State::merge`]). Does not own: grouping, windows, or evaluating the
//! argument per document (the stage does that with [`Accumulator::arg`]).
//!
//! Every accumulator that compares values (`$min`, `$max`, `$minN`, `$maxN`, `$addToSet`,
//! `$top`/`$bottom` and their N forms) compares strings under the collation of the variables it
//! was compiled with (the operation's).
//!
//! Parameters (`n`) are expressions evaluated once per group, as mongod evaluates its
//! initializers: against the group key when the key is a document (so `_id: {game: "$game"}`
//! lets `n` read `"$game"`), else against an empty document ([`Accumulator::start_group`]).

mod extremes;
pub mod n;
mod objects;
mod positional;
mod set;
pub mod stats;
pub mod sum;
#[cfg(test)]
mod tests;
mod top;

use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::compare::compare_values;
use crate::query::expr::value::Comparator;
use crate::query::expr::{Compiler, Expression, Value, Variables};
use crate::query::size::held_value;
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::sync::Arc;

pub use set::ValueSet;
pub use sum::Sum;

/// A BSON value ordered by the BSON total order, for maps and sets keyed by value.
#[derive(Debug, Clone)]
pub struct OrdBson(pub Bson);

impl OrdBson {
    /// The key of `value` under `collation`: its strings replaced by their sort keys
    /// ([`Collation::key_value`], the encoding collated indexes use), so two values are equal
    /// keys exactly when they compare equal under the collation, and keys order as the values
    /// do under it. Without a collation the key is the value.
    pub fn keyed(value: &Bson, collation: Option<&Collation>) -> OrdBson {
        match collation {
            Some(c) if crate::query::collation::has_strings(value) => OrdBson(c.key_value(value)),
            _ => OrdBson(value.clone()),
        }
    }
}

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

#[derive(Debug, Clone)]
enum Kind {
    Sum,
    Avg,
    Min,
    Max,
    First,
    Last,
    Push,
    AddToSet,
    MergeObjects,
    StdDev {
        sample: bool,
    },
    Percentile {
        ps: Vec<f64>,
        median: bool,
    },
    /// `$firstN`, `$lastN`, `$minN`, `$maxN`.
    N {
        n: Expression,
        pick: n::Pick,
        cmp: Comparator,
    },
    TopBottom {
        n: Option<Expression>,
        spec: Arc<top::TopSpec>,
    },
}

/// A compiled `{$op: arg}`.
#[derive(Debug, Clone)]
pub struct Accumulator {
    kind: Kind,
    arg: Expression,
    /// The collation values compare under (the operation's; `None`: simple).
    collation: Option<Collation>,
}

/// Accumulators taking one operand, which may not be an array literal (mongod's 40237).
fn unary(op_name: &str, arg: &Bson, vars: &Variables) -> Result<Expression> {
    if matches!(arg, Bson::Array(_)) {
        return Err(Error::new(
            ErrorCode::Location40237,
            format!("The {op_name} accumulator is a unary operator"),
        ));
    }
    Expression::compile(arg, vars)
}

impl Accumulator {
    /// Compiles the accumulator `op_name` with argument `arg` (an output field of `$group`).
    pub fn compile(op_name: &str, arg: &Bson, vars: &Variables) -> Result<Accumulator> {
        let simple = |kind: Kind| -> Result<Accumulator> {
            Ok(Accumulator {
                kind,
                arg: unary(op_name, arg, vars)?,
                collation: vars.collation().cloned(),
            })
        };
        let collation = vars.collation().cloned();
        match op_name {
            "$sum" => simple(Kind::Sum),
            "$avg" => simple(Kind::Avg),
            "$min" => simple(Kind::Min),
            "$max" => simple(Kind::Max),
            "$first" => simple(Kind::First),
            "$last" => simple(Kind::Last),
            "$push" => simple(Kind::Push),
            "$addToSet" => simple(Kind::AddToSet),
            "$mergeObjects" => simple(Kind::MergeObjects),
            "$stdDevPop" => simple(Kind::StdDev { sample: false }),
            "$stdDevSamp" => simple(Kind::StdDev { sample: true }),
            "$count" => {
                if !matches!(arg, Bson::Document(d) if d.is_empty()) {
                    return Err(Error::bad_value(
                        "$count takes no arguments, i.e. $count:{}",
                    ));
                }
                Ok(Accumulator {
                    kind: Kind::Sum,
                    arg: Expression::compile(&Bson::Int32(1), vars)?,
                    collation,
                })
            }
            "$median" | "$percentile" => {
                let median = op_name == "$median";
                let (arg, ps) = stats::parse(
                    op_name,
                    arg,
                    (stats::Form::Accumulator, median),
                    |v| Expression::compile(v, vars),
                    Expression::node,
                )?;
                Ok(Accumulator {
                    kind: Kind::Percentile { ps, median },
                    arg,
                    collation,
                })
            }
            "$firstN" => Accumulator::compile_n(op_name, n::Pick::First, arg, vars),
            "$lastN" => Accumulator::compile_n(op_name, n::Pick::Last, arg, vars),
            "$minN" => Accumulator::compile_n(op_name, n::Pick::Min, arg, vars),
            "$maxN" => Accumulator::compile_n(op_name, n::Pick::Max, arg, vars),
            "$top" | "$bottom" | "$topN" | "$bottomN" => {
                let bottom = op_name.starts_with("$bottom");
                let single = !op_name.ends_with('N');
                let (arg, n, spec) = top::parse(op_name, arg, vars, bottom, single)?;
                Ok(Accumulator {
                    kind: Kind::TopBottom {
                        n,
                        spec: Arc::new(spec),
                    },
                    arg,
                    collation,
                })
            }
            "$accumulator" => Err(Error::new(
                ErrorCode::Location31264,
                "Cannot run server-side javascript without the javascript engine enabled",
            )),
            other => Err(Error::new(
                ErrorCode::Location15952,
                format!("unknown group operator '{other}'"),
            )),
        }
    }

    fn compile_n(op_name: &str, pick: n::Pick, arg: &Bson, vars: &Variables) -> Result<Self> {
        let (arg, n) = n::parse_input_n(op_name, pick, arg, |v| Expression::compile(v, vars))?;
        Ok(Accumulator {
            kind: Kind::N {
                n,
                pick,
                cmp: Compiler::new(vars).comparator(),
            },
            arg,
            collation: vars.collation().cloned(),
        })
    }

    /// The expression each input document contributes.
    pub fn arg(&self) -> &Expression {
        &self.arg
    }

    /// A fresh state for the group whose key is `id` (`n` is evaluated against `id` when it is
    /// a document, else against an empty document).
    pub fn start_group(&self, id: &Bson) -> Result<State> {
        Ok(match &self.kind {
            Kind::Sum => State::Sum(Sum::default()),
            Kind::Avg => State::Avg(Sum::default()),
            Kind::Min => State::Min(None, self.collation.clone()),
            Kind::Max => State::Max(None, self.collation.clone()),
            Kind::First => State::First(None),
            Kind::Last => State::Last(None),
            Kind::Push => State::Push(Vec::new()),
            Kind::AddToSet => State::AddToSet(ValueSet::new(self.collation.clone())),
            Kind::MergeObjects => State::MergeObjects(Document::new()),
            Kind::StdDev { sample } => State::StdDev(stats::StdDev::new(*sample)),
            Kind::Percentile { ps, median } => {
                State::Percentile(stats::Percentile::new(ps.clone(), *median))
            }
            Kind::N { n, pick, cmp } => State::of_n(*pick, n::n_of(n, id)?, cmp),
            Kind::TopBottom { n, spec } => {
                let n = match n {
                    Some(n) => n::n_of(n, id)?,
                    None => 1,
                };
                State::TopBottom(top::TopBottom::new(Arc::clone(spec), n))
            }
        })
    }

    /// A fresh state outside any group (windows, expressions): `n` is evaluated against an
    /// empty document; if that fails, the state fails every `add` with the error.
    pub fn start(&self) -> State {
        self.start_group(&Bson::Null).unwrap_or_else(State::Failed)
    }

    /// Folds `values` into a fresh state and finishes it: the expression form of an
    /// accumulator over an array.
    pub fn fold(&self, values: impl IntoIterator<Item = Value>) -> Result<Bson> {
        let mut state = self.start_group(&Bson::Null)?;
        for v in values {
            state.add(v)?;
        }
        Ok(state.finish())
    }
}

/// One accumulator's running state.
#[derive(Debug)]
pub enum State {
    Sum(Sum),
    Avg(Sum),
    /// The smallest value so far, under the collation.
    Min(Option<Bson>, Option<Collation>),
    Max(Option<Bson>, Option<Collation>),
    First(Option<Bson>),
    Last(Option<Bson>),
    Push(Vec<Bson>),
    AddToSet(ValueSet),
    MergeObjects(Document),
    StdDev(stats::StdDev),
    Percentile(stats::Percentile),
    FirstLastN(positional::FirstLastN),
    MinMaxN(n::MinMaxN),
    TopBottom(top::TopBottom),
    /// A state whose parameters could not be evaluated.
    Failed(Error),
}

impl State {
    /// Adds a value; returns how many bytes the state holds more (or fewer) afterwards,
    /// counted decoded (`query::size::held_value`).
    pub fn add(&mut self, value: Value) -> Result<isize> {
        Ok(match self {
            State::Sum(s) | State::Avg(s) => {
                if let Some(v) = value {
                    s.add(&v);
                }
                0
            }
            State::Min(best, c) => extremes::keep(best, value, Ordering::Less, c.as_ref())?,
            State::Max(best, c) => extremes::keep(best, value, Ordering::Greater, c.as_ref())?,
            State::First(first) => {
                if first.is_none() {
                    *first = Some(value.unwrap_or(Bson::Null));
                    held(first.as_ref())?
                } else {
                    0
                }
            }
            State::Last(last) => {
                let before = held(last.as_ref())?;
                *last = Some(value.unwrap_or(Bson::Null));
                held(last.as_ref())? - before
            }
            State::Push(items) => {
                let added = held(value.as_ref())?;
                items.extend(value);
                added
            }
            State::AddToSet(set) => match value {
                Some(v) => set.insert(v)?,
                None => 0,
            },
            State::MergeObjects(doc) => objects::merge_into(doc, value)?,
            State::StdDev(s) => {
                if let Some(v) = value {
                    s.add(&v);
                }
                0
            }
            State::Percentile(p) => value.map_or(0, |v| p.add(&v)),
            State::FirstLastN(s) => s.add(value)?,
            State::MinMaxN(s) => s.add(value)?,
            State::TopBottom(s) => s.add(value)?,
            State::Failed(e) => return Err(e.clone()),
        })
    }

    pub fn finish(self) -> Bson {
        match self {
            State::Sum(s) => s.total(),
            State::Avg(s) => s.average(),
            State::Min(v, _) | State::Max(v, _) | State::First(v) | State::Last(v) => {
                v.unwrap_or(Bson::Null)
            }
            State::Push(items) => Bson::Array(items),
            State::AddToSet(set) => Bson::Array(set.into_values().collect()),
            State::MergeObjects(doc) => Bson::Document(doc),
            State::StdDev(s) => s.finish(),
            State::Percentile(p) => p.finish(),
            State::FirstLastN(s) => s.finish(),
            State::MinMaxN(s) => s.finish(),
            State::TopBottom(s) => s.finish(),
            State::Failed(_) => Bson::Null,
        }
    }

    /// The state as a value that [`State::merge`] adds into another state of the same
    /// accumulator: how `$group` writes partial groups to disk.
    pub fn partial(&self) -> Bson {
        let present = |v: &Option<Bson>| Bson::Array(v.iter().cloned().collect());
        match self {
            State::Sum(s) | State::Avg(s) => Bson::Document(s.partial()),
            State::Min(v, _) | State::Max(v, _) | State::First(v) | State::Last(v) => present(v),
            State::Push(items) => Bson::Array(items.clone()),
            State::AddToSet(set) => Bson::Array(set.values().cloned().collect()),
            State::MergeObjects(doc) => Bson::Document(doc.clone()),
            State::StdDev(s) => s.partial(),
            State::Percentile(p) => p.partial(),
            State::FirstLastN(s) => s.partial(),
            State::MinMaxN(s) => s.partial(),
            State::TopBottom(s) => s.partial(),
            State::Failed(_) => Bson::Null,
        }
    }

    /// Adds a [`State::partial`] of the inputs that came after this state's.
    pub fn merge(&mut self, partial: Bson) -> Result<isize> {
        match (self, partial) {
            (State::Sum(s) | State::Avg(s), Bson::Document(d)) => {
                s.merge(&d);
                Ok(0)
            }
            (State::StdDev(s), Bson::Document(d)) => {
                s.merge(&d);
                Ok(0)
            }
            (State::MergeObjects(doc), Bson::Document(d)) => {
                objects::merge_into(doc, Some(Bson::Document(d)))
            }
            (State::TopBottom(s), partial) => s.merge(&partial),
            (state, Bson::Array(values)) => {
                let mut delta = 0;
                for v in values {
                    delta += state.add(Some(v))?;
                }
                Ok(delta)
            }
            (State::Failed(e), _) => Err(e.clone()),
            _ => Err(Error::internal(
                "a spilled group's state does not match its accumulator",
            )),
        }
    }
}

/// The bytes a kept value holds decoded, as a change to a state's size (none for no value).
fn held(value: Option<&Bson>) -> Result<isize> {
    let bytes = value.map_or(Ok(0), held_value)?;
    Ok(isize::try_from(bytes).unwrap_or(isize::MAX))
}
