//! What the process and each of its threads hold on the heap, counted where it is allocated:
//! [`Metered`] wraps the global allocator and keeps, per thread, the bytes it allocated minus
//! the bytes it freed, and for the process the sum over all threads.
//!
//! Owns: the counting allocator, the per-thread and process-wide counts, the last sampled
//! resident size ([`set_resident`]), and the memory limit that operations are held to
//! ([`set_limit`], [`over_limit`]). Does not own: deciding which
//! operation to stop (`query::guard` reads these counts at its checkpoints) or what the limit
//! is derived from (`config`, from the machine's or the container's memory).
//!
//! Why at the allocator: what one request makes the server hold is decided deep in pure code
//! (a decoded document is several times its BSON size, an expression can build a value of any
//! shape), and the only measure that cannot be fooled by a shape is what was allocated.
//! Counting costs two thread-local additions per allocation; the process-wide sum is updated
//! once a thread's count has moved by [`FLUSH_BYTES`], so it is exact to within that much per
//! thread. Memory freed on another thread than the one that allocated it (a request's buffer
//! handed to the writer) lowers the freeing thread's count: a thread's count is what it holds
//! net, not what it owns.
//!
//! A binary that does not install [`Metered`] as its global allocator counts nothing, and no
//! operation is ever refused for memory.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// How far a thread's count moves before the process-wide sum is updated.
pub const FLUSH_BYTES: i64 = 1 << 20;

/// A global allocator that counts what it hands out: `#[global_allocator] static A:
/// Metered<mimalloc::MiMalloc> = Metered(mimalloc::MiMalloc);`.
pub struct Metered<A>(pub A);

thread_local! {
    /// Bytes this thread allocated minus bytes it freed, since it started.
    static NET: Cell<i64> = const { Cell::new(0) };
    /// Of `NET`, what is not yet in `LIVE`.
    static UNFLUSHED: Cell<i64> = const { Cell::new(0) };
}

/// Bytes live on the heap, over all threads (to within `FLUSH_BYTES` a thread).
static LIVE: AtomicI64 = AtomicI64::new(0);
/// Whether a [`Metered`] allocator has counted anything (the binary installed one).
static METERED: AtomicBool = AtomicBool::new(false);
/// The heap the process may hold before growing operations are refused; 0: no limit.
static LIMIT: AtomicU64 = AtomicU64::new(0);
/// The resident size the server's sampler last read ([`set_resident`]).
static RESIDENT: AtomicU64 = AtomicU64::new(0);

#[inline]
fn note(delta: i64) {
    // `try_with`: during a thread's teardown the slots may be gone, and an allocator must not
    // panic. Both are `const` cells without destructors, so this only guards the platform.
    let _ = NET.try_with(|net| net.set(net.get().wrapping_add(delta)));
    let _ = UNFLUSHED.try_with(|pending| {
        let now = pending.get().wrapping_add(delta);
        if now >= FLUSH_BYTES || now <= -FLUSH_BYTES {
            LIVE.fetch_add(now, Ordering::Relaxed);
            pending.set(0);
        } else {
            pending.set(now);
        }
    });
}

fn size(layout: Layout) -> i64 {
    i64::try_from(layout.size()).unwrap_or(i64::MAX)
}

// SAFETY: every method forwards to the wrapped allocator with the caller's arguments unchanged,
// so the wrapper upholds exactly the contract the wrapped allocator does; the counting touches
// only thread-local cells and an atomic, and never allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Metered<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(size(layout));
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(size(layout));
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-size(layout));
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(i64::try_from(new_size).unwrap_or(i64::MAX) - size(layout));
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

/// Marks the process as counting its allocations; the binary calls it at start, once it has
/// installed [`Metered`].
pub fn enable() {
    METERED.store(true, Ordering::Relaxed);
}

/// Whether this process counts its allocations.
pub fn is_metered() -> bool {
    METERED.load(Ordering::Relaxed)
}

/// Bytes this thread has allocated minus what it freed since it started.
pub fn thread_net() -> i64 {
    NET.try_with(Cell::get).unwrap_or(0)
}

/// Bytes live on the process's heap (to within a MiB a thread).
pub fn live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// Sets the heap the process may hold before growing operations are refused (0: none).
pub fn set_limit(bytes: u64) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The limit [`set_limit`] set; 0 when there is none.
pub fn limit() -> u64 {
    LIMIT.load(Ordering::Relaxed)
}

/// Records the process's resident memory, as the server's sampler last read it.
pub fn set_resident(bytes: u64) {
    RESIDENT.store(bytes, Ordering::Relaxed);
}

/// The process's resident memory as last sampled (0 before the first sample).
pub fn resident_bytes() -> u64 {
    RESIDENT.load(Ordering::Relaxed)
}

/// Whether the process holds more than its limit: on the counted heap, or in resident memory
/// as last sampled. The resident size is the one the kernel's limit acts on, and it can run
/// well past the heap: the allocator keeps freed pages of each thread for a while, and with
/// many threads working at once (measured: 16 cores, 12 clients) that slack alone took a
/// process counted under its limit past a cgroup limit half again as large.
pub fn over_limit() -> bool {
    let limit = limit();
    limit > 0
        && is_metered()
        && (u64::try_from(live_bytes()).unwrap_or(0) > limit || resident_bytes() > limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_counts_what_this_thread_allocates_and_frees() {
        let metered = Metered(std::alloc::System);
        let layout = Layout::from_size_align(3 << 20, 8).unwrap();
        let (net, live) = (thread_net(), live_bytes());
        // SAFETY: a non-zero layout, freed below with the same layout.
        let ptr = unsafe { metered.alloc(layout) };
        assert!(!ptr.is_null());
        assert_eq!(thread_net() - net, 3 << 20);
        assert!(live_bytes() - live >= 2 << 20, "flushed past FLUSH_BYTES");
        // SAFETY: `ptr` came from `alloc` with `layout`; the new size is non-zero.
        let ptr = unsafe { metered.realloc(ptr, layout, 1 << 20) };
        assert_eq!(thread_net() - net, 1 << 20);
        let smaller = Layout::from_size_align(1 << 20, 8).unwrap();
        // SAFETY: `ptr` came from `realloc` to `smaller`'s size, same alignment.
        unsafe { metered.dealloc(ptr, smaller) };
        assert_eq!(thread_net(), net);
    }

    #[test]
    fn no_limit_is_never_over() {
        // The unit tests run on the system allocator: nothing is metered.
        assert!(!is_metered() || limit() == 0);
        assert!(!over_limit());
    }
}
