//! The TTL reaper (TTL-20, TTL-21): a background thread owned by the engine that physically
//! deletes expired documents. It only reclaims space: expired documents are already invisible.
//!
//! A pass walks, per collection with a TTL, the due part of the two expiry-ordered ranges
//! (`expiry.rs`), from a watermark so the tombstones of earlier batches are not read again, and
//! deletes in batches of [`BATCH`] through the same writer as clients. Each batch reads its part
//! of the range inside the writer, so what it deletes is due at delete time (a document
//! rewritten since it became due has left the range and survives). Batches are small so a
//! client's write never waits long behind one, and while clients write (their jobs ran beside
//! a batch, or are queued) the reaper pauses after each batch as long as the batch took, so it
//! holds at most half of the writer (`pacing`). Each batch's deletions are counted server-wide
//! (`ReaperStats`) and per collection (`ttl_activity`). Failures are logged at error level and counted in
//! `serverStatus.ttl`; the thread stops with the engine.
//!
//! Date TTL indexes (TTL-27) are reaped the same way through their own due entries
//! (`date_expiry`), each batch reading its documents' records in one ordered walk and
//! re-judging them under every model of the collection (`expired::delete_batch`). Their ranges keep no watermark: a document written now
//! may carry any past date, so each pass reads its due range from the start (as mongod's TTL
//! monitor does); what it reads are live entries of due documents, which the pass deletes.

use crate::clock::{Clock, Stopwatch};
use crate::engine::documents::expiry::{self, FOLLOWS_COLLECTION, OWN_TTL};
use crate::engine::documents::{counts, date_expiry, expired};
use crate::engine::published::Published;
use crate::engine::writer::pacing::{self, Pace, Stopper};
use crate::engine::writer::{Writer, WriterStats};
use crate::error::Result;
use crate::storage::handle::Db;
use crate::storage::{Backend, Keyspace};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Documents deleted per writer job.
pub const BATCH: usize = 64;
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
    pub(in crate::engine) last_error: Mutex<Option<String>>,
    /// Whether the last pass failed (a repeated failure is counted, not logged again).
    failing: AtomicBool,
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
    catalog: Arc<Published>,
    writer: Mutex<Option<Writer>>,
    /// The writer's job count, to see whether clients wrote while a batch ran.
    writer_stats: Arc<WriterStats>,
    clock: Arc<dyn Clock>,
    pub stats: ReaperStats,
    watermarks: Mutex<HashMap<(u64, u8), Watermark>>,
    /// One pass at a time.
    pass_lock: tokio::sync::Mutex<()>,
    stopper: Stopper,
}

impl Reaper {
    pub(in crate::engine) fn new(
        backend: Arc<Db>,
        catalog: Arc<Published>,
        writer: Writer,
        writer_stats: Arc<WriterStats>,
        clock: Arc<dyn Clock>,
    ) -> Arc<Reaper> {
        Arc::new(Reaper {
            backend,
            catalog,
            writer: Mutex::new(Some(writer)),
            writer_stats,
            clock,
            stats: ReaperStats::default(),
            watermarks: Mutex::new(HashMap::new()),
            pass_lock: tokio::sync::Mutex::new(()),
            stopper: Stopper::default(),
        })
    }

    /// Runs background passes every second until [`Reaper::shutdown`].
    pub(in crate::engine) fn spawn(self: &Arc<Self>) -> Result<std::thread::JoinHandle<()>> {
        let reaper = Arc::clone(self);
        std::thread::Builder::new()
            .name("mayfly-reaper".into())
            .spawn(move || reaper.background())
            .map_err(|e| crate::error::Error::internal(format!("cannot start the reaper: {e}")))
    }

    fn background(&self) {
        while self.stopper.wait(INTERVAL) {
            if self.stats.paused.load(Ordering::Relaxed) {
                continue;
            }
            let _ = futures::executor::block_on(self.run_pass());
        }
    }

    /// Stops the background thread after its current batch and releases the writer.
    pub(in crate::engine) fn shutdown(&self) {
        self.stopper.stop();
        writer_slot(&self.writer).take();
    }

    pub fn pause(&self) {
        self.stats.paused.store(true, Ordering::Relaxed);
    }

