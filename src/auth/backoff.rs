//! The back-off of a source address after failed authentications: past `allowed` failures
//! from one address, each further failure is answered only after `delay`, which caps a
//! password guesser on one connection at one guess per `delay` while nobody else waits.
//!
//! Pure: the caller passes the time (monotonic, from any fixed origin), counts and logs, and
//! does the waiting. A source is forgotten once it has failed nothing for [`FORGET_AFTER`];
//! successes reset nothing (a guesser who knows one account must not clear its own count).
//! Memory is bounded: at most [`MAX_SOURCES`] addresses are tracked, the longest quiet dropped
//! first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

/// A source with no failure for this long starts again from zero.
pub const FORGET_AFTER: Duration = Duration::from_secs(60);
/// Addresses tracked at most.
pub const MAX_SOURCES: usize = 10_000;

/// How many failures a source is allowed before its failures are delayed, and the delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub allowed: u32,
    /// Zero: failures are counted, never delayed.
    pub delay: Duration,
}

/// What one more failure from a source means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The source's failures, this one included, since it was last forgotten.
    pub failures: u32,
    /// How long the failure's reply waits.
    pub delay: Option<Duration>,
    /// Whether this failure is the source's first delayed one (worth one log line).
    pub entered: bool,
}

#[derive(Debug, Clone, Copy)]
struct Source {
    failures: u32,
    last_failure: Duration,
}

/// The failures of every source that failed recently.
#[derive(Debug)]
pub struct FailureTable {
    policy: Policy,
    sources: HashMap<IpAddr, Source>,
}

impl FailureTable {
    pub fn new(policy: Policy) -> FailureTable {
        FailureTable {
            policy,
            sources: HashMap::new(),
        }
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Records a failed authentication from `source` at `now`.
    pub fn record_failure(&mut self, source: IpAddr, now: Duration) -> Verdict {
        if !self.sources.contains_key(&source) && self.sources.len() >= MAX_SOURCES {
            self.make_room(now);
        }
        let entry = self.sources.entry(source).or_insert(Source {
            failures: 0,
            last_failure: now,
        });
        if now.saturating_sub(entry.last_failure) >= FORGET_AFTER {
            entry.failures = 0;
        }
        entry.failures = entry.failures.saturating_add(1);
        entry.last_failure = now;
        let failures = entry.failures;
        let delayed = failures > self.policy.allowed && !self.policy.delay.is_zero();
        Verdict {
            failures,
            delay: delayed.then_some(self.policy.delay),
            entered: delayed && failures == self.policy.allowed.saturating_add(1),
        }
    }

    /// Sources whose next failure would be delayed.
    pub fn sources_in_backoff(&self, now: Duration) -> usize {
        if self.policy.delay.is_zero() {
            return 0;
        }
        self.sources
            .values()
            .filter(|s| s.failures >= self.policy.allowed && !is_forgotten(s, now))
            .count()
    }

    /// Drops the forgotten sources; if none was, the one quiet for longest.
    fn make_room(&mut self, now: Duration) {
        self.sources.retain(|_, s| !is_forgotten(s, now));
        if self.sources.len() < MAX_SOURCES {
            return;
        }
        let quietest = self
            .sources
            .iter()
            .min_by_key(|(_, s)| s.last_failure)
            .map(|(ip, _)| *ip);
        if let Some(ip) = quietest {
            self.sources.remove(&ip);
        }
    }
}

fn is_forgotten(source: &Source, now: Duration) -> bool {
    now.saturating_sub(source.last_failure) >= FORGET_AFTER
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELAY: Duration = Duration::from_millis(500);

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn failures_past_the_allowance_are_delayed_and_the_first_one_is_marked() {
        let mut table = FailureTable::new(Policy {
            allowed: 3,
            delay: DELAY,
        });
        let verdicts: Vec<(u32, Option<Duration>, bool)> = (0..6)
            .map(|i| table.record_failure(ip(1), secs(i)))
            .map(|v| (v.failures, v.delay, v.entered))
            .collect();
        assert_eq!(
            verdicts,
            vec![
                (1, None, false),
                (2, None, false),
                (3, None, false),
                (4, Some(DELAY), true),
                (5, Some(DELAY), false),
                (6, Some(DELAY), false),
            ]
        );
        // Another address has its own count.
        assert_eq!(table.record_failure(ip(2), secs(6)).delay, None);
        assert_eq!(table.sources_in_backoff(secs(6)), 1);
    }

    #[test]
    fn a_quiet_source_is_forgotten() {
        let mut table = FailureTable::new(Policy {
            allowed: 1,
            delay: DELAY,
        });
        table.record_failure(ip(1), secs(0));
        assert_eq!(table.record_failure(ip(1), secs(59)).delay, Some(DELAY));
        let after = secs(59) + FORGET_AFTER;
        assert_eq!(table.sources_in_backoff(after), 0);
        let verdict = table.record_failure(ip(1), after);
        assert_eq!((verdict.failures, verdict.delay), (1, None));
    }

    #[test]
    fn without_a_delay_failures_are_only_counted() {
        let mut table = FailureTable::new(Policy {
            allowed: 0,
            delay: Duration::ZERO,
        });
        let verdict = table.record_failure(ip(1), secs(0));
        assert_eq!(
            verdict,
            Verdict {
                failures: 1,
                delay: None,
                entered: false
            }
        );
    }

    #[test]
    fn the_table_is_bounded_and_drops_the_quietest_source() {
        let mut table = FailureTable::new(Policy {
            allowed: 0,
            delay: DELAY,
        });
        for i in 0..MAX_SOURCES {
            let addr = IpAddr::from((i as u128).to_be_bytes());
            table.record_failure(addr, Duration::from_millis(i as u64));
        }
        table.record_failure(ip(1), secs(30));
        assert_eq!(table.sources.len(), MAX_SOURCES);
        assert!(!table
            .sources
            .contains_key(&IpAddr::from(0u128.to_be_bytes())));
        // Past the quiet period, room is made by forgetting, not by evicting one at a time.
        table.record_failure(ip(2), secs(30) + FORGET_AFTER);
        assert_eq!(table.sources.len(), 1);
    }
}
