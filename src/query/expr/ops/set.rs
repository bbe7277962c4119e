//! Set operators over arrays: `$setUnion`, `$setIntersection`, `$setDifference`,
//! `$setEquals`, `$setIsSubset`, `$allElementsTrue`, `$anyElementTrue`.
//!
//! Elements are equal when the expression's comparator says so (a collation can make
//! `"a"` and `"A"` one element). mongod leaves the order of `$setUnion`'s and
//! `$setIntersection`'s results unspecified; here they come out sorted by the comparator (which
//! is the order mongod's ordered value set yields), duplicates removed. `$setDifference` keeps
//! the order of its first operand, as mongod's does.

use super::super::value::{truthy, type_name, Comparator};
use super::super::{Compiler, Node, Value};
use super::array::{compared, take};
use super::{apply, Arity};
use crate::error::{Error, ErrorCode, Result};
use crate::query::guard;
use bson::Bson;
use std::cmp::Ordering;

#[cfg(test)]
#[path = "set_tests.rs"]
mod tests;

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$setUnion" => compared("$setUnion", arg, c, Arity::Any, union),
        "$setIntersection" => compared("$setIntersection", arg, c, Arity::Any, intersection),
        "$setDifference" => compared("$setDifference", arg, c, Arity::Exactly(2), difference),
        "$setEquals" => {
            let count = match arg {
                Bson::Array(items) => items.len(),
                _ => 1,
            };
            if count < 2 {
                return Some(Err(Error::new(
                    ErrorCode::Location17045,
                    format!("$setEquals needs at least two arguments had: {count}"),
                )));
            }
            compared("$setEquals", arg, c, Arity::Any, equals)
        }
        "$setIsSubset" => compared("$setIsSubset", arg, c, Arity::Exactly(2), is_subset),
        "$allElementsTrue" => apply("$allElementsTrue", arg, c, Arity::Exactly(1), |n, v| {
            let [array] = take(v);
            let items = elements(n, array, ErrorCode::Location17040)?;
            Ok(Some(Bson::Boolean(
                items.into_iter().all(|v| truthy(&Some(v))),
            )))
        }),
        "$anyElementTrue" => apply("$anyElementTrue", arg, c, Arity::Exactly(1), |n, v| {
            let [array] = take(v);
            let items = elements(n, array, ErrorCode::Location17041)?;
            Ok(Some(Bson::Boolean(
                items.into_iter().any(|v| truthy(&Some(v))),
            )))
        }),
        _ => return None,
    })
}

fn elements(name: &str, value: Value, code: ErrorCode) -> Result<Vec<Bson>> {
    match value {
        Some(Bson::Array(items)) => Ok(items),
        other => Err(Error::new(
            code,
            format!(
                "{name}'s argument must be an array, but is {}",
                type_name(&other)
            ),
        )),
    }
}

/// The distinct elements of `items`, sorted by `cmp`.
fn to_set(cmp: &Comparator, mut items: Vec<Bson>) -> Vec<Bson> {
    items.sort_by(|a, b| cmp.compare(a, b));
    items.dedup_by(|a, b| cmp.equal(a, b));
    items
}

fn contains(cmp: &Comparator, set: &[Bson], item: &Bson) -> bool {
    set.binary_search_by(|probe| cmp.compare(probe, item))
        .is_ok()
}

/// Every operand as an array; `None` when one is nullish (the result is then null).
fn arrays(v: Vec<Value>, code: ErrorCode, message: &str) -> Result<Option<Vec<Vec<Bson>>>> {
    let mut out = Vec::with_capacity(v.len());
    for value in v {
        match value {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(None),
            Some(Bson::Array(items)) => out.push(items),
            other => return Err(Error::new(code, format!("{message}{}", type_name(&other)))),
        }
    }
    Ok(Some(out))
}

