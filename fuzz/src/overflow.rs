//! Makes a stack overflow on a fuzzing thread a crash libFuzzer records.
//!
//! libFuzzer's own `main` runs the targets, so Rust's runtime never installs its overflow
//! handler, and libFuzzer's SIGSEGV handler cannot run on the exhausted stack: the process
//! would die without saving the input. Each fuzzing thread gets an alternate signal stack and
//! SIGSEGV/SIGBUS a handler that runs on it, says what happened and aborts; libFuzzer's SIGABRT
//! handler then runs on that same alternate stack and saves the input.

use std::sync::Once;

/// Room for the handler and for libFuzzer's crash handler, which runs on it too.
const ALT_STACK: usize = 1024 * 1024;

extern "C" fn on_fault(_: libc::c_int) {
    const MSG: &[u8] =
        b"\n==fuzz== SIGSEGV/SIGBUS on a fuzzing thread: stack overflow (or a bad access)\n";
    // Only async-signal-safe calls here.
    unsafe {
        libc::write(2, MSG.as_ptr().cast(), MSG.len());
        libc::abort();
    }
}

fn install_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fault as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    });
}

/// Runs `f` with an alternate signal stack on the current thread and the handler installed.
pub fn guarded<R>(f: impl FnOnce() -> R) -> R {
    install_handler();
    let mut stack = vec![0u8; ALT_STACK];
    let enable = libc::stack_t {
        ss_sp: stack.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: ALT_STACK,
    };
    unsafe { libc::sigaltstack(&enable, std::ptr::null_mut()) };
    let result = f();
    let disable = libc::stack_t {
        ss_sp: std::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    unsafe { libc::sigaltstack(&disable, std::ptr::null_mut()) };
    drop(stack);
    result
}
