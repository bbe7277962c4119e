//! mongod's hash of a BSON value (`BSONElementHasher::hash64`, hash version 0, seed 0): the key
//! a hashed index stores and `$toHashedIndexKey` returns. Pure.
//!
//! The hash is MD5 over the seed (int32, little-endian) and then, for the value and every
//! element nested in it: its canonical type (the type bracket, int32 little-endian), its field
//! name with its NUL below the top level, and its value — numbers as their 64-bit integer value
//! (so `1`, `1L`, `1.5` and `NumberDecimal("1")` share a hash), other scalars as the bytes of
//! their BSON encoding, documents, arrays and a code-with-scope's scope as their elements
//! followed by an end marker (canonical type 0, no name, no value). The first 8 bytes of the
//! digest, read little-endian, are the hash.
//!
//! Owns: the hash. Does not own: which values an index hashes (`engine::documents::hashed`).

use crate::error::{Error, Result};
use crate::query::compare::type_bracket;
use crate::query::decimal;
use bson::{Bson, Document};
use md5::{Digest, Md5};

/// The only seed mongod's hashed indexes use.
const SEED: i32 = 0;

/// `2^63` as a double: mongod's `safeNumberLongForHash` maps exactly this value to `i64::MIN`
/// (the wrap-around of the cast older servers made), unlike every other value at or above it.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// mongod's `BSONElementHasher::hash64(value, 0)`.
pub fn hash64(value: &Bson) -> Result<i64> {
    let mut md5 = Md5::new();
    md5.update(SEED.to_le_bytes());
    feed_element(&mut md5, value)?;
    let digest = md5.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
    Ok(i64::from_le_bytes(first))
}

/// Feeds the top-level value and every element nested in it into `md5`. Iterative: nesting
/// is client input (bounded by the depth limits, walked with an explicit stack all the same).
/// `None` on the stack is the end marker of a document, array or scope.
fn feed_element(md5: &mut Md5, value: &Bson) -> Result<()> {
    let mut stack: Vec<Option<(Option<String>, &Bson)>> = vec![Some((None, value))];
    while let Some(step) = stack.pop() {
        let Some((name, element)) = step else {
            md5.update(0i32.to_le_bytes());
            continue;
        };
        md5.update(type_bracket(element).to_le_bytes());
        if let Some(name) = &name {
            md5.update(name.as_bytes());
            md5.update([0u8]);
        }
        let children: Vec<(String, &Bson)> = match element {
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                md5.update(number_for_hash(element).to_le_bytes());
                continue;
            }
            Bson::Document(d) => named(d),
            Bson::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
            Bson::JavaScriptCodeWithScope(c) => {
                // The code string with its NUL comes before the scope's elements.
                md5.update(c.code.as_bytes());
                md5.update([0u8]);
                named(&c.scope)
            }
            other => {
                md5.update(value_bytes(other)?);
                continue;
            }
        };
        stack.push(None);
        for (k, v) in children.into_iter().rev() {
            stack.push(Some((Some(k), v)));
        }
    }
    Ok(())
}

fn named(d: &Document) -> Vec<(String, &Bson)> {
    d.iter().map(|(k, v)| (k.clone(), v)).collect()
}

/// mongod's `safeNumberLongForHash`: doubles truncated toward zero, NaN as 0, saturating at the
/// `i64` range except that exactly `2^63` becomes `i64::MIN`; decimals rounded half to even
/// (`Decimal128::toLong`'s default), NaN as 0, saturating.
pub fn number_for_hash(value: &Bson) -> i64 {
    match value {
        Bson::Int32(i) => i64::from(*i),
        Bson::Int64(i) => *i,
        Bson::Double(d) if *d == TWO_POW_63 => i64::MIN,
        // `as` truncates toward zero, saturates, and maps NaN to 0, as `safeNumberLong` does.
        Bson::Double(d) => *d as i64,
        Bson::Decimal128(d) => {
            let value = decimal::from_bson(d);
            if value.is_nan() {
                return 0;
            }
            decimal::to_i64(value, decimal::Rounding::HalfEven).unwrap_or(if value.is_negative() {
                i64::MIN
            } else {
                i64::MAX
            })
        }
        _ => 0,
    }
}

/// The bytes of a scalar as it is encoded inside a BSON element (after the field name).
fn value_bytes(value: &Bson) -> Result<Vec<u8>> {
    let mut wrapper = Document::new();
    wrapper.insert("", value.clone());
    let mut bytes = Vec::new();
    wrapper
        .to_writer(&mut bytes)
        .map_err(|e| Error::internal(format!("cannot encode a value to hash: {e}")))?;
    // length (4), type (1), empty name (1), value, document terminator (1).
    Ok(bytes
        .get(6..bytes.len().saturating_sub(1))
        .unwrap_or_default()
        .to_vec())
}

#[cfg(test)]
#[path = "hash_tests.rs"]
mod tests;
