//! Failed authentications: the one line logged for each (mongod's id 20249, "Authentication
//! failed", with its attributes), the counts `serverStatus` reports under
//! `security.authentication`, and the back-off of a client address that keeps failing
//! (`auth::backoff`), applied by delaying that failure's reply on its own connection: the
//! connection's task sleeps on a timer, so no other client and no thread waits. A failed step
//! answers with a [`Refusal`], which `sasl` and `authenticate` (`auth`) share.
//!
//! Does not own: the conversations (`sasl`, which decides which failures count), success
//! (`auth`).

use crate::auth::backoff::{FailureTable, Policy};
use crate::clock::Stopwatch;
use crate::engine::Interrupt;
use crate::error::{Error, ErrorCode};
use bson::{doc, Document};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// mongod's log id of its "Authentication failed" line.
pub const AUTHENTICATION_FAILED_LOG_ID: u32 = 20249;
/// mongod's log id of its "Authentication succeeded" line.
pub const AUTHENTICATION_SUCCEEDED_LOG_ID: u32 = 20250;

/// Who tried to authenticate as whom, and how.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    pub mechanism: &'a str,
    /// The user name the client gave (empty when its message had none).
    pub user: &'a str,
    pub db: &'a str,
    pub remote: SocketAddr,
    /// The first step ran inside `hello`.
    pub speculative: bool,
}

/// The server's record of failed authentications.
#[derive(Debug)]
pub struct AuthFailures {
    table: Mutex<FailureTable>,
    /// The origin of the monotonic time the table is given.
    origin: Stopwatch,
    failed: AtomicU64,
    delayed: AtomicU64,
}

impl AuthFailures {
    pub fn new(allowed: u32, delay: Duration) -> AuthFailures {
        AuthFailures {
            table: Mutex::new(FailureTable::new(Policy { allowed, delay })),
            origin: Stopwatch::start(),
            failed: AtomicU64::new(0),
            delayed: AtomicU64::new(0),
        }
    }

    /// Logs a failed authentication and counts it against its address; returns how long its
    /// reply must wait. `reason` is what went wrong, for the log only: the client learns
    /// "Authentication failed." and nothing more.
    pub fn record(&self, attempt: &Attempt<'_>, reason: &Error) -> Option<Duration> {
        self.log(attempt, reason);
        self.failed.fetch_add(1, Ordering::Relaxed);
        let now = self.origin.elapsed();
        let verdict = self.table().record_failure(attempt.remote.ip(), now);
        if verdict.entered {
            tracing::warn!(
                remote = %attempt.remote.ip(),
                failures = verdict.failures,
                delayMillis = verdict.delay.map_or(0, |d| d.as_millis() as u64),
                "Delaying further failed authentications from this client address"
            );
        }
        if verdict.delay.is_some() {
            self.delayed.fetch_add(1, Ordering::Relaxed);
        }
        verdict.delay
    }

    /// The failures by address: a throttle's memory, whose loss changes a delay, never whether
    /// a client authenticates; a poisoned lock is recovered (and counted).
    fn table(&self) -> std::sync::MutexGuard<'_, FailureTable> {
        crate::sync::lock_recovering(&self.table, "authentication failures")
    }

    /// Only logs a failed authentication: for a failure the client does not see as one.
    pub fn log(&self, attempt: &Attempt<'_>, reason: &Error) {
        tracing::warn!(
            log_id = AUTHENTICATION_FAILED_LOG_ID,
            mechanism = attempt.mechanism,
            speculative = attempt.speculative,
            principalName = attempt.user,
            authenticationDatabase = attempt.db,
            remote = %attempt.remote,
            extraInfo = "{}",
            error = %format!("{}: {}", reason.code.name(), reason.message),
            "Authentication failed"
        );
    }

    /// `serverStatus`'s `security.authentication`: failures counted, how many were delayed,
    /// the addresses whose next failure would be, and the policy.
    pub fn server_status(&self) -> Document {
        let table = self.table();
        let policy = table.policy();
        let count = |n: &AtomicU64| i64::try_from(n.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        doc! {
            "failed": count(&self.failed),
            "failedDelayed": count(&self.delayed),
            "addressesDelayed": i64::try_from(table.sources_in_backoff(self.origin.elapsed())).unwrap_or(i64::MAX),
            "failuresBeforeDelay": i64::from(policy.allowed),
            "delayMillis": i64::try_from(policy.delay.as_millis()).unwrap_or(i64::MAX),
        }
    }
}

/// Waits out a failure's delay on this connection's task, or until the operation is
/// interrupted (`killOp`, the client gone): then its error, else none.
pub async fn wait(delay: Option<Duration>, interrupt: &Interrupt) -> Option<Error> {
    let delay = delay?;
    tokio::select! {
        () = tokio::time::sleep(delay) => None,
        err = interrupt.interrupted() => Some(err),
    }
}

/// A step of an authentication that did not answer: an error in the command itself (the
/// client sees it), or a failed authentication (the client sees 18 once the delay, if any, has
/// passed). Shared by the SASL conversation and `authenticate`.
pub enum Refusal {
    Command(Error),
    Failed(Option<Duration>),
}

impl From<Error> for Refusal {
    fn from(err: Error) -> Refusal {
        Refusal::Command(err)
    }
}

impl Refusal {
    /// The error the client gets, after the failure's delay (cut short by an interruption,
    /// whose error it then is).
    pub async fn into_error(self, interrupt: &Interrupt) -> Error {
        match self {
            Refusal::Command(err) => err,
            Refusal::Failed(delay) => wait(delay, interrupt)
                .await
                .unwrap_or_else(authentication_failed),
        }
    }
}

/// mongod's one answer to every failed authentication.
pub fn authentication_failed() -> Error {
    Error::new(ErrorCode::AuthenticationFailed, "Authentication failed.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(speculative: bool) -> Attempt<'static> {
        Attempt {
            mechanism: "SCRAM-SHA-256",
            user: "u",
            db: "admin",
            remote: SocketAddr::from(([127, 0, 0, 1], 50_000)),
            speculative,
        }
    }

    #[test]
    fn failures_are_counted_and_delayed_past_the_allowance_and_logged_ones_only_logged() {
        let failures = AuthFailures::new(1, Duration::from_millis(5));
        let reason = Error::new(ErrorCode::AuthenticationFailed, "storedKey mismatch");
        failures.log(&attempt(true), &reason);
        assert_eq!(failures.record(&attempt(false), &reason), None);
        failures.log(&attempt(true), &reason);
        assert_eq!(
            failures.record(&attempt(false), &reason),
            Some(Duration::from_millis(5))
        );
        let interrupt = Interrupt::default();
        interrupt.kill(crate::engine::KillReason::Killed);
        let stopped = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(wait(Some(Duration::from_secs(3600)), &interrupt));
        assert_eq!(
            stopped.map(|e| e.code),
            Some(ErrorCode::Interrupted),
            "an interrupted operation stops waiting"
        );
        assert_eq!(
            failures.server_status(),
            doc! {"failed": 2_i64, "failedDelayed": 1_i64, "addressesDelayed": 1_i64,
            "failuresBeforeDelay": 1_i64, "delayMillis": 5_i64}
        );
    }
}
