//! Model-based tests of the transaction overlay on both storage backends: random sequences of
//! puts, deletes, lookups, range scans (forward and backward), prefix scans, commits and
//! snapshot reads give what a plain `BTreeMap` model gives.

use super::*;
use crate::storage::{Backend, Durability, FjallBackend, MemoryBackend, Store, StoreSnapshot};
use proptest::prelude::*;

/// The keyspaces the model covers (two are enough to catch keyspaces bleeding into each other).
const KEYSPACES: [Keyspace; 2] = [Keyspace::Documents, Keyspace::Indexes];

type Model = [BTreeMap<Vec<u8>, Vec<u8>>; 2];

#[derive(Debug, Clone)]
enum Op {
    Put(usize, Vec<u8>, Vec<u8>),
    Delete(usize, Vec<u8>),
    Get(usize, Vec<u8>),
    Range(usize, Bound<Vec<u8>>, Bound<Vec<u8>>, bool),
    Prefix(usize, Vec<u8>),
    ScanRange(usize, Vec<u8>, Vec<u8>),
    Commit,
    TakeSnapshot,
    SnapshotRange(usize, usize, Bound<Vec<u8>>, Bound<Vec<u8>>, bool),
    SnapshotGet(usize, usize, Vec<u8>),
    /// `Txn::probe_documents` of these keys, and a read of each with what it found (a hint
    /// that must never change what reads give); then `Txn::get_documents` of them.
    Probe(Vec<Vec<u8>>),
}

/// Short keys over a small alphabet, so operations collide and prefixes nest. Stored keys are
/// never empty (backends refuse them); bounds and lookups may be.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 0xff]), 1..4)
}

fn probe() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 0xff]), 0..4)
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        probe().prop_map(Bound::Included),
        probe().prop_map(Bound::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let ks = 0..KEYSPACES.len();
    prop_oneof![
        6 => (ks.clone(), key(), prop::collection::vec(any::<u8>(), 0..3))
            .prop_map(|(s, k, v)| Op::Put(s, k, v)),
        3 => (ks.clone(), key()).prop_map(|(s, k)| Op::Delete(s, k)),
        2 => (ks.clone(), probe()).prop_map(|(s, k)| Op::Get(s, k)),
        3 => (ks.clone(), bound(), bound(), any::<bool>())
            .prop_map(|(s, a, b, r)| Op::Range(s, a, b, r)),
        1 => (ks.clone(), probe()).prop_map(|(s, k)| Op::Prefix(s, k)),
        1 => (ks.clone(), probe(), probe()).prop_map(|(s, a, b)| Op::ScanRange(s, a, b)),
        2 => Just(Op::Commit),
        1 => Just(Op::TakeSnapshot),
        2 => (any::<usize>(), ks.clone(), bound(), bound(), any::<bool>())
            .prop_map(|(i, s, a, b, r)| Op::SnapshotRange(i, s, a, b, r)),
        1 => (any::<usize>(), ks, probe()).prop_map(|(i, s, k)| Op::SnapshotGet(i, s, k)),
        2 => prop::collection::vec(key(), 0..6).prop_map(Op::Probe),
    ]
}

