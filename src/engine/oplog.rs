//! The operation log: one entry per committed change — insert, update (with its `$v: 2` diff),
//! replacement, delete (the TTL reaper's included) and DDL — written by the change's own job in
//! the same atomic commit, keyed by its operation time. Kept only in replica-set mode; it is
//! what change streams and reads of `local.oplog.rs` read.
//!
//! Entries have mongod's shape: `{ts, t, op, ns, ui, o, o2?, wall, v: 2}` with `op` one of `i`,
//! `u`, `d`, `c`; an update's `o` is `{$v: 2, diff}` and a replacement's the whole new document,
//! both with `o2` the document's `documentKey` (`{_id}`; in a partitioned collection
//! `{<shard key path>: value, _id}`, [`record_key::document_key`]), which is also a delete's
//! `o` and, in a partitioned collection, an insert's `o2`, as mongod logs a sharded
//! collection's changes. The log is bounded by size (`--oplogSizeMB`): past it, the writer
//! removes the oldest entries in the same group that adds new ones.
//!
//! Owns: the entries' shape and keys, appending, truncation, and reading entries back. Does not
//! own: operation times (`optime`), what a change stream makes of an entry (`pipeline`).

use super::catalog::CollectionMeta;
use super::record_key;
use super::txn::Txn;
use crate::error::Result;
use crate::storage::{Keyspace, Snapshot};
use bson::{doc, Document, Timestamp};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The term every entry carries: a one-member set never holds an election after its first.
pub const TERM: i64 = 1;

/// The name the oldest entry's lock is logged and counted under. It holds one `Option`
/// assigned whole, so a poisoned lock is recovered (and counted).
const OLDEST: &str = "oplog oldest entry";

/// Whether the log is kept, how large it may grow, and how large it is.
#[derive(Debug, Default)]
pub struct OplogState {
    enabled: AtomicBool,
    max_bytes: AtomicU64,
    /// Bytes of the committed entries.
    bytes: AtomicU64,
    /// The oldest committed entry's time; `None` while the log is empty.
    oldest: Mutex<Option<Timestamp>>,
}

impl OplogState {
    /// Starts keeping the log, at most `max_bytes` large, measuring what `snapshot` holds.
    pub(super) fn enable<S: Snapshot>(&self, snapshot: &S, max_bytes: u64) -> Result<()> {
        let mut bytes = 0u64;
        let mut oldest = None;
        for entry in snapshot.range(Keyspace::Oplog, Bound::Unbounded, Bound::Unbounded, false) {
            let (key, value) = entry?;
            if oldest.is_none() {
                oldest = time_of(&key);
            }
            bytes = bytes.saturating_add(value.len() as u64);
        }
        self.bytes.store(bytes, Ordering::Release);
        self.set_oldest(oldest);
        self.max_bytes.store(max_bytes.max(1), Ordering::Release);
        self.enabled.store(true, Ordering::Release);
        Ok(())
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Bytes the committed entries take.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes.load(Ordering::Acquire)
    }

    /// The oldest entry still in the log: a resume point before it is gone.
    pub fn oldest(&self) -> Option<Timestamp> {
        *crate::sync::lock_recovering(&self.oldest, OLDEST)
    }

    fn set_oldest(&self, time: Option<Timestamp>) {
        *crate::sync::lock_recovering(&self.oldest, OLDEST) = time;
    }

    /// Records a committed group's effect on the log.
    pub(super) fn committed(&self, change: &GroupLog) {
        if change.added == 0 && change.removed == 0 {
            return;
        }
        let bytes = self
            .bytes()
            .saturating_add(change.added)
            .saturating_sub(change.removed);
        self.bytes.store(bytes, Ordering::Release);
        match change.oldest_after {
            Some(oldest) => self.set_oldest(Some(oldest)),
            None => {
                if self.oldest().is_none() {
                    self.set_oldest(change.first_added);
                }
            }
        }
    }
}

/// What one group did to the log, applied to [`OplogState`] once it is committed.
#[derive(Debug, Default, Clone)]
pub struct GroupLog {
    pub added: u64,
    pub removed: u64,
    pub first_added: Option<Timestamp>,
    /// The oldest entry left after this group truncated the log.
    pub oldest_after: Option<Timestamp>,
}

