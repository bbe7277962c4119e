//! The fjall implementation of [`Backend`]: one `fjall::Database` holding the fixed
//! [`Keyspace`]s.
//!
//! Owns: opening, tuning and recovering the on-disk database, and translating batches, snapshots
//! and errors between the storage traits and fjall. Does not own: key layout (`keys`), what goes
//! into a batch, or when to commit (the engine's writer).
//!
//! # Tuning
//!
//! - Memory: [`FjallConfig::for_budget`] splits the server's cache budget (`--cacheSizeGB`,
//!   as mongod's WiredTiger cache holds both clean and dirty pages) between the write buffers
//!   and the block cache. Each keyspace's memtable is sealed and flushed past
//!   [`FjallConfig::memtable_bytes`] (a sixteenth of the budget, 4 to 64 MiB); an insert writes
//!   two keyspaces (documents, expiry), each with an active and at most a sealed memtable in
//!   steady state, so four memtables are set aside and the rest is block cache. fjall stores a
//!   keyspace's memtable size when it creates the keyspace: a data directory keeps the size it
//!   was created with, while the block cache follows the setting at every start.
//! - Journal: durability is chosen per commit ([`Durability`]), so fjall's automatic
//!   per-write flush is turned off (`manual_journal_persist`); a `Buffered` commit still writes
//!   to the OS. Journal compression stays fjall's default (LZ4 for entries over 4 KiB: large
//!   documents). The journal size limit stays at 512 MiB.
//! - Keyspaces: `documents` and `catalog` keep bloom filters (inserts probe for an existing
//!   `_id` and usually miss); `indexes` and `expiry` are only range-scanned, so they build no
//!   filters. Block size, compression (LZ4) and compaction (leveled) are fjall's defaults.
//! - Background workers: fjall's default, min(cores, 4).
//! - Stalls: a commit slower than `SLOW_COMMIT` (25 ms) is reported at DEBUG level with fjall's
//!   sealed memtables, level-0 tables, flushes, compactions and journals, the state that decides
//!   whether fjall makes a writer wait (a memtable rotation takes the journal lock and each
//!   keyspace's version lock, which the commit's memtable inserts need).
//!
//! # Keys longer than fjall's
//!
//! fjall's keys are at most 65,535 bytes; the storage traits promise keys of any length. A key
//! longer than [`long_keys::PREFIX_LEN`] is written under its prefix and a digest with its tail
//! in the value, read back by the same rule, and every range goes through
//! [`long_keys::InKeyOrder`], which puts such keys back into full-key order ([`long_keys`]
//! has the layout and why the order holds).
//!
//! # Opening a damaged directory
//!
//! fjall 3.1 offers no choice of journal recovery (its `RecoveryMode` has one variant, not
//! wired to any setting), and what it does is not strict: an undecodable entry anywhere in a
//! journal ends the replay there and truncates the file, and a missing `current` file or
//! journal makes it start empty. So [`FjallBackend::open_with`] first checks the directory
//! itself ([`integrity`]): it refuses a damaged one (naming the file) before fjall touches it,
//! lets fjall drop only a genuinely torn journal tail, and logs that drop.
//!
//! # Failures
//!
//! fjall poisons itself on any failed journal write or sync and refuses every later write until
//! reopened; it applies a batch to its memtables only after the journal write (and, with
//! `SyncData`, the sync) succeeded, but bytes of a failed batch may still reach the journal
//! (its buffer is flushed again when the database closes) and be replayed at the next open.
//! So every I/O error of a commit is [`StorageError::OutcomeUnknown`]. To keep a full disk
//! from getting that far, each commit first checks the data directory's free space
//! (`statvfs`) and refuses the batch with [`StorageError::OutOfSpace`], touching nothing, when
//! less than twice its size plus [`FjallConfig::reserve_bytes`] is free.
//!
//! fjall's background workers (memtable flushes, compactions) poison the database too when
//! they fail (a full disk while writing a table): the journal is intact then, and fjall
//! refuses the next batch before writing any of it. [`fjall_recovery`](super::fjall_recovery)
//! tells that case apart and reopens the database in place from its journal.

use super::integrity::{self, Preflight};
use super::long_keys::{self, InKeyOrder};
use super::{
    bounds_are_empty, Backend, Durability, KeyValue, Keyspace, Snapshot, StorageError, WriteBatch,
};
use fjall::config::FilterPolicy;
use fjall::{Database, KeyspaceCreateOptions, PersistMode, Readable};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, RwLock};

