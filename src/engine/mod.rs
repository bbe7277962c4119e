//! The storage engine: the catalog, documents and their indexes on top of the storage backend,
//! the group-commit writer, snapshot reads and the cursor registry.
//!
//! Owns every access to documents: reads go through [`ReadView`], writes through
//! [`Engine::write`], and both take stored documents through `exec::live`, which decides expiry
//! with the one rule (`ttl::is_expired_at`), so an expired document is invisible on every path
//! (TTL-18, TTL-19). Does not own reply shapes or command arguments (`command`).
//!
//! Rooms: `documents/` (records, keys, index and expiry entries, counters, validate),
//! `writer/` (group commit, transactions), `background/` (reaper, sweep, index builds),
//! `oplog/`, `exec/` (the executor), with `explain` rendering its plans above it. This file is
//! the façade: the [`Engine`] and the types the command layer uses; no engine file imports it.

pub mod background;
pub mod catalog;
pub mod catalog_write;
pub mod cursor;
pub mod ddl;
pub mod documents;
pub mod exec;
pub mod explain;
pub mod index_usage;
pub mod interrupt;
pub mod layout;
pub mod oplog;
pub mod published;
pub mod read;
pub mod reader;
pub mod startup;
pub mod targets;
pub mod ttl_activity;
pub mod ttl_view;
pub mod users;
pub mod writer;

pub use catalog::{Catalog, CollectionMeta, IndexMeta};
pub use cursor::CursorRegistry;
pub use documents::record::{Record, StoredDoc};
pub use exec::live::DocScan;
pub use interrupt::{Interrupt, KillReason};
pub use read::ReadView;
pub use reader::Reader;
pub use writer::transaction::Transaction;
pub use writer::txn::Txn;
pub use writer::{Joins, Writer, WriterStats};

use crate::clock::{Clock, Stopwatch};
use crate::error::Result;
use crate::storage::handle::Db;
use crate::storage::{Backend, Faults, FaultyBackend, FjallBackend, MemoryBackend, Store};
use std::path::Path;
use std::sync::{Arc, Mutex};

pub struct Engine {
    backend: Arc<Db>,
    pub reaper: Arc<background::reaper::Reaper>,
    reaper_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Deletes the entries of dropped collections and indexes.
    pub sweeper: Arc<background::sweep::Sweeper>,
    sweeper_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    catalog: Arc<published::Published>,
    writer: Writer,
    writer_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    clock: Arc<dyn Clock>,
    /// Operation times, issued by the writer.
    optimes: Arc<oplog::optime::OpClock>,
    /// The operation log's settings and size (kept in replica-set mode only).
    oplog: Arc<oplog::state::OplogState>,
    pub cursors: Arc<CursorRegistry>,
    pub writer_stats: Arc<WriterStats>,
    index_builds: Arc<background::index_build::IndexBuilds>,
    /// Winning plans by query shape, for every read of this engine.
    pub plans: Arc<exec::cache::PlanCache>,
    spill: exec::spill::SpillDir,
    /// The directory sorts spill to when there is no data directory; removed with the engine.
    _spill_root: Option<tempfile::TempDir>,
    /// The document keys open transactions have written.
    locks: Arc<writer::locks::LockTable>,
}

/// Submits jobs to the engine's writer, as [`Engine::write`] does; cheap to clone.
#[derive(Clone)]
pub struct WriteHandle {
    writer: Writer,
    clock: Arc<dyn Clock>,
}

impl WriteHandle {
    /// Runs `job` in the next commit group, waiting for the commit. For blocking threads only:
    /// it blocks the calling thread until the writer has committed.
    pub fn write_blocking<R, F>(&self, durable: bool, job: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Txn<'_>, i64) -> R + Send + 'static,
    {
        let clock = Arc::clone(&self.clock);
        futures::executor::block_on(
            self.writer
                .run(durable, move |txn| job(txn, clock.now_secs())),
        )
    }
}

impl Engine {
    /// Opens (or creates) the data directory on disk and loads the catalog.
    pub fn open(dir: &Path, clock: Arc<dyn Clock>) -> Result<Engine> {
        Engine::open_with(dir, clock, &crate::storage::FjallConfig::default())
    }