fn model_range(
    map: &BTreeMap<Vec<u8>, Vec<u8>>,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
    reverse: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<_> = map
        .iter()
        .filter(|(k, _)| {
            let above = match start {
                Bound::Included(s) => *k >= s,
                Bound::Excluded(s) => *k > s,
                Bound::Unbounded => true,
            };
            let below = match end {
                Bound::Included(e) => *k <= e,
                Bound::Excluded(e) => *k < e,
                Bound::Unbounded => true,
            };
            above && below
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if reverse {
        out.reverse();
    }
    out
}

fn snapshot_range(
    snapshot: &StoreSnapshot,
    keyspace: Keyspace,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
    reverse: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    snapshot
        .range(
            keyspace,
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
            reverse,
        )
        .map(Result::unwrap)
        .collect()
}

/// Runs `ops` against `store` and the model, asserting they agree at every read.
fn check(store: &Store, ops: &[Op]) {
    let mut committed: Model = Default::default();
    let mut saved: Vec<(StoreSnapshot, Model)> = Vec::new();
    let mut catalog = Catalog::default();
    for segment in ops.split(|op| matches!(op, Op::Commit)) {
        let snapshot = store.snapshot();
        let mut pending = committed.clone();
        let mut txn = Txn::new(&snapshot, &mut catalog);
        for op in segment {
            match op {
                Op::Put(s, k, v) => {
                    txn.put(KEYSPACES[*s], k.clone(), v.clone());
                    pending[*s].insert(k.clone(), v.clone());
                }
                Op::Delete(s, k) => {
                    txn.delete(KEYSPACES[*s], k.clone());
                    pending[*s].remove(k);
                }
                Op::Get(s, k) => {
                    let got = txn.get(KEYSPACES[*s], k).unwrap();
                    assert_eq!(got.as_ref(), pending[*s].get(k), "get {k:?}");
                }
                Op::Range(s, a, b, r) => {
                    let got: Vec<_> = txn
                        .range(KEYSPACES[*s], a.clone(), b.clone(), *r)
                        .map(Result::unwrap)
                        .collect();
                    assert_eq!(got, model_range(&pending[*s], a, b, *r), "range {op:?}");
                }
                Op::Prefix(s, p) => {
                    let got: Vec<_> = txn
                        .scan_prefix(KEYSPACES[*s], p)
                        .map(Result::unwrap)
                        .collect();
                    let want: Vec<_> = pending[*s]
                        .iter()
                        .filter(|(k, _)| k.starts_with(p))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    assert_eq!(got, want, "prefix {p:?}");
                }
                Op::ScanRange(s, a, b) => {
                    if a > b {
                        continue; // scan_range's contract: from <= to
                    }
                    let got: Vec<_> = txn
                        .scan_range(KEYSPACES[*s], a, b)
                        .map(Result::unwrap)
                        .collect();
                    let want = model_range(
                        &pending[*s],
                        &Bound::Included(a.clone()),
                        &Bound::Excluded(b.clone()),
                        false,
                    );
                    assert_eq!(got, want, "scan_range {a:?}..{b:?}");
                }
                Op::Probe(keys) => {
                    let mut keys = keys.clone();
                    keys.sort();
                    keys.dedup();
                    let absent = txn.probe_documents(&keys).unwrap();
                    for (at, key) in keys.iter().enumerate() {
                        let got = txn
                            .get_unless_unheld(Keyspace::Documents, key, absent.contains(&at))
                            .unwrap();
                        assert_eq!(got.as_ref(), pending[0].get(key), "probed get {key:?}");
                    }
                    // The same keys read by one walk give what the model holds, pending
                    // writes of the group included.
                    let values = txn.get_documents(&keys).unwrap();
                    let want: Vec<Option<Vec<u8>>> =
                        keys.iter().map(|k| pending[0].get(k).cloned()).collect();
                    assert_eq!(values, want, "get_documents {keys:?}");
                }
                Op::TakeSnapshot => saved.push((store.snapshot(), committed.clone())),
                Op::SnapshotRange(i, s, a, b, r) => {
                    if let Some((snap, model)) = saved.get(i % saved.len().max(1)) {
                        let got = snapshot_range(snap, KEYSPACES[*s], a, b, *r);
                        assert_eq!(got, model_range(&model[*s], a, b, *r), "{op:?}");
                    }
                }
                Op::SnapshotGet(i, s, k) => {
                    if let Some((snap, model)) = saved.get(i % saved.len().max(1)) {
                        let got = snap.get(KEYSPACES[*s], k).unwrap();
                        assert_eq!(got.as_ref(), model[*s].get(k), "{op:?}");
                    }
                }
                Op::Commit => {}
            }
        }
        let (batch, _) = txn.finish().unwrap();
        store.commit(batch, Durability::Buffered).unwrap();
        committed = pending;
    }
    // Every snapshot still shows exactly its point in time, after every later commit.
    saved.push((store.snapshot(), committed));
    for (snap, model) in &saved {
        for (s, keyspace) in KEYSPACES.iter().enumerate() {
            for reverse in [false, true] {
                let all = (Bound::Unbounded, Bound::Unbounded);
                assert_eq!(
                    snapshot_range(snap, *keyspace, &all.0, &all.1, reverse),
                    model_range(&model[s], &all.0, &all.1, reverse)
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn overlay_on_memory_backend_matches_the_model(ops in prop::collection::vec(op(), 0..80)) {
        check(&Store::Memory(MemoryBackend::new()), &ops);
    }

    #[test]
    fn overlay_on_fjall_backend_matches_the_model(ops in prop::collection::vec(op(), 0..80)) {
        let dir = tempfile::tempdir().unwrap();
        check(&Store::Fjall(FjallBackend::open(dir.path()).unwrap()), &ops);
    }
}

/// Many entries and many versions: the memory backend's chunked iterators and its pruning keep
/// snapshots exact across more than one chunk while commits keep coming.
#[test]
fn long_scans_cross_chunks_while_commits_prune() {
    let store = Store::Memory(MemoryBackend::new());
    let mut ops = Vec::new();
    for round in 0u8..4 {
        for i in 0u16..300 {
            let key = i.to_be_bytes().to_vec();
            if (i + u16::from(round)) % 7 == 0 {
                ops.push(Op::Delete(0, key));
            } else {
                ops.push(Op::Put(0, key, vec![round]));
            }
        }
        ops.push(Op::Commit);
        ops.push(Op::TakeSnapshot);
    }
    for i in 0..5 {
        ops.push(Op::SnapshotRange(
            i,
            0,
            Bound::Unbounded,
            Bound::Unbounded,
            i % 2 == 0,
        ));
    }
    check(&store, &ops);
}

/// A probe is a hint about the snapshot only: read with what the probe found, a probed key the
/// group writes or deletes afterwards reads as the group left it, a held key as held, and an
/// unheld one as absent.
#[test]
fn probed_keys_read_as_the_group_left_them() {
    let dir = tempfile::tempdir().unwrap();
    for store in [
        Store::Memory(MemoryBackend::new()),
        Store::Fjall(FjallBackend::open(dir.path()).unwrap()),
    ] {
        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Documents, b"held".to_vec(), b"old".to_vec());
        batch.put(Keyspace::Documents, b"gone".to_vec(), b"old".to_vec());
        store.commit(batch, Durability::Buffered).unwrap();
        let snapshot = store.snapshot();
        let mut catalog = Catalog::default();
        let mut txn = Txn::new(&snapshot, &mut catalog);
        txn.put(Keyspace::Documents, b"early".to_vec(), b"1".to_vec());
        let probed = ["early", "free", "gone", "held", "later"];
        let absent = txn.probe_documents(&probed).unwrap();
        assert_eq!(
            absent,
            vec![0, 1, 4],
            "the snapshot holds only `gone` and `held`"
        );
        txn.put(Keyspace::Documents, b"later".to_vec(), b"2".to_vec());
        txn.delete(Keyspace::Documents, b"gone".to_vec());
        let read = |key: &str| {
            let at = probed.iter().position(|k| *k == key).unwrap();
            txn.get_unless_unheld(Keyspace::Documents, key.as_bytes(), absent.contains(&at))
                .unwrap()
        };
        assert_eq!(read("early"), Some(b"1".to_vec()));
        assert_eq!(read("later"), Some(b"2".to_vec()));
        assert_eq!(read("held"), Some(b"old".to_vec()));
        assert_eq!(read("gone"), None);
        assert_eq!(read("free"), None);
        // Another keyspace's key of the same bytes is read from the snapshot.
        assert_eq!(txn.get(Keyspace::Indexes, b"free").unwrap(), None);
    }
}
