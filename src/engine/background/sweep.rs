//! Reclaiming the space of dropped collections and indexes in the background.
//!
//! Dropping a collection or an index removes it from the catalog and leaves a *sweep marker*
//! for each key range its entries occupy, in the same commit: a constant amount of work,
//! whatever the collection holds. The entries are unreachable from then on (nothing maps a
//! name to their ids, and ids are never reused while a marker names them: the engine's start
//! reserves the markers' collection ids, [`reserve_marked_ids`]). The [`Sweeper`], a background thread like the TTL
//! reaper, deletes them in small jobs through the writer, paced as the reaper is while clients
//! write (`pacing`), and deletes each marker in the job that finds its range empty. A marker
//! survives a restart, and the sweep goes on from the range's start.
//!
//! Owns: the markers and the sweep. Does not own: what the entries were (`ddl` decides which
//! ranges a drop leaves), or the writer.

use crate::engine::catalog::Catalog;
use crate::engine::writer::pacing::{self, Pace, Stopper};
use crate::engine::writer::txn::Txn;
use crate::engine::writer::{Writer, WriterStats};
use crate::error::{Error, Result};
use crate::storage::handle::Db;
use crate::storage::keys;
use crate::storage::{Backend, Keyspace, Snapshot};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `Catalog` keys of sweep markers start with this; the keyspace's byte and the range's
/// prefix follow.
const MARKER_PREFIX: &[u8] = b"sweep\0";
/// Entries deleted per writer job.
pub const BATCH: usize = 256;
/// Time between passes when nothing wakes the sweeper.
const INTERVAL: Duration = Duration::from_secs(1);

/// One range left to delete: every entry of `keyspace` whose key starts with `prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub keyspace: Keyspace,
    pub prefix: Vec<u8>,
}

impl Marker {
    fn key(&self) -> Vec<u8> {
        let mut key = MARKER_PREFIX.to_vec();
        key.push(self.keyspace as u8);
        key.extend_from_slice(&self.prefix);
        key
    }

    fn from_key(key: &[u8]) -> Option<Marker> {
        let rest = key.strip_prefix(MARKER_PREFIX)?;
        let (&keyspace, prefix) = rest.split_first()?;
        let keyspace = *Keyspace::ALL.get(usize::from(keyspace))?;
        (!prefix.is_empty()).then(|| Marker {
            keyspace,
            prefix: prefix.to_vec(),
        })
    }

    /// The collection whose entries the range holds.
    pub fn collection_id(&self) -> Option<u64> {
        keys::split_id(&self.prefix).map(|(id, _)| id)
    }
}

/// Leaves the entries of `keyspace` under `prefix` to the sweeper, in `txn`'s commit.
pub(in crate::engine) fn schedule(txn: &mut Txn<'_>, keyspace: Keyspace, prefix: &[u8]) {
    let marker = Marker {
        keyspace,
        prefix: prefix.to_vec(),
    };
    txn.put(Keyspace::Catalog, marker.key(), Vec::new());
}

/// Every range left to delete in `snapshot`.
pub fn pending<S: Snapshot>(snapshot: &S) -> Result<Vec<Marker>> {
    snapshot
        .prefix(Keyspace::Catalog, MARKER_PREFIX, false)
        .map(|entry| {
            let (key, _) = entry?;
            Marker::from_key(&key)
                .ok_or_else(|| Error::internal(format!("corrupt sweep marker {key:02x?}")))
        })
        .collect()
}

/// Keeps `catalog` from issuing the collection ids the markers of `snapshot` name: a dropped
/// collection's id is not reused while its entries are left to sweep.
pub fn reserve_marked_ids<S: Snapshot>(snapshot: &S, catalog: &mut Catalog) -> Result<()> {
    for marker in pending(snapshot)? {
        if let Some(id) = marker.collection_id() {
            catalog.reserve_collection_id(id);
        }
    }
    Ok(())
}

/// What the sweeper has done, for `serverStatus`.
#[derive(Debug, Default)]
pub struct SweepStats {
    /// Entries deleted since the start.
    pub swept: AtomicU64,
    pub errors: AtomicU64,
    pub paused: AtomicBool,
    /// Whether the last background pass failed.
    failing: AtomicBool,
}

/// The background thread's state; a pass can also be run on demand ([`Sweeper::run_pass`]).
pub struct Sweeper {
    backend: Arc<Db>,
    writer: Mutex<Option<Writer>>,
    writer_stats: Arc<WriterStats>,
    pub stats: SweepStats,
    /// One pass at a time.
    pass_lock: tokio::sync::Mutex<()>,
    stopper: Stopper,
}

impl Sweeper {
    pub(in crate::engine) fn new(
        backend: Arc<Db>,
        writer: Writer,
        writer_stats: Arc<WriterStats>,
    ) -> Arc<Sweeper> {
        Arc::new(Sweeper {
            backend,
            writer: Mutex::new(Some(writer)),
            writer_stats,
            stats: SweepStats::default(),
            pass_lock: tokio::sync::Mutex::new(()),
            stopper: Stopper::default(),
        })
    }

