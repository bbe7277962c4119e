//! The layout rewrite: exact keys for ids of every length, a directory written by the earlier
//! layout read as before after a start, restarts, and refusals.

use super::*;
use crate::clock::ManualClock;
use crate::engine::catalog::IndexMeta;
use crate::engine::{ddl, documents::collection, documents::record_key, Engine};
use crate::storage::{FaultyBackend, FjallBackend, KeyValue, MemoryBackend, Store};
use bson::{doc, Bson};
use std::sync::Arc;

const REWRITTEN: [Keyspace; 3] = [Keyspace::Documents, Keyspace::Indexes, Keyspace::Expiry];

fn memory() -> Db {
    FaultyBackend::new(Store::Memory(MemoryBackend::new()))
}

fn entries<S: Snapshot>(snapshot: &S, keyspace: Keyspace) -> Vec<KeyValue> {
    snapshot
        .range(keyspace, Bound::Unbounded, Bound::Unbounded, false)
        .collect::<std::result::Result<_, _>>()
        .unwrap()
}

/// A current key as the earlier layout wrote it (the inverse of [`relaid`]).
fn layout_1(keyspace: Keyspace, key: &[u8]) -> Vec<u8> {
    let (collection_id, mut rest) = keys::split_id(key).unwrap();
    let mut old = collection_id.to_be_bytes().to_vec();
    if keyspace == Keyspace::Indexes {
        let (index_id, after) = keys::split_id(rest).unwrap();
        old.extend_from_slice(&index_id.to_be_bytes());
        rest = after;
    }
    old.extend_from_slice(rest);
    old
}

#[test]
fn each_key_gets_its_compact_ids_and_keeps_the_rest() {
    let backend = memory();
    let mut batch = WriteBatch::new();
    let id = Bson::Int32(4);
    for collection_id in [1u64, 247, 248, 300, 1 << 40] {
        let doc_key = keys::document_key(collection_id, &id);
        batch.put(
            Keyspace::Documents,
            layout_1(Keyspace::Documents, &doc_key),
            b"d".to_vec(),
        );
        let index_key = keys::index_key(collection_id, 70_000, &[], record_key::record(&doc_key));
        batch.put(
            Keyspace::Indexes,
            layout_1(Keyspace::Indexes, &index_key),
            b"i".to_vec(),
        );
        let expiry_key = crate::engine::documents::expiry::key_at(&doc_key, 9, None).unwrap();
        batch.put(
            Keyspace::Expiry,
            layout_1(Keyspace::Expiry, &expiry_key),
            b"e".to_vec(),
        );
    }
    backend.commit(batch, Durability::SyncData).unwrap();
    assert!(
        !is_current(&backend.snapshot()).unwrap(),
        "tools must not read it as it is"
    );
    assert_eq!(upgrade(&backend).unwrap(), 15);
    assert!(is_current(&backend.snapshot()).unwrap());
    let snapshot = backend.snapshot();
    for collection_id in [1u64, 247, 248, 300, 1 << 40] {
        let doc_key = keys::document_key(collection_id, &id);
        assert_eq!(
            snapshot.get(Keyspace::Documents, &doc_key).unwrap(),
            Some(b"d".to_vec())
        );
        let index_key = keys::index_key(collection_id, 70_000, &[], record_key::record(&doc_key));
        assert_eq!(
            snapshot.get(Keyspace::Indexes, &index_key).unwrap(),
            Some(b"i".to_vec())
        );
        let expiry_key = crate::engine::documents::expiry::key_at(&doc_key, 9, None).unwrap();
        assert_eq!(
            snapshot.get(Keyspace::Expiry, &expiry_key).unwrap(),
            Some(b"e".to_vec())
        );
    }
    for keyspace in REWRITTEN {
        assert_eq!(
            entries(&snapshot, keyspace).len(),
            5,
            "no layout-1 key is left"
        );
    }
    assert_eq!(recorded(&snapshot).unwrap(), Some(CURRENT));
    assert_eq!(
        upgrade(&backend).unwrap(),
        0,
        "a second start rewrites nothing"
    );
}

#[test]
fn a_rewrite_cut_short_goes_on_at_the_next_start() {
    let backend = memory();
    let mut batch = WriteBatch::new();
    for i in 0..(STEP_ENTRIES as i64 + 5) {
        let key = keys::document_key(3, &Bson::Int64(i));
        batch.put(
            Keyspace::Documents,
            layout_1(Keyspace::Documents, &key),
            vec![1],
        );
    }
    backend.commit(batch, Durability::SyncData).unwrap();
    // One step, then a "crash": the record is not written, half the keys are old.
    assert_eq!(
        step(&backend, Keyspace::Documents).unwrap(),
        STEP_ENTRIES as u64
    );
    assert_eq!(recorded(&backend.snapshot()).unwrap(), None);
    assert_eq!(upgrade(&backend).unwrap(), 5);
    let all = entries(&backend.snapshot(), Keyspace::Documents);
    assert_eq!(all.len(), STEP_ENTRIES + 5);
    assert!(all.iter().all(|(key, _)| key.first() == Some(&3)));
}

