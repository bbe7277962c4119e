//! Checks that bytes are a well-formed BSON document, nested documents included, no deeper
//! than a limit, without decoding it: how an `insert`'s document sequence is validated before
//! its documents go to storage as the bytes they came in.
//!
//! Owns: the validating walk and the errors it reports. Does not own: the depth limits
//! (`query::depth`) or where the check is applied (`op_msg`).
//!
//! Two walks say the same thing. [`first_fault`] reads every element with the `bson` crate's
//! raw reader, the decoder the rest of the server uses, and names the first fault in document
//! order, as mongod's validation does. [`well_formed`] makes the same checks on the bytes
//! directly, in about a third of the time: it is the walk every document takes, and a document it
//! refuses (rarely) is walked again by [`first_fault`] for the error. The two agreeing on every
//! input is what the `bson_check` fuzz target and the tests check.

use crate::error::Error;
use crate::query::depth;
use bson::{RawBsonRef, RawDocument};

/// Checks the document `bytes`, with at most [`depth::MAX_BSON_DEPTH`] levels below it: on
/// success without decoding anything, on failure with the error of its first fault.
pub(crate) fn check(bytes: &[u8]) -> Result<(), Error> {
    if well_formed(bytes, depth::MAX_BSON_DEPTH) {
        return Ok(());
    }
    first_fault(bytes, depth::MAX_BSON_DEPTH)?;
    // Not reached while the walks agree; should they not, the bytes are refused all the same.
    Err(Error::new(
        crate::error::ErrorCode::InvalidBSON,
        "invalid BSON: the document is malformed",
    ))
}

/// Reads every element of the document `bytes`, nested ones included, with the `bson` crate's
/// raw reader (an explicit stack, no recursion), and reports the first fault in document order:
/// bytes the reader refuses, or a document nested more than `max_nested` levels below `bytes`
/// (as [`depth::check_request`] counts them).
pub fn first_fault(bytes: &[u8], max_nested: usize) -> Result<(), Error> {
    let invalid = Error::invalid_bson;
    let mut stack = Vec::with_capacity(4);
    stack.push(RawDocument::from_bytes(bytes).map_err(invalid)?.iter());
    while let Some(top) = stack.last_mut() {
        let Some(element) = top.next() else {
            stack.pop();
            continue;
        };
        let nested = match element.map_err(invalid)?.1 {
            RawBsonRef::Document(doc) => doc,
            RawBsonRef::Array(array) => {
                RawDocument::from_bytes(array.as_bytes()).map_err(invalid)?
            }
            RawBsonRef::JavaScriptCodeWithScope(code) => code.scope,
            _ => continue,
        };
        // The stack holds the document and the levels open below it.
        if stack.len() > max_nested {
            return Err(depth::too_deep_on_the_wire());
        }
        stack.push(nested.iter());
    }
    Ok(())
}

/// Whether [`first_fault`] finds no fault in `bytes`: the same checks, made on the bytes.
///
/// Every length is read from the bytes and checked against the end of the document that holds
/// it before anything past it is read, and every element must end before its document's
/// terminating NUL. Names, strings, code, symbols and regular expressions must be UTF-8 (the
/// reader's `&str`s); booleans 0 or 1; an old-style binary's inner length must agree with its
/// outer one.
pub fn well_formed(bytes: &[u8], max_nested: usize) -> bool {
    walk(bytes, max_nested).is_some()
}

// BSON element types.
const DOUBLE: u8 = 0x01;
const STRING: u8 = 0x02;
const DOCUMENT: u8 = 0x03;
const ARRAY: u8 = 0x04;
const BINARY: u8 = 0x05;
const UNDEFINED: u8 = 0x06;
const OBJECT_ID: u8 = 0x07;
const BOOLEAN: u8 = 0x08;
const DATE_TIME: u8 = 0x09;
const NULL: u8 = 0x0A;
const REGEX: u8 = 0x0B;
const DB_POINTER: u8 = 0x0C;
const CODE: u8 = 0x0D;
const SYMBOL: u8 = 0x0E;
const CODE_WITH_SCOPE: u8 = 0x0F;
const INT32: u8 = 0x10;
const TIMESTAMP: u8 = 0x11;
const INT64: u8 = 0x12;
const DECIMAL128: u8 = 0x13;
const MAX_KEY: u8 = 0x7F;
const MIN_KEY: u8 = 0xFF;

/// The binary subtype whose data starts with its own length.
const BINARY_OLD: u8 = 0x02;

/// The smallest code-with-scope element: its length, an empty string (4 + 1) and an empty
/// scope (4 + 1).
const MIN_CODE_WITH_SCOPE: usize = 4 + 5 + 5;

