//! `$sortArray`: `{input, sortBy}`, where `sortBy` is `1`/`-1` (whole elements) or a sort
//! document over fields of object elements (a non-object element has none: it sorts as null
//! in every field, as mongod's `PatternValueCmp`).

use super::super::super::value::{nullish, type_name, Comparator};
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use super::to_f64;
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};
use std::cmp::Ordering;

#[derive(Debug)]
enum SortBy {
    /// Whole elements; `true` when descending.
    Whole(bool),
    /// Dotted fields of object elements, each with its direction (`true`: descending).
    Fields(Vec<(Vec<String>, bool)>),
}

#[derive(Debug)]
struct SortArray {
    input: Node,
    by: SortBy,
    cmp: Comparator,
}

pub(super) fn compile(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location2942500,
            format!(
                "$sortArray requires an object as an argument, found: {}",
                crate::query::path::type_name(arg)
            ),
        ));
    };
    let (mut input, mut by) = (None, None);
    for (field, value) in d {
        match field.as_str() {
            "input" => input = Some(c.compile(value)?),
            "sortBy" => by = Some(sort_by(value)?),
            other => {
                return Err(Error::new(
                    ErrorCode::Location2942501,
                    format!("$sortArray found an unknown argument: {other}"),
                ))
            }
        }
    }
    let input = input.ok_or_else(|| {
        Error::new(
            ErrorCode::Location2942502,
            "$sortArray requires 'input' to be specified",
        )
    })?;
    let by = by.ok_or_else(|| {
        Error::new(
            ErrorCode::Location2942503,
            "$sortArray requires 'sortBy' to be specified",
        )
    })?;
    Ok(op(SortArray {
        input,
        by,
        cmp: c.comparator(),
    }))
}

fn bad_clause(message: String) -> Error {
    Error::new(ErrorCode::Location2942505, format!("BadValue: {message}"))
}

/// A direction `1`/`-1`: `Some(descending)`.
fn direction(value: &Bson) -> Option<bool> {
    match to_f64(value) {
        Some(1.0) => Some(false),
        Some(-1.0) => Some(true),
        _ => None,
    }
}

/// mongod's `createSortSpecObject` and `pattern_cmp::checkSortClause`.
fn sort_by(spec: &Bson) -> Result<SortBy> {
    match spec {
        Bson::Document(d) => sort_fields(d).map(SortBy::Fields),
        other if to_f64(other).is_some() => direction(other).map(SortBy::Whole).ok_or_else(|| {
            Error::new(
                ErrorCode::Location2942506,
                "The $sort element value must be either 1 or -1",
            )
        }),
        _ => Err(Error::new(
            ErrorCode::Location2942507,
            "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort \
             embedded fields",
        )),
    }
}

fn sort_fields(d: &Document) -> Result<Vec<(Vec<String>, bool)>> {
    if d.is_empty() {
        return Err(bad_clause(
            "The $sort pattern is empty when it should be a set of fields.".into(),
        ));
    }
    let mut fields = Vec::with_capacity(d.len());
    for (field, value) in d {
        let Some(descending) = direction(value) else {
            return Err(bad_clause(
                "The $sort element value must be either 1 or -1".into(),
            ));
        };
        if field.is_empty() {
            return Err(bad_clause("The $sort field cannot be empty".into()));
        }
        let parts: Vec<String> = field.split('.').map(str::to_owned).collect();
        if parts.iter().any(String::is_empty) {
            return Err(bad_clause(format!(
                "The $sort field is a dotted field but has an empty part: {field}"
            )));
        }
        fields.push((parts, descending));
    }
    Ok(fields)
}

/// What an absent sort key compares as.
static NULL: Bson = Bson::Null;

/// The value at a dotted path (`getFieldDotted`: arrays are entered by numeric index only);
/// null when absent, and for an element that is not an object.
fn field_of<'a>(element: &'a Bson, path: &[String]) -> &'a Bson {
    if !matches!(element, Bson::Document(_)) {
        return &NULL;
    }
    let mut current = element;
    for part in path {
        let next = match current {
            Bson::Document(d) => d.get(part),
            Bson::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(v) => current = v,
            None => return &NULL,
        }
    }
    current
}

impl SortArray {
    fn order(&self, a: &Bson, b: &Bson) -> Ordering {
        match &self.by {
            SortBy::Whole(descending) => {
                let o = self.cmp.compare(a, b);
                if *descending {
                    o.reverse()
                } else {
                    o
                }
            }
            SortBy::Fields(fields) => {
                for (path, descending) in fields {
                    let o = self.cmp.compare(field_of(a, path), field_of(b, path));
                    let o = if *descending { o.reverse() } else { o };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            }
        }
    }
}

impl Operator for SortArray {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let value = self.input.eval(cx)?;
        if nullish(&value) {
            return Ok(Some(Bson::Null));
        }
        let Some(Bson::Array(mut items)) = value else {
            return Err(Error::new(
                ErrorCode::Location2942504,
                format!(
                    "The input argument to $sortArray must be an array, but was of type: {}",
                    type_name(&value)
                ),
            ));
        };
        items.sort_by(|a, b| self.order(a, b));
        Ok(Some(Bson::Array(items)))
    }
}
