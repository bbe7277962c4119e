//! A fault-injecting wrapper around any [`Backend`], for tests of how the engine takes storage
//! failures: fail the next commits cleanly (nothing applied), make the next syncs fail after the
//! batch was applied (its durability unknown), report a full disk until told otherwise, or hold
//! commits until released (to run work beside a commit that is under way).
//!
//! Owns: the switches ([`Faults`]) and where in a commit each one strikes. Does not own: what
//! the engine does about a failure (`engine::writer`). With every switch off (the default) the
//! wrapper only forwards.

use super::{Backend, Durability, StorageError, WriteBatch};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// The switches of a [`FaultyBackend`]; shared, so a test flips them while the server runs.
#[derive(Debug, Default)]
pub struct Faults {
    failing_commits: AtomicU64,
    failing_syncs: AtomicU64,
    disk_full: AtomicBool,
    /// While true, commits wait at their start; changed under `gate`, so a commit that saw it
    /// true waits for the change.
    held: AtomicBool,
    gate: Mutex<()>,
    released: Condvar,
    /// Commits waiting while held.
    waiting: AtomicU64,
}

impl Faults {
    /// The next `n` commits fail with an I/O error before anything of them is applied.
    pub fn fail_next_commits(&self, n: u64) {
        self.failing_commits.store(n, Ordering::SeqCst);
    }

    /// The next `n` syncs fail: a durable commit is applied (visible, not durable) and then
    /// reports [`StorageError::OutcomeUnknown`], as does a `persist`.
    pub fn fail_next_syncs(&self, n: u64) {
        self.failing_syncs.store(n, Ordering::SeqCst);
    }

    /// While on, every commit fails with ENOSPC before anything of it is applied.
    pub fn set_disk_full(&self, full: bool) {
        self.disk_full.store(full, Ordering::SeqCst);
    }

    /// While on, every commit waits at its start, before anything of it is applied (and before
    /// the other switches are read), until this is turned off.
    pub fn hold_commits(&self, held: bool) {
        {
            let _gate = crate::sync::lock_recovering(&self.gate, "storage fault gate");
            self.held.store(held, Ordering::SeqCst);
        }
        self.released.notify_all();
    }

    /// How many commits are waiting because commits are held.
    pub fn commits_waiting(&self) -> u64 {
        self.waiting.load(Ordering::SeqCst)
    }

    fn wait_while_held(&self) {
        if !self.held.load(Ordering::SeqCst) {
            return;
        }
        let mut gate = crate::sync::lock_recovering(&self.gate, "storage fault gate");
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while self.held.load(Ordering::SeqCst) {
            gate = match self.released.wait(gate) {
                Ok(gate) => gate,
                Err(_) => break,
            };
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    /// Takes one from `counter` if it is not zero; whether it did.
    fn take(counter: &AtomicU64) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

fn injected(kind: std::io::ErrorKind, what: &str) -> std::io::Error {
    std::io::Error::new(kind, format!("{what} (injected fault)"))
}

/// A backend whose commits and syncs fail when its [`Faults`] say so.
pub struct FaultyBackend<B> {
    inner: B,
    faults: Arc<Faults>,
}

impl<B: Backend> FaultyBackend<B> {
    pub fn new(inner: B) -> Self {
        FaultyBackend {
            inner,
            faults: Arc::default(),
        }
    }

    pub fn faults(&self) -> &Arc<Faults> {
        &self.faults
    }

    pub fn inner(&self) -> &B {
        &self.inner
    }
}

impl<B: Backend> Backend for FaultyBackend<B> {
    type Snapshot = B::Snapshot;

    fn snapshot(&self) -> B::Snapshot {
        self.inner.snapshot()
    }

    fn commit(&self, batch: WriteBatch, durability: Durability) -> Result<(), StorageError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.faults.wait_while_held();
        if self.faults.disk_full.load(Ordering::SeqCst) {
            return Err(StorageError::Io(injected(
                std::io::ErrorKind::StorageFull,
                "no space left on device",
            )));
        }
        if Faults::take(&self.faults.failing_commits) {
            return Err(StorageError::Io(injected(
                std::io::ErrorKind::Other,
                "journal write failed",
            )));
        }
        if durability == Durability::SyncData && Faults::take(&self.faults.failing_syncs) {
            self.inner.commit(batch, Durability::Buffered)?;
            return Err(StorageError::OutcomeUnknown(injected(
                std::io::ErrorKind::Other,
                "journal sync failed",
            )));
        }
        self.inner.commit(batch, durability)
    }

    fn persist(&self, durability: Durability) -> Result<(), StorageError> {
        if Faults::take(&self.faults.failing_syncs) {
            return Err(StorageError::OutcomeUnknown(injected(
                std::io::ErrorKind::Other,
                "journal sync failed",
            )));
        }
        self.inner.persist(durability)
    }
}
