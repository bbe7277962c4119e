//! Logical sessions on a standalone: mayfly advertises `logicalSessionTimeoutMinutes`, so drivers
//! attach an `lsid` to every command and end their sessions on close. Sessions carry no state
//! yet (no transactions, no retryable writes on a standalone), so these commands validate their
//! argument and acknowledge, as a standalone mongod does.

use super::args::optional_array;
use super::Request;
use crate::error::Result;
use bson::{doc, Document, Uuid};

pub fn start_session() -> Document {
    doc! {
        "id": {"id": Uuid::new()},
        "timeoutMinutes": super::handshake::LOGICAL_SESSION_TIMEOUT_MINUTES,
        "ok": 1.0,
    }
}

/// `endSessions`, `refreshSessions`, `killSessions`, `killAllSessions`: `{ok: 1}` once the
/// argument is the array mongod requires.
pub fn acknowledge(req: &Request<'_>) -> Result<Document> {
    optional_array(req.body, req.name.name(), req.name.name())?;
    Ok(doc! {"ok": 1.0})
}
