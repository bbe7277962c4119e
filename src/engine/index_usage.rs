//! How often each index has been used since it was created or the server started: what
//! `$indexStats` reports as `accesses: {ops, since}`.
//!
//! Counters live in memory only, as mongod's do. They follow the published catalog
//! ([`IndexUsage::follow`], at start and with each commit that changes the catalog): an index's
//! counter starts at 0 when a published catalog first holds the index, and goes away with the
//! index, its collection, or the collection's name (a renamed collection starts afresh). The
//! `_id` index, implicit in the catalog, is counted under [`ID_INDEX`]. Reads and writes record
//! the plan they run ([`IndexUsage::record`]).
//!
//! Owns: the counters and which indexes a chosen plan used. Does not own: the catalog, choosing
//! plans (`exec::planner`) or the stage's documents (`pipeline::index_stats`).

use crate::clock::Clock;
use crate::engine::catalog::{Catalog, CollectionMeta};
use crate::engine::exec::plan::Node;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// The id the `_id` index is counted under (stored indexes have ids from 1).
pub const ID_INDEX: u64 = 0;

/// One index's counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Operations whose plan used the index.
    pub ops: u64,
    /// When counting began, in epoch milliseconds.
    pub since_millis: i64,
}

#[derive(Debug)]
struct Entry {
    /// The collection's namespace when counting began: a rename starts a new counter.
    namespace: String,
    usage: Usage,
}

/// Every index's counter, by (collection id, index id). Shared by every copy of the catalog.
pub struct IndexUsage {
    clock: Arc<dyn Clock>,
    entries: Mutex<HashMap<(u64, u64), Entry>>,
}

impl std::fmt::Debug for IndexUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexUsage").finish_non_exhaustive()
    }
}

impl IndexUsage {
    pub fn new(clock: Arc<dyn Clock>) -> IndexUsage {
        IndexUsage {
            clock,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Brings the counters of `meta`'s collection in line with its entry: a counter from now
    /// for each index that has none, none for an index it no longer has, and fresh counters
    /// for all when its namespace changed.
    pub fn observe(&self, meta: &CollectionMeta) {
        let mut entries = self.entries();
        let namespace = meta.namespace();
        let ids: BTreeSet<u64> = index_ids(meta).collect();
        entries.retain(|(collection, index), entry| {
            *collection != meta.id || (ids.contains(index) && entry.namespace == namespace)
        });
        let now = self.clock.now_millis();
        for id in ids {
            entries.entry((meta.id, id)).or_insert_with(|| Entry {
                namespace: namespace.clone(),
                usage: Usage {
                    ops: 0,
                    since_millis: now,
                },
            });
        }
    }

    /// Brings every counter in line with `catalog`, the catalog just published: each of its
    /// collections as [`IndexUsage::observe`] does, and no counters for a collection it no
    /// longer holds.
    /// One pass over the counters and one over the catalog's indexes, whatever the number of
    /// collections (it runs at every catalog change).
    pub fn follow(&self, catalog: &Catalog) {
        let collections: HashMap<u64, (String, BTreeSet<u64>)> = catalog
            .all()
            .map(|meta| (meta.id, (meta.namespace(), index_ids(meta).collect())))
            .collect();
        let mut entries = self.entries();
        entries.retain(|(collection, index), entry| {
            collections.get(collection).is_some_and(|(namespace, ids)| {
                ids.contains(index) && entry.namespace == *namespace
            })
        });
        let now = self.clock.now_millis();
        for (collection, (namespace, ids)) in collections {
            for id in ids {
                entries.entry((collection, id)).or_insert_with(|| Entry {
                    namespace: namespace.clone(),
                    usage: Usage {
                        ops: 0,
                        since_millis: now,
                    },
                });
            }
        }
    }

    /// Gives each index of `meta`'s collection that has no counter one from now (after a
    /// commit that failed and rolled the catalog back), changing none: a reader's view may be
    /// older than the catalog the counters follow.
    pub fn ensure(&self, meta: &CollectionMeta) {
        let mut entries = self.entries();
        let now = self.clock.now_millis();
        for id in index_ids(meta) {
            entries.entry((meta.id, id)).or_insert_with(|| Entry {
                namespace: meta.namespace(),
                usage: Usage {
                    ops: 0,
                    since_millis: now,
                },
            });
        }
    }

    /// Drops every counter of collection `collection_id` (the collection was dropped).
    pub fn forget(&self, collection_id: u64) {
        self.entries()
            .retain(|(collection, _), _| *collection != collection_id);
    }

    /// The counters. Statistics only (`$indexStats`): a counter a panic left behind or
    /// skipped cannot change a query's answer, so a poisoned lock is recovered (and counted).
    fn entries(&self) -> MutexGuard<'_, HashMap<(u64, u64), Entry>> {
        crate::sync::lock_recovering(&self.entries, "index usage")
    }

    /// Counts one operation on `meta` whose plan is `plan`: each index the plan scans, once.
    pub fn record(&self, meta: &CollectionMeta, plan: &Node) {
        let used = indexes_used(meta, plan);
        if used.is_empty() {
            return;
        }
        let mut entries = self.entries();
        for index in used {
            if let Some(entry) = entries.get_mut(&(meta.id, index)) {
                entry.usage.ops = entry.usage.ops.saturating_add(1);
            }
        }
    }

    /// The counter of index `index_id` ([`ID_INDEX`] for `_id`) of `meta`'s collection.
    pub fn get(&self, meta: &CollectionMeta, index_id: u64) -> Option<Usage> {
        self.entries()
            .get(&(meta.id, index_id))
            .filter(|e| e.namespace == meta.namespace())
            .map(|e| e.usage)
    }
}

/// The ids of the indexes a collection has, the `_id` index first.
fn index_ids(meta: &CollectionMeta) -> impl Iterator<Item = u64> + '_ {
    std::iter::once(ID_INDEX).chain(meta.indexes.iter().map(|i| i.id))
}

