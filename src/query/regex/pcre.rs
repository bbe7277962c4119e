//! PCRE2's C library (through `pcre2-sys`) behind a safe interface: compile a pattern, match it
//! from an offset, read an error's text.
//!
//! Owns: every `unsafe` call into PCRE2 in mayfly and the invariants that make each sound.
//! Does not own: which options, limits and messages mongod uses (`mod.rs`, `limits.rs`).
//!
//! Why not the `pcre2` crate: it passes no match options, so on every call PCRE2 validates the
//! subject's UTF-8 from the start offset to its end, and finding all n matches of a pattern in
//! a text costs O(n × length). Subjects here are `&str`, valid UTF-8 by construction, so every
//! match passes `PCRE2_NO_UTF_CHECK`. What that check would still have caught in a valid
//! subject, a start offset inside a character, is refused here first with the error PCRE2
//! gives for it, because with the check off such an offset is undefined behaviour.
//!
//! Everything else is what the `pcre2` crate (0.2.11) did with mayfly's settings, so that
//! patterns, matches and messages stay the same: compile with `PCRE2_UTF` plus the option
//! bits, default compile and match contexts (PCRE2's built-in match limit, 10,000,000, and
//! heap limit; `limits.rs` lowers the latter through the pattern), no JIT, fresh match data
//! sized from the pattern for each match.

// Every unsafe block says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]

use super::Match;
use pcre2_sys as ffi;
use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

/// The compile options mayfly sets besides `PCRE2_UTF`, which is always on.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Options {
    pub caseless: bool,
    pub multi_line: bool,
    pub dotall: bool,
    pub extended: bool,
}

/// An error PCRE2 reported (or, for a start offset inside a character, would have), by its
/// PCRE2 error number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Error(c_int);

impl Error {
    /// PCRE2's own text for the error (`pcre2_get_error_message`), without offsets or
    /// prefixes: what mongod reports.
    pub(super) fn message(self) -> String {
        // PCRE2 documents 120 code units as enough for any message.
        let mut buf = [0u8; 256];
        // SAFETY: the pointer and length describe `buf`, which PCRE2 writes at most
        // `buf.len()` bytes into (a terminating NUL included).
        let written =
            unsafe { ffi::pcre2_get_error_message_8(self.0, buf.as_mut_ptr(), buf.len()) };
        let text = usize::try_from(written).ok().and_then(|len| buf.get(..len));
        match text {
            Some(text) => String::from_utf8_lossy(text).into_owned(),
            // Only numbers PCRE2 returned reach here, so it knows them all.
            None => format!("PCRE2 error {}", self.0),
        }
    }
}

/// A compiled pattern. Immutable once compiled: matching only reads it.
pub(super) struct Code {
    /// Owned: freed on drop, never null.
    code: NonNull<ffi::pcre2_code_8>,
    /// Capture groups in the pattern (named ones included), not counting the whole match.
    capture_count: usize,
}

// SAFETY: PCRE2 documents compiled code as shareable between threads (pcre2api,
// "Multithreading"): any number of threads may match with it at once, each with its own match
// data, and it may be freed from any thread. Nothing here mutates it after `compile` returns:
// matching takes it as `*const`, and mayfly never JIT-compiles (the one operation that writes
// to compiled code). Each match below creates its own match data.
unsafe impl Send for Code {}
// SAFETY: as for `Send` above.
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        // SAFETY: `code` came from `pcre2_compile_8`, is owned by this value alone, and is
        // freed once, here.
        unsafe { ffi::pcre2_code_free_8(self.code.as_ptr()) }
    }
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Code")
            .field("capture_count", &self.capture_count)
            .finish_non_exhaustive()
    }
}

/// A non-null pointer to a byte that is never read: PCRE2 is given lengths of 0 with it.
/// Some older PCRE2 versions dereferenced an empty subject's pointer, and an empty `&str` may
/// carry a dangling one, so an empty text is passed as this instead.
static EMPTY: [u8; 1] = [0];

fn bytes_ptr(text: &str) -> *const u8 {
    if text.is_empty() {
        EMPTY.as_ptr()
    } else {
        text.as_ptr()
    }
}

impl Code {
    /// Compiles `pattern` in UTF mode with `options`; PCRE2's error when it rejects it.
    pub(super) fn compile(pattern: &str, options: Options) -> Result<Code, Error> {
        let mut bits = ffi::PCRE2_UTF;
        for (on, bit) in [
            (options.caseless, ffi::PCRE2_CASELESS),
            (options.multi_line, ffi::PCRE2_MULTILINE),
            (options.dotall, ffi::PCRE2_DOTALL),
            (options.extended, ffi::PCRE2_EXTENDED),
        ] {
            if on {
                bits |= bit;
            }
        }
        let mut error: c_int = 0;
        let mut offset: usize = 0;
        // SAFETY: the pattern pointer is valid for `pattern.len()` bytes (or is `EMPTY` with a
        // length of 0); PCRE2 copies what it needs and keeps no pointer to it. `error` and
        // `offset` are valid for writes. A null compile context means PCRE2's defaults.
        let code = unsafe {
            ffi::pcre2_compile_8(
                bytes_ptr(pattern),
                pattern.len(),
                bits,
                &mut error,
                &mut offset,
                std::ptr::null_mut(),
            )
        };
        let Some(code) = NonNull::new(code) else {
            return Err(Error(error));
        };
        // Owned from here on, so an error below still frees it.
        let mut compiled = Code {
            code,
            capture_count: 0,
        };
        let mut count: u32 = 0;
        // SAFETY: `code` is a live compiled pattern; PCRE2_INFO_CAPTURECOUNT writes one
        // `uint32_t` to the pointer, which points at `count`.
        let rc = unsafe {
            ffi::pcre2_pattern_info_8(
                compiled.code.as_ptr(),
                ffi::PCRE2_INFO_CAPTURECOUNT,
                (&mut count as *mut u32).cast::<c_void>(),
            )
        };
        if rc != 0 {
            return Err(Error(rc));
        }
        // A u32 fits a usize on every target mayfly builds for (32 and 64 bits).
        compiled.capture_count =
            usize::try_from(count).map_err(|_| Error(ffi::PCRE2_ERROR_INTERNAL))?;
        Ok(compiled)
    }