fn union(_: &'static str, cmp: &Comparator, v: Vec<Value>) -> Result<Value> {
    let Some(arrays) = arrays(
        v,
        ErrorCode::Location17043,
        "All operands of $setUnion must be arrays. One argument is of type: ",
    )?
    else {
        return Ok(Some(Bson::Null));
    };
    let all = arrays.into_iter().flatten().collect();
    Ok(Some(Bson::Array(to_set(cmp, all))))
}

fn intersection(_: &'static str, cmp: &Comparator, v: Vec<Value>) -> Result<Value> {
    let Some(arrays) = arrays(
        v,
        ErrorCode::Location17047,
        "All operands of $setIntersection must be arrays. One argument is of type: ",
    )?
    else {
        return Ok(Some(Bson::Null));
    };
    let mut sets = arrays.into_iter().map(|items| to_set(cmp, items));
    let mut current = sets.next().unwrap_or_default();
    for next in sets {
        current.retain(|item| contains(cmp, &next, item));
    }
    Ok(Some(Bson::Array(current)))
}

fn difference(_: &'static str, cmp: &Comparator, v: Vec<Value>) -> Result<Value> {
    let [lhs, rhs] = take(v);
    if super::super::value::nullish(&lhs) || super::super::value::nullish(&rhs) {
        return Ok(Some(Bson::Null));
    }
    let which = |n: &str, value: &Value| {
        Error::new(
            if n == "First" {
                ErrorCode::Location17048
            } else {
                ErrorCode::Location17049
            },
            format!(
                "both operands of $setDifference must be arrays. {n} argument is of type: {}",
                type_name(value)
            ),
        )
    };
    let Some(Bson::Array(lhs)) = lhs else {
        return Err(which("First", &lhs));
    };
    let Some(Bson::Array(rhs)) = rhs else {
        return Err(which("Second", &rhs));
    };
    // `seen` plays both roles of mongod's set: what the second operand holds, and what the
    // result already has.
    let mut seen = to_set(cmp, rhs);
    let mut out = Vec::new();
    for item in lhs {
        // An insertion moves the larger half of `seen`: work in proportion to its length.
        guard::tick_n(guard::units_for_bytes(
            seen.len() * std::mem::size_of::<Bson>(),
        ))?;
        if let Err(at) = seen.binary_search_by(|probe| cmp.compare(probe, &item)) {
            seen.insert(at, item.clone());
            out.push(item);
        }
    }
    Ok(Some(Bson::Array(out)))
}

fn equals(_: &'static str, cmp: &Comparator, v: Vec<Value>) -> Result<Value> {
    let mut first: Option<Vec<Bson>> = None;
    let mut all_equal = true;
    for (i, value) in v.into_iter().enumerate() {
        let Some(Bson::Array(items)) = value else {
            return Err(Error::new(
                ErrorCode::Location17044,
                format!(
                    "All operands of $setEquals must be arrays. {}-th argument is of type: {}",
                    i + 1,
                    type_name(&value)
                ),
            ));
        };
        let set = to_set(cmp, items);
        match &first {
            None => first = Some(set),
            Some(f) => {
                all_equal &= f.len() == set.len()
                    && f.iter()
                        .zip(&set)
                        .all(|(a, b)| cmp.compare(a, b) == Ordering::Equal);
            }
        }
    }
    Ok(Some(Bson::Boolean(all_equal)))
}

fn is_subset(_: &'static str, cmp: &Comparator, v: Vec<Value>) -> Result<Value> {
    let [lhs, rhs] = take(v);
    let Some(Bson::Array(lhs)) = lhs else {
        return Err(Error::new(
            ErrorCode::Location17046,
            format!(
                "both operands of $setIsSubset must be arrays. First argument is of type: {}",
                type_name(&lhs)
            ),
        ));
    };
    let Some(Bson::Array(rhs)) = rhs else {
        return Err(Error::new(
            ErrorCode::Location17042,
            format!(
                "both operands of $setIsSubset must be arrays. Second argument is of type: {}",
                type_name(&rhs)
            ),
        ));
    };
    let rhs = to_set(cmp, rhs);
    Ok(Some(Bson::Boolean(
        lhs.iter().all(|item| contains(cmp, &rhs, item)),
    )))
}
