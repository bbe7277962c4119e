//! Authentication. mayfly has no users yet: a SASL conversation for any user fails the way
//! mongod's does for an unknown user, with 18 AuthenticationFailed, so clients configured with
//! credentials get a clear error instead of a missing command.

use super::Request;
use crate::error::{Error, ErrorCode, Result};
use bson::Document;

pub fn sasl(req: &Request<'_>) -> Result<Document> {
    tracing::info!(
        command = req.name.name(),
        db = req.db,
        "authentication attempted; mayfly has no users"
    );
    Err(Error::new(
        ErrorCode::AuthenticationFailed,
        "Authentication failed.",
    ))
}
