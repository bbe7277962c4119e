//! Snapshot reads. A [`ReadView`] is one consistent point in time: the catalog, a storage
//! snapshot and the server time that decides expiry. Its reads (the executor's plans, a
//! collection scan, a point read by document key) take documents through the executor's
//! leaves and `exec::live`, which alone decide which stored documents are live (TTL-18).

use crate::engine::catalog::{Catalog, CollectionMeta};
use crate::engine::documents::counts::{self, Totals};
use crate::engine::documents::record::StoredDoc;
use crate::engine::exec::cache::PlanCache;
use crate::engine::exec::live::{self, DocScan, NowCell};
use crate::engine::exec::spill::SpillDir;
use crate::engine::index_usage::IndexUsage;
use crate::error::Result;
use crate::storage::handle::Snap;
use crate::storage::{Keyspace, Snapshot};
use bson::Document;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

#[derive(Clone)]
pub struct ReadView {
    pub snapshot: Snap,
    pub catalog: Arc<Catalog>,
    pub now: i64,
    /// The engine's plan cache, shared by every view.
    plans: Arc<PlanCache>,
    /// Where sorts spill.
    spill: Option<SpillDir>,
    /// The index access counters the view's executions record their plans in.
    usage: Arc<IndexUsage>,
}

impl ReadView {
    pub fn new(
        snapshot: Snap,
        catalog: Arc<Catalog>,
        now: i64,
        plans: Arc<PlanCache>,
        spill: Option<SpillDir>,
        usage: Arc<IndexUsage>,
    ) -> Self {
        ReadView {
            snapshot,
            catalog,
            now,
            plans,
            spill,
            usage,
        }
    }

    /// The index access counters (`$indexStats`).
    pub fn index_usage(&self) -> &IndexUsage {
        &self.usage
    }

    /// The operation log's entries after `after` (all for `None`), oldest first.
    pub fn oplog_after(
        &self,
        after: Option<bson::Timestamp>,
    ) -> impl Iterator<Item = Result<(bson::Timestamp, bson::Document)>> {
        crate::engine::oplog::state::entries_after(&self.snapshot, after)
    }

    pub fn collection(&self, db: &str, name: &str) -> Option<Arc<CollectionMeta>> {
        self.catalog.get(db, name).cloned()
    }

    /// The visible document `document_key` names (`{_id}`, or in a partitioned collection
    /// `{<shard key path>: value, _id}`: [`crate::engine::documents::record_key::document_key`]).
    pub fn get(&self, meta: &CollectionMeta, document_key: &Document) -> Result<Option<StoredDoc>> {
        let Some(key) = crate::engine::documents::record_key::of_document_key(meta, document_key)
        else {
            return Ok(None);
        };
        let Some(bytes) = self.snapshot.get(Keyspace::Documents, &key)? else {
            return Ok(None);
        };
        let Some(record) = live::live_record(&bytes, &meta.ttl_model(), self.now)? else {
            return Ok(None);
        };
        let doc = record.document()?;
        Ok(Some(StoredDoc { key, record, doc }))
    }

    /// How many documents of the collection are visible in this view, and their total BSON
    /// size, without reading them: the stored counter less the expired documents not yet
    /// reaped (`counts`, TTL-18).
    pub fn visible_totals(&self, meta: &CollectionMeta) -> Result<Totals> {
        counts::visible(&self.snapshot, meta, self.now)
    }

    /// The stored documents of the collection that are expired in this view and not yet
    /// reaped, counted from the expiry-ordered keys without reading them (`counts`).
    pub fn expired_totals(&self, meta: &CollectionMeta) -> Result<Totals> {
        counts::expired(&self.snapshot, meta, self.now)
    }

    /// How many documents of the collection are visible in this view ([`Self::visible_totals`]).
    pub fn visible_count(&self, meta: &CollectionMeta) -> Result<u64> {
        Ok(self.visible_totals(meta)?.count)
    }

    /// Every visible document of the collection in `_id` order.
    pub fn scan(&self, meta: &CollectionMeta, now: NowCell) -> DocScan {
        live::scan(&self.snapshot, meta, now)
    }

    /// Plans `req` on `meta` (none: a missing collection) and starts it on this view's
    /// snapshot, judging expiry against `now` as documents are pulled; counts the operation
    /// in the accesses of the indexes its plan uses.
    pub fn execute(
        &self,
        meta: Option<&CollectionMeta>,
        req: &crate::engine::exec::ReadRequest,
        now: NowCell,
        interrupt: Arc<crate::engine::interrupt::Interrupt>,
    ) -> Result<crate::engine::exec::Execution<'static>> {
        let execution = crate::engine::exec::execute(
            self.snapshot.clone(),
            meta,
            req,
            now,
            interrupt,
            Some(&self.plans),
            self.spill.as_ref(),
        )?;
        crate::engine::exec::count_index_use(Some(&self.usage), meta, &execution.choice);
        Ok(execution)
    }

    /// Where sorts of this view spill.
    pub fn spill(&self) -> Option<&SpillDir> {
        self.spill.as_ref()
    }

    /// A clock cell starting at this view's time.
    pub fn now_cell(&self) -> NowCell {
        Arc::new(AtomicI64::new(self.now))
    }
}