/// Options for [`FjallBackend::open_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FjallConfig {
    /// Block cache capacity in bytes.
    pub cache_bytes: u64,
    /// Size past which a keyspace's memtable is sealed and flushed (for keyspaces created now).
    pub memtable_bytes: u64,
    /// The budget the two above come from, for `serverStatus`.
    pub budget_bytes: u64,
    /// Free space a commit leaves on the file system, for fjall's own files (journal buffer,
    /// memtable flushes, version files): a commit that would go below it is refused.
    pub reserve_bytes: u64,
}

impl Default for FjallConfig {
    fn default() -> Self {
        FjallConfig::for_budget(256 * MIB)
    }
}

const MIB: u64 = 1024 * 1024;

impl FjallConfig {
    /// The block cache and memtable sizes for a memory budget of `budget_bytes`.
    pub fn for_budget(budget_bytes: u64) -> FjallConfig {
        let memtable_bytes = (budget_bytes / 16).clamp(4 * MIB, 64 * MIB);
        FjallConfig {
            cache_bytes: budget_bytes
                .saturating_sub(4 * memtable_bytes)
                .max(16 * MIB),
            memtable_bytes,
            budget_bytes,
            reserve_bytes: 2 * MIB,
        }
    }
}

/// What the storage engine's memory holds now, for `serverStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// The budget (`--cacheSizeGB`).
    pub budget_bytes: u64,
    pub block_cache_capacity_bytes: u64,
    pub block_cache_bytes: u64,
    /// Active and sealed memtables, every keyspace.
    pub write_buffer_bytes: u64,
    /// The memtable size keyspaces created by this process get.
    pub memtable_limit_bytes: u64,
}

/// One fjall keyspace handle per [`Keyspace`].
pub(super) struct Handles {
    catalog: fjall::Keyspace,
    documents: fjall::Keyspace,
    indexes: fjall::Keyspace,
    expiry: fjall::Keyspace,
    oplog: fjall::Keyspace,
}

/// One opening of the fjall database: the database and its keyspace handles. Every snapshot
/// and iterator holds its generation, so the strong count tells when nothing reads the
/// database any more and it can be closed and opened again ([`super::fjall_recovery`]).
pub(super) struct Generation {
    pub(super) db: Database,
    keyspaces: Handles,
}

/// The name of the lock over the open generation ([`crate::sync`]): a reopen swaps it in
/// several steps, so a poisoned one refuses every operation.
pub(super) const GENERATION_LOCK: &str = "storage engine generation";

/// A durable database on a local directory.
pub struct FjallBackend {
    /// The open database; `None` only after a reopen closed it and failed to open it again.
    pub(super) current: RwLock<Option<Arc<Generation>>>,
    pub(super) path: PathBuf,
    pub(super) config: FjallConfig,
    /// A journal write or sync failed: the database's poison is then not a background
    /// worker's, and only a restart recovers (what reached the journal is unknown).
    pub(super) journal_failed: AtomicBool,
    /// A background flush or compaction failed and poisoned the database; it must be reopened.
    pub(super) halted: AtomicBool,
    /// Background failures seen, and reopens that followed, for `serverStatus`.
    pub(super) background_failures: AtomicU64,
    pub(super) reopens: AtomicU64,
    /// What the checks before opening found (a torn journal tail fjall dropped).
    preflight: Preflight,
    /// Declared last, so the directory stays locked until every handle is closed.
    _lock: super::lock::DirLock,
}

