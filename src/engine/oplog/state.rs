//! The operation log as stored and measured: entry keys (an entry's operation time,
//! big-endian, so key order is time order), whether the log is kept and how large it is, and
//! reading entries back from a snapshot.
//!
//! Owns: the keys, [`OplogState`], and what one group did to the log ([`GroupLog`]). Does not
//! own: writing entries (`entries`, inside a writer transaction), operation times (`optime`).

use crate::error::Result;
use crate::storage::{Keyspace, Snapshot};
use bson::{Document, Timestamp};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The term every entry carries: a one-member set never holds an election after its first.
pub const TERM: i64 = 1;

/// The name the oldest entry's lock is logged and counted under. It holds one `Option`
/// assigned whole, so a poisoned lock is recovered (and counted).
const OLDEST: &str = "oplog oldest entry";

/// Whether the log is kept, how large it may grow, and how large it is.
#[derive(Debug, Default)]
pub struct OplogState {
    enabled: AtomicBool,
    max_bytes: AtomicU64,
    /// Bytes of the committed entries.
    bytes: AtomicU64,
    /// The oldest committed entry's time; `None` while the log is empty.
    oldest: Mutex<Option<Timestamp>>,
}

impl OplogState {
    /// Starts keeping the log, at most `max_bytes` large, measuring what `snapshot` holds.
    pub(in crate::engine) fn enable<S: Snapshot>(
        &self,
        snapshot: &S,
        max_bytes: u64,
    ) -> Result<()> {
        let mut bytes = 0u64;
        let mut oldest = None;
        for entry in snapshot.range(Keyspace::Oplog, Bound::Unbounded, Bound::Unbounded, false) {
            let (key, value) = entry?;
            if oldest.is_none() {
                oldest = time_of(&key);
            }
            bytes = bytes.saturating_add(value.len() as u64);
        }
        self.bytes.store(bytes, Ordering::Release);
        self.set_oldest(oldest);
        self.max_bytes.store(max_bytes.max(1), Ordering::Release);
        self.enabled.store(true, Ordering::Release);
        Ok(())
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Bytes the committed entries take.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes.load(Ordering::Acquire)
    }

    /// The oldest entry still in the log: a resume point before it is gone.
    pub fn oldest(&self) -> Option<Timestamp> {
        *crate::sync::lock_recovering(&self.oldest, OLDEST)
    }

    fn set_oldest(&self, time: Option<Timestamp>) {
        *crate::sync::lock_recovering(&self.oldest, OLDEST) = time;
    }

    /// Records a committed group's effect on the log.
    pub(in crate::engine) fn committed(&self, change: &GroupLog) {
        if change.added == 0 && change.removed == 0 {
            return;
        }
        let bytes = self
            .bytes()
            .saturating_add(change.added)
            .saturating_sub(change.removed);
        self.bytes.store(bytes, Ordering::Release);
        match change.oldest_after {
            Some(oldest) => self.set_oldest(Some(oldest)),
            None => {
                if self.oldest().is_none() {
                    self.set_oldest(change.first_added);
                }
            }
        }
    }
}

/// What one group did to the log, applied to [`OplogState`] once it is committed.
#[derive(Debug, Default, Clone)]
pub struct GroupLog {
    pub added: u64,
    pub removed: u64,
    pub first_added: Option<Timestamp>,
    /// The oldest entry left after this group truncated the log.
    pub oldest_after: Option<Timestamp>,
}

/// The key of the entry at `time`: big-endian, so key order is time order.
pub fn key(time: Timestamp) -> [u8; 8] {
    ((u64::from(time.time) << 32) | u64::from(time.increment)).to_be_bytes()
}

/// The time an entry's key stands for.
pub fn time_of(key: &[u8]) -> Option<Timestamp> {
    let bytes: [u8; 8] = key.try_into().ok()?;
    let packed = u64::from_be_bytes(bytes);
    Some(Timestamp {
        time: (packed >> 32) as u32,
        increment: (packed & 0xffff_ffff) as u32,
    })
}

/// The newest entry's time in `snapshot`, or the zero time when the log is empty: operation
/// times continue from it after a restart.
pub(in crate::engine) fn newest<S: Snapshot>(snapshot: &S) -> Result<Timestamp> {
    let newest = snapshot
        .range(Keyspace::Oplog, Bound::Unbounded, Bound::Unbounded, true)
        .next()
        .transpose()?;
    Ok(newest
        .and_then(|(key, _)| time_of(&key))
        .unwrap_or(Timestamp {
            time: 0,
            increment: 0,
        }))
}

/// The entries after `after` (all of them for `None`) in `snapshot`, oldest first, each with
/// its time.
pub fn entries_after<S: Snapshot>(
    snapshot: &S,
    after: Option<Timestamp>,
) -> impl Iterator<Item = Result<(Timestamp, Document)>> {
    let start = after.map(|t| key(t).to_vec());
    let iter = match &start {
        Some(start) => snapshot.range(
            Keyspace::Oplog,
            Bound::Excluded(start.as_slice()),
            Bound::Unbounded,
            false,
        ),
        None => snapshot.range(Keyspace::Oplog, Bound::Unbounded, Bound::Unbounded, false),
    };
    iter.map(|entry| {
        let (key, value) = entry?;
        let time = time_of(&key)
            .ok_or_else(|| crate::error::Error::internal("a log entry with a malformed key"))?;
        let doc = Document::from_reader(value.as_slice())
            .map_err(|e| crate::error::Error::internal(format!("a corrupt log entry: {e}")))?;
        Ok((time, doc))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_times_and_read_back() {
        let times = [
            Timestamp {
                time: 1,
                increment: 9,
            },
            Timestamp {
                time: 2,
                increment: 1,
            },
            Timestamp {
                time: 2,
                increment: 2,
            },
            Timestamp {
                time: u32::MAX,
                increment: 1,
            },
        ];
        for pair in times.windows(2) {
            assert!(key(pair[0]) < key(pair[1]));
        }
        for t in times {
            assert_eq!(time_of(&key(t)), Some(t));
        }
        assert_eq!(time_of(b"short"), None);
    }
}