    pub fn resume(&self) {
        self.stats.paused.store(false, Ordering::Relaxed);
        self.stopper.wake();
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
            Ok(_) => self.stats.failing.store(false, Ordering::Relaxed),
            Err(e) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                let message = e.to_string();
                // A lasting failure (a read-only engine) fails every pass: log it when it
                // first appears or changes; `serverStatus` counts every failed pass.
                let same =
                    self.stats.last_error().replace(message.clone()).as_ref() == Some(&message);
                let repeated = self.stats.failing.swap(true, Ordering::Relaxed) && same;
                if !repeated {
                    tracing::error!(error = %message, "TTL reaper pass failed");
                }
            }
        }
        result
    }

    async fn pass(&self) -> Result<u64> {
        // A poisoned catalog fails the pass: logged, counted in `ttl.errors`, shown in
        // `ttl.lastError`, and tried again at the next pass.
        let catalog = self.catalog.current()?;
        let pass = Stopwatch::start();
        let (mut deleted, mut collections) = (0, 0u64);
        for meta in catalog.all() {
            let timer = Stopwatch::start();
            let mut reaped = 0;
            for index in meta.indexes.iter().filter(|i| i.date_ttl().is_some()) {
                reaped += self.reap_dates(meta.id, index.id).await?;
            }
            if let Some(ttl) = meta.ttl() {
                let now = self.clock.now_secs();
                // TTL-14: expired iff now >= _ts + ttl, i.e. _ts <= now - ttl.
                reaped += self
                    .reap_range(
                        meta.id,
                        FOLLOWS_COLLECTION,
                        Some(ttl),
                        now - i64::from(ttl),
                        now,
                    )
                    .await?;
                reaped += self
                    .reap_range(meta.id, OWN_TTL, Some(ttl), now, now)
                    .await?;
            }
            // One line per collection and pass that deleted something, as mongod logs its TTL
            // deletions: a quiet pass stays quiet.
            if reaped > 0 {
                tracing::info!(
                    namespace = %meta.namespace(),
                    deleted = reaped,
                    durationMillis = u64::try_from(timer.elapsed().as_millis()).unwrap_or(u64::MAX),
                    "TTL reaper deleted expired documents"
                );
            }
            deleted += reaped;
            collections += u64::from(reaped > 0);
        }
        // One summary per pass that deleted something, after its per-collection lines.
        if deleted > 0 {
            tracing::info!(
                collections,
                deleted,
                durationMillis = u64::try_from(pass.elapsed().as_millis()).unwrap_or(u64::MAX),
                "TTL reaper pass deleted expired documents"
            );
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
        let mut from = self.watermark(collection_id, kind, ttl);
        let end = expiry::due_end(collection_id, kind, due);
        let mut deleted = 0u64;
        loop {
            // Taken only at shutdown: the reaper stops.
            let Some(writer) = writer_slot(&self.writer).clone() else {
                break;
            };
            let clock = Arc::clone(&self.clock);
            let range = (from, end.clone());
            let pace = Pace::start(&self.writer_stats);
            let step = writer
                .run(false, move |txn| {
                    reap_batch(txn, collection_id, kind, ttl, range, clock.now_secs())
                })
                .await??;
            deleted += step.deleted;
            // Counted per batch, so `serverStatus` shows a long pass's progress.
            self.stats
                .deleted
                .fetch_add(step.deleted, Ordering::Relaxed);
            self.catalog
                .ttl_activity()
                .record_deleted(collection_id, step.deleted);
            self.set_watermark(
                collection_id,
                kind,
                ttl,
                step.handled_below.clone(),
                now,
                due,
            );
            if !step.more {
                break;
            }
            from = step.handled_below;
            if let Some(pause) = pace.pause(&self.writer_stats, &writer) {
                // Clients are writing: give them as much of the writer as the batch took.
                pacing::sleep(pause).await;
            }
        }
        Ok(deleted)
    }

    /// Deletes the documents date TTL index `index_id` has expired, batch by batch.
    async fn reap_dates(&self, collection_id: u64, index_id: u64) -> Result<u64> {
        let mut from = None;
        let mut deleted = 0u64;
        loop {
            let Some(writer) = writer_slot(&self.writer).clone() else {
                break;
            };
            let clock = Arc::clone(&self.clock);
            let start = from.take();
            let pace = Pace::start(&self.writer_stats);
            let step = writer
                .run(false, move |txn| {
                    reap_date_batch(txn, collection_id, index_id, start, clock.now_secs())
                })
                .await??;
            deleted += step.deleted;
            self.stats
                .deleted
                .fetch_add(step.deleted, Ordering::Relaxed);
            self.catalog
                .ttl_activity()
                .record_deleted(collection_id, step.deleted);
            if !step.more {
                break;
            }
            from = Some(step.handled_below);
            if let Some(pause) = pace.pause(&self.writer_stats, &writer) {
                pacing::sleep(pause).await;
            }
        }
        Ok(deleted)
    }

    fn watermark(&self, collection_id: u64, kind: u8, ttl: Option<i32>) -> Vec<u8> {
        let start = expiry::kind_prefix(collection_id, kind);
        watermarks(&self.watermarks)
            .get(&(collection_id, kind))
            .cloned()
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
        watermarks(&self.watermarks).insert((collection_id, kind), Watermark { ttl, below });
    }

    /// Documents expired but not yet deleted (TTL-24), counted from the expiry ranges and the
    /// date TTL indexes' due entries, each document once (`counts::expired`); an error when
    /// the catalog lock is poisoned.
    pub fn backlog(&self) -> Result<u64> {
        let catalog = self.catalog.current()?;
        let snapshot = self.backend.snapshot();
        let now = self.clock.now_secs();
        let mut backlog = 0u64;
        for meta in catalog.all() {
            if meta.ttl_model().never_expires() {
                continue;
            }
            backlog += counts::expired(&snapshot, meta, now)?.count;
        }
        Ok(backlog)
    }
}