impl FjallBackend {
    /// Opens (creating if needed) the database in directory `path` with default tuning.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        FjallBackend::open_with(path, &FjallConfig::default())
    }

    /// Whether `path` holds a database (fjall's version marker, or mayfly's), so a tool that must not
    /// create one can tell a data directory from an empty or mistyped one before opening it.
    pub fn holds_database(path: &Path) -> bool {
        path.join("version").is_file() || path.join(integrity::MARKER).is_file()
    }

    /// Opens the database in `path` after checking its files ([`integrity::check`]): a
    /// damaged directory is refused before fjall touches it, and a torn journal tail (which
    /// fjall's replay drops) is logged.
    pub fn open_with(path: &Path, config: &FjallConfig) -> Result<Self, StorageError> {
        std::fs::create_dir_all(path)?;
        let lock = super::lock::DirLock::acquire(path)?;
        let preflight = integrity::check(path)?;
        if let Some((file, tail)) = &preflight.torn {
            tracing::warn!(
                file = %file.display(),
                offset = tail.offset,
                bytes = tail.bytes,
                seqno = ?tail.seqno,
                "dropping the journal's torn last batch: the write was cut short by a crash and \
                 never acknowledged as durable"
            );
        }
        let generation = open_generation(path, config, preflight.marked)?;
        Ok(FjallBackend {
            current: RwLock::new(Some(Arc::new(generation))),
            _lock: lock,
            path: path.to_path_buf(),
            config: config.clone(),
            journal_failed: AtomicBool::new(false),
            halted: AtomicBool::new(false),
            background_failures: AtomicU64::new(0),
            reopens: AtomicU64::new(0),
            preflight,
        })
    }

    /// What the checks before opening found.
    pub fn preflight(&self) -> &Preflight {
        &self.preflight
    }

    /// Records that the directory is initialised ([`integrity::MARKER`]); the engine calls it
    /// once its own records are durable, so a later open checks strictly.
    pub fn mark_initialised(&self) -> Result<(), StorageError> {
        integrity::mark(&self.path)
    }

    /// Refuses `batch` when the file system lacks room for it and the reserve. A file system
    /// that cannot say how much is free is not checked.
    fn check_space(&self, batch: &WriteBatch) -> Result<(), StorageError> {
        let Some(available) = self.available_bytes() else {
            return Ok(());
        };
        let needed = (batch.approximate_size() as u64)
            .saturating_mul(2)
            .saturating_add(self.config.reserve_bytes);
        if available < needed {
            return Err(StorageError::OutOfSpace { available, needed });
        }
        Ok(())
    }

    /// Free bytes on the data directory's file system, if it says.
    pub(super) fn available_bytes(&self) -> Option<u64> {
        let stats = rustix::fs::statvfs(&self.path).ok()?;
        Some(stats.f_bavail.saturating_mul(stats.f_frsize))
    }

    /// The open database, or the error every operation gets while it is closed.
    pub(super) fn generation(&self) -> Result<Arc<Generation>, StorageError> {
        match crate::sync::read(&self.current, GENERATION_LOCK) {
            Ok(slot) => slot.clone().ok_or_else(|| self.halt_error()),
            Err(_) => Err(StorageError::Poisoned),
        }
    }

    /// The block cache's and memtables' memory now.
    pub fn memory_use(&self) -> MemoryUse {
        let (capacity, cache, buffers) = match self.generation() {
            Ok(g) => (
                g.db.cache_capacity(),
                g.db.cache_size(),
                g.db.write_buffer_size(),
            ),
            Err(_) => (0, 0, 0),
        };
        MemoryUse {
            budget_bytes: self.config.budget_bytes,
            block_cache_capacity_bytes: capacity,
            block_cache_bytes: cache,
            write_buffer_bytes: buffers,
            memtable_limit_bytes: self.config.memtable_bytes,
        }
    }

    /// Bytes on disk (tables and journals), for `dbStats`/`serverStatus`.
    pub fn disk_space(&self) -> Result<u64, StorageError> {
        Ok(self.generation()?.db.disk_space()?)
    }

    /// Adds to `writes` the removal of each key of `written` (the batch's long keys: keyspace,
    /// key, stored key) that [`long_keys::in_old_layout_window`] and is still stored as it is,
    /// as a data directory written before the long-key layout may hold it: its write now goes
    /// to the long form, which the old entry must not shadow. An entry under that key that is
    /// the long form of another key, or one the batch itself writes, is left alone.
    fn remove_old_layout(
        generation: &Generation,
        writes: &mut fjall::OwnedWriteBatch,
        written: &[LongWrite<'_>],
    ) -> Result<(), StorageError> {
        let mut old = written
            .iter()
            .filter(|(_, key, _)| long_keys::in_old_layout_window(key))
            .peekable();
        if old.peek().is_none() {
            return Ok(());
        }
        let snapshot = generation.db.snapshot();
        for (keyspace, key, _) in old {
            let tree = handle(&generation.keyspaces, *keyspace);
            let Some(value) = snapshot.get(tree, key)? else {
                continue;
            };
            let rewritten = written
                .iter()
                .any(|(other, _, stored)| other == keyspace && **stored == **key);
            if !rewritten && !long_keys::is_long_entry(key, &value) {
                writes.remove(tree, *key);
            }
        }
        Ok(())
    }
}