/// The indexes `plan` reads: its index scans (IXSCAN, COUNT_SCAN, each branch of an OR) and
/// IDHACK's `_id` lookups, as mongod's plan summary lists them; a collection scan uses none.
/// Plans are a few levels deep (a leaf under SORT, SKIP and LIMIT, or an OR of leaves).
pub fn indexes_used(meta: &CollectionMeta, plan: &Node) -> BTreeSet<u64> {
    let mut used = BTreeSet::new();
    let mut pending = vec![plan];
    while let Some(node) = pending.pop() {
        match node {
            Node::IdHack { .. } => {
                used.insert(ID_INDEX);
            }
            Node::IxScan(scan) | Node::CountScan(scan) => {
                used.insert(match scan.index.id {
                    Some(id) => id,
                    None => ID_INDEX,
                });
            }
            Node::Or { inputs, .. } => pending.extend(inputs),
            Node::Sort { input, .. } | Node::Skip { input, .. } | Node::Limit { input, .. } => {
                pending.push(input)
            }
            Node::Eof | Node::CollScan { .. } => {}
        }
    }
    used.retain(|id| *id == ID_INDEX || meta.index_by_id(*id).is_some());
    used
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::engine::catalog::{Catalog, IndexMeta};
    use crate::engine::exec::plan::ScannedIndex;
    use bson::doc;
    use std::time::Duration;

    fn collection(indexes: &[(&str, u64)]) -> CollectionMeta {
        let mut meta = Catalog::default().new_collection("db", "c", doc! {});
        for (name, id) in indexes {
            let mut index = IndexMeta::new(*name, doc! {*name: 1});
            index.id = *id;
            meta.indexes.push(index);
        }
        meta
    }

    fn scan(meta: &CollectionMeta, name: &str) -> Node {
        let index = match meta.index(name) {
            Some(index) => ScannedIndex::secondary(index),
            None => ScannedIndex::id_index(),
        };
        Node::IxScan(crate::engine::exec::plan::IndexScan {
            index,
            bounds: Vec::new(),
            ranges: Vec::new(),
            reverse: false,
        })
    }

    fn ops(usage: &IndexUsage, meta: &CollectionMeta, id: u64) -> Option<u64> {
        usage.get(meta, id).map(|u| u.ops)
    }

    #[test]
    fn plans_count_each_index_they_scan_once() {
        let clock = Arc::new(ManualClock::starting_at_secs(100));
        let usage = IndexUsage::new(clock);
        let meta = collection(&[("a", 1), ("b", 2)]);
        usage.observe(&meta);
        let plans = [
            (Node::CollScan { reverse: false }, [0, 0, 0]),
            (Node::Eof, [0, 0, 0]),
            (Node::IdHack { ids: vec![] }, [1, 0, 0]),
            (scan(&meta, "a"), [0, 1, 0]),
            (scan(&meta, "_id_"), [1, 0, 0]),
            (
                Node::Limit {
                    input: Box::new(Node::Skip {
                        input: Box::new(scan(&meta, "b")),
                        n: 1,
                    }),
                    n: 1,
                },
                [0, 0, 1],
            ),
            (
                {
                    let split = crate::query::filter::Filter::compile(
                        &bson::doc! {"$or": [{"a": 1}, {"a": 2}, {"b": 1}]},
                    )
                    .unwrap()
                    .split_or()
                    .unwrap();
                    Node::Or {
                        inputs: vec![scan(&meta, "a"), scan(&meta, "a"), scan(&meta, "b")],
                        branches: split.branches,
                        rest: split.rest,
                    }
                },
                [0, 1, 1],
            ),
        ];
        for (plan, expected) in plans {
            let before: Vec<_> = [0, 1, 2].map(|id| ops(&usage, &meta, id)).into();
            usage.record(&meta, &plan);
            for (id, more) in expected.iter().enumerate() {
                let id = id as u64;
                assert_eq!(
                    ops(&usage, &meta, id),
                    before[id as usize].map(|n| n + more),
                    "{plan:?}, index {id}"
                );
            }
        }
    }

    #[test]
    fn counters_start_with_the_index_and_end_with_it() {
        let clock = Arc::new(ManualClock::starting_at_secs(100));
        let usage = IndexUsage::new(clock.clone());
        let mut meta = collection(&[("a", 1)]);
        usage.observe(&meta);
        usage.record(&meta, &scan(&meta, "a"));
        assert_eq!(
            usage.get(&meta, 1),
            Some(Usage {
                ops: 1,
                since_millis: 100_000
            })
        );

        // A new index starts at 0 from its creation; the others keep counting.
        clock.advance(Duration::from_secs(5));
        meta = collection(&[("a", 1), ("b", 2)]);
        usage.observe(&meta);
        assert_eq!(usage.get(&meta, 1).map(|u| u.ops), Some(1));
        assert_eq!(
            usage.get(&meta, 2),
            Some(Usage {
                ops: 0,
                since_millis: 105_000
            })
        );

        // Dropping an index drops its counter: the same name again starts afresh.
        meta = collection(&[("b", 2)]);
        usage.observe(&meta);
        assert_eq!(usage.get(&meta, 1), None);
        meta = collection(&[("a", 3), ("b", 2)]);
        usage.observe(&meta);
        assert_eq!(usage.get(&meta, 3).map(|u| u.ops), Some(0));

        // A rename starts every counter afresh; a drop removes them.
        usage.record(&meta, &scan(&meta, "b"));
        clock.advance(Duration::from_secs(5));
        meta.name = "renamed".into();
        usage.observe(&meta);
        assert_eq!(
            usage.get(&meta, 2),
            Some(Usage {
                ops: 0,
                since_millis: 110_000
            })
        );
        usage.forget(meta.id);
        assert_eq!(usage.get(&meta, ID_INDEX), None);
    }
}
