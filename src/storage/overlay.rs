//! Uncommitted writes laid over a snapshot: an [`Overlay`] holds pending puts and deletes per
//! keyspace, and [`Merged`] walks a snapshot's range with the overlay's entries in it (pending
//! wins, a pending delete hides the entry). A commit group reads through one while it runs, and
//! a multi-document transaction keeps one between its statements; [`OverlaySnapshot`] makes the
//! latter readable as a [`Snapshot`] of its own, so every read path sees a transaction's writes.
//!
//! Owns: the pending entries and the merge order. Does not own: what the entries mean, or when
//! they are committed (the engine's writer).

use super::pending::Entry;
pub use super::pending::Pending;
use super::{KeyValue, Keyspace, Snapshot, StorageError};
use std::iter::Peekable;
use std::ops::Bound;
use std::sync::Arc;

/// Pending writes, per keyspace.
#[derive(Default, Clone, Debug)]
pub struct Overlay {
    keyspaces: [Pending; Keyspace::ALL.len()],
}

impl Overlay {
    pub fn of(&self, keyspace: Keyspace) -> &Pending {
        // `Keyspace::ALL` is indexed by the keyspace's discriminant.
        match self.keyspaces.get(keyspace as usize) {
            Some(pending) => pending,
            None => empty(),
        }
    }

    fn of_mut(&mut self, keyspace: Keyspace) -> Option<&mut Pending> {
        self.keyspaces.get_mut(keyspace as usize)
    }

    /// The pending value of `key`: `Some(None)` when it is deleted, `None` when untouched.
    pub fn get(&self, keyspace: Keyspace, key: &[u8]) -> Option<&Option<Vec<u8>>> {
        self.of(keyspace).get(key)
    }

    pub fn put(&mut self, keyspace: Keyspace, key: Vec<u8>, value: Vec<u8>) {
        if let Some(pending) = self.of_mut(keyspace) {
            pending.insert(key, Some(value));
        }
    }

    pub fn delete(&mut self, keyspace: Keyspace, key: Vec<u8>) {
        if let Some(pending) = self.of_mut(keyspace) {
            pending.insert(key, None);
        }
    }

    /// Announces `writes` writes to `keyspace` in ascending order ([`Pending::reserve`]).
    pub fn reserve(&mut self, keyspace: Keyspace, writes: usize) {
        if let Some(pending) = self.of_mut(keyspace) {
            pending.reserve(writes);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.keyspaces.iter().all(Pending::is_empty)
    }

    /// Every pending write, keyspace by keyspace, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (Keyspace, &Vec<u8>, &Option<Vec<u8>>)> {
        Keyspace::ALL.into_iter().flat_map(move |keyspace| {
            self.of(keyspace)
                .iter()
                .map(move |(key, value)| (keyspace, key, value))
        })
    }

    /// Every pending write, consumed, keyspace by keyspace, in key order.
    pub fn into_entries(self) -> impl Iterator<Item = (Keyspace, Vec<u8>, Option<Vec<u8>>)> {
        Keyspace::ALL
            .into_iter()
            .zip(self.keyspaces)
            .flat_map(|(keyspace, pending)| {
                pending
                    .into_iter()
                    .map(move |(key, value)| (keyspace, key, value))
            })
    }

    /// Every pending write, each key once, keyspace by keyspace in no particular order within
    /// one ([`Pending::unordered`]).
    pub fn unordered(&self) -> impl Iterator<Item = (Keyspace, &[u8], Option<&[u8]>)> {
        Keyspace::ALL.into_iter().flat_map(move |keyspace| {
            self.of(keyspace)
                .unordered()
                .map(move |(key, write)| (keyspace, key, write))
        })
    }

    /// Every pending write, consumed, as runs of one keyspace each that hold each key once
    /// (what [`super::WriteBatch::of_overlay`] commits as they are).
    pub(super) fn into_runs(self) -> impl Iterator<Item = (Keyspace, Vec<Entry>)> {
        Keyspace::ALL
            .into_iter()
            .zip(self.keyspaces)
            .flat_map(|(keyspace, pending)| pending.into_runs().map(move |run| (keyspace, run)))
    }
}

fn empty() -> &'static Pending {
    static EMPTY: Pending = Pending::new();
    &EMPTY
}

/// A snapshot's entries merged with pending writes (pending wins), in key order or, when
/// `reverse`, in reverse key order.
pub struct Merged<B: Iterator, P: Iterator> {
    base: Peekable<B>,
    pending: Peekable<P>,
    reverse: bool,
}

impl<B: Iterator, P: Iterator> Merged<B, P> {
    pub fn new(base: B, pending: P, reverse: bool) -> Self {
        Merged {
            base: base.peekable(),
            pending: pending.peekable(),
            reverse,
        }
    }
}

