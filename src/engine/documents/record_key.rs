//! Where a collection keeps each document: its key in the `Documents` keyspace, and the
//! `documentKey` that names it in the operation log and in change events.
//!
//! A document's key is its collection's prefix and its `_id`'s encoding
//! ([`keys::document_key`]), so `_id` is unique in the collection. In a *partitioned*
//! collection — one given a shard key while empty, as Cosmos DB gives a collection its shard
//! key when it creates it ([`CollectionMeta::partitioned`]) — the encoding of the shard key's
//! value follows (`null` when the document has none), so `_id` is unique per shard-key value,
//! as Cosmos keeps it (its logical partitions), and the documents of one `_id` lie together
//! under that `_id`'s key as a prefix. A partitioned document's `documentKey` is
//! `{<shard key path>: value, _id}`, the shard key first, as mongod logs a sharded
//! collection's.
//!
//! The part of a document key after the collection prefix is its *record*: index entries end
//! with it and hold it as their value, and the reaper's expiry entries carry it.
//!
//! Owns: building document keys and `documentKey`s. Does not own: the byte layout of a value
//! or a prefix (`storage::keys`), or the shard-key rules that a profile enforces
//! (`profile::shard_keys`).

use crate::engine::catalog::CollectionMeta;
use crate::error::{Error, Result};
use crate::query::path;
use crate::storage::keys;
use bson::{doc, Bson, Document, RawDocument};

/// The key of the document `doc` (its `_id`, and its shard-key value in a partitioned
/// collection). Storage takes keys of any length, as mongod takes an `_id` or a shard-key
/// value of any size within the document limit.
pub fn of_document(meta: &CollectionMeta, doc: &Document) -> Vec<u8> {
    let id = doc.get("_id").unwrap_or(&Bson::Null);
    let mut key = keys::document_key(meta.id, id);
    let Some(components) = partition_components(meta) else {
        return key;
    };
    let value = path::get(doc, &components).unwrap_or(&Bson::Null);
    keys::encode_value(value, &mut key);
    key
}

/// The key of a new document whose `_id` encodes as `encoded_id` and whose body is `body`.
pub fn of_new(meta: &CollectionMeta, encoded_id: &[u8], body: &RawDocument) -> Result<Vec<u8>> {
    let prefix = keys::collection_prefix(meta.id);
    let mut key = Vec::with_capacity(prefix.len() + encoded_id.len() + 16);
    key.extend_from_slice(&prefix);
    key.extend_from_slice(encoded_id);
    let Some(components) = partition_components(meta) else {
        return Ok(key);
    };
    let value = match path::get_raw(body, &components) {
        Some(raw) => Bson::try_from(raw.to_raw_bson())
            .map_err(|e| Error::internal(format!("cannot decode a shard key value: {e}")))?,
        None => Bson::Null,
    };
    keys::encode_value(&value, &mut key);
    Ok(key)
}

/// The key of the document `document_key` names (as [`document_key`] builds it); `None` when
/// it lacks a field the collection's keys are made of.
pub fn of_document_key(meta: &CollectionMeta, document_key: &Document) -> Option<Vec<u8>> {
    let mut key = keys::document_key(meta.id, document_key.get("_id")?);
    if let Some(path) = meta.partition_path() {
        keys::encode_value(document_key.get(path)?, &mut key);
    }
    Some(key)
}

/// Where the documents with `_id` `id` lie: one key, or, in a partitioned collection, every key
/// starting with the returned one.
pub fn of_id(meta: &CollectionMeta, id: &Bson) -> IdKeys {
    let key = keys::document_key(meta.id, id);
    if meta.partition_path().is_some() {
        IdKeys::Prefix(key)
    } else {
        IdKeys::Exact(key)
    }
}

/// Where the documents of one `_id` lie ([`of_id`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdKeys {
    /// The one key a document with that `_id` can have.
    Exact(Vec<u8>),
    /// The prefix of the keys of every document with that `_id`, one per shard-key value.
    Prefix(Vec<u8>),
}

/// The `documentKey` of the stored document `doc`: `{_id}`, or in a partitioned collection
/// `{<shard key path>: value, _id}` (the path as one field name, as mongod writes it).
pub fn document_key(meta: &CollectionMeta, doc: &Document) -> Document {
    let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
    match meta.partition_path() {
        Some(p) => {
            let value = path::get(doc, &path::split(p))
                .cloned()
                .unwrap_or(Bson::Null);
            doc! {p: value, "_id": id}
        }
        None => doc! {"_id": id},
    }
}

/// A document key's record: what follows the collection prefix (empty for a key without one).
pub fn record(key: &[u8]) -> &[u8] {
    keys::strip_collection_prefix(key).unwrap_or_default()
}

fn partition_components(meta: &CollectionMeta) -> Option<Vec<String>> {
    meta.partition_path().map(path::split)
}

#[cfg(test)]
#[path = "record_key_tests.rs"]
mod tests;
