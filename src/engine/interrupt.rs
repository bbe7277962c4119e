//! Stopping an operation that runs too long or is no longer wanted: `maxTimeMS` (50
//! MaxTimeMSExpired), `killOp` and a client that went away (11601 Interrupted).
//!
//! Owns: the flag and deadline one operation is checked against. Long loops of the engine (scans,
//! sorts, index builds) call [`Interrupt::check`] every so often; whoever wants the operation to
//! stop calls [`Interrupt::kill`]. Does not own the list of running operations (`command`).

use crate::clock::Deadline;
use crate::error::{Error, ErrorCode, Result};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Why an operation was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// `killOp`.
    Killed,
    /// The client closed its connection.
    Disconnected,
}

/// The interruption state of one operation (a command, or a cursor across its `getMore`s).
#[derive(Debug, Default)]
pub struct Interrupt {
    killed: AtomicBool,
    reason: AtomicU8,
    deadline: Mutex<Option<Deadline>>,
}

impl Interrupt {
    /// An operation nothing limits yet.
    pub fn none() -> Arc<Interrupt> {
        Arc::new(Interrupt::default())
    }

    /// An operation that must finish before `deadline`, if any.
    pub fn with_deadline(deadline: Option<Deadline>) -> Arc<Interrupt> {
        let interrupt = Interrupt::default();
        if let Ok(mut slot) = interrupt.deadline.lock() {
            *slot = deadline;
        }
        Arc::new(interrupt)
    }

    /// Replaces the deadline (each `getMore` brings its own `maxTimeMS`).
    pub fn set_deadline(&self, deadline: Option<Deadline>) {
        if let Ok(mut slot) = self.deadline.lock() {
            *slot = deadline;
        }
    }

    /// Asks the operation to stop at its next check.
    pub fn kill(&self, reason: KillReason) {
        self.reason.store(reason as u8, Ordering::Relaxed);
        self.killed.store(true, Ordering::Release);
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Why the operation was killed, once it was.
    pub fn kill_reason(&self) -> Option<KillReason> {
        if !self.is_killed() {
            return None;
        }
        Some(match self.reason.load(Ordering::Relaxed) {
            r if r == KillReason::Disconnected as u8 => KillReason::Disconnected,
            _ => KillReason::Killed,
        })
    }

    /// `Err` once the operation was killed or its deadline passed. Cheap enough to call every
    /// few hundred documents.
    pub fn check(&self) -> Result<()> {
        if self.is_killed() {
            return Err(Error::new(
                ErrorCode::Interrupted,
                "operation was interrupted",
            ));
        }
        let passed = self
            .deadline
            .lock()
            .map(|d| d.is_some_and(|d| d.has_passed()))
            .unwrap_or(false);
        if passed {
            return Err(Error::new(
                ErrorCode::MaxTimeMSExpired,
                "operation exceeded time limit",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_and_deadline_interrupt() {
        let free = Interrupt::none();
        assert!(free.check().is_ok());
        free.kill(KillReason::Killed);
        assert_eq!(free.check().unwrap_err().code, ErrorCode::Interrupted);

        let timed = Interrupt::with_deadline(Some(Deadline::after_millis(0)));
        assert_eq!(timed.check().unwrap_err().code, ErrorCode::MaxTimeMSExpired);
        timed.set_deadline(None);
        assert!(timed.check().is_ok());
    }
}
