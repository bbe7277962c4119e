//! The database profiler's settings, as mongod keeps them: a level per database (0 off, 1 slow
//! operations, 2 every operation) and an optional `filter`, and the server-wide `slowms` and
//! `sampleRate`. The same settings decide which operations are logged as slow.
//!
//! Owns the settings and their locks. Does not own what is done with them: deciding about a
//! finished operation, writing `system.profile` and the `profile` command are the envelope's
//! `profiler`.

use crate::query::filter::Filter;
use bson::Document;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The name the sample rate's lock is logged and counted under.
const SAMPLE_RATE: &str = "profiler sample rate";

/// A database's profiling settings.
#[derive(Debug, Clone, Default)]
pub struct DatabaseSettings {
    /// 0, 1 or 2.
    pub level: i32,
    /// The filter as given, and compiled.
    pub filter: Option<(Document, Arc<Filter>)>,
}

/// The profiler's settings: per database, and the server-wide `slowms` and `sampleRate`.
#[derive(Debug)]
pub struct Profiler {
    /// The level of a database `profile` has not set (`--profile`).
    default_level: i32,
    /// Whether any database can be profiled (a default level, or one `profile` gave): until
    /// then no command looks the settings up (a lock every command would take).
    configured: AtomicBool,
    slow_ms: AtomicI64,
    sample_rate: Mutex<f64>,
    databases: Mutex<HashMap<String, DatabaseSettings>>,
}

impl Profiler {
    /// `default_level` (`--profile`) for every database until `profile` sets one, `slowms`
    /// from the configuration, every slow operation sampled.
    pub fn new(slow_ms: u64, default_level: u8) -> Profiler {
        Profiler {
            default_level: i32::from(default_level),
            configured: AtomicBool::new(default_level != 0),
            slow_ms: AtomicI64::new(i64::try_from(slow_ms).unwrap_or(i64::MAX)),
            sample_rate: Mutex::new(1.0),
            databases: Mutex::new(HashMap::new()),
        }
    }

    pub fn slow_ms(&self) -> i64 {
        self.slow_ms.load(Ordering::Relaxed)
    }

    /// The database's level: 0, 1 or 2.
    pub fn level(&self, db: &str) -> i32 {
        self.settings(db).level
    }

    /// Both settings locks hold values assigned or inserted whole (one `f64`; one database's
    /// settings at a time), so a poisoned one is recovered (and counted): falling back to the
    /// defaults would silently stop profiling a database.
    pub fn sample_rate(&self) -> f64 {
        *crate::sync::lock_recovering(&self.sample_rate, SAMPLE_RATE)
    }

    fn databases(&self) -> MutexGuard<'_, HashMap<String, DatabaseSettings>> {
        crate::sync::lock_recovering(&self.databases, "profiler settings")
    }

    /// The settings of `db`: its own, or the default level without a filter.
    pub fn settings(&self, db: &str) -> DatabaseSettings {
        let default = || DatabaseSettings {
            level: self.default_level,
            filter: None,
        };
        if !self.configured.load(Ordering::Acquire) {
            return default();
        }
        self.databases().get(db).cloned().unwrap_or_else(default)
    }

    /// Sets `db`'s settings. From then on every command looks the settings up.
    pub fn set_database(&self, db: &str, settings: DatabaseSettings) {
        self.databases().insert(db.to_owned(), settings);
        self.configured.store(true, Ordering::Release);
    }

    pub fn set_slow_ms(&self, slow_ms: i64) {
        self.slow_ms.store(slow_ms, Ordering::Relaxed);
    }

    pub fn set_sample_rate(&self, rate: f64) {
        *crate::sync::lock_recovering(&self.sample_rate, SAMPLE_RATE) = rate;
    }
}