/// Opens fjall on `path` (already checked and locked) with its keyspaces; `marked`: the
/// directory was initialised, so a missing keyspace is damage, not a new database.
pub(super) fn open_generation(
    path: &Path,
    config: &FjallConfig,
    marked: bool,
) -> Result<Generation, StorageError> {
    let db = Database::builder(path)
        .cache_size(config.cache_bytes)
        .manual_journal_persist(true)
        .open()?;
    if marked {
        // fjall would create a keyspace whose files are gone as a new, empty one.
        let present = db.list_keyspace_names();
        if let Some(missing) = Keyspace::ALL
            .iter()
            .find(|k| !present.iter().any(|name| &**name == k.name()))
        {
            return Err(StorageError::Damaged {
                path: path.join("keyspaces"),
                detail: format!("the `{}` keyspace is missing", missing.name()),
            });
        }
    }
    let open = |keyspace: Keyspace| {
        db.keyspace(keyspace.name(), || {
            keyspace_options(keyspace).max_memtable_size(config.memtable_bytes)
        })
    };
    let keyspaces = Handles {
        catalog: open(Keyspace::Catalog)?,
        documents: open(Keyspace::Documents)?,
        indexes: open(Keyspace::Indexes)?,
        expiry: open(Keyspace::Expiry)?,
        oplog: open(Keyspace::Oplog)?,
    };
    Ok(Generation { db, keyspaces })
}

/// A commit slower than this is reported at DEBUG level with the engine's state.
const SLOW_COMMIT: std::time::Duration = std::time::Duration::from_millis(25);

/// Reports a slow commit with what in fjall may have held it up: sealed memtables waiting for
/// a flush (fjall sleeps a writer 100 ms at a time while a keyspace has 4), level-0 tables
/// (it slows writers from 20 and halts them from 30), and the flushes and compactions running
/// (a flush takes the journal lock to sync or rotate the journal, which a commit needs).
fn report_slow_commit(generation: &Generation, took: std::time::Duration) {
    tracing::debug!(
        took_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        state = %pressure(generation),
        "slow storage commit"
    );
}

/// fjall's write-pressure state: per keyspace its sealed memtables and level-0 tables, then the
/// flushes queued, the compactions running and the journal files.
fn pressure(generation: &Generation) -> String {
    let k = &generation.keyspaces;
    let trees = [
        ("documents", &k.documents),
        ("indexes", &k.indexes),
        ("expiry", &k.expiry),
        ("oplog", &k.oplog),
    ];
    let mut out = String::new();
    for (name, tree) in trees {
        out.push_str(&format!(
            "{name}:sealed={},l0={} ",
            tree.sealed_memtable_count(),
            tree.l0_table_count()
        ));
    }
    out.push_str(&format!(
        "flushes={} compactions={} journals={}",
        generation.db.outstanding_flushes(),
        generation.db.active_compactions(),
        generation.db.journal_count()
    ));
    out
}

/// A long key a batch writes: its keyspace, the key, and its stored form.
type LongWrite<'a> = (Keyspace, &'a [u8], std::borrow::Cow<'a, [u8]>);

/// Creation options; fjall stores them with the keyspace, so they apply only when it is created.
fn keyspace_options(keyspace: Keyspace) -> KeyspaceCreateOptions {
    let options = KeyspaceCreateOptions::default();
    match keyspace {
        Keyspace::Catalog | Keyspace::Documents => options,
        // Scanned in key order, never probed for single keys.
        Keyspace::Indexes | Keyspace::Expiry | Keyspace::Oplog => {
            options.filter_policy(FilterPolicy::disabled())
        }
    }
}

fn handle(handles: &Handles, keyspace: Keyspace) -> &fjall::Keyspace {
    match keyspace {
        Keyspace::Catalog => &handles.catalog,
        Keyspace::Documents => &handles.documents,
        Keyspace::Indexes => &handles.indexes,
        Keyspace::Expiry => &handles.expiry,
        Keyspace::Oplog => &handles.oplog,
    }
}

fn persist_mode(durability: Durability) -> PersistMode {
    match durability {
        Durability::SyncData => PersistMode::SyncData,
        Durability::Buffered => PersistMode::Buffer,
    }
}

