//! What an index build in progress shows of itself, as mongod 7.0 shows it: the numbers its
//! `currentOp` entry reports (`msg`: "Index Build: scanning collection Index Build: scanning
//! collection: 1234/10000 12%", `progress: {done, total}`), the INFO line it logs every few
//! seconds while it scans (mongod's "progress meter", id 51773) and the one it logs when its
//! scan is done (id 20391, with the count and the duration).
//!
//! `done` counts the stored documents the build has read; `total` is the collection's document
//! count as of the build's latest job, so it follows writes made during the build (mongod's
//! `setTotalWhileRunning`). Only the collection scan is reported: the build has no other
//! long phase (no external sort, no side table to drain).
//!
//! Does not own: the build itself (`index_build`), the rest of an `inprog` entry
//! (`command::state::operations`).

use crate::clock::Stopwatch;
use crate::engine::catalog::CollectionMeta;
use bson::{doc, Bson, Document};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// mongod's name for the scan phase, which `msg` repeats before the meter.
pub const SCAN_PHASE: &str = "Index Build: scanning collection";

/// How often a running build logs its progress at most (mongod's `ProgressMeter` default).
pub const LOG_EVERY: Duration = Duration::from_secs(3);

/// One build's progress, written by its thread and read by `currentOp`.
#[derive(Debug)]
pub struct BuildProgress {
    build_id: u64,
    namespace: String,
    command: Document,
    started: Stopwatch,
    started_at: bson::DateTime,
    done: AtomicU64,
    total: AtomicU64,
}

/// A build's progress as of one `currentOp`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressReport {
    pub build_id: u64,
    /// `db.collection`.
    pub namespace: String,
    /// The `createIndexes` command the build carries out, as mongod reports it.
    pub command: Document,
    pub done: u64,
    pub total: u64,
    pub elapsed: Duration,
    pub started_at: bson::DateTime,
}

impl BuildProgress {
    pub fn new(
        build_id: u64,
        namespace: String,
        command: Document,
        started_at: bson::DateTime,
    ) -> Self {
        BuildProgress {
            build_id,
            namespace,
            command,
            started: Stopwatch::start(),
            started_at,
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
        }
    }

