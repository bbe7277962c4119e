//! A write transaction inside one commit group: every operation of the group reads the
//! committed snapshot overlaid with the writes of the operations before it, so a group behaves
//! exactly like its operations run one after another.
//!
//! Owns: the overlay (each pending write held once: the commit's batch is made from it), the
//! catalog changes and the document-counter changes of one group. Does not own: commit and durability (`writer`), document rules (`collection`).

use crate::engine::catalog::Catalog;
use crate::engine::documents::counts::{self, Delta};
use crate::engine::index_usage::IndexUsage;
use crate::engine::oplog::optime::OpClock;
use crate::engine::oplog::state::{GroupLog, OplogState};
use crate::engine::ttl_activity::TtlActivity;
use crate::error::Result;
use crate::storage::handle::Snap;
use crate::storage::overlay::{Merged, Overlay, Pending};
use crate::storage::{probe, Keyspace, Snapshot, WriteBatch};
use bson::{Document, Timestamp};
use std::collections::BTreeMap;
use std::ops::Bound;

pub struct Txn<'a> {
    snapshot: &'a Snap,
    overlay: Overlay,
    /// Roughly the bytes the group's batch will hold, to bound a group.
    pending_bytes: usize,
    pub(in crate::engine) catalog: &'a mut Catalog,
    catalog_changed: bool,
    /// Changes to collections' counters, by collection id: written once each by [`Txn::finish`],
    /// so a group of thousands of inserts writes one counter entry.
    counts: BTreeMap<u64, Delta>,
    /// Issues this group's operation times; `None` for work outside the writer (start-up).
    optimes: Option<Issuer<'a>>,
    /// A multi-document transaction's statement: its log entries are kept here, without
    /// times, until the transaction commits.
    deferred_log: Option<Vec<Document>>,
    /// A multi-document transaction's statement: the unique index keys it checked (each an
    /// index entry prefix), so the commit can check that no one else took them meanwhile.
    unique_claims: Option<Vec<Vec<u8>>>,
    /// The index access counters the group's reads record their plans in; `None` for work
    /// outside the writer and transactions (start-up, tests).
    index_usage: Option<&'a IndexUsage>,
    /// Where writes of a root `ttl` field into a collection without a TTL index are noted
    /// (one log line per collection); `None` outside the writer and transactions.
    ttl_activity: Option<&'a TtlActivity>,
    /// A multi-document transaction's statement: the records it writes carry [`PENDING_TS`]
    /// instead of the statement's time ([`Txn::write_time`]).
    pending_stamps: bool,
}

/// The `_ts` of a record a multi-document transaction has written and not yet committed. A
/// write's `_ts` is the time it becomes visible to others, its commit time, which is not known
/// while the transaction runs; its commit replaces this stamp with that time
/// (`writer::commit_time`). No clock reaches it, and `_ts + lifetime` overflows
/// `i64`, which [`ttl::expires_at`](crate::ttl::expires_at) reads as "never": the transaction's
/// own writes do not expire under it, however long it runs.
pub const PENDING_TS: i64 = i64::MAX;

/// A multi-document transaction's pending work between its statements: what a [`Txn`] holds,
/// less its borrows.
#[derive(Default, Clone)]
pub struct Suspended {
    pub overlay: Overlay,
    pub counts: BTreeMap<u64, Delta>,
    pub catalog_changed: bool,
    /// Log entries without times, in order.
    pub log: Vec<Document>,
    pub unique_claims: Vec<Vec<u8>>,
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
    pub(in crate::engine) fn new(snapshot: &'a Snap, catalog: &'a mut Catalog) -> Self {
        Txn {
            snapshot,
            overlay: Default::default(),
            pending_bytes: 0,
            catalog,
            catalog_changed: false,
            counts: BTreeMap::new(),
            optimes: None,
            deferred_log: None,
            unique_claims: None,
            index_usage: None,
            ttl_activity: None,
            pending_stamps: false,
        }
    }

