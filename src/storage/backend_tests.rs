//! Tests of both backends through the storage traits only: every test but the last runs on
//! fjall and on memory alike.

use super::*;

/// Both backends, each with the directory it lives in (none for memory).
fn backends() -> Vec<(Option<tempfile::TempDir>, Store)> {
    let dir = tempfile::tempdir().unwrap();
    let fjall = Store::Fjall(FjallBackend::open(&dir.path().join("db")).unwrap());
    vec![
        (Some(dir), fjall),
        (None, Store::Memory(MemoryBackend::new())),
    ]
}

fn put<B: Backend>(backend: &B, keyspace: Keyspace, key: &[u8], value: &[u8]) {
    let mut batch = WriteBatch::new();
    batch.put(keyspace, key, value);
    backend.commit(batch, Durability::Buffered).unwrap();
}

fn collect(iter: impl Iterator<Item = Result<KeyValue, StorageError>>) -> Vec<KeyValue> {
    iter.map(Result::unwrap).collect()
}

fn keys(iter: impl Iterator<Item = Result<KeyValue, StorageError>>) -> Vec<Vec<u8>> {
    collect(iter).into_iter().map(|(k, _)| k).collect()
}

#[test]
fn put_get_delete() {
    for (_dir, backend) in backends() {
        put(&backend, Keyspace::Documents, b"k", b"v1");
        assert_eq!(
            backend.snapshot().get(Keyspace::Documents, b"k").unwrap(),
            Some(b"v1".to_vec())
        );
        // Keyspaces are separate.
        assert_eq!(
            backend.snapshot().get(Keyspace::Indexes, b"k").unwrap(),
            None
        );

        put(&backend, Keyspace::Documents, b"k", b"v2");
        assert_eq!(
            backend.snapshot().get(Keyspace::Documents, b"k").unwrap(),
            Some(b"v2".to_vec())
        );

        let mut batch = WriteBatch::new();
        batch.delete(Keyspace::Documents, b"k");
        backend.commit(batch, Durability::Buffered).unwrap();
        assert_eq!(
            backend.snapshot().get(Keyspace::Documents, b"k").unwrap(),
            None
        );
    }
}

#[test]
fn batch_is_atomic_across_keyspaces_and_later_ops_win() {
    for (_dir, backend) in backends() {
        put(&backend, Keyspace::Expiry, b"old", b"x");
        let before = backend.snapshot();

        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Catalog, b"c", b"1");
        batch.put(Keyspace::Documents, b"d", b"1");
        batch.put(Keyspace::Indexes, b"i", b"1");
        batch.delete(Keyspace::Expiry, b"old");
        batch.put(Keyspace::Documents, b"d", b"2");
        batch.put(Keyspace::Indexes, b"gone", b"1");
        batch.delete(Keyspace::Indexes, b"gone");
        backend.commit(batch, Durability::SyncData).unwrap();

        let after = backend.snapshot();
        assert_eq!(
            after.get(Keyspace::Catalog, b"c").unwrap(),
            Some(b"1".to_vec())
        );
        assert_eq!(
            after.get(Keyspace::Documents, b"d").unwrap(),
            Some(b"2".to_vec())
        );
        assert_eq!(
            after.get(Keyspace::Indexes, b"i").unwrap(),
            Some(b"1".to_vec())
        );
        assert_eq!(after.get(Keyspace::Indexes, b"gone").unwrap(), None);
        assert_eq!(after.get(Keyspace::Expiry, b"old").unwrap(), None);

        // A snapshot from before sees none of the batch.
        assert_eq!(before.get(Keyspace::Catalog, b"c").unwrap(), None);
        assert_eq!(before.get(Keyspace::Documents, b"d").unwrap(), None);
        assert_eq!(
            before.get(Keyspace::Expiry, b"old").unwrap(),
            Some(b"x".to_vec())
        );

        backend
            .commit(WriteBatch::new(), Durability::SyncData)
            .unwrap();
    }
}

