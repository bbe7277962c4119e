//! Operation times: the `Timestamp(seconds, increment)` values that order committed changes, as
//! mongod's optimes do. The writer issues them, strictly increasing, while it runs a group (one
//! per operation-log entry, and one for a group that changed anything without logging it), and
//! publishes the group's last one once the group is committed. Replies' `operationTime` and
//! `$clusterTime`, `hello`'s `lastWrite` and a change stream's resume points are read from here.
//!
//! Owns: issuing and publishing operation times. Does not own: the operation log (`oplog`), the
//! wall clock (`crate::clock`).

use bson::Timestamp;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// Issues operation times and remembers the last committed one.
#[derive(Debug)]
pub struct OpClock {
    /// The last time issued (by the writer thread only; committed or not).
    issued: Mutex<Timestamp>,
    /// The last committed time, packed as `seconds << 32 | increment`.
    committed: AtomicU64,
    /// Wall-clock milliseconds of the last committed write.
    committed_wall_millis: AtomicI64,
    /// Tells waiters (a change stream's `getMore`) that a new time was committed.
    changed: tokio::sync::watch::Sender<u64>,
}

impl OpClock {
    /// A clock whose first time follows `after` (the newest time in the operation log, or the
    /// zero time on a new data directory): times never go back across restarts, even when the
    /// wall clock does.
    pub fn new(after: Timestamp) -> OpClock {
        OpClock {
            issued: Mutex::new(after),
            committed: AtomicU64::new(pack(after)),
            committed_wall_millis: AtomicI64::new(0),
            changed: tokio::sync::watch::Sender::new(pack(after)),
        }
    }

    /// The next time: the wall clock's second, or the last time's second with the next
    /// increment when the wall clock has not moved past it.
    pub(in crate::engine) fn issue(&self, now_secs: i64) -> Timestamp {
        // One `Timestamp` assigned whole: a poisoned lock still holds the last time issued.
        let mut last = crate::sync::lock_recovering(&self.issued, "operation time");
        let now = u32::try_from(now_secs.max(0)).unwrap_or(u32::MAX);
        let next = if now > last.time {
            Timestamp {
                time: now,
                increment: 1,
            }
        } else if last.increment == u32::MAX {
            Timestamp {
                time: last.time.saturating_add(1),
                increment: 1,
            }
        } else {
            Timestamp {
                time: last.time,
                increment: last.increment + 1,
            }
        };
        *last = next;
        next
    }

    /// Marks `time` committed (called by the writer after the group's commit succeeded).
    pub(in crate::engine) fn publish(&self, time: Timestamp, wall_millis: i64) {
        self.committed.fetch_max(pack(time), Ordering::AcqRel);
        self.committed_wall_millis
            .fetch_max(wall_millis, Ordering::AcqRel);
        self.changed
            .send_replace(self.committed.load(Ordering::Acquire));
    }

    /// A receiver that is told each time a new time is committed.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The time of the last committed change: `hello`'s `lastWrite.opTime`, replies'
    /// `operationTime`.
    pub fn last_committed(&self) -> Timestamp {
        unpack(self.committed.load(Ordering::Acquire))
    }

    /// When the last committed change was made (wall clock): `hello`'s `lastWriteDate`.
    pub fn last_committed_wall(&self) -> bson::DateTime {
        bson::DateTime::from_millis(self.committed_wall_millis.load(Ordering::Acquire))
    }
}

fn pack(t: Timestamp) -> u64 {
    (u64::from(t.time) << 32) | u64::from(t.increment)
}

fn unpack(v: u64) -> Timestamp {
    Timestamp {
        time: (v >> 32) as u32,
        increment: (v & 0xffff_ffff) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(time: u32, increment: u32) -> Timestamp {
        Timestamp { time, increment }
    }

    #[test]
    fn times_strictly_increase_whatever_the_wall_clock_does() {
        let clock = OpClock::new(ts(100, 5));
        // The wall clock is behind the last time (a restart after it went back).
        assert_eq!(clock.issue(50), ts(100, 6));
        assert_eq!(clock.issue(100), ts(100, 7));
        assert_eq!(clock.issue(101), ts(101, 1));
        assert_eq!(clock.issue(101), ts(101, 2));
        assert_eq!(clock.issue(-3), ts(101, 3));
    }

    #[test]
    fn an_exhausted_increment_moves_to_the_next_second() {
        let clock = OpClock::new(ts(7, u32::MAX));
        assert_eq!(clock.issue(7), ts(8, 1));
    }

    #[test]
    fn only_published_times_are_committed_and_they_never_go_back() {
        let clock = OpClock::new(ts(0, 0));
        let a = clock.issue(10);
        let b = clock.issue(10);
        assert_eq!(clock.last_committed(), ts(0, 0));
        clock.publish(b, 10_000);
        clock.publish(a, 9_000);
        assert_eq!(clock.last_committed(), b);
        assert_eq!(clock.last_committed_wall().timestamp_millis(), 10_000);
    }
}
