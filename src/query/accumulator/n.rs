//! `$minN`/`$maxN`, and what every "N" accumulator shares: the object argument `{input, n}`
//! and the rules for `n` (a positive integral number). In `$group`, `n` is evaluated once per
//! group, against the group key when it is a document and an empty document otherwise, as
//! mongod's initializer is; the expression forms (`query::expr`) evaluate it once per
//! evaluation and fold the array's elements into the same state ([`State::of_n`]).
//!
//! Owns: `n`'s parsing and validation, which state each operator keeps, and the bounded sorted
//! set of `$minN`/`$maxN`. Does not own: `$firstN`/`$lastN`'s state (positional.rs) or
//! `$topN`/`$bottomN` (top.rs), which reuse [`n_of`].

use super::positional::FirstLastN;
use super::State;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use crate::query::expr::value::{render, Comparator};
use crate::query::expr::{Expression, Value};
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Which "N" operator: `$firstN`, `$lastN`, `$minN` or `$maxN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    First,
    Last,
    Min,
    Max,
}

impl Pick {
    /// mongod's code for an argument that is not an object.
    fn not_object_code(self) -> ErrorCode {
        match self {
            Pick::First | Pick::Last => ErrorCode::Location5787801,
            Pick::Min | Pick::Max => ErrorCode::Location5787900,
        }
    }
}

impl State {
    /// A fresh state of the `pick` operator keeping `n` values; `$minN`/`$maxN` order them
    /// through `cmp` (the operation's collation).
    pub fn of_n(pick: Pick, n: usize, cmp: &Comparator) -> State {
        match pick {
            Pick::First => State::FirstLastN(FirstLastN::new(n, false)),
            Pick::Last => State::FirstLastN(FirstLastN::new(n, true)),
            Pick::Min => State::MinMaxN(MinMaxN::new(n, false, cmp.clone())),
            Pick::Max => State::MinMaxN(MinMaxN::new(n, true, cmp.clone())),
        }
    }
}

/// mongod's `AccumulatorN::validateN`.
pub fn validate_n(value: &Value) -> Result<usize> {
    let bad_type = || {
        Error::new(
            ErrorCode::Location5787902,
            format!(
                "Value for 'n' must be of integral type, but found {}",
                render(value)
            ),
        )
    };
    let Some(v) = value.as_ref().filter(|v| is_number(v)) else {
        return Err(bad_type());
    };
    let Some(n) = crate::query::expr::value::integral_i64(v) else {
        return Err(Error::new(
            ErrorCode::Location5787903,
            format!(
                "Value for 'n' must be of integral type, but found {}",
                render(value)
            ),
        ));
    };
    if n <= 0 {
        return Err(Error::new(
            ErrorCode::Location5787908,
            format!("'n' must be greater than 0, found {n}"),
        ));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Evaluates `n` for the group whose key is `id`: against `id` when it is a document.
pub fn n_of(n: &Expression, id: &Bson) -> Result<usize> {
    let empty = Document::new();
    let doc = match id {
        Bson::Document(d) => d,
        _ => &empty,
    };
    validate_n(&n.eval(doc)?)
}

/// `{input, n}` of the `pick` operator `op`, each compiled by `compile` (in document order,
/// so the first bad field is the one reported): `(input, n)`.
pub fn parse_input_n<T>(
    op: &str,
    pick: Pick,
    arg: &Bson,
    mut compile: impl FnMut(&Bson) -> Result<T>,
) -> Result<(T, T)> {
    let Bson::Document(spec) = arg else {
        return Err(Error::new(
            pick.not_object_code(),
            format!(
                "specification must be an object; found {op}: {}",
                crate::query::path::render(arg)
            ),
        ));
    };
    let (mut input, mut n) = (None, None);
    for (k, v) in spec {
        match k.as_str() {
            "input" => input = Some(compile(v)?),
            "n" => n = Some(compile(v)?),
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
    Ok((input, n))
}

/// `$minN` (ascending) or `$maxN` (descending): the `n` smallest or largest non-null values.
#[derive(Debug, Clone)]
pub struct MinMaxN {
    n: usize,
    max: bool,
    cmp: Comparator,
    /// Ascending, at most `n`; equal values keep their arrival order.
    values: Vec<Bson>,
}

impl MinMaxN {
    pub fn new(n: usize, max: bool, cmp: Comparator) -> MinMaxN {
        MinMaxN {
            n,
            max,
            cmp,
            values: Vec::new(),
        }
    }

    pub fn add(&mut self, value: Value) -> Result<isize> {
        let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) else {
            return Ok(0);
        };
        let mut freed = 0;
        if self.values.len() >= self.n {
            let evict = if self.max {
                self.values
                    .first()
                    .filter(|first| self.cmp.compare(first, &v) == Ordering::Less)
                    .is_some()
                    .then_some(0)
            } else {
                self.values
                    .last()
                    .filter(|last| self.cmp.compare(last, &v) == Ordering::Greater)
                    .is_some()
                    .then(|| self.values.len() - 1)
            };
            let Some(i) = evict else { return Ok(0) };
            freed = super::held(Some(&self.values.remove(i)))?;
        }
        let at = self
            .values
            .partition_point(|e| self.cmp.compare(e, &v) != Ordering::Greater);
        let added = super::held(Some(&v))?;
        self.values.insert(at, v);
        Ok(added - freed)
    }

    pub fn finish(self) -> Bson {
        let mut values = self.values;
        if self.max {
            values.reverse();
        }
        Bson::Array(values)
    }

    pub fn partial(&self) -> Bson {
        Bson::Array(self.values.clone())
    }
}