/// The key of the entry at `time`: big-endian, so key order is time order.
pub fn key(time: Timestamp) -> [u8; 8] {
    ((u64::from(time.time) << 32) | u64::from(time.increment)).to_be_bytes()
}

/// The time an entry's key stands for.
pub fn time_of(key: &[u8]) -> Option<Timestamp> {
    let bytes: [u8; 8] = key.try_into().ok()?;
    let packed = u64::from_be_bytes(bytes);
    Some(Timestamp {
        time: (packed >> 32) as u32,
        increment: (packed & 0xffff_ffff) as u32,
    })
}

/// Whether changes to `meta` are logged in this group. mongod never logs its session records
/// (`config.transactions`): a retryable write's record changes with the write, unlogged.
pub(super) fn logs(txn: &Txn<'_>, meta: &CollectionMeta) -> bool {
    txn.logs_operations() && !(meta.db == "config" && meta.name == "transactions")
}

/// An inserted document.
pub fn insert(txn: &mut Txn<'_>, meta: &CollectionMeta, doc: &Document) -> Result<()> {
    if !logs(txn, meta) {
        return Ok(());
    }
    let key = meta
        .partition_path()
        .map(|_| record_key::document_key(meta, doc));
    append(
        txn,
        "i",
        &meta.namespace(),
        Some(meta),
        doc.clone(),
        key,
        None,
    )
}

/// An update of `old` into `new`, recorded as their diff.
pub fn update(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    old: &Document,
    new: &Document,
) -> Result<()> {
    if !logs(txn, meta) {
        return Ok(());
    }
    let diff = crate::query::diff::diff(old, new);
    let images = meta.keeps_images().then_some((old, new));
    append(
        txn,
        "u",
        &meta.namespace(),
        Some(meta),
        doc! {"$v": 2, "diff": diff},
        Some(record_key::document_key(meta, new)),
        images,
    )
}

/// A replacement of `old` by `new` (the whole document is recorded).
pub fn replace(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    old: &Document,
    new: &Document,
) -> Result<()> {
    if !logs(txn, meta) {
        return Ok(());
    }
    append(
        txn,
        "u",
        &meta.namespace(),
        Some(meta),
        new.clone(),
        Some(record_key::document_key(meta, new)),
        meta.keeps_images().then_some((old, new)),
    )
}

/// A deleted document (its `_id` is recorded).
pub fn delete(txn: &mut Txn<'_>, meta: &CollectionMeta, old: &Document) -> Result<()> {
    if !logs(txn, meta) {
        return Ok(());
    }
    append(
        txn,
        "d",
        &meta.namespace(),
        Some(meta),
        record_key::document_key(meta, old),
        None,
        meta.keeps_images().then_some((old, old)),
    )
}

/// A DDL command run on database `db` (`o` is the command as mongod logs it, e.g.
/// `{drop: "c"}`); `meta` is the collection it concerns, if any.
pub fn command(
    txn: &mut Txn<'_>,
    db: &str,
    meta: Option<&CollectionMeta>,
    o: Document,
) -> Result<()> {
    append(txn, "c", &format!("{db}.$cmd"), meta, o, None, None)
}

fn append(
    txn: &mut Txn<'_>,
    op: &str,
    ns: &str,
    meta: Option<&CollectionMeta>,
    o: Document,
    o2: Option<Document>,
    images: Option<(&Document, &Document)>,
) -> Result<()> {
    if !txn.logs_operations() {
        return Ok(());
    }
    let mut entry = doc! {"op": op, "ns": ns};
    if let Some(meta) = meta {
        entry.insert("ui", meta.uuid);
    }
    entry.insert("o", o);
    if let Some(o2) = o2 {
        entry.insert("o2", o2);
    }
    // A collection with `changeStreamPreAndPostImages` keeps the document before (and, for an
    // update, after) the change in the entry itself, where mongod keeps them aside.
    if let Some((pre, post)) = images {
        entry.insert("preImage", pre.clone());
        if op == "u" {
            entry.insert("postImage", post.clone());
        }
    }
    // A multi-document transaction's statement keeps it until the transaction commits.
    let Some(entry) = txn.defer_log_entry(entry) else {
        return Ok(());
    };
    append_timed(txn, Document::new(), entry)
}

