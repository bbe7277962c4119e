//! A write transaction inside one commit group: every operation of the group reads the
//! committed snapshot overlaid with the writes of the operations before it, so a group behaves
//! exactly like its operations run one after another.
//!
//! Owns: the overlay, the write batch, the catalog changes and the document-counter changes of
//! one group. Does not own: commit and durability (`writer`), document rules (`collection`).

use super::catalog::Catalog;
use super::counts::{self, Delta};
use super::oplog::{GroupLog, OplogState};
use super::optime::OpClock;
use super::Snap;
use crate::error::Result;
use crate::storage::{bounds_are_empty, Keyspace, Snapshot, StorageError, WriteBatch};
use bson::Timestamp;
use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;

type Overlay = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// Pending writes of one group, per keyspace; `None` is a delete.
#[derive(Default)]
struct Overlays {
    catalog: Overlay,
    documents: Overlay,
    indexes: Overlay,
    expiry: Overlay,
    oplog: Overlay,
}

impl Overlays {
    fn of(&self, keyspace: Keyspace) -> &Overlay {
        match keyspace {
            Keyspace::Catalog => &self.catalog,
            Keyspace::Documents => &self.documents,
            Keyspace::Indexes => &self.indexes,
            Keyspace::Expiry => &self.expiry,
            Keyspace::Oplog => &self.oplog,
        }
    }

    fn of_mut(&mut self, keyspace: Keyspace) -> &mut Overlay {
        match keyspace {
            Keyspace::Catalog => &mut self.catalog,
            Keyspace::Documents => &mut self.documents,
            Keyspace::Indexes => &mut self.indexes,
            Keyspace::Expiry => &mut self.expiry,
            Keyspace::Oplog => &mut self.oplog,
        }
    }
}

pub struct Txn<'a> {
    snapshot: &'a Snap,
    overlay: Overlays,
    batch: WriteBatch,
    pub(super) catalog: &'a mut Catalog,
    catalog_changed: bool,
    /// Changes to collections' counters, by collection id: written once each by [`Txn::finish`],
    /// so a group of thousands of inserts writes one counter entry.
    counts: BTreeMap<u64, Delta>,
    /// Issues this group's operation times; `None` for work outside the writer (start-up).
    optimes: Option<Issuer<'a>>,
}

/// The writer's clock for one group: the group's wall-clock time, the last time issued, and
/// the operation log when it is kept.
struct Issuer<'a> {
    clock: &'a OpClock,
    wall_millis: i64,
    last: Option<Timestamp>,
    oplog: Option<&'a OplogState>,
    logged: GroupLog,
}

impl<'a> Txn<'a> {
    pub(super) fn new(snapshot: &'a Snap, catalog: &'a mut Catalog) -> Self {
        Txn {
            snapshot,
            overlay: Default::default(),
            batch: WriteBatch::new(),
            catalog,
            catalog_changed: false,
            counts: BTreeMap::new(),
            optimes: None,
        }
    }

    /// Lets this group issue operation times from `clock` at the wall-clock time `wall_millis`,
    /// and write the operation log when `oplog` is kept.
    pub(super) fn with_op_clock(
        mut self,
        clock: &'a OpClock,
        wall_millis: i64,
        oplog: &'a OplogState,
    ) -> Self {
        self.optimes = Some(Issuer {
            clock,
            wall_millis,
            last: None,
            oplog: oplog.is_enabled().then_some(oplog),
            logged: GroupLog::default(),
        });
        self
    }

    /// Whether this group's changes are written to the operation log.
    pub fn logs_operations(&self) -> bool {
        self.optimes.as_ref().is_some_and(|i| i.oplog.is_some())
    }

    /// The next operation time of this group (strictly after every earlier one) and the
    /// group's wall-clock milliseconds, or `None` for work outside the writer.
    pub(super) fn next_logged_optime(&mut self) -> Option<(Timestamp, i64)> {
        let issuer = self.optimes.as_mut()?;
        let time = issuer.clock.issue(issuer.wall_millis.div_euclid(1000));
        issuer.last = Some(time);
        Some((time, issuer.wall_millis))
    }

    /// Counts an entry of `bytes` written to the log at `time`.
    pub(super) fn note_logged(&mut self, time: Timestamp, bytes: u64) {
        if let Some(issuer) = self.optimes.as_mut() {
            issuer.logged.added = issuer.logged.added.saturating_add(bytes);
            issuer.logged.first_added.get_or_insert(time);
        }
    }

    /// Counts `bytes` of old entries removed from the log, `oldest` being the first one left.
    pub(super) fn note_truncated(&mut self, bytes: u64, oldest: Timestamp) {
        if let Some(issuer) = self.optimes.as_mut() {
            issuer.logged.removed = issuer.logged.removed.saturating_add(bytes);
            issuer.logged.oldest_after = Some(oldest);
        }
    }

    /// What this group has done to the log so far.
    pub(super) fn logged(&self) -> GroupLog {
        self.optimes
            .as_ref()
            .map(|i| i.logged.clone())
            .unwrap_or_default()
    }

    /// The last operation time this group issued, if any.
    pub(super) fn last_optime(&self) -> Option<Timestamp> {
        self.optimes.as_ref().and_then(|issuer| issuer.last)
    }

