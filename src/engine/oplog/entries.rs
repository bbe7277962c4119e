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
//! Owns: the entries' shape, appending and truncation, all inside a writer transaction. Does
//! not own: the keys, the log's size and reading entries back (`state`), operation times
//! (`optime`), what a change stream makes of an entry (`pipeline`).

use super::state::{key, time_of, OplogState, TERM};
use crate::engine::catalog::CollectionMeta;
use crate::engine::documents::record_key;
use crate::engine::writer::txn::Txn;
use crate::error::Result;
use crate::storage::Keyspace;
use bson::{doc, Document, Timestamp};
use std::ops::Bound;

/// Whether changes to `meta` are logged in this group. mongod never logs its session records
/// (`config.transactions`): a retryable write's record changes with the write, unlogged.
pub(in crate::engine) fn logs(txn: &Txn<'_>, meta: &CollectionMeta) -> bool {
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
pub(in crate::engine) fn append_timed(
    txn: &mut Txn<'_>,
    session: Document,
    entry: Document,
) -> Result<()> {
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
pub(in crate::engine) fn truncate(
    txn: &mut Txn<'_>,
    state: &OplogState,
    keep_from: Timestamp,
) -> Result<()> {
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

#[cfg(test)]
#[path = "entries_tests.rs"]
mod engine_tests;