impl ReaperStats {
    /// The last pass's error. One `Option` replaced whole: a panic cannot leave it half
    /// written, so a poisoned lock is recovered (and counted).
    pub fn last_error(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        crate::sync::lock_recovering(&self.last_error, "reaper last error")
    }
}

/// The reaper's writer handle: set at start, taken at shutdown, cloned in between; a panic
/// cannot leave it half written, so a poisoned lock is recovered (and counted).
fn writer_slot(slot: &Mutex<Option<Writer>>) -> std::sync::MutexGuard<'_, Option<Writer>> {
    crate::sync::lock_recovering(slot, "reaper writer")
}

/// Where passes resume. Each update is one insert of a whole mark; and a mark lost or stale
/// costs re-reading tombstones, never a document kept or deleted wrongly (each batch re-reads
/// its range inside the writer). A poisoned lock is recovered (and counted).
fn watermarks(
    marks: &Mutex<HashMap<(u64, u8), Watermark>>,
) -> std::sync::MutexGuard<'_, HashMap<(u64, u8), Watermark>> {
    crate::sync::lock_recovering(marks, "reaper watermarks")
}

/// What one reaping batch did.
struct Step {
    deleted: u64,
    /// Every entry of the range below this key was handled.
    handled_below: Vec<u8>,
    /// Whether the batch stopped at [`BATCH`] entries (the range may hold more).
    more: bool,
}

/// Inside the writer: deletes the documents of up to [`BATCH`] entries of the expiry range
/// `from..end`, read as of this point in the group, that are due at `now` under the
/// collection's current TTL. Reading the range here, not before, is the re-check at delete
/// time (TTL-20): a document rewritten since it became due has left the range.
fn reap_batch(
    txn: &mut crate::engine::writer::txn::Txn<'_>,
    collection_id: u64,
    kind: u8,
    ttl: Option<i32>,
    (from, end): (Vec<u8>, Vec<u8>),
    now: i64,
) -> Result<Step> {
    let done = |below: Vec<u8>| Step {
        deleted: 0,
        handled_below: below,
        more: false,
    };
    let Some(meta) = txn.catalog.by_id(collection_id).cloned() else {
        return Ok(done(end));
    };
    let Some(current_ttl) = meta.ttl().filter(|t| Some(*t) == ttl) else {
        // The TTL changed since the pass began: the next pass works from the new one.
        return Ok(done(from));
    };
    // A clock that went back since the pass began shortens the range, never lengthens it.
    let due_now = if kind == FOLLOWS_COLLECTION {
        now - i64::from(current_ttl)
    } else {
        now
    };
    let end = end.min(expiry::due_end(collection_id, kind, due_now));
    let entries = txn
        .scan_range(Keyspace::Expiry, &from, &end)
        .take(BATCH)
        .collect::<Result<Vec<_>>>()?;
    let mut deleted = 0;
    for (key, value) in &entries {
        if expired::delete_due(txn, &meta, key, value, now)? {
            deleted += 1;
        }
    }
    Ok(Step::after(&entries, end, deleted))
}

