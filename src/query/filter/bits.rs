//! The bit-test operators `$bitsAllSet`, `$bitsAllClear`, `$bitsAnySet` and `$bitsAnyClear`, as
//! mongod 7.0 parses them (`parseBitTest` and `parseBitPositionsArray` in
//! `matcher/expression_parser.cpp`, with `BSONElement::parseIntegerElementToLong`'s errors) and
//! matches one value (`BitTestMatchExpression` in `matcher/expression_leaf.cpp`).
//!
//! Owns: reading the operand — a non-negative integral number (a bitmask), a BinData (a bitmask
//! of any length: byte 0 bit 0 is position 0) or an array of bit positions — and testing one
//! value. Does not own: array traversal and `$not` (the filter applies them as to every leaf
//! predicate) or index use (there is none: these predicates are answered by scanning).
//!
//! Like mongod, the operand is kept in two forms:
//! - a 64-bit mask for numbers, which are tested as two's complement `i64`s, sign-extended: a
//!   position of 64 or more tests bit 63. int32 and int64 values are tested; a double only when
//!   it is integral and in range (NaN, infinities, fractions and out-of-range doubles never
//!   match); a decimal is converted as `Decimal128::toLong` converts it: rounded to the nearest
//!   integer, ties to even, and NaN, infinities and values out of range read as `i64::MIN`.
//!   mongod builds the mask from a BinData operand's first 8 bytes through `char`, which is
//!   signed on x86-64: a byte of 0x80 or more also sets every higher bit of the mask. A nonzero
//!   byte after the 8th sets bit 63.
//! - the positions for BinData values, which are tested as bit strings of their own length
//!   (positions past the end are clear). As in mongod, the bytes are those stored: a BinData of
//!   the old binary subtype (2) starts with its 4-byte inner length.
//!
//! Other types never match.

use crate::error::{Error, Result};
use crate::query::decimal;
use crate::query::path;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson};

/// Which of the four operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    AllSet,
    AllClear,
    AnySet,
    AnyClear,
}

impl BitOp {
    /// The operator a query names, if it is one of the four.
    pub(crate) fn from_name(name: &str) -> Option<BitOp> {
        match name {
            "$bitsAllSet" => Some(BitOp::AllSet),
            "$bitsAllClear" => Some(BitOp::AllClear),
            "$bitsAnySet" => Some(BitOp::AnySet),
            "$bitsAnyClear" => Some(BitOp::AnyClear),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            BitOp::AllSet => "$bitsAllSet",
            BitOp::AllClear => "$bitsAllClear",
            BitOp::AnySet => "$bitsAnySet",
            BitOp::AnyClear => "$bitsAnyClear",
        }
    }
}

/// One compiled bit test.
#[derive(Debug, Clone)]
pub(crate) struct BitTest {
    op: BitOp,
    /// What numbers are tested against.
    mask: u64,
    /// What BinData values are tested against.
    positions: Positions,
}

#[derive(Debug, Clone)]
enum Positions {
    /// An array operand's positions, in its order.
    List(Vec<u32>),
    /// A bitmask operand, little-endian: a number's 8 bytes or a BinData's bytes.
    Bytes(Vec<u8>),
}

/// 2^63, the first double above every `i64`.
const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;

impl BitTest {
    /// Reads `{<path>: {<op>: operand}}`; errors carry mongod's codes and messages.
    pub(crate) fn parse(op: BitOp, path: &str, operand: &Bson) -> Result<BitTest> {
        match operand {
            Bson::Array(items) => {
                let list = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| position(&i.to_string(), item))
                    .collect::<Result<Vec<u32>>>()?;
                // Positions past 63 test the sign bit of a sign-extended number.
                let mask = list.iter().fold(0u64, |m, &p| m | (1u64 << p.min(63)));
                Ok(BitTest {
                    op,
                    mask,
                    positions: Positions::List(list),
                })
            }
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                let label = op.name();
                let n = integer(label, operand).map_err(Error::failed_to_parse)?;
                let mask = u64::try_from(n).map_err(|_| {
                    Error::failed_to_parse(format!(
                        "Expected a non-negative number in: {label}: {}",
                        shown(operand)
                    ))
                })?;
                Ok(BitTest {
                    op,
                    mask,
                    positions: Positions::Bytes(mask.to_le_bytes().to_vec()),
                })
            }
            Bson::Binary(binary) => {
                let bytes = stored_bytes(binary);
                Ok(BitTest {
                    op,
                    mask: binary_mask(&bytes),
                    positions: Positions::Bytes(bytes),
                })
            }
            other => Err(Error::bad_value(format!(
                "{path} takes an Array, a number, or a BinData but received: {}: {}",
                op.name(),
                shown(other)
            ))),
        }
    }

    /// The operator's name, for plan-cache shapes.
    pub(crate) fn name(&self) -> &'static str {
        self.op.name()
    }

    /// Whether one value (an array's element, or a whole non-array value) passes the test.
    pub(crate) fn matches(&self, value: &Bson) -> bool {
        match value {
            Bson::Binary(binary) if binary.subtype == BinarySubtype::BinaryOld => {
                self.test_bytes(&stored_bytes(binary))
            }
            Bson::Binary(binary) => self.test_bytes(&binary.bytes),
            other => document_long(other).is_some_and(|n| self.test_long(n)),
        }
    }

    fn test_long(&self, n: i64) -> bool {
        let value = u64::from_le_bytes(n.to_le_bytes());
        let mask = self.mask;
        match self.op {
            BitOp::AllSet => (value & mask) == mask,
            BitOp::AllClear => (!value & mask) == mask,
            BitOp::AnySet => (value & mask) != 0,
            BitOp::AnyClear => (!value & mask) != 0,
        }
    }

    fn test_bytes(&self, value: &[u8]) -> bool {
        match &self.positions {
            Positions::List(list) => {
                let set = |p: &u32| {
                    let byte = usize::try_from(p / 8).ok().and_then(|i| value.get(i));
                    byte.is_some_and(|b| (b >> (p % 8)) & 1 == 1)
                };
                match self.op {
                    BitOp::AllSet => list.iter().all(set),
                    BitOp::AllClear => !list.iter().any(set),
                    BitOp::AnySet => list.iter().any(set),
                    BitOp::AnyClear => !list.iter().all(set),
                }
            }
            Positions::Bytes(mask) => {
                // The value's byte under each mask byte; bytes past its end are clear.
                let pairs = || {
                    mask.iter()
                        .enumerate()
                        .map(|(i, m)| (value.get(i).copied().unwrap_or(0), *m))
                };
                match self.op {
                    BitOp::AllSet => pairs().all(|(v, m)| (v & m) == m),
                    BitOp::AllClear => pairs().all(|(v, m)| (v & m) == 0),
                    BitOp::AnySet => pairs().any(|(v, m)| (v & m) != 0),
                    BitOp::AnyClear => pairs().any(|(v, m)| (v & m) != m),
                }
            }
        }
    }
}

