//! Tests of keys of any length: the stored form, and both backends against a `BTreeMap` model
//! with many keys longer than fjall's limit, many sharing their first [`PREFIX_LEN`] bytes.

use super::*;
use crate::storage::{
    Backend, Durability, FjallBackend, Keyspace, MemoryBackend, Snapshot, Store, WriteBatch,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

const M: usize = PREFIX_LEN;

#[test]
fn short_keys_are_stored_as_they_are_and_long_ones_under_prefix_and_digest() {
    // (key length, stored length)
    let table = [
        (1, 1),
        (M, M),
        (M + 1, M + DIGEST_LEN),
        (ENGINE_KEY_LIMIT, M + DIGEST_LEN),
        (ENGINE_KEY_LIMIT + 1, M + DIGEST_LEN),
        (1 << 20, M + DIGEST_LEN),
    ];
    for (len, stored_len) in table {
        let key = vec![7u8; len];
        let stored = stored_key(&key);
        assert_eq!(stored.len(), stored_len, "{len}");
        assert_eq!(stored.get(..len.min(M)), key.get(..len.min(M)), "{len}");
        let value = stored_value(&key, b"v").unwrap();
        let (full, back) = decode(stored.to_vec(), value.to_vec());
        assert_eq!((full, back), (key.clone(), b"v".to_vec()), "{len}");
        if is_long(&key) {
            assert_eq!(value_of(&key, &value), Some(b"v".to_vec()), "{len}");
            // The entry of one long key is not another's, even under the same prefix.
            let mut other = key.clone();
            other.push(0);
            assert_eq!(value_of(&other, &value), None, "{len}");
        }
    }
}

#[test]
fn an_entry_is_long_only_when_its_digest_matches_its_tail() {
    let key = vec![1u8; M + 5];
    let stored = stored_key(&key).into_owned();
    let value = stored_value(&key, b"v").unwrap().into_owned();
    assert!(is_long_entry(&stored, &value));
    // A key stored as it is, of the stored form's length, with a value that does not carry
    // a tail of that digest: itself.
    let mut damaged = value.clone();
    if let Some(last_tail_byte) = damaged.get_mut(TAIL_LEN_BYTES + 4) {
        *last_tail_byte ^= 1;
    }
    for plain in [b"v".to_vec(), damaged, Vec::new(), vec![0, 0, 0, 0]] {
        assert!(!is_long_entry(&stored, &plain), "{plain:?}");
        assert_eq!(
            decode(stored.clone(), plain.clone()),
            (stored.clone(), plain)
        );
    }
}

/// The engine range of a long bound covers its whole group; a short bound is kept.
#[test]
fn a_long_bound_widens_to_its_group() {
    let mut long = vec![b'a'; M];
    long.push(b'z');
    let short: &[u8] = b"abc";
    let (start, end) = engine_bounds(Bound::Included(&long), Bound::Excluded(short));
    assert_eq!(start, Bound::Excluded(vec![b'a'; M]));
    assert_eq!(end, Bound::Excluded(short.to_vec()));
    let mut after = vec![b'a'; M - 1];
    after.push(b'b');
    let (_, end) = engine_bounds(Bound::Unbounded, Bound::Included(&long));
    assert_eq!(end, Bound::Excluded(after));
    let all_ff = vec![0xFF; M + 1];
    let (_, end) = engine_bounds(Bound::Unbounded, Bound::Excluded(&all_ff));
    assert_eq!(end, Bound::Unbounded);
}

/// Where a generated key lies: its first `M` bytes are one of a few bases, so long keys share
/// them (and form groups), a short key may equal a base, and keys of different bases differ
/// before byte `M`.
#[derive(Debug, Clone)]
enum Shape {
    Short(Vec<u8>),
    /// A base cut short by 0 to 2 bytes.
    Base(u8, usize),
    /// A base, padding (0: none, in the window of old-layout lengths; 1: past fjall's limit;
    /// 2: a 70 KB key), then a tail.
    Long(u8, u8, Vec<u8>),
}

fn base(variant: u8) -> Vec<u8> {
    let mut base = vec![b'p'; M];
    match variant {
        1 => base.get_mut(M - 1).into_iter().for_each(|b| *b = b'q'),
        2 => base.get_mut(M / 2).into_iter().for_each(|b| *b = b'o'),
        3 => base.iter_mut().for_each(|b| *b = 0xFF),
        _ => {}
    }
    base
}

fn key_of(shape: &Shape) -> Vec<u8> {
    match shape {
        Shape::Short(bytes) => bytes.clone(),
        Shape::Base(variant, cut) => base(*variant)[..M - cut].to_vec(),
        Shape::Long(variant, padding, tail) => {
            let mut key = base(*variant);
            match padding {
                0 => {}
                1 => key.extend_from_slice(&[b'p'; DIGEST_LEN]),
                _ => key.resize(70_000, b'p'),
            }
            key.extend_from_slice(tail);
            if key.len() == M {
                key.push(0);
            }
            key
        }
    }
}

fn byte() -> impl Strategy<Value = u8> {
    prop::sample::select(vec![0u8, 1, b'o', b'p', b'q', 0xFF])
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        prop::collection::vec(byte(), 1..4).prop_map(Shape::Short),
        (0u8..4, 0usize..3).prop_map(|(v, cut)| Shape::Base(v, cut)),
        (0u8..4, 0u8..3, prop::collection::vec(byte(), 0..3))
            .prop_map(|(v, padding, tail)| Shape::Long(v, padding, tail)),
        // Most keys are long.
        (0u8..2, 0u8..3, prop::collection::vec(byte(), 1..3))
            .prop_map(|(v, padding, tail)| Shape::Long(v, padding, tail)),
    ]
}