/// `None` at the first fault. `last` is the offset of the current document's terminating NUL;
/// `open` holds the same for each document open around it.
fn walk(bytes: &[u8], max_nested: usize) -> Option<()> {
    let len = document_len(bytes, 0, bytes.len())?;
    if len != bytes.len() {
        return None;
    }
    let mut open: Vec<usize> = Vec::new();
    let mut last = len - 1;
    let mut pos = 4;
    loop {
        if pos == last {
            // The terminator, a NUL as `document_len` checked. The element that holds this
            // document ends before `outer`, as checked when the document was opened.
            let Some(outer) = open.pop() else {
                return Some(());
            };
            pos = last + 1;
            last = outer;
            continue;
        }
        let tag = *bytes.get(pos)?;
        let value = cstring_end(bytes, pos + 1, last)?;
        let end = match tag {
            DOUBLE | DATE_TIME | TIMESTAMP | INT64 => value.checked_add(8)?,
            INT32 => value.checked_add(4)?,
            OBJECT_ID => value.checked_add(12)?,
            DECIMAL128 => value.checked_add(16)?,
            UNDEFINED | NULL | MAX_KEY | MIN_KEY => value,
            BOOLEAN => (*bytes.get(value)? <= 1).then_some(value + 1)?,
            STRING | CODE | SYMBOL => string_end(bytes, value, last)?,
            DB_POINTER => string_end(bytes, value, last)?.checked_add(12)?,
            REGEX => cstring_end(bytes, cstring_end(bytes, value, last)?, last)?,
            BINARY => binary_end(bytes, value)?,
            DOCUMENT | ARRAY | CODE_WITH_SCOPE => {
                let (inner, inner_len) = if tag == CODE_WITH_SCOPE {
                    scope_of(bytes, value, last)?
                } else {
                    (value, document_len(bytes, value, last)?)
                };
                if inner + inner_len > last || open.len() + 1 > max_nested {
                    return None;
                }
                open.push(last);
                last = inner + inner_len - 1;
                pos = inner + 4;
                continue;
            }
            _ => return None,
        };
        if end > last {
            return None;
        }
        pos = end;
    }
}

/// The little-endian `i32` at `at`, when its four bytes lie before `limit` and it is not
/// negative.
fn length_at(bytes: &[u8], at: usize, limit: usize) -> Option<usize> {
    let end = at.checked_add(4)?;
    if end > limit {
        return None;
    }
    let raw: [u8; 4] = bytes.get(at..end)?.try_into().ok()?;
    usize::try_from(i32::from_le_bytes(raw)).ok()
}

/// The length of the document at `at`, which must lie before `limit`: at least 5 bytes, the
/// last a NUL.
fn document_len(bytes: &[u8], at: usize, limit: usize) -> Option<usize> {
    let len = length_at(bytes, at, limit)?;
    let end = at.checked_add(len)?;
    (len >= 5 && end <= limit && *bytes.get(end - 1)? == 0).then_some(len)
}

/// The offset after the NUL that ends the UTF-8 C string at `at`, which is searched for up to
/// `last` included.
fn cstring_end(bytes: &[u8], at: usize, last: usize) -> Option<usize> {
    let span = bytes.get(at..=last)?;
    let len = span.iter().position(|&b| b == 0)?;
    utf8(span.get(..len)?).then_some(at + len + 1)
}

/// The offset after the length-prefixed UTF-8 string at `at`, which must end by `last`
/// included: a length of at least 1, counting the NUL that ends it.
fn string_end(bytes: &[u8], at: usize, last: usize) -> Option<usize> {
    let len = length_at(bytes, at, last + 1)?;
    let end = (at + 4).checked_add(len)?;
    if len < 1 || end > last + 1 || *bytes.get(end - 1)? != 0 {
        return None;
    }
    utf8(bytes.get(at + 4..end - 1)?).then_some(end)
}

/// Whether `bytes` are UTF-8: most names and strings are ASCII, checked without the call.
fn utf8(bytes: &[u8]) -> bool {
    bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()
}

/// The offset after the binary value at `at` (its length, its subtype, its data); the caller
/// checks that it lies within the document.
fn binary_end(bytes: &[u8], at: usize) -> Option<usize> {
    let len = length_at(bytes, at, bytes.len())?;
    let subtype = *bytes.get(at + 4)?;
    if len.checked_add(5)? >= i32::MAX as usize {
        return None;
    }
    if subtype == BINARY_OLD {
        let inner = length_at(bytes, at + 5, bytes.len())?;
        if len < 4 || inner.checked_add(4)? != len {
            return None;
        }
    }
    (at + 5).checked_add(len)
}

/// The scope of the code-with-scope value at `at` (its whole length, the code, the scope):
/// the scope's offset and length, the scope filling the rest of the value exactly.
fn scope_of(bytes: &[u8], at: usize, last: usize) -> Option<(usize, usize)> {
    let whole = length_at(bytes, at, last + 1)?;
    let end = at.checked_add(whole)?;
    if whole < MIN_CODE_WITH_SCOPE || end > last + 1 {
        return None;
    }
    let scope = string_end(bytes, at + 4, end - 1)?;
    let scope_len = document_len(bytes, scope, end)?;
    (scope + scope_len == end).then_some((scope, scope_len))
}

#[cfg(test)]
#[path = "bson_check_tests.rs"]
mod tests;