    /// Continues a multi-document transaction's work over its snapshot and catalog: reads see
    /// its earlier writes, log entries are kept without times when `logs` (the log is kept),
    /// and unique keys checked are remembered for the commit.
    pub(in crate::engine) fn resume(
        snapshot: &'a Snap,
        catalog: &'a mut Catalog,
        state: Suspended,
        logs: bool,
    ) -> Self {
        let mut txn = Txn::new(snapshot, catalog);
        txn.overlay = state.overlay;
        txn.counts = state.counts;
        txn.catalog_changed = state.catalog_changed;
        txn.deferred_log = logs.then_some(state.log);
        txn.unique_claims = Some(state.unique_claims);
        txn.pending_stamps = true;
        txn
    }

    /// The `_ts` of a record written by this group's operation at `ts` (TTL-15): `ts` itself,
    /// or [`PENDING_TS`] in a multi-document transaction's statement, whose commit stamps its
    /// records with the commit time.
    pub fn write_time(&self, ts: i64) -> i64 {
        if self.pending_stamps {
            PENDING_TS
        } else {
            ts
        }
    }

    /// The work done so far, to be resumed by the transaction's next statement or committed.
    pub(in crate::engine) fn suspend(self) -> Suspended {
        Suspended {
            overlay: self.overlay,
            counts: self.counts,
            catalog_changed: self.catalog_changed,
            log: self.deferred_log.unwrap_or_default(),
            unique_claims: self.unique_claims.unwrap_or_default(),
        }
    }

    /// Keeps a log entry (without its time) for the transaction's commit, or gives it back
    /// when this is not a transaction's statement.
    pub(in crate::engine) fn defer_log_entry(&mut self, entry: Document) -> Option<Document> {
        match &mut self.deferred_log {
            Some(log) => {
                log.push(entry);
                None
            }
            None => Some(entry),
        }
    }

    /// Remembers that a transaction's statement claimed the unique index keys under `prefix`.
    pub(in crate::engine) fn claim_unique(&mut self, prefix: &[u8]) {
        if let Some(claims) = &mut self.unique_claims {
            claims.push(prefix.to_vec());
        }
    }

    /// Lets this group issue operation times from `clock` at the wall-clock time `wall_millis`,
    /// and write the operation log when `oplog` is kept.
    /// Records the plans of this transaction's reads in `usage` (`$indexStats`).
    pub(in crate::engine) fn with_index_usage(mut self, usage: &'a IndexUsage) -> Self {
        self.index_usage = Some(usage);
        self
    }

    /// The index access counters this transaction's reads record in, if any.
    pub fn index_usage(&self) -> Option<&IndexUsage> {
        self.index_usage
    }

    /// Notes this group's writes of ignored `ttl` fields in `activity`.
    pub(in crate::engine) fn with_ttl_activity(mut self, activity: &'a TtlActivity) -> Self {
        self.ttl_activity = Some(activity);
        self
    }

    /// Where this group notes writes of ignored `ttl` fields, if anywhere.
    pub fn ttl_activity(&self) -> Option<&TtlActivity> {
        self.ttl_activity
    }