    /// Adds `scanned` documents read by one job; `total` is the collection's count as of it.
    pub fn advance(&self, scanned: u64, total: u64) {
        self.done.fetch_add(scanned, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn report(&self) -> ProgressReport {
        ProgressReport {
            build_id: self.build_id,
            namespace: self.namespace.clone(),
            command: self.command.clone(),
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
            elapsed: self.elapsed(),
            started_at: self.started_at,
        }
    }

    /// Logs mongod's "progress meter" line.
    pub fn log_meter(&self) {
        let (done, total) = (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        );
        tracing::info!(
            log_id = 51773_i64,
            name = SCAN_PHASE,
            namespace = %self.namespace,
            done,
            total,
            percent = percent(done, total),
            "progress meter"
        );
    }

    /// Logs the end of the scan: how many documents it read and how long the build took.
    pub fn log_scan_done(&self) {
        tracing::info!(
            log_id = 20391_i64,
            namespace = %self.namespace,
            totalRecords = self.done.load(Ordering::Relaxed),
            durationMillis = u64::try_from(self.elapsed().as_millis()).unwrap_or(u64::MAX),
            "Index build: collection scan done"
        );
    }
}

impl ProgressReport {
    /// mongod's `msg`: the phase, then the meter (`<phase>: <done>/<total> <percent>%`), or
    /// "not started" before the first job has counted the collection.
    pub fn msg(&self) -> String {
        if self.total == 0 {
            return format!("{SCAN_PHASE} {SCAN_PHASE}: not started");
        }
        format!(
            "{SCAN_PHASE} {SCAN_PHASE}: {}/{} {}%",
            self.done,
            self.total,
            percent(self.done, self.total)
        )
    }
}

/// The namespace of a build of `index_ids` of `meta`, and the `createIndexes` command that
/// `currentOp` shows for it: `{createIndexes, indexes: [{v: 2, key, name, unique?}], $db}`.
pub fn build_command(meta: &CollectionMeta, index_ids: &[u64]) -> (String, Document) {
    let indexes: Vec<Bson> = meta
        .indexes
        .iter()
        .filter(|i| index_ids.contains(&i.id))
        .map(|i| {
            let mut spec = doc! {"v": 2, "key": i.key.clone(), "name": i.name.as_str()};
            if i.unique {
                spec.insert("unique", true);
            }
            Bson::Document(spec)
        })
        .collect();
    let command = doc! {
        "createIndexes": meta.name.as_str(),
        "indexes": indexes,
        "$db": meta.db.as_str(),
    };
    (meta.namespace(), command)
}

/// Whole percent, rounded down as mongod's meter does; 0 for an empty total.
fn percent(done: u64, total: u64) -> u64 {
    if total == 0 {
        return 0;
    }
    u64::try_from(u128::from(done) * 100 / u128::from(total)).unwrap_or(u64::MAX)
}

/// When a running build logs its meter: once at least [`LOG_EVERY`] has passed since the last
/// line (or since the build started).
#[derive(Debug, Default)]
pub struct LogPacer {
    last: Duration,
}

impl LogPacer {
    /// Whether a line is due at `elapsed` (time since the build started); if so, the next one
    /// is due [`LOG_EVERY`] later.
    pub fn due(&mut self, elapsed: Duration) -> bool {
        if elapsed.saturating_sub(self.last) < LOG_EVERY {
            return false;
        }
        self.last = elapsed;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(done: u64, total: u64) -> ProgressReport {
        ProgressReport {
            build_id: 1,
            namespace: "db.c".into(),
            command: doc! {},
            done,
            total,
            elapsed: Duration::ZERO,
            started_at: bson::DateTime::from_millis(0),
        }
    }

    #[test]
    fn msg_is_mongods_phase_then_meter() {
        for (done, total, expected) in [
            (
                1234,
                10_000,
                "Index Build: scanning collection Index Build: scanning collection: 1234/10000 12%",
            ),
            (
                10_000,
                10_000,
                "Index Build: scanning collection Index Build: scanning collection: 10000/10000 100%",
            ),
            (
                0,
                0,
                "Index Build: scanning collection Index Build: scanning collection: not started",
            ),
            // Documents deleted during the build: done may pass the latest count.
            (
                12,
                10,
                "Index Build: scanning collection Index Build: scanning collection: 12/10 120%",
            ),
        ] {
            assert_eq!(report(done, total).msg(), expected, "{done}/{total}");
        }
    }

    #[test]
    fn percent_rounds_down_and_never_overflows() {
        assert_eq!(percent(999, 1000), 99);
        assert_eq!(percent(u64::MAX, 1), u64::MAX);
        assert_eq!(percent(5, 0), 0);
    }

    #[test]
    fn advance_adds_what_was_read_and_follows_the_count() {
        let progress = BuildProgress::new(7, "db.c".into(), doc! {}, bson::DateTime::now());
        progress.advance(100, 1_000);
        progress.advance(100, 1_050);
        let report = progress.report();
        assert_eq!((report.done, report.total), (200, 1_050));
        assert_eq!(report.build_id, 7);
    }

    #[test]
    fn the_meter_is_logged_every_few_seconds_at_most() {
        let mut pacer = LogPacer::default();
        let seconds = |s: f64| Duration::from_secs_f64(s);
        let due: Vec<bool> = [0.5, 2.9, 3.0, 4.0, 5.9, 6.1, 20.0, 20.1]
            .into_iter()
            .map(|s| pacer.due(seconds(s)))
            .collect();
        assert_eq!(due, [false, false, true, false, false, true, true, false]);
    }
}
