//! Document writes inside a [`Txn`]: insert, replace and delete, each keeping the document, its
//! expiry key, its secondary index entries and the collection's counter (`counts`) consistent in
//! the same commit.
//!
//! Every lookup here goes through [`live`](crate::engine::exec::live): an expired document is neither
//! matched nor a duplicate; inserting its `_id`, or a unique key it holds, deletes it first
//! (TTL-19, through `expired`, which owns deleting expired documents).

use crate::engine::catalog::{CollectionMeta, IndexMeta};
use crate::engine::documents::entries::{remove_expiry_entry, remove_index_entries, size_delta};
use crate::engine::documents::index_keys;
use crate::engine::documents::new_document::NewDocument;
use crate::engine::documents::record::{Record, StoredDoc};
use crate::engine::documents::record_key::{self, IdKeys};
use crate::engine::documents::{expired, expiry};
use crate::engine::oplog::entries as oplog;
use crate::engine::writer::txn::Txn;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::MAX_BSON_OBJECT_SIZE;
use crate::query::depth;
use crate::query::path::render;
use crate::storage::keys::{self, Direction};
use crate::storage::Keyspace;
use bson::{doc, Bson, Document};

/// The visible document with `_id` `id`, if any, in a collection keyed by `_id` alone (the
/// server's own collections are).
pub fn get_by_id(
    txn: &Txn<'_>,
    meta: &CollectionMeta,
    id: &Bson,
    now: i64,
) -> Result<Option<StoredDoc>> {
    match record_key::of_id(meta, id) {
        IdKeys::Exact(key) => load_visible(txn, meta, key, now),
        IdKeys::Prefix(_) => Err(Error::internal(format!(
            "{} keeps an _id once per shard key value: look a document up by its documentKey",
            meta.namespace()
        ))),
    }
}

fn load_visible(
    txn: &Txn<'_>,
    meta: &CollectionMeta,
    key: Vec<u8>,
    now: i64,
) -> Result<Option<StoredDoc>> {
    let Some(bytes) = txn.get(Keyspace::Documents, &key)? else {
        return Ok(None);
    };
    let record = Record::decode(&bytes)?;
    if !crate::engine::exec::live::is_live(&record, &meta.ttl_model(), now) {
        return Ok(None);
    }
    let doc = record.document()?;
    Ok(Some(StoredDoc { key, record, doc }))
}

/// Visible documents of the collection, in `_id` order, as of this point in the group.
pub fn scan<'t>(
    txn: &'t Txn<'t>,
    meta: &'t CollectionMeta,
    prefix: &'t [u8],
    now: i64,
) -> impl Iterator<Item = Result<StoredDoc>> + 't {
    let ttl = meta.ttl_model();
    txn.scan_prefix(Keyspace::Documents, prefix)
        .filter_map(move |entry| {
            let result = entry.and_then(|(key, bytes)| {
                let record = Record::decode(&bytes)?;
                if !crate::engine::exec::live::is_live(&record, &ttl, now) {
                    return Ok(None);
                }
                let doc = record.document()?;
                Ok(Some(StoredDoc { key, record, doc }))
            });
            result.transpose()
        })
}

pub use crate::engine::documents::new_document::prepare_for_insert;

/// Whether the collection holds no stored document as of this point in the write (expired
/// ones not yet reaped count: they are still stored).
pub fn is_empty(txn: &Txn<'_>, meta: &CollectionMeta) -> Result<bool> {
    let prefix = keys::collection_prefix(meta.id);
    let first = txn.scan_prefix(Keyspace::Documents, &prefix).next();
    Ok(first.transpose()?.is_none())
}

