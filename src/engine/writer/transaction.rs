//! Multi-document transactions: snapshot isolation over the storage snapshot taken when the
//! transaction starts, with its writes buffered until it commits through the writer.
//!
//! A [`Transaction`] keeps its snapshot, its own copy of the catalog (an insert may create a
//! collection), the time it started, and the pending work of its statements ([`Suspended`]).
//! Each statement runs the same document code as any write, on a [`Txn`] resumed over that
//! snapshot and catalog, on the caller's thread: nothing reaches the writer before the commit.
//! Reads see the snapshot with the transaction's own writes over it
//! ([`Transaction::read_view`]). Every statement judges expiry at its own time, and the records
//! the transaction writes take its commit time as `_ts` (`writer::commit_time`,
//! which states the rule).
//!
//! # Conflicts
//!
//! First writer wins, as in mongod. When a statement writes a document, the transaction takes
//! the document's key in the engine's [`LockTable`](crate::engine::writer::locks::LockTable); a key another open transaction holds, or a
//! document committed by anyone since the snapshot, is a write conflict (112) at once. Writes
//! outside transactions do not wait for these locks; the commit catches what they changed:
//! [`Transaction::apply`] runs inside the writer's group and compares every key the transaction
//! writes, and every unique index key it claimed, with what the snapshot held, and checks that
//! the collections it wrote to are still the ones it saw; a document it writes that expired
//! since the snapshot was deleted since, as far as it is concerned (`commit_time`). Any
//! difference is a write conflict and nothing of the transaction is applied. Otherwise its writes, its counter changes, its
//! catalog changes and its log entries (each with the transaction's `lsid` and `txnNumber`)
//! join the group, so they commit atomically, durably and in one step.
//!
//! Owns: a transaction's state, the lock table, conflict detection and the commit's effects.
//! Does not own: sessions, transaction numbers, lifetimes or which commands may run in one
//! (`command`).

