//! Storage: ordered key-value keyspaces with consistent snapshots and atomic write batches, behind
//! a thin trait so the engine above never names the embedded engine.
//!
//! Owns: the [`Backend`] and [`Snapshot`] traits, [`WriteBatch`] ([`batch`]), [`Durability`],
//! [`StorageError`], the fjall implementation ([`fjall_backend`]), the in-memory one
//! ([`memory`]), pending writes over a snapshot ([`overlay`]; each keyspace's held in ascending
//! runs and a map: [`pending`]), many point reads answered by one ordered walk ([`probe`]), the
//! runtime choice between them ([`store`]), recovering fjall from a failed background flush or
//! compaction ([`fjall_recovery`]), the fault-injecting wrapper tests use ([`faults`]),
//! the order-preserving key encoding ([`keys`]), keys of any length over fjall's bounded ones
//! ([`long_keys`]), the data directory's format version ([`format`]), and the checks of
//! fjall's files before it opens them ([`integrity`], reading the journal with [`journal`] and
//! the trees' metadata with [`tree_files`]). Does not own: BSON query semantics, the
//! catalog format, TTL, time, or group commit — the engine's writer thread decides what goes
//! into a batch and when to commit.
//! Everything here is synchronous; async callers use a writer thread or `spawn_blocking`.
//!
//! # Model
//!
//! - A fixed set of [`Keyspace`]s. Documents of every collection share one keyspace under a
//!   collection-id prefix ([`keys::document_key`]); secondary index entries share another
//!   ([`keys::index_key`]). Creating or dropping a collection therefore never creates or drops a
//!   physical keyspace.
//! - Keys are byte strings of any non-zero length, ordered bytewise; both backends keep that
//!   order exactly (fjall's own keys are at most 65,535 bytes: [`long_keys`] stores longer ones
//!   under a prefix and a digest, and puts range scans back into full-key order).
//! - A [`WriteBatch`] is an ordered list of puts and deletes across keyspaces, committed
//!   atomically: after a crash either all of it is visible or none. Within one batch a later
//!   operation on the same key wins.
//! - A [`Snapshot`] is an owned (`'static`) point-in-time view of every keyspace: it sees every
//!   batch committed before it was taken and nothing after. It can be kept across requests (a
//!   cursor across `getMore`), at the cost of holding back garbage collection of old versions.
//!
//! # fjall API choice
//!
//! [`fjall_backend::FjallBackend`] opens a plain `fjall::Database`: the engine's writer thread is
//! the only writer and its pending writes already hold one write per key, so fjall's write
//! transactions (a lock, and a memtable of their own that every write was inserted into before
//! being inserted again at commit) would only add work. A batch is applied as one
//! `fjall::WriteBatch` (one journal record, one sequence number, with the last operation of a
//! key kept: [`WriteBatch::into_unique`]), committed with `PersistMode::SyncData` (fdatasync
//! of the journal before returning) or `PersistMode::Buffer` (written to the OS, survives a
//! process crash but not a power loss). Snapshots are sequence numbers, so taking one is O(1).

use std::path::PathBuf;

pub mod batch;
pub mod faults;
pub mod fjall_backend;
pub mod fjall_recovery;
pub mod format;
pub mod handle;
pub mod integrity;
pub mod journal;
pub mod keys;
pub mod lock;
pub mod long_keys;
pub mod memory;
pub mod overlay;
pub mod pending;
pub mod probe;
pub mod store;
pub mod tree_files;

pub use batch::WriteBatch;
pub use faults::{Faults, FaultyBackend};
pub use fjall_backend::{FjallBackend, FjallConfig, FjallSnapshot, MemoryUse};
pub use memory::{MemoryBackend, MemorySnapshot};
pub use store::{Store, StoreIter, StoreSnapshot};

use std::ops::Bound;

/// The physical keyspaces. The set is fixed; collections and indexes are key prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Keyspace {
    /// Databases, collections, indexes and their options.
    Catalog,
    /// Document bodies, keyed by `collection id ++ encoded _id`.
    Documents,
    /// Secondary index entries, keyed by `collection id ++ index id ++ values ++ _id`.
    Indexes,
    /// Expiry-ordered keys for the TTL reaper.
    Expiry,
    /// The operation log, keyed by operation time (8 bytes, big-endian).
    Oplog,
}