impl Backend for FjallBackend {
    type Snapshot = FjallSnapshot;

    fn snapshot(&self) -> FjallSnapshot {
        FjallSnapshot {
            open: self
                .generation()
                .ok()
                .map(|generation| (generation.db.snapshot(), generation)),
        }
    }

    fn commit(&self, batch: WriteBatch, durability: Durability) -> Result<(), StorageError> {
        if batch.is_empty() {
            return Ok(());
        }
        // fjall panics on an empty key; refuse the batch before any of it is applied.
        batch.check_keys()?;
        if let Err(short) = self.check_space(&batch) {
            // A full disk may have failed a background flush too: say so, it needs a reopen.
            if self.background_failed() {
                return Err(self.halt_error());
            }
            return Err(short);
        }
        let generation = self.generation()?;
        // One fjall batch: journaled (and synced) as a whole, then applied to the memtables
        // under one sequence number. Every entry of a batch has the same sequence number, so a
        // key written twice is written once here, as its last operation. fjall copies every key
        // and value into its own buffers, so they are read in place (a group's shared writes
        // too: [`WriteBatch::of_group`]). A key too long for fjall is written in its long form
        // ([`long_keys`]).
        let unique = batch.into_unique();
        let mut writes = fjall::OwnedWriteBatch::with_capacity(generation.db.clone(), unique.len())
            .durability(Some(persist_mode(durability)));
        let mut long = Vec::new();
        for (keyspace, key, write) in unique.writes() {
            let tree = handle(&generation.keyspaces, keyspace);
            if !long_keys::is_long(key) {
                match write {
                    Some(value) => writes.insert(tree, key, value),
                    None => writes.remove(tree, key),
                }
                continue;
            }
            let stored = long_keys::stored_key(key);
            match write {
                Some(value) => {
                    writes.insert(tree, &*stored, &*long_keys::stored_value(key, value)?)
                }
                None => writes.remove(tree, &*stored),
            }
            long.push((keyspace, key, stored));
        }
        Self::remove_old_layout(&generation, &mut writes, &long)?;
        let timer = crate::clock::Stopwatch::start();
        let committed = writes.commit().map_err(|e| self.commit_failure(e));
        let took = timer.elapsed();
        if took > SLOW_COMMIT {
            report_slow_commit(&generation, took);
        }
        committed
    }

    fn persist(&self, durability: Durability) -> Result<(), StorageError> {
        self.generation()?
            .db
            .persist(persist_mode(durability))
            .map_err(|e| self.commit_failure(e))
    }
}

/// A fjall snapshot plus the generation it reads (its keyspace handles); `None` when taken
/// while the database was closed (every read of it fails).
#[derive(Clone)]
pub struct FjallSnapshot {
    open: Option<(fjall::Snapshot, Arc<Generation>)>,
}

impl Snapshot for FjallSnapshot {
    type Iter = FjallIter;

    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let Some((snapshot, generation)) = &self.open else {
            return Err(closed());
        };
        if key.is_empty() {
            return Ok(None);
        }
        let tree = handle(&generation.keyspaces, keyspace);
        if !long_keys::is_long(key) {
            let value = snapshot.get(tree, key)?;
            return Ok(value.map(|slice| slice.to_vec()));
        }
        let stored = snapshot.get(tree, &*long_keys::stored_key(key))?;
        if let Some(value) = stored.and_then(|stored| long_keys::value_of(key, &stored)) {
            return Ok(Some(value));
        }
        if !long_keys::in_old_layout_window(key) {
            return Ok(None);
        }
        // Stored as it is by a version before the long-key layout.
        let old = snapshot.get(tree, key)?;
        Ok(old
            .filter(|value| !long_keys::is_long_entry(key, value))
            .map(|slice| slice.to_vec()))
    }

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> FjallIter {
        let Some((snapshot, generation)) = &self.open else {
            let closed = RawIter {
                inner: None,
                reverse,
                closed: true,
                _generation: None,
            };
            return FjallIter(InKeyOrder::new(closed, start, end, reverse));
        };
        let (engine_start, engine_end) = long_keys::engine_bounds(start, end);
        let (engine_start, engine_end) = (
            engine_start.as_ref().map(Vec::as_slice),
            engine_end.as_ref().map(Vec::as_slice),
        );
        // No key is empty: every key is above an empty start bound (fjall refuses empty
        // keys), and none is below an empty end bound.
        let engine_start = match engine_start {
            Bound::Included([]) | Bound::Excluded([]) => Bound::Unbounded,
            other => other,
        };
        let below_every_key = matches!(engine_end, Bound::Included([]) | Bound::Excluded([]));
        let raw = if below_every_key || bounds_are_empty(start, end) {
            None
        } else {
            Some(snapshot.range::<&[u8], _>(
                handle(&generation.keyspaces, keyspace),
                (engine_start, engine_end),
            ))
        };
        FjallIter(InKeyOrder::new(
            RawIter {
                inner: raw,
                reverse,
                closed: false,
                _generation: Some(Arc::clone(generation)),
            },
            start,
            end,
            reverse,
        ))
    }
}