fn bound() -> impl Strategy<Value = Bound<Shape>> {
    prop_oneof![
        Just(Bound::Unbounded),
        shape().prop_map(Bound::Included),
        shape().prop_map(Bound::Excluded),
    ]
}

type Batch = Vec<(Shape, Option<u8>)>;

/// Every read of `model` answered alike by `snapshot`: point reads of every key the test
/// touched, and each range.
fn agrees(
    snapshot: &impl Snapshot,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    touched: &[Vec<u8>],
    ranges: &[(Bound<Shape>, Bound<Shape>, bool)],
) -> Result<(), TestCaseError> {
    for key in touched {
        let got = snapshot.get(Keyspace::Indexes, key).unwrap();
        prop_assert_eq!(got.as_ref(), model.get(key), "get of {} bytes", key.len());
    }
    for (start, end, reverse) in ranges {
        let start = start.as_ref().map(key_of);
        let end = end.as_ref().map(key_of);
        let (start, end) = (
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
        );
        let got: Vec<KeyValue> = snapshot
            .range(Keyspace::Indexes, start, end, *reverse)
            .collect::<Result<_, _>>()
            .unwrap();
        let mut want: Vec<KeyValue> = model
            .iter()
            .filter(|(k, _)| std::ops::RangeBounds::<[u8]>::contains(&(start, end), k.as_slice()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if *reverse {
            want.reverse();
        }
        let lengths = |entries: &[KeyValue]| -> Vec<(usize, Vec<u8>)> {
            entries
                .iter()
                .map(|(k, _)| (k.len(), k.iter().rev().take(3).copied().collect()))
                .collect()
        };
        prop_assert_eq!(lengths(&got), lengths(&want), "keys of a range, shortened");
        prop_assert!(got == want, "values of a range");
    }
    Ok(())
}

fn run(
    store: &Store,
    batches: &[Batch],
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) -> Result<(), TestCaseError> {
    for batch in batches {
        let mut writes = WriteBatch::new();
        for (shape, value) in batch {
            let key = key_of(shape);
            match value {
                Some(v) => {
                    let value = vec![*v; 1 + key.len() % 3];
                    writes.put(Keyspace::Indexes, key.clone(), value.clone());
                    model.insert(key, value);
                }
                None => {
                    writes.delete(Keyspace::Indexes, key.clone());
                    model.remove(&key);
                }
            }
        }
        // Another keyspace's long keys never show through.
        writes.put(Keyspace::Documents, key_of(&batch[0].0), b"other".to_vec());
        store.commit(writes, Durability::Buffered).unwrap();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Both backends read as the model after random batches of puts and deletes of keys of any
    /// length; fjall again after a reopen.
    #[test]
    fn both_backends_read_as_a_model_with_keys_of_any_length(
        batches in prop::collection::vec(
            prop::collection::vec((shape(), prop::option::weighted(0.7, any::<u8>())), 1..8),
            1..6,
        ),
        probes in prop::collection::vec(shape(), 0..6),
        ranges in prop::collection::vec((bound(), bound(), any::<bool>()), 1..10),
    ) {
        let touched: Vec<Vec<u8>> = batches
            .iter()
            .flatten()
            .map(|(shape, _)| shape)
            .chain(&probes)
            .map(key_of)
            .collect();
        let memory = Store::Memory(MemoryBackend::new());
        let mut model = BTreeMap::new();
        run(&memory, &batches, &mut model)?;
        agrees(&memory.snapshot(), &model, &touched, &ranges)?;

        let dir = tempfile::tempdir().unwrap();
        let fjall = Store::Fjall(FjallBackend::open(dir.path()).unwrap());
        let mut model = BTreeMap::new();
        run(&fjall, &batches, &mut model)?;
        agrees(&fjall.snapshot(), &model, &touched, &ranges)?;
        fjall.persist(Durability::SyncData).unwrap();
        drop(fjall);
        let reopened = FjallBackend::open(dir.path()).unwrap();
        agrees(&reopened.snapshot(), &model, &touched, &ranges)?;
    }
}

/// A key of 65,520 to 65,535 bytes written as it is by a version before the long-key layout is
/// read, ranged over, rewritten and deleted as the same key.
#[test]
fn keys_stored_as_they_are_by_an_earlier_layout_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FjallBackend::open(dir.path()).unwrap();
    let prefix = vec![b'k'; M];
    let key_of = |tail: &[u8]| [prefix.as_slice(), tail].concat();
    let (old, new, longer) = (key_of(b"m"), key_of(b"a"), key_of(&[b'z'; 30]));
    backend.put_as_stored(Keyspace::Indexes, &old, b"old");
    let mut batch = WriteBatch::new();
    batch.put(Keyspace::Indexes, new.clone(), b"new".to_vec());
    batch.put(Keyspace::Indexes, longer.clone(), b"longer".to_vec());
    backend.commit(batch, Durability::Buffered).unwrap();
    let keys = |backend: &FjallBackend, reverse: bool| -> Vec<KeyValue> {
        backend
            .snapshot()
            .range(
                Keyspace::Indexes,
                Bound::Unbounded,
                Bound::Unbounded,
                reverse,
            )
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let get = |backend: &FjallBackend, key: &[u8]| {
        backend.snapshot().get(Keyspace::Indexes, key).unwrap()
    };
    assert_eq!(get(&backend, &old), Some(b"old".to_vec()));
    let expected = vec![
        (new.clone(), b"new".to_vec()),
        (old.clone(), b"old".to_vec()),
        (longer.clone(), b"longer".to_vec()),
    ];
    assert_eq!(keys(&backend, false), expected);
    let mut reversed = expected;
    reversed.reverse();
    assert_eq!(keys(&backend, true), reversed);

    // Rewritten: the long form replaces the old entry; the key is listed once.
    let mut batch = WriteBatch::new();
    batch.put(Keyspace::Indexes, old.clone(), b"rewritten".to_vec());
    backend.commit(batch, Durability::Buffered).unwrap();
    assert_eq!(get(&backend, &old), Some(b"rewritten".to_vec()));
    assert_eq!(keys(&backend, false).len(), 3);

    // Deleted, again from an old entry.
    backend.put_as_stored(Keyspace::Indexes, &old, b"old");
    let mut batch = WriteBatch::new();
    batch.delete(Keyspace::Indexes, old.clone());
    backend.commit(batch, Durability::Buffered).unwrap();
    assert_eq!(get(&backend, &old), None);
    assert_eq!(keys(&backend, false).len(), 2);
}

/// A key whose bytes are exactly another key's stored form is a key of its own: writing it
/// leaves the other key's entry alone.
#[test]
fn a_key_equal_to_another_keys_stored_form_does_not_replace_it() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FjallBackend::open(dir.path()).unwrap();
    let long = vec![b'k'; 70_000];
    let lookalike = stored_key(&long).into_owned();
    assert_eq!(lookalike.len(), ENGINE_KEY_LIMIT);
    for (key, value) in [(&long, b"long"), (&lookalike, b"look")] {
        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Indexes, key.clone(), value.to_vec());
        backend.commit(batch, Durability::Buffered).unwrap();
    }
    let snapshot = backend.snapshot();
    assert_eq!(
        snapshot.get(Keyspace::Indexes, &long).unwrap(),
        Some(b"long".to_vec())
    );
    assert_eq!(
        snapshot.get(Keyspace::Indexes, &lookalike).unwrap(),
        Some(b"look".to_vec())
    );
    let all: Vec<Vec<u8>> = snapshot
        .range(Keyspace::Indexes, Bound::Unbounded, Bound::Unbounded, false)
        .map(|entry| entry.unwrap().0)
        .collect();
    let mut want = vec![lookalike, long];
    want.sort();
    assert_eq!(all, want);
}
