//! What TTL has done per collection since the server started, in memory: the documents the
//! reaper deleted from each collection with a TTL index (`collStats.ttl.deleted`, the
//! `mayfly_ttl_deleted_documents_total{namespace}` metric), and which collections were already
//! told, in the log, that the root `ttl` fields written to them do nothing (TTL-10).
//!
//! Both follow the published catalog ([`TtlActivity::follow`], at start and with each commit
//! that changes the catalog), so memory stays bounded by the collections that exist: a
//! collection gets a deletion counter when a published catalog first gives it a TTL index, and
//! loses both its counter and its logged mark when it is dropped. Collection ids are never
//! reused, so a collection created again under a dropped one's name starts from zero; a rename
//! keeps the id, and so the counter.
//!
//! Owns: the counters, the logged set and the one log line. Does not own: counting what a pass
//! deletes (`background::reaper`), judging expiry (`ttl`, `exec::live`), or reply shapes.

use crate::engine::catalog::{Catalog, CollectionMeta};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

/// Collections remembered as already told about their ignored `ttl` fields. Past it, no
/// further collection is told (the set stays bounded however many collections are created).
pub const NOTICED_CAP: usize = 10_000;

#[derive(Debug, Default)]
struct State {
    /// Documents the reaper deleted, by collection id: one entry per existing collection that
    /// has, or had since start, a TTL index.
    deleted: HashMap<u64, u64>,
    /// Collections whose ignored `ttl` fields were logged, by id.
    noticed: HashSet<u64>,
}

/// Per-collection TTL activity; shared by the writer, the reaper and readers.
#[derive(Debug, Default)]
pub struct TtlActivity {
    state: Mutex<State>,
}

impl TtlActivity {
    pub fn new() -> TtlActivity {
        TtlActivity::default()
    }

    /// Brings the entries in line with `catalog`: a counter from zero for each collection
    /// that has a TTL index and none yet, and nothing kept for a collection it no longer has.
    pub fn follow(&self, catalog: &Catalog) {
        let ids: BTreeSet<u64> = catalog.all().map(|meta| meta.id).collect();
        let mut state = self.state();
        state.deleted.retain(|id, _| ids.contains(id));
        state.noticed.retain(|id| ids.contains(id));
        for meta in catalog.all().filter(|meta| meta.ttl().is_some()) {
            state.deleted.entry(meta.id).or_insert(0);
        }
    }

    /// Adds `n` documents the reaper deleted from collection `id`. A collection dropped while
    /// the batch ran has no counter any more and gets none back.
    pub fn record_deleted(&self, id: u64, n: u64) {
        if let Some(count) = self.state().deleted.get_mut(&id) {
            *count = count.saturating_add(n);
        }
    }

    /// Documents the reaper deleted from collection `id` since start (or since it was
    /// created).
    pub fn deleted(&self, id: u64) -> u64 {
        self.state().deleted.get(&id).copied().unwrap_or(0)
    }

    /// Every counter, by collection id.
    pub fn deleted_by_collection(&self) -> HashMap<u64, u64> {
        self.state().deleted.clone()
    }

    /// Called for each document written with a root `ttl` field into `meta`, a collection
    /// without a `_ts` TTL index: the first one logs one info line (TTL-10: the field does
    /// nothing there). Cheap after that: one set lookup.
    pub fn note_ignored_ttl_field(&self, meta: &CollectionMeta) {
        let first = {
            let mut state = self.state();
            state.noticed.len() < NOTICED_CAP && state.noticed.insert(meta.id)
        };
        if first {
            tracing::info!(
                namespace = %meta.namespace(),
                "`ttl` fields are ignored without a TTL index on `_ts`"
            );
        }
    }

    /// A panic cannot leave the maps half changed in a way that matters (each change is one
    /// insert, removal or addition), so a poisoned lock is recovered (and counted).
    fn state(&self) -> MutexGuard<'_, State> {
        crate::sync::lock_recovering(&self.state, "ttl activity")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::catalog::IndexMeta;
    use bson::doc;

    fn catalog_with(collections: &[(&str, bool)]) -> Catalog {
        let mut catalog = Catalog::default();
        for (name, ttl) in collections {
            let mut meta = catalog.new_collection("db", name, doc! {});
            if *ttl {
                meta.indexes.push(IndexMeta {
                    id: 1,
                    expire_after_seconds: Some(10),
                    ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
                });
            }
            catalog.put(meta).unwrap();
        }
        catalog
    }

    #[test]
    fn counters_exist_for_ttl_collections_only_and_go_with_the_collection() {
        let activity = TtlActivity::new();
        let catalog = catalog_with(&[("a", true), ("b", false)]);
        activity.follow(&catalog);
        let a = catalog.get("db", "a").unwrap().id;
        let b = catalog.get("db", "b").unwrap().id;
        activity.record_deleted(a, 3);
        activity.record_deleted(a, 2);
        activity.record_deleted(b, 7);
        assert_eq!(activity.deleted(a), 5);
        assert_eq!(activity.deleted(b), 0, "b has no TTL index: no counter");
        assert_eq!(activity.deleted_by_collection().len(), 1);

        let mut without_a = catalog.clone();
        without_a.remove("db", "a");
        activity.follow(&without_a);
        assert_eq!(activity.deleted(a), 0, "dropped with its collection");
        activity.record_deleted(a, 4);
        assert_eq!(
            activity.deleted(a),
            0,
            "a late batch does not bring it back"
        );
        assert!(activity.deleted_by_collection().is_empty());
    }

    #[test]
    fn the_ignored_ttl_notice_is_remembered_until_the_collection_goes() {
        let activity = TtlActivity::new();
        let catalog = catalog_with(&[("plain", false)]);
        activity.follow(&catalog);
        let meta = catalog.get("db", "plain").unwrap().clone();
        activity.note_ignored_ttl_field(&meta);
        assert!(activity.state().noticed.contains(&meta.id));
        activity.follow(&Catalog::default());
        assert!(activity.state().noticed.is_empty(), "forgotten on drop");
    }

    #[test]
    fn the_notice_set_is_capped() {
        let activity = TtlActivity::new();
        let mut meta = (**catalog_with(&[("c", false)]).get("db", "c").unwrap()).clone();
        for id in 0..(NOTICED_CAP as u64 + 5) {
            meta.id = id;
            activity.note_ignored_ttl_field(&meta);
        }
        assert_eq!(activity.state().noticed.len(), NOTICED_CAP);
    }
}
