//! The server's one clock: the only module that reads wall time.
//!
//! Everything time-dependent (hello's `localTime`, uptime, later `_ts` and TTL expiry) asks a
//! [`Clock`]. The system clock can be moved forward by the `advanceClock` test command; the
//! manual clock exists for unit tests. Elapsed-time measurement goes through [`Stopwatch`].

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;

    /// Moves this clock forward; time never goes backwards.
    fn advance(&self, by: Duration);

    /// Whole seconds since the Unix epoch.
    fn now_secs(&self) -> i64 {
        self.now_millis().div_euclid(1000)
    }

    fn now_datetime(&self) -> bson::DateTime {
        bson::DateTime::from_millis(self.now_millis())
    }
}

/// Wall time plus an offset that only grows.
#[derive(Debug, Default)]
pub struct SystemClock {
    offset_millis: AtomicI64,
}

impl SystemClock {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        wall.saturating_add(self.offset_millis.load(Ordering::Relaxed))
    }

    fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.offset_millis.fetch_add(ms, Ordering::Relaxed);
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    millis: AtomicI64,
}

impl ManualClock {
    pub fn starting_at_secs(secs: i64) -> Self {
        ManualClock {
            millis: AtomicI64::new(secs.saturating_mul(1000)),
        }
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.millis.load(Ordering::Relaxed)
    }

    fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.millis.fetch_add(ms, Ordering::Relaxed);
    }
}

/// Measures elapsed (monotonic) time, for uptime and slow-command logging.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(Instant);

impl Stopwatch {
    pub fn start() -> Self {
        Stopwatch(Instant::now())
    }

    pub fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// A point in monotonic time after which an operation must stop (`maxTimeMS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(Instant);

impl Deadline {
    /// The deadline `millis` milliseconds from now.
    pub fn after_millis(millis: u64) -> Self {
        Deadline::after(Duration::from_millis(millis))
    }

    /// The deadline `span` from now.
    pub fn after(span: Duration) -> Self {
        Deadline(Instant::now() + span)
    }

    /// Time left before the deadline (zero once it passed).
    pub fn remaining(&self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    pub fn has_passed(&self) -> bool {
        Instant::now() >= self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::starting_at_secs(1_000);
        assert_eq!(clock.now_secs(), 1_000);
        clock.advance(Duration::from_secs(9));
        assert_eq!(clock.now_secs(), 1_009);
    }

    #[test]
    fn system_clock_advance_adds_to_wall_time() {
        let clock = SystemClock::new();
        let before = clock.now_secs();
        clock.advance(Duration::from_secs(3_600));
        assert!(clock.now_secs() >= before + 3_600);
    }
}
