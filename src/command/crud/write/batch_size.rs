//! How many targets the next batch of a multi-document statement takes: bounded by count and
//! bytes, and sized from how long the batches before it held the writer, as mongod's plan
//! executor yields after `internalQueryExecYieldIterations` (1,000) documents or
//! `internalQueryExecYieldPeriodMS` (10 ms), whichever comes first.
//!
//! Owns: the limits and the sizing rule. Pure: the caller measures each batch's time from the
//! moment the writer takes its job until its group has committed, and reports it
//! ([`BatchSizer::observe`]). Does not own the batch loop (`multi`).
//!
//! Why a size learned from the last batch, not a clock checked inside the job: a batch's targets
//! are read and prepared before its job is queued, and the next batch is read while this one is
//! written, so the job's size is fixed before it runs. The time that matters is what another
//! client's write queued behind a batch waits for: the batch's job and then its commit, whose
//! memtable inserts grow with the same documents (in a debug build under load they take as long
//! as the job), not the reading. So both are measured, as one span.

use crate::engine::targets::BatchLimits;
use std::time::Duration;

/// mongod's `internalQueryExecYieldIterations`: the most documents one batch takes.
pub(super) const MAX_DOCS: usize = 1_000;
/// The fewest documents a batch asks for, so a slow machine still amortises each job's commit
/// (and sync) over several documents.
pub(super) const MIN_DOCS: usize = 16;
/// The first batch's size, before any batch was measured: small enough to stay under
/// [`PERIOD`] in a debug build (tens of microseconds a document there), large enough that a
/// statement over a few dozen documents is one job.
pub(super) const FIRST_DOCS: usize = 128;
/// mongod's `internalQueryExecYieldPeriodMS`: the time one batch aims to hold the writer and
/// its commit for.
pub(super) const PERIOD: Duration = Duration::from_millis(10);
/// Stored bytes of the targets' bodies one batch holds at most. The server holds a batch twice
/// (the snapshot's copies and what they become) for the batch being written and the one read
/// ahead, so a batch of large documents (up to 16 MiB each) stays within megabytes.
pub(super) const MAX_BYTES: usize = 4 * 1024 * 1024;
/// How much one batch's size may grow over the one before: one quick batch (targets gone
/// since the snapshot, a warm cache) does not jump the next to the maximum.
const MAX_GROWTH: usize = 2;

/// The size of a statement's next batch.
#[derive(Debug, Clone, Copy)]
pub(super) struct BatchSizer {
    docs: usize,
}

impl Default for BatchSizer {
    fn default() -> Self {
        BatchSizer { docs: FIRST_DOCS }
    }
}

impl BatchSizer {
    /// The bounds of the next batch.
    pub(super) fn limits(&self) -> BatchLimits {
        BatchLimits {
            docs: self.docs,
            bytes: MAX_BYTES,
        }
    }

    /// A batch of `docs` targets held the writer and its commit for `took`: the next batch takes as many as
    /// that rate fits in [`PERIOD`], at most [`MAX_GROWTH`] times the current size, within
    /// [`MIN_DOCS`]..=[`MAX_DOCS`]. An empty batch says nothing about the rate.
    pub(super) fn observe(&mut self, docs: usize, took: Duration) {
        if docs == 0 {
            return;
        }
        let grown = self.docs.saturating_mul(MAX_GROWTH);
        let fits = match took.as_nanos() {
            0 => grown,
            nanos => {
                let fit = (docs as u128).saturating_mul(PERIOD.as_nanos()) / nanos;
                usize::try_from(fit).unwrap_or(usize::MAX)
            }
        };
        self.docs = fits.min(grown).clamp(MIN_DOCS, MAX_DOCS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: f64) -> Duration {
        Duration::from_secs_f64(n / 1000.0)
    }

    #[test]
    fn the_first_batch_is_small_and_bounded_in_bytes() {
        let limits = BatchSizer::default().limits();
        assert_eq!((limits.docs, limits.bytes), (FIRST_DOCS, MAX_BYTES));
    }

    #[test]
    fn each_batch_is_sized_to_the_period_from_the_last_ones_rate() {
        // (size before, documents in the measured batch, its writer time, size after)
        let cases: &[(usize, usize, Duration, usize)] = &[
            // On target: unchanged.
            (500, 500, ms(10.0), 500),
            // Twice too slow: halved; ten times: a tenth.
            (1000, 1000, ms(20.0), 500),
            (1000, 1000, ms(100.0), 100),
            // Fast: grows, but at most twice the size before.
            (128, 128, ms(8.0), 160),
            (128, 128, ms(1.0), 256),
            (256, 256, ms(0.0), 512),
            // Never past mongod's 1,000 documents.
            (800, 800, ms(1.0), 1000),
            (1000, 1000, ms(0.5), 1000),
            // Never under the minimum, however slow.
            (16, 16, ms(500.0), MIN_DOCS),
            (1000, 1000, ms(2000.0), MIN_DOCS),
            // A batch cut short by its bytes or the plan's end: its own rate counts.
            (1000, 10, ms(1.0), 100),
            (1000, 10, ms(0.01), 1000),
            // An empty batch changes nothing.
            (300, 0, ms(50.0), 300),
        ];
        for &(before, docs, took, after) in cases {
            let mut sizer = BatchSizer { docs: before };
            sizer.observe(docs, took);
            assert_eq!(
                sizer.limits().docs,
                after,
                "{before} then {docs} documents in {took:?}"
            );
        }
    }

    #[test]
    fn from_the_first_batch_a_fast_writer_reaches_the_maximum_in_a_few_batches() {
        let mut sizer = BatchSizer::default();
        let mut sizes = Vec::new();
        for _ in 0..6 {
            let docs = sizer.limits().docs;
            // One microsecond a document: 10,000 would fit the period.
            sizer.observe(docs, Duration::from_micros(docs as u64));
            sizes.push(sizer.limits().docs);
        }
        assert_eq!(sizes, vec![256, 512, 1000, 1000, 1000, 1000]);
    }
}
