//! Applying one operator action: positional expansion (`$`, `$[]`, `$[<id>]`) into concrete
//! paths, then the operator's effect at each path, with mongod's runtime errors.

use super::arith::{self, Arith};
use super::modifiers::apply_bits;
use super::{positional_identifier, Action, Op, UpdateContext};
use crate::error::{Error, Result};
use crate::query::compare::{compare_values, is_number, values_equal};
use crate::query::path;
use bson::{Bson, Document, Timestamp};
use std::cmp::Ordering;

/// Applies one action (all the concrete paths it expands to).
pub(crate) fn apply_action(
    doc: &mut Document,
    action: &Action,
    ctx: &UpdateContext<'_>,
) -> Result<()> {
    if matches!(action.op, Op::SetOnInsert(_)) && !ctx.is_upsert_insert {
        return Ok(());
    }
    for concrete in expand(doc, &action.path, ctx)? {
        apply_at(doc, &concrete, &action.op, ctx)?;
    }
    Ok(())
}

fn is_positional(component: &str) -> bool {
    component == "$" || positional_identifier(component).is_some()
}

/// Expands positional components into concrete paths.
fn expand(doc: &Document, full: &[String], ctx: &UpdateContext<'_>) -> Result<Vec<Vec<String>>> {
    if !full.iter().any(|c| is_positional(c)) {
        return Ok(vec![full.to_vec()]);
    }
    let Some((first, rest)) = full.split_first() else {
        return Ok(vec![]);
    };
    let mut out = Vec::new();
    walk(
        doc.get(first),
        vec![first.clone()],
        rest,
        full,
        ctx,
        &mut out,
    )?;
    Ok(out)
}

fn walk(
    current: Option<&Bson>,
    prefix: Vec<String>,
    rest: &[String],
    full: &[String],
    ctx: &UpdateContext<'_>,
    out: &mut Vec<Vec<String>>,
) -> Result<()> {
    let Some((component, tail)) = rest.split_first() else {
        out.push(prefix);
        return Ok(());
    };
    if !is_positional(component) {
        let next = current.and_then(|v| match v {
            Bson::Document(d) => d.get(component),
            Bson::Array(items) => path::array_index(component).and_then(|i| items.get(i)),
            _ => None,
        });
        let mut prefix = prefix;
        prefix.push(component.clone());
        return walk(next, prefix, tail, full, ctx, out);
    }
    let items = match current {
        Some(Bson::Array(items)) => items,
        Some(other) => {
            return Err(Error::bad_value(format!(
                "Cannot apply array updates to non-array element {}: {}",
                prefix.last().map(String::as_str).unwrap_or(""),
                path::render(other)
            )))
        }
        None if component == "$" => return Err(positional_not_found()),
        None => {
            return Err(Error::bad_value(format!(
                "The path '{}' must exist in the document in order to apply array updates.",
                prefix.join(".")
            )))
        }
    };
    let selected: Vec<usize> = if component == "$" {
        vec![ctx.positional_match.ok_or_else(positional_not_found)?]
    } else {
        let id = positional_identifier(component).unwrap_or("");
        let mut selected = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let keep = if id.is_empty() {
                true
            } else {
                ctx.array_filters.matches(id, item).ok_or_else(|| {
                    Error::bad_value(format!(
                        "No array filter found for identifier '{id}' in path '{}'",
                        full.join(".")
                    ))
                })?
            };
            if keep {
                selected.push(i);
            }
        }
        selected
    };
    for i in selected {
        let mut next_prefix = prefix.clone();
        next_prefix.push(i.to_string());
        walk(items.get(i), next_prefix, tail, full, ctx, out)?;
    }
    Ok(())
}

fn positional_not_found() -> Error {
    Error::bad_value("The positional operator did not find the match needed from the query.")
}

fn field_name(path: &[String]) -> &str {
    path.last().map(String::as_str).unwrap_or("")
}

