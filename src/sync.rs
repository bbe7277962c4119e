//! Taking a `std::sync` lock when a thread may have panicked while holding it.
//!
//! A panic on a blocking thread or a task does not stop the server (tokio and `spawn_blocking`
//! catch it), but it poisons every lock the thread held. Each such lock is taken here, under a
//! name, with one of two policies chosen where the lock is declared:
//!
//! - [`lock`], [`read`], [`write`]: the lock guards state updated in several steps (the
//!   published catalog as readers take it, the session and transaction tables, the memory
//!   store's data), so what the panicking thread left may be half done. The caller gets [`Poisoned`], which
//!   becomes the command's error reply (`InternalError`); never an empty or default answer.
//! - [`lock_recovering`], [`read_recovering`], [`write_recovering`]: the lock guards a value a
//!   panic cannot leave half written (one assignment), or a cache or counter whose loss cannot
//!   change an answer; the value is taken as it is.
//!
//! Either way every occurrence is counted ([`poisoned_total`], [`poisoned_by_lock`]:
//! `serverStatus.locks.poisoned`) and logged at error level, naming the lock, on the 1st, 2nd,
//! 4th, 8th… occurrence per lock so that a poisoned lock on a hot path cannot flood the log. A
//! std lock stays poisoned: the remedy is a restart. The counts are the process's (one server
//! per process).
//!
//! Imports nothing from the crate, so every layer can use it; the conversion into the crate's
//! `Error` lives in `error`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{
    Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use std::time::Duration;

/// A lock found poisoned: a thread panicked while holding it, and what it guards may be half
/// updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poisoned {
    lock: &'static str,
}

impl Poisoned {
    /// The name of the poisoned lock.
    pub fn lock(&self) -> &'static str {
        self.lock
    }
}

impl std::fmt::Display for Poisoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} lock is poisoned: a thread panicked while holding it; restart the server",
            self.lock
        )
    }
}

impl std::error::Error for Poisoned {}

/// Takes `mutex`; fails with [`Poisoned`] (counted and logged) when it is poisoned.
pub fn lock<'a, T: ?Sized>(
    mutex: &'a Mutex<T>,
    name: &'static str,
) -> Result<MutexGuard<'a, T>, Poisoned> {
    mutex.lock().map_err(|_| poisoned(name))
}

/// Takes `lock` for reading; fails with [`Poisoned`] (counted and logged) when it is poisoned.
pub fn read<'a, T: ?Sized>(
    lock: &'a RwLock<T>,
    name: &'static str,
) -> Result<RwLockReadGuard<'a, T>, Poisoned> {
    lock.read().map_err(|_| poisoned(name))
}

/// Takes `lock` for writing; fails with [`Poisoned`] (counted and logged) when it is poisoned.
pub fn write<'a, T: ?Sized>(
    lock: &'a RwLock<T>,
    name: &'static str,
) -> Result<RwLockWriteGuard<'a, T>, Poisoned> {
    lock.write().map_err(|_| poisoned(name))
}

/// Takes `mutex`, poisoned or not: for a value a panic cannot leave half written, or a cache
/// whose loss cannot change an answer. A poisoned lock is still counted and logged.
pub fn lock_recovering<'a, T: ?Sized>(
    mutex: &'a Mutex<T>,
    name: &'static str,
) -> MutexGuard<'a, T> {
    mutex.lock().unwrap_or_else(|e| recovered(e, name))
}

/// [`lock_recovering`] for reading an `RwLock`.
pub fn read_recovering<'a, T: ?Sized>(
    lock: &'a RwLock<T>,
    name: &'static str,
) -> RwLockReadGuard<'a, T> {
    lock.read().unwrap_or_else(|e| recovered(e, name))
}

/// [`lock_recovering`] for writing an `RwLock`.
pub fn write_recovering<'a, T: ?Sized>(
    lock: &'a RwLock<T>,
    name: &'static str,
) -> RwLockWriteGuard<'a, T> {
    lock.write().unwrap_or_else(|e| recovered(e, name))
}

/// Waits on `condvar` for at most `timeout` with `guard` (taken with [`lock_recovering`]),
/// recovering the guard when the lock was poisoned meanwhile (counted and logged).
pub fn wait_timeout_recovering<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
    name: &'static str,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, timeout) {
        Ok((guard, _)) => guard,
        Err(poison) => recovered(poison, name).0,
    }
}

/// Poisoned lock occurrences since the process started, over every lock.
pub fn poisoned_total() -> u64 {
    TOTAL.load(Ordering::Relaxed)
}

/// Poisoned lock occurrences by lock name, in name order.
pub fn poisoned_by_lock() -> Vec<(&'static str, u64)> {
    by_lock().iter().map(|(name, n)| (*name, *n)).collect()
}

static TOTAL: AtomicU64 = AtomicU64::new(0);

/// The per-lock counts. Nothing that can panic runs while this is held (a map lookup and an
/// addition), so its own poison cannot mean a half-made update and is ignored.
fn by_lock() -> MutexGuard<'static, BTreeMap<&'static str, u64>> {
    static COUNTS: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());
    COUNTS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn recovered<G>(poison: PoisonError<G>, name: &'static str) -> G {
    report(name, "recovered");
    poison.into_inner()
}

fn poisoned(name: &'static str) -> Poisoned {
    report(name, "refused");
    Poisoned { lock: name }
}

/// Counts one occurrence on `name` without logging it: for the locks of the log itself, where
/// logging would re-enter the poisoned lock.
pub fn count_unlogged(name: &'static str) {
    count(name);
}

/// Counts one occurrence on `name`; returns the lock's count.
fn count(name: &'static str) -> u64 {
    TOTAL.fetch_add(1, Ordering::Relaxed);
    let mut counts = by_lock();
    let count = counts.entry(name).or_insert(0);
    *count = count.saturating_add(1);
    *count
}

/// Counts one occurrence on `name` and logs it when [`worth_logging`] says so.
fn report(name: &'static str, outcome: &'static str) {
    let occurrences = count(name);
    if worth_logging(occurrences) {
        tracing::error!(
            lock = name,
            occurrences,
            outcome,
            "Lock poisoned: a thread panicked while holding it; restart the server"
        );
    }
}

/// The 1st, 2nd, 4th, 8th… occurrence on one lock is logged: a lock poisoned on a hot path
/// writes a few dozen lines in its whole life, and the count in each line says how many were
/// not written.
fn worth_logging(occurrences: u64) -> bool {
    occurrences.is_power_of_two()
}

#[cfg(test)]
mod tests;
