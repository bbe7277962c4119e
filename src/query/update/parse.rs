//! Update document → [`Update`]: modifier recognition, argument validation, path checks and
//! the conflict check between operator paths, with mongod's codes and messages.

use super::{modifiers as ops, positional_identifier, Action, Op, Update};
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use crate::query::path;
use bson::{Bson, Document};
use std::cmp::Ordering;

const MODIFIERS: &[&str] = &[
    "$set",
    "$setOnInsert",
    "$unset",
    "$inc",
    "$mul",
    "$min",
    "$max",
    "$rename",
    "$currentDate",
    "$push",
    "$addToSet",
    "$pop",
    "$pull",
    "$pullAll",
    "$bit",
];

pub(super) fn update(doc: &Document) -> Result<Update> {
    let is_operator_update = doc.keys().next().is_some_and(|k| k.starts_with('$'));
    if !is_operator_update {
        for key in doc.keys() {
            if key.starts_with('$') {
                return Err(Error::new(
                    ErrorCode::DollarPrefixedFieldName,
                    format!(
                        "The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the \
                         context of an update's replacement document. Consider using an \
                         aggregation pipeline with $replaceWith."
                    ),
                ));
            }
        }
        return Ok(Update::Replacement(doc.clone()));
    }
    let mut actions = Vec::new();
    for (modifier, argument) in doc {
        if !MODIFIERS.contains(&modifier.as_str()) {
            return Err(Error::failed_to_parse(format!(
                "Unknown modifier: {modifier}. Expected a valid update modifier or pipeline-style \
                 update specified as an array"
            )));
        }
        let Bson::Document(fields) = argument else {
            return Err(Error::failed_to_parse(format!(
                "Modifiers operate on fields but we found type {} instead. For example: {{$mod: \
                 {{<field>: ...}}}} not {{{modifier}: {}}}",
                path::type_name(argument),
                path::render(argument)
            )));
        };
        for (field, value) in fields {
            let field_path = checked_path(field)?;
            let op = operator(modifier, field, value)?;
            actions.push(Action {
                path: field_path,
                op,
            });
        }
    }
    check_conflicts(&actions)?;
    actions.sort_by(|a, b| compare_paths(&a.path, &b.path));
    Ok(Update::Operators(actions))
}

/// Splits and validates an update path (empty components, stray `$` fields).
fn checked_path(field: &str) -> Result<Vec<String>> {
    if field.is_empty() {
        return Err(Error::new(
            ErrorCode::EmptyFieldName,
            "An empty update path is not valid.",
        ));
    }
    crate::query::depth::check_path(field)?;
    let components = path::split(field);
    for (i, component) in components.iter().enumerate() {
        if component.is_empty() {
            return Err(Error::new(
                ErrorCode::EmptyFieldName,
                format!(
                    "The update path '{field}' contains an empty field name, which is not allowed."
                ),
            ));
        }
        let positional = component == "$" || positional_identifier(component).is_some();
        if positional && i == 0 {
            return Err(Error::bad_value(format!(
                "Cannot have positional (i.e. '$') element in the first component in path \
                 '{field}'"
            )));
        }
        if component.starts_with('$') && !positional {
            return Err(Error::new(
                ErrorCode::DollarPrefixedFieldName,
                format!(
                    "The dollar ($) prefixed field '{component}' in '{field}' is not valid for \
                     storage."
                ),
            ));
        }
    }
    if components.iter().filter(|c| *c == "$").count() > 1 {
        return Err(Error::bad_value(format!(
            "Too many positional (i.e. '$') elements found in path '{field}'"
        )));
    }
    Ok(components)
}

fn is_dynamic(components: &[String]) -> bool {
    components
        .iter()
        .any(|c| c == "$" || positional_identifier(c).is_some())
}

fn operator(modifier: &str, field: &str, value: &Bson) -> Result<Op> {
    let element = || format!("{{{field}: {}}}", path::render(value));
    Ok(match modifier {
        "$set" => Op::Set(value.clone()),
        "$setOnInsert" => Op::SetOnInsert(value.clone()),
        "$unset" => Op::Unset,
        "$inc" | "$mul" => {
            if !is_number(value) {
                let verb = if modifier == "$inc" {
                    "increment"
                } else {
                    "multiply"
                };
                return Err(Error::type_mismatch(format!(
                    "Cannot {verb} with non-numeric argument: {}",
                    element()
                )));
            }
            if modifier == "$inc" {
                Op::Inc(value.clone())
            } else {
                Op::Mul(value.clone())
            }
        }
        "$min" => Op::Min(value.clone()),
        "$max" => Op::Max(value.clone()),
        "$rename" => rename(field, value)?,
        "$currentDate" => current_date(field, value)?,
        "$push" => Op::Push(ops::PushSpec::parse(value)?),
        "$addToSet" => Op::AddToSet(ops::add_to_set_values(value)?),
        "$pop" => {
            let n = crate::query::filter::integral_value(value).filter(|_| is_number(value));
            match n {
                Some(1) => Op::Pop { first: false },
                Some(-1) => Op::Pop { first: true },
                Some(_) => {
                    return Err(Error::failed_to_parse(format!(
                        "$pop expects 1 or -1, found: {}",
                        path::render(value)
                    )))
                }
                None => {
                    return Err(Error::failed_to_parse(format!(
                        "Expected a number in: {field}: {}",
                        path::render(value)
                    )))
                }
            }
        }
        "$pull" => Op::Pull(ops::PullCondition::parse(value)?),
        "$pullAll" => match value {
            Bson::Array(items) => Op::PullAll(items.clone()),
            other => {
                return Err(Error::bad_value(format!(
                    "$pullAll requires an array argument but was given a {}",
                    path::type_name(other)
                )))
            }
        },
        "$bit" => Op::Bit(ops::parse_bit(value)?),
        _ => {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                format!("{modifier} is not supported by this server"),
            ))
        }
    })
}

