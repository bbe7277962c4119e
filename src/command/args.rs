//! Reading typed command arguments one by one, with mongod's error messages for wrong types,
//! and the envelope's `writeConcern` check. Handlers converted to a spec reader
//! ([`super::spec::Spec`]) read their fields in one pass instead.

use crate::error::{Error, Result};
use bson::{Bson, Document};

pub use super::generic::is_generic;
pub use super::values::{is_truthy, type_name, wrong_type};

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

/// Refuses fields the command does not know, as mongod's IDL parser does:
/// `BSON field 'find.foo' is an unknown field.` (40415). Generic fields, and the fields mongod
/// knows that only its own cluster sends (`cluster_fields`), are always known.
pub fn check_fields(cmd: &Document, command: &str, known: &[&str]) -> Result<()> {
    for field in cmd.keys().skip(1) {
        if !is_generic(field)
            && !known.contains(&field.as_str())
            && !super::cluster_fields::is_known(command, field)
        {
            return Err(Error::new(
                crate::error::ErrorCode::IDLUnknownField,
                format!("BSON field '{command}.{field}' is an unknown field."),
            ));
        }
    }
    Ok(())
}

/// Checks a command's `writeConcern` (its generic field) as mongod does: a malformed one is refused (9
/// FailedToParse, 14 TypeMismatch). A standalone takes `w` 0, 1 or `"majority"` (there are no
/// other members to wait for) and refuses a `w` above 1 or a named mode (2 BadValue); a
/// replica-set member (`replicated`) takes them, and its reply says they were not satisfied
/// (`replset::write_concern_error`).
pub fn check_write_concern(write_concern: Option<&Bson>, replicated: bool) -> Result<()> {
    let Some(wc) = write_concern else {
        return Ok(());
    };
    let Bson::Document(wc) = wc else {
        return Err(Error::failed_to_parse("writeConcern must be an object"));
    };
    for field in ["j", "fsync"] {
        match wc.get(field) {
            None | Some(Bson::Boolean(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)) => {}
            Some(Bson::Decimal128(_)) => {}
            Some(other) => {
                return Err(wrong_type(
                    "writeConcern",
                    field,
                    other,
                    "[bool, long, int, decimal, double]",
                ))
            }
        }
    }
    if wc.get("j").is_some_and(is_truthy) && wc.get("fsync").is_some_and(is_truthy) {
        return Err(Error::failed_to_parse(
            "fsync and j options cannot be used together",
        ));
    }
    // A wtimeout of another type counts as 0, as in mongod; only its range is checked.
    if let Some(wtimeout) = wc.get("wtimeout").and_then(number_of) {
        if wtimeout > f64::from(i32::MAX) {
            return Err(Error::failed_to_parse("wtimeout must be a 32-bit integer"));
        }
    }
    match wc.get("w") {
        None | Some(Bson::Null | Bson::Undefined) => Ok(()),
        Some(w @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))) => {
            let n = number_of(w).unwrap_or(f64::NAN);
            if n.is_nan() {
                return Err(Error::failed_to_parse("w cannot be NaN"));
            }
            // mongod's safeNumberLong: truncated toward zero, saturating.
            let n = n.trunc();
            if !(0.0..=f64::from(MAX_REPLICA_SET_MEMBERS)).contains(&n) {
                return Err(Error::failed_to_parse(format!(
                    "w has to be a non-negative number and not greater than {MAX_REPLICA_SET_MEMBERS}; found: {}",
                    n as i64
                )));
            }
            if n > 1.0 && !replicated {
                return Err(Error::bad_value(
                    "cannot use 'w' > 1 when a host is not replicated",
                ));
            }
            Ok(())
        }
        Some(Bson::String(mode)) if mode == "majority" || replicated => Ok(()),
        Some(Bson::String(mode)) => Err(Error::bad_value(format!(
            "cannot use non-majority 'w' mode \"{mode}\" when a host is not a member of a replica set"
        ))),
        Some(_) => Err(Error::failed_to_parse("w has to be a number or a string")),
    }
}

