//! Reading typed command arguments, with mongod's error messages for wrong types.

use crate::error::{Error, Result};
use bson::{Bson, Document};

/// mongod's name for a BSON value's type, as used in error messages.
pub use crate::query::path::type_name;

/// mongod's truthiness of an argument value (`{x: 1}`, `{x: true}`).
pub fn is_truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => *b,
        Bson::Int32(n) => *n != 0,
        Bson::Int64(n) => *n != 0,
        Bson::Double(n) => *n != 0.0,
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

/// An optional field that must be a string.
pub fn optional_str<'a>(cmd: &'a Document, command: &str, field: &str) -> Result<Option<&'a str>> {
    match cmd.get(field) {
        None => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s.as_str())),
        Some(other) => Err(wrong_type(command, field, other, "string")),
    }
}

/// An optional field that must be an array.
pub fn optional_array<'a>(
    cmd: &'a Document,
    command: &str,
    field: &str,
) -> Result<Option<&'a Vec<Bson>>> {
    match cmd.get(field) {
        None => Ok(None),
        Some(Bson::Array(a)) => Ok(Some(a)),
        Some(other) => Err(wrong_type(command, field, other, "array")),
    }
}

/// An optional whole number, from any numeric BSON type.
pub fn optional_i64(cmd: &Document, command: &str, field: &str) -> Result<Option<i64>> {
    match cmd.get(field) {
        None => Ok(None),
        Some(Bson::Int32(n)) => Ok(Some(i64::from(*n))),
        Some(Bson::Int64(n)) => Ok(Some(*n)),
        Some(Bson::Double(n)) if n.fract() == 0.0 && n.abs() < 9.0e18 => Ok(Some(*n as i64)),
        Some(other) => Err(wrong_type(
            command,
            field,
            other,
            "[long, int, decimal, double]",
        )),
    }
}

/// `BSON field 'cmd.field' is the wrong type 'string', expected type 'array'` (14 TypeMismatch).
pub fn wrong_type(command: &str, field: &str, value: &Bson, expected: &str) -> Error {
    let noun = if expected.starts_with('[') {
        "types"
    } else {
        "type"
    };
    Error::type_mismatch(format!(
        "BSON field '{command}.{field}' is the wrong type '{}', expected {noun} '{expected}'",
        type_name(value)
    ))
}

/// Fields any command may carry that say nothing about the command itself
/// (mongod's `generic_argument.idl`).
pub const GENERIC_FIELDS: &[&str] = &[
    "$db",
    "lsid",
    "$clusterTime",
    "$readPreference",
    "$audit",
    "$client",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "comment",
    "maxTimeMS",
    "readConcern",
    "writeConcern",
    "clientOperationKey",
    "mayBypassWriteBlocking",
];

pub fn is_generic(field: &str) -> bool {
    GENERIC_FIELDS.contains(&field)
}

/// Refuses fields the command does not know, as mongod's IDL parser does:
/// `BSON field 'find.foo' is an unknown field.` (40415). Generic fields are always allowed.
pub fn check_fields(cmd: &Document, command: &str, known: &[&str]) -> Result<()> {
    for field in cmd.keys().skip(1) {
        if !is_generic(field) && !known.contains(&field.as_str()) {
            return Err(Error::new(
                crate::error::ErrorCode::IDLUnknownField,
                format!("BSON field '{command}.{field}' is an unknown field."),
            ));
        }
    }
    Ok(())
}

/// Whether a write must be on disk before it is acknowledged. mayfly acknowledges only durable
/// writes unless the client opts out with `writeConcern: {j: false}` or `{w: 0}`.
pub fn durable(cmd: &Document) -> bool {
    let Ok(wc) = cmd.get_document("writeConcern") else {
        return true;
    };
    let unacknowledged = matches!(wc.get("w"), Some(Bson::Int32(0)) | Some(Bson::Int64(0)))
        || matches!(wc.get("w"), Some(Bson::Double(w)) if *w == 0.0);
    let journal_off = matches!(wc.get("j"), Some(v) if !is_truthy(v));
    !(unacknowledged || journal_off)
}

/// An optional boolean field (any truthy value counts, as mongod's parser allows numbers).
pub fn optional_bool(cmd: &Document, command: &str, field: &str) -> Result<Option<bool>> {
    match cmd.get(field) {
        None => Ok(None),
        Some(v @ (Bson::Boolean(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_))) => {
            Ok(Some(is_truthy(v)))
        }
        Some(other) => Err(wrong_type(command, field, other, "bool")),
    }
}

/// An optional document field.
pub fn optional_doc<'a>(
    cmd: &'a Document,
    command: &str,
    field: &str,
) -> Result<Option<&'a Document>> {
    match cmd.get(field) {
        None => Ok(None),
        Some(Bson::Document(d)) => Ok(Some(d)),
        Some(other) => Err(wrong_type(command, field, other, "object")),
    }
}

/// The documents of an array field (`documents`, `updates`, `deletes`, `pipeline`).
pub fn documents_of<'a>(
    cmd: &'a Document,
    command: &str,
    field: &str,
) -> Result<Vec<&'a Document>> {
    let Some(items) = optional_array(cmd, command, field)? else {
        return Err(Error::failed_to_parse(format!(
            "BSON field '{command}.{field}' is missing but a required field"
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Bson::Document(d) => Ok(d),
            other => Err(wrong_type(
                command,
                &format!("{field}.{i}"),
                other,
                "object",
            )),
        })
        .collect()
}
