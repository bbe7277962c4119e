//! `top`: time and counts of operations per collection since the server started, in mongod's
//! shape (`{totals: {note, "<db>.<coll>": {...}}}`, times in microseconds). The session
//! records each finished command against its namespace.
//!
//! Owns that step (a method of the table, so the session calls it on `shared.top`) and the
//! `top` command. Does not own the table (`state::top`), per-command latencies (`latencies`),
//! the profiler (`profiler`).

use super::super::state::top::Top;
use super::super::Shared;
use super::profiler::Operation;
use crate::error::Result;
use bson::{doc, Document};

impl Top {
    /// Counts a finished command against its collection, if that collection exists.
    pub fn record(&self, shared: &Shared, op: &Operation<'_>) {
        let Some(collection) = op.collection() else {
            return;
        };
        let micros = u64::try_from(op.elapsed.as_micros()).unwrap_or(u64::MAX);
        // A statistic: on a poisoned catalog (counted and logged) the command goes uncounted;
        // `top` itself fails on the same lock.
        let exists = || {
            shared
                .engine
                .catalog()
                .is_ok_and(|catalog| catalog.get(op.db, collection).is_some())
        };
        self.count(op.db, collection, op.command(), op.kind(), micros, exists);
    }
}

/// `top`.
pub fn top(shared: &Shared) -> Result<Document> {
    let catalog = shared.engine.catalog()?;
    let mut totals = doc! {"note": "all times in microseconds"};
    totals.extend(shared.top.rows(|db, coll| catalog.get(db, coll).is_some()));
    Ok(doc! {"totals": totals, "ok": 1.0})
}
