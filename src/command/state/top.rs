//! The `top` table: time and counts of operations per collection since the server started,
//! in mongod's shape (`{"<db>.<coll>": {total, readLock, writeLock, queries, getmore, insert,
//! update, remove, commands}}`, times in microseconds). Only collections that exist get a row,
//! so commands on made-up names cannot grow the table; a dropped collection's row goes at the
//! next listing.
//!
//! Owns the table and which columns a command counts under. Does not own when a command is
//! counted nor the `top` command (the envelope's `top`), nor whether a collection exists (the
//! caller asks the catalog).

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
    /// Counts `micros` of a command (`command`, of mongod's `op` kind `kind`) against
    /// `db.collection`, if `exists` says that collection exists (asked only for a new row).
    pub fn count(
        &self,
        db: &str,
        collection: &str,
        command: &str,
        kind: &str,
        micros: u64,
        exists: impl FnOnce() -> bool,
    ) {
        let Some(usage) = self.row(db, collection, exists) else {
            return;
        };
        usage.total.add(micros);
        if WRITES.contains(&command) {
            usage.write_lock.add(micros);
        } else {
            usage.read_lock.add(micros);
        }
        let category = match kind {
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
    fn row(
        &self,
        db: &str,
        collection: &str,
        exists: impl FnOnce() -> bool,
    ) -> Option<Arc<NamespaceUsage>> {
        let existing = crate::sync::read_recovering(&self.namespaces, TOP)
            .get(db)
            .and_then(|c| c.get(collection))
            .cloned();
        if existing.is_some() {
            return existing;
        }
        if !exists() {
            return None;
        }
        let mut namespaces = crate::sync::write_recovering(&self.namespaces, TOP);
        let row = namespaces
            .entry(db.to_owned())
            .or_default()
            .entry(collection.to_owned())
            .or_default();
        Some(Arc::clone(row))
    }

    /// The rows, `"<db>.<coll>"` to their columns, after dropping those of collections
    /// `exists` no longer knows.
    pub fn rows(&self, exists: impl Fn(&str, &str) -> bool) -> Document {
        let mut rows = Document::new();
        let mut namespaces = crate::sync::write_recovering(&self.namespaces, TOP);
        for (db, collections) in namespaces.iter_mut() {
            collections.retain(|coll, _| exists(db, coll));
        }
        namespaces.retain(|_, collections| !collections.is_empty());
        for (db, collections) in namespaces.iter() {
            for (coll, u) in collections {
                rows.insert(
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
        rows
    }
}
