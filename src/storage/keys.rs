//! Order-preserving key encodings: BSON values, document keys and index keys as byte strings
//! whose memcmp order is MongoDB's BSON comparison order.
//!
//! Owns: the byte layout of every key in the `Documents` and `Indexes` keyspaces, and the
//! encoding of a single BSON value. Does not own: decoding (keys are never decoded; the engine
//! stores what it needs, e.g. the `_id`, in the value), collation, or the comparator used by
//! queries (`query::compare`), which this encoding must agree with.
//!
//! # Value layout
//!
//! `encode_value` writes one type-bracket tag byte, then a body. Tags follow mongod's canonical
//! type order (the same order as its KeyString format):
//!
//! | bracket            | body                                                                 |
//! |--------------------|----------------------------------------------------------------------|
//! | MinKey             | —                                                                    |
//! | Undefined          | — (mongod orders undefined just below null; they are not equal)      |
//! | Null               | —                                                                    |
//! | numbers            | see below                                                            |
//! | String, Symbol     | escaped bytes: `00` → `00 FF`, then terminator `00 00`               |
//! | Object             | per field: tag, escaped name, body; then `00`                        |
//! | Array              | per element: tag, body; then `00`                                    |
//! | Binary             | `u32` BE length, subtype, bytes (mongod: length, then subtype+bytes) |
//! | ObjectId           | 12 bytes                                                             |
//! | Boolean            | `00` false, `01` true                                                |
//! | DateTime           | sign-flipped BE `i64` millis                                         |
//! | Timestamp          | BE `u32` time, BE `u32` increment (mongod compares them as `u64`)    |
//! | Regex              | escaped pattern, escaped flags                                       |
//! | DbPointer          | `u32` BE value size, raw BSON value (mongod: size, then memcmp)      |
//! | JavaScriptCode     | escaped code                                                         |
//! | CodeWithScope      | escaped code, scope as an Object body                                |
//! | MaxKey             | —                                                                    |
//!
//! Object fields compare as mongod does: type bracket, then field name, then value; a document
//! that is a prefix of another sorts first (terminator `00` is below every tag).
//!
//! **Numbers** (Int32, Int64, Double, Decimal128) share one bracket and are ordered by exact
//! mathematical value; equal values encode identically whatever their type. The body is:
//! 1. the order-preserving bytes of the nearest `f64` (`-0.0` is `0.0`; every NaN is eight
//!    `00` bytes, below `-inf`, as mongod puts NaN below all numbers);
//! 2. a class byte saying whether the exact value is below (`01`), equal to (`02`) or above
//!    (`03`) that double;
//! 3. only when not equal: the exact value as a normalized decimal (BE sign-flipped `i16`
//!    exponent, digits as `01..=0A`, terminator `00`), bitwise inverted if negative, so values
//!    that round to the same double (Int64 beyond 2^53, Decimal128) still order exactly.
//!
//! mongod orders numbers this way in both its query comparator and its index keys, and so does
//! `query::compare`: mongod's `compareDecimalToDouble` (`base/compare_numbers.h`) rounds the
//! decimal toward -inf and counts an inexact conversion as greater, and its KeyString V1 stores
//! a decimal continuation after the double, so both order by exact value: `NumberDecimal("0.1")` sorts below the double
//! `0.1` (0.1000000000000000055511…) and `{val: 9.99}` does not match `NumberDecimal("9.99")`.
//! Non-canonical Decimal128 coefficients (> 10^34 - 1) are zero, as the IEEE standard says; the
//! bits are read by `query::decimal::Parts`, the one decoder of Decimal128.
//! The property tests in `keys_tests.rs` check memcmp order against `compare_values` for every
//! type; no difference from mongod's order is known.
//!
//! Every value encoding is prefix-free (no encoding is a proper prefix of another), so a
//! concatenation of encodings orders as the tuple of values, and the bitwise inversion used for
//! descending index fields exactly reverses the order.

use crate::query::decimal::Parts;
use bson::{Bson, Decimal128, Document};
use std::cmp::Ordering;

