//! Nesting limits: how deep a BSON document may be on the wire and in storage, how many
//! components a field path may have, and the one iterative check of raw BSON bytes that enforces
//! them before anything recursive (the `bson` crate's decoder, the BSON order, key encoding)
//! sees a document.
//!
//! Owns: the limits and the raw-bytes depth scan. Does not own: where each check is applied
//! (the wire decoder for requests, the engine for stored and read documents, each parser for
//! its paths), nor the full validation of BSON (the `bson` crate does that afterwards). The
//! wire decoder's walk of an insert's kept documents (`wire::bson_check`) validates them and
//! counts their levels against [`MAX_BSON_DEPTH`] in one pass, as [`check_request`] counts
//! them.

use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// Levels of documents and arrays a request may have below its top-level document: mongod's
/// `maxBSONDepth` default.
pub const MAX_BSON_DEPTH: usize = 200;

/// Levels a stored document may have, counting the document itself and not counting empty
/// embedded documents or arrays: mongod's documented limit of 100 levels.
pub const MAX_STORED_DEPTH: usize = 100;

/// Components a field path may have (mongod's `FieldPath` limit, `maxBSONDepth`).
pub const MAX_PATH_COMPONENTS: usize = MAX_BSON_DEPTH;

/// How a scan counts levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Every embedded document or array is a level (mongod's BSON validation).
    All,
    /// Empty embedded documents and arrays are not levels (mongod's storage validation).
    NonEmpty,
}

/// What a depth scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// At most the limit.
    Within,
    /// Deeper than the limit (the scan stopped there).
    TooDeep,
    /// Not well-formed BSON: the scan could not follow it.
    Malformed,
}

/// Scans the BSON document `bytes` without recursion and says whether it has more than
/// `max_levels` levels, the document itself being level 1. Code-with-scope scopes count as
/// embedded documents. Linear in the size of the document; allocates one offset per level.
pub fn scan(bytes: &[u8], max_levels: usize, count: Count) -> Depth {
    match scan_inner(bytes, max_levels, count) {
        Some(depth) => depth,
        None => Depth::Malformed,
    }
}

/// The error for a request nested deeper than [`MAX_BSON_DEPTH`] (mongod's BSON validation).
pub fn too_deep_on_the_wire() -> Error {
    Error::new(
        ErrorCode::Overflow,
        "BSONObj exceeds maximum nested object depth",
    )
}

/// Checks a request document: at most [`MAX_BSON_DEPTH`] levels below its top level. Bytes the
/// scan cannot follow are refused here too: the recursive decoder must never be the first to
/// walk past them.
pub fn check_request(bytes: &[u8]) -> Result<()> {
    match scan(bytes, MAX_BSON_DEPTH + 1, Count::All) {
        Depth::Within => Ok(()),
        Depth::TooDeep => Err(too_deep_on_the_wire()),
        Depth::Malformed => Err(Error::new(
            ErrorCode::InvalidBSON,
            "invalid BSON: an element or a nested document does not fit in its document",
        )),
    }
}

/// Checks a stored document before it is decoded: one written before the limits existed, or
/// put there some other way, may be arbitrarily deep, and decoding it must not overflow the
/// stack. Documents deeper than a request may be are refused with mongod's BSON-validation
/// error wherever they would be decoded; dropping the collection removes them.
pub fn check_stored_for_read(bytes: &[u8]) -> Result<()> {
    check_request(bytes)
}

/// What is being written, for the error message mongod gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Insert,
    Update,
}

/// The fewest bytes each level of a document takes: its length (4) and terminator (1), and in
/// the level above it the element that holds it (a type byte and at least a name's NUL, 2);
/// the innermost non-empty level holds an element of at least those 2 bytes instead. A document
/// of `n` levels is at least `7 * n` bytes long.
const MIN_BYTES_PER_LEVEL: usize = 7;

/// Checks an encoded document about to be stored: at most [`MAX_STORED_DEPTH`] levels. The
/// bytes are well-formed BSON (checked on the wire, or encoded here); one too short to hold
/// more levels than that ([`MIN_BYTES_PER_LEVEL`]), as most documents are, is not scanned.
pub fn check_storable(bytes: &[u8], write: Write) -> Result<()> {
    if bytes.len() < MIN_BYTES_PER_LEVEL * (MAX_STORED_DEPTH + 1) {
        return Ok(());
    }
    match scan(bytes, MAX_STORED_DEPTH, Count::NonEmpty) {
        Depth::Within => Ok(()),
        Depth::TooDeep => Err(Error::new(
            ErrorCode::Overflow,
            match write {
                Write::Insert => format!(
                    "cannot insert document because it exceeds {MAX_STORED_DEPTH} levels of nesting"
                ),
                Write::Update => {
                    format!("Document exceeds maximum nesting depth of {MAX_STORED_DEPTH}")
                }
            },
        )),
        Depth::Malformed => Err(Error::internal("cannot store malformed BSON")),
    }
}

/// Checks the number of components of a dotted field path.
pub fn check_path(path: &str) -> Result<()> {
    if path.split('.').nth(MAX_PATH_COMPONENTS).is_some() {
        return Err(Error::new(ErrorCode::Overflow, "FieldPath is too long"));
    }
    Ok(())
}

