//! The operation a thread is working for, as pure code sees it: whether that work must stop
//! (`maxTimeMS`, `killOp`, a closed connection), and how large one computed value may grow.
//!
//! Owns: the thread's current [`Checkpoint`], the work counter that consults it every
//! [`CHECK_EVERY`] units, the refusal of an operation that grows the heap while the process is
//! past its memory limit ([`crate::allocation`]; judged at every unit while it is), and the size limits of values computed by expressions (mongod's:
//! strings shorter than 16 MiB, 16493; documents and arrays within 16 MiB + 16 KiB, 10334). Does not own:
//! the interrupt itself (`engine::Interrupt` implements [`Checkpoint`]), nor where an
//! operation's work starts (the command layer and the writer install the checkpoint there).
//!
//! Why the thread's: an expression, a filter's `$expr` or a stage's inner loop runs many calls
//! below the command that owns the operation, in pure code that takes no operation handle. An
//! operation's synchronous work runs on one thread at a time (a blocking-pool thread for reads,
//! the writer's thread for a write's statements), so the command installs its interrupt there
//! for the span of that work ([`install`]), and every loop whose length a client controls
//! counts its iterations with [`tick`]. Work outside any operation (start-up, tests of pure
//! code) has no checkpoint and is never interrupted.

use crate::allocation;
use crate::error::{Error, ErrorCode, Result};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// How many units of work pass between two consultations of the checkpoint: a unit is one
/// iteration of a loop over client-sized input (an array element, a generated document, a
/// regex match), so a check costs well under a microsecond per thousand of them.
pub const CHECK_EVERY: u32 = 1024;

/// The largest value an expression may compute: mongod's `BSONObjMaxInternalSize`, the
/// 16 MiB user limit plus 16 KiB of headroom. A value past it could never be stored or
/// returned, and refusing it as it is built keeps one request from growing one without bound.
pub const MAX_VALUE_BYTES: usize = 16 * 1024 * 1024 + 16 * 1024;

/// Whether the current operation must stop.
pub trait Checkpoint: Send + Sync {
    /// `Err` (50 MaxTimeMSExpired, 11601 Interrupted, ...) once the operation must stop.
    fn check(&self) -> Result<()>;
}

/// While the process holds more than its memory limit ([`allocation::over_limit`]), an
/// operation that has grown the heap by more than this since it started on its thread is
/// stopped at its next check; smaller ones go on, so the operations that hold the memory are
/// the ones refused.
pub const GROWING_BYTES: i64 = 32 << 20;

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn Checkpoint>>> = const { RefCell::new(None) };
    static UNCHECKED: Cell<u32> = const { Cell::new(0) };
    /// The thread's heap count ([`allocation::thread_net`]) when the operation was installed.
    static BASELINE: Cell<i64> = const { Cell::new(0) };
}