/// mongod's `ReplSetConfig::kMaxMembers`, the largest numeric `w`.
const MAX_REPLICA_SET_MEMBERS: i32 = 50;

/// A numeric BSON value as a double.
fn number_of(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        Bson::Decimal128(d) => Some(crate::query::decimal::bson_to_f64(d)),
        _ => None,
    }
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

#[cfg(test)]
mod write_concern_tests {
    use super::*;
    use crate::error::ErrorCode;
    use bson::doc;

    #[test]
    fn a_replica_set_member_accepts_any_w_and_tags_but_not_malformed_ones() {
        for wc in [
            doc! {"w": 2},
            doc! {"w": 50},
            doc! {"w": "dc1"},
            doc! {"w": "majority"},
        ] {
            check_write_concern(Some(&Bson::Document(wc.clone())), true)
                .unwrap_or_else(|e| panic!("{wc}: {e}"));
        }
        for wc in [doc! {"w": 51}, doc! {"w": -1}, doc! {"w": true}] {
            let err = check_write_concern(Some(&Bson::Document(wc.clone())), true).unwrap_err();
            assert_eq!(err.code, ErrorCode::FailedToParse, "{wc}");
        }
    }

    #[test]
    fn a_standalone_accepts_w_0_1_and_majority_and_refuses_the_rest() {
        for wc in [
            doc! {},
            doc! {"w": 0},
            doc! {"w": 1},
            doc! {"w": 1.0},
            doc! {"w": "majority"},
            doc! {"w": 1, "j": true, "wtimeout": 100},
            doc! {"fsync": 1},
            doc! {"wtimeout": "soon"},
        ] {
            check_write_concern(Some(&Bson::Document(wc.clone())), false)
                .unwrap_or_else(|e| panic!("{wc}: {e}"));
        }
        for (wc, code, message) in [
            (
                Bson::Document(doc! {"w": 2}),
                ErrorCode::BadValue,
                "cannot use 'w' > 1 when a host is not replicated",
            ),
            (
                Bson::Document(doc! {"w": 50}),
                ErrorCode::BadValue,
                "cannot use 'w' > 1 when a host is not replicated",
            ),
            (
                Bson::Document(doc! {"w": "bogusTag"}),
                ErrorCode::BadValue,
                "cannot use non-majority 'w' mode \"bogusTag\" when a host is not a member of a replica set",
            ),
            (
                Bson::Document(doc! {"w": -1}),
                ErrorCode::FailedToParse,
                "w has to be a non-negative number and not greater than 50; found: -1",
            ),
            (
                Bson::Document(doc! {"w": 51}),
                ErrorCode::FailedToParse,
                "w has to be a non-negative number and not greater than 50; found: 51",
            ),
            (
                Bson::Document(doc! {"w": true}),
                ErrorCode::FailedToParse,
                "w has to be a number or a string",
            ),
            (
                Bson::Document(doc! {"j": "yes"}),
                ErrorCode::TypeMismatch,
                "BSON field 'writeConcern.j' is the wrong type 'string', expected types '[bool, long, int, decimal, double]'",
            ),
            (
                Bson::Document(doc! {"fsync": [1]}),
                ErrorCode::TypeMismatch,
                "BSON field 'writeConcern.fsync' is the wrong type 'array', expected types '[bool, long, int, decimal, double]'",
            ),
            (
                Bson::Document(doc! {"j": true, "fsync": true}),
                ErrorCode::FailedToParse,
                "fsync and j options cannot be used together",
            ),
            (
                Bson::Document(doc! {"wtimeout": 3_000_000_000i64}),
                ErrorCode::FailedToParse,
                "wtimeout must be a 32-bit integer",
            ),
            (
                Bson::Int32(1),
                ErrorCode::FailedToParse,
                "writeConcern must be an object",
            ),
        ] {
            let err =
                check_write_concern(Some(&wc), false)
                    .unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{wc}");
        }
    }
}