// Type-bracket tags, ascending. Gaps leave room for brackets mongod may add.
const TAG_MIN_KEY: u8 = 0x0A;
const TAG_UNDEFINED: u8 = 0x0F;
const TAG_NULL: u8 = 0x14;
const TAG_NUMBER: u8 = 0x1E;
const TAG_STRING: u8 = 0x3C;
const TAG_OBJECT: u8 = 0x46;
const TAG_ARRAY: u8 = 0x50;
const TAG_BINARY: u8 = 0x5A;
const TAG_OBJECT_ID: u8 = 0x64;
const TAG_BOOLEAN: u8 = 0x6E;
const TAG_DATE_TIME: u8 = 0x78;
const TAG_TIMESTAMP: u8 = 0x82;
const TAG_REGEX: u8 = 0x8C;
const TAG_DB_POINTER: u8 = 0x96;
const TAG_CODE: u8 = 0xA0;
const TAG_CODE_WITH_SCOPE: u8 = 0xAA;
const TAG_MAX_KEY: u8 = 0xF0;

/// Ends an Object or Array body; below every tag.
const END_OF_COMPOSITE: u8 = 0x00;

const CLASS_BELOW: u8 = 0x01;
const CLASS_EXACT: u8 = 0x02;
const CLASS_ABOVE: u8 = 0x03;

/// Longest encoding of an id ([`encode_id`]): a collection prefix is at most this long.
pub const MAX_ID_LEN: usize = 9;

/// Ids up to this value are one byte long; above, a byte of `0xF7 + n` precedes their `n`
/// big-endian bytes.
const ONE_BYTE_IDS: u64 = 0xF7;

/// Sort direction of one index field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Ascending,
    Descending,
}

/// Appends the order-preserving encoding of `value` to `out`.
pub fn encode_value(value: &Bson, out: &mut Vec<u8>) {
    out.push(tag(value));
    encode_body(value, out);
}

/// Appends the encoding of `value` with every byte inverted: memcmp order is reversed.
pub fn encode_value_descending(value: &Bson, out: &mut Vec<u8>) {
    let start = out.len();
    encode_value(value, out);
    for byte in out.iter_mut().skip(start) {
        *byte = !*byte;
    }
}

/// Appends `value` in the given direction.
pub fn encode_value_directed(value: &Bson, direction: Direction, out: &mut Vec<u8>) {
    match direction {
        Direction::Ascending => encode_value(value, out),
        Direction::Descending => encode_value_descending(value, out),
    }
}

/// An id (of a collection or an index) as the start of a key: order-preserving and
/// prefix-free, and short for the small ids a catalog hands out. Ids up to `0xF7` are their one
/// byte; a larger id is a byte of `0xF7 + n` followed by its `n` significant big-endian bytes
/// (`0xF8` for one byte up to `0xFF` for eight), so a longer encoding always sorts after a
/// shorter one. Catalog ids start at 1, so no key of this layout starts with `00`, the first
/// byte of every key of the earlier layout (eight big-endian bytes; `engine::layout`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EncodedId {
    bytes: [u8; MAX_ID_LEN],
    len: u8,
}

impl std::ops::Deref for EncodedId {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }
}

impl std::fmt::Debug for EncodedId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x?}", &**self)
    }
}

/// `id`'s encoding at the start of a key ([`EncodedId`]).
pub fn encode_id(id: u64) -> EncodedId {
    let mut bytes = [0u8; MAX_ID_LEN];
    let (head, len) = if id <= ONE_BYTE_IDS {
        (id as u8, 1)
    } else {
        let significant = 8 - (id.leading_zeros() / 8) as usize;
        let be = id.to_be_bytes();
        for (to, from) in bytes
            .iter_mut()
            .skip(1)
            .zip(be.iter().skip(8 - significant))
        {
            *to = *from;
        }
        (
            ONE_BYTE_IDS as u8 + significant as u8,
            1 + significant as u8,
        )
    };
    if let Some(first) = bytes.first_mut() {
        *first = head;
    }
    EncodedId { bytes, len }
}

/// The id `key` starts with ([`encode_id`]) and the rest of the key; `None` when `key` does not
/// start with a whole id.
pub fn split_id(key: &[u8]) -> Option<(u64, &[u8])> {
    let (&first, rest) = key.split_first()?;
    if u64::from(first) <= ONE_BYTE_IDS {
        return Some((u64::from(first), rest));
    }
    let significant = usize::from(first) - ONE_BYTE_IDS as usize;
    let (be, rest) = rest.split_at_checked(significant)?;
    let id = be.iter().fold(0u64, |id, byte| id << 8 | u64::from(*byte));
    Some((id, rest))
}

/// The key prefix shared by every document and index entry of one collection.
pub fn collection_prefix(collection_id: u64) -> EncodedId {
    encode_id(collection_id)
}