/// Checks a document built in memory (a pipeline stage's output): at most [`MAX_BSON_DEPTH`]
/// levels below it, walked without recursion. mongod checks the same when it converts a
/// pipeline's document to BSON.
pub fn check_document(doc: &Document) -> Result<()> {
    let mut stack = vec![Children::Document(doc.iter())];
    while let Some(top) = stack.last_mut() {
        let Some(value) = top.next() else {
            stack.pop();
            continue;
        };
        let child = match value {
            Bson::Document(d) => Children::Document(d.iter()),
            Bson::Array(items) => Children::Array(items.iter()),
            _ => continue,
        };
        // The child would be `stack.len()` levels below the top-level document.
        if stack.len() > MAX_BSON_DEPTH {
            return Err(Error::new(
                ErrorCode::Overflow,
                format!(
                    "cannot convert document to BSON because it exceeds the limit of \
                     {MAX_BSON_DEPTH} levels of nesting"
                ),
            ));
        }
        stack.push(child);
    }
    Ok(())
}

/// The values inside one document or array, for the walk above.
enum Children<'a> {
    Document(bson::document::Iter<'a>),
    Array(std::slice::Iter<'a, Bson>),
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a Bson;

    fn next(&mut self) -> Option<&'a Bson> {
        match self {
            Children::Document(it) => it.next().map(|(_, v)| v),
            Children::Array(it) => it.next(),
        }
    }
}

fn read_i32(bytes: &[u8], at: usize) -> Option<usize> {
    let raw: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    usize::try_from(i32::from_le_bytes(raw)).ok()
}

/// The offset just past the NUL that ends the C string at `at`.
fn skip_cstring(bytes: &[u8], at: usize) -> Option<usize> {
    let len = bytes.get(at..)?.iter().position(|&b| b == 0)?;
    at.checked_add(len)?.checked_add(1)
}

/// The offset just past a length-prefixed string at `at`.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let len = read_i32(bytes, at)?;
    if len < 1 {
        return None;
    }
    at.checked_add(4)?.checked_add(len)
}

/// `None` when malformed. `ends` holds, per open level, the offset just past its document.
fn scan_inner(bytes: &[u8], max_levels: usize, count: Count) -> Option<Depth> {
    let total = read_i32(bytes, 0)?;
    if total < 5 || total > bytes.len() {
        return None;
    }
    let mut ends: Vec<usize> = vec![total];
    // Levels that count: with `Count::NonEmpty`, the empty documents on the stack do not.
    let mut counted: Vec<bool> = vec![true];
    let mut levels = 1usize;
    if levels > max_levels {
        return Some(Depth::TooDeep);
    }
    let mut pos = 4usize;
    while let Some(&end) = ends.last() {
        let kind = *bytes.get(pos)?;
        if kind == 0 {
            if pos.checked_add(1)? != end {
                return None;
            }
            pos = end;
            ends.pop();
            if counted.pop() == Some(true) {
                levels -= 1;
            }
            continue;
        }
        let value = skip_cstring(bytes, pos + 1)?;
        let next = match kind {
            0x01 | 0x09 | 0x11 | 0x12 => value.checked_add(8)?,
            0x02 | 0x0D | 0x0E => skip_string(bytes, value)?,
            0x03 | 0x04 => {
                let len = read_i32(bytes, value)?;
                let inner_end = value.checked_add(len)?;
                if len < 5 || inner_end > end {
                    return None;
                }
                let counts = count == Count::All || len > 5;
                if counts {
                    levels += 1;
                    if levels > max_levels {
                        return Some(Depth::TooDeep);
                    }
                }
                ends.push(inner_end);
                counted.push(counts);
                pos = value + 4;
                continue;
            }
            0x05 => {
                read_i32(bytes, value).and_then(|len| value.checked_add(5)?.checked_add(len))?
            }
            0x06 | 0x0A | 0x7F | 0xFF => value,
            0x07 => value.checked_add(12)?,
            0x08 => value.checked_add(1)?,
            0x0B => skip_cstring(bytes, skip_cstring(bytes, value)?)?,
            0x0C => skip_string(bytes, value)?.checked_add(12)?,
            0x0F => {
                // [total i32][code string][scope document]: the scope is one level deeper.
                let len = read_i32(bytes, value)?;
                let whole_end = value.checked_add(len)?;
                let scope = skip_string(bytes, value.checked_add(4)?)?;
                let scope_len = read_i32(bytes, scope)?;
                if whole_end > end || scope.checked_add(scope_len)? != whole_end || scope_len < 5 {
                    return None;
                }
                let counts = count == Count::All || scope_len > 5;
                if counts {
                    levels += 1;
                    if levels > max_levels {
                        return Some(Depth::TooDeep);
                    }
                }
                ends.push(whole_end);
                counted.push(counts);
                pos = scope + 4;
                continue;
            }
            0x10 => value.checked_add(4)?,
            0x13 => value.checked_add(16)?,
            _ => return None,
        };
        if next > end {
            return None;
        }
        pos = next;
    }
    Some(Depth::Within)
}

#[cfg(test)]
mod tests;
