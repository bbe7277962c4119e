//! Stopping an operation that runs too long or is no longer wanted: `maxTimeMS` (50
//! MaxTimeMSExpired), `killOp` and a client that went away (11601 Interrupted).
//!
//! Owns: the flag and deadline one operation is checked against. Long loops of the engine (scans,
//! sorts, index builds) call [`Interrupt::check`] every so often; async waits (the writer's
//! acknowledgement) race [`Interrupt::interrupted`]; whoever wants the operation to stop calls
//! [`Interrupt::kill`]. Does not own the list of running operations (`command`).

use crate::clock::Deadline;
use crate::error::{Error, ErrorCode, Result};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// Why an operation was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// `killOp`.
    Killed,
    /// The client closed its connection.
    Disconnected,
    /// The request ran past the time a profile gives every request (Cosmos's 60 seconds).
    RequestTimeLimit,
}

/// The interruption state of one operation (a command, or a cursor across its `getMore`s).
/// It is the one handle every layer of an operation holds, so it also carries what the
/// executor ran for it (`plans`), for the slow-operation log.
#[derive(Debug, Default)]
pub struct Interrupt {
    /// The plans the executor started for this operation and their counters.
    pub plans: crate::engine::exec::plan_log::PlanLog,
    killed: AtomicBool,
    reason: AtomicU8,
    deadline: Mutex<Option<Deadline>>,
    /// Wakes async waiters when the operation is killed or its deadline changes.
    changed: Notify,
    /// Interrupts killed along with this one: a `getMore` links the cursor's, so `killOp` of
    /// the `getMore` reaches the iterators the cursor keeps.
    linked: Mutex<Vec<Weak<Interrupt>>>,
}

impl Interrupt {
    /// An operation nothing limits yet.
    pub fn none() -> Arc<Interrupt> {
        Arc::new(Interrupt::default())
    }

    /// An operation that must finish before `deadline`, if any.
    pub fn with_deadline(deadline: Option<Deadline>) -> Arc<Interrupt> {
        let interrupt = Interrupt::default();
        *interrupt.deadline_slot() = deadline;
        Arc::new(interrupt)
    }

    /// Replaces the deadline (each `getMore` brings its own `maxTimeMS`).
    pub fn set_deadline(&self, deadline: Option<Deadline>) {
        *self.deadline_slot() = deadline;
        self.changed.notify_waiters();
    }

    pub fn deadline(&self) -> Option<Deadline> {
        *self.deadline_slot()
    }

    /// The deadline: one `Option` assigned whole, so a poisoned lock is recovered (and
    /// counted); treating it as "no deadline" would let an operation run past its `maxTimeMS`.
    fn deadline_slot(&self) -> MutexGuard<'_, Option<Deadline>> {
        crate::sync::lock_recovering(&self.deadline, "operation deadline")
    }

    /// The linked interrupts: changed by whole-entry `retain`, `push` and `take` only, so a
    /// poisoned lock is recovered (and counted); dropping them would let `killOp` miss a
    /// cursor's iterators.
    fn linked(&self) -> MutexGuard<'_, Vec<Weak<Interrupt>>> {
        crate::sync::lock_recovering(&self.linked, "linked interrupts")
    }

    /// Time left before the deadline; `None` when there is none.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline().map(|d| d.remaining())
    }

    /// Asks the operation (and every interrupt linked to it) to stop at its next check.
    pub fn kill(&self, reason: KillReason) {
        self.reason.store(reason as u8, Ordering::Relaxed);
        self.killed.store(true, Ordering::Release);
        self.changed.notify_waiters();
        let linked = std::mem::take(&mut *self.linked());
        for other in linked.iter().filter_map(Weak::upgrade) {
            other.kill(reason);
        }
    }

    /// Kills `other` too whenever this operation is killed (at once if it already was).
    pub fn link(&self, other: &Arc<Interrupt>) {
        {
            let mut linked = self.linked();
            linked.retain(|w| w.strong_count() > 0);
            linked.push(Arc::downgrade(other));
        }
        if let Some(reason) = self.kill_reason() {
            other.kill(reason);
        }
    }

    /// Completes with the error [`Interrupt::check`] gives, once the operation is killed or its
    /// deadline passes; never completes otherwise.
    pub async fn interrupted(&self) -> Error {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before checking, so a kill between the check and the wait is seen.
            changed.as_mut().enable();
            if let Err(e) = self.check() {
                return e;
            }
            match self.remaining() {
                Some(left) => {
                    tokio::select! {
                        () = &mut changed => {}
                        () = tokio::time::sleep(left) => {}
                    }
                }
                None => changed.await,
            }
        }
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
            r if r == KillReason::RequestTimeLimit as u8 => KillReason::RequestTimeLimit,
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
        let passed = self.deadline().is_some_and(|d| d.has_passed());
        if passed {
            return Err(Error::new(
                ErrorCode::MaxTimeMSExpired,
                "operation exceeded time limit",
            ));
        }
        Ok(())
    }
}

/// Pure code's loops ([`crate::query::guard::tick`]) reach the operation through this.
impl crate::query::guard::Checkpoint for Interrupt {
    fn check(&self) -> Result<()> {
        Interrupt::check(self)
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

    #[test]
    fn a_kill_reaches_linked_interrupts() {
        let op = Interrupt::none();
        let cursor = Interrupt::none();
        op.link(&cursor);
        op.kill(KillReason::Disconnected);
        assert_eq!(cursor.kill_reason(), Some(KillReason::Disconnected));

        let late = Interrupt::none();
        op.link(&late);
        assert!(
            late.is_killed(),
            "linking to a killed operation kills at once"
        );
    }

    #[tokio::test]
    async fn interrupted_completes_on_kill_and_on_deadline() {
        let timed = Interrupt::with_deadline(Some(Deadline::after_millis(20)));
        assert_eq!(timed.interrupted().await.code, ErrorCode::MaxTimeMSExpired);

        let op = Interrupt::none();
        let killer = Arc::clone(&op);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            killer.kill(KillReason::Killed);
        });
        assert_eq!(op.interrupted().await.code, ErrorCode::Interrupted);
    }
}