/// `key` without its collection prefix; `None` when it does not start with one.
pub fn strip_collection_prefix(key: &[u8]) -> Option<&[u8]> {
    split_id(key).map(|(_, rest)| rest)
}

/// The prefix shared by every entry of one index: collection id, then index id.
pub fn index_prefix(collection_id: u64, index_id: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 * MAX_ID_LEN);
    key.extend_from_slice(&collection_prefix(collection_id));
    key.extend_from_slice(&encode_id(index_id));
    key
}

/// Key of a document in the `Documents` keyspace: collection prefix, then the encoded `_id`.
/// In a partitioned collection the encoded shard-key value follows
/// (`engine::record_key`), so this key is then the prefix of every document with that `_id`.
pub fn document_key(collection_id: u64, id: &Bson) -> Vec<u8> {
    let mut key = Vec::with_capacity(MAX_ID_LEN + 16);
    key.extend_from_slice(&collection_prefix(collection_id));
    encode_value(id, &mut key);
    key
}

/// Key of an entry in the `Indexes` keyspace: index prefix, each field value in its direction,
/// then the document's `record` (its key without the collection prefix: the encoded `_id`,
/// followed in a partitioned collection by the encoded shard-key value), which makes entries
/// of equal values distinct and orders them by `_id`. Because value encodings are prefix-free,
/// a range over `index_prefix ++ encoded leading values` finds every entry with those leading
/// values.
pub fn index_key(
    collection_id: u64,
    index_id: u64,
    values: &[(Bson, Direction)],
    record: &[u8],
) -> Vec<u8> {
    let mut key = index_prefix(collection_id, index_id);
    for (value, direction) in values {
        encode_value_directed(value, *direction, &mut key);
    }
    key.extend_from_slice(record);
    key
}

/// The smallest key greater than every key starting with `prefix`, for an exclusive range end;
/// `None` when no such key exists (the prefix is empty or all `FF`), i.e. the range is unbounded.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The type-bracket byte every encoding of `value`'s bracket starts with (ascending): all
/// values of one bracket lie between it and the next tag.
pub fn type_tag(value: &Bson) -> u8 {
    tag(value)
}

/// Appends the bytes every encoded string starting with `prefix` starts with: the escaped
/// prefix without the terminator. Callers put the string tag first.
pub fn encode_string_prefix(prefix: &str, out: &mut Vec<u8>) {
    for &byte in prefix.as_bytes() {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
}

fn tag(value: &Bson) -> u8 {
    match value {
        Bson::MinKey => TAG_MIN_KEY,
        Bson::Undefined => TAG_UNDEFINED,
        Bson::Null => TAG_NULL,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => TAG_NUMBER,
        Bson::String(_) | Bson::Symbol(_) => TAG_STRING,
        Bson::Document(_) => TAG_OBJECT,
        Bson::Array(_) => TAG_ARRAY,
        Bson::Binary(_) => TAG_BINARY,
        Bson::ObjectId(_) => TAG_OBJECT_ID,
        Bson::Boolean(_) => TAG_BOOLEAN,
        Bson::DateTime(_) => TAG_DATE_TIME,
        Bson::Timestamp(_) => TAG_TIMESTAMP,
        Bson::RegularExpression(_) => TAG_REGEX,
        Bson::DbPointer(_) => TAG_DB_POINTER,
        Bson::JavaScriptCode(_) => TAG_CODE,
        Bson::JavaScriptCodeWithScope(_) => TAG_CODE_WITH_SCOPE,
        Bson::MaxKey => TAG_MAX_KEY,
    }
}

/// Appends the body of `value`. Documents and arrays are walked with an explicit stack, not
/// recursion, so no nesting depth can exhaust the thread's stack.
fn encode_body(value: &Bson, out: &mut Vec<u8>) {
    let mut open: Vec<Composite<'_>> = Vec::new();
    if let Some(composite) = encode_scalar_or_open(value, out) {
        open.push(composite);
    }
    while let Some(top) = open.last_mut() {
        let next = match top {
            Composite::Document(fields) => fields.next().map(|(name, value)| {
                out.push(tag(value));
                encode_string(name, out);
                value
            }),
            Composite::Array(items) => items.next().inspect(|value| out.push(tag(value))),
        };
        match next {
            Some(value) => {
                if let Some(composite) = encode_scalar_or_open(value, out) {
                    open.push(composite);
                }
            }
            None => {
                out.push(END_OF_COMPOSITE);
                open.pop();
            }
        }
    }
}

/// A document or array whose elements are being encoded.
enum Composite<'a> {
    Document(bson::document::Iter<'a>),
    Array(std::slice::Iter<'a, Bson>),
}

/// Appends the body of a scalar, or what precedes a composite's elements and returns the
/// composite for the caller to walk (its elements, then `END_OF_COMPOSITE`).
fn encode_scalar_or_open<'a>(value: &'a Bson, out: &mut Vec<u8>) -> Option<Composite<'a>> {
    match value {
        Bson::MinKey | Bson::Undefined | Bson::Null | Bson::MaxKey => {}
        Bson::Boolean(b) => out.push(u8::from(*b)),
        Bson::Int32(i) => encode_f64_exact(f64::from(*i), out),
        Bson::Int64(i) => encode_i64(*i, out),
        Bson::Double(d) => encode_f64_exact(*d, out),
        Bson::Decimal128(d) => encode_decimal128(d, out),
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => encode_string(s, out),
        Bson::Document(doc) => return Some(Composite::Document(doc.iter())),
        Bson::Array(items) => return Some(Composite::Array(items.iter())),
        Bson::Binary(bin) => {
            let len = u32::try_from(bin.bytes.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&len.to_be_bytes());
            out.push(u8::from(bin.subtype));
            out.extend_from_slice(&bin.bytes);
        }
        Bson::ObjectId(oid) => out.extend_from_slice(&oid.bytes()),
        Bson::DateTime(dt) => out.extend_from_slice(&sign_flip_i64(dt.timestamp_millis())),
        Bson::Timestamp(ts) => {
            out.extend_from_slice(&ts.time.to_be_bytes());
            out.extend_from_slice(&ts.increment.to_be_bytes());
        }
        Bson::RegularExpression(regex) => {
            encode_string(&regex.pattern, out);
            encode_string(&regex.options, out);
        }
        Bson::DbPointer(_) => encode_raw_value(value, out),
        Bson::JavaScriptCodeWithScope(code) => {
            encode_string(&code.code, out);
            return Some(Composite::Document(code.scope.iter()));
        }
    }
    None
}