    /// Capture groups in the pattern (named ones included), not counting the whole match.
    pub(super) fn capture_count(&self) -> usize {
        self.capture_count
    }

    /// The first match at or after byte offset `start` of `subject`, with every capture group.
    /// Errors: `start` past the end (PCRE2_ERROR_BADOFFSET) or inside a character
    /// (PCRE2_ERROR_BADUTFOFFSET), or a match PCRE2 could not finish (a limit).
    pub(super) fn find_at(&self, subject: &str, start: usize) -> Result<Option<Match>, Error> {
        if start > subject.len() {
            return Err(Error(ffi::PCRE2_ERROR_BADOFFSET));
        }
        // The one part of PCRE2's UTF check that a valid subject can fail; with the check
        // off, an offset inside a character is undefined behaviour, so it must not get through.
        if !subject.is_char_boundary(start) {
            return Err(Error(ffi::PCRE2_ERROR_BADUTFOFFSET));
        }
        let data = MatchData::for_code(self)?;
        // SAFETY: `self.code` is a live compiled pattern and `data.ptr` live match data made
        // from it, used by this call alone. The subject pointer is valid for `subject.len()`
        // bytes (or is `EMPTY` with a length of 0) for the whole call, and PCRE2 keeps no
        // pointer to it once it returns. PCRE2_NO_UTF_CHECK requires a valid UTF-8 subject and
        // a start offset on a character boundary: a `&str` is valid UTF-8, and `start` was
        // checked above to be a boundary within it. A null match context means PCRE2's
        // default limits.
        let rc = unsafe {
            ffi::pcre2_match_8(
                self.code.as_ptr(),
                bytes_ptr(subject),
                subject.len(),
                start,
                ffi::PCRE2_NO_UTF_CHECK,
                data.ptr.as_ptr(),
                std::ptr::null_mut(),
            )
        };
        if rc == ffi::PCRE2_ERROR_NOMATCH {
            return Ok(None);
        }
        // A positive count is one more than the highest pair PCRE2 set; 0 means the vector
        // was too small for them all (it never is: it is sized from the pattern) and that
        // every pair in it was filled.
        let set = match u32::try_from(rc) {
            Ok(0) => u32::MAX,
            Ok(set) => set,
            Err(_) => return Err(Error(rc)),
        };
        let group = |i: usize| data.pair(i, set);
        // Group 0, the whole match, is always set when PCRE2 reports a match.
        let Some((start, end)) = group(0) else {
            return Err(Error(ffi::PCRE2_ERROR_INTERNAL));
        };
        Ok(Some(Match {
            start,
            end,
            captures: (1..=self.capture_count).map(group).collect(),
        }))
    }
}

/// Match data for one match: the offsets vector PCRE2 fills and its backtracking frames.
/// Owned by one call, so never shared.
struct MatchData {
    /// Owned: freed on drop, never null.
    ptr: NonNull<ffi::pcre2_match_data_8>,
}

impl Drop for MatchData {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `pcre2_match_data_create_from_pattern_8`, is owned by this
        // value alone, and is freed once, here.
        unsafe { ffi::pcre2_match_data_free_8(self.ptr.as_ptr()) }
    }
}

impl MatchData {
    /// Match data with one offset pair for the whole match and one per capture group.
    fn for_code(code: &Code) -> Result<MatchData, Error> {
        // SAFETY: `code.code` is a live compiled pattern; PCRE2 reads its capture count and
        // keeps no pointer to it. A null general context means malloc.
        let ptr = unsafe {
            ffi::pcre2_match_data_create_from_pattern_8(code.code.as_ptr(), std::ptr::null_mut())
        };
        NonNull::new(ptr)
            .map(|ptr| MatchData { ptr })
            .ok_or(Error(ffi::PCRE2_ERROR_NOMEMORY))
    }

    /// Offset pair `i` (0: the whole match, then each group) after a match that set the
    /// first `set` pairs; `None` past those, past the vector, or for a group that did not take
    /// part (`PCRE2_UNSET`).
    fn pair(&self, i: usize, set: u32) -> Option<(usize, usize)> {
        // SAFETY: `ptr` is live match data; these only read its pair count and the address of
        // its offsets vector.
        let (count, vector) = unsafe {
            (
                ffi::pcre2_get_ovector_count_8(self.ptr.as_ptr()),
                ffi::pcre2_get_ovector_pointer_8(self.ptr.as_ptr()),
            )
        };
        let within = u32::try_from(i).ok().filter(|&i| i < count.min(set))?;
        if vector.is_null() {
            return None;
        }
        let at = usize::try_from(within).ok()?.checked_mul(2)?;
        // SAFETY: the vector holds `2 × count` contiguous `PCRE2_SIZE` (usize) values and
        // `i < count`, so `at` and `at + 1` are inside it. A match writes every pair below
        // the count it returns (`set`), gaps as PCRE2_UNSET, so both are initialised. They
        // are copied out, and nothing else uses the match data meanwhile (one call owns it).
        let (start, end) = unsafe { (vector.add(at).read(), vector.add(at + 1).read()) };
        (start != ffi::PCRE2_UNSET && end != ffi::PCRE2_UNSET).then_some((start, end))
    }
}