#[test]
fn snapshot_does_not_see_later_writes() {
    for (_dir, backend) in backends() {
        put(&backend, Keyspace::Documents, b"a", b"1");
        let snapshot = backend.snapshot();
        let iter = snapshot.range(
            Keyspace::Documents,
            Bound::Unbounded,
            Bound::Unbounded,
            false,
        );

        put(&backend, Keyspace::Documents, b"a", b"2");
        put(&backend, Keyspace::Documents, b"b", b"1");
        let mut batch = WriteBatch::new();
        batch.delete(Keyspace::Documents, b"a");
        backend.commit(batch, Durability::Buffered).unwrap();

        assert_eq!(
            snapshot.get(Keyspace::Documents, b"a").unwrap(),
            Some(b"1".to_vec())
        );
        assert_eq!(snapshot.get(Keyspace::Documents, b"b").unwrap(), None);
        // An iterator created before the writes, and one created after, both see the snapshot.
        assert_eq!(collect(iter), vec![(b"a".to_vec(), b"1".to_vec())]);
        let clone = snapshot.clone();
        drop(snapshot);
        assert_eq!(
            keys(clone.prefix(Keyspace::Documents, b"", false)),
            vec![b"a".to_vec()]
        );
        // The latest state.
        assert_eq!(
            keys(backend.snapshot().prefix(Keyspace::Documents, b"", false)),
            vec![b"b".to_vec()]
        );
    }
}

#[test]
fn iterator_outlives_its_snapshot_handle_and_crosses_threads() {
    for (_dir, backend) in backends() {
        put(&backend, Keyspace::Documents, b"a", b"1");
        let iter = backend.snapshot().range(
            Keyspace::Documents,
            Bound::Unbounded,
            Bound::Unbounded,
            false,
        );
        put(&backend, Keyspace::Documents, b"b", b"1");
        let found = std::thread::spawn(move || keys(iter)).join().unwrap();
        assert_eq!(found, vec![b"a".to_vec()]);
    }
}

#[test]
fn range_forward_and_reverse_with_bounds() {
    for (_dir, backend) in backends() {
        let mut batch = WriteBatch::new();
        for key in [b"a", b"b", b"c", b"d", b"e"] {
            batch.put(Keyspace::Indexes, key.as_slice(), key.as_slice());
        }
        batch.put(Keyspace::Documents, b"c", b"other keyspace");
        backend.commit(batch, Durability::Buffered).unwrap();
        let snap = backend.snapshot();
        let range = |start: Bound<&[u8]>, end: Bound<&[u8]>, reverse| {
            keys(snap.range(Keyspace::Indexes, start, end, reverse))
                .into_iter()
                .map(|k| String::from_utf8(k).unwrap())
                .collect::<Vec<_>>()
                .concat()
        };
        use Bound::{Excluded as Ex, Included as In, Unbounded as Un};
        assert_eq!(range(Un, Un, false), "abcde");
        assert_eq!(range(Un, Un, true), "edcba");
        assert_eq!(range(In(b"b"), In(b"d"), false), "bcd");
        assert_eq!(range(In(b"b"), In(b"d"), true), "dcb");
        assert_eq!(range(Ex(b"b"), Ex(b"d"), false), "c");
        assert_eq!(range(Ex(b"b"), Ex(b"d"), true), "c");
        assert_eq!(range(In(b"bb"), Un, false), "cde");
        assert_eq!(range(Un, Ex(b"c"), true), "ba");
        // Empty and inverted ranges.
        assert_eq!(range(Ex(b"c"), Ex(b"c"), false), "");
        assert_eq!(range(In(b"c"), Ex(b"c"), false), "");
        assert_eq!(range(In(b"d"), In(b"b"), true), "");
        assert_eq!(range(In(b"c"), In(b"c"), true), "c");
    }
}

#[test]
fn prefix_scans_stop_at_the_prefix() {
    for (_dir, backend) in backends() {
        let mut batch = WriteBatch::new();
        for key in [
            &b"\x01\xff"[..],
            b"\x02",
            b"\x02\x00",
            b"\x02\xff\xff",
            b"\x03",
        ] {
            batch.put(Keyspace::Documents, key, b"");
        }
        backend.commit(batch, Durability::Buffered).unwrap();
        let snap = backend.snapshot();
        let expected = vec![
            b"\x02".to_vec(),
            b"\x02\x00".to_vec(),
            b"\x02\xff\xff".to_vec(),
        ];
        assert_eq!(
            keys(snap.prefix(Keyspace::Documents, b"\x02", false)),
            expected
        );
        let reversed: Vec<_> = expected.into_iter().rev().collect();
        assert_eq!(
            keys(snap.prefix(Keyspace::Documents, b"\x02", true)),
            reversed
        );
        assert_eq!(
            keys(snap.prefix(Keyspace::Documents, b"\x01\xff", false)).len(),
            1
        );
    }
}

