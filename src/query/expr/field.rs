//! Field paths in expressions: parsing `"$a.b"` and `"$$var.a.b"`, and walking a path the
//! aggregation way, where a path through an array maps over its elements (recursing into
//! nested arrays) and yields the array of what it found, as mongod's `ExpressionFieldPath`.

use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// `"$a.b"` → `["a", "b"]`, with mongod's FieldPath rules.
pub fn field_path(s: &str) -> Result<Vec<String>> {
    let body = s.strip_prefix('$').unwrap_or(s);
    if body.is_empty() {
        return Err(Error::new(
            ErrorCode::Location16872,
            "'$' by itself is not a valid FieldPath",
        ));
    }
    crate::query::depth::check_path(body)?;
    let parts: Vec<String> = body.split('.').map(str::to_owned).collect();
    for part in &parts {
        check_field_name(part)?;
    }
    Ok(parts)
}

/// A stage's path argument that names a field without a leading `$` (`$lookup`'s `as`,
/// `$unwind`'s `includeArrayIndex`, `$densify`'s `field`, …) → its components, with the rules
/// of mongod's `FieldPath` constructor: not empty, no trailing `.`, at most the nesting
/// depth's components, and each component a valid field name.
pub fn plain_field_path(s: &str) -> Result<Vec<String>> {
    if s.is_empty() {
        return Err(Error::new(
            ErrorCode::Location40352,
            "FieldPath cannot be constructed with empty string",
        ));
    }
    if s.ends_with('.') {
        return Err(Error::new(
            ErrorCode::Location40353,
            "FieldPath must not end with a '.'.",
        ));
    }
    crate::query::depth::check_path(s)?;
    let parts: Vec<String> = s.split('.').map(str::to_owned).collect();
    for part in &parts {
        check_field_name(part)?;
    }
    Ok(parts)
}

/// One component of a field path, as mongod's `FieldPath::uassertValidFieldName` checks it:
/// not empty, no leading `$` (but the DBRef and metadata names mongod allows), and no NUL
/// byte, which no BSON field name can hold (a reply naming it could not be encoded).
fn check_field_name(part: &str) -> Result<()> {
    const ALLOWED_DOLLAR_NAMES: [&str; 6] = [
        "$id",
        "$ref",
        "$db",
        "$sortKey",
        "$recordId",
        "$searchScore",
    ];
    if part.is_empty() {
        return Err(Error::new(
            ErrorCode::Location15998,
            "FieldPath field names may not be empty strings.",
        ));
    }
    if part.starts_with('$') && !ALLOWED_DOLLAR_NAMES.contains(&part) {
        return Err(Error::new(
            ErrorCode::Location16410,
            format!("FieldPath field names may not start with '$'. Consider using $getField or $setField. (field: {part})"),
        ));
    }
    if part.contains('\0') {
        return Err(Error::new(
            ErrorCode::Location16411,
            "FieldPath field names may not contain '\\0'.",
        ));
    }
    Ok(())
}

/// `"$$name.a.b"` → `("name", Some("a.b"))`.
pub(super) fn split_variable(s: &str) -> Result<(&str, Option<&str>)> {
    let body = s.strip_prefix("$$").unwrap_or(s);
    Ok(match body.split_once('.') {
        Some((name, rest)) => (name, Some(rest)),
        None => (body, None),
    })
}

/// The value at `path` in `doc`; the whole document for an empty path.
pub(super) fn get_in_document(doc: &Document, path: &[String]) -> Option<Bson> {
    match path.split_first() {
        None => Some(Bson::Document(doc.clone())),
        Some((first, rest)) => doc.get(first).and_then(|v| walk(v, rest)),
    }
}

/// The value at `path` below `value`; `value` itself for an empty path.
pub(super) fn get_in_value(value: &Bson, path: &[String]) -> Option<Bson> {
    match (value, path.is_empty()) {
        (_, true) => Some(value.clone()),
        (Bson::Document(d), false) => get_in_document(d, path),
        (Bson::Array(_), false) => walk(value, path),
        _ => None,
    }
}

fn walk(value: &Bson, rest: &[String]) -> Option<Bson> {
    let Some((first, tail)) = rest.split_first() else {
        return Some(value.clone());
    };
    match value {
        Bson::Document(d) => d.get(first).and_then(|v| walk(v, tail)),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter(|v| matches!(v, Bson::Document(_) | Bson::Array(_)))
                .filter_map(|v| walk(v, rest))
                .collect(),
        )),
        _ => None,
    }
}
