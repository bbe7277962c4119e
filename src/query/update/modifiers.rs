//! Parsed arguments of the array and bitwise operators: `$push` modifiers, `$addToSet`
//! values, `$pull` conditions and `$bit` operations, with their parse errors.

use crate::error::{Error, Result};
use crate::query::compare::{compare_values, is_number, values_equal};
use crate::query::filter::{integral_value, Filter};
use crate::query::path;
use crate::query::sort::SortSpec;
use bson::{doc, Bson, Document};

/// `$push` with its `$each/$slice/$sort/$position` modifiers.
#[derive(Debug, Clone)]
pub(crate) struct PushSpec {
    each: Vec<Bson>,
    slice: Option<i64>,
    sort: Option<PushSort>,
    position: Option<i64>,
}

#[derive(Debug, Clone)]
enum PushSort {
    Whole { ascending: bool },
    Fields(SortSpec),
}

fn integer_clause(value: &Bson) -> Option<i64> {
    if is_number(value) {
        integral_value(value)
    } else {
        None
    }
}

impl PushSpec {
    pub(crate) fn parse(value: &Bson) -> Result<PushSpec> {
        let mut spec = PushSpec {
            each: vec![value.clone()],
            slice: None,
            sort: None,
            position: None,
        };
        let Bson::Document(clauses) = value else {
            return Ok(spec);
        };
        if !clauses.contains_key("$each") {
            return Ok(spec);
        }
        for (clause, arg) in clauses {
            match clause.as_str() {
                "$each" => match arg {
                    Bson::Array(items) => spec.each = items.clone(),
                    other => {
                        return Err(Error::bad_value(format!(
                        "The argument to $each in $push must be an array but it was of type: {}",
                        path::type_name(other)
                    )))
                    }
                },
                "$slice" => {
                    spec.slice = Some(integer_clause(arg).ok_or_else(|| {
                        Error::bad_value(format!(
                            "The value for $slice must be an integer value but was given type: {}",
                            path::type_name(arg)
                        ))
                    })?)
                }
                "$position" => {
                    spec.position = Some(integer_clause(arg).ok_or_else(|| {
                        Error::bad_value(format!(
                            "The value for $position must be an integer value, not of type: {}",
                            path::type_name(arg)
                        ))
                    })?)
                }
                "$sort" => spec.sort = Some(push_sort(arg)?),
                other => {
                    return Err(Error::bad_value(format!(
                        "Unrecognized clause in $push: {other}"
                    )))
                }
            }
        }
        Ok(spec)
    }

    pub(super) fn apply(&self, mut items: Vec<Bson>) -> Vec<Bson> {
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let at = match self.position {
            None => len,
            Some(p) if p < 0 => (len + p).max(0),
            Some(p) => p.min(len),
        };
        let at = usize::try_from(at).unwrap_or(items.len()).min(items.len());
        let tail = items.split_off(at);
        items.extend(self.each.iter().cloned());
        items.extend(tail);
        match &self.sort {
            Some(PushSort::Whole { ascending }) => items.sort_by(|a, b| {
                let ord = compare_values(a, b);
                if *ascending {
                    ord
                } else {
                    ord.reverse()
                }
            }),
            Some(PushSort::Fields(spec)) => {
                let empty = Document::new();
                let mut keyed: Vec<(Vec<Bson>, Bson)> = items
                    .into_iter()
                    .map(|item| {
                        let keys = match &item {
                            Bson::Document(d) => spec.keys_of(d),
                            _ => spec.keys_of(&empty),
                        };
                        (keys, item)
                    })
                    .collect();
                keyed.sort_by(|(a, _), (b, _)| spec.compare_keys(a, b));
                items = keyed.into_iter().map(|(_, item)| item).collect();
            }
            None => {}
        }
        if let Some(n) = self.slice {
            let len = items.len();
            let keep = usize::try_from(n.unsigned_abs())
                .unwrap_or(usize::MAX)
                .min(len);
            if n >= 0 {
                items.truncate(keep);
            } else {
                items.drain(..len - keep);
            }
        }
        items
    }
}

fn push_sort(arg: &Bson) -> Result<PushSort> {
    let invalid = || {
        Error::bad_value(
            "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort \
             embedded fields",
        )
    };
    match arg {
        Bson::Document(spec) if !spec.is_empty() => SortSpec::compile(spec)
            .map(PushSort::Fields)
            .map_err(|_| invalid()),
        v => match integer_clause(v) {
            Some(1) => Ok(PushSort::Whole { ascending: true }),
            Some(-1) => Ok(PushSort::Whole { ascending: false }),
            _ => Err(invalid()),
        },
    }
}