    /// [`Engine::open`] with the storage engine's memory and tuning given.
    pub fn open_with(
        dir: &Path,
        clock: Arc<dyn Clock>,
        storage: &crate::storage::FjallConfig,
    ) -> Result<Engine> {
        let recovery = Stopwatch::start();
        let fjall = startup::step(
            "opening the storage engine and replaying its journal",
            || FjallBackend::open_with(dir, storage),
        )?;
        startup::step("checking the data directory's catalog", || {
            layout::check_catalog(&fjall, dir)
        })?;
        let spill = exec::spill::SpillDir::open(dir)?;
        let engine = Engine::start(Store::Fjall(fjall), spill, None, clock)?;
        startup::done(&recovery);
        // Everything the first start writes is durable now: later opens check strictly.
        if let Store::Fjall(fjall) = engine.backend.inner() {
            fjall.mark_initialised()?;
        }
        Ok(engine)
    }

    /// Starts an empty engine that keeps everything in memory: nothing is written to disk but
    /// the temporary files of sorts that spill (under the system's temporary directory,
    /// removed when the engine is dropped), and nothing survives the process.
    pub fn open_memory(clock: Arc<dyn Clock>) -> Result<Engine> {
        Engine::open_memory_with(clock, 0)
    }

    /// [`Engine::open_memory`] whose stored data may take at most `limit` bytes (0: no limit):
    /// past it, writes fail with 14031 and reads and deletes go on.
    pub fn open_memory_with(clock: Arc<dyn Clock>, limit: u64) -> Result<Engine> {
        let root = tempfile::Builder::new()
            .prefix("mayfly-memory-")
            .tempdir()
            .map_err(|e| {
                crate::error::Error::internal(format!("cannot create a temporary directory: {e}"))
            })?;
        let spill = exec::spill::SpillDir::open(root.path())?;
        Engine::start(
            Store::Memory(MemoryBackend::with_limit(limit)),
            spill,
            Some(root),
            clock,
        )
    }

    fn start(
        store: Store,
        spill: exec::spill::SpillDir,
        spill_root: Option<tempfile::TempDir>,
        clock: Arc<dyn Clock>,
    ) -> Result<Engine> {
        let backend = Arc::new(FaultyBackend::new(store));
        // Keys an earlier version laid out differently are rewritten before anything reads them.
        startup::step("upgrading the key layout", || layout::upgrade(&backend))?;
        let mut catalog = startup::step("loading the catalog", || -> Result<Catalog> {
            let snapshot = backend.snapshot();
            let mut catalog = Catalog::load(&snapshot)?;
            background::sweep::reserve_marked_ids(&snapshot, &mut catalog)?;
            Ok(catalog)
        })?;
        // Nothing half-built survives a restart: unfinished builds are dropped, not resumed.
        startup::step("discarding unfinished index builds", || {
            background::index_build::discard_unfinished(&backend, &mut catalog)
        })?;
        // A data directory from before document counters: count each collection once.
        startup::step("rebuilding missing document counters", || {
            documents::counts::backfill(&backend, &catalog)
        })?;
        let published = Arc::new(published::Published::new(
            Arc::new(catalog.clone()),
            Arc::new(index_usage::IndexUsage::new(Arc::clone(&clock))),
        ));
        let writer_stats = Arc::new(WriterStats::default());
        // Operation times continue after the newest logged one, even if the wall clock went back.
        let optimes = Arc::new(oplog::optime::OpClock::new(oplog::state::newest(
            &backend.snapshot(),
        )?));
        let oplog = Arc::new(oplog::state::OplogState::default());
        let cursors = Arc::new(CursorRegistry::new(Arc::clone(&clock)));
        // A reopen of the stopped engine needs every snapshot released; open cursors hold
        // theirs across getMores, so they are closed (their getMore then gets CursorNotFound).
        let open_cursors = Arc::clone(&cursors);
        let release: writer::ReleaseSnapshots = Box::new(move || open_cursors.close_all());
        let (writer, thread) = Writer::start(
            Arc::clone(&backend),
            catalog,
            Arc::clone(&published),
            Arc::clone(&writer_stats),
            writer::Clocks {
                wall: Arc::clone(&clock),
                optimes: Arc::clone(&optimes),
                oplog: Arc::clone(&oplog),
            },
            release,
        )?;
        let reaper = background::reaper::Reaper::new(
            Arc::clone(&backend),
            Arc::clone(&published),
            writer.clone(),
            Arc::clone(&writer_stats),
            Arc::clone(&clock),
        );
        let reaper_thread = reaper.spawn()?;
        let sweeper = background::sweep::Sweeper::new(
            Arc::clone(&backend),
            writer.clone(),
            Arc::clone(&writer_stats),
        );
        let sweeper_thread = sweeper.spawn()?;
        Ok(Engine {
            reaper,
            reaper_thread: Mutex::new(Some(reaper_thread)),
            sweeper,
            sweeper_thread: Mutex::new(Some(sweeper_thread)),
            backend,
            catalog: published,
            writer,
            writer_thread: Mutex::new(Some(thread)),
            cursors,
            clock,
            optimes,
            oplog,
            writer_stats,
            index_builds: Default::default(),
            plans: Default::default(),
            spill,
            _spill_root: spill_root,
            locks: Arc::default(),
        })
    }

