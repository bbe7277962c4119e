//! Two sizes of a decoded document or value, each computed in one walk, without recursion (a
//! value may be as deep as any request): its encoded BSON size, and the bytes it holds decoded
//! in memory ([`held_document`], [`held_value`], [`held_keys`]).
//!
//! Owns: the size arithmetic of the BSON encoding, [`SizeTally`] (the size of a value being
//! built), and the estimate of a decoded value's memory. Does not own: what the sizes are used
//! for (stage memory budgets, `collStats`-style reports, reply bounds).
//!
//! The held size is what the 100 MB of a blocking stage is charged with, as mongod charges its
//! sorter and `$group` with `Document::getApproximateSize` rather than BSON bytes: a decoded
//! value is an enum slot of `size_of::<Bson>()` bytes, whatever its type, plus what it owns on
//! the heap (string and binary capacity, an array's slots, a document's index map), so an array
//! of ten thousand small integers holds over a megabyte while its BSON is under 100 KB. The
//! estimate follows the layout of `bson`'s types and of `indexmap`/`hashbrown`'s tables; it
//! counts what the allocator hands out, not the allocator's own per-block overhead.

use super::guard;
use crate::error::Result;
use bson::{Bson, Document};
use std::mem::size_of;

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

/// One decoded value's slot, whatever its type: an array element, a field's value, a sort key.
const SLOT: usize = size_of::<Bson>();
/// One field of a document: `indexmap`'s entry holds the key's hash, the key and the value.
const FIELD: usize = size_of::<u64>() + size_of::<String>() + SLOT;
/// Per bucket of a document's hash index: the entry's position and a control byte.
const INDEX_BUCKET: usize = size_of::<usize>() + 1;
/// The control bytes a `hashbrown` table keeps past its buckets (one SIMD group).
const INDEX_GROUP: usize = 16;
/// A `DbPointer`'s namespace is private to `bson`: counted as a short name.
const DB_POINTER_NAMESPACE: usize = 32;
/// Decoded values walked per unit of work the operation's interrupt is ticked with.
const VALUES_PER_TICK: usize = 64;

/// The bytes `doc` holds decoded: the document itself and everything it owns.
pub fn held_document(doc: &Document) -> Result<usize> {
    let mut total = size_of::<Document>() + document_heap(doc);
    let mut pending: Vec<&Bson> = doc.values().collect();
    drain_held(&mut total, &mut pending)?;
    Ok(total)
}

/// The bytes `value` holds decoded: its slot and everything it owns.
pub fn held_value(value: &Bson) -> Result<usize> {
    let mut total = SLOT;
    let mut pending = vec![value];
    drain_held(&mut total, &mut pending)?;
    Ok(total)
}

/// The bytes a row of extracted values holds (the sort keys of one document, a compound
/// group key's parts): the vector, its slots, and everything the values own.
pub fn held_keys(keys: &Vec<Bson>) -> Result<usize> {
    let mut total = size_of::<Vec<Bson>>() + keys.capacity().saturating_mul(SLOT);
    let mut pending: Vec<&Bson> = keys.iter().collect();
    drain_held(&mut total, &mut pending)?;
    Ok(total)
}

/// Adds the heap that every pending value owns, and that of every value nested in them (their
/// slots are counted by their container). Ticks the operation's interrupt as it goes: the
/// walk is as long as the value is wide.
fn drain_held(total: &mut usize, pending: &mut Vec<&Bson>) -> Result<()> {
    let mut walked = 0usize;
    while let Some(value) = pending.pop() {
        walked += 1;
        if walked.is_multiple_of(VALUES_PER_TICK) {
            guard::tick()?;
        }
        let heap = match value {
            Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => s.capacity(),
            Bson::Document(d) => {
                pending.extend(d.values());
                document_heap(d)
            }
            Bson::Array(items) => {
                pending.extend(items.iter());
                items.capacity().saturating_mul(SLOT)
            }
            Bson::Binary(b) => b.bytes.capacity(),
            Bson::RegularExpression(r) => r.pattern.capacity() + r.options.capacity(),
            Bson::JavaScriptCodeWithScope(c) => {
                pending.extend(c.scope.values());
                c.code.capacity() + document_heap(&c.scope)
            }
            Bson::DbPointer(_) => DB_POINTER_NAMESPACE,
            Bson::Double(_)
            | Bson::Int32(_)
            | Bson::Int64(_)
            | Bson::DateTime(_)
            | Bson::Timestamp(_)
            | Bson::Decimal128(_)
            | Bson::Boolean(_)
            | Bson::ObjectId(_)
            | Bson::Null
            | Bson::Undefined
            | Bson::MinKey
            | Bson::MaxKey => 0,
        };
        *total = total.saturating_add(heap);
    }
    guard::tick()
}

/// What a document's own structure holds on the heap: its entries (with its keys' bytes) and
/// its hash index. An empty document allocates nothing.
fn document_heap(doc: &Document) -> usize {
    if doc.is_empty() {
        return 0;
    }
    let buckets = index_buckets(doc.len());
    // `indexmap` grows its entries to the index's capacity.
    let entries = bucket_capacity(buckets).saturating_mul(FIELD);
    let keys: usize = doc.keys().map(String::capacity).sum();
    entries + buckets.saturating_mul(INDEX_BUCKET) + INDEX_GROUP + keys
}