#[test]
fn a_new_directory_is_recorded_and_a_newer_layout_refused() {
    let backend = memory();
    assert!(
        is_current(&backend.snapshot()).unwrap(),
        "nothing to misread"
    );
    assert_eq!(upgrade(&backend).unwrap(), 0);
    assert_eq!(recorded(&backend.snapshot()).unwrap(), Some(CURRENT));
    let mut batch = WriteBatch::new();
    batch.put(Keyspace::Catalog, LAYOUT_KEY, 5u32.to_be_bytes().to_vec());
    backend.commit(batch, Durability::SyncData).unwrap();
    assert!(!is_current(&backend.snapshot()).unwrap());
    let err = upgrade(&backend).unwrap_err();
    assert!(err.message.contains("layout 5"), "{}", err.message);
}

/// Layouts 2 and 3 have this layout's keys: they are read as they are and only recorded anew.
#[test]
fn a_layout_2_or_3_directory_is_read_as_it_is_and_recorded_as_layout_4() {
    for layout in [LAYOUT_2, LAYOUT_3] {
        let backend = memory();
        let key = keys::document_key(3, &Bson::Int32(1));
        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Catalog, LAYOUT_KEY, layout.to_be_bytes().to_vec());
        batch.put(Keyspace::Documents, key.clone(), vec![1]);
        backend.commit(batch, Durability::SyncData).unwrap();
        assert!(is_current(&backend.snapshot()).unwrap());
        assert_eq!(upgrade(&backend).unwrap(), 0);
        let snapshot = backend.snapshot();
        assert_eq!(recorded(&snapshot).unwrap(), Some(4));
        assert_eq!(
            entries(&snapshot, Keyspace::Documents),
            vec![(key, vec![1])]
        );
    }
}

/// A directory the earlier layout wrote — documents, an index, expiry entries — opens with the
/// same entries under the new keys, its index consistent with its documents.
#[tokio::test]
async fn a_directory_in_the_earlier_layout_opens_and_reads_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Engine::open(dir.path(), Arc::new(ManualClock::starting_at_secs(1_000))).unwrap();
    let engine = open();
    engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
            for i in 0..300i64 {
                let doc = doc! {"_id": i, "a": i % 7, "ttl": if i % 2 == 0 { 60 } else { -1 }};
                collection::insert(txn, &meta, &doc, now).unwrap();
            }
            ddl::create_index(txn, &meta, IndexMeta::new("a_1", doc! {"a": 1}), now).unwrap();
        })
        .await
        .unwrap();
    let before: Vec<Vec<KeyValue>> = REWRITTEN
        .iter()
        .map(|keyspace| entries(&engine.reader().latest_snapshot(), *keyspace))
        .collect();
    assert!(before.iter().all(|e| !e.is_empty()));
    drop(engine);
    {
        let backend = FjallBackend::open(dir.path()).unwrap();
        let mut batch = WriteBatch::new();
        for (keyspace, entries) in REWRITTEN.iter().zip(&before) {
            for (key, value) in entries {
                batch.delete(*keyspace, key.clone());
                batch.put(*keyspace, layout_1(*keyspace, key), value.clone());
            }
        }
        batch.delete(Keyspace::Catalog, LAYOUT_KEY);
        backend.commit(batch, Durability::SyncData).unwrap();
    }
    // A layout-1 directory predates the marker of an initialised directory.
    std::fs::remove_file(dir.path().join(crate::storage::integrity::MARKER)).unwrap();
    let engine = open();
    let after: Vec<Vec<KeyValue>> = REWRITTEN
        .iter()
        .map(|keyspace| entries(&engine.reader().latest_snapshot(), *keyspace))
        .collect();
    assert_eq!(after, before);
    assert!(engine
        .check_index("db", "c", "a_1")
        .unwrap()
        .is_consistent());
    assert_eq!(engine.index_entry_count("db", "c").unwrap(), 300);
}

/// A directory marked initialised whose catalog lost the layout record is refused, not opened
/// as a new one with its collections forgotten.
#[test]
fn a_marked_directory_without_its_layout_record_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Engine::open(dir.path(), Arc::new(ManualClock::starting_at_secs(1_000)));
    drop(open().unwrap());
    {
        let backend = FjallBackend::open(dir.path()).unwrap();
        let mut batch = WriteBatch::new();
        batch.delete(Keyspace::Catalog, LAYOUT_KEY);
        backend.commit(batch, Durability::SyncData).unwrap();
    }
    let refused = open().err().expect("refused");
    assert!(
        refused.message.contains("catalog has lost its records"),
        "{}",
        refused.message
    );
}
