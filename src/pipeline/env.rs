//! What a running pipeline reads besides its input: the snapshot (for `$lookup`,
//! `$unionWith`, `$graphLookup`), the command's database, time, interruption and memory limits,
//! and the variables its stages were compiled with (sub-pipelines compile against them).

use super::{Row, Rows, StageLimits};
use crate::engine::exec::ReadRequest;
use crate::engine::read::NowCell;
use crate::engine::{CollectionMeta, Interrupt, ReadView, StoredDoc, WriteHandle};
use crate::error::Result;
use crate::query::expr::Variables;
use std::sync::Arc;

/// A pipeline's environment; cheap to clone (a snapshot handle and a few `Arc`s).
#[derive(Clone)]
pub struct Env {
    pub view: ReadView,
    pub db: String,
    /// The time expiry is judged by (TTL-18); the cursor moves it forward between batches.
    pub now: NowCell,
    pub interrupt: Arc<Interrupt>,
    pub limits: StageLimits,
    /// The command's `let` variables and `$$NOW`.
    pub vars: Variables,
    /// Where `$out` and `$merge` write.
    pub writes: WriteHandle,
    /// Whether their writes wait for the disk (the command's write concern).
    pub durable: bool,
}

type StoredDocs = Box<dyn Iterator<Item = Result<StoredDoc>> + Send>;

impl Env {
    /// Runs `read` on collection `coll` of this database on the pipeline's snapshot; a missing
    /// collection is empty.
    pub fn read_collection(&self, coll: &str, mut read: ReadRequest) -> Result<Rows> {
        let Some(meta) = self.view.collection(&self.db, coll) else {
            return Ok(Box::new(std::iter::empty()));
        };
        read.allow_disk_use = self.limits.allow_disk_use;
        read.held = self.limits.held.clone();
        let execution = self.view.execute(
            Some(&meta),
            &read,
            self.now.clone(),
            Arc::clone(&self.interrupt),
        )?;
        Ok(source(execution.docs, &meta))
    }
}

/// Stored documents as pipeline rows, remembering each one's expiry.
pub fn source(docs: StoredDocs, meta: &CollectionMeta) -> Rows {
    let ttl = meta.ttl();
    Box::new(docs.map(move |d| {
        d.map(|d| Row {
            expires_at: d.record.expires_at(ttl),
            size: Some(d.record.body.len()),
            doc: d.doc,
        })
    }))
}
