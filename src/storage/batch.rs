//! [`WriteBatch`]: puts and deletes across keyspaces, committed atomically by
//! [`super::Backend::commit`].
//!
//! A batch holds its writes in *runs*, each a `Vec` of writes to one keyspace: writes pushed one
//! by one extend the last run while they go to its keyspace, and a group's pending writes become
//! a batch with their runs taken as they are ([`WriteBatch::of_overlay`]), so a
//! group holds each write once, and committing it moves no write into another list. A batch can
//! also share a group's pending writes instead of taking them ([`WriteBatch::of_group`]), so the
//! next group can read them while this one is committed.
//!
//! Owns: the order of a batch's writes, which of them a backend applies when a key is written
//! twice, and the batch's size. Does not own: how a backend applies them.

use super::overlay::Overlay;
use super::pending::{Entry, Write};
use super::{check_key, Keyspace, StorageError};
use std::sync::Arc;

/// Per-write overhead counted by [`WriteBatch::approximate_size`] (journal framing, sequence
/// number, value type).
const OP_OVERHEAD_BYTES: usize = 16;

/// Puts and deletes across keyspaces, in order, committed atomically by
/// [`super::Backend::commit`]. A later write of the same key overrides an earlier one.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    /// The writes in order, in runs of writes to one keyspace each (`None` deletes).
    runs: Vec<(Keyspace, Vec<Entry>)>,
    /// A group's pending writes, shared, before `runs` ([`WriteBatch::of_group`]).
    group: Option<Arc<Overlay>>,
    len: usize,
    approximate_size: usize,
    /// Every (keyspace, key) is written at most once ([`WriteBatch::with_unique_keys`]).
    unique_keys: bool,
}

impl WriteBatch {
    pub fn new() -> Self {
        WriteBatch::default()
    }

    /// A batch of `runs`, whose writes are to distinct (keyspace, key)s, in any order (a group's
    /// pending writes, which hold each key once): a backend applies them with no order and no
    /// deduplication ([`WriteBatch::into_unique`]).
    pub(super) fn with_unique_keys(runs: Vec<(Keyspace, Vec<Entry>)>) -> Self {
        let mut batch = WriteBatch::new();
        for (keyspace, writes) in runs {
            batch.add_run(keyspace, writes);
        }
        batch.unique_keys = true;
        batch
    }

    /// Every pending write of `overlay`, consumed, as a batch that holds each key once: each
    /// keyspace's runs become the batch's runs as they are, so committing a group moves no write
    /// into another list.
    pub fn of_overlay(overlay: Overlay) -> Self {
        WriteBatch::with_unique_keys(overlay.into_runs().collect())
    }

    /// A batch of a group's pending writes, shared rather than taken, so the group after it can
    /// read them while this batch is committed. Each key is written once (an overlay holds each
    /// key once), so a backend applies them with no order and no deduplication.
    pub fn of_group(writes: Arc<Overlay>) -> Self {
        let (mut len, mut approximate_size) = (0, 0);
        for (_, key, write) in writes.unordered() {
            len += 1;
            approximate_size += size_of(key, write);
        }
        WriteBatch {
            runs: Vec::new(),
            group: Some(writes),
            len,
            approximate_size,
            unique_keys: true,
        }
    }

    /// Takes a shared group's writes into the batch's own runs (copying them while the group
    /// is still read elsewhere), so writes can be added after them.
    fn own_group(&mut self) {
        let Some(group) = self.group.take() else {
            return;
        };
        let overlay = Arc::try_unwrap(group).unwrap_or_else(|shared| (*shared).clone());
        let mut runs = WriteBatch::of_overlay(overlay).runs;
        runs.append(&mut self.runs);
        self.runs = runs;
    }

    pub fn put(&mut self, keyspace: Keyspace, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.push(keyspace, key.into(), Some(value.into()));
    }

    pub fn delete(&mut self, keyspace: Keyspace, key: impl Into<Vec<u8>>) {
        self.push(keyspace, key.into(), None);
    }

    fn push(&mut self, keyspace: Keyspace, key: Vec<u8>, write: Write) {
        self.own_group();
        // It may write a key already written.
        self.unique_keys = false;
        self.len += 1;
        self.approximate_size += size_of(&key, write.as_deref());
        match self.runs.last_mut() {
            Some((last, run)) if *last == keyspace => run.push((key, write)),
            _ => self.runs.push((keyspace, vec![(key, write)])),
        }
    }

    /// Appends `writes` to `keyspace` after this batch's writes, as one run taken as it is.
    pub fn add_run(&mut self, keyspace: Keyspace, writes: Vec<Entry>) {
        if writes.is_empty() {
            return;
        }
        self.own_group();
        self.unique_keys = false;
        self.len += writes.len();
        self.approximate_size += writes
            .iter()
            .map(|(key, write)| size_of(key, write.as_deref()))
            .sum::<usize>();
        self.runs.push((keyspace, writes));
    }