/// Inside the writer: deletes the documents of up to [`BATCH`] due entries of date TTL index
/// `index_id`, from `from` (the first range's start when `None`), judged at `now` under the
/// collection's current catalog: an index dropped, changed or no longer TTL since the pass
/// began gives its current ranges or none.
fn reap_date_batch(
    txn: &mut crate::engine::writer::txn::Txn<'_>,
    collection_id: u64,
    index_id: u64,
    from: Option<Vec<u8>>,
    now: i64,
) -> Result<Step> {
    let none = Step {
        deleted: 0,
        handled_below: Vec::new(),
        more: false,
    };
    let Some(meta) = txn.catalog.by_id(collection_id).cloned() else {
        return Ok(none);
    };
    let ranges = meta
        .index_by_id(index_id)
        .map(|index| date_expiry::due_ranges(collection_id, index, now))
        .unwrap_or_default();
    let Some(end) = ranges.last().map(|(_, end)| end.clone()) else {
        return Ok(none);
    };
    // The ranges are disjoint and in key order (a custom TTL path has its numbers' and its
    // dates'): one batch walks them in turn from the watermark.
    let mut entries = Vec::new();
    for (start, range_end) in &ranges {
        let from = from.clone().map_or(start.clone(), |f| f.max(start.clone()));
        if from >= *range_end || entries.len() == BATCH {
            continue;
        }
        for entry in txn
            .scan_range(Keyspace::Indexes, &from, range_end)
            .take(BATCH.saturating_sub(entries.len()))
        {
            entries.push(entry?);
        }
    }
    // Several entries (an array's dates) may lead to one document: it is deleted once.
    let doc_keys = entries
        .iter()
        .map(|(_, value)| date_expiry::document_key(collection_id, value))
        .collect();
    let deleted = expired::delete_batch(txn, &meta, doc_keys, now)?;
    Ok(Step::after(&entries, end, deleted))
}

impl Step {
    /// The step of a batch that read `entries` (at most [`BATCH`]) of a range ending at `end`
    /// and deleted `deleted` documents: a full batch resumes after its last entry, a shorter
    /// one handled the whole range.
    fn after(entries: &[(Vec<u8>, Vec<u8>)], end: Vec<u8>, deleted: u64) -> Step {
        let more = entries.len() == BATCH;
        let handled_below = match entries.last() {
            Some((last, _)) if more => successor(last),
            _ => end,
        };
        Step {
            deleted,
            handled_below,
            more,
        }
    }
}

/// The smallest key greater than `key`.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::engine::catalog::IndexMeta;
    use crate::engine::documents::collection;
    use crate::engine::{ddl, Engine};
    use crate::storage::keys::collection_prefix;
    use crate::storage::Snapshot;
    use bson::doc;

    /// Entries of collection `id` left in `keyspace`.
    fn entries(engine: &Engine, keyspace: Keyspace, id: u64) -> usize {
        engine
            .backend
            .snapshot()
            .prefix(keyspace, &collection_prefix(id), false)
            .count()
    }

    /// A pass over several batches removes each expired document with all its entries: the
    /// document, its expiry entry and, when the collection has one, its secondary index entry.
    #[tokio::test]
    async fn a_pass_leaves_no_entry_of_a_reaped_document_ttl_20() {
        for with_index in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let clock = Arc::new(ManualClock::starting_at_secs(1_000));
            let engine = Engine::open(dir.path(), clock.clone()).unwrap();
            engine.reaper.pause();
            let count = BATCH * 3 + 5;
            let id = engine
                .write(true, move |txn, now| {
                    let (meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
                    let ttl = IndexMeta {
                        expire_after_seconds: Some(10),
                        ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
                    };
                    let mut meta = ddl::create_index(txn, &meta, ttl, now).unwrap();
                    if with_index {
                        let email = IndexMeta {
                            unique: true,
                            ..IndexMeta::new("email_1", doc! {"email": 1})
                        };
                        meta = ddl::create_index(txn, &meta, email, now).unwrap();
                    }
                    for i in 0..count {
                        let d = doc! {"_id": i as i64, "email": format!("{i}@x")};
                        collection::insert(txn, &meta, &d, now).unwrap();
                    }
                    let keep = doc! {"_id": "keep", "email": "keep@x", "ttl": -1};
                    collection::insert(txn, &meta, &keep, now).unwrap();
                    meta.id
                })
                .await
                .unwrap();
            assert_eq!(
                engine.reaper.run_pass().await.unwrap(),
                0,
                "nothing due yet"
            );
            clock.advance(Duration::from_secs(10));
            assert_eq!(engine.reaper.backlog().unwrap(), count as u64);
            assert_eq!(engine.reaper.run_pass().await.unwrap(), count as u64);
            assert_eq!(engine.reaper.backlog().unwrap(), 0);
            assert_eq!(entries(&engine, Keyspace::Documents, id), 1);
            assert_eq!(entries(&engine, Keyspace::Expiry, id), 0);
            let index_entries = if with_index { 1 } else { 0 };
            assert_eq!(entries(&engine, Keyspace::Indexes, id), index_entries);
        }
    }
}
