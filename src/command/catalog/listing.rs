//! Cursors over catalog listings (`listCollections`, `listIndexes`): the entries are already in
//! memory, so the cursor holds them; `cursor: {batchSize}` sizes the first batch and `getMore`
//! continues it.

use crate::command::args::{optional_doc, optional_i64};
use crate::command::crud::cursor::first_batch_reply;
use crate::command::Shared;
use crate::engine::cursor::{Cursor, Item};
use crate::error::{Error, ErrorCode, Result};
use bson::Document;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

/// `cursor: {batchSize: n}`: the first batch's size, `None` for all.
pub(super) fn cursor_batch_size(cmd: &Document, command: &str) -> Result<Option<usize>> {
    let Some(cursor) = optional_doc(cmd, command, "cursor")? else {
        return Ok(None);
    };
    for field in cursor.keys() {
        if field != "batchSize" {
            return Err(Error::new(
                ErrorCode::IDLUnknownField,
                format!("BSON field 'cursor.{field}' is an unknown field."),
            ));
        }
    }
    match optional_i64(cursor, "cursor", "batchSize")? {
        None => Ok(None),
        Some(n) if n < 0 => Err(Error::bad_value(format!(
            "BatchSize value must be non-negative, but received: {n}"
        ))),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

/// A cursor over catalog entries already in memory; `getMore` continues it when a batch size
/// leaves some behind.
pub(super) fn listing_cursor(
    shared: &Shared,
    ns: String,
    entries: Vec<Document>,
    batch_size: Option<usize>,
) -> Result<bson::RawDocumentBuf> {
    let sized = entries.into_iter().map(|entry| Item::lasting(&entry));
    let now = shared.engine.now();
    let cursor = Cursor::new(ns, Box::new(sized), Arc::new(AtomicI64::new(now)), None);
    first_batch_reply(shared, cursor, now, batch_size, false)
}