    /// Number of writes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Approximate bytes the batch adds to the journal: keys, values and a fixed per-write
    /// overhead. For bounding group-commit batches, not for accounting.
    pub fn approximate_size(&self) -> usize {
        self.approximate_size
    }

    /// The writes, in order: `None` deletes.
    pub fn writes(&self) -> impl Iterator<Item = (Keyspace, &[u8], Option<&[u8]>)> {
        let group = self.group.iter().flat_map(|group| group.unordered());
        group.chain(self.runs.iter().flat_map(|(keyspace, run)| {
            run.iter()
                .map(|(key, write)| (*keyspace, key.as_slice(), write.as_deref()))
        }))
    }

    /// The writes, consumed, in order: `None` deletes. A shared group's writes are copied.
    pub fn into_writes(mut self) -> impl Iterator<Item = (Keyspace, Vec<u8>, Write)> {
        self.own_group();
        self.runs.into_iter().flat_map(|(keyspace, run)| {
            run.into_iter()
                .map(move |(key, write)| (keyspace, key, write))
        })
    }

    /// The batch with only the last write of each (keyspace, key) kept, in an order that
    /// applies the writes with the batch's meaning: for a backend that applies a batch as one
    /// atomic step in which the order of writes is lost. A batch built with unique keys (a
    /// group's batch) is returned as it is; one whose keys are increasing within each keyspace
    /// is checked in one pass and returned as it is.
    pub fn into_unique(self) -> WriteBatch {
        if self.unique_keys {
            debug_assert!(
                {
                    let mut seen = std::collections::HashSet::new();
                    self.writes()
                        .all(|(keyspace, key, _)| seen.insert((keyspace, key)))
                },
                "a batch built with unique keys writes a key twice"
            );
            return self;
        }
        // The last key written to each keyspace: a keyspace's writes may be apart.
        let mut last: [Option<&[u8]>; Keyspace::ALL.len()] = Default::default();
        let increasing = self.writes().all(|(keyspace, key, _)| {
            last.get_mut(keyspace as usize).is_some_and(|before| {
                let ascending = before.is_none_or(|before| before < key);
                *before = Some(key);
                ascending
            })
        });
        if increasing {
            return self;
        }
        let mut seen = std::collections::HashSet::with_capacity(self.len);
        let mut last_first: Vec<(Keyspace, Vec<u8>, Write)> = Vec::with_capacity(self.len);
        let writes: Vec<_> = self.into_writes().collect();
        for (keyspace, key, write) in writes.into_iter().rev() {
            if seen.insert((keyspace, key.clone())) {
                last_first.push((keyspace, key, write));
            }
        }
        let mut unique = WriteBatch::new();
        for (keyspace, key, write) in last_first.into_iter().rev() {
            unique.push(keyspace, key, write);
        }
        unique.unique_keys = true;
        unique
    }

    /// Refuses the whole batch if any of its keys is one no backend can store
    /// ([`check_key`]), before any of it is applied.
    pub fn check_keys(&self) -> Result<(), StorageError> {
        self.writes().try_for_each(|(_, key, _)| check_key(key))
    }
}