impl Keyspace {
    /// Every keyspace, in a fixed order (the index of each is `self as usize`).
    pub const ALL: [Keyspace; 5] = [
        Keyspace::Catalog,
        Keyspace::Documents,
        Keyspace::Indexes,
        Keyspace::Expiry,
        Keyspace::Oplog,
    ];

    /// The on-disk name. Never change one: it names existing data.
    pub fn name(self) -> &'static str {
        match self {
            Keyspace::Catalog => "catalog",
            Keyspace::Documents => "documents",
            Keyspace::Indexes => "indexes",
            Keyspace::Expiry => "expiry",
            Keyspace::Oplog => "oplog",
        }
    }
}

/// How durable a commit is when it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The journal is fdatasync'ed before the commit returns: the write survives power loss.
    SyncData,
    /// The journal is written to the OS: the write survives a process crash, not a power loss,
    /// until a later `SyncData` commit or [`Backend::persist`].
    Buffered,
}

/// A key-value pair read from a snapshot.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// A storage engine: ordered keyspaces, snapshots, atomic batches.
pub trait Backend: Send + Sync + 'static {
    type Snapshot: Snapshot;

    /// A consistent view of every keyspace as of the last completed commit. Cheap.
    fn snapshot(&self) -> Self::Snapshot;

    /// Applies every operation of `batch` atomically, in order; with [`Durability::SyncData`]
    /// the batch is on disk when this returns, and visible to snapshots only then. An empty
    /// batch is a no-op; a batch with an empty key is refused whole. Keys may be of any other
    /// length.
    /// An error means nothing of the batch was applied, except
    /// [`StorageError::OutcomeUnknown`] (and [`StorageError::Poisoned`]): then the batch may or
    /// may not be durable, and the backend may refuse every later commit.
    fn commit(&self, batch: WriteBatch, durability: Durability) -> Result<(), StorageError>;

    /// Makes every earlier commit as durable as `durability` (e.g. after `Buffered` commits).
    fn persist(&self, durability: Durability) -> Result<(), StorageError>;
}

/// A consistent, owned, point-in-time view of every keyspace.
pub trait Snapshot: Clone + Send + Sync + 'static {
    /// Iterator over a key range; owns what it needs, so it can outlive the borrow of the
    /// snapshot and be kept by a cursor.
    type Iter: Iterator<Item = Result<KeyValue, StorageError>> + Send + 'static;

    /// The value under `key`; `None` for an empty key.
    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError>;

    /// Entries with `start <= key <= end` (per the bounds) in key order, or in reverse key order
    /// when `reverse`. An empty or inverted range yields nothing; bounds may be of any length.
    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Self::Iter;

    /// Entries whose key starts with `prefix`.
    fn prefix(&self, keyspace: Keyspace, prefix: &[u8], reverse: bool) -> Self::Iter {
        match keys::prefix_end(prefix) {
            Some(end) => self.range(
                keyspace,
                Bound::Included(prefix),
                Bound::Excluded(&end),
                reverse,
            ),
            None => self.range(keyspace, Bound::Included(prefix), Bound::Unbounded, reverse),
        }
    }
}

/// Refuses a key no backend can store: an empty one.
pub fn check_key(key: &[u8]) -> Result<(), StorageError> {
    if key.is_empty() {
        return Err(StorageError::EmptyKey);
    }
    Ok(())
}

/// Whether no key can satisfy both bounds (callers may pass inverted bounds, on which
/// `BTreeMap::range` would panic).
pub fn bounds_are_empty(start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
        | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
        _ => false,
    }
}

