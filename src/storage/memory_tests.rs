//! Tests of the in-memory backend's own concerns: point-in-time snapshots and the pruning of
//! versions no snapshot can see. (Reads and scans are checked against a model, on both
//! backends, by the transaction tests in `engine::txn`.)

use super::*;

fn put(backend: &MemoryBackend, key: &[u8], value: &[u8]) {
    let mut batch = WriteBatch::new();
    batch.put(Keyspace::Documents, key, value);
    backend.commit(batch, Durability::SyncData).unwrap();
}

fn delete(backend: &MemoryBackend, key: &[u8]) {
    let mut batch = WriteBatch::new();
    batch.delete(Keyspace::Documents, key);
    backend.commit(batch, Durability::SyncData).unwrap();
}

#[test]
fn a_snapshot_keeps_its_versions_until_dropped() {
    let backend = MemoryBackend::new();
    put(&backend, b"k", b"v1");
    let old = backend.snapshot();
    let iter = old.range(
        Keyspace::Documents,
        Bound::Unbounded,
        Bound::Unbounded,
        false,
    );
    put(&backend, b"k", b"v2");
    delete(&backend, b"k");
    assert_eq!(
        old.get(Keyspace::Documents, b"k").unwrap(),
        Some(b"v1".to_vec())
    );
    assert_eq!(
        backend.snapshot().get(Keyspace::Documents, b"k").unwrap(),
        None
    );
    // v1 (pinned) and the tombstone are kept; v2 is seen by no snapshot.
    assert_eq!(backend.version_count(Keyspace::Documents, b"k"), 2);
    drop(old);
    // The iterator holds the snapshot too.
    let rows: Vec<_> = iter.map(Result::unwrap).collect();
    assert_eq!(rows, vec![(b"k".to_vec(), b"v1".to_vec())]);
    put(&backend, b"other", b"x");
    // Nothing pins v1 any more: the sweep removes the key altogether.
    assert_eq!(backend.version_count(Keyspace::Documents, b"k"), 0);
}

#[test]
fn a_batch_is_atomic_and_its_later_operation_wins() {
    let backend = MemoryBackend::new();
    let mut batch = WriteBatch::new();
    batch.put(Keyspace::Documents, b"a".to_vec(), b"1".to_vec());
    batch.put(Keyspace::Indexes, b"a".to_vec(), b"i".to_vec());
    batch.delete(Keyspace::Documents, b"a".to_vec());
    batch.put(Keyspace::Documents, b"b".to_vec(), b"2".to_vec());
    batch.put(Keyspace::Documents, b"b".to_vec(), b"3".to_vec());
    let before = backend.snapshot();
    backend.commit(batch, Durability::Buffered).unwrap();
    let after = backend.snapshot();
    assert_eq!(after.get(Keyspace::Documents, b"a").unwrap(), None);
    assert_eq!(
        after.get(Keyspace::Indexes, b"a").unwrap(),
        Some(b"i".to_vec())
    );
    assert_eq!(
        after.get(Keyspace::Documents, b"b").unwrap(),
        Some(b"3".to_vec())
    );
    assert_eq!(before.get(Keyspace::Indexes, b"a").unwrap(), None);
}

#[test]
fn inverted_ranges_are_empty() {
    let backend = MemoryBackend::new();
    put(&backend, b"m", b"v");
    let snap = backend.snapshot();
    let inverted = snap.range(
        Keyspace::Documents,
        Bound::Included(b"z"),
        Bound::Included(b"a"),
        false,
    );
    assert_eq!(inverted.count(), 0);
    let touching = snap.range(
        Keyspace::Documents,
        Bound::Excluded(b"m"),
        Bound::Excluded(b"m"),
        true,
    );
    assert_eq!(touching.count(), 0);
}

#[test]
fn a_store_at_its_limit_refuses_values_but_not_deletions_and_reclaims_unread_versions() {
    let backend = MemoryBackend::with_limit(10_000);
    let value = vec![7u8; 1_000];
    let mut stored = 0u32;
    let refused = loop {
        let mut batch = WriteBatch::new();
        batch.put(
            Keyspace::Documents,
            stored.to_be_bytes().to_vec(),
            value.clone(),
        );
        match backend.commit(batch, Durability::SyncData) {
            Ok(()) => stored += 1,
            Err(e) => break e,
        }
    };
    assert!(refused.is_out_of_space(), "{refused}");
    assert!(
        (8..=10).contains(&stored),
        "{stored} values of 1,000 bytes in 10,000"
    );
    // What the store counts is what it holds.
    let held = backend.shared.data.read().unwrap().held;
    assert_eq!(held, backend.bytes_held());

    // A snapshot pins what it reads: deleting under it frees nothing until it goes.
    let pinned = backend.snapshot();
    delete(&backend, &0u32.to_be_bytes());
    delete(&backend, &1u32.to_be_bytes());
    let mut batch = WriteBatch::new();
    batch.put(Keyspace::Documents, b"new".to_vec(), value.clone());
    assert!(backend.commit(batch.clone(), Durability::SyncData).is_err());
    drop(pinned);
    // The versions no one reads now are reclaimed before the store would refuse.
    backend.commit(batch, Durability::SyncData).unwrap();
    let held = backend.shared.data.read().unwrap().held;
    assert_eq!(held, backend.bytes_held());
    assert!(held <= 10_000);
}