    /// Runs a pass every second until [`Sweeper::shutdown`].
    pub(in crate::engine) fn spawn(self: &Arc<Self>) -> Result<std::thread::JoinHandle<()>> {
        let sweeper = Arc::clone(self);
        std::thread::Builder::new()
            .name("mayfly-sweeper".into())
            .spawn(move || sweeper.background())
            .map_err(|e| Error::internal(format!("cannot start the sweeper: {e}")))
    }

    fn background(&self) {
        while self.stopper.wait(INTERVAL) {
            if self.stats.paused.load(Ordering::Relaxed) {
                continue;
            }
            let result = futures::executor::block_on(self.run_pass());
            // A lasting failure (a read-only engine) fails every pass: log when it begins.
            let failed_before = self.stats.failing.swap(result.is_err(), Ordering::Relaxed);
            if let (Err(e), false) = (result, failed_before) {
                tracing::error!(error = %e, "sweeping dropped collections failed");
            }
        }
    }

    /// Stops the background thread after its current job and releases the writer.
    pub(in crate::engine) fn shutdown(&self) {
        self.stopper.stop();
        writer_slot(&self.writer).take();
    }

    /// Stops background passes (for tests that look at what a drop leaves).
    pub fn pause(&self) {
        self.stats.paused.store(true, Ordering::Relaxed);
    }

    pub fn resume(&self) {
        self.stats.paused.store(false, Ordering::Relaxed);
        self.stopper.wake();
    }

    /// Ranges left to delete now.
    pub fn pending_ranges(&self) -> Result<usize> {
        Ok(pending(&self.backend.snapshot())?.len())
    }

    /// Deletes every range left to delete; returns the entries deleted.
    pub async fn run_pass(&self) -> Result<u64> {
        let _one_at_a_time = self.pass_lock.lock().await;
        let result = self.pass().await;
        if result.is_err() {
            self.stats.errors.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    async fn pass(&self) -> Result<u64> {
        let mut swept = 0;
        for marker in pending(&self.backend.snapshot())? {
            swept += self.sweep(marker).await?;
        }
        Ok(swept)
    }

    /// Deletes one range, job by job, and its marker with the last job.
    async fn sweep(&self, marker: Marker) -> Result<u64> {
        let marker = Arc::new(marker);
        let mut from = marker.prefix.clone();
        let mut swept = 0;
        loop {
            // Taken only at shutdown: the sweeper stops.
            let Some(writer) = writer_slot(&self.writer).clone() else {
                return Ok(swept);
            };
            let pace = Pace::start(&self.writer_stats);
            let job_marker = Arc::clone(&marker);
            let step = writer
                .run(false, move |txn| sweep_batch(txn, &job_marker, from))
                .await??;
            swept += step.deleted;
            self.stats.swept.fetch_add(step.deleted, Ordering::Relaxed);
            let Some(next) = step.next else {
                return Ok(swept);
            };
            from = next;
            if let Some(pause) = pace.pause(&self.writer_stats, &writer) {
                pacing::sleep(pause).await;
            }
        }
    }
}

/// The sweeper's writer handle: set at start, taken at shutdown, cloned in between; a panic
/// cannot leave it half written, so a poisoned lock is recovered (and counted) rather than
/// stopping the sweeper.
fn writer_slot(slot: &Mutex<Option<Writer>>) -> std::sync::MutexGuard<'_, Option<Writer>> {
    crate::sync::lock_recovering(slot, SWEEPER_WRITER)
}

/// The name the sweeper's writer slot is logged and counted under.
const SWEEPER_WRITER: &str = "sweeper writer";

/// What one job did.
struct Step {
    deleted: u64,
    /// Where the next job starts; `None` once the range is empty and its marker deleted.
    next: Option<Vec<u8>>,
}

/// Inside the writer: deletes up to [`BATCH`] entries of `marker`'s range from `from` on, and
/// the marker when none are left after them.
fn sweep_batch(txn: &mut Txn<'_>, marker: &Marker, from: Vec<u8>) -> Result<Step> {
    let end = keys::prefix_end(&marker.prefix).map_or(Bound::Unbounded, Bound::Excluded);
    let doomed = txn
        .range(marker.keyspace, Bound::Included(from), end, false)
        .take(BATCH)
        .map(|entry| entry.map(|(key, _)| key))
        .collect::<Result<Vec<_>>>()?;
    let deleted = doomed.len() as u64;
    let next = match doomed.last() {
        Some(last) if doomed.len() == BATCH => {
            let mut next = last.clone();
            next.push(0);
            Some(next)
        }
        _ => None,
    };
    for key in doomed {
        txn.delete(marker.keyspace, key);
    }
    if next.is_none() {
        txn.delete(Keyspace::Catalog, marker.key());
    }
    Ok(Step { deleted, next })
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