/// What a read of a snapshot taken while the database was closed gets.
fn closed() -> StorageError {
    StorageError::Halted {
        reason: "the storage engine is closed after a failed reopen".into(),
        short_of_space: false,
    }
}

/// Range iterator over a [`FjallSnapshot`], in full-key order; keeps the snapshot alive while
/// it exists.
pub struct FjallIter(InKeyOrder<RawIter>);

impl Iterator for FjallIter {
    type Item = Result<KeyValue, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

/// fjall's entries of a range as stored (long keys in their stored form); keeps the snapshot
/// (and its generation) alive while it exists.
pub struct RawIter {
    inner: Option<fjall::Iter>,
    reverse: bool,
    /// Taken while the database was closed: yields that error once.
    closed: bool,
    _generation: Option<Arc<Generation>>,
}

impl Iterator for RawIter {
    type Item = Result<KeyValue, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if std::mem::take(&mut self.closed) {
            return Some(Err(closed()));
        }
        let inner = self.inner.as_mut()?;
        let guard = if self.reverse {
            inner.next_back()?
        } else {
            inner.next()?
        };
        Some(
            guard
                .into_inner()
                .map(|(key, value)| (key.to_vec(), value.to_vec()))
                .map_err(StorageError::from),
        )
    }
}

#[cfg(test)]
impl FjallBackend {
    /// Writes `key` as it is, however long, as a version before the long-key layout stored
    /// keys of up to 65,535 bytes.
    pub(super) fn put_as_stored(&self, keyspace: Keyspace, key: &[u8], value: &[u8]) {
        let generation = self.generation().unwrap();
        let mut writes = fjall::OwnedWriteBatch::with_capacity(generation.db.clone(), 1);
        writes.insert(handle(&generation.keyspaces, keyspace), key, value);
        writes.commit().unwrap();
    }
}

impl From<fjall::Error> for StorageError {
    fn from(error: fjall::Error) -> Self {
        match error {
            fjall::Error::Io(io) => StorageError::Io(io),
            fjall::Error::Poisoned => StorageError::Poisoned,
            other => StorageError::Engine(Box::new(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_split_between_memtables_and_the_block_cache() {
        // (budget, memtable size, block cache)
        let table = [
            (256 * MIB, 16 * MIB, 192 * MIB),
            (64 * MIB, 4 * MIB, 48 * MIB),
            (16 * MIB, 4 * MIB, 16 * MIB),
            (1024 * MIB, 64 * MIB, 768 * MIB),
            (8192 * MIB, 64 * MIB, 7936 * MIB),
        ];
        for (budget, memtable, cache) in table {
            let config = FjallConfig::for_budget(budget);
            assert_eq!(
                (
                    config.memtable_bytes,
                    config.cache_bytes,
                    config.budget_bytes
                ),
                (memtable, cache, budget),
                "{budget}"
            );
        }
    }

    #[test]
    fn the_memory_in_use_is_reported_against_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let backend =
            FjallBackend::open_with(dir.path(), &FjallConfig::for_budget(64 * MIB)).unwrap();
        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Documents, b"k".to_vec(), vec![7; 1000]);
        backend.commit(batch, Durability::Buffered).unwrap();
        let memory = backend.memory_use();
        assert_eq!(memory.budget_bytes, 64 * MIB);
        assert_eq!(memory.block_cache_capacity_bytes, 48 * MIB);
        assert_eq!(memory.memtable_limit_bytes, 4 * MIB);
        assert!(memory.write_buffer_bytes >= 1000, "{memory:?}");
    }
}
