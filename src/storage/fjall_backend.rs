//! The fjall implementation of [`Backend`]: one `fjall::Database` holding the fixed
//! [`Keyspace`]s.
//!
//! Owns: opening, tuning and recovering the on-disk database, and translating batches, snapshots
//! and errors between the storage traits and fjall. Does not own: key layout (`keys`), what goes
//! into a batch, or when to commit (the engine's writer).
//!
//! # Tuning
//!
//! - Block cache: [`FjallConfig::cache_bytes`], 256 MiB by default (fjall's default is 32 MiB;
//!   its guidance is ~20–25% of memory for a dedicated server).
//! - Journal: durability is chosen per commit ([`Durability`]), so fjall's automatic
//!   per-write flush is turned off (`manual_journal_persist`); a `Buffered` commit still writes
//!   to the OS. Journal compression stays fjall's default (LZ4 for entries over 4 KiB: large
//!   documents). The journal size limit stays at 512 MiB.
//! - Keyspaces: `documents` and `catalog` keep bloom filters (inserts probe for an existing
//!   `_id` and usually miss); `indexes` and `expiry` are only range-scanned, so they build no
//!   filters. Block size, compression (LZ4) and compaction (leveled) are fjall's defaults.
//! - Background workers: fjall's default, min(cores, 4).
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