/// One element of a positions array (`parseIntegerElementToNonNegativeInt`): 2 BadValue.
fn position(label: &str, item: &Bson) -> Result<u32> {
    let reason = integer(label, item).and_then(|n| {
        let int = i32::try_from(n)
            .map_err(|_| format!("Cannot represent {label}: {} in an int", shown(item)))?;
        u32::try_from(int).map_err(|_| {
            format!(
                "Expected a non-negative number in: {label}: {}",
                shown(item)
            )
        })
    });
    reason.map_err(|r| Error::bad_value(format!("Failed to parse bit position. {r}")))
}

/// `BSONElement::parseIntegerElementToLong` of the element `label: value`: the integer, or the
/// reason it is not one.
fn integer(label: &str, value: &Bson) -> std::result::Result<i64, String> {
    let element = || format!("{label}: {}", shown(value));
    match value {
        Bson::Int32(i) => Ok(i64::from(*i)),
        Bson::Int64(i) => Ok(*i),
        Bson::Double(d) => {
            if d.is_nan() {
                Err(format!(
                    "Expected an integer, but found NaN in: {}",
                    element()
                ))
            } else if *d >= TWO_TO_63 || *d < -TWO_TO_63 {
                Err(format!(
                    "Cannot represent as a 64-bit integer: {}",
                    element()
                ))
            } else if d.fract() != 0.0 {
                Err(format!("Expected an integer: {}", element()))
            } else {
                // In range and integral: the conversion is exact.
                Ok(*d as i64)
            }
        }
        // `toLongExact`: any rounding, NaN, infinity or overflow is refused.
        Bson::Decimal128(d) => match decimal::nearest_i64(d) {
            Some((n, true)) => Ok(n),
            _ => Err(format!(
                "Cannot represent as a 64-bit integer: {}",
                element()
            )),
        },
        _ => Err(format!("Expected a number in: {}", element())),
    }
}

/// A BinData's bytes as stored, which mongod tests: the old binary subtype (2) keeps its inner
/// length prefix there, where the bson crate strips it.
fn stored_bytes(binary: &Binary) -> Vec<u8> {
    if binary.subtype != BinarySubtype::BinaryOld {
        return binary.bytes.clone();
    }
    let inner = i32::try_from(binary.bytes.len()).unwrap_or(i32::MAX);
    let mut bytes = Vec::with_capacity(binary.bytes.len().saturating_add(4));
    bytes.extend_from_slice(&inner.to_le_bytes());
    bytes.extend_from_slice(&binary.bytes);
    bytes
}

/// The 64-bit mask mongod builds from a BinData operand (see the module comment).
fn binary_mask(bytes: &[u8]) -> u64 {
    let mut mask = 0u64;
    for (i, &byte) in bytes.iter().enumerate() {
        if byte == 0 {
            continue;
        }
        if i < 8 {
            // `static_cast<uint64_t>(char)`: sign-extended where `char` is signed.
            let extended = u64::from_le_bytes(i64::from(i8::from_le_bytes([byte])).to_le_bytes());
            mask |= extended << (8 * i);
        } else {
            mask |= 1 << 63;
        }
    }
    mask
}

/// A document's number as the test sees it (`None`: it never matches).
fn document_long(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) => {
            let integral = !d.is_nan() && *d < TWO_TO_63 && *d >= -TWO_TO_63 && d.fract() == 0.0;
            integral.then_some(*d as i64)
        }
        Bson::Decimal128(d) => Some(decimal::nearest_i64(d).map_or(i64::MIN, |(n, _)| n)),
        _ => None,
    }
}

/// A value as `BSONElement::toString` prints it in these errors.
fn shown(value: &Bson) -> String {
    match value {
        Bson::Double(d) => double_nice(*d),
        Bson::Decimal128(d) => d.to_string(),
        other => path::render(other),
    }
}

/// `StringBuilder::appendDoubleNice`: C's `%.16g`, then `.0` when the text has no `.`, `E` or
/// `N` (so `-1.0`, `1e+18.0`, `nan.0`).
pub(super) fn double_nice(d: f64) -> String {
    let mut text = g16(d);
    if !text.contains(['.', 'E', 'N']) {
        text.push_str(".0");
    }
    text
}

/// C's `%.16g` as glibc prints it (`-nan` for a negative NaN).
fn g16(d: f64) -> String {
    if d.is_nan() && d.is_sign_negative() {
        return "-nan".to_owned();
    }
    crate::query::expr::format_g_digits(d, 16)
}
