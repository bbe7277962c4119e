//! The targets of a multi-document update or delete, read in bounded batches from one snapshot
//! and re-checked where they are written, as mongod's write stages yield between documents.
//!
//! Owns: walking one plan over one pinned snapshot a batch at a time ([`TargetBatches`]), and
//! the re-check of a target inside the writer's group ([`recheck`]). Does not own what a
//! statement writes (`command::write`), the batch sizes (the caller's limits) or when the
//! operation stops (the caller checks its interrupt between batches).
//!
//! Why one snapshot for the whole statement: the plan then never sees the statement's own
//! writes, so a document an update moves ahead of the scan along the index being walked is not
//! met again, and the plan returns each document at most once, as a cursor does across its
//! `getMore`s. mongod keeps a set of the record ids it updated for the same purpose (its plan
//! reads the latest data after each yield); here that set is not needed, and the memory it
//! would take for a million targets is not held. What the snapshot cannot know — a concurrent
//! client's change, delete or expiry between the read and the write — [`recheck`] finds.

use super::catalog::CollectionMeta;
use super::documents::record::StoredDoc;
use super::exec::{live, DocIter, ReadRequest};
use super::interrupt::Interrupt;
use super::read::ReadView;
use super::writer::txn::Txn;
use crate::error::Result;
use crate::query::filter::Filter;
use crate::storage::Keyspace;
use std::sync::Arc;

/// How much one batch may hold: whichever bound is reached first ends it. A batch always holds
/// at least one target, so a document larger than `bytes` still moves forward.
#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    pub docs: usize,
    /// Stored bytes of the targets' bodies.
    pub bytes: usize,
}

/// A statement's plan running on one snapshot, read a batch at a time.
pub struct TargetBatches {
    docs: DocIter<'static>,
    /// The collection as the snapshot holds it; a writer job writes only into this one.
    collection_id: u64,
    finished: bool,
}

impl TargetBatches {
    /// Plans `req` on `meta` in `view` and starts the plan; nothing is read yet. The plan keeps
    /// `view`'s snapshot until it is dropped, and judges expiry at `view`'s time.
    pub fn start(
        view: &ReadView,
        meta: &CollectionMeta,
        req: &ReadRequest,
        interrupt: Arc<Interrupt>,
    ) -> Result<TargetBatches> {
        let execution = view.execute(Some(meta), req, view.now_cell(), interrupt)?;
        Ok(TargetBatches {
            docs: execution.docs,
            collection_id: meta.id,
            finished: false,
        })
    }

    /// The id of the collection the targets belong to.
    pub fn collection_id(&self) -> u64 {
        self.collection_id
    }

    /// The next targets, at most `limits` of them; empty once the plan is done.
    pub fn next_batch(&mut self, limits: BatchLimits) -> Result<Vec<StoredDoc>> {
        let mut batch = Vec::new();
        let mut bytes = 0usize;
        while !self.finished
            && batch.len() < limits.docs
            && (batch.is_empty() || bytes < limits.bytes)
        {
            match self.docs.next() {
                Some(doc) => {
                    let doc = doc?;
                    bytes = bytes.saturating_add(doc.record.body.len());
                    batch.push(doc);
                }
                None => self.finished = true,
            }
        }
        Ok(batch)
    }
}

/// What became of a target between the snapshot that selected it and the writer's group.
#[derive(Debug)]
pub enum Recheck {
    /// Stored exactly as the snapshot held it (same `_ts`, same body), and still visible: what
    /// was computed from the snapshot's copy holds.
    Unchanged,
    /// Changed since, and still visible and matching the statement's filter: the statement is
    /// evaluated again on this copy.
    Changed(StoredDoc),
    /// Deleted, expired, or changed so that the filter no longer matches: skipped, as mongod's
    /// write stage skips a document that no longer matches after a yield.
    Gone,
}

/// Looks `target` up as of this point in the group, judged at `now`, against `filter` (the
/// statement's filter under the collection's collation).
pub fn recheck(
    txn: &Txn<'_>,
    meta: &CollectionMeta,
    target: &StoredDoc,
    filter: &Filter,
    now: i64,
) -> Result<Recheck> {
    let Some(bytes) = txn.get(Keyspace::Documents, &target.key)? else {
        return Ok(Recheck::Gone);
    };
    let Some(record) = live::live_record(&bytes, &meta.ttl_model(), now)? else {
        return Ok(Recheck::Gone);
    };
    if record == target.record {
        return Ok(Recheck::Unchanged);
    }
    let doc = record.document()?;
    if !filter.matches(&doc)? {
        return Ok(Recheck::Gone);
    }
    Ok(Recheck::Changed(StoredDoc {
        key: target.key.clone(),
        record,
        doc,
    }))
}

#[cfg(test)]
#[path = "targets_tests.rs"]
mod tests;