use super::{
    bounds_are_empty, Backend, Durability, KeyValue, Keyspace, Snapshot, StorageError, WriteBatch,
    WriteOp, MAX_KEY_LEN,
};
use fjall::config::FilterPolicy;
use fjall::{Database, KeyspaceCreateOptions, PersistMode, Readable};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options for [`FjallBackend::open_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FjallConfig {
    /// Block cache capacity in bytes.
    pub cache_bytes: u64,
    /// Free space a commit leaves on the file system, for fjall's own files (journal buffer,
    /// memtable flushes, version files): a commit that would go below it is refused.
    pub reserve_bytes: u64,
}

impl Default for FjallConfig {
    fn default() -> Self {
        FjallConfig {
            cache_bytes: 256 * 1024 * 1024,
            reserve_bytes: 2 * 1024 * 1024,
        }
    }
}

/// One fjall keyspace handle per [`Keyspace`].
struct Handles {
    catalog: fjall::Keyspace,
    documents: fjall::Keyspace,
    indexes: fjall::Keyspace,
    expiry: fjall::Keyspace,
    oplog: fjall::Keyspace,
}

/// A durable database on a local directory.
pub struct FjallBackend {
    db: Database,
    keyspaces: Arc<Handles>,
    path: PathBuf,
    reserve_bytes: u64,
    /// Declared last, so the directory stays locked until every handle is closed.
    _lock: super::lock::DirLock,
}

impl FjallBackend {
    /// Opens (creating if needed) the database in directory `path` with default tuning.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        FjallBackend::open_with(path, &FjallConfig::default())
    }

    pub fn open_with(path: &Path, config: &FjallConfig) -> Result<Self, StorageError> {
        std::fs::create_dir_all(path)?;
        let lock = super::lock::DirLock::acquire(path)?;
        let db = Database::builder(path)
            .cache_size(config.cache_bytes)
            .manual_journal_persist(true)
            .open()?;
        let open = |keyspace: Keyspace| db.keyspace(keyspace.name(), || keyspace_options(keyspace));
        let keyspaces = Handles {
            catalog: open(Keyspace::Catalog)?,
            documents: open(Keyspace::Documents)?,
            indexes: open(Keyspace::Indexes)?,
            expiry: open(Keyspace::Expiry)?,
            oplog: open(Keyspace::Oplog)?,
        };
        Ok(FjallBackend {
            db,
            _lock: lock,
            keyspaces: Arc::new(keyspaces),
            path: path.to_path_buf(),
            reserve_bytes: config.reserve_bytes,
        })
    }

    /// Refuses `batch` when the file system lacks room for it and the reserve. A file system
    /// that cannot say how much is free is not checked.
    fn check_space(&self, batch: &WriteBatch) -> Result<(), StorageError> {
        let Ok(stats) = rustix::fs::statvfs(&self.path) else {
            return Ok(());
        };
        let available = stats.f_bavail.saturating_mul(stats.f_frsize);
        let needed = (batch.approximate_size() as u64)
            .saturating_mul(2)
            .saturating_add(self.reserve_bytes);
        if available < needed {
            return Err(StorageError::OutOfSpace { available, needed });
        }
        Ok(())
    }

    /// Bytes on disk (tables and journals), for `dbStats`/`serverStatus`.
    pub fn disk_space(&self) -> Result<u64, StorageError> {
        Ok(self.db.disk_space()?)
    }
}

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
            snapshot: self.db.snapshot(),
            keyspaces: Arc::clone(&self.keyspaces),
        }
    }

    fn commit(&self, batch: WriteBatch, durability: Durability) -> Result<(), StorageError> {
        if batch.is_empty() {
            return Ok(());
        }
        // fjall panics on an empty or over-long key; refuse the batch before any of it is
        // applied.
        batch.check_keys()?;
        self.check_space(&batch)?;
        // One fjall batch: journaled (and synced) as a whole, then applied to the memtables
        // under one sequence number. Every entry of a batch has the same sequence number, so a
        // key written twice is written once here, as its last operation.
        let ops = batch.into_unique_ops();
        let mut writes = fjall::OwnedWriteBatch::with_capacity(self.db.clone(), ops.len())
            .durability(Some(persist_mode(durability)));
        for op in ops {
            match op {
                WriteOp::Put {
                    keyspace,
                    key,
                    value,
                } => writes.insert(handle(&self.keyspaces, keyspace), key, value),
                WriteOp::Delete { keyspace, key } => {
                    writes.remove(handle(&self.keyspaces, keyspace), key)
                }
            }
        }
        writes.commit().map_err(journal_failure)
    }

    fn persist(&self, durability: Durability) -> Result<(), StorageError> {
        self.db
            .persist(persist_mode(durability))
            .map_err(journal_failure)
    }
}

/// A fjall snapshot plus the keyspace handles it reads through.
#[derive(Clone)]
pub struct FjallSnapshot {
    snapshot: fjall::Snapshot,
    keyspaces: Arc<Handles>,
}

impl Snapshot for FjallSnapshot {
    type Iter = FjallIter;

    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Ok(None);
        }
        let value = self.snapshot.get(handle(&self.keyspaces, keyspace), key)?;
        Ok(value.map(|slice| slice.to_vec()))
    }

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> FjallIter {
        let (start, end) = (clamp_start(start), clamp_end(end));
        // No key is empty, so nothing is below an empty end bound.
        let below_every_key = matches!(end, Bound::Included([]) | Bound::Excluded([]));
        let inner = if below_every_key || bounds_are_empty(start, end) {
            None
        } else {
            Some(
                self.snapshot
                    .range::<&[u8], _>(handle(&self.keyspaces, keyspace), (start, end)),
            )
        };
        FjallIter { inner, reverse }
    }
}

/// fjall panics on an over-long seek key. No stored key is longer than `MAX_KEY_LEN`, and such
/// a key `x` is above a longer `k` exactly when it is above `k`'s `MAX_KEY_LEN`-byte prefix `p`
/// (`x == p` sorts below `k`), so the bound becomes `Excluded(p)`.
fn clamp_start(start: Bound<&[u8]>) -> Bound<&[u8]> {
    match start {
        // No key is empty, so every key is above an empty bound (fjall refuses empty keys).
        Bound::Included([]) | Bound::Excluded([]) => Bound::Unbounded,
        Bound::Included(k) | Bound::Excluded(k) if k.len() > MAX_KEY_LEN => {
            Bound::Excluded(k.get(..MAX_KEY_LEN).unwrap_or(k))
        }
        other => other,
    }
}

/// As [`clamp_start`]: a short key is below a longer `k` exactly when it is at most `p`.
fn clamp_end(end: Bound<&[u8]>) -> Bound<&[u8]> {
    match end {
        Bound::Included(k) | Bound::Excluded(k) if k.len() > MAX_KEY_LEN => {
            Bound::Included(k.get(..MAX_KEY_LEN).unwrap_or(k))
        }
        other => other,
    }
}

/// Range iterator over a [`FjallSnapshot`]; keeps the snapshot alive while it exists.
pub struct FjallIter {
    inner: Option<fjall::Iter>,
    reverse: bool,
}

impl Iterator for FjallIter {
    type Item = Result<KeyValue, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
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

/// A failed journal write or sync: fjall is poisoned and the batch's fate unknown.
fn journal_failure(error: fjall::Error) -> StorageError {
    match error {
        fjall::Error::Io(io) => StorageError::OutcomeUnknown(io),
        other => StorageError::from(other),
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
