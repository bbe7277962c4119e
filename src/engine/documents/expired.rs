//! Deleting documents that are expired (TTL-19, TTL-20, TTL-27): the reaper's batches, and a
//! write that finds an expired document holding the `_id` or unique key it needs.
//!
//! Each deletion re-judges the stored record under every TTL model of the collection at delete
//! time, so a document rewritten since it was found due survives. Deleting a document removes
//! its secondary index entries, which are computed from the indexed root fields alone
//! (`index_keys::root_fields`): the rest of the body is not decoded, unless the operation log
//! records the whole document.
//!
//! Owns: the re-check, what of a record is decoded to delete it, and reading a reaper batch's
//! records in one ordered walk (`Txn::get_documents`). Does not own: finding due documents
//! (`reaper`, `expiry`, `date_expiry`), the entries' layout (`collection`, `index_keys`), or the
//! expiry rule (`exec::live`, `ttl`).

use crate::engine::catalog::CollectionMeta;
use crate::engine::documents::record::Record;
use crate::engine::documents::{entries, expiry, index_keys};
use crate::engine::oplog::entries as oplog;
use crate::engine::writer::txn::Txn;
use crate::error::Result;
use crate::storage::Keyspace;
use crate::ttl::TtlModel;

/// What deleting an expired document of one collection needs, worked out once per batch.
pub struct Judge {
    model: TtlModel,
    /// The root fields the secondary indexes' entries are computed from; empty without them.
    roots: Vec<String>,
    indexed: bool,
}

impl Judge {
    pub fn of(meta: &CollectionMeta) -> Judge {
        Judge {
            model: meta.ttl_model(),
            roots: index_keys::root_fields(meta.stored_indexes()),
            indexed: meta.stored_indexes().next().is_some(),
        }
    }
}

/// Deletes whatever is stored under `key` if it is still expired at `now` (the re-check at
/// delete time, TTL-20). Returns whether it deleted.
pub fn delete_if_expired(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    key: &[u8],
    now: i64,
) -> Result<bool> {
    let Some(bytes) = txn.get(Keyspace::Documents, key)? else {
        return Ok(false);
    };
    delete_read_if_expired(txn, meta, &Judge::of(meta), key, bytes, now)
}

