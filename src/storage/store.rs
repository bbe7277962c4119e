//! The backend a server runs on, chosen at start (`--storage`): an enum over the
//! implementations, so the engine names one concrete type and every call is a `match`, not a
//! virtual call through a boxed trait object (snapshots and their iterators are hot).
//!
//! Owns: the dispatch from [`Store`], [`StoreSnapshot`] and [`StoreIter`] to each backend.
//! Does not own: any backend's behaviour.

use super::overlay::{Merged, Overlay, OverlayIter, OverlaySnapshot};
use super::{fjall_backend::FjallIter, memory::MemoryIter};
use super::{
    Backend, Durability, FjallBackend, FjallSnapshot, KeyValue, Keyspace, MemoryBackend,
    MemorySnapshot, Snapshot, StorageError, WriteBatch,
};
use std::ops::Bound;
use std::sync::Arc;

/// One of the storage backends.
pub enum Store {
    /// Durable, on disk under `--dbpath`.
    Fjall(FjallBackend),
    /// In memory: nothing is written to disk, nothing survives the process.
    Memory(MemoryBackend),
}

impl Store {
    /// The backend's name, as `serverStatus` shows it.
    pub fn name(&self) -> &'static str {
        match self {
            Store::Fjall(_) => "fjall",
            Store::Memory(_) => "memory",
        }
    }

    /// Whether committed data survives a restart.
    pub fn is_persistent(&self) -> bool {
        matches!(self, Store::Fjall(_))
    }

    /// The data directory's format version ([`super::format`]); `None` in memory. An open
    /// directory is in the current format: a newer one was refused, and an older or unmarked
    /// one holds the current format's files and is recorded as such when its open completes.
    pub fn format_version(&self) -> Option<u32> {
        match self {
            Store::Fjall(_) => Some(super::format::CURRENT),
            Store::Memory(_) => None,
        }
    }

    /// The on-disk engine's cache and memtable memory; `None` in memory.
    pub fn memory_use(&self) -> Option<super::MemoryUse> {
        match self {
            Store::Fjall(b) => Some(b.memory_use()),
            Store::Memory(_) => None,
        }
    }

    /// Whether a background failure stopped the on-disk engine until it is reopened.
    pub fn halted(&self) -> bool {
        match self {
            Store::Fjall(b) => b.halted(),
            Store::Memory(_) => false,
        }
    }

    /// Reopens a halted on-disk engine ([`FjallBackend::reopen`]); nothing to do otherwise.
    pub fn reopen(&self, wait: std::time::Duration) -> Result<(), StorageError> {
        match self {
            Store::Fjall(b) => b.reopen(wait),
            Store::Memory(_) => Ok(()),
        }
    }

    /// Background failures and reopens of the on-disk engine; `None` in memory.
    pub fn background_state(&self) -> Option<super::fjall_recovery::BackgroundState> {
        match self {
            Store::Fjall(b) => Some(b.background_state()),
            Store::Memory(_) => None,
        }
    }

    /// Bytes on disk (fjall) or held in memory (every version included).
    pub fn size_bytes(&self) -> Result<u64, StorageError> {
        match self {
            Store::Fjall(b) => b.disk_space(),
            Store::Memory(b) => Ok(b.bytes_held()),
        }
    }
}

impl Backend for Store {
    type Snapshot = StoreSnapshot;

    fn snapshot(&self) -> StoreSnapshot {
        match self {
            Store::Fjall(b) => StoreSnapshot::Fjall(b.snapshot()),
            Store::Memory(b) => StoreSnapshot::Memory(b.snapshot()),
        }
    }

    fn commit(&self, batch: WriteBatch, durability: Durability) -> Result<(), StorageError> {
        match self {
            Store::Fjall(b) => b.commit(batch, durability),
            Store::Memory(b) => b.commit(batch, durability),
        }
    }

    fn persist(&self, durability: Durability) -> Result<(), StorageError> {
        match self {
            Store::Fjall(b) => b.persist(durability),
            Store::Memory(b) => b.persist(durability),
        }
    }
}

/// A snapshot of a [`Store`], or one with a transaction's pending writes over it.
#[derive(Clone)]
pub enum StoreSnapshot {
    Fjall(FjallSnapshot),
    Memory(MemorySnapshot),
    Overlaid(Arc<OverlaySnapshot<StoreSnapshot>>),
}

impl StoreSnapshot {
    /// This snapshot with `writes` over it.
    pub fn overlaid(self, writes: Arc<Overlay>) -> StoreSnapshot {
        StoreSnapshot::Overlaid(Arc::new(OverlaySnapshot::new(self, writes)))
    }
}

impl Snapshot for StoreSnapshot {
    type Iter = StoreIter;

    fn get(&self, keyspace: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        match self {
            StoreSnapshot::Fjall(s) => s.get(keyspace, key),
            StoreSnapshot::Memory(s) => s.get(keyspace, key),
            StoreSnapshot::Overlaid(s) => s.get(keyspace, key),
        }
    }

    fn range(
        &self,
        keyspace: Keyspace,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> StoreIter {
        match self {
            StoreSnapshot::Fjall(s) => StoreIter::Fjall(s.range(keyspace, start, end, reverse)),
            StoreSnapshot::Memory(s) => StoreIter::Memory(s.range(keyspace, start, end, reverse)),
            StoreSnapshot::Overlaid(s) => {
                StoreIter::Overlaid(Box::new(s.range(keyspace, start, end, reverse)))
            }
        }
    }
}

/// A range iterator of a [`StoreSnapshot`].
pub enum StoreIter {
    Fjall(FjallIter),
    Memory(MemoryIter),
    Overlaid(Box<Merged<StoreIter, OverlayIter>>),
}

impl Iterator for StoreIter {
    type Item = Result<KeyValue, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            StoreIter::Fjall(i) => i.next(),
            StoreIter::Memory(i) => i.next(),
            StoreIter::Overlaid(i) => i.next(),
        }
    }
}