fn apply_at(doc: &mut Document, at: &[String], op: &Op, ctx: &UpdateContext<'_>) -> Result<()> {
    let current = path::get(doc, at);
    match op {
        Op::Set(value) | Op::SetOnInsert(value) => {
            if current != Some(value) {
                path::set(doc, at, value.clone())?;
            }
        }
        Op::Unset => {
            path::unset(doc, at);
        }
        Op::Inc(operand) | Op::Mul(operand) => {
            let (name, kind) = match op {
                Op::Inc(_) => ("$inc", Arith::Add),
                _ => ("$mul", Arith::Mul),
            };
            let next = match current {
                None if kind == Arith::Add => operand.clone(),
                None => arith::product_with_zero(operand),
                Some(cur) if !is_number(cur) => {
                    return Err(Error::type_mismatch(format!(
                        "Cannot apply {name} to a value of non-numeric type. {} has the field \
                         '{}' of non-numeric type {}",
                        path::render_id(doc),
                        field_name(at),
                        path::type_name(cur)
                    )))
                }
                Some(cur) => arith::apply(kind, cur, operand).ok_or_else(|| {
                    Error::bad_value(format!(
                        "Failed to apply {name} operations to current value ({}) for document {}",
                        path::render(cur),
                        path::render_id(doc)
                    ))
                })?,
            };
            if !current.is_some_and(|cur| arith::identical(cur, &next)) {
                path::set(doc, at, next)?;
            }
        }
        Op::Min(value) | Op::Max(value) => {
            let wanted = if matches!(op, Op::Min(_)) {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            let replace = match current {
                None => true,
                Some(cur) => compare_values(value, cur) == wanted,
            };
            if replace {
                path::set(doc, at, value.clone())?;
            }
        }
        Op::Rename(target) => rename(doc, at, target)?,
        Op::CurrentDate { timestamp } => {
            let value = if *timestamp {
                let secs = ctx.now.timestamp_millis().div_euclid(1000);
                Bson::Timestamp(Timestamp {
                    time: u32::try_from(secs).unwrap_or(0),
                    increment: 1,
                })
            } else {
                Bson::DateTime(ctx.now)
            };
            path::set(doc, at, value)?;
        }
        Op::Push(spec) => {
            let items = match current {
                None => Vec::new(),
                Some(Bson::Array(items)) => items.clone(),
                Some(other) => {
                    return Err(Error::bad_value(format!(
                        "The field '{}' must be an array but is of type {} in document {}",
                        field_name(at),
                        path::type_name(other),
                        path::render_id(doc)
                    )))
                }
            };
            let next = Bson::Array(spec.apply(items));
            if current != Some(&next) {
                path::set(doc, at, next)?;
            }
        }
        Op::AddToSet(values) => {
            let mut items = match current {
                None => Vec::new(),
                Some(Bson::Array(items)) => items.clone(),
                Some(other) => {
                    return Err(Error::bad_value(format!(
                        "Cannot apply $addToSet to non-array field. Field named '{}' has \
                         non-array type {}",
                        field_name(at),
                        path::type_name(other)
                    )))
                }
            };
            let before = items.len();
            for value in values {
                if !items.iter().any(|item| values_equal(item, value)) {
                    items.push(value.clone());
                }
            }
            if current.is_none() || items.len() != before {
                path::set(doc, at, Bson::Array(items))?;
            }
        }
        Op::Pop { first } => match current {
            None => {}
            Some(Bson::Array(items)) if items.is_empty() => {}
            Some(Bson::Array(items)) => {
                let mut items = items.clone();
                if *first {
                    items.remove(0);
                } else {
                    items.pop();
                }
                path::set(doc, at, Bson::Array(items))?;
            }
            Some(other) => {
                return Err(Error::type_mismatch(format!(
                    "Path '{}' contains an element of non-array type '{}'",
                    at.join("."),
                    path::type_name(other)
                )))
            }
        },
        Op::Pull(condition) => {
            let removes = |item: &Bson| condition.removes(item);
            pull(doc, at, current.cloned(), removes)?;
        }
        Op::Bit(bits) => {
            let start = match current {
                None => Bson::Int32(0),
                Some(cur @ (Bson::Int32(_) | Bson::Int64(_))) => cur.clone(),
                Some(other) => {
                    return Err(Error::bad_value(format!(
                        "Cannot apply $bit to a value of non-integral type.{} has the field {} of \
                         non-integer type {}",
                        path::render_id(doc),
                        field_name(at),
                        path::type_name(other)
                    )))
                }
            };
            let next = apply_bits(&start, bits);
            if current != Some(&next) {
                path::set(doc, at, next)?;
            }
        }
        Op::PullAll(values) => {
            let removes = |item: &Bson| values.iter().any(|v| values_equal(item, v));
            pull(doc, at, current.cloned(), removes)?;
        }
    }
    Ok(())
}

fn pull(
    doc: &mut Document,
    at: &[String],
    current: Option<Bson>,
    removes: impl Fn(&Bson) -> bool,
) -> Result<()> {
    match current {
        None => Ok(()),
        Some(Bson::Array(items)) => {
            let before = items.len();
            let kept: Vec<Bson> = items.into_iter().filter(|item| !removes(item)).collect();
            if kept.len() != before {
                path::set(doc, at, Bson::Array(kept))?;
            }
            Ok(())
        }
        Some(_) => Err(Error::bad_value("Cannot apply $pull to a non-array value")),
    }
}

/// Whether the path passes through an array before its last component.
fn through_array(doc: &Document, at: &[String]) -> Option<String> {
    for end in 1..at.len() {
        let prefix = at.get(..end)?;
        if let Some(Bson::Array(_)) = path::get(doc, prefix) {
            return Some(prefix.join("."));
        }
    }
    None
}

fn rename(doc: &mut Document, source: &[String], target: &[String]) -> Result<()> {
    if let Some(array_at) = through_array(doc, source) {
        return Err(Error::bad_value(format!(
            "The source field cannot be an array element, '{}' in doc with {array_at} being an \
             array",
            source.join(".")
        )));
    }
    let Some(value) = path::get(doc, source).cloned() else {
        return Ok(());
    };
    if let Some(array_at) = through_array(doc, target) {
        return Err(Error::bad_value(format!(
            "The destination field cannot be an array element, '{}' in doc with {array_at} \
             being an array",
            target.join(".")
        )));
    }
    path::unset(doc, source);
    path::set(doc, target, value)
}