pub(crate) fn add_to_set_values(value: &Bson) -> Result<Vec<Bson>> {
    match value {
        Bson::Document(d) if d.keys().next().is_some_and(|k| k == "$each") => {
            if d.len() > 1 {
                return Err(Error::bad_value(format!(
                    "Found unexpected fields after $each in $addToSet: {}",
                    path::render_document(d)
                )));
            }
            match d.get("$each") {
                Some(Bson::Array(items)) => Ok(items.clone()),
                other => Err(Error::bad_value(format!(
                    "The argument to $each in $addToSet must be an array but it was of type {}",
                    other.map(path::type_name).unwrap_or("missing")
                ))),
            }
        }
        other => Ok(vec![other.clone()]),
    }
}

/// A `$bit` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    And,
    Or,
    Xor,
}

const BIT_FORMAT: &str = "{$bit: {field: {and/or/xor: #}}";

pub(crate) fn parse_bit(value: &Bson) -> Result<Vec<(BitOp, Bson)>> {
    let Bson::Document(spec) = value else {
        return Err(Error::bad_value(format!(
            "The $bit modifier is not compatible with a {}. You must pass in an embedded \
             document: {BIT_FORMAT}",
            path::type_name(value)
        )));
    };
    if spec.is_empty() {
        return Err(Error::bad_value(format!(
            "You must pass in at least one bitwise operation. The format is: {BIT_FORMAT}"
        )));
    }
    let mut ops = Vec::new();
    for (name, operand) in spec {
        let op = match name.as_str() {
            "and" => BitOp::And,
            "or" => BitOp::Or,
            "xor" => BitOp::Xor,
            other => {
                return Err(Error::bad_value(format!(
                    "The $bit modifier only supports 'and', 'or', and 'xor', not '{other}' which \
                     is an unknown operator: {{{other}: {}}}",
                    path::render(operand)
                )))
            }
        };
        if !matches!(operand, Bson::Int32(_) | Bson::Int64(_)) {
            return Err(Error::bad_value(format!(
                "The $bit modifier field must be an Integer(32/64 bit); a '{}' is not supported \
                 here: {{{name}: {}}}",
                path::type_name(operand),
                path::render(operand)
            )));
        }
        ops.push((op, operand.clone()));
    }
    Ok(ops)
}

/// Applies `$bit` operations in order; int32 with int32 stays int32, anything with int64 is
/// int64. A missing field starts from int32 zero.
pub(super) fn apply_bits(start: &Bson, ops: &[(BitOp, Bson)]) -> Bson {
    let mut value = start.clone();
    for (op, operand) in ops {
        let combine = |a: i64, b: i64| match op {
            BitOp::And => a & b,
            BitOp::Or => a | b,
            BitOp::Xor => a ^ b,
        };
        value = match (&value, operand) {
            (Bson::Int32(a), Bson::Int32(b)) => Bson::Int32(match op {
                BitOp::And => a & b,
                BitOp::Or => a | b,
                BitOp::Xor => a ^ b,
            }),
            (Bson::Int32(a), Bson::Int64(b)) => Bson::Int64(combine(i64::from(*a), *b)),
            (Bson::Int64(a), Bson::Int32(b)) => Bson::Int64(combine(*a, i64::from(*b))),
            (Bson::Int64(a), Bson::Int64(b)) => Bson::Int64(combine(*a, *b)),
            (other, _) => other.clone(),
        };
    }
    value
}

/// What `$pull` removes.
#[derive(Debug, Clone)]
pub(crate) enum PullCondition {
    /// A plain value: elements equal to it.
    Equals(Bson),
    /// Operators or a regex applied to each element (`{$gte: 6}`, `/x/`).
    Value(Box<Filter>),
    /// A query applied to document elements (`{a: 1, b: {$gt: 2}}`).
    Object(Box<Filter>),
}

const PULL_WRAPPER: &str = "pulled";

impl PullCondition {
    pub(crate) fn parse(value: &Bson) -> Result<PullCondition> {
        match value {
            Bson::Document(d) => {
                let first_is_operator = d.keys().next().is_some_and(|k| {
                    k.starts_with('$') && !matches!(k.as_str(), "$and" | "$or" | "$nor")
                });
                if first_is_operator {
                    let filter = Filter::compile(&doc! {PULL_WRAPPER: d.clone()})?;
                    Ok(PullCondition::Value(Box::new(filter)))
                } else {
                    Ok(PullCondition::Object(Box::new(Filter::compile(d)?)))
                }
            }
            Bson::RegularExpression(_) => {
                let filter = Filter::compile(&doc! {PULL_WRAPPER: value.clone()})?;
                Ok(PullCondition::Value(Box::new(filter)))
            }
            other => Ok(PullCondition::Equals(other.clone())),
        }
    }

    pub(super) fn removes(&self, element: &Bson) -> bool {
        match self {
            PullCondition::Equals(v) => values_equal(element, v),
            PullCondition::Value(filter) => {
                filter.matches_within(&doc! {PULL_WRAPPER: element.clone()})
            }
            PullCondition::Object(filter) => match element {
                Bson::Document(d) => filter.matches_within(d),
                _ => false,
            },
        }
    }
}
