//! The TTL reaper (TTL-20, TTL-21): a background thread owned by the engine that physically
//! deletes expired documents. It only reclaims space: expired documents are already invisible.
//!
//! A pass walks, per collection with a TTL, the due part of the two expiry-ordered ranges
//! (`expiry.rs`), from a watermark so the tombstones of earlier batches are not read again, and
//! deletes in batches of [`BATCH`] through the same writer as clients. Each delete re-checks
//! expiry (a document rewritten since it was found survives). Between batches it yields when
//! clients have writes queued. Failures are logged at error level and counted in
//! `serverStatus.ttl`; the thread stops with the engine.

use super::catalog::Catalog;
use super::collection;
use super::expiry::{self, FOLLOWS_COLLECTION, OWN_TTL};
use super::writer::Writer;
use super::Db;
use crate::clock::{Clock, Stopwatch};
use crate::error::Result;
use crate::storage::{Backend, Keyspace, Snapshot};
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

/// Documents deleted per writer job.
pub const BATCH: usize = 1_000;
/// Time between background passes.
const INTERVAL: Duration = Duration::from_secs(1);

/// What the reaper has done, for `serverStatus.ttl` (TTL-24).
#[derive(Debug, Default)]
pub struct ReaperStats {
    pub deleted: AtomicU64,
    pub passes: AtomicU64,
    pub last_pass_micros: AtomicU64,
    pub errors: AtomicU64,
    pub paused: AtomicBool,
    pub last_error: Mutex<Option<String>>,
}

/// Where the next pass starts in one expiry range: valid while the collection TTL is unchanged.
#[derive(Debug, Clone)]
struct Watermark {
    ttl: Option<i32>,
    /// Every entry below this key was handled.
    below: Vec<u8>,
}

