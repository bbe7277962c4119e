//! `$mergeObjects`: the fields of every document input, later values overwriting earlier ones;
//! `null` and missing inputs are ignored, anything else is mongod's error 40400.
//!
//! Owns: the merged document. Does not own: the expression form (`query::expr`).

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::value::type_name;
use crate::query::expr::Value;
use crate::query::size::held_document;
use bson::{Bson, Document};

pub fn merge_into(merged: &mut Document, value: Value) -> Result<isize> {
    let doc = match value {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(0),
        Some(Bson::Document(d)) => d,
        other => {
            let shown = other
                .as_ref()
                .map(crate::query::path::render)
                .unwrap_or_default();
            return Err(Error::new(
                ErrorCode::Location40400,
                format!(
                    "$mergeObjects requires object inputs, but input {shown} is of type {}",
                    type_name(&other)
                ),
            ));
        }
    };
    let before = held_document(merged)?;
    for (k, v) in doc {
        merged.insert(k, v);
    }
    let after = held_document(merged)?;
    Ok(
        isize::try_from(after).unwrap_or(isize::MAX)
            - isize::try_from(before).unwrap_or(isize::MAX),
    )
}
