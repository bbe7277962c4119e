//! The request-unit meter of the Cosmos profile: the budgets that throttle commands (one
//! [`Bucket`] per collection or shared database), the charges per namespace since start
//! (`serverStatus.requestUnits`) and what a connection's previous command was charged
//! (`getLastRequestStatistics`).
//!
//! Owns the meter and its locks. Does not own admitting or charging a command (the envelope's
//! `request_units`, which decides what to spend), nor the charge's arithmetic
//! (`profile::ru`).

use crate::clock::Stopwatch;
use crate::profile::throttle::Bucket;
use bson::{doc, Document};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The server's request-unit state.
pub struct RequestUnits {
    origin: Stopwatch,
    /// Budgets by what spends them: `db.collection`, or `db` for a database's shared one.
    buckets: Mutex<HashMap<String, Bucket>>,
    /// Charges by database and collection (`$cmd` for commands on none) since start.
    totals: Mutex<HashMap<String, HashMap<String, Total>>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Total {
    requests: u64,
    charge: f64,
}

/// What `getLastRequestStatistics` reports: the connection's previous command.
#[derive(Debug, Clone, PartialEq)]
pub struct LastRequest {
    pub command: &'static str,
    pub charge: f64,
    pub millis: f64,
}

impl Default for RequestUnits {
    fn default() -> Self {
        RequestUnits {
            origin: Stopwatch::start(),
            buckets: Mutex::default(),
            totals: Mutex::default(),
        }
    }
}

impl RequestUnits {
    fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    /// How long a command spending from `key` (at `rate` units a second) must wait before its
    /// budget allows it; `None`: at once. A new budget starts full; a changed rate applies
    /// from now.
    pub fn wait_for(&self, key: &str, rate: u32) -> Option<Duration> {
        let mut buckets = self.buckets();
        let now = self.now();
        let bucket = match buckets.get_mut(key) {
            Some(bucket) => bucket,
            None => buckets
                .entry(key.to_owned())
                .or_insert_with(|| Bucket::new(rate, now)),
        };
        if bucket.rate() != rate {
            bucket.set_rate(rate, now);
        }
        bucket.wait(now)
    }

    /// Spends `ru` from `key`'s budget (at `rate` units a second).
    pub fn spend(&self, key: String, rate: u32, ru: f64) {
        let mut buckets = self.buckets();
        let now = self.now();
        buckets
            .entry(key)
            .or_insert_with(|| Bucket::new(rate, now))
            .spend(ru, now);
    }

    /// Adds a charge to `db.collection`'s total (allocating only for a new namespace).
    pub fn add_to_total(&self, db: &str, collection: &str, ru: f64) {
        let mut totals = self.totals();
        let by_collection = match totals.get_mut(db) {
            Some(by_collection) => by_collection,
            None => totals.entry(db.to_owned()).or_default(),
        };
        let total = match by_collection.get_mut(collection) {
            Some(total) => total,
            None => by_collection.entry(collection.to_owned()).or_default(),
        };
        total.requests += 1;
        total.charge += ru;
    }

    /// Meters, recovered when poisoned (and counted): a bucket's balance or a total off by one
    /// command's charge changes no answer but a throttling decision or a statistic.
    fn buckets(&self) -> MutexGuard<'_, HashMap<String, Bucket>> {
        crate::sync::lock_recovering(&self.buckets, "request unit budgets")
    }

    fn totals(&self) -> MutexGuard<'_, HashMap<String, HashMap<String, Total>>> {
        crate::sync::lock_recovering(&self.totals, "request unit totals")
    }

    /// `serverStatus.requestUnits`: requests and request units by namespace, in name order.
    pub fn server_status(&self) -> Document {
        let sorted: BTreeMap<String, Total> = {
            let totals = self.totals();
            totals
                .iter()
                .flat_map(|(db, by_collection)| {
                    by_collection
                        .iter()
                        .map(move |(coll, total)| (format!("{db}.{coll}"), *total))
                })
                .collect()
        };
        let mut by_namespace = Document::new();
        for (ns, total) in sorted {
            by_namespace.insert(
                ns,
                doc! {
                    "requests": i64::try_from(total.requests).unwrap_or(i64::MAX),
                    "requestCharge": (total.charge * 100.0).round() / 100.0,
                },
            );
        }
        doc! {"estimated": true, "byNamespace": by_namespace}
    }
}
