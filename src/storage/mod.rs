//! Storage: ordered key-value keyspaces with consistent snapshots and atomic write batches, behind
//! a thin trait so the engine above never names the embedded engine.
//!
//! Owns: the [`Backend`] and [`Snapshot`] traits, [`WriteBatch`], [`Durability`],
//! [`StorageError`], the fjall implementation ([`fjall_backend`]), the in-memory one
//! ([`memory`]), pending writes over a snapshot ([`overlay`]; each keyspace's held in ascending
//! runs and a map: [`pending`]), many point reads answered by one ordered walk ([`probe`]), the
//! runtime choice between them ([`store`]), the fault-injecting wrapper tests use ([`faults`])
//! and the order-preserving key encoding ([`keys`]). Does not own: BSON query semantics, the
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
//! key kept: [`WriteBatch::into_unique_ops`]), committed with `PersistMode::SyncData` (fdatasync
//! of the journal before returning) or `PersistMode::Buffer` (written to the OS, survives a
//! process crash but not a power loss). Snapshots are sequence numbers, so taking one is O(1).

use std::path::PathBuf;

pub mod faults;
pub mod fjall_backend;
pub mod keys;
pub mod lock;
pub mod memory;
pub mod overlay;
pub mod pending;
pub mod probe;
pub mod store;

pub use faults::{Faults, FaultyBackend};
pub use fjall_backend::{FjallBackend, FjallConfig, FjallSnapshot, MemoryUse};
pub use memory::{MemoryBackend, MemorySnapshot};
pub use store::{Store, StoreIter, StoreSnapshot};

use std::ops::Bound;

/// Longest key a backend accepts (fjall's limit). Longer keys are refused by
/// [`Backend::commit`] with [`StorageError::KeyTooLarge`], empty ones with
/// [`StorageError::EmptyKey`]; the engine should check first and
/// give the client a proper error (a large `_id` or indexed value can produce one).
pub const MAX_KEY_LEN: usize = u16::MAX as usize;

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

/// One operation of a [`WriteBatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    Put {
        keyspace: Keyspace,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        keyspace: Keyspace,
        key: Vec<u8>,
    },
}

/// Per-operation overhead counted by [`WriteBatch::approximate_size`] (journal framing,
/// sequence number, value type).
const OP_OVERHEAD_BYTES: usize = 16;

/// Ordered puts and deletes across keyspaces, committed atomically by [`Backend::commit`].
/// A later operation on the same key overrides an earlier one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    ops: Vec<WriteOp>,
    approximate_size: usize,
    /// Every (keyspace, key) is written at most once ([`WriteBatch::with_unique_keys`]).
    unique_keys: bool,
}

impl WriteBatch {
    pub fn new() -> Self {
        WriteBatch::default()
    }

    /// A batch with room for `ops` operations.
    pub fn with_capacity(ops: usize) -> Self {
        WriteBatch {
            ops: Vec::with_capacity(ops),
            approximate_size: 0,
            unique_keys: false,
        }
    }

    /// A batch with room for `ops` operations whose builder writes every (keyspace, key) at
    /// most once, in any order (a group's pending writes, which hold each key once): its
    /// operations need neither order nor deduplication ([`WriteBatch::into_unique_ops`]).
    pub fn with_unique_keys(ops: usize) -> Self {
        WriteBatch {
            unique_keys: true,
            ..WriteBatch::with_capacity(ops)
        }
    }

    pub fn put(&mut self, keyspace: Keyspace, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        let (key, value) = (key.into(), value.into());
        self.approximate_size += key.len() + value.len() + OP_OVERHEAD_BYTES;
        self.ops.push(WriteOp::Put {
            keyspace,
            key,
            value,
        });
    }

    pub fn delete(&mut self, keyspace: Keyspace, key: impl Into<Vec<u8>>) {
        let key = key.into();
        self.approximate_size += key.len() + OP_OVERHEAD_BYTES;
        self.ops.push(WriteOp::Delete { keyspace, key });
    }