/// Keys past fjall's 65,535 bytes are stored, read and ranged over like any other, in key
/// order with the keys around them (the full property test: `long_keys_tests`).
#[test]
fn keys_of_any_length_are_stored_in_order() {
    for (_dir, backend) in backends() {
        let short = vec![b'x'; 10];
        let max = vec![b'x'; u16::MAX as usize];
        let mut long = vec![b'x'; 70_000];
        let mut longer = long.clone();
        long.push(b'a');
        longer.push(b'b');
        let mut batch = WriteBatch::new();
        for key in [&longer, &short, &long, &max] {
            batch.put(Keyspace::Documents, key.clone(), key.len().to_string());
        }
        batch.put(Keyspace::Documents, b"y", b"y");
        backend.commit(batch, Durability::Buffered).unwrap();
        let snap = backend.snapshot();
        assert_eq!(
            snap.get(Keyspace::Documents, &long).unwrap(),
            Some(b"70001".to_vec())
        );
        let all = keys(snap.range(
            Keyspace::Documents,
            Bound::Unbounded,
            Bound::Unbounded,
            false,
        ));
        let want = vec![short, max, long.clone(), longer.clone(), b"y".to_vec()];
        assert_eq!(all, want);
        let from_long = keys(snap.range(
            Keyspace::Documents,
            Bound::Excluded(&long),
            Bound::Unbounded,
            true,
        ));
        assert_eq!(from_long, vec![b"y".to_vec(), longer.clone()]);
        let mut batch = WriteBatch::new();
        batch.delete(Keyspace::Documents, longer.clone());
        backend.commit(batch, Durability::Buffered).unwrap();
        assert_eq!(
            backend
                .snapshot()
                .get(Keyspace::Documents, &longer)
                .unwrap(),
            None
        );
    }
}

#[test]
fn reopen_sees_committed_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let backend = FjallBackend::open(&path).unwrap();
        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Catalog, b"collection", b"meta");
        batch.put(Keyspace::Documents, b"durable", b"1");
        backend.commit(batch, Durability::SyncData).unwrap();
        put(&backend, Keyspace::Documents, b"buffered", b"2");
        backend.persist(Durability::SyncData).unwrap();
    }
    let backend = FjallBackend::open(&path).unwrap();
    let snap = backend.snapshot();
    assert_eq!(
        snap.get(Keyspace::Catalog, b"collection").unwrap(),
        Some(b"meta".to_vec())
    );
    assert_eq!(
        snap.get(Keyspace::Documents, b"durable").unwrap(),
        Some(b"1".to_vec())
    );
    assert_eq!(
        snap.get(Keyspace::Documents, b"buffered").unwrap(),
        Some(b"2".to_vec())
    );
    assert!(backend.disk_space().unwrap() > 0);
}

#[test]
fn empty_keys_are_refused_and_empty_bounds_are_no_keys() {
    for (_dir, backend) in backends() {
        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Documents, b"fine", b"1");
        batch.delete(Keyspace::Documents, b"");
        let refused = backend.commit(batch, Durability::Buffered);
        assert!(matches!(refused, Err(StorageError::EmptyKey)));
        put(&backend, Keyspace::Documents, b"a", b"1");
        let snap = backend.snapshot();
        assert_eq!(snap.get(Keyspace::Documents, b"fine").unwrap(), None);
        assert_eq!(snap.get(Keyspace::Documents, b"").unwrap(), None);
        let all = |start: Bound<&[u8]>, end: Bound<&[u8]>| {
            keys(snap.range(Keyspace::Documents, start, end, false)).len()
        };
        assert_eq!(all(Bound::Included(b""), Bound::Unbounded), 1);
        assert_eq!(all(Bound::Excluded(b""), Bound::Unbounded), 1);
        assert_eq!(all(Bound::Unbounded, Bound::Included(b"")), 0);
        assert_eq!(all(Bound::Unbounded, Bound::Excluded(b"")), 0);
    }
}