fn size_of(key: &[u8], write: Option<&[u8]>) -> usize {
    key.len() + write.map_or(0, <[u8]>::len) + OP_OVERHEAD_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(
        writes: impl Iterator<Item = (Keyspace, Vec<u8>, Write)>,
    ) -> Vec<(Keyspace, Vec<u8>, Write)> {
        writes.collect()
    }

    #[test]
    fn unique_writes_keep_the_last_write_of_each_key() {
        let mut ordered = WriteBatch::new();
        ordered.put(Keyspace::Catalog, b"a", b"1");
        ordered.put(Keyspace::Documents, b"a", b"1");
        ordered.put(Keyspace::Documents, b"b", b"1");
        ordered.delete(Keyspace::Expiry, b"a");
        let expected = owned(ordered.clone().into_writes());
        assert_eq!(owned(ordered.into_unique().into_writes()), expected);

        let mut repeated = WriteBatch::new();
        repeated.put(Keyspace::Documents, b"d", b"1");
        repeated.put(Keyspace::Indexes, b"d", b"1");
        repeated.put(Keyspace::Documents, b"c", b"1");
        repeated.delete(Keyspace::Documents, b"d");
        repeated.put(Keyspace::Documents, b"e", b"1");
        repeated.put(Keyspace::Documents, b"e", b"2");
        let unique = repeated.into_unique();
        assert_eq!(unique.len(), 4);
        // A key written again after writes to another keyspace.
        let mut apart = WriteBatch::new();
        apart.put(Keyspace::Documents, b"b", b"1");
        apart.put(Keyspace::Expiry, b"x", b"1");
        apart.put(Keyspace::Documents, b"a", b"1");
        apart.put(Keyspace::Documents, b"b", b"2");
        assert_eq!(
            owned(apart.into_unique().into_writes()),
            vec![
                (Keyspace::Expiry, b"x".to_vec(), Some(b"1".to_vec())),
                (Keyspace::Documents, b"a".to_vec(), Some(b"1".to_vec())),
                (Keyspace::Documents, b"b".to_vec(), Some(b"2".to_vec())),
            ]
        );
        assert_eq!(
            owned(unique.into_writes()),
            vec![
                (Keyspace::Indexes, b"d".to_vec(), Some(b"1".to_vec())),
                (Keyspace::Documents, b"c".to_vec(), Some(b"1".to_vec())),
                (Keyspace::Documents, b"d".to_vec(), None),
                (Keyspace::Documents, b"e".to_vec(), Some(b"2".to_vec())),
            ]
        );
    }

    #[test]
    fn a_batch_counts_writes_and_bytes() {
        let mut batch = WriteBatch::new();
        assert!(batch.is_empty());
        batch.put(Keyspace::Documents, b"k1".to_vec(), b"value".to_vec());
        batch.delete(Keyspace::Indexes, b"k2".to_vec());
        assert_eq!(batch.len(), 2);
        assert_eq!(batch.approximate_size(), 2 + 5 + 2 + 2 * OP_OVERHEAD_BYTES);

        batch.put(Keyspace::Catalog, b"c".to_vec(), b"".to_vec());
        batch.add_run(
            Keyspace::Expiry,
            vec![(b"x".to_vec(), Some(b"12".to_vec())), (b"y".to_vec(), None)],
        );
        batch.add_run(Keyspace::Oplog, Vec::new());
        assert_eq!(batch.len(), 5);
        assert_eq!(
            batch.approximate_size(),
            2 + 5 + 2 + 1 + (1 + 2) + 1 + 5 * OP_OVERHEAD_BYTES
        );
        let keyspaces: Vec<Keyspace> = batch.writes().map(|(keyspace, _, _)| keyspace).collect();
        assert_eq!(
            keyspaces,
            [
                Keyspace::Documents,
                Keyspace::Indexes,
                Keyspace::Catalog,
                Keyspace::Expiry,
                Keyspace::Expiry
            ]
        );
    }

    /// A batch sharing a group's writes holds what the batch taking them holds, reads them in
    /// place while the group is still read elsewhere, and takes its own copy to add to them.
    #[test]
    fn a_batch_of_a_shared_group_holds_the_groups_writes() {
        let mut overlay = Overlay::default();
        for key in [b"b", b"a", b"c"] {
            overlay.put(Keyspace::Documents, key.to_vec(), b"12".to_vec());
        }
        overlay.delete(Keyspace::Expiry, b"x".to_vec());
        overlay.put(Keyspace::Catalog, b"k".to_vec(), b"v".to_vec());
        let taken = WriteBatch::of_overlay(overlay.clone());
        let shared = Arc::new(overlay);
        let batch = WriteBatch::of_group(Arc::clone(&shared));
        assert_eq!(
            (batch.len(), batch.approximate_size()),
            (5, taken.approximate_size())
        );
        let sorted = |batch: &WriteBatch| {
            let mut writes: Vec<_> = batch
                .writes()
                .map(|(keyspace, key, write)| {
                    (keyspace as usize, key.to_vec(), write.map(<[u8]>::to_vec))
                })
                .collect();
            writes.sort();
            writes
        };
        assert_eq!(sorted(&batch), sorted(&taken));
        let unique = batch.clone().into_unique();
        assert_eq!(sorted(&unique), sorted(&taken));
        // Writes added after the group's come after them, and the group is left as it was.
        let mut extended = batch;
        extended.put(Keyspace::Documents, b"a", b"later");
        assert_eq!(extended.len(), 6);
        let last = extended.clone().into_writes().last();
        assert_eq!(
            last,
            Some((Keyspace::Documents, b"a".to_vec(), Some(b"later".to_vec())))
        );
        let unique = owned(extended.into_unique().into_writes());
        assert!(unique.contains(&(Keyspace::Documents, b"a".to_vec(), Some(b"later".to_vec()))));
        assert_eq!(unique.len(), 5);
        assert_eq!(
            shared.get(Keyspace::Documents, b"a"),
            Some(&Some(b"12".to_vec()))
        );
    }

    /// Writes pushed one by one go into one run while they go to one keyspace.
    #[test]
    fn writes_to_one_keyspace_share_a_run() {
        let mut batch = WriteBatch::new();
        for key in [b"a", b"b", b"c"] {
            batch.put(Keyspace::Documents, key, b"1");
        }
        batch.put(Keyspace::Expiry, b"a", b"1");
        batch.put(Keyspace::Documents, b"d", b"1");
        let runs: Vec<(Keyspace, usize)> = batch
            .runs
            .iter()
            .map(|(keyspace, run)| (*keyspace, run.len()))
            .collect();
        assert_eq!(
            runs,
            [
                (Keyspace::Documents, 3),
                (Keyspace::Expiry, 1),
                (Keyspace::Documents, 1)
            ]
        );
    }
}
