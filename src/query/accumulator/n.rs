//! `$minN`/`$maxN`, and the parameters every "N" accumulator shares: the object argument
//! `{input, n}` and the rules for `n` (evaluated once per group, against the group key when it
//! is a document and an empty document otherwise, as mongod's initializer is; a positive
//! integral number).
//!
//! Owns: `n`'s parsing and validation, and the bounded sorted set of `$minN`/`$maxN`. Does not
//! own: `$firstN`/`$lastN` (positional.rs) or `$topN`/`$bottomN` (top.rs), which reuse [`n_of`].

use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::compare::{compare_values_with, is_number};
use crate::query::expr::value::render;
use crate::query::expr::{Expression, Value, Variables};
use crate::query::size::value_size;
use bson::{Bson, Document};
use std::cmp::Ordering;

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

/// `{input, n}` of `$firstN`/`$lastN`/`$minN`/`$maxN`; `object_code` is the operator's code
/// for a non-object argument.
pub fn parse_input_n(
    op: &str,
    arg: &Bson,
    vars: &Variables,
    object_code: ErrorCode,
) -> Result<(Expression, Expression)> {
    let Bson::Document(spec) = arg else {
        return Err(Error::new(
            object_code,
            format!(
                "specification must be an object; found {op}: {}",
                crate::query::path::render(arg)
            ),
        ));
    };
    let (mut input, mut n) = (None, None);
    for (k, v) in spec {
        match k.as_str() {
            "input" => input = Some(Expression::compile(v, vars)?),
            "n" => n = Some(Expression::compile(v, vars)?),
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
    /// Ascending, at most `n`; equal values keep their arrival order.
    values: Vec<Bson>,
    /// Strings order under this (the operation's collation; `None`: simple).
    collation: Option<Collation>,
}

impl MinMaxN {
    pub fn new(n: usize, max: bool, collation: Option<Collation>) -> MinMaxN {
        MinMaxN {
            n,
            max,
            values: Vec::new(),
            collation,
        }
    }

    pub fn add(&mut self, value: Value) -> isize {
        let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) else {
            return 0;
        };
        let c = self.collation.as_ref();
        let compare_values = |a: &Bson, b: &Bson| compare_values_with(a, b, c);
        let mut freed = 0;
        if self.values.len() >= self.n {
            let evict = if self.max {
                self.values
                    .first()
                    .filter(|first| compare_values(first, &v) == Ordering::Less)
                    .is_some()
                    .then_some(0)
            } else {
                self.values
                    .last()
                    .filter(|last| compare_values(last, &v) == Ordering::Greater)
                    .is_some()
                    .then(|| self.values.len() - 1)
            };
            let Some(i) = evict else { return 0 };
            freed = value_size(&self.values.remove(i)) as isize;
        }
        let at = self
            .values
            .partition_point(|e| compare_values(e, &v) != Ordering::Greater);
        let added = value_size(&v) as isize;
        self.values.insert(at, v);
        added - freed
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
