//! Deleting a stored document's derived entries: its index entries and its expiry entry, and
//! the change in a collection's size a write makes. Shared by the writes of `collection` and
//! the deletion of expired documents (`expired`), which neither owns alone.

use crate::engine::catalog::CollectionMeta;
use crate::engine::documents::expiry;
use crate::engine::documents::index_keys;
use crate::engine::documents::record::Record;
use crate::engine::documents::record_key;
use crate::engine::writer::txn::Txn;
use crate::storage::keys;
use crate::storage::Keyspace;
use bson::Document;

/// `new - old` body bytes.
pub(super) fn size_delta(old: usize, new: usize) -> i64 {
    i64::try_from(new).unwrap_or(i64::MAX) - i64::try_from(old).unwrap_or(i64::MAX)
}

/// Deletes the index entries of `doc`, stored under `key` (`doc` may hold only the root fields
/// the indexes are computed from, `index_keys::root_fields`).
pub(super) fn remove_index_entries(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    key: &[u8],
    doc: &Document,
) {
    let record = record_key::record(key);
    for index in meta.stored_indexes() {
        // A stored document always produced valid entries when it was written.
        for tuple in index_keys::entries(index, doc).unwrap_or_default() {
            txn.delete(
                Keyspace::Indexes,
                keys::index_key(meta.id, index.id, &tuple, record),
            );
        }
    }
}

pub(super) fn remove_expiry_entry(txn: &mut Txn<'_>, key: &[u8], record: &Record) {
    if let Some(expiry_key) = expiry::key_for(key, record) {
        txn.delete(Keyspace::Expiry, expiry_key);
    }
}