/// Everything a pass needs; shared by the background thread and `{reaper: "runOnce"}`.
pub struct Reaper {
    backend: Arc<Db>,
    catalog: Arc<RwLock<Arc<Catalog>>>,
    writer: Mutex<Option<Writer>>,
    clock: Arc<dyn Clock>,
    pub stats: ReaperStats,
    watermarks: Mutex<HashMap<(u64, u8), Watermark>>,
    /// One pass at a time.
    pass_lock: tokio::sync::Mutex<()>,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Reaper {
    pub(super) fn new(
        backend: Arc<Db>,
        catalog: Arc<RwLock<Arc<Catalog>>>,
        writer: Writer,
        clock: Arc<dyn Clock>,
    ) -> Arc<Reaper> {
        Arc::new(Reaper {
            backend,
            catalog,
            writer: Mutex::new(Some(writer)),
            clock,
            stats: ReaperStats::default(),
            watermarks: Mutex::new(HashMap::new()),
            pass_lock: tokio::sync::Mutex::new(()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        })
    }

    /// Runs background passes every second until [`Reaper::shutdown`].
    pub(super) fn spawn(self: &Arc<Self>) -> Result<std::thread::JoinHandle<()>> {
        let reaper = Arc::clone(self);
        std::thread::Builder::new()
            .name("mayfly-reaper".into())
            .spawn(move || reaper.background())
            .map_err(|e| crate::error::Error::internal(format!("cannot start the reaper: {e}")))
    }

    fn background(&self) {
        loop {
            {
                let Ok(stopped) = self.stop.lock() else {
                    return;
                };
                let Ok((stopped, _)) = self.wake.wait_timeout(stopped, INTERVAL) else {
                    return;
                };
                if *stopped {
                    return;
                }
            }
            if self.stats.paused.load(Ordering::Relaxed) {
                continue;
            }
            let _ = futures::executor::block_on(self.run_pass());
        }
    }

    /// Stops the background thread after its current batch and releases the writer.
    pub(super) fn shutdown(&self) {
        if let Ok(mut stopped) = self.stop.lock() {
            *stopped = true;
        }
        self.wake.notify_all();
        if let Ok(mut writer) = self.writer.lock() {
            writer.take();
        }
    }

    pub fn pause(&self) {
        self.stats.paused.store(true, Ordering::Relaxed);
    }

    pub fn resume(&self) {
        self.stats.paused.store(false, Ordering::Relaxed);
        self.wake.notify_all();
    }

    /// One full pass over every collection with a TTL; returns the documents deleted.
    pub async fn run_pass(&self) -> Result<u64> {
        let _one_at_a_time = self.pass_lock.lock().await;
        let timer = Stopwatch::start();
        let result = self.pass().await;
        self.stats.passes.fetch_add(1, Ordering::Relaxed);
        self.stats.last_pass_micros.store(
            u64::try_from(timer.elapsed().as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        match &result {
            Ok(n) => {
                self.stats.deleted.fetch_add(*n, Ordering::Relaxed);
            }
            Err(e) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %e, "TTL reaper pass failed");
                if let Ok(mut last) = self.stats.last_error.lock() {
                    *last = Some(e.to_string());
                }
            }
        }
        result
    }

    async fn pass(&self) -> Result<u64> {
        let catalog = self
            .catalog
            .read()
            .map(|c| Arc::clone(&c))
            .unwrap_or_default();
        let mut deleted = 0;
        for meta in catalog.all() {
            let Some(ttl) = meta.ttl() else { continue };
            let now = self.clock.now_secs();
            // TTL-14: expired iff now >= _ts + ttl, i.e. _ts <= now - ttl.
            deleted += self
                .reap_range(
                    meta.id,
                    FOLLOWS_COLLECTION,
                    Some(ttl),
                    now - i64::from(ttl),
                    now,
                )
                .await?;
            deleted += self
                .reap_range(meta.id, OWN_TTL, Some(ttl), now, now)
                .await?;
        }
        Ok(deleted)
    }

    /// Deletes the due entries of one range, batch by batch, advancing its watermark.
    async fn reap_range(
        &self,
        collection_id: u64,
        kind: u8,
        ttl: Option<i32>,
        due: i64,
        now: i64,
    ) -> Result<u64> {
        let start = self.watermark(collection_id, kind, ttl);
        let end = expiry::due_end(collection_id, kind, due);
        let mut from = start;
        let mut deleted = 0u64;
        loop {
            let snapshot = self.backend.snapshot();
            let mut batch = Vec::with_capacity(BATCH);
            for entry in snapshot.range(
                Keyspace::Expiry,
                Bound::Included(&from),
                Bound::Excluded(&end),
                false,
            ) {
                let (key, _) = entry?;
                batch.push(key);
                if batch.len() == BATCH {
                    break;
                }
            }
            let Some(last) = batch.last().cloned() else {
                break;
            };
            let full = batch.len() == BATCH;
            let Some(writer) = self.writer.lock().ok().and_then(|w| w.clone()) else {
                break;
            };
            let clock = Arc::clone(&self.clock);
            let (n, stuck_at) = writer
                .run(false, move |txn| {
                    delete_batch(txn, collection_id, &batch, clock.now_secs())
                })
                .await??;
            deleted += n;
            // An entry that was not expired at delete time stays; do not pass it.
            let stuck = stuck_at.is_some();
            let handled_below = stuck_at.unwrap_or_else(|| successor(&last));
            self.set_watermark(collection_id, kind, ttl, handled_below.clone(), now, due);
            if !full || stuck {
                break;
            }
            from = handled_below;
            if writer.has_queued_jobs() {
                // Clients are writing: let their groups go first.
                pause_briefly().await;
            }
        }
        Ok(deleted)
    }

    fn watermark(&self, collection_id: u64, kind: u8, ttl: Option<i32>) -> Vec<u8> {
        let start = expiry::kind_prefix(collection_id, kind);
        self.watermarks
            .lock()
            .ok()
            .and_then(|w| w.get(&(collection_id, kind)).cloned())
            .filter(|w| w.ttl == ttl && w.below > start)
            .map_or(start, |w| w.below)
    }

    /// Records progress. For own-`ttl` entries a new document may expire at any time after the
    /// pass, so the mark never passes the entries due at `now` (which later writes cannot
    /// precede); `_ts`-ordered entries only grow, so the handled key is safe as it is.
    fn set_watermark(
        &self,
        collection_id: u64,
        kind: u8,
        ttl: Option<i32>,
        below: Vec<u8>,
        now: i64,
        due: i64,
    ) {
        let cap = expiry::due_end(collection_id, kind, if kind == OWN_TTL { now } else { due });
        let below = below.min(cap);
        if let Ok(mut marks) = self.watermarks.lock() {
            marks.insert((collection_id, kind), Watermark { ttl, below });
        }
    }

    /// Documents expired but not yet deleted (TTL-24), counted from the expiry ranges.
    pub fn backlog(&self) -> u64 {
        let catalog = self
            .catalog
            .read()
            .map(|c| Arc::clone(&c))
            .unwrap_or_default();
        let snapshot = self.backend.snapshot();
        let now = self.clock.now_secs();
        let mut backlog = 0u64;
        for meta in catalog.all() {
            let Some(ttl) = meta.ttl() else { continue };
            for (kind, due) in [(FOLLOWS_COLLECTION, now - i64::from(ttl)), (OWN_TTL, now)] {
                let start = expiry::kind_prefix(meta.id, kind);
                let end = expiry::due_end(meta.id, kind, due);
                backlog += snapshot
                    .range(
                        Keyspace::Expiry,
                        Bound::Included(&start),
                        Bound::Excluded(&end),
                        false,
                    )
                    .count() as u64;
            }
        }
        backlog
    }
}

/// Deletes the documents behind `keys` that are still expired; returns how many, and the first
/// key whose document was still there but not expired.
fn delete_batch(
    txn: &mut super::Txn<'_>,
    collection_id: u64,
    keys: &[Vec<u8>],
    now: i64,
) -> Result<(u64, Option<Vec<u8>>)> {
    let Some(meta) = txn.catalog.by_id(collection_id).cloned() else {
        return Ok((0, None));
    };
    let mut deleted = 0;
    let mut stuck = None;
    for key in keys {
        let Some(doc_key) = expiry::document_key_of(key) else {
            continue;
        };
        if collection::delete_if_expired(txn, &meta, &doc_key, now)? {
            deleted += 1;
        } else if stuck.is_none() && txn.get(Keyspace::Expiry, key)?.is_some() {
            stuck = Some(key.clone());
        }
    }
    Ok((deleted, stuck))
}

/// Yields to client writes: a tokio sleep inside the runtime (`runOnce`), a thread sleep on the
/// reaper's own thread, which has no runtime.
async fn pause_briefly() {
    const PAUSE: Duration = Duration::from_millis(2);
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(PAUSE).await;
    } else {
        std::thread::sleep(PAUSE);
    }
}

/// The smallest key greater than `key`.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}
