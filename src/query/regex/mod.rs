//! Regular expressions as mongod runs them: PCRE2 (the engine mongod links), compiled with
//! mongod's options and limits, reporting mongod's errors.
//!
//! Owns: compiling a pattern with mongod's option letters, running it, and the error each
//! failure becomes. Does not own: where patterns come from (`$regex` and `$in`/`$not` in
//! filters; the `$regexFind`, `$regexFindAll` and `$regexMatch` expressions) nor how matches
//! are reported to clients.
//!
//! API:
//! - [`Regex::new`]`(pattern, options)` compiles for the `$regex` query operator;
//!   [`Regex::for_operator`]`(op, pattern, options)` compiles for an aggregation expression
//!   `op` (`"$regexFind"`, …), whose errors name it. Compile once per query (or per constant
//!   expression), then match per document: a [`Regex`] is `Send + Sync` and cheap to clone.
//! - [`Regex::is_match`]`(text)`: whether it matches anywhere.
//! - [`Regex::find_at`]`(text, start)`: the first match at or after byte offset `start`, as a
//!   [`Match`] with its byte span and every capture group (`None` for a group that did not
//!   take part). `start` past the end finds nothing; `start` inside a character is an error.
//! - [`code_point_index`]`(text, byte_offset)`: the code-point index mongod reports as `idx`.
//!
//! Compilation (mongod's `pcre_util::flagsToOptions`): always `PCRE2_UTF` (not `PCRE2_UCP`,
//! so `\w`, `\d`, `\b` and POSIX classes stay ASCII while `.`, classes, `\p{..}` and caseless
//! matching work on code points); `i` caseless, `m` multiline, `s` dotall, `x` extended, `u`
//! accepted and changes nothing; any other letter is 51108. Patterns are at most 16,384 bytes
//! (mongod's compile-context limit). No JIT: mongod does not JIT-compile, and the
//! interpreter is the one that honours the heap limit below (JIT ignores heap and depth
//! limits and counts the match limit differently, so failures would come at other points).
//!
//! Matching (`pcre.rs`, the one file that calls PCRE2's C API): texts are `&str`, valid UTF-8,
//! so PCRE2 is told not to validate them (`PCRE2_NO_UTF_CHECK`). Validating on every call,
//! from the start offset to the end, made finding all n matches in a text cost O(n × length).
//! A start offset inside a character, the one thing that check caught in a valid text, is
//! refused first with PCRE2's own error (51156 `"... Result code: bad offset into UTF
//! string"`).
//!
//! Errors, in mongod's order and words: for `$regex`, a bad option letter is 51108
//! `" invalid flag in regex options: q"`, a NUL byte in the pattern 2 BadValue, a pattern
//! PCRE2 rejects 51091 `"Regular expression is invalid: <PCRE2's message>"`; for an
//! expression, a NUL byte is 51109 (pattern) or 51110 (options), a bad letter 51108
//! `"$regexFind invalid flag in regex options: q"`, a rejected pattern 51111
//! `"Invalid Regex in $regexFind: <message>"`. A match PCRE2 cannot finish is 51156
//! `"Error occurred while executing the regular expression in <op>. Result code: <message>"`
//! (`<op>` is `$regex` for queries) — never a silent "no match".
//!
//! Limits: PCRE2's default match limit, 10,000,000 (what mongod 7.0 runs with), stops
//! catastrophic backtracking (`(a+)+$` on 30 `a`s and a `b`) after that many steps. The
//! interpreter keeps its backtracking frames on the heap, not the stack, so depth cannot
//! overflow a thread's stack; mongod 7.0 leaves PCRE2's heap limit at 20 GB, which one query
//! could exhaust, so here it is 64 MiB per match (`limits.rs`).

use crate::error::{Error, ErrorCode, Result};
use std::sync::Arc;

mod limits;
#[allow(unsafe_code)]
mod pcre;
#[cfg(test)]
mod tests;

/// mongod's maximum pattern length in bytes (`kMaxPatternLength` in its `pcre.cpp`).
pub const MAX_PATTERN_LENGTH: usize = 16_384;

/// PCRE2's message for a pattern over the application's length limit (its `ERR88`), which
/// is what mongod reports for a pattern over [`MAX_PATTERN_LENGTH`].
const TOO_LONG: &str = "pattern string is longer than the limit set by the application";

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct Regex {
    code: Arc<pcre::Code>,
    /// The operator named in matching errors: `$regex`, or the expression's name.
    op: &'static str,
}

