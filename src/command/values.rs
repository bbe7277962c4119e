//! mongod's readings of one argument value: its truthiness, its type's name, and the error for
//! a value of the wrong type. Below every reader of command arguments (`args`, `spec`,
//! `cluster_fields`), so that none of them imports another to read a value.

use crate::error::Error;
use bson::Bson;

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
