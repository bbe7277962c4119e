//! `changeStreamPreAndPostImages`, the collection option `create` and `collMod` set: whether the
//! operation log keeps a change's document images for change streams.

use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// `changeStreamPreAndPostImages: {enabled: <bool>}` of `create` or `collMod`, if given.
pub(super) fn images_option(cmd: &Document, command: &str) -> Result<Option<bool>> {
    let Some(value) = cmd.get("changeStreamPreAndPostImages") else {
        return Ok(None);
    };
    let Bson::Document(images) = value else {
        return Err(crate::command::args::wrong_type(
            command,
            "changeStreamPreAndPostImages",
            value,
            "object",
        ));
    };
    if let Some(field) = images.keys().find(|k| k.as_str() != "enabled") {
        return Err(Error::new(
            ErrorCode::IDLUnknownField,
            format!(
                "BSON field '{command}.changeStreamPreAndPostImages.{field}' is an unknown field."
            ),
        ));
    }
    match images.get("enabled") {
        Some(Bson::Boolean(enabled)) => Ok(Some(*enabled)),
        Some(other) => Err(crate::command::args::wrong_type(
            command,
            "changeStreamPreAndPostImages.enabled",
            other,
            "bool",
        )),
        None => Err(Error::new(
            ErrorCode::Location40414,
            format!("BSON field '{command}.changeStreamPreAndPostImages.enabled' is missing but a required field"),
        )),
    }
}
