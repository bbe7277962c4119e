//! Opening read views of the engine: [`Reader`] holds what a view is made of (the backend,
//! the published catalog, the clock that judges expiry, the plan cache and the spill
//! directory), so work that outlives its command (a change stream, a transaction) can open
//! views later.
//!
//! Owns: making [`ReadView`]s of the last commit. Does not own: what a view reads (`read`),
//! transactions (`transaction`, which starts them from a [`Reader`]).

use crate::clock::Clock;
use crate::engine::catalog::Catalog;
use crate::engine::exec::cache::PlanCache;
use crate::engine::exec::spill::SpillDir;
use crate::engine::oplog::optime::OpClock;
use crate::engine::oplog::state::OplogState;
use crate::engine::published::Published;
use crate::engine::read::ReadView;
use crate::engine::writer::locks::LockTable;
use crate::error::Result;
use crate::storage::handle::{Db, Snap};
use crate::storage::Backend;
use std::sync::Arc;

/// The view of the last commit: its catalog and snapshot, judging expiry at `now`.
pub(in crate::engine) fn open_view(
    backend: &Db,
    catalog: &Published,
    now: i64,
    plans: &Arc<PlanCache>,
    spill: &SpillDir,
) -> Result<ReadView> {
    let usage = Arc::clone(catalog.index_usage());
    let catalog = catalog.current()?;
    Ok(ReadView::new(
        backend.snapshot(),
        catalog,
        now,
        Arc::clone(plans),
        Some(spill.clone()),
        usage,
    ))
}

/// Opens read views of the engine, as [`Engine::read`](crate::engine::Engine::read) does; cheap to clone.
#[derive(Clone)]
pub struct Reader {
    pub(in crate::engine) backend: Arc<Db>,
    pub(in crate::engine) catalog: Arc<Published>,
    pub(in crate::engine) clock: Arc<dyn Clock>,
    pub(in crate::engine) plans: Arc<PlanCache>,
    pub(in crate::engine) spill: SpillDir,
    pub(in crate::engine) optimes: Arc<OpClock>,
    pub(in crate::engine) oplog: Arc<OplogState>,
    pub(in crate::engine) locks: Arc<LockTable>,
}

impl Reader {
    /// The storage snapshot of the last commit, alone.
    pub(crate) fn latest_snapshot(&self) -> Snap {
        self.backend.snapshot()
    }

    /// A view of `snapshot` with `catalog`, judging expiry at `now`.
    pub(crate) fn view_of(&self, snapshot: Snap, catalog: Arc<Catalog>, now: i64) -> ReadView {
        ReadView::new(
            snapshot,
            catalog,
            now,
            Arc::clone(&self.plans),
            Some(self.spill.clone()),
            Arc::clone(self.catalog.index_usage()),
        )
    }

    pub(crate) fn locks(&self) -> &Arc<LockTable> {
        &self.locks
    }

    /// A view of the last commit, judging expiry at the current server time.
    pub fn read(&self) -> Result<ReadView> {
        open_view(
            &self.backend,
            &self.catalog,
            self.clock.now_secs(),
            &self.plans,
            &self.spill,
        )
    }

    pub fn optimes(&self) -> &Arc<OpClock> {
        &self.optimes
    }

    pub fn oplog(&self) -> &Arc<OplogState> {
        &self.oplog
    }
}
