//! Many point reads answered by one ordered walk: which of a sorted list of keys a snapshot
//! does not hold, found by walking the snapshot's entries between the first key and the last
//! once, instead of looking each key up.
//!
//! A bulk insert checks every new `_id` against the collection. Looked up one by one, each
//! check is a full point read (a search of every memtable, a bloom filter or a block of every
//! table); a driver's `_id`s are mostly increasing, so the entries between a batch's least and
//! greatest key are few or none, and one walk decides them all.
//!
//! The same walk also reads values ([`values`]): the TTL reaper reads the records of a batch of
//! due documents, whose keys are mostly adjacent (documents written together expire together).
//!
//! Owns: the walks and their budget. Does not own: what the keys mean, or the writes pending
//! over the snapshot (the caller checks those first).

use super::{Keyspace, Snapshot, StorageError};
use std::ops::Bound;

/// Of `keys` (ascending, distinct), the positions of those `snapshot` surely does not hold.
///
/// The walk stops after visiting as many entries as there are keys, so that keys spread over
/// a large keyspace (random `_id`s in a big collection) cost at most one entry each: the keys
/// it had not passed then are left out, and the caller reads them one by one. Keys out of
/// order are left out too (never wrongly reported absent).
pub fn absent<S: Snapshot, K: AsRef<[u8]>>(
    snapshot: &S,
    keyspace: Keyspace,
    keys: &[K],
) -> Result<Vec<usize>, StorageError> {
    let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
        return Ok(Vec::new());
    };
    let (first, last) = (first.as_ref(), last.as_ref());
    if !keys
        .windows(2)
        .all(|pair| matches!(pair, [a, b] if a.as_ref() < b.as_ref()))
    {
        return Ok(Vec::new());
    }
    let mut absent = Vec::with_capacity(keys.len());
    let mut next = 0;
    let mut budget = keys.len();
    let entries = snapshot.range(
        keyspace,
        Bound::Included(first),
        Bound::Included(last),
        false,
    );
    for entry in entries {
        if budget == 0 {
            return Ok(absent);
        }
        budget -= 1;
        let (held, _) = entry?;
        // Every key below the entry was passed without being met: it is not held.
        while keys
            .get(next)
            .is_some_and(|key| key.as_ref() < held.as_slice())
        {
            absent.push(next);
            next += 1;
        }
        if keys
            .get(next)
            .is_some_and(|key| key.as_ref() == held.as_slice())
        {
            next += 1;
        }
    }
    // The walk reached the last key: every key not met is not held.
    absent.extend(next..keys.len());
    Ok(absent)
}

/// What one ordered walk learned of a key: held with this value, surely not held, or not
/// reached before the walk's budget ran out (the caller reads it alone).
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Held(Vec<u8>),
    Absent,
    Undecided,
}

/// The values `snapshot` holds for `keys` (ascending, distinct), one [`Found`] per key, from one
/// walk over the entries between the first key and the last. Like [`absent`], the walk stops
/// after visiting as many entries as there are keys (keys spread far apart then cost at most
/// one entry each before the rest are left [`Found::Undecided`]), and keys out of order decide
/// nothing.
pub fn values<S: Snapshot, K: AsRef<[u8]>>(
    snapshot: &S,
    keyspace: Keyspace,
    keys: &[K],
) -> Result<Vec<Found>, StorageError> {
    let mut found = vec![Found::Undecided; keys.len()];
    let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
        return Ok(found);
    };
    if !keys
        .windows(2)
        .all(|pair| matches!(pair, [a, b] if a.as_ref() < b.as_ref()))
    {
        return Ok(found);
    }
    let mut next = 0;
    let mut budget = keys.len();
    let entries = snapshot.range(
        keyspace,
        Bound::Included(first.as_ref()),
        Bound::Included(last.as_ref()),
        false,
    );
    for entry in entries {
        if budget == 0 {
            return Ok(found);
        }
        budget -= 1;
        let (held, value) = entry?;
        // Every key below the entry was passed without being met: it is not held.
        while keys
            .get(next)
            .is_some_and(|key| key.as_ref() < held.as_slice())
        {
            set(&mut found, next, Found::Absent);
            next += 1;
        }
        if keys
            .get(next)
            .is_some_and(|key| key.as_ref() == held.as_slice())
        {
            set(&mut found, next, Found::Held(value));
            next += 1;
        }
    }
    // The walk reached the last key: every key not met is not held.
    for at in next..keys.len() {
        set(&mut found, at, Found::Absent);
    }
    Ok(found)
}

