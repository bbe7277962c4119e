//! Catalog changes inside a [`Txn`]: implicit and explicit collection creation, drop, rename,
//! and secondary index creation (building entries for existing documents) and removal.
//!
//! Keys carry the collection id, not its name, so a rename (even across databases) changes only
//! the catalog.

use super::catalog::{validate_collection_name, CollectionMeta, IndexMeta};
use super::collection::{self, StoredDoc};
use super::txn::Txn;
use crate::error::{Error, ErrorCode, Result};
use crate::storage::keys;
use crate::storage::Keyspace;
use bson::Document;
use std::sync::Arc;

/// The collection, created with default options if it does not exist (implicit creation by
/// the first write). Returns whether it was created.
pub fn ensure_collection(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
) -> Result<(Arc<CollectionMeta>, bool)> {
    if let Some(meta) = txn.catalog.get(db, name) {
        return Ok((Arc::clone(meta), false));
    }
    validate_collection_name(db, name)?;
    let meta = txn.catalog.new_collection(db, name, Document::new());
    Ok((store(txn, meta)?, true))
}

/// The collection as of this point in the group, if it exists (never creates it).
pub fn collection(txn: &Txn<'_>, db: &str, name: &str) -> Option<Arc<CollectionMeta>> {
    txn.catalog.get(db, name).cloned()
}

/// Names of the collections of `db` as of this point in the group, in name order.
pub fn collection_names(txn: &Txn<'_>, db: &str) -> Vec<String> {
    txn.catalog
        .collections_in(db)
        .map(|m| m.name.clone())
        .collect()
}

/// `create`: 48 NamespaceExists if it exists.
pub fn create_collection(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
    options: Document,
) -> Result<Arc<CollectionMeta>> {
    validate_collection_name(db, name)?;
    if txn.catalog.get(db, name).is_some() {
        return Err(Error::new(
            ErrorCode::NamespaceExists,
            format!("Collection {db}.{name} already exists."),
        ));
    }
    let meta = txn.catalog.new_collection(db, name, options);
    store(txn, meta)
}

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

/// Drops a collection and every key it owns. Returns the collection it was, if it existed.
pub fn drop_collection(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
) -> Result<Option<Arc<CollectionMeta>>> {
    let Some((meta, key)) = txn.catalog.remove(db, name) else {
        return Ok(None);
    };
    txn.delete(Keyspace::Catalog, key);
    txn.catalog_changed();
    let prefix = keys::collection_prefix(meta.id);
    for keyspace in [Keyspace::Documents, Keyspace::Indexes, Keyspace::Expiry] {
        let doomed: Vec<Vec<u8>> = txn
            .scan_prefix(keyspace, &prefix)
            .map(|e| e.map(|(k, _)| k))
            .collect::<Result<_>>()?;
        for key in doomed {
            txn.delete(keyspace, key);
        }
    }
    Ok(Some(meta))
}

/// Renames `from` to `to_db.to`; with `drop_target` an existing target is dropped first.
pub fn rename_collection(
    txn: &mut Txn<'_>,
    from: (&str, &str),
    to: (&str, &str),
    drop_target: bool,
) -> Result<()> {
    validate_collection_name(to.0, to.1)?;
    let Some(source) = txn.catalog.get(from.0, from.1).cloned() else {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            "source namespace does not exist",
        ));
    };
    if from == to {
        return Err(Error::new(
            ErrorCode::IllegalOperation,
            "Can't rename a collection to itself",
        ));
    }
    if txn.catalog.get(to.0, to.1).is_some() {
        if !drop_target {
            return Err(Error::new(
                ErrorCode::NamespaceExists,
                "target namespace exists",
            ));
        }
        drop_collection(txn, to.0, to.1)?;
    }
    if let Some((_, key)) = txn.catalog.remove(from.0, from.1) {
        txn.delete(Keyspace::Catalog, key);
    }
    let mut renamed = (*source).clone();
    renamed.db = to.0.to_owned();
    renamed.name = to.1.to_owned();
    store(txn, renamed)?;
    Ok(())
}

/// Adds `index` to the collection and builds its entries for the visible documents; a unique
/// violation among them fails the build (11000) and nothing is created.
pub fn create_index(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    mut index: IndexMeta,
    now: i64,
) -> Result<Arc<CollectionMeta>> {
    let mut updated = meta.clone();
    index.id = updated.next_index_id.max(1);
    updated.next_index_id = index.id + 1;
    let stored = index.is_stored();
    let index_id = index.id;
    updated.indexes.push(index);
    if stored {
        let prefix = keys::collection_prefix(meta.id);
        let docs: Vec<StoredDoc> =
            collection::scan(txn, meta, &prefix, now).collect::<Result<_>>()?;
        for doc in &docs {
            // Rewriting a document under the new index list adds its entries and checks unique
            // constraints, without changing its `_ts`.
            if let Err(e) = collection::reindex(txn, &updated, doc, now) {
                // The catalog keeps the old index list, so the next index would reuse this id:
                // the entries already written for it must not survive the failed build.
                delete_index_entries(txn, meta.id, index_id)?;
                return Err(e);
            }
        }
    }
    store(txn, updated)
}

/// Removes the index named `name` and its entries.
pub fn drop_index(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    name: &str,
) -> Result<Arc<CollectionMeta>> {
    let mut updated = meta.clone();
    let Some(pos) = updated.indexes.iter().position(|i| i.name == name) else {
        return Err(Error::new(
            ErrorCode::IndexNotFound,
            format!("index not found with name [{name}]"),
        ));
    };
    let index = updated.indexes.remove(pos);
    if index.is_stored() {
        delete_index_entries(txn, meta.id, index.id)?;
    }
    store(txn, updated)
}

fn delete_index_entries(txn: &mut Txn<'_>, collection_id: u64, index_id: u64) -> Result<()> {
    let prefix = keys::index_prefix(collection_id, index_id);
    let doomed: Vec<Vec<u8>> = txn
        .scan_prefix(Keyspace::Indexes, &prefix)
        .map(|e| e.map(|(k, _)| k))
        .collect::<Result<_>>()?;
    for key in doomed {
        txn.delete(Keyspace::Indexes, key);
    }
    Ok(())
}