/// Deletes, of the documents stored under `keys` (in any order, repeats allowed), those still
/// expired at `now`, reading their records with one ordered walk: the documents a batch of due
/// entries leads to were mostly written together, so their keys are mostly adjacent. Returns
/// how many it deleted.
pub fn delete_batch(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    mut keys: Vec<Vec<u8>>,
    now: i64,
) -> Result<u64> {
    keys.sort_unstable();
    keys.dedup();
    // Deleting one document writes only its own keys, so records read before any deletion
    // are what each deletion would read.
    let records = txn.get_documents(&keys)?;
    let judge = Judge::of(meta);
    let mut deleted = 0;
    for (key, bytes) in keys.iter().zip(records) {
        if let Some(bytes) = bytes {
            if delete_read_if_expired(txn, meta, &judge, key, bytes, now)? {
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}

/// [`delete_if_expired`] of the record `bytes` the caller read under `key` in this group.
fn delete_read_if_expired(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    judge: &Judge,
    key: &[u8],
    bytes: Vec<u8>,
    now: i64,
) -> Result<bool> {
    let record = Record::decode_owned(bytes)?;
    if crate::engine::exec::live::is_live(&record, &judge.model, now) {
        return Ok(false);
    }
    let logged = oplog::logs(txn, meta);
    if logged {
        let doc = record.document()?;
        entries::remove_index_entries(txn, meta, key, &doc);
        remove_record(txn, meta, key, &record);
        return oplog::delete(txn, meta, &doc).map(|()| true);
    }
    if judge.indexed {
        let fields = record.fields(&judge.roots)?;
        entries::remove_index_entries(txn, meta, key, &fields);
    }
    remove_record(txn, meta, key, &record);
    Ok(true)
}

/// Deletes the record under `key`, its expiry entry, and counts it.
fn remove_record(txn: &mut Txn<'_>, meta: &CollectionMeta, key: &[u8], record: &Record) {
    entries::remove_expiry_entry(txn, key, record);
    txn.delete(Keyspace::Documents, key.to_vec());
    txn.count_change(meta.id, -1, entries::size_delta(record.body.len(), 0));
}

/// Deletes the document behind `expiry_key`, an entry the caller found in its collection's due
/// expiry range in this same group (the reaper, TTL-20). An expiry entry exists exactly while
/// its document is stored with that expiry time (every write that changes `_ts` replaces the
/// entry), so finding it due is the re-check at delete time. Without secondary indexes the
/// document is not even read: the entry's value (`expiry_value`) holds its size, for the
/// collection's counter. Returns whether a document was deleted.
pub fn delete_due(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    expiry_key: &[u8],
    expiry_value: &[u8],
    now: i64,
) -> Result<bool> {
    let Some(doc_key) = expiry::document_key_of(expiry_key) else {
        return Ok(false);
    };
    let size = match expiry::body_len_of(expiry_value) {
        Some(size) if meta.stored_indexes().next().is_none() && !txn.logs_operations() => size,
        // An entry from before entries carried the size, secondary indexes to clean up, or a
        // delete to log with its `_id`.
        _ => return delete_if_expired(txn, meta, &doc_key, now),
    };
    txn.delete(Keyspace::Documents, doc_key);
    txn.delete(Keyspace::Expiry, expiry_key.to_vec());
    txn.count_change(meta.id, -1, -i64::try_from(size).unwrap_or(i64::MAX));
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::engine::catalog::IndexMeta;
    use crate::engine::documents::collection;
    use crate::engine::documents::{counts, validate};
    use crate::engine::oplog::state as oplog_state;
    use crate::engine::{ddl, Engine};
    use crate::storage::keys::document_key;
    use crate::storage::{Backend, Snapshot};
    use bson::{doc, Bson, DateTime, Document};
    use std::sync::Arc;

    const T: i64 = 1_000_000;

    fn at(seconds: i64) -> Bson {
        Bson::DateTime(DateTime::from_millis((T + seconds) * 1000))
    }

    /// A batch deletes exactly the documents expired at delete time (TTL-26: an array by its
    /// earliest date, a missing or non-date field never), with every index entry they had in
    /// a date TTL index, a multikey dotted index and a compound one, whatever the order and
    /// repeats of the keys it is given, and logs each deletion when the log is kept.
    #[tokio::test]
    async fn a_batch_deletes_exactly_the_expired_documents_and_all_their_entries() {
        // (_id, document beyond _id, expired at T under `at` + 10 s)
        let cases: Vec<(i32, Document, bool)> = vec![
            (1, doc! {"at": at(-20), "n": 1}, true),
            (2, doc! {"at": at(100), "n": 2}, false),
            (3, doc! {"at": [at(100), at(-50)], "n": 3}, true),
            (4, doc! {"tags": [{"k": 1}, {"k": 2}]}, false),
            (5, doc! {"at": "yesterday", "tags": {"k": 5}}, false),
            (
                6,
                doc! {"pad": "x".repeat(500), "at": at(-11), "tags": [{"k": 3}]},
                true,
            ),
            (7, doc! {"at": at(-10), "n": [7, 8]}, true),
            (8, doc! {"at": at(-9)}, false),
            (9, doc! {"at": [], "n": 9}, false),
        ];
        for logged in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let clock = Arc::new(ManualClock::starting_at_secs(T));
            let engine = Engine::open(dir.path(), clock.clone()).unwrap();
            engine.reaper.pause();
            if logged {
                engine.enable_oplog(64 * 1024 * 1024).unwrap();
            }
            let docs = cases.clone();
            let (_, deleted) = engine
                .write(true, move |txn, now| {
                    let (mut meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
                    for index in [
                        IndexMeta {
                            expire_after_seconds: Some(10),
                            ..IndexMeta::new("at_1", doc! {"at": 1})
                        },
                        IndexMeta::new("tags.k_1", doc! {"tags.k": 1}),
                        IndexMeta::new("n_1_at_-1", doc! {"n": 1, "at": -1}),
                    ] {
                        meta = ddl::create_index(txn, &meta, index, now).unwrap();
                    }
                    for (id, body, _) in &docs {
                        let mut d = doc! {"_id": *id};
                        d.extend(body.clone());
                        collection::insert(txn, &meta, &d, now).unwrap();
                    }
                    // Keys out of order, repeated, and one of no document.
                    let mut keys: Vec<Vec<u8>> = (0..=10)
                        .rev()
                        .map(|id| document_key(meta.id, &Bson::Int32(id)))
                        .collect();
                    keys.push(document_key(meta.id, &Bson::Int32(3)));
                    let deleted = delete_batch(txn, &meta, keys, now).unwrap();
                    (meta, deleted)
                })
                .await
                .unwrap();
            let expired: Vec<i32> = cases.iter().filter(|c| c.2).map(|c| c.0).collect();
            assert_eq!(deleted, expired.len() as u64, "logged {logged}");
            let meta = engine.catalog().unwrap().get("db", "c").cloned().unwrap();
            let snapshot = engine.backend.snapshot();
            let findings = validate::validate(&snapshot, &meta, &Default::default()).unwrap();
            assert!(findings.valid(), "logged {logged}: {findings:?}");
            for (id, _, gone) in &cases {
                let key = document_key(meta.id, &Bson::Int32(*id));
                let held = snapshot.get(Keyspace::Documents, &key).unwrap().is_some();
                assert_eq!(held, !gone, "logged {logged} _id {id}");
            }
            let totals = counts::stored(&snapshot, meta.id).unwrap().unwrap();
            assert_eq!(totals.count, (cases.len() - expired.len()) as u64);
            let logged_deletes: Vec<Bson> = oplog_state::entries_after(&snapshot, None)
                .map(|e| e.unwrap().1)
                .filter(|e| e.get_str("op") == Ok("d"))
                .filter_map(|e| e.get_document("o").ok()?.get("_id").cloned())
                .collect();
            let want: Vec<Bson> = if logged {
                expired.iter().map(|id| Bson::Int32(*id)).collect()
            } else {
                Vec::new()
            };
            assert_eq!(logged_deletes, want, "logged {logged}");
        }
    }
}