    pub(in crate::engine) fn with_op_clock(
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

    /// Whether this group's changes are written to the operation log (a transaction's
    /// statement keeps them for its commit).
    pub fn logs_operations(&self) -> bool {
        self.deferred_log.is_some() || self.optimes.as_ref().is_some_and(|i| i.oplog.is_some())
    }

    /// The next operation time of this group (strictly after every earlier one) and the
    /// group's wall-clock milliseconds, or `None` for work outside the writer.
    pub(in crate::engine) fn next_logged_optime(&mut self) -> Option<(Timestamp, i64)> {
        let issuer = self.optimes.as_mut()?;
        let time = issuer.clock.issue(issuer.wall_millis.div_euclid(1000));
        issuer.last = Some(time);
        Some((time, issuer.wall_millis))
    }

    /// Counts an entry of `bytes` written to the log at `time`.
    pub(in crate::engine) fn note_logged(&mut self, time: Timestamp, bytes: u64) {
        if let Some(issuer) = self.optimes.as_mut() {
            issuer.logged.added = issuer.logged.added.saturating_add(bytes);
            issuer.logged.first_added.get_or_insert(time);
        }
    }

    /// Counts `bytes` of old entries removed from the log, `oldest` being the first one left.
    pub(in crate::engine) fn note_truncated(&mut self, bytes: u64, oldest: Timestamp) {
        if let Some(issuer) = self.optimes.as_mut() {
            issuer.logged.removed = issuer.logged.removed.saturating_add(bytes);
            issuer.logged.oldest_after = Some(oldest);
        }
    }

    /// What this group has done to the log so far.
    pub(in crate::engine) fn logged(&self) -> GroupLog {
        self.optimes
            .as_ref()
            .map(|i| i.logged.clone())
            .unwrap_or_default()
    }

    /// The last operation time this group issued, if any.
    pub(in crate::engine) fn last_optime(&self) -> Option<Timestamp> {
        self.optimes.as_ref().and_then(|issuer| issuer.last)
    }

    pub fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_unless_unheld(keyspace, key, false)
    }

    /// [`Txn::get`] of a key that [`Txn::probe_documents`] found the snapshot does not hold
    /// when `unheld`: only the group's own writes are looked at then.
    pub fn get_unless_unheld(
        &self,
        keyspace: Keyspace,
        key: &[u8],
        unheld: bool,
    ) -> Result<Option<Vec<u8>>> {
        if let Some(pending) = self.overlay.get(keyspace, key) {
            return Ok(pending.clone());
        }
        if unheld {
            return Ok(None);
        }
        Ok(self.snapshot.get(keyspace, key)?)
    }

    /// Of `keys` (`Documents` keys about to be read, such as a bulk insert's; ascending and
    /// distinct), the positions of those the group's snapshot surely does not hold, found with
    /// one ordered walk ([`probe::absent`]) instead of a point read each. The snapshot never
    /// changes within a group, so the answer holds for the rest of it; keys the walk does not
    /// decide are left out, and are read one by one.
    pub fn probe_documents<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<usize>> {
        Ok(probe::absent(self.snapshot, Keyspace::Documents, keys)?)
    }

