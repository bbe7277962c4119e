//! The lock table of multi-document transactions: which open transaction holds each document
//! key it has written (first writer wins, [`crate::engine::writer::transaction`]).
//!
//! Owns: taking and releasing keys and issuing transaction ids. Does not own: what a conflict
//! means for a transaction, or the commit.

use crate::error::Result;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The name the lock table's lock is logged and counted under. A take checks and inserts, a
/// release removes key by key: a panic between steps leaves keys held for no one.
const LOCK_TABLE: &str = "transaction lock table";

/// The document keys open transactions have written, by transaction.
#[derive(Default)]
pub struct LockTable {
    held: Mutex<HashMap<Vec<u8>, u64>>,
    next_id: AtomicU64,
}

impl LockTable {
    /// Takes `key` for transaction `owner`; `false` when another transaction holds it. A
    /// poisoned table is an error, not a write conflict: a conflict is retried by the client,
    /// and would be again and again.
    pub(in crate::engine::writer) fn take(&self, key: &[u8], owner: u64) -> Result<bool> {
        let mut held = crate::sync::lock(&self.held, LOCK_TABLE)?;
        Ok(match held.get(key) {
            Some(holder) => *holder == owner,
            None => {
                held.insert(key.to_vec(), owner);
                true
            }
        })
    }

    /// Releases the keys of a transaction that ended. On a poisoned table there is nothing to
    /// release into: the refusal is logged and counted, and every later statement that needs
    /// the table fails.
    pub(in crate::engine::writer) fn release(&self, keys: &HashSet<Vec<u8>>, owner: u64) {
        if let Ok(mut held) = crate::sync::lock(&self.held, LOCK_TABLE) {
            for key in keys {
                if held.get(key) == Some(&owner) {
                    held.remove(key);
                }
            }
        }
    }

    /// How many keys open transactions hold (tests).
    pub fn len(&self) -> Result<usize> {
        Ok(crate::sync::lock(&self.held, LOCK_TABLE)?.len())
    }

    /// A new transaction's id, the owner its keys are held under.
    pub(in crate::engine::writer) fn next_owner(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}
