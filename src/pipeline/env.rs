//! What a running pipeline reads besides its input: the snapshot (for `$lookup`,
//! `$unionWith`, `$graphLookup`), the command's database, time, interruption and memory limits,
//! and the variables its stages were compiled with (sub-pipelines compile against them), which
//! carry the operation's collation.

use super::{Row, Rows, StageLimits};
use crate::engine::exec::live::NowCell;
use crate::engine::exec::ReadRequest;
use crate::engine::{CollectionMeta, Interrupt, ReadView, StoredDoc, WriteHandle};
use crate::error::Result;
use crate::query::collation::Collation;
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
    /// The command's `let` variables, `$$NOW`, and the operation's collation (the command's,
    /// else the aggregated collection's default), under which every stage compares strings.
    pub vars: Variables,
    /// Where `$out` and `$merge` write.
    pub writes: WriteHandle,
    /// Whether their writes wait for the disk (the command's write concern).
    pub durable: bool,
}

type StoredDocs = Box<dyn Iterator<Item = Result<StoredDoc>> + Send>;

impl Env {
    /// The operation's collation (`None`: simple).
    pub fn collation(&self) -> Option<&Collation> {
        self.vars.collation()
    }

    /// Runs `read` on collection `coll` of this database on the pipeline's snapshot; a missing
    /// collection is empty. The read compares strings under the operation's collation, never
    /// under `coll`'s own default (mongod's rule for `$lookup`, `$graphLookup` and
    /// `$unionWith`: the foreign collection's collation is ignored).
    pub fn read_collection(&self, coll: &str, read: ReadRequest) -> Result<Rows> {
        let Some(meta) = self.view.collection(&self.db, coll) else {
            return Ok(Box::new(std::iter::empty()));
        };
        let mut read = read.requested_collation(Some(self.collation().cloned()))?;
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
    let ttl = meta.ttl_model();
    Box::new(docs.map(move |d| {
        d.map(|d| Row {
            expires_at: d.record.expires_at(&ttl),
            size: Some(d.record.body.len()),
            doc: d.doc,
        })
    }))
}
