//! Throttling: a budget of request units a second, spent by each request's charge, and the
//! 16500 `RequestRateTooLarge` answer Cosmos gives a request that comes while the budget is
//! spent (`--cosmos-throughput`, `Rule::Throttling`).
//!
//! The budget refills continuously at its rate and holds at most one second of it (a burst).
//! A request is admitted while the budget is not overdrawn; its charge, known when it ends, is
//! then taken, and may overdraw it. Later requests wait (or are refused with `RetryAfterMs`)
//! until the refill covers the overdraft — how Cosmos charges a request in full and throttles
//! the ones after it.

use super::refusal::rule_line;
use super::Rule;
use crate::error::{Error, ErrorCode};
use std::time::Duration;

/// One budget: `rate` request units a second.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    rate: f64,
    /// Request units left; negative when overdrawn.
    level: f64,
    /// When `level` was last brought up to date, in seconds since the throttle's origin.
    at: f64,
}

impl Bucket {
    /// A full budget of `rate` RU/s at time `now` (seconds).
    pub fn new(rate: u32, now: f64) -> Bucket {
        let rate = f64::from(rate.max(1));
        Bucket {
            rate,
            level: rate,
            at: now,
        }
    }

    /// Changes the rate (the provisioned throughput changed), keeping what is left.
    pub fn set_rate(&mut self, rate: u32, now: f64) {
        self.refill(now);
        self.rate = f64::from(rate.max(1));
        self.level = self.level.min(self.rate);
    }

    pub fn rate(&self) -> u32 {
        self.rate as u32
    }

    fn refill(&mut self, now: f64) {
        let elapsed = (now - self.at).max(0.0);
        self.level = (self.level + elapsed * self.rate).min(self.rate);
        self.at = now.max(self.at);
    }

    /// `None` when a request may run now; otherwise how long until it may.
    pub fn wait(&mut self, now: f64) -> Option<Duration> {
        self.refill(now);
        (self.level < 0.0).then(|| Duration::from_secs_f64(-self.level / self.rate))
    }

    /// Takes a finished request's charge.
    pub fn spend(&mut self, request_units: f64, now: f64) {
        self.refill(now);
        self.level -= request_units.max(0.0);
    }
}

/// The 16500 answer, as Cosmos words it: clients read `RetryAfterMs=` out of the message.
/// The wait is rounded up to whole milliseconds, so that a client waiting exactly that long is
/// admitted.
pub fn too_many_requests(retry_after: Duration, rate: u32) -> Error {
    let millis = retry_after.as_micros().div_ceil(1000).max(1);
    let activity = bson::Uuid::new();
    Error::new(
        ErrorCode::RequestRateTooLarge,
        format!(
            "Error=16500, RetryAfterMs={millis}, Details='Response status code does not indicate success: TooManyRequests (429) Substatus: 3200 ActivityId: {activity} Reason: (\r\nErrors : [\r\n  \"Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429\"\r\n]\r\n) '\n{} (budget {rate} RU/s)",
            rule_line(Rule::Throttling)
        ),
    )
}

/// How long server-side retry (`DisableRateLimitingResponses`) keeps a request waiting
/// before it answers 50.
pub const SERVER_SIDE_RETRY_LIMIT: Duration = Duration::from_secs(60);

/// The answer when server-side retry gave up: 50 `ExceededTimeLimit`.
pub fn retries_exhausted() -> Error {
    Error::new(
        ErrorCode::MaxTimeMSExpired,
        format!(
            "Request timed out. Retries due to rate limiting: True.\n{}",
            rule_line(Rule::Throttling)
        ),
    )
    .with_extra(bson::doc! {"codeName": "ExceededTimeLimit"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_admits_until_overdrawn_and_refills_at_its_rate() {
        let mut bucket = Bucket::new(100, 0.0);
        assert_eq!(bucket.wait(0.0), None);
        bucket.spend(60.0, 0.0);
        assert_eq!(bucket.wait(0.0), None);
        bucket.spend(60.0, 0.0);
        // 20 RU overdrawn at 100 RU/s: 200 ms.
        let wait = bucket.wait(0.0).unwrap();
        assert!((wait.as_secs_f64() - 0.2).abs() < 1e-9, "{wait:?}");
        assert!(bucket.wait(0.1).is_some());
        assert_eq!(bucket.wait(0.2), None);
        // It never holds more than a second's worth.
        assert_eq!(bucket.wait(100.0), None);
        bucket.spend(150.0, 100.0);
        assert!(bucket.wait(100.0).is_some());
    }

    #[test]
    fn a_new_rate_applies_from_now() {
        let mut bucket = Bucket::new(1000, 0.0);
        bucket.set_rate(10, 0.0);
        bucket.spend(20.0, 0.0);
        let wait = bucket.wait(0.0).unwrap();
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-9, "{wait:?}");
    }

    #[test]
    fn the_refusal_carries_retry_after_ms() {
        let err = too_many_requests(Duration::from_millis(34), 400);
        assert_eq!(err.code.code(), 16500);
        assert_eq!(err.code.name(), "RequestRateTooLarge");
        assert!(err.message.starts_with("Error=16500, RetryAfterMs=34, Details='Response status code does not indicate success: TooManyRequests (429) Substatus: 3200 ActivityId: "));
        let rounded_up = too_many_requests(Duration::from_micros(1_100), 400);
        assert!(rounded_up
            .message
            .starts_with("Error=16500, RetryAfterMs=2, "));
        assert!(err
            .message
            .contains("Request rate is large. More Request Units may be needed"));
        let exhausted = retries_exhausted().to_reply();
        assert_eq!(exhausted.get_i32("code").unwrap(), 50);
        assert_eq!(exhausted.get_str("codeName").unwrap(), "ExceededTimeLimit");
    }
}
