//! The encoded BSON size of a decoded document or value, computed without encoding it and
//! without recursion (a value may be as deep as any request).
//!
//! Owns: the size arithmetic of the BSON encoding, and [`SizeTally`], the size of a value
//! being built. Does not own: what the sizes are used for (stage memory budgets,
//! `collStats`-style reports, reply bounds).

use super::guard;
use crate::error::Result;
use bson::{Bson, Document};

/// The encoded size of `doc`: what `bson::to_vec(doc).len()` would be.
pub fn document_size(doc: &Document) -> usize {
    let mut total = document_overhead(doc);
    let mut pending: Vec<&Bson> = doc.values().collect();
    drain(&mut total, &mut pending);
    total
}

/// The encoded size of `value`'s payload (without its type byte and field name).
pub fn value_size(value: &Bson) -> usize {
    let mut total = 0;
    let mut pending = vec![value];
    drain(&mut total, &mut pending);
    total
}

/// Adds the payload of every pending value, and of every value nested in them.
fn drain(total: &mut usize, pending: &mut Vec<&Bson>) {
    let string = |s: &str| 4 + s.len() + 1;
    while let Some(value) = pending.pop() {
        *total += match value {
            Bson::Double(_) | Bson::Int64(_) | Bson::DateTime(_) | Bson::Timestamp(_) => 8,
            Bson::Int32(_) => 4,
            Bson::Decimal128(_) => 16,
            Bson::Boolean(_) => 1,
            Bson::ObjectId(_) => 12,
            Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => 0,
            Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => string(s),
            Bson::Document(d) => {
                pending.extend(d.values());
                document_overhead(d)
            }
            Bson::Array(items) => {
                pending.extend(items.iter());
                // Length, then per element a type byte, the index as a key and its NUL; NUL.
                4 + (0..items.len()).map(|i| 2 + decimal_len(i)).sum::<usize>() + 1
            }
            Bson::Binary(b) => 4 + 1 + b.bytes.len() + if u8::from(b.subtype) == 2 { 4 } else { 0 },
            Bson::RegularExpression(r) => r.pattern.len() + 1 + r.options.len() + 1,
            Bson::JavaScriptCodeWithScope(c) => {
                pending.extend(c.scope.values());
                4 + string(&c.code) + document_overhead(&c.scope)
            }
            // The namespace string is private in `bson`; 12 bytes of ObjectId plus a short name.
            Bson::DbPointer(_) => 4 + 32 + 1 + 12,
        };
    }
}

/// A document's bytes other than its values' payloads: the length, per element a type byte,
/// the key and its NUL, and the trailing NUL.
fn document_overhead(doc: &Document) -> usize {
    4 + doc.keys().map(|k| 2 + k.len()).sum::<usize>() + 1
}

/// The encoded size of an array or document being built one element at a time, refused once
/// past the size any computed value may reach ([`guard::MAX_VALUE_BYTES`]); each element is
/// also a unit of work for the operation's interrupt.
#[derive(Debug)]
pub struct SizeTally {
    bytes: usize,
    elements: usize,
}

impl SizeTally {
    /// An empty array: its length and terminator.
    pub fn array() -> SizeTally {
        SizeTally {
            bytes: 5,
            elements: 0,
        }
    }

    /// An empty document.
    pub fn document() -> SizeTally {
        SizeTally::array()
    }

    /// Counts the next array element, `value`.
    pub fn add_element(&mut self, value: &Bson) -> Result<()> {
        let key = decimal_len(self.elements);
        self.add(key, value)
    }

    /// Counts a document field named with `key_len` bytes holding `value`.
    pub fn add(&mut self, key_len: usize, value: &Bson) -> Result<()> {
        self.elements += 1;
        self.add_bytes(2 + key_len + value_size(value))
    }

    /// Counts `bytes` more (of a string being built).
    pub fn add_bytes(&mut self, bytes: usize) -> Result<()> {
        self.bytes = self.bytes.saturating_add(bytes);
        guard::check_value_bytes(self.bytes)?;
        guard::tick_n(guard::units_for_bytes(bytes))
    }

    /// The size counted so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

fn decimal_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, oid::ObjectId, Binary, JavaScriptCodeWithScope, Regex};

    #[test]
    fn computed_sizes_match_encoded_sizes() {
        let docs = [
            doc! {},
            doc! {"_id": ObjectId::new(), "a": 1, "b": 2i64, "c": 1.5, "s": "héllo"},
            doc! {"arr": (0..25).map(Bson::Int32).collect::<Vec<_>>(), "n": null, "t": true},
            doc! {"d": {"x": [1, {"y": "z"}]}, "r": Regex { pattern: "a+".into(), options: "i".into() }},
            doc! {"bin": Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2, 3] }},
            doc! {"dt": bson::DateTime::from_millis(5), "ts": bson::Timestamp { time: 1, increment: 2 }},
            doc! {"js": JavaScriptCodeWithScope { code: "f()".into(), scope: doc! {"k": [1, "v"]} }},
        ];
        for d in docs {
            let mut bytes = Vec::new();
            d.to_writer(&mut bytes).unwrap();
            assert_eq!(document_size(&d), bytes.len(), "{d}");
            let value = Bson::Document(d.clone());
            assert_eq!(value_size(&value), bytes.len(), "{d}");
        }
    }

    #[test]
    fn a_deep_value_is_sized_on_a_small_stack() {
        let mut value = Bson::Int32(1);
        for _ in 0..50_000 {
            value = Bson::Document(doc! {"a": value});
        }
        let size = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let size = value_size(&value);
                std::mem::forget(value); // dropping it would recurse
                size
            })
            .unwrap()
            .join()
            .unwrap();
        // Each level: 4 + type byte + "a" + NUL + 1; the innermost int32: 4.
        assert_eq!(size, 50_000 * 8 + 4);
    }
}