/// A storage failure. Never caused by a client.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// An I/O failure before anything of the batch was applied.
    #[error("storage I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The batch was refused before anything was written: the data directory's file system
    /// has less free space than the batch needs plus a reserve.
    #[error(
        "not enough free disk space in the data directory: {available} bytes available, \
         {needed} needed"
    )]
    OutOfSpace { available: u64, needed: u64 },
    /// The batch was refused before anything was written: the in-memory store would pass its
    /// size limit (`--inMemorySizeGB`).
    #[error(
        "the in-memory storage is full: it holds {held} bytes of its {limit}-byte limit \
         (--inMemorySizeGB) and the write needs {needed} more; delete data or restart with a \
         larger limit"
    )]
    MemoryFull { held: u64, needed: u64, limit: u64 },
    /// The journal write or sync failed after the batch was handed to the engine: whether it
    /// is durable is unknown (it may appear after a restart, or be visible already).
    #[error("storage journal write or sync failed; the write may or may not be durable: {0}")]
    OutcomeUnknown(std::io::Error),
    /// A background flush or compaction failed and stopped the database; the batch was refused
    /// before anything of it was written. `short_of_space`: the disk lacks the room a reopen
    /// needs (the client sees 14031 `OutOfDiskSpace`).
    #[error("the storage engine is stopped: {reason}")]
    Halted {
        reason: String,
        short_of_space: bool,
    },
    /// An earlier write failed (e.g. the journal could not be synced); the engine refuses every
    /// further write until restarted, because what reached disk is unknown.
    #[error("storage engine is unusable after an earlier write failure; restart the server")]
    Poisoned,
    /// A key past what a stored value can measure (4 GiB; far above any key the engine
    /// builds, which the 16 MiB document limit bounds).
    #[error("storage key of {len} bytes is too long to store")]
    KeyTooLarge { len: usize },
    #[error("storage keys may not be empty")]
    EmptyKey,
    #[error("storage engine error: {0}")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// Another server (or another engine in this process) has the data directory open.
    #[error(
        "the data directory {} is in use by {holder}: is another mayfly already running on it?",
        dir.display()
    )]
    Locked { dir: PathBuf, holder: String },
    /// A file of the data directory is missing or fails its check: the directory is refused
    /// rather than opened with what is left.
    #[error(
        "the data directory is damaged: {}: {detail}. Nothing was changed; copy the data \
         directory somewhere safe, then run `mayfly repair --dbpath <dir>` to salvage what is \
         readable",
        path.display()
    )]
    Damaged { path: PathBuf, detail: String },
    /// The data directory's marker records a format newer than this binary reads
    /// ([`format`]): it was written by a newer mayfly and is refused before any of its files
    /// is read.
    #[error(
        "the data directory {} is in format {found}, written by a newer mayfly; this mayfly ({}) \
         reads data directory format {} and earlier. Nothing was changed: run it with a mayfly \
         that reads format {found}",
        dir.display(),
        env!("CARGO_PKG_VERSION"),
        format::CURRENT
    )]
    NewerFormat { dir: PathBuf, found: u32 },
}

impl StorageError {
    /// Whether the failed batch may have been applied or made durable, so the failure must not
    /// be reported as a clean refusal.
    pub fn outcome_unknown(&self) -> bool {
        matches!(
            self,
            StorageError::OutcomeUnknown(_) | StorageError::Poisoned
        )
    }

    /// Whether the failure is the file system running out of space.
    pub fn is_out_of_space(&self) -> bool {
        match self {
            StorageError::OutOfSpace { .. } | StorageError::MemoryFull { .. } => true,
            StorageError::Halted { short_of_space, .. } => *short_of_space,
            StorageError::Io(io) => io.kind() == std::io::ErrorKind::StorageFull,
            _ => false,
        }
    }
}

impl From<StorageError> for crate::error::Error {
    fn from(error: StorageError) -> Self {
        use crate::error::{Error, ErrorCode};
        if error.is_out_of_space() {
            Error::new(ErrorCode::OutOfDiskSpace, error.to_string())
        } else {
            Error::internal(error.to_string())
        }
    }
}

#[cfg(test)]
mod backend_tests;
#[cfg(test)]
mod damage_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_errors_become_internal_errors() {
        let error: crate::error::Error = StorageError::Poisoned.into();
        assert_eq!(error.code, crate::error::ErrorCode::InternalError);
    }

    #[test]
    fn keyspace_names_are_distinct() {
        let mut names: Vec<_> = Keyspace::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Keyspace::ALL.len());
    }
}