fn set(found: &mut [Found], at: usize, value: Found) {
    if let Some(slot) = found.get_mut(at) {
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Backend, Durability, MemoryBackend, WriteBatch};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn stored(keys: &[Vec<u8>]) -> MemoryBackend {
        let backend = MemoryBackend::new();
        let mut batch = WriteBatch::new();
        for key in keys {
            batch.put(Keyspace::Documents, key.clone(), b"v".to_vec());
        }
        // Entries of another keyspace never count.
        batch.put(Keyspace::Indexes, vec![2], b"v".to_vec());
        backend.commit(batch, Durability::Buffered).unwrap();
        backend
    }

    #[test]
    fn keys_among_few_entries_are_all_decided() {
        let backend = stored(&[vec![1], vec![3], vec![5]]);
        let probe = vec![vec![0], vec![2], vec![3], vec![4], vec![6]];
        let absent = absent(&backend.snapshot(), Keyspace::Documents, &probe).unwrap();
        assert_eq!(absent, vec![0, 1, 3, 4]);
    }

    #[test]
    fn a_walk_over_many_entries_stops_and_leaves_the_rest_undecided() {
        let held: Vec<Vec<u8>> = (10u8..200).map(|b| vec![b]).collect();
        let backend = stored(&held);
        // Three keys with 190 entries between them: the walk gives up after three entries.
        let probe = vec![vec![0], vec![11], vec![250]];
        let absent = absent(&backend.snapshot(), Keyspace::Documents, &probe).unwrap();
        assert_eq!(
            absent,
            vec![0],
            "only the key below the first entry is decided"
        );
    }

    #[test]
    fn keys_out_of_order_decide_nothing() {
        let backend = stored(&[]);
        let probe = vec![vec![2], vec![1]];
        assert!(absent(&backend.snapshot(), Keyspace::Documents, &probe)
            .unwrap()
            .is_empty());
        let repeated = vec![vec![1], vec![1]];
        assert!(absent(&backend.snapshot(), Keyspace::Documents, &repeated)
            .unwrap()
            .is_empty());
    }

    /// Values read by one walk: adjacent keys all decided, a walk that runs out of budget
    /// leaves the rest to point reads, and keys out of order decide nothing.
    #[test]
    fn values_are_read_by_one_walk_within_its_budget() {
        let backend = stored(&[vec![1], vec![2], vec![3], vec![5]]);
        let snapshot = backend.snapshot();
        let held = || Found::Held(b"v".to_vec());
        let cases: Vec<(Vec<Vec<u8>>, Vec<Found>)> = vec![
            (
                vec![vec![1], vec![2], vec![3]],
                vec![held(), held(), held()],
            ),
            (
                vec![vec![0], vec![2], vec![4], vec![5], vec![9]],
                vec![Found::Absent, held(), Found::Absent, held(), Found::Absent],
            ),
            // Four entries between two keys: the walk gives up after two.
            (vec![vec![1], vec![6]], vec![held(), Found::Undecided]),
            (
                vec![vec![2], vec![1]],
                vec![Found::Undecided, Found::Undecided],
            ),
            (
                vec![vec![2], vec![2]],
                vec![Found::Undecided, Found::Undecided],
            ),
            (Vec::new(), Vec::new()),
        ];
        for (keys, expected) in cases {
            let found = values(&snapshot, Keyspace::Documents, &keys).unwrap();
            assert_eq!(found, expected, "{keys:?}");
        }
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 0xff]), 1..4)
    }

    proptest! {
        /// Against point reads: a key reported absent is never held, and a walk that met
        /// fewer entries than there are keys decides every key.
        #[test]
        fn reported_keys_are_exactly_the_unheld_ones_when_the_walk_completes(
            held in prop::collection::btree_set(key(), 0..16),
            probe in prop::collection::btree_set(key(), 1..10),
        ) {
            let held: Vec<Vec<u8>> = held.into_iter().collect();
            let probe: Vec<Vec<u8>> = probe.into_iter().collect();
            let backend = stored(&held);
            let snapshot = backend.snapshot();
            let absent: BTreeSet<usize> = absent(&snapshot, Keyspace::Documents, &probe)
                .unwrap()
                .into_iter()
                .collect();
            for (i, key) in probe.iter().enumerate() {
                let unheld = snapshot.get(Keyspace::Documents, key).unwrap().is_none();
                if absent.contains(&i) {
                    prop_assert!(unheld, "{key:?} reported absent but held");
                }
            }
            let (first, last) = (&probe[0], &probe[probe.len() - 1]);
            let between = held.iter().filter(|k| *k >= first && *k <= last).count();
            if between < probe.len() {
                let unheld = probe
                    .iter()
                    .filter(|k| snapshot.get(Keyspace::Documents, k).unwrap().is_none())
                    .count();
                prop_assert_eq!(absent.len(), unheld);
            }
        }

        /// Against point reads: whatever the walk decides is what a point read finds.
        #[test]
        fn values_agree_with_point_reads(
            held in prop::collection::btree_set(key(), 0..16),
            probe in prop::collection::btree_set(key(), 1..10),
        ) {
            let held: Vec<Vec<u8>> = held.into_iter().collect();
            let probe: Vec<Vec<u8>> = probe.into_iter().collect();
            let backend = stored(&held);
            let snapshot = backend.snapshot();
            let found = values(&snapshot, Keyspace::Documents, &probe).unwrap();
            prop_assert_eq!(found.len(), probe.len());
            for (key, found) in probe.iter().zip(&found) {
                let point = snapshot.get(Keyspace::Documents, key).unwrap();
                match found {
                    Found::Held(value) => prop_assert_eq!(Some(value.clone()), point),
                    Found::Absent => prop_assert!(point.is_none()),
                    Found::Undecided => {}
                }
            }
        }
    }
}