impl<B, P> Iterator for Merged<B, P>
where
    B: Iterator<Item = Result<KeyValue, StorageError>>,
    P: Iterator<Item = (Vec<u8>, Option<Vec<u8>>)>,
{
    type Item = Result<KeyValue, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_pending = match (self.base.peek(), self.pending.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => return self.base.next(),
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(Ok((bk, _))), Some((pk, _))) => {
                    if pk == bk {
                        // The pending write replaces the committed entry.
                        self.base.next();
                        true
                    } else if self.reverse {
                        pk.as_slice() > bk.as_slice()
                    } else {
                        pk.as_slice() < bk.as_slice()
                    }
                }
            };
            if !take_pending {
                return self.base.next();
            }
            let (key, value) = self.pending.next()?;
            if let Some(value) = value {
                return Some(Ok((key, value)));
            }
            // A pending delete hides the entry; keep going.
        }
    }
}

/// A snapshot with pending writes over it, readable like any snapshot. The writes are shared,
/// so taking one is cheap and a cursor can keep it.
#[derive(Clone)]
pub struct OverlaySnapshot<S: Snapshot> {
    base: S,
    writes: Arc<Overlay>,
}

impl<S: Snapshot> OverlaySnapshot<S> {
    pub fn new(base: S, writes: Arc<Overlay>) -> Self {
        OverlaySnapshot { base, writes }
    }
}

impl<S: Snapshot> Snapshot for OverlaySnapshot<S> {
    type Iter = Merged<S::Iter, OverlayIter>;

    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        match self.writes.get(keyspace, key) {
            Some(pending) => Ok(pending.clone()),
            None => self.base.get(keyspace, key),
        }
    }

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Self::Iter {
        let base = self.base.range(keyspace, start, end, reverse);
        let pending = OverlayIter {
            writes: Arc::clone(&self.writes),
            keyspace,
            start: start.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            reverse,
        };
        Merged::new(base, pending, reverse)
    }
}

/// The pending writes of a range, owning what it walks: each step looks up the entry after
/// the last one it returned, so it needs no borrow of the overlay.
pub struct OverlayIter {
    writes: Arc<Overlay>,
    keyspace: Keyspace,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
}

impl Iterator for OverlayIter {
    type Item = (Vec<u8>, Option<Vec<u8>>);

    fn next(&mut self) -> Option<Self::Item> {
        let pending = self.writes.of(self.keyspace);
        let bounds = (
            self.start.as_ref().map(Vec::as_slice),
            self.end.as_ref().map(Vec::as_slice),
        );
        let (key, value) = pending.range(bounds, self.reverse).next()?;
        if self.reverse {
            self.end = Bound::Excluded(key.clone());
        } else {
            self.start = Bound::Excluded(key.clone());
        }
        Some((key.clone(), value.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Backend, Durability, MemoryBackend, WriteBatch};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 0xff]), 1..4)
    }

    fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        let probe = prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 0xff]), 0..4);
        prop_oneof![
            Just(Bound::Unbounded),
            probe.clone().prop_map(Bound::Included),
            probe.prop_map(Bound::Excluded),
        ]
    }

    fn in_range(k: &Vec<u8>, start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
        std::ops::RangeBounds::<Vec<u8>>::contains(&(start.as_ref(), end.as_ref()), k)
    }

    proptest! {
        /// An overlaid snapshot reads as the committed entries with the pending writes applied:
        /// point reads and ranges in both directions, against a `BTreeMap` model.
        #[test]
        fn an_overlaid_snapshot_reads_as_its_writes_applied(
            committed in prop::collection::vec((key(), any::<u8>()), 0..12),
            pending in prop::collection::vec((key(), prop::option::of(any::<u8>())), 0..12),
            ranges in prop::collection::vec((bound(), bound(), any::<bool>()), 1..6),
        ) {
            let backend = MemoryBackend::new();
            let mut batch = WriteBatch::new();
            let mut model = BTreeMap::new();
            for (k, v) in &committed {
                batch.put(Keyspace::Documents, k.clone(), vec![*v]);
                model.insert(k.clone(), vec![*v]);
            }
            // An entry of another keyspace must never show through.
            batch.put(Keyspace::Indexes, vec![1], vec![9]);
            backend.commit(batch, Durability::Buffered).unwrap();
            let mut overlay = Overlay::default();
            for (k, v) in &pending {
                match v {
                    Some(v) => {
                        overlay.put(Keyspace::Documents, k.clone(), vec![*v]);
                        model.insert(k.clone(), vec![*v]);
                    }
                    None => {
                        overlay.delete(Keyspace::Documents, k.clone());
                        model.remove(k);
                    }
                }
            }
            let snapshot = OverlaySnapshot::new(backend.snapshot(), Arc::new(overlay));
            for k in committed.iter().map(|(k, _)| k).chain(pending.iter().map(|(k, _)| k)) {
                prop_assert_eq!(
                    snapshot.get(Keyspace::Documents, k).unwrap(),
                    model.get(k).cloned()
                );
            }
            for (start, end, reverse) in ranges {
                let got: Vec<KeyValue> = snapshot
                    .range(
                        Keyspace::Documents,
                        start.as_ref().map(Vec::as_slice),
                        end.as_ref().map(Vec::as_slice),
                        reverse,
                    )
                    .collect::<Result<_, _>>()
                    .unwrap();
                let mut want: Vec<KeyValue> = model
                    .iter()
                    .filter(|(k, _)| in_range(k, &start, &end))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if reverse {
                    want.reverse();
                }
                prop_assert_eq!(got, want);
            }
        }
    }
}
