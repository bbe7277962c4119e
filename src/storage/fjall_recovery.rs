//! Recovering the fjall backend from a failed background flush or compaction without a
//! restart: telling that failure apart from a journal failure, and reopening the database in
//! place from its journal once nothing reads it and the disk has room.
//!
//! Owns: the classification of a commit's fjall error, the halted state, and the reopen.
//! Does not own: releasing what holds snapshots (the engine closes its cursors first), nor
//! when to try (the engine's writer, before the next group).
//!
//! # Why a reopen is safe
//!
//! fjall's background workers poison the database when a memtable flush or a compaction fails
//! (`Worker crashed` in its log) and exit; from then on every batch is refused with
//! `Poisoned` *before* anything of it is written (fjall checks the flag under the journal
//! lock). The journal itself is intact: every acknowledged batch is in it, and a memtable whose
//! flush failed stays in the journal until a later flush succeeds. So when this backend never
//! saw a journal write or sync fail, `Poisoned` means "a background worker failed", the
//! refused batch was not applied, and closing and reopening the database replays the journal
//! into memtables with every acknowledged write, while fjall drops the failed table file.
//! After a journal failure, what reached the journal is unknown and only a restart may decide
//! (`StorageError::OutcomeUnknown`, the engine's read-only mode).
//!
//! fjall locks its directory for as long as any handle of the old database lives (snapshots
//! and iterators included), so the reopen waits, bounded, for every
//! [`super::fjall_backend::Generation`] but its own reference to go, and blocks new snapshots
//! meanwhile; and it needs room: the failed flush is retried from the replayed journal, so the
//! file system must hold the journal's size plus the commit reserve.

use super::fjall_backend::{open_generation, FjallBackend};
use super::StorageError;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the backend stands after background failures, for `serverStatus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundState {
    /// A background failure stopped the database and it has not been reopened yet.
    pub halted: bool,
    /// Background failures (flushes or compactions that poisoned the database) seen.
    pub failures: u64,
    /// Reopens that recovered from one.
    pub reopens: u64,
}

impl FjallBackend {
    /// The storage error of a failed fjall commit or persist.
    pub(super) fn commit_failure(&self, error: fjall::Error) -> StorageError {
        match error {
            // A failed journal write or sync: fjall is poisoned and the batch's fate unknown.
            fjall::Error::Io(io) => {
                self.journal_failed.store(true, SeqCst);
                StorageError::OutcomeUnknown(io)
            }
            fjall::Error::Poisoned if !self.journal_failed.load(SeqCst) => {
                if !self.halted.swap(true, SeqCst) {
                    self.background_failures.fetch_add(1, Relaxed);
                    tracing::error!(
                        dbpath = %self.path.display(),
                        available = ?self.available_bytes(),
                        "a background memtable flush or compaction of the storage engine failed \
                         (fjall logged why); writes are refused until it is reopened from its \
                         journal, which the next write tries once the disk has room"
                    );
                }
                self.halt_error()
            }
            other => StorageError::from(other),
        }
    }

    /// Whether a background worker has poisoned the database, asking fjall when no commit has
    /// told yet: a commit refused for space never reaches fjall, and a full disk is when
    /// flushes fail. The question is a `persist` with nothing to write (every commit leaves
    /// fjall's journal buffer written out), which fjall refuses first when it is poisoned.
    pub(super) fn background_failed(&self) -> bool {
        if self.halted() || self.journal_failed.load(SeqCst) {
            return self.halted();
        }
        let Ok(generation) = self.generation() else {
            return false;
        };
        match generation.db.persist(fjall::PersistMode::Buffer) {
            Ok(()) => false,
            Err(error) => {
                let _ = self.commit_failure(error);
                self.halted()
            }
        }
    }

    /// Whether a background failure stopped the database (it needs [`FjallBackend::reopen`]).
    pub fn halted(&self) -> bool {
        self.halted.load(SeqCst)
    }

    pub fn background_state(&self) -> BackgroundState {
        BackgroundState {
            halted: self.halted(),
            failures: self.background_failures.load(Relaxed),
            reopens: self.reopens.load(Relaxed),
        }
    }

    /// The error a write gets while the database is halted: out of disk space when the disk
    /// lacks the room a reopen needs, otherwise an internal error naming the state.
    pub(super) fn halt_error(&self) -> StorageError {
        match self.space_for_reopen() {
            Err(error) => error,
            Ok(()) => StorageError::Halted {
                reason: "a background flush or compaction failed; the storage engine is \
                         reopened from its journal at the next write"
                    .into(),
                short_of_space: false,
            },
        }
    }

    /// Room to replay the journal and flush it again: its size plus the commit reserve.
    fn space_for_reopen(&self) -> Result<(), StorageError> {
        let Some(available) = self.available_bytes() else {
            return Ok(());
        };
        let needed = journal_bytes(&self.path).saturating_add(self.config.reserve_bytes);
        if available < needed {
            return Err(StorageError::Halted {
                reason: format!(
                    "a background flush or compaction failed and reopening the storage engine \
                     needs {needed} bytes free in the data directory, {available} available; \
                     free space and write again"
                ),
                short_of_space: true,
            });
        }
        Ok(())
    }

    /// Closes the halted database and opens it again from its journal, once the disk has room
    /// and, within `wait`, every snapshot and iterator of it is gone (new ones wait meanwhile).
    /// A database that is not halted is left alone. On failure the database stays halted (or
    /// closed, if opening it again failed), and the next call tries again.
    pub fn reopen(&self, wait: Duration) -> Result<(), StorageError> {
        if !self.halted() {
            return Ok(());
        }
        self.space_for_reopen()?;
        let mut slot = crate::sync::write(&self.current, super::fjall_backend::GENERATION_LOCK)
            .map_err(|_| StorageError::Poisoned)?;
        let deadline = Instant::now() + wait;
        if let Some(old) = slot.as_ref() {
            // Readers that finish drop their handles; new readers wait on `slot`.
            while Arc::strong_count(old) > 1 {
                if Instant::now() >= deadline {
                    return Err(StorageError::Halted {
                        reason: format!(
                            "a background flush or compaction failed and the storage engine \
                             cannot be reopened while {} readers (open transactions or \
                             running operations) still hold its snapshots; try again",
                            Arc::strong_count(old) - 1
                        ),
                        short_of_space: false,
                    });
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // The last handle: fjall stops its workers and releases its lock here.
        *slot = None;
        let marked = self.path.join(super::integrity::MARKER).is_file();
        let generation = open_generation(&self.path, &self.config, marked).inspect_err(|e| {
            tracing::error!(error = %e, "reopening the storage engine failed");
        })?;
        *slot = Some(Arc::new(generation));
        self.halted.store(false, SeqCst);
        self.reopens.fetch_add(1, Relaxed);
        tracing::warn!(
            dbpath = %self.path.display(),
            "the storage engine was reopened from its journal after a background failure; \
             writes are accepted again"
        );
        Ok(())
    }
}

/// Bytes fjall's journal files take on disk (allocated blocks: fjall preallocates a journal
/// sparsely), the data a reopen replays and flushes again.
fn journal_bytes(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(journals) = super::journal::list(path) else {
        return 0;
    };
    journals
        .iter()
        .filter_map(|journal| std::fs::metadata(&journal.path).ok())
        .map(|m| m.blocks().saturating_mul(512))
        .sum()
}