/// Whether the collection holds a document visible at `now` as of this point in the write:
/// what `countDocuments` would count (TTL-18), where [`is_empty`] counts stored ones. The
/// walk stops at the first visible document; expired ones before it are the reaper's backlog.
pub fn has_visible(txn: &Txn<'_>, meta: &CollectionMeta, now: i64) -> Result<bool> {
    if is_empty(txn, meta)? {
        return Ok(false);
    }
    let prefix = keys::collection_prefix(meta.id);
    let model = meta.ttl_model();
    for entry in txn.scan_prefix(Keyspace::Documents, &prefix) {
        // The backlog is as long as the reaper is behind: each document is a unit of work.
        crate::query::guard::tick()?;
        let (_, bytes) = entry?;
        if crate::engine::exec::live::live_record(&bytes, &model, now)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Refuses a document body larger than a BSON document may be.
fn check_size(doc: &Document, body_len: usize) -> Result<()> {
    if body_len > MAX_BSON_OBJECT_SIZE {
        let _ = doc;
        return Err(Error::new(
            ErrorCode::BadValue,
            format!("object to insert too large. size in bytes: {body_len}, max size: {MAX_BSON_OBJECT_SIZE}"),
        ));
    }
    Ok(())
}

/// Takes each of `docs`' keys in `meta` (computed ahead, or now) and learns at once which of
/// them the collection does not hold yet ([`Txn::probe_documents`]), ahead of inserting the
/// documents one by one in the same group: a bulk insert's duplicate checks then cost one
/// ordered walk instead of a point read each. Each document keeps what was found
/// (`NewDocument::set_probed`).
pub fn probe_ids<'d>(
    txn: &Txn<'_>,
    meta: &CollectionMeta,
    docs: impl IntoIterator<Item = &'d mut NewDocument>,
) -> Result<()> {
    let mut docs: Vec<&mut NewDocument> = docs.into_iter().collect();
    // Each key with the position of its document, in key order (equal keys side by side). A
    // document without a storable key is left out: its own insert computes the key again and
    // fails alone, as a statement of the batch.
    let mut keyed: Vec<(Vec<u8>, usize)> = docs
        .iter_mut()
        .enumerate()
        .filter_map(|(at, new)| new.take_key(meta).ok().map(|key| (key, at)))
        .collect();
    keyed.sort_unstable();
    let mut unheld = vec![false; keyed.len()];
    // One key alone is read as cheaply as it is probed.
    if keyed.len() > 1 {
        let mut distinct: Vec<&[u8]> = keyed.iter().map(|(key, _)| key.as_slice()).collect();
        distinct.dedup();
        let mut absent = vec![false; distinct.len()];
        for position in txn.probe_documents(&distinct)? {
            if let Some(slot) = absent.get_mut(position) {
                *slot = true;
            }
        }
        // Each document's key is absent when its distinct key is.
        let mut position = 0;
        let mut previous: Option<&[u8]> = None;
        for (key, at) in &keyed {
            if previous.is_some_and(|before| before != key.as_slice()) {
                position += 1;
            }
            previous = Some(key);
            if absent.get(position).copied().unwrap_or(false) {
                if let Some(slot) = unheld.get_mut(*at) {
                    *slot = true;
                }
            }
        }
    }
    for (key, at) in keyed {
        if let Some(new) = docs.get_mut(at) {
            let unheld = unheld.get(at).copied().unwrap_or(false);
            new.set_probed(meta.id, key, unheld);
        }
    }
    Ok(())
}

/// Announces the insert of `docs` documents into one collection in this group, in `_id` order
/// as a driver numbers them: their records and expiry entries then go into room made for them
/// at once ([`Txn::reserve`]), not into lists that grow as they come.
pub fn expect_inserts(txn: &mut Txn<'_>, docs: usize) {
    txn.reserve(Keyspace::Documents, docs);
    txn.reserve(Keyspace::Expiry, docs);
}

/// Inserts `doc` (already prepared) written at `now`.
pub fn insert(txn: &mut Txn<'_>, meta: &CollectionMeta, doc: &Document, now: i64) -> Result<()> {
    insert_new(txn, meta, NewDocument::prepare(doc, true)?, now)
}

/// Inserts the prepared document `new`, written at `now`. The document is decoded only when
/// secondary indexes or the operation log need it.
pub fn insert_new(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    new: NewDocument,
    now: i64,
) -> Result<()> {
    insert_written_at(txn, meta, new, now, now)
}

/// Inserts the prepared document `new` as last modified at `ts` (its `_ts`, TTL-15; in a
/// transaction's statement the pending stamp, [`Txn::write_time`]), judging what is already
/// stored at `now`. Only a restore passes a `ts` other than `now`: it keeps each document's
/// `_ts`, and so the moment it expires.
pub fn insert_written_at(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    mut new: NewDocument,
    ts: i64,
    now: i64,
) -> Result<()> {
    let (key, unheld) = new.probed_key(meta)?;
    let size = new.body_len();
    let ignored_ttl = meta.ttl().is_none() && new.has_root_field(crate::ttl::TTL_FIELD);
    let mut replaced = None;
    if let Some(bytes) = txn.get_unless_unheld(Keyspace::Documents, &key, unheld)? {
        let old = Record::decode(&bytes)?;
        if crate::engine::exec::live::is_live(&old, &meta.ttl_model(), now) {
            return Err(duplicate_key(
                meta,
                "_id_",
                &doc! {"_id": 1},
                &doc! {"_id": new.id().clone()},
            ));
        }
        // TTL-19: the expired document's `_id` is free; remove what is left of it. The log
        // records its deletion, as the reaper would have.
        let old_doc = old.document()?;
        remove_entries(txn, meta, &key, &old, &old_doc);
        oplog::delete(txn, meta, &old_doc)?;
        replaced = Some(old.body.len());
    }
    let doc = if meta.stored_indexes().next().is_some() || oplog::logs(txn, meta) {
        Some(new.take_document()?)
    } else {
        None
    };
    let ts = txn.write_time(ts);
    let stored = Stored {
        ts,
        own_ttl: new.own_ttl(),
        bytes: new.into_record(ts),
    };
    // The key is needed again only to undo an overwrite of an expired record.
    let undo_key = replaced.map(|old| (key.clone(), old));
    if let Err(e) = add_entries(txn, meta, key, stored, doc.as_ref(), now) {
        if let Some((key, old)) = undo_key {
            // Its entries are gone: finish deleting the expired record (as the reaper would)
            // rather than leave a record that no expiry entry leads to.
            txn.delete(Keyspace::Documents, key);
            txn.count_change(meta.id, -1, size_delta(old, 0));
        }
        return Err(e);
    }
    if ignored_ttl {
        note_ignored_ttl(txn, meta);
    }
    // Overwriting an expired record leaves the number of stored documents as it was.
    match replaced {
        Some(old) => txn.count_change(meta.id, 0, size_delta(old, size)),
        None => txn.count_change(meta.id, 1, size_delta(0, size)),
    }
    match &doc {
        Some(doc) => oplog::insert(txn, meta, doc),
        None => Ok(()),
    }
}

/// A record's stored bytes with the header fields its expiry entry is made from.
struct Stored {
    bytes: Vec<u8>,
    ts: i64,
    own_ttl: Option<i32>,
}

impl Stored {
    fn of(record: &Record) -> Stored {
        Stored {
            bytes: record.encode(),
            ts: record.ts,
            own_ttl: record.own_ttl,
        }
    }
}

/// Updates the visible document `old` into `new` (same `_id`), written at `now` (TTL-15,
/// [`Txn::write_time`]); the operation log records the difference.
pub fn update(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    old: &StoredDoc,
    new: &Document,
    now: i64,
) -> Result<()> {
    rewrite(txn, meta, old, new, now)?;
    oplog::update(txn, meta, &old.doc, new)
}

/// Replaces the visible document `old` with `new` (same `_id`), written at `now` (TTL-15,
/// [`Txn::write_time`]); the operation log records the whole new document.
pub fn replace(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    old: &StoredDoc,
    new: &Document,
    now: i64,
) -> Result<()> {
    rewrite(txn, meta, old, new, now)?;
    oplog::replace(txn, meta, &old.doc, new)
}

fn rewrite(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    old: &StoredDoc,
    new: &Document,
    now: i64,
) -> Result<()> {
    let record = Record::new(txn.write_time(now), new)?;
    check_size(new, record.body.len())?;
    depth::check_storable(&record.body, depth::Write::Update)?;
    let size = size_delta(old.record.body.len(), record.body.len());
    let key = record_key::of_document(meta, new);
    if key != old.key {
        // Its shard-key value changed (which only a profile without the shard-key rules
        // lets through): the document moves to the key of its new value.
        free_for_move(txn, meta, &key, new, now)?;
        txn.delete(Keyspace::Documents, old.key.clone());
    }
    remove_entries(txn, meta, &old.key, &old.record, &old.doc);
    let stored = Stored::of(&record);
    if let Err(e) = add_entries(txn, meta, key, stored, Some(new), now) {
        // `add_entries` writes nothing when it fails; restore `old`'s entries (and record)
        // so a refused replace (e.g. a duplicate key) leaves the document exactly as it was.
        reindex(txn, meta, old, now)?;
        return Err(e);
    }
    txn.count_change(meta.id, 0, size);
    if meta.ttl().is_none() && new.contains_key(crate::ttl::TTL_FIELD) {
        note_ignored_ttl(txn, meta);
    }
    Ok(())
}

/// A document with a root `ttl` field was stored in a collection without a `_ts` TTL index,
/// where the field does nothing (TTL-10): the first such write logs it (`ttl_activity`).
fn note_ignored_ttl(txn: &Txn<'_>, meta: &CollectionMeta) {
    if let Some(activity) = txn.ttl_activity() {
        activity.note_ignored_ttl_field(meta);
    }
}

/// Makes `key` free for the document `new` to move to: fails with 11000 when a visible
/// document holds it, and deletes an expired one (TTL-19), as an insert does.
fn free_for_move(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    key: &[u8],
    new: &Document,
    now: i64,
) -> Result<()> {
    if load_visible(txn, meta, key.to_vec(), now)?.is_some() {
        let id = new.get("_id").cloned().unwrap_or(Bson::Null);
        return Err(duplicate_key(
            meta,
            "_id_",
            &doc! {"_id": 1},
            &doc! {"_id": id},
        ));
    }
    expired::delete_if_expired(txn, meta, key, now)?;
    Ok(())
}

/// The collection `db.name` as of this point in the group, without creating it (writes that
/// must not create a missing collection, e.g. an update without upsert).
pub fn existing_collection(
    txn: &Txn<'_>,
    db: &str,
    name: &str,
) -> Option<std::sync::Arc<CollectionMeta>> {
    txn.catalog.get(db, name).cloned()
}

/// Writes the index entries of the stored document `doc` under `meta`'s index list (used when
/// an index is added), keeping its `_ts`.
pub fn reindex(txn: &mut Txn<'_>, meta: &CollectionMeta, doc: &StoredDoc, now: i64) -> Result<()> {
    add_entries(
        txn,
        meta,
        doc.key.clone(),
        Stored::of(&doc.record),
        Some(&doc.doc),
        now,
    )
}

/// Deletes the visible document `old`.
pub fn delete(txn: &mut Txn<'_>, meta: &CollectionMeta, old: &StoredDoc) -> Result<()> {
    remove_entries(txn, meta, &old.key, &old.record, &old.doc);
    txn.delete(Keyspace::Documents, old.key.clone());
    txn.count_change(meta.id, -1, size_delta(old.record.body.len(), 0));
    oplog::delete(txn, meta, &old.doc)
}

/// Writes a document's record under `key`, its expiry entry and its secondary index entries
/// (`doc` is the document; it may be `None` only in a collection without secondary indexes).
fn add_entries(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    key: Vec<u8>,
    stored: Stored,
    doc: Option<&Document>,
    now: i64,
) -> Result<()> {
    let mut index_puts = Vec::new();
    let mut became_multikey = Vec::new();
    for index in meta.stored_indexes() {
        let doc = doc.ok_or_else(|| Error::internal("index keys asked for without a document"))?;
        let (entries, multikey) = entries_for(txn, meta, index, &key, doc, now)?;
        index_puts.extend(entries);
        if multikey && !index.multikey {
            became_multikey.push(index.id);
        }
    }
    // `meta` may be older than the catalog of this group: the flag is set on the current entry.
    for index_id in became_multikey {
        crate::engine::catalog_write::mark_multikey(txn, meta.id, index_id)?;
    }
    if !index_puts.is_empty() {
        let record = record_key::record(&key);
        for entry in index_puts {
            txn.put(Keyspace::Indexes, entry, record.to_vec());
        }
    }
    if let Some(expiry_key) = expiry::key_at(&key, stored.ts, stored.own_ttl) {
        let value = expiry::value_for_len(Record::body_len_of(&stored.bytes));
        txn.put(Keyspace::Expiry, expiry_key, value);
    }
    txn.put(Keyspace::Documents, key, stored.bytes);
    Ok(())
}

/// Writes the entries the stored document `doc` (under `key`) has in `index` alone, checking
/// the unique constraint, without touching the document (an index build). Returns whether
/// they make the index multikey; the caller records that in the catalog.
pub fn add_index_entries(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    index: &IndexMeta,
    key: &[u8],
    doc: &Document,
    now: i64,
) -> Result<bool> {
    let (entries, multikey) = entries_for(txn, meta, index, key, doc, now)?;
    let record = record_key::record(key);
    for entry in entries {
        txn.put(Keyspace::Indexes, entry, record.to_vec());
    }
    Ok(multikey)
}

/// The `Indexes` keys of `doc` (stored under `key`) in `index`, unique-checked against the
/// other documents, and whether they make the index multikey. Writes nothing, except deleting
/// an expired holder of a unique key (TTL-19).
fn entries_for(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    index: &IndexMeta,
    key: &[u8],
    doc: &Document,
    now: i64,
) -> Result<(Vec<Vec<u8>>, bool)> {
    let found = index_keys::keys(index, doc)?;
    let record = record_key::record(key);
    let mut entries = Vec::with_capacity(found.tuples.len());
    for tuple in &found.tuples {
        if index.unique {
            check_unique(txn, meta, index, tuple, key, now)?;
        }
        // Of any length: mongod 4.2+ bounds an index key only by the document's size.
        entries.push(keys::index_key(meta.id, index.id, tuple, record));
    }
    Ok((entries, found.multikey))
}

fn remove_entries(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    key: &[u8],
    record: &Record,
    doc: &Document,
) {
    remove_index_entries(txn, meta, key, doc);
    remove_expiry_entry(txn, key, record);
}

/// Fails with 11000 if a visible document other than the one stored under `own` holds `tuple`
/// in the unique `index`; an expired holder is deleted instead (TTL-19).
fn check_unique(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    index: &IndexMeta,
    tuple: &[(Bson, Direction)],
    own: &[u8],
    now: i64,
) -> Result<()> {
    let mut prefix = keys::index_prefix(meta.id, index.id);
    for (value, direction) in tuple {
        keys::encode_value_directed(value, *direction, &mut prefix);
    }
    txn.claim_unique(&prefix);
    let holders: Vec<Vec<u8>> = txn
        .scan_prefix(Keyspace::Indexes, &prefix)
        .map(|entry| {
            entry.map(|(_, record)| {
                let mut k = keys::collection_prefix(meta.id).to_vec();
                k.extend_from_slice(&record);
                k
            })
        })
        .collect::<Result<_>>()?;
    for holder in holders.into_iter().filter(|k| k != own) {
        if load_visible(txn, meta, holder.clone(), now)?.is_some() {
            let key_value = index_keys::key_value(index, tuple);
            return Err(duplicate_key(meta, &index.name, &index.key, &key_value));
        }
        expired::delete_if_expired(txn, meta, &holder, now)?;
    }
    Ok(())
}

/// mongod's duplicate-key error, with `keyPattern` and `keyValue`.
pub fn duplicate_key(
    meta: &CollectionMeta,
    index_name: &str,
    pattern: &Document,
    value: &Document,
) -> Error {
    let rendered: Vec<String> = value
        .iter()
        .map(|(k, v)| format!("{k}: {}", render(v)))
        .collect();
    Error::new(
        ErrorCode::DuplicateKey,
        format!(
            "E11000 duplicate key error collection: {} index: {index_name} dup key: {{ {} }}",
            meta.namespace(),
            rendered.join(", ")
        ),
    )
    .with_extra(doc! {"keyPattern": pattern.clone(), "keyValue": value.clone()})
}