    /// Appends every operation of `other` after this batch's (group commit merges batches).
    pub fn append(&mut self, other: WriteBatch) {
        // The two may write the same key.
        self.unique_keys = false;
        self.approximate_size += other.approximate_size;
        self.ops.extend(other.ops);
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Approximate bytes the batch adds to the journal: keys, values and a fixed per-operation
    /// overhead. For bounding group-commit batches, not for accounting.
    pub fn approximate_size(&self) -> usize {
        self.approximate_size
    }

    /// The operations, in order.
    pub fn ops(&self) -> &[WriteOp] {
        &self.ops
    }

    pub fn into_ops(self) -> Vec<WriteOp> {
        self.ops
    }

    /// The operations with only the last one of each (keyspace, key) kept, in an order that
    /// applies them with the batch's meaning: for a backend that applies a batch as one atomic
    /// step in which the order of operations is lost. A batch built with unique keys (a
    /// group's batch) is returned as it is; one whose keys are increasing within each
    /// keyspace is checked in one pass and returned as it is.
    pub fn into_unique_ops(self) -> Vec<WriteOp> {
        fn key_of(op: &WriteOp) -> (usize, &[u8]) {
            match op {
                WriteOp::Put { keyspace, key, .. } | WriteOp::Delete { keyspace, key } => {
                    (*keyspace as usize, key.as_slice())
                }
            }
        }
        if self.unique_keys {
            debug_assert!(
                {
                    let mut seen = std::collections::HashSet::new();
                    self.ops.iter().all(|op| seen.insert(key_of(op)))
                },
                "a batch built with unique keys writes a key twice"
            );
            return self.ops;
        }
        let increasing = self.ops.windows(2).all(|pair| match pair {
            [a, b] => {
                let ((ka, a), (kb, b)) = (key_of(a), key_of(b));
                ka != kb || a < b
            }
            _ => true,
        });
        if increasing {
            return self.ops;
        }
        let mut seen = std::collections::HashSet::with_capacity(self.ops.len());
        let mut last_first: Vec<WriteOp> = Vec::with_capacity(self.ops.len());
        for op in self.ops.into_iter().rev() {
            let (keyspace, key) = key_of(&op);
            if seen.insert((keyspace, key.to_vec())) {
                last_first.push(op);
            }
        }
        last_first.reverse();
        last_first
    }

    /// Refuses the whole batch if any of its keys is one no backend can store ([`check_key`]),
    /// before any of it is applied.
    pub fn check_keys(&self) -> Result<(), StorageError> {
        self.ops.iter().try_for_each(|op| {
            let (WriteOp::Put { key, .. } | WriteOp::Delete { key, .. }) = op;
            check_key(key)
        })
    }
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
    /// batch is a no-op; a batch with a key longer than [`MAX_KEY_LEN`] is refused whole.
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

    /// The value under `key`; `None` for a key longer than [`MAX_KEY_LEN`].
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

/// Refuses a key no backend can store: an empty one, or one longer than [`MAX_KEY_LEN`].
pub fn check_key(key: &[u8]) -> Result<(), StorageError> {
    if key.is_empty() {
        return Err(StorageError::EmptyKey);
    }
    if key.len() > MAX_KEY_LEN {
        return Err(StorageError::KeyTooLarge { len: key.len() });
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
    /// The journal write or sync failed after the batch was handed to the engine: whether it
    /// is durable is unknown (it may appear after a restart, or be visible already).
    #[error("storage journal write or sync failed; the write may or may not be durable: {0}")]
    OutcomeUnknown(std::io::Error),
    /// An earlier write failed (e.g. the journal could not be synced); the engine refuses every
    /// further write until restarted, because what reached disk is unknown.
    #[error("storage engine is unusable after an earlier write failure; restart the server")]
    Poisoned,
    #[error("storage key of {len} bytes exceeds the limit of {MAX_KEY_LEN} bytes")]
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
            StorageError::OutOfSpace { .. } => true,
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
mod tests {
    use super::*;

    #[test]
    fn unique_ops_keep_the_last_operation_of_each_key() {
        let mut ordered = WriteBatch::new();
        ordered.put(Keyspace::Catalog, b"a", b"1");
        ordered.put(Keyspace::Documents, b"a", b"1");
        ordered.put(Keyspace::Documents, b"b", b"1");
        ordered.delete(Keyspace::Expiry, b"a");
        let expected = ordered.clone().into_ops();
        assert_eq!(ordered.into_unique_ops(), expected);

        let mut repeated = WriteBatch::new();
        repeated.put(Keyspace::Documents, b"d", b"1");
        repeated.put(Keyspace::Indexes, b"d", b"1");
        repeated.put(Keyspace::Documents, b"c", b"1");
        repeated.delete(Keyspace::Documents, b"d");
        repeated.put(Keyspace::Documents, b"e", b"1");
        repeated.put(Keyspace::Documents, b"e", b"2");
        let put = |keyspace, key: &[u8], value: &[u8]| WriteOp::Put {
            keyspace,
            key: key.to_vec(),
            value: value.to_vec(),
        };
        assert_eq!(
            repeated.into_unique_ops(),
            vec![
                put(Keyspace::Indexes, b"d", b"1"),
                put(Keyspace::Documents, b"c", b"1"),
                WriteOp::Delete {
                    keyspace: Keyspace::Documents,
                    key: b"d".to_vec()
                },
                put(Keyspace::Documents, b"e", b"2"),
            ]
        );
    }

    #[test]
    fn write_batch_counts_operations_and_bytes() {
        let mut batch = WriteBatch::new();
        assert!(batch.is_empty());
        batch.put(Keyspace::Documents, b"k1".to_vec(), b"value".to_vec());
        batch.delete(Keyspace::Indexes, b"k2".to_vec());
        assert_eq!(batch.len(), 2);
        assert_eq!(batch.approximate_size(), 2 + 5 + 2 + 2 * OP_OVERHEAD_BYTES);

        let mut other = WriteBatch::with_capacity(1);
        other.put(Keyspace::Catalog, b"c".to_vec(), b"".to_vec());
        batch.append(other);
        assert_eq!(batch.len(), 3);
        assert_eq!(
            batch.approximate_size(),
            2 + 5 + 2 + 1 + 3 * OP_OVERHEAD_BYTES
        );
        assert!(matches!(
            batch.ops().last(),
            Some(WriteOp::Put {
                keyspace: Keyspace::Catalog,
                ..
            })
        ));
    }

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