    /// The values of `keys` (`Documents` keys, ascending and distinct) as of this point in the
    /// group, one per key: the group's own writes first, then the snapshot's values read by one
    /// ordered walk ([`probe::values`]) instead of a point read each, and the keys that walk
    /// leaves undecided read one by one. The reaper reads a batch of due documents so.
    pub fn get_documents<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        let found = probe::values(self.snapshot, Keyspace::Documents, keys)?;
        keys.iter()
            .zip(found)
            .map(|(key, found)| {
                let key = key.as_ref();
                if let Some(pending) = self.overlay.get(Keyspace::Documents, key) {
                    return Ok(pending.clone());
                }
                match found {
                    probe::Found::Held(value) => Ok(Some(value)),
                    probe::Found::Absent => Ok(None),
                    probe::Found::Undecided => Ok(self.snapshot.get(Keyspace::Documents, key)?),
                }
            })
            .collect()
    }

    /// Announces `writes` writes to `keyspace` in ascending key order, so that the pending
    /// writes make room for them at once ([`Overlay::reserve`]).
    pub fn reserve(&mut self, keyspace: Keyspace, writes: usize) {
        self.overlay.reserve(keyspace, writes);
    }

    pub fn put(&mut self, keyspace: Keyspace, key: Vec<u8>, value: Vec<u8>) {
        self.pending_bytes += key.len() + value.len() + PER_WRITE_BYTES;
        self.overlay.put(keyspace, key, value);
    }

    pub fn delete(&mut self, keyspace: Keyspace, key: Vec<u8>) {
        self.pending_bytes += key.len() + PER_WRITE_BYTES;
        self.overlay.delete(keyspace, key);
    }

    /// Entries whose key starts with `prefix`, in key order, as of this point in the group.
    pub fn scan_prefix<'t>(
        &'t self,
        keyspace: Keyspace,
        prefix: &'t [u8],
    ) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + 't {
        let base = self.snapshot.prefix(keyspace, prefix, false);
        let pending = self
            .overlay_of(keyspace)
            .range((Bound::Included(prefix), Bound::Unbounded), false)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(owned);
        Merged::new(base, pending, false).map(|r| r.map_err(Into::into))
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
        let base = self.snapshot.range(
            keyspace,
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
            reverse,
        );
        let bounds = (
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
        );
        let pending = self.overlay_of(keyspace).range(bounds, reverse).map(owned);
        Merged::new(base, pending, reverse).map(|r| r.map_err(Into::into))
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
            .range(keyspace, Bound::Included(from), Bound::Excluded(to), false);
        let pending = self
            .overlay_of(keyspace)
            .range((Bound::Included(from), Bound::Excluded(to)), false)
            .map(owned);
        Merged::new(base, pending, false).map(|r| r.map_err(Into::into))
    }

    /// Records a catalog change made through `catalog` so the writer publishes it.
    pub(in crate::engine) fn catalog_changed(&mut self) {
        self.catalog_changed = true;
    }

    /// Adds `count` documents and `size` body bytes to collection `collection_id`'s counter.
    pub(in crate::engine) fn count_change(&mut self, collection_id: u64, count: i64, size: i64) {
        let delta = self.counts.entry(collection_id).or_default();
        delta.count += count;
        delta.size += size;
    }

    /// Deletes a dropped collection's counter, with whatever this group changed in it.
    pub(in crate::engine) fn drop_counter(&mut self, collection_id: u64) {
        self.counts.remove(&collection_id);
        self.delete(Keyspace::Catalog, counts::counter_key(collection_id));
    }

    /// The group's batch, with each changed counter written once, and whether the catalog
    /// changed.
    pub(in crate::engine) fn finish(self) -> Result<(WriteBatch, bool)> {
        // The overlay holds each key once: its runs become the batch's as they are.
        let (writes, changed) = self.finish_writes()?;
        Ok((WriteBatch::of_overlay(writes), changed))
    }

    /// The group's pending writes, with each changed counter written once, and whether the
    /// catalog changed.
    pub(in crate::engine) fn finish_writes(mut self) -> Result<(Overlay, bool)> {
        for (collection_id, delta) in std::mem::take(&mut self.counts) {
            if delta.is_zero() {
                continue;
            }
            let base = counts::stored(self.snapshot, collection_id)?.unwrap_or_default();
            self.overlay.put(
                Keyspace::Catalog,
                counts::counter_key(collection_id),
                base.apply(delta).encode(),
            );
        }
        Ok((self.overlay, self.catalog_changed))
    }

    /// A collection's stored totals as of this point in the group: the committed counter plus
    /// the group's changes so far (expired, unreaped documents included).
    pub fn totals(&self, collection_id: u64) -> Result<counts::Totals> {
        let base = counts::stored(self.snapshot, collection_id)?.unwrap_or_default();
        Ok(match self.counts.get(&collection_id) {
            Some(delta) => base.apply(*delta),
            None => base,
        })
    }

    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    fn overlay_of(&self, keyspace: Keyspace) -> &Pending {
        self.overlay.of(keyspace)
    }
}

fn owned((key, value): (&Vec<u8>, &Option<Vec<u8>>)) -> (Vec<u8>, Option<Vec<u8>>) {
    (key.clone(), value.clone())
}

/// What a write adds to [`Txn::pending_bytes`] beyond its key and value.
const PER_WRITE_BYTES: usize = 16;

#[cfg(test)]
#[path = "txn_tests.rs"]
mod tests;