    /// Server time in epoch seconds: `_ts` and expiry use it.
    pub fn now(&self) -> i64 {
        self.clock.now_secs()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Operation times: the last committed one is `operationTime` and `hello`'s `lastWrite`.
    pub fn optimes(&self) -> &Arc<oplog::optime::OpClock> {
        &self.optimes
    }

    /// Starts keeping the operation log (replica-set mode), at most `max_bytes` large. Call it
    /// before the first write: changes committed before it are not in the log.
    pub fn enable_oplog(&self, max_bytes: u64) -> Result<()> {
        self.oplog.enable(&self.backend.snapshot(), max_bytes)
    }

    /// The operation log's state: whether it is kept, its size, its oldest entry.
    pub fn oplog(&self) -> &Arc<oplog::state::OplogState> {
        &self.oplog
    }

    /// The catalog as of the last commit; an error when the catalog lock is poisoned (an
    /// empty catalog would answer "no such collection" for every one).
    pub fn catalog(&self) -> Result<Arc<Catalog>> {
        self.catalog.current()
    }

    /// What TTL did per collection since start (`ttl_view`, the TTL metrics).
    pub fn ttl_activity(&self) -> &ttl_activity::TtlActivity {
        self.catalog.ttl_activity()
    }

    /// A consistent view for reading: the catalog, a snapshot, and the time to judge expiry by.
    pub fn read(&self) -> Result<ReadView> {
        reader::open_view(
            &self.backend,
            &self.catalog,
            self.now(),
            &self.plans,
            &self.spill,
        )
    }

    /// A handle that opens read views later, for work that outlives its command (a change
    /// stream reads new log entries at each `getMore`).
    pub fn reader(&self) -> Reader {
        Reader {
            backend: Arc::clone(&self.backend),
            catalog: Arc::clone(&self.catalog),
            clock: Arc::clone(&self.clock),
            plans: Arc::clone(&self.plans),
            spill: self.spill.clone(),
            optimes: Arc::clone(&self.optimes),
            oplog: Arc::clone(&self.oplog),
            locks: Arc::clone(&self.locks),
        }
    }

    /// Starts a multi-document transaction on the last commit.
    pub fn begin_transaction(&self) -> Result<Transaction> {
        self.reader().begin_transaction()
    }

    /// Document keys held by open transactions.
    pub fn transaction_locks(&self) -> Result<usize> {
        self.locks.len()
    }

    /// Runs `job` in the writer's next commit group with the server time of the moment it runs;
    /// returns once the group is committed, and synced to disk when `durable`.
    pub async fn write<R, F>(&self, durable: bool, job: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Txn<'_>, i64) -> R + Send + 'static,
    {
        self.write_joining(Joins::Any, durable, job).await
    }

    /// [`Engine::write`] for a job that joins a commit group as `joins` says (a batch of a
    /// multi-document statement starts a group of its own: [`Joins::First`]).
    pub async fn write_joining<R, F>(&self, joins: Joins, durable: bool, job: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Txn<'_>, i64) -> R + Send + 'static,
    {
        let clock = Arc::clone(&self.clock);
        self.writer
            .run_joining(joins, durable, move |txn| job(txn, clock.now_secs()))
            .await
    }

    /// A handle that submits writer jobs, for work that writes from outside a command's own
    /// future (an aggregation's `$out`/`$merge` runs on a blocking thread).
    pub fn write_handle(&self) -> WriteHandle {
        WriteHandle {
            writer: self.writer.clone(),
            clock: Arc::clone(&self.clock),
        }
    }

    /// Builds the indexes `index_ids` of collection `collection_id`, already in the catalog
    /// marked `building`, on a thread of their own ([`background::index_build::IndexBuilds::build`]).
    pub async fn build_indexes(&self, collection_id: u64, index_ids: Vec<u64>) -> Result<()> {
        let (namespace, command) = self
            .catalog()?
            .by_id(collection_id)
            .map(|meta| background::progress::build_command(meta, &index_ids))
            .unwrap_or_default();
        let context = background::index_build::BuildContext {
            writer: self.writer.clone(),
            writer_stats: Arc::clone(&self.writer_stats),
            clock: Arc::clone(&self.clock),
            namespace,
            command,
        };
        self.index_builds
            .build(context, collection_id, index_ids)
            .await
    }

    /// The progress of every index build in progress, oldest first (`currentOp`).
    pub fn index_build_progress(&self) -> Vec<background::progress::ProgressReport> {
        self.index_builds.progress()
    }

    /// Waits until no build of collection `collection_id` that had started when it was called
    /// is in progress ([`background::index_build::IndexBuilds::wait_for`]).
    pub async fn wait_for_index_builds(&self, collection_id: u64) {
        self.index_builds.wait_for(collection_id).await
    }

    /// Compares index `index_name` of `db.coll` with the documents as of now
    /// ([`background::index_build::check_index`]). For tests and diagnostics.
    pub fn check_index(
        &self,
        db: &str,
        coll: &str,
        index_name: &str,
    ) -> Result<background::index_build::IndexCheck> {
        let catalog = self.catalog()?;
        let snapshot = self.backend.snapshot();
        background::index_build::check_index(&snapshot, &catalog, self.now(), db, coll, index_name)
    }

    /// Entries of every secondary index of `db.coll` (tests: nothing left of a dropped index).
    pub fn index_entry_count(&self, db: &str, coll: &str) -> Result<u64> {
        let catalog = self.catalog()?;
        background::index_build::entry_count(&self.backend.snapshot(), &catalog, db, coll)
    }

    /// Bytes the data directory takes on disk (with `--storage memory`: bytes held in memory).
    pub fn disk_space(&self) -> u64 {
        self.backend.inner().size_bytes().unwrap_or(0)
    }

    /// The on-disk storage engine's cache and memtable memory; `None` in memory.
    pub fn memory_use(&self) -> Option<crate::storage::MemoryUse> {
        self.backend.inner().memory_use()
    }

    /// Background failures of the on-disk engine and the reopens after them; `None` in memory.
    pub fn storage_background(&self) -> Option<crate::storage::fjall_recovery::BackgroundState> {
        self.backend.inner().background_state()
    }

    /// The storage backend's name (`fjall`, `memory`).
    pub fn storage_name(&self) -> &'static str {
        self.backend.inner().name()
    }

    /// The data directory's format version; `None` in memory.
    pub fn format_version(&self) -> Option<u32> {
        self.backend.inner().format_version()
    }

    /// Whether committed writes survive a restart.
    pub fn is_persistent(&self) -> bool {
        self.backend.inner().is_persistent()
    }

    /// Poisons the catalog lock, as a thread that panics while publishing a catalog would: for
    /// tests of what a poisoned lock does. Every later read fails until a restart.
    pub fn poison_catalog_lock(&self) {
        self.catalog.poison();
    }

    /// The storage fault switches, for tests of storage failures.
    pub fn storage_faults(&self) -> Arc<Faults> {
        Arc::clone(self.backend.faults())
    }
}

#[cfg(test)]
#[path = "poison_tests.rs"]
mod poison_tests;

impl Drop for Engine {
    fn drop(&mut self) {
        // Builds stop after their current job; what they leave is discarded at the next start.
        self.index_builds.shutdown();
        // The reaper and the sweeper go first: each holds a writer handle until its current
        // job is done.
        self.reaper.shutdown();
        self.sweeper.shutdown();
        // The thread slots are set once at start and taken once here: a poisoned one still
        // holds its handle whole, and the thread must be joined.
        for (slot, name) in [
            (&self.reaper_thread, "reaper thread"),
            (&self.sweeper_thread, "sweeper thread"),
        ] {
            if let Some(thread) = crate::sync::lock_recovering(slot, name).take() {
                let _ = thread.join();
            }
        }
        // Open cursors may hold writer handles (a pipeline's `$merge`, a change stream's
        // stages): closing them first lets the writer's queue close.
        self.cursors.close_all();
        // Closing the queue lets the writer finish its last group and exit.
        let (closed, _) = tokio::sync::mpsc::channel(1);
        drop(std::mem::replace(
            &mut self.writer,
            Writer::from_sender(closed),
        ));
        if let Some(thread) =
            crate::sync::lock_recovering(&self.writer_thread, "writer thread").take()
        {
            let _ = thread.join();
        }
    }
}
