//! How background work (the TTL reaper, the sweeper of dropped collections) shares the writer
//! with clients: it runs in small jobs, and while clients write it leaves the writer to them
//! after each job for as long as the job took, so it holds at most half of the writer.
//!
//! Clients are seen by the writer's job counter: a job other than the background one ran
//! between its submission and its completion, or jobs are queued. The queue alone is not
//! enough: with one request in flight per client, it is usually empty at the instant a
//! background job completes, the writer having drained it into the group.
//!
//! Owns: the decision to pause, its length, and the sleep; a background thread's stop and
//! wake-up ([`Stopper`]). Does not own: the jobs.

use crate::clock::Stopwatch;
use crate::engine::writer::{Writer, WriterStats};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Bounds of the pause after a background job while clients write.
const MIN_PAUSE: Duration = Duration::from_micros(100);
const MAX_PAUSE: Duration = Duration::from_millis(2);

/// One background job's start: the writer's job count then, and a timer.
pub(in crate::engine) struct Pace {
    jobs_before: u64,
    timer: Stopwatch,
}

impl Pace {
    /// Taken just before the background job is submitted.
    pub(in crate::engine) fn start(stats: &WriterStats) -> Pace {
        Pace {
            jobs_before: stats.jobs.load(Ordering::Relaxed),
            timer: Stopwatch::start(),
        }
    }

    /// Once the job has completed: how long to leave the writer to clients, or `None` when
    /// no client wrote meanwhile and none is waiting.
    pub(in crate::engine) fn pause(
        &self,
        stats: &WriterStats,
        writer: &Writer,
    ) -> Option<Duration> {
        let jobs = stats
            .jobs
            .load(Ordering::Relaxed)
            .saturating_sub(self.jobs_before);
        (jobs > 1 || writer.has_queued_jobs()).then(|| pause_for(self.timer.elapsed()))
    }
}

/// The name the stop flag's lock is logged and counted under. The flag is one `bool`: a panic
/// cannot leave it half written, and a poisoned lock must neither stop a background thread
/// quietly nor keep it from stopping, so it is recovered (and counted).
const STOP_FLAG: &str = "background stop flag";

/// A background thread's stop flag and wake-up, shared by the reaper and the sweeper.
#[derive(Default)]
pub(in crate::engine) struct Stopper {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stopper {
    /// Waits `interval`, or less when woken; false once stopped (the thread should return).
    pub(in crate::engine) fn wait(&self, interval: Duration) -> bool {
        let stopped = crate::sync::lock_recovering(&self.stopped, STOP_FLAG);
        if *stopped {
            return false;
        }
        !*crate::sync::wait_timeout_recovering(&self.wake, stopped, interval, STOP_FLAG)
    }

    pub(in crate::engine) fn stop(&self) {
        *crate::sync::lock_recovering(&self.stopped, STOP_FLAG) = true;
        self.wake.notify_all();
    }

    /// Ends the current wait early (after a resume).
    pub(in crate::engine) fn wake(&self) {
        self.wake.notify_all();
    }
}

/// Sleeps for `pause`: a tokio sleep inside a runtime (a pass run on demand), a thread sleep on
/// a background thread, which has none.
pub(in crate::engine) async fn sleep(pause: Duration) {
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep(pause).await;
    } else {
        std::thread::sleep(pause);
    }
}

/// The pause after a background job that took `job_took`: as long again, within bounds.
fn pause_for(job_took: Duration) -> Duration {
    job_took.clamp(MIN_PAUSE, MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stopped thread's wait returns at once, and false; a wait that is not stopped runs its
    /// interval out and says go on.
    #[test]
    fn a_stopper_ends_waits_at_once_once_stopped() {
        let stopper = Stopper::default();
        assert!(stopper.wait(Duration::from_millis(1)));
        stopper.stop();
        let started = std::time::Instant::now();
        assert!(!stopper.wait(Duration::from_secs(60)));
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    /// While clients write, background work leaves the writer to them as long as its job
    /// took, within bounds: never less than a scheduler's tick, never long enough to stall it.
    #[test]
    fn the_pause_after_a_job_matches_the_job_within_bounds() {
        let cases = [
            (0, 100),
            (50, 100),
            (350, 350),
            (2_000, 2_000),
            (40_000, 2_000),
        ];
        for (took_us, pause_us) in cases {
            assert_eq!(
                pause_for(Duration::from_micros(took_us)),
                Duration::from_micros(pause_us),
                "a job of {took_us} µs"
            );
        }
    }
}
