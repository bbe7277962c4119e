//! The catalog as the writer last published it: one cell the writer replaces whole after each
//! commit that changes the catalog and every reader copies the `Arc` out of, and the index
//! access counters and per-collection TTL activity, which follow each catalog published.
//!
//! Owns: the cell, its lock name, publishing into it and reading it. Does not own: the catalog
//! ([`Catalog`]), when it is published (`writer`), or the counters ([`IndexUsage`],
//! [`TtlActivity`]).

use crate::engine::catalog::Catalog;
use crate::engine::index_usage::IndexUsage;
use crate::engine::ttl_activity::TtlActivity;
use crate::error::Result;
use std::sync::{Arc, RwLock};

/// The name the catalog's publication lock is logged and counted under.
pub(crate) const CATALOG_LOCK: &str = "catalog";

/// The published catalog and the counters that follow it.
pub struct Published {
    catalog: RwLock<Arc<Catalog>>,
    usage: Arc<IndexUsage>,
    ttl_activity: Arc<TtlActivity>,
}

impl Published {
    /// Publishes `catalog` (the one loaded at start) with `usage` counting from now.
    pub fn new(catalog: Arc<Catalog>, usage: Arc<IndexUsage>) -> Published {
        usage.follow(&catalog);
        let ttl_activity = Arc::new(TtlActivity::new());
        ttl_activity.follow(&catalog);
        Published {
            catalog: RwLock::new(catalog),
            usage,
            ttl_activity,
        }
    }

    /// The catalog the writer published last. The writer replaces it whole after each commit,
    /// but a panic while the lock is held may come between a commit and its publication: a
    /// poisoned lock is an error, never an empty catalog.
    pub fn current(&self) -> Result<Arc<Catalog>> {
        Ok(Arc::clone(&*crate::sync::read(
            &self.catalog,
            CATALOG_LOCK,
        )?))
    }

    /// Publishes the catalog of a durable commit, even on a poisoned lock (one whole
    /// assignment); readers keep refusing a poisoned lock ([`crate::sync`]).
    pub fn publish(&self, catalog: Arc<Catalog>) {
        self.usage.follow(&catalog);
        self.ttl_activity.follow(&catalog);
        *crate::sync::write_recovering(&self.catalog, CATALOG_LOCK) = catalog;
    }

    /// The index access counters.
    pub fn index_usage(&self) -> &Arc<IndexUsage> {
        &self.usage
    }

    /// What TTL did per collection since start.
    pub fn ttl_activity(&self) -> &Arc<TtlActivity> {
        &self.ttl_activity
    }

    /// Poisons the lock, as a thread that panics while publishing would: for tests of what a
    /// poisoned lock does.
    pub(in crate::engine) fn poison(self: &Arc<Self>) {
        let published = Arc::clone(self);
        let _ = std::thread::spawn(move || {
            let _held = published.catalog.write();
            std::panic::resume_unwind(Box::new("the catalog lock is poisoned on purpose"));
        })
        .join();
    }
}
