//! `$top`, `$bottom`, `$topN` and `$bottomN`: the outputs of the first or last `n` inputs in a
//! `sortBy` order.
//!
//! As in mongod, the argument expression is `{output: <output>, sortFields0: "$<field0>", …}`,
//! so the sort keys come from the same evaluation as the output and follow the sort rules of
//! `query::sort` (an array sorts by its smallest element ascending, its largest descending). Ties
//! keep the input that came first.
//!
//! Owns: parsing these accumulators and their bounded sorted state. Does not own: `n`'s rules
//! (n.rs).

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{Expression, Value, Variables};
use crate::query::size::{held_keys, held_value};
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::sync::Arc;

/// The parsed form shared by every state of one accumulator.
#[derive(Debug, Clone)]
pub struct TopSpec {
    pub bottom: bool,
    pub single: bool,
    /// The order over `sortFields<i>` of the evaluated argument.
    pub sort: SortSpec,
}

/// Parses `{n?, output, sortBy}`; returns the argument expression, `n` (for the N forms) and
/// the spec.
pub fn parse(
    op: &str,
    arg: &Bson,
    vars: &Variables,
    bottom: bool,
    single: bool,
) -> Result<(Expression, Option<Expression>, TopSpec)> {
    let Bson::Document(spec) = arg else {
        return Err(Error::new(
            ErrorCode::Location5788001,
            format!(
                "specification must be an object; found {op}: {}",
                crate::query::path::render(arg)
            ),
        ));
    };
    let (mut n, mut output, mut sort_by) = (None, None, None);
    for (k, v) in spec {
        match k.as_str() {
            "n" if !single => n = Some(Expression::compile(v, vars)?),
            "output" => output = Some(v),
            "sortBy" => match v {
                Bson::Document(d) => sort_by = Some(d),
                _ => {
                    return Err(Error::new(
                        ErrorCode::Location10065,
                        "invalid parameter: expected an object (sortBy)",
                    ))
                }
            },
            other => {
                return Err(Error::new(
                    ErrorCode::Location5788002,
                    format!("Unknown argument to {op} '{other}'"),
                ))
            }
        }
    }
    if !single && n.is_none() {
        return Err(Error::new(
            ErrorCode::Location5788003,
            "Missing value for 'n'",
        ));
    }
    let output = output
        .ok_or_else(|| Error::new(ErrorCode::Location5788004, "Missing value for 'output'"))?;
    let sort_by = sort_by
        .ok_or_else(|| Error::new(ErrorCode::Location5788005, "Missing value for 'sortBy'"))?;
    if sort_by.is_empty() {
        return Err(Error::new(
            ErrorCode::Location15976,
            "$sort stage must have at least one sort key",
        ));
    }
    // Validates the pattern (directions, paths) with find's rules.
    SortSpec::compile(sort_by)?;
    let mut argument = Document::new();
    argument.insert("output", output.clone());
    let mut internal = Document::new();
    for (i, (field, direction)) in sort_by.iter().enumerate() {
        argument.insert(format!("sortFields{i}"), format!("${field}"));
        internal.insert(format!("sortFields{i}"), direction.clone());
    }
    let expr = Expression::compile(&Bson::Document(argument), vars)?;
    let sort = SortSpec::compile_with(&internal, vars.collation())?;
    Ok((
        expr,
        n,
        TopSpec {
            bottom,
            single,
            sort,
        },
    ))
}

/// The kept `(sort keys, output)` pairs, ascending in the sort order, at most `n`.
#[derive(Debug, Clone)]
pub struct TopBottom {
    spec: Arc<TopSpec>,
    n: usize,
    kept: Vec<(Vec<Bson>, Bson)>,
}

impl TopBottom {
    pub fn new(spec: Arc<TopSpec>, n: usize) -> TopBottom {
        TopBottom {
            spec,
            n,
            kept: Vec::new(),
        }
    }

    /// Adds an evaluated argument (`{output, sortFields0, …}`).
    pub fn add(&mut self, value: Value) -> Result<isize> {
        let doc = match value {
            Some(Bson::Document(d)) => d,
            _ => Document::new(),
        };
        let keys = self.spec.sort.keys_of(&doc);
        let output = doc.get("output").cloned().unwrap_or(Bson::Null);
        self.insert(keys, output)
    }

    fn insert(&mut self, keys: Vec<Bson>, output: Bson) -> Result<isize> {
        let sort = &self.spec.sort;
        let mut freed = 0;
        if self.kept.len() >= self.n {
            let evict = if self.spec.bottom {
                self.kept
                    .first()
                    .filter(|(k, _)| sort.compare_keys(&keys, k) == Ordering::Greater)
                    .map(|_| 0)
            } else {
                self.kept
                    .last()
                    .filter(|(k, _)| sort.compare_keys(k, &keys) == Ordering::Greater)
                    .map(|_| self.kept.len() - 1)
            };
            let Some(i) = evict else { return Ok(0) };
            let (k, o) = self.kept.remove(i);
            freed = pair_size(&k, &o)?;
        }
        let at = self
            .kept
            .partition_point(|(k, _)| sort.compare_keys(k, &keys) != Ordering::Greater);
        let added = pair_size(&keys, &output)?;
        self.kept.insert(at, (keys, output));
        Ok(added - freed)
    }

    pub fn finish(self) -> Bson {
        let mut outputs = self.kept.into_iter().map(|(_, o)| o);
        if self.spec.single {
            return outputs.next().unwrap_or(Bson::Null);
        }
        Bson::Array(outputs.collect())
    }

    pub fn partial(&self) -> Bson {
        Bson::Array(
            self.kept
                .iter()
                .map(|(k, o)| Bson::Array(vec![Bson::Array(k.clone()), o.clone()]))
                .collect(),
        )
    }

    /// Adds the pairs of a [`TopBottom::partial`].
    pub fn merge(&mut self, partial: &Bson) -> Result<isize> {
        let mut delta = 0;
        for pair in partial.as_array().into_iter().flatten() {
            if let Some([Bson::Array(keys), output]) = pair.as_array().map(Vec::as_slice) {
                delta += self.insert(keys.clone(), output.clone())?;
            }
        }
        Ok(delta)
    }
}

/// What a kept pair holds decoded: its row of sort keys and its output.
fn pair_size(keys: &Vec<Bson>, output: &Bson) -> Result<isize> {
    let bytes = held_keys(keys)?.saturating_add(held_value(output)?);
    Ok(isize::try_from(bytes).unwrap_or(isize::MAX))
}
