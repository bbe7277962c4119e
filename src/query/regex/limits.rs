//! The heap limit every pattern runs under, set through PCRE2's start-of-pattern item
//! `(*LIMIT_HEAP=n)`.
//!
//! Owns: where that item goes in a pattern. Does not own: compiling (see `mod.rs`).
//!
//! Matches run with PCRE2's default match context (`pcre.rs`), so the limit travels in the
//! pattern and every compiled pattern carries its own: PCRE2 documents `(*LIMIT_HEAP=n)` (and
//! `LIMIT_MATCH`, `LIMIT_DEPTH`) for exactly this, and a value there can only lower the
//! caller's limit (the default context's, 20 GB). A pattern may begin with start items of its
//! own, its own `(*LIMIT_HEAP=...)` among them, and of repeated items the last wins; so ours
//! goes after the pattern's leading start items, carrying the smaller of ours and the
//! pattern's own value.
//! Start items are recognised exactly as PCRE2 10.46's `pcre2_compile` does (its `pso_list`):
//! anything else ends the leading run, and inserting an item before it keeps both valid.

/// The most heap one match may use for its backtracking frames, in KiB (64 MiB). PCRE2's
/// frames live on the heap (never the thread's stack), one per nested backtracking point, so
/// this bounds a match's memory whatever its text: measured, `^(ab)*$` matches up to 220,000
/// repetitions (440 kB) and `^(?:a|b)*$` up to 329,000 characters before the match fails with
/// 51156 "heap limit exceeded". Repeats of a single character or class (`.*`, `a+`, `\w*`)
/// take no frame per character and are not limited by it.
pub(super) const HEAP_LIMIT_KIB: u32 = 65_536;

/// PCRE2's start-of-pattern items after `(*`, as it matches them: by prefix, in this order.
/// The `LIMIT_` ones are followed by decimal digits and `)`.
const START_ITEMS: &[&str] = &[
    "UTF8)",
    "UTF)",
    "UCP)",
    "NOTEMPTY)",
    "NOTEMPTY_ATSTART)",
    "NO_AUTO_POSSESS)",
    "NO_DOTSTAR_ANCHOR)",
    "NO_JIT)",
    "NO_START_OPT)",
    "CASELESS_RESTRICT)",
    "TURKISH_CASING)",
    "LIMIT_HEAP=",
    "LIMIT_MATCH=",
    "LIMIT_DEPTH=",
    "LIMIT_RECURSION=",
    "CR)",
    "LF)",
    "CRLF)",
    "ANY)",
    "NUL)",
    "ANYCRLF)",
    "BSR_ANYCRLF)",
    "BSR_UNICODE)",
];

/// `pattern` with `(*LIMIT_HEAP=n)` placed after its leading start items, `n` being the
/// smaller of [`HEAP_LIMIT_KIB`] and any heap limit those items set.
pub(super) fn with_heap_limit(pattern: &str) -> String {
    let mut rest = pattern;
    let mut limit = HEAP_LIMIT_KIB;
    while let Some((len, heap)) = start_item(rest) {
        if let Some(own) = heap {
            limit = limit.min(own);
        }
        rest = rest.get(len..).unwrap_or_default();
    }
    let head = pattern.len() - rest.len();
    let (items, body) = pattern.split_at(head);
    format!("{items}(*LIMIT_HEAP={limit}){body}")
}

/// The leading start item of `s`: its length, and its value when it is `LIMIT_HEAP`. `None`
/// when `s` does not begin with one PCRE2 accepts.
fn start_item(s: &str) -> Option<(usize, Option<u32>)> {
    let after = s.strip_prefix("(*")?;
    let name = START_ITEMS.iter().find(|name| after.starts_with(**name))?;
    let tail = after.get(name.len()..)?;
    if !name.ends_with('=') {
        return Some((2 + name.len(), None));
    }
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    let value: u32 = tail.get(..digits)?.parse().ok()?;
    tail.get(digits..)?.strip_prefix(')')?;
    let len = 2 + name.len() + digits + 1;
    Some((len, (*name == "LIMIT_HEAP=").then_some(value)))
}