/// The buckets of a `hashbrown` table that grew, one insert at a time, to hold `len` entries:
/// 4, then 8, then the doubling powers of two, each full at seven eighths.
fn index_buckets(len: usize) -> usize {
    let mut buckets = 4usize;
    while bucket_capacity(buckets) < len {
        buckets = buckets.saturating_mul(2);
    }
    buckets
}

/// The entries a `hashbrown` table of `buckets` buckets holds before it grows.
fn bucket_capacity(buckets: usize) -> usize {
    if buckets < 8 {
        buckets.saturating_sub(1)
    } else {
        buckets / 8 * 7
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

    #[test]
    fn held_sizes_count_slots_heap_and_document_tables() {
        let s = SLOT;
        // A document of n fields built one insert at a time: its table and entries.
        let table = |buckets: usize, keys: usize| {
            bucket_capacity(buckets) * FIELD + buckets * INDEX_BUCKET + INDEX_GROUP + keys
        };
        let cases: Vec<(Bson, usize)> = vec![
            (Bson::Int32(1), s),
            (Bson::Null, s),
            (Bson::Double(1.5), s),
            (Bson::Decimal128(bson::Decimal128::from_bytes([0; 16])), s),
            (Bson::ObjectId(ObjectId::new()), s),
            (Bson::String("abc".to_owned()), s + 3),
            (Bson::String(String::with_capacity(100)), s + 100),
            (Bson::Array(Vec::new()), s),
            (Bson::Array(Vec::with_capacity(4)), s + 4 * s),
            (Bson::Array(vec![Bson::String("xy".to_owned())]), s + s + 2),
            (Bson::Document(Document::new()), s),
            (Bson::Document(doc! {"a": 1}), s + table(4, 1)),
            (
                Bson::Document(doc! {"a": 1, "b": 2, "c": 3, "d": 4}),
                s + table(8, 4),
            ),
            (
                Bson::Document(doc! {"a": {"bb": "xyz"}}),
                s + table(4, 1) + table(4, 2) + 3,
            ),
            (
                Bson::Binary(Binary {
                    subtype: bson::spec::BinarySubtype::Generic,
                    bytes: vec![0; 10],
                }),
                s + 10,
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(held_value(&value).unwrap(), expected, "{value}");
        }
        let keys = vec![Bson::Int32(1), Bson::String("ab".to_owned())];
        assert_eq!(
            held_keys(&keys).unwrap(),
            size_of::<Vec<Bson>>() + keys.capacity() * s + 2
        );
        let d = doc! {"a": 1};
        assert_eq!(
            held_document(&d).unwrap(),
            size_of::<Document>() + table(4, 1)
        );
    }

    #[test]
    fn held_sizes_grow_with_what_a_value_holds() {
        let mut d = Document::new();
        let mut last = held_document(&d).unwrap();
        for i in 0..100 {
            let field = match i % 3 {
                0 => Bson::Int32(i),
                1 => Bson::String("v".repeat(i as usize)),
                _ => Bson::Array(vec![Bson::Int32(i); i as usize]),
            };
            d.insert(format!("f{i}"), field);
            let now = held_document(&d).unwrap();
            assert!(now > last, "{i}: {now} after {last}");
            last = now;
        }
        // Nesting a value inside another never makes it hold less.
        let inner = Bson::Document(d.clone());
        assert!(
            held_value(&Bson::Array(vec![inner.clone()])).unwrap() > held_value(&inner).unwrap()
        );
    }

    #[test]
    fn small_values_hold_far_more_than_their_bson_bytes() {
        let ints: Vec<Bson> = (0..10_000).map(Bson::Int32).collect();
        let d = doc! {"xs": ints};
        let encoded = document_size(&d);
        let held = held_document(&d).unwrap();
        // Each int32 is 4 bytes and a key of BSON, and a whole enum slot decoded.
        assert!(held >= 10_000 * SLOT, "{held}");
        assert!(held > 10 * encoded, "held {held}, encoded {encoded}");
        // A large string holds about what it encodes to.
        let d = doc! {"s": "x".repeat(1 << 20)};
        let (encoded, held) = (document_size(&d), held_document(&d).unwrap());
        assert!(held >= encoded && held < encoded + 1024, "{held} {encoded}");
    }

    #[test]
    fn a_deep_value_is_held_sized_on_a_small_stack() {
        let mut value = Bson::Int32(1);
        for _ in 0..50_000 {
            value = Bson::Array(vec![value]);
        }
        let size = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let size = held_value(&value).unwrap();
                std::mem::forget(value); // dropping it would recurse
                size
            })
            .unwrap()
            .join()
            .unwrap();
        // Each level: its slot, and the one-element vector's slot it owns.
        assert_eq!(size, 50_000 * SLOT + SLOT);
    }
}