    pub fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(pending) = self.overlay_of(keyspace).get(key) {
            return Ok(pending.clone());
        }
        Ok(self.snapshot.get(keyspace, key)?)
    }

    pub fn put(&mut self, keyspace: Keyspace, key: Vec<u8>, value: Vec<u8>) {
        self.batch.put(keyspace, key.clone(), value.clone());
        self.overlay_mut(keyspace).insert(key, Some(value));
    }

    pub fn delete(&mut self, keyspace: Keyspace, key: Vec<u8>) {
        self.batch.delete(keyspace, key.clone());
        self.overlay_mut(keyspace).insert(key, None);
    }

    /// Entries whose key starts with `prefix`, in key order, as of this point in the group.
    pub fn scan_prefix<'t>(
        &'t self,
        keyspace: Keyspace,
        prefix: &'t [u8],
    ) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + 't {
        let base = self.snapshot.prefix(keyspace, prefix, false).peekable();
        let pending = self
            .overlay_of(keyspace)
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .peekable();
        Merged {
            base,
            pending,
            reverse: false,
        }
    }

    /// Entries between `start` and `end` in key order (or reverse key order), as of this point
    /// in the group. Owns its bounds, so the iterator borrows only the transaction.
    pub fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        reverse: bool,
    ) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + Send + '_ {
        let base = self
            .snapshot
            .range(
                keyspace,
                start.as_ref().map(Vec::as_slice),
                end.as_ref().map(Vec::as_slice),
                reverse,
            )
            .peekable();
        let empty = bounds_are_empty(
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
        );
        let pending: PendingEntries<'_> = if empty {
            Box::new(std::iter::empty())
        } else if reverse {
            Box::new(self.overlay_of(keyspace).range((start, end)).rev())
        } else {
            Box::new(self.overlay_of(keyspace).range((start, end)))
        };
        Merged {
            base,
            pending: pending.peekable(),
            reverse,
        }
    }

    /// Entries with `from <= key < to`, in key order, as of this point in the group.
    pub fn scan_range<'t>(
        &'t self,
        keyspace: Keyspace,
        from: &'t [u8],
        to: &'t [u8],
    ) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + 't {
        let base = self
            .snapshot
            .range(keyspace, Bound::Included(from), Bound::Excluded(to), false)
            .peekable();
        let pending = self
            .overlay_of(keyspace)
            .range::<[u8], _>((Bound::Included(from), Bound::Excluded(to)))
            .peekable();
        Merged {
            base,
            pending,
            reverse: false,
        }
    }

    /// Records a catalog change made through `catalog` so the writer publishes it.
    pub(super) fn catalog_changed(&mut self) {
        self.catalog_changed = true;
    }

    /// Adds `count` documents and `size` body bytes to collection `collection_id`'s counter.
    pub(super) fn count_change(&mut self, collection_id: u64, count: i64, size: i64) {
        let delta = self.counts.entry(collection_id).or_default();
        delta.count += count;
        delta.size += size;
    }

    /// Deletes a dropped collection's counter, with whatever this group changed in it.
    pub(super) fn drop_counter(&mut self, collection_id: u64) {
        self.counts.remove(&collection_id);
        self.delete(Keyspace::Catalog, counts::counter_key(collection_id));
    }

    /// The group's batch, with each changed counter written once, and whether the catalog
    /// changed.
    pub(super) fn finish(mut self) -> Result<(WriteBatch, bool)> {
        for (collection_id, delta) in std::mem::take(&mut self.counts) {
            if delta.is_zero() {
                continue;
            }
            let base = counts::stored(self.snapshot, collection_id)?.unwrap_or_default();
            self.batch.put(
                Keyspace::Catalog,
                counts::counter_key(collection_id),
                base.apply(delta).encode(),
            );
        }
        Ok((self.batch, self.catalog_changed))
    }

    pub fn pending_bytes(&self) -> usize {
        self.batch.approximate_size()
    }

    fn overlay_of(&self, keyspace: Keyspace) -> &Overlay {
        self.overlay.of(keyspace)
    }

    fn overlay_mut(&mut self, keyspace: Keyspace) -> &mut Overlay {
        self.overlay.of_mut(keyspace)
    }
}

/// The group's pending writes in a range: `None` is a delete.
type PendingEntries<'t> = Box<dyn Iterator<Item = (&'t Vec<u8>, &'t Option<Vec<u8>>)> + Send + 't>;

/// The snapshot's entries merged with the group's pending writes (pending wins), in key order
/// or, when `reverse`, in reverse key order.
struct Merged<B: Iterator, P: Iterator> {
    base: Peekable<B>,
    pending: Peekable<P>,
    reverse: bool,
}

impl<'t, B, P> Iterator for Merged<B, P>
where
    B: Iterator<Item = Result<(Vec<u8>, Vec<u8>), StorageError>>,
    P: Iterator<Item = (&'t Vec<u8>, &'t Option<Vec<u8>>)>,
{
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_pending = match (self.base.peek(), self.pending.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => {
                    return self.base.next().map(|r| r.map_err(Into::into));
                }
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(Ok((bk, _))), Some((pk, _))) => {
                    if *pk == bk {
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
            if take_pending {
                let (key, value) = self.pending.next()?;
                if let Some(value) = value {
                    return Some(Ok((key.clone(), value.clone())));
                }
                // A pending delete hides the entry; keep going.
            } else {
                return self.base.next().map(|r| r.map_err(Into::into));
            }
        }
    }
}

#[cfg(test)]
#[path = "txn_tests.rs"]
mod tests;