use crate::engine::catalog::Catalog;
use crate::engine::documents::counts;
use crate::engine::oplog::entries as oplog;
use crate::engine::read::ReadView;
use crate::engine::reader::Reader;
use crate::engine::writer::commit_time;
use crate::engine::writer::txn::{Suspended, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::storage::handle::Snap;
use crate::storage::overlay::Overlay;
use crate::storage::{Keyspace, Snapshot};
use bson::Document;
use std::collections::HashSet;
use std::ops::Bound;
use std::sync::Arc;

/// mongod's write-conflict error; the command layer adds the `TransientTransactionError` label.
pub fn write_conflict() -> Error {
    Error::new(
        ErrorCode::WriteConflict,
        "Write conflict during plan execution and yielding is disabled. :: Please retry your \
         operation or multi-document transaction.",
    )
}

/// An open multi-document transaction.
pub struct Transaction {
    reader: Reader,
    base: Snap,
    base_catalog: Arc<Catalog>,
    catalog: Catalog,
    /// The server time when the snapshot was taken.
    read_time: i64,
    work: Suspended,
    /// What reads see (the writes with the counters they change), built when first needed
    /// after a write.
    visible: Option<(Arc<Overlay>, Arc<Catalog>)>,
    logs: bool,
    id: u64,
    locked: HashSet<Vec<u8>>,
}

impl Reader {
    /// Starts a transaction on the last commit, at the current server time.
    pub fn begin_transaction(&self) -> Result<Transaction> {
        let view = self.read()?;
        Ok(Transaction {
            reader: self.clone(),
            base: view.snapshot,
            base_catalog: Arc::clone(&view.catalog),
            catalog: (*view.catalog).clone(),
            read_time: view.now,
            work: Suspended::default(),
            visible: None,
            logs: self.oplog().is_enabled(),
            id: self.locks().next_owner(),
            locked: HashSet::new(),
        })
    }
}

impl Transaction {
    /// The time a statement starting now judges expiry at (TTL-18, TTL-19): the server's
    /// time, not the snapshot's, so a statement never reads or matches a document expired by
    /// then; never before the transaction's start, should the clock step back.
    fn statement_time(&self) -> i64 {
        self.reader.clock.now_secs().max(self.read_time)
    }

    /// Whether collection `db.name` existed when the transaction started.
    pub fn existed_at_start(&self, db: &str, name: &str) -> bool {
        self.base_catalog.get(db, name).is_some()
    }

    /// Whether a statement has written anything.
    pub fn has_writes(&self) -> bool {
        !self.work.overlay.is_empty()
    }

    /// Runs one statement's writes at the statement's time, keeping them pending (their
    /// records stamped as pending, [`Txn::write_time`]).
    /// Fails with a write conflict when a document it wrote is held by another transaction
    /// or was changed since the snapshot; the transaction must then be aborted.
    pub fn write<R>(&mut self, job: impl FnOnce(&mut Txn<'_>, i64) -> R) -> Result<R> {
        let now = self.statement_time();
        let work = std::mem::take(&mut self.work);
        let mut txn = Txn::resume(&self.base, &mut self.catalog, work, self.logs)
            .with_index_usage(self.reader.catalog.index_usage())
            .with_ttl_activity(self.reader.catalog.ttl_activity());
        let value = job(&mut txn, now);
        self.work = txn.suspend();
        self.visible = None;
        self.lock_new_writes()?;
        Ok(value)
    }

    fn lock_new_writes(&mut self) -> Result<()> {
        let latest = self.reader.latest_snapshot();
        let locks = Arc::clone(self.reader.locks());
        for key in self.work.overlay.of(Keyspace::Documents).keys() {
            if self.locked.contains(key) {
                continue;
            }
            if !locks.take(key, self.id)? {
                return Err(write_conflict());
            }
            self.locked.insert(key.clone());
            if latest.get(Keyspace::Documents, key)? != self.base.get(Keyspace::Documents, key)? {
                return Err(write_conflict());
            }
        }
        Ok(())
    }

    /// A view of the snapshot with this transaction's writes over it, judging expiry at the
    /// statement's time.
    pub fn read_view(&mut self) -> Result<ReadView> {
        let (writes, catalog) = match &self.visible {
            Some(visible) => visible.clone(),
            None => {
                let built = self.build_visible()?;
                self.visible = Some(built.clone());
                built
            }
        };
        Ok(self.reader.view_of(
            self.base.clone().overlaid(writes),
            catalog,
            self.statement_time(),
        ))
    }

    fn build_visible(&self) -> Result<(Arc<Overlay>, Arc<Catalog>)> {
        let mut writes = self.work.overlay.clone();
        for (collection_id, delta) in &self.work.counts {
            let base = counts::stored(&self.base, *collection_id)?.unwrap_or_default();
            writes.put(
                Keyspace::Catalog,
                counts::counter_key(*collection_id),
                base.apply(*delta).encode(),
            );
        }
        let catalog = if self.work.catalog_changed {
            Arc::new(self.catalog.clone())
        } else {
            Arc::clone(&self.base_catalog)
        };
        Ok((Arc::new(writes), catalog))
    }

    /// Applies the transaction to the writer's group `txn` as committed at `now`, after
    /// checking that nothing it wrote or relied on changed or expired since its snapshot (else
    /// a write conflict, and nothing is applied). Its records take `now` as their `_ts`; its log
    /// entries carry `session` (`lsid`, `txnNumber`) first.
    pub fn apply(mut self, txn: &mut Txn<'_>, now: i64, session: &Document) -> Result<()> {
        self.check_unchanged(txn)?;
        // A write a client was told succeeded is never undone by expiry: a document that
        // expired since the snapshot conflicts here, and what commits lives from `commit`.
        let commit = now.max(self.read_time);
        let expired = commit_time::expired_since(
            &self.base,
            &self.work.overlay,
            &self.catalog,
            self.read_time,
            commit,
        )?;
        if expired {
            return Err(write_conflict());
        }
        let work = std::mem::take(&mut self.work);
        for (keyspace, key, value) in commit_time::stamped(work.overlay, commit)? {
            match value {
                Some(value) => txn.put(keyspace, key, value),
                None => txn.delete(keyspace, key),
            }
        }
        for (collection_id, delta) in &work.counts {
            txn.count_change(*collection_id, delta.count, delta.size);
        }
        if work.catalog_changed {
            *txn.catalog = std::mem::take(&mut self.catalog);
            txn.catalog_changed();
        }
        for entry in work.log {
            oplog::append_timed(txn, session.clone(), entry)?;
        }
        Ok(())
    }

    fn check_unchanged(&self, txn: &Txn<'_>) -> Result<()> {
        if self.work.catalog_changed {
            if !txn.catalog.same_as(&self.base_catalog) {
                return Err(write_conflict());
            }
        } else {
            for collection_id in self.work.counts.keys() {
                let then = self.base_catalog.by_id(*collection_id);
                let now = txn.catalog.by_id(*collection_id);
                let same = match (then, now) {
                    (Some(then), Some(now)) => Arc::ptr_eq(then, now),
                    _ => false,
                };
                if !same {
                    return Err(write_conflict());
                }
            }
        }
        for (keyspace, key, _) in self.work.overlay.entries() {
            if txn.get(keyspace, key)? != self.base.get(keyspace, key)? {
                return Err(write_conflict());
            }
        }
        for prefix in &self.work.unique_claims {
            let then = self.keys_under(prefix);
            let now = txn
                .scan_prefix(Keyspace::Indexes, prefix)
                .map(|entry| entry.map(|(key, _)| key));
            if !then.map(|r| r.map_err(Error::from)).eq_by_result(now)? {
                return Err(write_conflict());
            }
        }
        Ok(())
    }

    fn keys_under<'a>(
        &'a self,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = Result<Vec<u8>, crate::storage::StorageError>> + 'a {
        self.base
            .range(
                Keyspace::Indexes,
                Bound::Included(prefix),
                Bound::Unbounded,
                false,
            )
            .take_while(move |entry| entry.as_ref().map_or(true, |(k, _)| k.starts_with(prefix)))
            .map(|entry| entry.map(|(key, _)| key))
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.reader.locks().release(&self.locked, self.id);
    }
}

/// Compares two fallible sequences, failing on the first error of either.
trait EqByResult: Iterator<Item = Result<Vec<u8>>> + Sized {
    fn eq_by_result(mut self, mut other: impl Iterator<Item = Result<Vec<u8>>>) -> Result<bool> {
        loop {
            match (self.next().transpose()?, other.next().transpose()?) {
                (None, None) => return Ok(true),
                (Some(a), Some(b)) if a == b => continue,
                _ => return Ok(false),
            }
        }
    }
}

impl<I: Iterator<Item = Result<Vec<u8>>>> EqByResult for I {}

#[cfg(test)]
#[path = "transaction_tests.rs"]
mod tests;
