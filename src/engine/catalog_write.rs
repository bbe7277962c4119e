//! Writing catalog entries inside a writer transaction: a collection's entry stored whole, and
//! one index's flags changed in place (`multikey` when a document write first finds an array
//! in its key, `building` when a build ends).
//!
//! Owns: putting a changed [`CollectionMeta`] into the transaction's catalog and its storage.
//! Does not own: what a DDL command changes (`ddl`), or the catalog itself (`catalog`).

use crate::engine::catalog::{CollectionMeta, IndexMeta};
use crate::engine::writer::txn::Txn;
use crate::error::{Error, Result};
use crate::storage::Keyspace;
use std::sync::Arc;

/// Writes a collection's catalog entry.
pub fn store(txn: &mut Txn<'_>, meta: CollectionMeta) -> Result<Arc<CollectionMeta>> {
    let (db, name) = (meta.db.clone(), meta.name.clone());
    let (key, value) = txn.catalog.put(meta)?;
    txn.put(Keyspace::Catalog, key, value);
    txn.catalog_changed();
    txn.catalog
        .get(&db, &name)
        .cloned()
        .ok_or_else(|| Error::internal("collection vanished from the catalog"))
}

/// Records in the current catalog entry that index `index_id` of collection `collection_id` is
/// multikey (a no-op when it already is, or is gone). Never cleared (`IndexMeta::multikey`).
pub fn mark_multikey(txn: &mut Txn<'_>, collection_id: u64, index_id: u64) -> Result<()> {
    let known = txn
        .catalog
        .by_id(collection_id)
        .and_then(|m| m.index_by_id(index_id))
        .is_none_or(|i| i.multikey);
    if !known {
        update_index(txn, collection_id, index_id, |i| i.multikey = true)?;
    }
    Ok(())
}

/// Changes index `index_id` of collection `collection_id` in the current catalog entry.
/// Returns whether the index was there.
pub fn update_index(
    txn: &mut Txn<'_>,
    collection_id: u64,
    index_id: u64,
    change: impl FnOnce(&mut IndexMeta),
) -> Result<bool> {
    let Some(current) = txn.catalog.by_id(collection_id) else {
        return Ok(false);
    };
    let mut updated = (**current).clone();
    let Some(index) = updated.indexes.iter_mut().find(|i| i.id == index_id) else {
        return Ok(false);
    };
    change(index);
    store(txn, updated)?;
    Ok(true)
}