/// Writes `entry` (`{op, ns, ui?, o, o2?}`) at the group's next operation time, after the
/// fields of `session` (a transaction's `lsid` and `txnNumber`, as mongod logs them).
pub(super) fn append_timed(txn: &mut Txn<'_>, session: Document, entry: Document) -> Result<()> {
    let Some((time, wall)) = txn.next_logged_optime() else {
        return Ok(());
    };
    let mut entry = session.into_iter().chain(entry).collect::<Document>();
    entry.insert("ts", time);
    entry.insert("t", TERM);
    entry.insert("v", 2_i64);
    entry.insert("wall", bson::DateTime::from_millis(wall));
    let mut value = Vec::new();
    entry
        .to_writer(&mut value)
        .map_err(|e| crate::error::Error::internal(format!("cannot encode a log entry: {e}")))?;
    txn.note_logged(time, value.len() as u64);
    txn.put(Keyspace::Oplog, key(time).to_vec(), value);
    Ok(())
}

/// Removes the oldest entries until the log is within its size, keeping every entry of this
/// group (those from `keep_from` on). Called by the writer before a group commits.
pub(super) fn truncate(txn: &mut Txn<'_>, state: &OplogState, keep_from: Timestamp) -> Result<()> {
    let max = state.max_bytes();
    let mut size = state
        .bytes()
        .saturating_add(txn.logged().added)
        .saturating_sub(txn.logged().removed);
    if size <= max {
        return Ok(());
    }
    let stop = key(keep_from).to_vec();
    let mut doomed = Vec::new();
    let mut oldest_after = None;
    for entry in txn.range(
        Keyspace::Oplog,
        Bound::Unbounded,
        Bound::Excluded(stop),
        false,
    ) {
        let (key, value) = entry?;
        if size <= max {
            oldest_after = time_of(&key);
            break;
        }
        size = size.saturating_sub(value.len() as u64);
        doomed.push((key, value.len() as u64));
    }
    let removed: u64 = doomed.iter().map(|(_, len)| len).sum();
    for (key, _) in doomed {
        txn.delete(Keyspace::Oplog, key);
    }
    txn.note_truncated(removed, oldest_after.unwrap_or(keep_from));
    Ok(())
}

/// The newest entry's time in `snapshot`, or the zero time when the log is empty: operation
/// times continue from it after a restart.
pub(super) fn newest<S: Snapshot>(snapshot: &S) -> Result<Timestamp> {
    let newest = snapshot
        .range(Keyspace::Oplog, Bound::Unbounded, Bound::Unbounded, true)
        .next()
        .transpose()?;
    Ok(newest
        .and_then(|(key, _)| time_of(&key))
        .unwrap_or(Timestamp {
            time: 0,
            increment: 0,
        }))
}

/// The entries after `after` (all of them for `None`) in `snapshot`, oldest first, each with
/// its time.
pub fn entries_after<S: Snapshot>(
    snapshot: &S,
    after: Option<Timestamp>,
) -> impl Iterator<Item = Result<(Timestamp, Document)>> {
    let start = after.map(|t| key(t).to_vec());
    let iter = match &start {
        Some(start) => snapshot.range(
            Keyspace::Oplog,
            Bound::Excluded(start.as_slice()),
            Bound::Unbounded,
            false,
        ),
        None => snapshot.range(Keyspace::Oplog, Bound::Unbounded, Bound::Unbounded, false),
    };
    iter.map(|entry| {
        let (key, value) = entry?;
        let time = time_of(&key)
            .ok_or_else(|| crate::error::Error::internal("a log entry with a malformed key"))?;
        let doc = Document::from_reader(value.as_slice())
            .map_err(|e| crate::error::Error::internal(format!("a corrupt log entry: {e}")))?;
        Ok((time, doc))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_times_and_read_back() {
        let times = [
            Timestamp {
                time: 1,
                increment: 9,
            },
            Timestamp {
                time: 2,
                increment: 1,
            },
            Timestamp {
                time: 2,
                increment: 2,
            },
            Timestamp {
                time: u32::MAX,
                increment: 1,
            },
        ];
        for pair in times.windows(2) {
            assert!(key(pair[0]) < key(pair[1]));
        }
        for t in times {
            assert_eq!(time_of(&key(t)), Some(t));
        }
        assert_eq!(time_of(b"short"), None);
    }
}

#[cfg(test)]
#[path = "oplog_tests.rs"]
mod engine_tests;
