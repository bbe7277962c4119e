//! Where a commit group's time goes, reported at DEBUG level (`mayfly::engine::writer::timing`)
//! so that a slow write can be traced to its cause: how long its oldest job waited in the
//! queue, how long the writer ran the jobs, how long the group waited for the group before it
//! to commit, and how long its own commit took (the journal write, the memtable inserts and,
//! for a durable group, the sync; the storage engine reports separately what held a slow commit
//! up).
//!
//! Owns: the measurements and their log event. Does not own: the group's work (the writer) or
//! the storage engine's own report (`storage::fjall_backend`).

use crate::clock::Stopwatch;
use std::time::Duration;

/// Measured while the writer builds a group.
#[derive(Debug)]
pub(super) struct GroupTiming {
    /// Since the writer took the group's first job.
    opened: Stopwatch,
    /// The longest any of its jobs waited in the queue.
    pub queue_wait: Duration,
    /// The writer's time running the jobs.
    pub jobs: Duration,
    /// Time blocked on the earlier group's commit while this one was open.
    pub earlier: Duration,
    /// Its jobs.
    pub count: usize,
}

impl GroupTiming {
    pub(super) fn open() -> GroupTiming {
        GroupTiming {
            opened: Stopwatch::start(),
            queue_wait: Duration::ZERO,
            jobs: Duration::ZERO,
            earlier: Duration::ZERO,
            count: 0,
        }
    }

    /// One job taken after waiting `queued` in the queue, run in `took`.
    pub(super) fn job(&mut self, queued: Duration, took: Duration) {
        self.queue_wait = self.queue_wait.max(queued);
        self.jobs += took;
        self.count += 1;
    }

    /// Reports the committed (or failed) group: `commit` is the storage engine's time on it,
    /// `durable` whether it was synced, `writes` its key-value writes.
    pub(super) fn report(&self, commit: Duration, durable: bool, writes: usize) {
        tracing::debug!(
            jobs = self.count,
            writes,
            durable,
            queue_wait_us = micros(self.queue_wait),
            jobs_us = micros(self.jobs),
            earlier_wait_us = micros(self.earlier),
            open_us = micros(self.opened.elapsed().saturating_sub(commit)),
            commit_us = micros(commit),
            "group committed"
        );
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