/// One match: byte offsets into the subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    pub start: usize,
    pub end: usize,
    /// Capture groups 1..=n in pattern order (named groups included); `None` for a group that
    /// did not take part in the match.
    pub captures: Vec<Option<(usize, usize)>>,
}

/// Which caller compiles: the errors differ (see the module documentation).
#[derive(Clone, Copy)]
enum Caller {
    Query,
    Expression(&'static str),
}

impl Regex {
    /// Compiles `pattern` for the `$regex` query operator with mongod's option letters.
    pub fn new(pattern: &str, options: &str) -> Result<Regex> {
        compile(Caller::Query, pattern, options)
    }

    /// Compiles `pattern` for the aggregation expression `op` (`"$regexFind"`,
    /// `"$regexFindAll"`, `"$regexMatch"`): its errors name `op`.
    pub fn for_operator(op: &'static str, pattern: &str, options: &str) -> Result<Regex> {
        compile(Caller::Expression(op), pattern, options)
    }

    /// Whether the pattern matches anywhere in `text`; an error when PCRE2 could not finish
    /// (a match, heap or depth limit), since the answer is then unknown.
    pub fn is_match(&self, text: &str) -> Result<bool> {
        self.code
            .find_at(text, 0)
            .map(|found| found.is_some())
            .map_err(|e| self.match_failed(e))
    }

    /// The first match starting at or after byte offset `start`. Anchors and lookbehinds see
    /// the text before `start` (`^` without `m` matches only at 0). `None` when there is no
    /// match or `start` is past the end; an error when PCRE2 could not finish or `start` is
    /// inside a character.
    pub fn find_at(&self, text: &str, start: usize) -> Result<Option<Match>> {
        if start > text.len() {
            return Ok(None);
        }
        self.code
            .find_at(text, start)
            .map_err(|e| self.match_failed(e))
    }

    /// The number of capture groups (named ones included).
    pub fn capture_count(&self) -> usize {
        self.code.capture_count()
    }

    fn match_failed(&self, e: pcre::Error) -> Error {
        Error::new(
            ErrorCode::Location51156,
            format!(
                "Error occurred while executing the regular expression in {}. Result code: {}",
                self.op,
                e.message()
            ),
        )
    }
}

/// The code-point index of byte offset `byte_offset` in `text` (how many characters start
/// before it), which is what mongod reports as a match's `idx`. An offset past the end counts
/// every character.
pub fn code_point_index(text: &str, byte_offset: usize) -> usize {
    let before = text
        .as_bytes()
        .get(..byte_offset)
        .unwrap_or(text.as_bytes());
    // UTF-8 continuation bytes are 0b10xx_xxxx; every other byte starts a character.
    before.iter().filter(|b| (**b & 0xC0) != 0x80).count()
}

fn compile(caller: Caller, pattern: &str, options: &str) -> Result<Regex> {
    if let Caller::Expression(op) = caller {
        if pattern.contains('\0') {
            return Err(Error::new(
                ErrorCode::Location51109,
                format!("{op}: regular expression cannot contain an embedded null byte"),
            ));
        }
        if options.contains('\0') {
            return Err(Error::new(
                ErrorCode::Location51110,
                format!("{op}: regular expression options cannot contain an embedded null byte"),
            ));
        }
    }
    let mut flags = pcre::Options::default();
    for flag in options.chars() {
        match flag {
            'i' => flags.caseless = true,
            'm' => flags.multi_line = true,
            's' => flags.dotall = true,
            'x' => flags.extended = true,
            'u' => {}
            other => {
                let op = match caller {
                    Caller::Query => "",
                    Caller::Expression(op) => op,
                };
                return Err(Error::new(
                    ErrorCode::Location51108,
                    format!("{op} invalid flag in regex options: {other}"),
                ));
            }
        };
    }
    if matches!(caller, Caller::Query) && pattern.contains('\0') {
        return Err(Error::bad_value(
            "Regular expression cannot contain an embedded null byte",
        ));
    }
    let invalid = |why: &str| match caller {
        Caller::Query => Error::new(
            ErrorCode::Location51091,
            format!("Regular expression is invalid: {why}"),
        ),
        Caller::Expression(op) => Error::new(
            ErrorCode::Location51111,
            format!("Invalid Regex in {op}: {why}"),
        ),
    };
    if pattern.len() > MAX_PATTERN_LENGTH {
        return Err(invalid(TOO_LONG));
    }
    let code = pcre::Code::compile(&limits::with_heap_limit(pattern), flags)
        .map_err(|e| invalid(&e.message()))?;
    Ok(Regex {
        code: Arc::new(code),
        op: match caller {
            Caller::Query => "$regex",
            Caller::Expression(op) => op,
        },
    })
}