fn rename(field: &str, value: &Bson) -> Result<Op> {
    let Bson::String(target) = value else {
        return Err(Error::bad_value(format!(
            "The 'to' field for $rename must be a string: {field}: {}",
            path::render(value)
        )));
    };
    if target.contains('\0') {
        return Err(Error::bad_value(
            "The 'to' field for $rename cannot contain an embedded null byte",
        ));
    }
    crate::query::depth::check_path(field)?;
    let source = path::split(field);
    let target_path = checked_path(target)?;
    if is_dynamic(&source) {
        return Err(Error::bad_value(format!(
            "The source field for $rename may not be dynamic: {field}"
        )));
    }
    if is_dynamic(&target_path) {
        return Err(Error::bad_value(format!(
            "The destination field for $rename may not be dynamic: {target}"
        )));
    }
    if source == target_path {
        return Err(Error::bad_value(format!(
            "The source and target field for $rename must differ: {field}"
        )));
    }
    if is_prefix(&source, &target_path) || is_prefix(&target_path, &source) {
        return Err(Error::bad_value(format!(
            "The source and target field for $rename must not be on the same path: {field}"
        )));
    }
    Ok(Op::Rename(target_path))
}

fn current_date(field: &str, value: &Bson) -> Result<Op> {
    match value {
        Bson::Boolean(_) => Ok(Op::CurrentDate { timestamp: false }),
        Bson::Document(spec) => {
            let ty = spec.get("$type");
            if spec.len() != 1 || ty.is_none() {
                return Err(Error::bad_value(format!(
                    "Unrecognized $currentDate option: {}",
                    spec.keys()
                        .find(|k| *k != "$type")
                        .map(String::as_str)
                        .unwrap_or("")
                )));
            }
            match ty {
                Some(Bson::String(t)) if t == "date" => Ok(Op::CurrentDate { timestamp: false }),
                Some(Bson::String(t)) if t == "timestamp" => {
                    Ok(Op::CurrentDate { timestamp: true })
                }
                _ => Err(Error::bad_value(
                    "The '$type' string field is required to be 'date' or 'timestamp': \
                     {$currentDate: {field : {$type: 'date'}}}",
                )),
            }
        }
        _ => Err(Error::bad_value(format!(
            "{field} is not valid type for $currentDate. Please use a boolean ('true') or a \
             $type expression ({{$type: 'timestamp/date'}})."
        ))),
    }
}

fn is_prefix(short: &[String], long: &[String]) -> bool {
    short.len() <= long.len() && long.iter().zip(short.iter()).all(|(a, b)| a == b)
}

/// Two actions may not touch the same path or a path and its ancestor.
fn check_conflicts(actions: &[Action]) -> Result<()> {
    let mut seen: Vec<&Vec<String>> = Vec::new();
    for action in actions {
        let mut paths = vec![&action.path];
        if let Op::Rename(target) = &action.op {
            paths.push(target);
        }
        for current in paths {
            for earlier in &seen {
                let conflict_at = if is_prefix(earlier, current) {
                    Some(earlier)
                } else if is_prefix(current, earlier) {
                    Some(&current)
                } else {
                    None
                };
                if let Some(at) = conflict_at {
                    return Err(Error::new(
                        ErrorCode::ConflictingUpdateOperators,
                        format!(
                            "Updating the path '{}' would create a conflict at '{}'",
                            current.join("."),
                            at.join(".")
                        ),
                    ));
                }
            }
            seen.push(current);
        }
    }
    Ok(())
}

/// mongod (5.0+) applies fields in lexicographic order, numeric names in numeric order.
fn compare_paths(a: &[String], b: &[String]) -> Ordering {
    for (x, y) in a.iter().zip(b.iter()) {
        let ord = match (path::array_index(x), path::array_index(y)) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => x.cmp(y),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}
