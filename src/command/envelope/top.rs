//! `top`: time and counts of operations per collection since the server started, in mongod's
//! shape (`{totals: {note, "<db>.<coll>": {total, readLock, writeLock, queries, getmore,
//! insert, update, remove, commands}}}`, times in microseconds). The session records each
//! finished command against its namespace; only collections that exist are counted, so
//! commands on made-up names cannot grow the table, and a dropped collection's row goes at the
//! next `top`.
//! Does not own: per-command latencies (`latencies`), the profiler (`profiler`).

use super::super::Shared;
use super::profiler::Operation;
use crate::error::Result;
use bson::{doc, Document};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

/// One category's totals.
#[derive(Debug, Default)]
struct Usage {
    micros: AtomicU64,
    count: AtomicU64,
}

impl Usage {
    fn add(&self, micros: u64) {
        self.micros.fetch_add(micros, Relaxed);
        self.count.fetch_add(1, Relaxed);
    }

    fn to_document(&self) -> Document {
        let n = |v: &AtomicU64| i64::try_from(v.load(Relaxed)).unwrap_or(i64::MAX);
        doc! {"time": n(&self.micros), "count": n(&self.count)}
    }
}

/// The categories of one namespace, in mongod's order.
#[derive(Debug, Default)]
struct NamespaceUsage {
    total: Usage,
    read_lock: Usage,
    write_lock: Usage,
    queries: Usage,
    getmore: Usage,
    insert: Usage,
    update: Usage,
    remove: Usage,
    commands: Usage,
}

/// Commands that write (mongod counts them under `writeLock`).
const WRITES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
    "create",
    "createIndexes",
    "drop",
    "dropIndexes",
    "collMod",
    "renameCollection",
];

/// The name the table's lock is logged and counted under. Usage counters only, each row added
/// whole: a poisoned lock is recovered (and counted).
const TOP: &str = "top counters";

/// Database → collection → usage. Commands only read the map (and add atomically) once their
/// collection has a row; a new row takes the write lock once.
type Table = BTreeMap<String, BTreeMap<String, Arc<NamespaceUsage>>>;

#[derive(Debug, Default)]
pub struct Top {
    namespaces: RwLock<Table>,
}

impl Top {
    /// Counts a finished command against its collection, if that collection exists.
    pub fn record(&self, shared: &Shared, op: &Operation<'_>) {
        let Some(collection) = op.collection() else {
            return;
        };
        let Some(usage) = self.row(shared, op.db, collection) else {
            return;
        };
        let micros = u64::try_from(op.elapsed.as_micros()).unwrap_or(u64::MAX);
        usage.total.add(micros);
        if WRITES.contains(&op.command()) {
            usage.write_lock.add(micros);
        } else {
            usage.read_lock.add(micros);
        }
        let category = match op.kind() {
            "query" => &usage.queries,
            "getmore" => &usage.getmore,
            "insert" => &usage.insert,
            "update" => &usage.update,
            "remove" => &usage.remove,
            _ => &usage.commands,
        };
        category.add(micros);
    }

    /// The row of `db.collection`, made when the collection exists and has none yet.
    fn row(&self, shared: &Shared, db: &str, collection: &str) -> Option<Arc<NamespaceUsage>> {
        let existing = crate::sync::read_recovering(&self.namespaces, TOP)
            .get(db)
            .and_then(|c| c.get(collection))
            .cloned();
        if existing.is_some() {
            return existing;
        }
        // A statistic: on a poisoned catalog (counted and logged) the command goes uncounted;
        // `top` itself fails on the same lock.
        shared.engine.catalog().ok()?.get(db, collection)?;
        let mut namespaces = crate::sync::write_recovering(&self.namespaces, TOP);
        let row = namespaces
            .entry(db.to_owned())
            .or_default()
            .entry(collection.to_owned())
            .or_default();
        Some(Arc::clone(row))
    }
}

/// `top`.
pub fn top(shared: &Shared) -> Result<Document> {
    let catalog = shared.engine.catalog()?;
    let mut totals = doc! {"note": "all times in microseconds"};
    {
        let mut namespaces = crate::sync::write_recovering(&shared.top.namespaces, TOP);
        for (db, collections) in namespaces.iter_mut() {
            collections.retain(|coll, _| catalog.get(db, coll).is_some());
        }
        namespaces.retain(|_, collections| !collections.is_empty());
        for (db, collections) in namespaces.iter() {
            for (coll, u) in collections {
                totals.insert(
                    format!("{db}.{coll}"),
                    doc! {
                        "total": u.total.to_document(),
                        "readLock": u.read_lock.to_document(),
                        "writeLock": u.write_lock.to_document(),
                        "queries": u.queries.to_document(),
                        "getmore": u.getmore.to_document(),
                        "insert": u.insert.to_document(),
                        "update": u.update.to_document(),
                        "remove": u.remove.to_document(),
                        "commands": u.commands.to_document(),
                    },
                );
            }
        }
    }
    Ok(doc! {"totals": totals, "ok": 1.0})
}