/// Escapes `00` as `00 FF` and terminates with `00 00`, so a string sorts before its
/// extensions and embedded NULs order as mongod's length-aware byte comparison does.
fn encode_string(s: &str, out: &mut Vec<u8>) {
    for &byte in s.as_bytes() {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// mongod orders DbPointers by value size, then by the raw value bytes. The bson crate keeps
/// the fields private, so the raw value is taken from a serialized one-field document
/// `{"": value}`: 4-byte length, type byte, empty name's NUL, value, document terminator.
fn encode_raw_value(value: &Bson, out: &mut Vec<u8>) {
    let mut doc = Document::new();
    doc.insert("", value.clone());
    let mut raw = Vec::new();
    let value_bytes = match doc.to_writer(&mut raw) {
        Ok(()) => raw.get(6..raw.len().saturating_sub(1)).unwrap_or_default(),
        Err(_) => &[],
    };
    let len = u32::try_from(value_bytes.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(value_bytes);
}

fn sign_flip_i64(value: i64) -> [u8; 8] {
    ((value as u64) ^ (1 << 63)).to_be_bytes()
}

/// Order-preserving bytes of a double: `-0.0` is `0.0`; every NaN is all zeros, which no
/// non-NaN double produces and which sorts below `-inf`.
fn f64_order_bytes(d: f64) -> [u8; 8] {
    if d.is_nan() {
        return [0; 8];
    }
    let d = if d == 0.0 { 0.0 } else { d };
    let bits = d.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    };
    ordered.to_be_bytes()
}

/// A number that is exactly the double `d` (Int32, Double, and others that happen to be).
fn encode_f64_exact(d: f64, out: &mut Vec<u8>) {
    out.extend_from_slice(&f64_order_bytes(d));
    out.push(CLASS_EXACT);
}

/// A number that rounds to `nearest` but may differ from it; `exact` is the true value.
fn encode_rounded(
    nearest: f64,
    class: Ordering,
    exact: impl FnOnce() -> ExactDecimal,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(&f64_order_bytes(nearest));
    match class {
        Ordering::Equal => out.push(CLASS_EXACT),
        Ordering::Less => {
            out.push(CLASS_BELOW);
            exact().encode(out);
        }
        Ordering::Greater => {
            out.push(CLASS_ABOVE);
            exact().encode(out);
        }
    }
}

fn encode_i64(i: i64, out: &mut Vec<u8>) {
    // `as` rounds to nearest (ties to even); the result is integral with |d| <= 2^63, so it
    // converts to i128 exactly.
    let nearest = i as f64;
    let class = i128::from(i).cmp(&(nearest as i128));
    encode_rounded(nearest, class, || ExactDecimal::from_i64(i), out);
}

fn encode_decimal128(d: &Decimal128, out: &mut Vec<u8>) {
    match Parts::of(d) {
        Parts::NaN => encode_f64_exact(f64::NAN, out),
        Parts::Infinity { negative } => encode_f64_exact(
            if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            },
            out,
        ),
        Parts::Finite {
            negative,
            coefficient,
            exponent,
        } => {
            let exact = ExactDecimal::new(negative, &coefficient.to_string(), exponent);
            // Rust's float parser rounds correctly to nearest (out-of-range becomes ±inf or 0).
            let literal = format!(
                "{}{coefficient}e{exponent}",
                if negative { "-" } else { "" }
            );
            let nearest = literal.parse::<f64>().unwrap_or(f64::NAN);
            let class = if nearest.is_infinite() {
                if nearest > 0.0 {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            } else {
                exact.cmp(&ExactDecimal::from_f64(nearest))
            };
            encode_rounded(nearest, class, || exact, out);
        }
    }
}

/// An exact decimal: `±0.d1d2d3… × 10^(exponent+1)`, normalized (no leading or trailing zero
/// digits; zero has no digits). Used only to order numbers that differ from their nearest
/// double.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ExactDecimal {
    negative: bool,
    /// Position of the first significant digit: the value is `d1.d2d3… × 10^exponent`.
    exponent: i32,
    digits: Vec<u8>,
}

impl ExactDecimal {
    /// `±digits × 10^exponent` where `digits` is an ASCII decimal integer.
    fn new(negative: bool, digits: &str, exponent: i32) -> Self {
        let significant = digits.trim_start_matches('0');
        let len = i32::try_from(significant.len()).unwrap_or(i32::MAX);
        let digits: Vec<u8> = significant
            .trim_end_matches('0')
            .bytes()
            .map(|b| b.wrapping_sub(b'0'))
            .collect();
        if digits.is_empty() {
            return ExactDecimal {
                negative: false,
                exponent: 0,
                digits,
            };
        }
        ExactDecimal {
            negative,
            exponent: exponent.saturating_add(len - 1),
            digits,
        }
    }

    fn from_i64(i: i64) -> Self {
        ExactDecimal::new(i < 0, &i.unsigned_abs().to_string(), 0)
    }

    /// The exact decimal expansion of a finite double. `d = m × 2^e` with `m < 2^53` has at most
    /// `17 + 0.7·|e|` significant decimal digits (767 at most), and formatting with at least
    /// that many digits after the point is exact.
    fn from_f64(d: f64) -> Self {
        let biased = i32::try_from((d.to_bits() >> 52) & 0x7FF).unwrap_or(0);
        let e = if biased == 0 { -1074 } else { biased - 1075 };
        let precision = 17 + (7 * e.abs() + 9) / 10;
        let formatted = format!("{:.*e}", usize::try_from(precision).unwrap_or(800), d.abs());
        let (mantissa, exponent) = formatted.split_once('e').unwrap_or((&formatted, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        // `mantissa` is `d.ddd…`: its integer `dddd…` is scaled by 10^-precision.
        ExactDecimal::new(d < 0.0, &digits, exponent - precision)
    }

    /// Sign-flipped BE `i16` exponent (clamped; decimal128 needs -6176..=6144), digits as
    /// `01..=0A`, terminator `00`; all inverted when negative. Prefix-free. Callers never
    /// encode zero, and all values sharing a class byte have one sign.
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let exponent = i16::try_from(self.exponent).unwrap_or(if self.exponent < 0 {
            i16::MIN
        } else {
            i16::MAX
        });
        out.extend_from_slice(&((exponent as u16) ^ 0x8000).to_be_bytes());
        out.extend(self.digits.iter().map(|d| d + 1));
        out.push(0);
        if self.negative {
            for byte in out.iter_mut().skip(start) {
                *byte = !*byte;
            }
        }
    }
}

impl Ord for ExactDecimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let sign = |d: &ExactDecimal| match (d.digits.is_empty(), d.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        };
        let (a, b) = (sign(self), sign(other));
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let magnitude = self
            .exponent
            .cmp(&other.exponent)
            .then_with(|| self.digits.cmp(&other.digits));
        if a < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialOrd for ExactDecimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
