//! `$group`: a key expression and accumulators (`$sum`, `$avg`, `$min`, `$max`, `$first`,
//! `$last`, `$push`, `$addToSet`, `$count`). Keys are grouped by BSON equality (`1`, `1.0` and
//! `NumberLong(1)` are one group); groups come out in order of first appearance.

use super::memory::StageMemory;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::compare_values;
use crate::query::expr::{Expression, Variables};
use crate::query::size::value_size;
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

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
enum Op {
    Sum,
    Avg,
    Min,
    Max,
    First,
    Last,
    Push,
    AddToSet,
}

#[derive(Debug)]
pub struct Group {
    id: Expression,
    accumulators: Vec<(String, Op, Expression)>,
}

impl Group {
    pub fn compile(spec: &Bson, vars: &Variables) -> Result<Group> {
        let Bson::Document(spec) = spec else {
            return Err(Error::new(
                ErrorCode::Location15947,
                "a group's fields must be specified in an object",
            ));
        };
        let mut id = None;
        let mut accumulators = Vec::new();
        for (name, value) in spec {
            if name == "_id" {
                id = Some(Expression::compile(value, vars)?);
                continue;
            }
            if name.contains('.') {
                return Err(Error::new(
                    ErrorCode::Location40235,
                    format!("The field name '{name}' cannot contain '.'"),
                ));
            }
            if name.starts_with('$') {
                return Err(Error::new(
                    ErrorCode::Location40236,
                    format!("The field name '{name}' cannot be an operator name"),
                ));
            }
            let Bson::Document(acc) = value else {
                return Err(Error::new(
                    ErrorCode::Location40234,
                    format!("The field '{name}' must be an accumulator object"),
                ));
            };
            if acc.len() != 1 {
                return Err(Error::new(
                    ErrorCode::Location40238,
                    format!("The field '{name}' must specify one accumulator"),
                ));
            }
            let Some((op_name, arg)) = acc.iter().next() else {
                continue;
            };
            let op = match op_name.as_str() {
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
                    accumulators.push((
                        name.clone(),
                        Op::Sum,
                        Expression::compile(&Bson::Int32(1), vars)?,
                    ));
                    continue;
                }
                "$stdDevPop" | "$stdDevSamp" | "$mergeObjects" | "$top" | "$bottom" | "$topN"
                | "$bottomN" | "$firstN" | "$lastN" | "$maxN" | "$minN" | "$median"
                | "$percentile" | "$accumulator" => {
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
            accumulators.push((name.clone(), op, Expression::compile(arg, vars)?));
        }
        let id = id.ok_or_else(|| {
            Error::new(
                ErrorCode::Location15955,
                "a group specification must include an _id",
            )
        })?;
        Ok(Group { id, accumulators })
    }

    /// Groups every input document; the result is one document per distinct key. The keys and
    /// the accumulators' values count against `memory`.
    pub fn run(
        &self,
        docs: impl Iterator<Item = Result<Document>>,
        memory: &mut StageMemory,
    ) -> Result<Vec<Document>> {
        let mut index: BTreeMap<OrdBson, usize> = BTreeMap::new();
        let mut groups: Vec<(Bson, Vec<State>)> = Vec::new();
        for doc in docs {
            let doc = doc?;
            let key = self.id.eval(&doc)?.unwrap_or(Bson::Null);
            let slot = match index.get(&OrdBson(key.clone())) {
                Some(slot) => *slot,
                None => {
                    // The key is held twice (the index and the group), plus each state.
                    memory.charge(
                        2 * value_size(&key) + GROUP_OVERHEAD * (1 + self.accumulators.len()),
                    )?;
                    let states = self
                        .accumulators
                        .iter()
                        .map(|(_, op, _)| State::new(*op))
                        .collect();
                    groups.push((key.clone(), states));
                    index.insert(OrdBson(key), groups.len() - 1);
                    groups.len() - 1
                }
            };
            let Some((_, states)) = groups.get_mut(slot) else {
                continue;
            };
            for (state, (_, _, expr)) in states.iter_mut().zip(&self.accumulators) {
                memory.adjust(state.add(expr.eval(&doc)?)?)?;
            }
        }
        Ok(groups
            .into_iter()
            .map(|(key, states)| {
                let mut out = Document::new();
                out.insert("_id", key);
                for (state, (name, _, _)) in states.into_iter().zip(&self.accumulators) {
                    out.insert(name.clone(), state.finish());
                }
                out
            })
            .collect())
    }
}

/// Bytes a group or an accumulator state holds besides its values (map and vector entries).
const GROUP_OVERHEAD: usize = 64;

#[derive(Debug)]
enum State {
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
struct Sum {
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
    fn add(&mut self, value: Option<Bson>) -> Result<isize> {
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

    fn finish(self) -> Bson {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn group(spec: Document, docs: Vec<Document>) -> Vec<Document> {
        Group::compile(&Bson::Document(spec), &Variables::default())
            .unwrap()
            .run(
                docs.into_iter().map(Ok),
                &mut StageMemory::new(super::super::memory::Blocking::Group, false),
            )
            .unwrap()
    }

    #[test]
    fn accumulators_follow_mongod() {
        let docs = vec![
            doc! {"k": 1, "v": 2, "s": "b"},
            doc! {"k": 1.0, "v": 3.5, "s": "a"},
            doc! {"k": 2, "v": null},
            doc! {"k": 2i64, "v": i32::MAX},
            doc! {"k": 2, "v": 1},
        ];
        let out = group(
            doc! {"_id": "$k", "n": {"$sum": 1}, "t": {"$sum": "$v"}, "a": {"$avg": "$v"},
            "lo": {"$min": "$v"}, "hi": {"$max": "$s"}, "f": {"$first": "$s"},
            "l": {"$last": "$s"}, "p": {"$push": "$s"}, "u": {"$addToSet": "$k"}, "c": {"$count": {}}},
            docs,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            doc! {"_id": 1, "n": 2, "t": 5.5, "a": 2.75, "lo": 2, "hi": "b", "f": "b", "l": "a",
            "p": ["b", "a"], "u": [1], "c": 2}
        );
        let second = &out[1];
        assert_eq!(
            second.get("t"),
            Some(&Bson::Int64(i64::from(i32::MAX) + 1)),
            "int32 overflow widens"
        );
        assert_eq!(
            second.get("lo"),
            Some(&Bson::Int32(1)),
            "null is ignored by $min"
        );
        assert_eq!(
            second.get("f"),
            Some(&Bson::Null),
            "$first of a missing field is null"
        );
    }

    #[test]
    fn bad_specs_have_mongod_codes() {
        let vars = Variables::default();
        let code = |spec: Document| {
            Group::compile(&Bson::Document(spec), &vars)
                .unwrap_err()
                .code
        };
        assert_eq!(code(doc! {"n": {"$sum": 1}}), ErrorCode::Location15955);
        assert_eq!(code(doc! {"_id": 1, "n": 1}), ErrorCode::Location40234);
        assert_eq!(
            code(doc! {"_id": 1, "n": {"$foo": 1}}),
            ErrorCode::Location15952
        );
        assert_eq!(
            code(doc! {"_id": 1, "n": {"$sum": [1]}}),
            ErrorCode::Location40237
        );
        assert_eq!(
            code(doc! {"_id": 1, "a.b": {"$sum": 1}}),
            ErrorCode::Location40235
        );
    }
}