/// The checkpoint installed by [`install`]; the one before it comes back when this is
/// dropped.
#[must_use = "the checkpoint is uninstalled when this is dropped"]
pub struct Installed {
    previous: Option<Arc<dyn Checkpoint>>,
    previous_baseline: i64,
    /// Installed on this thread: dropping it elsewhere would restore another thread's state.
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Makes `checkpoint` the current operation's on this thread until the result is dropped.
pub fn install(checkpoint: Arc<dyn Checkpoint>) -> Installed {
    let previous = CURRENT.with(|c| c.replace(Some(checkpoint)));
    let previous_baseline = BASELINE.with(|b| b.replace(allocation::thread_net()));
    UNCHECKED.with(|u| u.set(0));
    Installed {
        previous,
        previous_baseline,
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
        BASELINE.with(|b| b.set(self.previous_baseline));
    }
}

/// Asks the current operation's checkpoint now, and whether the operation must give memory
/// back.
pub fn check() -> Result<()> {
    UNCHECKED.with(|u| u.set(0));
    let installed = CURRENT.with(|c| match &*c.borrow() {
        Some(checkpoint) => checkpoint.check().map(|()| true),
        None => Ok(false),
    })?;
    if installed && allocation::over_limit() {
        check_memory()?;
    }
    Ok(())
}

/// Fails the current operation when its thread has grown the heap past [`GROWING_BYTES`]
/// (called while the process is over its limit).
fn check_memory() -> Result<()> {
    let grown = allocation::thread_net() - BASELINE.with(Cell::get);
    if grown > GROWING_BYTES {
        return Err(out_of_memory(grown));
    }
    Ok(())
}

/// The error of an operation stopped because the server's memory is exhausted.
fn out_of_memory(grown: i64) -> Error {
    Error::new(
        ErrorCode::ExceededMemoryLimit,
        format!(
            "the server holds more than its memory limit of {} bytes, and this operation \
             holds {grown} bytes of it; it was stopped so that the server keeps serving",
            allocation::limit()
        ),
    )
}

/// Counts one unit of work; every [`CHECK_EVERY`] units, asks the checkpoint.
#[inline]
pub fn tick() -> Result<()> {
    tick_n(1)
}

/// Counts `units` of work at once (a loop that copies `n` bytes counts `n / 4096` or so).
#[inline]
pub fn tick_n(units: u32) -> Result<()> {
    let due = UNCHECKED.with(|u| {
        let n = u.get().saturating_add(units);
        u.set(n);
        n >= CHECK_EVERY
    });
    if due {
        return check();
    }
    // Memory is judged at every unit, not every `CHECK_EVERY`: one unit may build a value of
    // megabytes, and with many operations growing at once the heap would pass the limit by
    // far more than the kernel's headroom between two checkpoints. While the process is under
    // its limit this costs three relaxed loads.
    if allocation::over_limit() && CURRENT.with(|c| c.borrow().is_some()) {
        check_memory()?;
    }
    Ok(())
}

/// Units of work for handling `bytes` bytes (at least one).
pub fn units_for_bytes(bytes: usize) -> u32 {
    u32::try_from(bytes / 4096).unwrap_or(u32::MAX).max(1)
}

/// The error for a computed value of `bytes` bytes, past [`MAX_VALUE_BYTES`]. mongod fails
/// such a value when it builds it into a document: 10334 BSONObjectTooLarge.
pub fn value_too_large(bytes: usize) -> Error {
    Error::new(
        ErrorCode::BSONObjectTooLarge,
        format!(
            "BSONObj size: {bytes} (0x{bytes:X}) is invalid. Size must be between 0 and \
             {MAX_VALUE_BYTES}(16MB)"
        ),
    )
}

/// The longest string a computed value may be: mongod's `Value` strings are shorter than
/// 16 MiB.
pub const MAX_STRING_BYTES: usize = 16 * 1024 * 1024 - 1;

/// `Err` (mongod's 16493) when a computed string of `bytes` bytes is too long.
pub fn check_string_bytes(bytes: usize) -> Result<()> {
    if bytes > MAX_STRING_BYTES {
        return Err(Error::new(
            ErrorCode::Location16493,
            "Tried to create string longer than 16MB",
        ));
    }
    Ok(())
}

/// `Err` when a value of `bytes` bytes is past [`MAX_VALUE_BYTES`].
pub fn check_value_bytes(bytes: usize) -> Result<()> {
    if bytes > MAX_VALUE_BYTES {
        return Err(value_too_large(bytes));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize, bool);

    impl Checkpoint for Counting {
        fn check(&self) -> Result<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            if self.1 {
                Err(Error::new(
                    ErrorCode::Interrupted,
                    "operation was interrupted",
                ))
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn ticks_consult_the_installed_checkpoint_every_so_often() {
        let live = Arc::new(Counting(AtomicUsize::new(0), false));
        {
            let _installed = install(live.clone());
            for _ in 0..CHECK_EVERY * 3 {
                tick().unwrap();
            }
        }
        assert_eq!(live.0.load(Ordering::Relaxed), 3);
        // Uninstalled: ticks consult nothing.
        for _ in 0..CHECK_EVERY * 2 {
            tick().unwrap();
        }
        assert_eq!(live.0.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_killed_operation_stops_at_the_next_check_and_nesting_restores_the_outer_one() {
        let outer = Arc::new(Counting(AtomicUsize::new(0), false));
        let killed = Arc::new(Counting(AtomicUsize::new(0), true));
        let _outer = install(outer.clone());
        {
            let _inner = install(killed.clone());
            let stopped = (0..CHECK_EVERY * 2).find_map(|_| tick().err());
            assert_eq!(stopped.map(|e| e.code), Some(ErrorCode::Interrupted));
        }
        assert!(check().is_ok(), "the outer operation is current again");
        assert_eq!(outer.0.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn values_past_the_internal_size_are_refused() {
        assert!(check_value_bytes(MAX_VALUE_BYTES).is_ok());
        let err = check_value_bytes(MAX_VALUE_BYTES + 1).unwrap_err();
        assert_eq!(err.code, ErrorCode::BSONObjectTooLarge);
        assert!(err.message.contains("is invalid"), "{}", err.message);
        assert!(check_string_bytes(MAX_STRING_BYTES).is_ok());
        let err = check_string_bytes(16 * 1024 * 1024).unwrap_err();
        assert_eq!(err.code, ErrorCode::Location16493);
    }
}
