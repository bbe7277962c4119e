//! `listIndexes`: a collection's finished indexes, `_id_` first, as a cursor.

use super::spec::{unsupported, ID_INDEX_NAME};
use crate::command::args::{check_fields, optional_bool};
use crate::command::catalog::listing::{cursor_batch_size, listing_cursor};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, IndexMeta};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Document};

/// The `_id` index every collection has; listed first.
pub fn id_index_entry() -> Document {
    doc! {"v": 2, "key": {"_id": 1}, "name": ID_INDEX_NAME}
}

const LIST_FIELDS: &[&str] = &["cursor", "includeBuildUUIDs", "includeIndexBuildInfo"];

pub fn list_indexes(shared: &Shared, req: &Request<'_>) -> Result<bson::RawDocumentBuf> {
    let cmd = req.body;
    check_fields(cmd, "listIndexes", LIST_FIELDS)?;
    for flag in ["includeBuildUUIDs", "includeIndexBuildInfo"] {
        if optional_bool(cmd, "listIndexes", flag)? == Some(true) {
            // Both change the shape of the listing (and list unfinished builds).
            return Err(unsupported(format!(
                "listIndexes' '{flag}' is not supported by mayfly"
            )));
        }
    }
    let coll = collection_arg(cmd.get("listIndexes"), "listIndexes")?;
    let batch_size = cursor_batch_size(cmd, "listIndexes")?;
    let ns = format!("{}.{coll}", req.db);
    let Some(meta) = shared.engine.catalog()?.get(req.db, coll).cloned() else {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            format!("ns does not exist: {ns}"),
        ));
    };
    let mut entries = vec![id_index_entry()];
    // TTL-8: `expireAfterSeconds` is stored and shown as Int32. An index still being built is
    // not listed: mongod lists unfinished builds only with `includeBuildUUIDs` or
    // `includeIndexBuildInfo`, which mayfly refuses.
    entries.extend(
        meta.indexes
            .iter()
            .filter(|i| !i.building)
            .map(IndexMeta::to_list_entry),
    );
    listing_cursor(shared, ns, entries, batch_size)
}
