//! The BSON total order mongod uses for sorting, comparisons and equality.
//!
//! Owns: the canonical type brackets, cross-type numeric comparison (Int32/Int64/Double/Decimal128
//! compared by exact mathematical value, as mongod's `base/compare_numbers.h`), and
//! field-by-field document/array ordering. `storage::keys` encodes values so that memcmp gives
//! this same order; its property tests hold the two together. With a collation
//! (`compare_values_with`) strings and symbols, also inside arrays and documents, compare
//! through it; everything else is unchanged. Does not own: parsing collations
//! (`query::collation`) or any notion of "missing" (callers decide where a missing field sorts;
//! it sorts with null).

use crate::query::collation::{compare_strings, Collation};
use crate::query::decimal::Parts;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// mongod's `canonicalizeBSONType`: values of different brackets order by this number.
pub fn type_bracket(value: &Bson) -> i32 {
    match value {
        Bson::MinKey => -1,
        Bson::Undefined => 0,
        Bson::Null => 5,
        Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_) => 10,
        Bson::String(_) | Bson::Symbol(_) => 15,
        Bson::Document(_) => 20,
        Bson::Array(_) => 25,
        Bson::Binary(_) => 30,
        Bson::ObjectId(_) => 35,
        Bson::Boolean(_) => 40,
        Bson::DateTime(_) => 45,
        Bson::Timestamp(_) => 47,
        Bson::RegularExpression(_) => 50,
        Bson::DbPointer(_) => 55,
        Bson::JavaScriptCode(_) => 60,
        Bson::JavaScriptCodeWithScope(_) => 65,
        Bson::MaxKey => 127,
    }
}

/// Whether `value` is one of the four numeric types.
pub fn is_number(value: &Bson) -> bool {
    type_bracket(value) == 10
}

/// Total order over BSON values, as mongod's `BSONElement::compareElements` without collation.
/// Documents and arrays are compared with an explicit stack, not recursion, so no nesting
/// depth can exhaust the thread's stack.
pub fn compare_values(a: &Bson, b: &Bson) -> Ordering {
    compare_values_with(a, b, None)
}

/// [`compare_values`] under a collation: strings and symbols (also nested in arrays and
/// documents, never field names) compare through it; `None` is the simple collation.
pub fn compare_values_with(a: &Bson, b: &Bson, collation: Option<&Collation>) -> Ordering {
    match compare_shallow(a, b, collation) {
        Shallow::Done(ord) => ord,
        Shallow::Descend(pair) => compare_nested(pair, collation),
    }
}

/// Two documents or two arrays whose elements are compared in step.
enum Pair<'a> {
    Documents(bson::document::Iter<'a>, bson::document::Iter<'a>),
    Arrays(std::slice::Iter<'a, Bson>, std::slice::Iter<'a, Bson>),
}

/// The comparison of two values as far as it goes without looking inside documents or arrays.
enum Shallow<'a> {
    Done(Ordering),
    /// Equal so far; the order is that of these elements.
    Descend(Pair<'a>),
}

fn compare_nested(first: Pair<'_>, collation: Option<&Collation>) -> Ordering {
    let mut stack = vec![first];
    while let Some(top) = stack.last_mut() {
        let step = match top {
            Pair::Documents(left, right) => match (left.next(), right.next()) {
                (None, None) => None,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some((ka, va)), Some((kb, vb))) => {
                    let ord = type_bracket(va)
                        .cmp(&type_bracket(vb))
                        .then_with(|| ka.as_bytes().cmp(kb.as_bytes()));
                    if ord != Ordering::Equal {
                        return ord;
                    }
                    Some(compare_shallow(va, vb, collation))
                }
            },
            Pair::Arrays(left, right) => match (left.next(), right.next()) {
                (None, None) => None,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(x), Some(y)) => Some(compare_shallow(x, y, collation)),
            },
        };
        match step {
            None => {
                stack.pop();
            }
            Some(Shallow::Done(Ordering::Equal)) => {}
            Some(Shallow::Done(ord)) => return ord,
            Some(Shallow::Descend(pair)) => stack.push(pair),
        }
    }
    Ordering::Equal
}

fn compare_shallow<'a>(a: &'a Bson, b: &'a Bson, collation: Option<&Collation>) -> Shallow<'a> {
    let (ta, tb) = (type_bracket(a), type_bracket(b));
    if ta != tb {
        return Shallow::Done(ta.cmp(&tb));
    }
    Shallow::Done(match (a, b) {
        (Bson::String(x) | Bson::Symbol(x), Bson::String(y) | Bson::Symbol(y)) => {
            compare_strings(x, y, collation)
        }
        (Bson::Document(x), Bson::Document(y)) => {
            return Shallow::Descend(Pair::Documents(x.iter(), y.iter()))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            return Shallow::Descend(Pair::Arrays(x.iter(), y.iter()))
        }
        (Bson::Binary(x), Bson::Binary(y)) => x
            .bytes
            .len()
            .cmp(&y.bytes.len())
            .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
            .then_with(|| x.bytes.cmp(&y.bytes)),
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.timestamp_millis().cmp(&y.timestamp_millis()),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::RegularExpression(x), Bson::RegularExpression(y)) => x
            .pattern
            .cmp(&y.pattern)
            .then_with(|| x.options.cmp(&y.options)),
        (Bson::JavaScriptCode(x), Bson::JavaScriptCode(y)) => x.cmp(y),
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => {
            match x.code.cmp(&y.code) {
                Ordering::Equal => {
                    return Shallow::Descend(Pair::Documents(x.scope.iter(), y.scope.iter()))
                }
                ord => ord,
            }
        }
        (Bson::DbPointer(_), Bson::DbPointer(_)) => {
            // mongod: value size, then the raw value bytes.
            let (x, y) = (raw_value_bytes(a), raw_value_bytes(b));
            x.len().cmp(&y.len()).then_with(|| x.cmp(&y))
        }
        _ => match (Number::of(a), Number::of(b)) {
            (Some(x), Some(y)) => compare_numbers(x, y),
            // MinKey, MaxKey, Null, Undefined: one value per bracket.
            _ => Ordering::Equal,
        },
    })
}

/// Equality under the BSON order (so `1 == 1.0 == NumberLong(1)`, `-0.0 == 0.0`).
pub fn values_equal(a: &Bson, b: &Bson) -> bool {
    compare_values(a, b) == Ordering::Equal
}

/// Equality under [`compare_values_with`]: strings equal under the collation are equal.
pub fn values_equal_with(a: &Bson, b: &Bson, collation: Option<&Collation>) -> bool {
    compare_values_with(a, b, collation) == Ordering::Equal
}

/// Documents order field by field: value bracket, then field name, then value; a prefix is less.
pub fn compare_documents(a: &Document, b: &Document) -> Ordering {
    compare_nested(Pair::Documents(a.iter(), b.iter()), None)
}

/// The raw BSON bytes of one value. The bson crate keeps DbPointer's fields private, so they are
/// taken from a serialized one-field document `{"": value}`: 4-byte length, type byte, the empty
/// name's NUL, the value, the document terminator.
fn raw_value_bytes(value: &Bson) -> Vec<u8> {
    let mut doc = Document::new();
    doc.insert("", value.clone());
    let mut raw = Vec::new();
    if doc.to_writer(&mut raw).is_err() {
        return Vec::new();
    }
    raw.get(6..raw.len().saturating_sub(1))
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// A numeric value with its exact representation kept.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Number {
    Int(i64),
    Double(f64),
    Decimal(Parts),
}

impl Number {
    pub(crate) fn of(value: &Bson) -> Option<Number> {
        match value {
            Bson::Int32(i) => Some(Number::Int(i64::from(*i))),
            Bson::Int64(i) => Some(Number::Int(*i)),
            Bson::Double(d) => Some(Number::Double(*d)),
            Bson::Decimal128(d) => Some(Number::Decimal(Parts::of(d))),
            _ => None,
        }
    }
}

fn compare_numbers(a: Number, b: Number) -> Ordering {
    match (a, b) {
        (Number::Int(x), Number::Int(y)) => x.cmp(&y),
        (Number::Double(x), Number::Double(y)) => compare_doubles(x, y),
        (Number::Int(x), Number::Double(y)) => compare_int_double(x, y),
        (Number::Double(x), Number::Int(y)) => compare_int_double(y, x).reverse(),
        (Number::Decimal(x), Number::Decimal(y)) => compare_decimals(x, y),
        (Number::Decimal(x), Number::Int(y)) => compare_decimals(x, Parts::from_i64(y)),
        (Number::Int(x), Number::Decimal(y)) => compare_decimals(Parts::from_i64(x), y),
        (Number::Decimal(x), Number::Double(y)) => compare_decimal_double(x, y),
        (Number::Double(x), Number::Decimal(y)) => compare_decimal_double(y, x).reverse(),
    }
}

/// NaN sorts below every number and equals NaN; -0.0 equals 0.0.
fn compare_doubles(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// Exact comparison of an i64 with an f64 (no rounding of the integer through f64).
fn compare_int_double(x: i64, y: f64) -> Ordering {
    if y.is_nan() {
        return Ordering::Greater;
    }
    // 2^63 is exactly representable; every double >= it exceeds every i64.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if y >= TWO_63 {
        return Ordering::Less;
    }
    if y < -TWO_63 {
        return Ordering::Greater;
    }
    let truncated = y.trunc();
    // In range, so the cast is exact.
    let yi = truncated as i64;
    match x.cmp(&yi) {
        Ordering::Equal => {
            let frac = y - truncated;
            if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        other => other,
    }
}

/// Exact comparison of a decimal with a double, by mathematical value, as mongod's
/// `compareDecimalToDouble` (it rounds the decimal toward -inf and counts an inexact conversion
/// as greater): `NumberDecimal("0.1")` is below the double `0.1`, whose exact value is
/// 0.1000000000000000055511151231257827….
fn compare_decimal_double(x: Parts, y: f64) -> Ordering {
    let (rx, ry) = (decimal_rank(x), double_rank(y));
    if rx != 2 || ry != 2 {
        return rx.cmp(&ry);
    }
    let Some((negative, coefficient, exponent)) = x.finite() else {
        return Ordering::Equal;
    };
    let sign_x = match (coefficient == 0, negative) {
        (true, _) => 0,
        (false, true) => -1,
        (false, false) => 1,
    };
    let sign_y = if y == 0.0 {
        0
    } else if y < 0.0 {
        -1
    } else {
        1
    };
    if sign_x != sign_y || sign_x == 0 {
        return sign_x.cmp(&sign_y);
    }
    let magnitude = compare_decimal_double_magnitudes(coefficient, exponent, y.abs());
    if sign_x < 0 {
        magnitude.reverse()
    } else {
        magnitude
    }
}

/// Compares nonzero `coefficient × 10^exponent` with a finite positive double, exactly.
fn compare_decimal_double_magnitudes(coefficient: u128, exponent: i32, y: f64) -> Ordering {
    // Rounding to nearest is monotone, so when the decimal's nearest double differs from `y` it
    // is on the same side of `y` as the decimal itself (this covers overflow to inf and
    // underflow to 0).
    let nearest = format!("{coefficient}e{exponent}")
        .parse::<f64>()
        .unwrap_or(f64::NAN);
    if nearest != y {
        return nearest.partial_cmp(&y).unwrap_or(Ordering::Equal);
    }
    let digits = coefficient.to_string();
    let leading = exponent.saturating_add(i32::try_from(digits.len()).unwrap_or(0) - 1);
    let (y_digits, y_leading) = exact_digits(y);
    leading.cmp(&y_leading).then_with(|| {
        digits
            .trim_end_matches('0')
            .cmp(y_digits.trim_end_matches('0'))
    })
}

/// The exact decimal expansion of a finite positive double: its significant digits and the
/// power of ten of the first one. `y = m × 2^e` with `m < 2^53` has at most `17 + 0.7·|e|`
/// significant digits, and formatting with a given precision is exact, not approximate.
fn exact_digits(y: f64) -> (String, i32) {
    let biased = i32::try_from((y.to_bits() >> 52) & 0x7FF).unwrap_or(0);
    let e = if biased == 0 { -1074 } else { biased - 1075 };
    let precision = usize::try_from(17 + (7 * e.abs() + 9) / 10).unwrap_or(800);
    let text = format!("{y:.precision$e}");
    let (mantissa, leading) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let digits = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, leading.parse().unwrap_or(0))
}

/// Orders decimals: NaN lowest, then -inf, finite values by exact value (-0 equals 0), +inf.
fn compare_decimals(a: Parts, b: Parts) -> Ordering {
    let (ra, rb) = (decimal_rank(a), decimal_rank(b));
    if ra != 2 || rb != 2 {
        return ra.cmp(&rb);
    }
    let (na, ca, ea) = a.finite().unwrap_or((false, 0, 0));
    let (nb, cb, eb) = b.finite().unwrap_or((false, 0, 0));
    let sign = |negative: bool, c: u128| match (c == 0, negative) {
        (true, _) => 0,
        (false, true) => -1,
        (false, false) => 1,
    };
    let (sa, sb) = (sign(na, ca), sign(nb, cb));
    if sa != sb || sa == 0 {
        return sa.cmp(&sb);
    }
    let magnitude = compare_magnitudes(ca, ea, cb, eb);
    if sa < 0 {
        magnitude.reverse()
    } else {
        magnitude
    }
}

/// Position among NaN (0), -inf (1), finite values (2) and +inf (3).
fn decimal_rank(d: Parts) -> u8 {
    match d {
        Parts::NaN => 0,
        Parts::Infinity { negative: true } => 1,
        Parts::Finite { .. } => 2,
        Parts::Infinity { negative: false } => 3,
    }
}

/// The same positions for a double.
fn double_rank(y: f64) -> u8 {
    if y.is_nan() {
        0
    } else if y == f64::NEG_INFINITY {
        1
    } else if y == f64::INFINITY {
        3
    } else {
        2
    }
}

fn digit_count(mut c: u128) -> i32 {
    let mut n = 0;
    while c > 0 {
        c /= 10;
        n += 1;
    }
    n
}

/// Compares nonzero `ca × 10^ea` with `cb × 10^eb` exactly.
fn compare_magnitudes(mut ca: u128, ea: i32, mut cb: u128, eb: i32) -> Ordering {
    let (da, db) = (digit_count(ca), digit_count(cb));
    // Position of the most significant digit decides unless equal.
    let (ta, tb) = (da + ea, db + eb);
    if ta != tb {
        return ta.cmp(&tb);
    }
    // Same magnitude: pad the shorter coefficient (both have at most 38 digits after padding).
    if da < db {
        ca *= 10u128.pow((db - da).unsigned_abs());
    } else {
        cb *= 10u128.pow((da - db).unsigned_abs());
    }
    ca.cmp(&cb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary, Decimal128, Timestamp};
    use std::str::FromStr;

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(Decimal128::from_str(s).unwrap())
    }

    #[test]
    fn brackets_order_types() {
        let ascending = vec![
            Bson::MinKey,
            Bson::Undefined,
            Bson::Null,
            Bson::Double(f64::NAN),
            Bson::Int32(-5),
            Bson::String("a".into()),
            Bson::Document(doc! {}),
            Bson::Array(vec![]),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![],
            }),
            Bson::ObjectId(ObjectId::from_bytes([0; 12])),
            Bson::Boolean(false),
            Bson::DateTime(bson::DateTime::from_millis(-1)),
            Bson::Timestamp(Timestamp {
                time: 0,
                increment: 0,
            }),
            Bson::RegularExpression(bson::Regex {
                pattern: "a".into(),
                options: String::new(),
            }),
            Bson::JavaScriptCode("x".into()),
            Bson::MaxKey,
        ];
        for pair in ascending.windows(2) {
            assert_eq!(
                compare_values(&pair[0], &pair[1]),
                Ordering::Less,
                "{:?} < {:?}",
                pair[0],
                pair[1]
            );
        }
    }

    #[test]
    fn numbers_compare_by_value_across_types() {
        let cases: Vec<(Bson, Bson, Ordering)> = vec![
            (Bson::Int32(1), Bson::Double(1.0), Ordering::Equal),
            (Bson::Int64(1), Bson::Int32(1), Ordering::Equal),
            (Bson::Double(-0.0), Bson::Int32(0), Ordering::Equal),
            (Bson::Double(1.5), Bson::Int64(1), Ordering::Greater),
            (Bson::Double(-1.5), Bson::Int64(-1), Ordering::Less),
            (
                Bson::Double(f64::NAN),
                Bson::Double(f64::NAN),
                Ordering::Equal,
            ),
            (
                Bson::Double(f64::NAN),
                Bson::Double(f64::NEG_INFINITY),
                Ordering::Less,
            ),
            (
                Bson::Double(f64::NAN),
                Bson::Int64(i64::MIN),
                Ordering::Less,
            ),
            // 2^53 + 1 is not representable as a double; exact comparison still sees it.
            (
                Bson::Int64((1 << 53) + 1),
                Bson::Double(9007199254740992.0),
                Ordering::Greater,
            ),
            (
                Bson::Int64(i64::MAX),
                Bson::Double(9_223_372_036_854_775_808.0),
                Ordering::Less,
            ),
            (
                Bson::Int64(i64::MIN),
                Bson::Double(-9_223_372_036_854_775_808.0),
                Ordering::Equal,
            ),
            (dec("1.0"), Bson::Int32(1), Ordering::Equal),
            // Exact: the double 0.1 is 0.1000000000000000055511151231257827….
            (dec("0.1"), Bson::Double(0.1), Ordering::Less),
            (dec("0.5"), Bson::Double(0.5), Ordering::Equal),
            (dec("9.99"), Bson::Double(9.99), Ordering::Less),
            (
                dec("1.00000000000000000000001"),
                Bson::Int32(1),
                Ordering::Greater,
            ),
            (dec("-2"), dec("-10"), Ordering::Greater),
            (dec("NaN"), Bson::Double(f64::NAN), Ordering::Equal),
            (dec("-Infinity"), Bson::Int64(i64::MIN), Ordering::Less),
            (dec("1E+3"), Bson::Int32(1000), Ordering::Equal),
            (dec("0"), dec("-0.00"), Ordering::Equal),
        ];
        for (a, b, expected) in cases {
            assert_eq!(compare_values(&a, &b), expected, "{a:?} vs {b:?}");
            assert_eq!(compare_values(&b, &a), expected.reverse(), "{b:?} vs {a:?}");
        }
    }

    #[test]
    fn documents_and_arrays() {
        let cases: Vec<(Bson, Bson, Ordering)> = vec![
            (
                doc! {"a": 1}.into(),
                doc! {"a": 1.0}.into(),
                Ordering::Equal,
            ),
            (doc! {"a": 1}.into(), doc! {"b": 1}.into(), Ordering::Less),
            (doc! {"b": 1}.into(), doc! {"a": "x"}.into(), Ordering::Less),
            (
                doc! {"a": 1}.into(),
                doc! {"a": 1, "b": 0}.into(),
                Ordering::Less,
            ),
            (
                Bson::Array(vec![1.into(), 2.into()]),
                Bson::Array(vec![1.into(), 3.into()]),
                Ordering::Less,
            ),
            (
                Bson::Array(vec![1.into()]),
                Bson::Array(vec![1.into(), 0.into()]),
                Ordering::Less,
            ),
            (
                Bson::Array(vec!["a".into()]),
                Bson::Array(vec![5.into()]),
                Ordering::Greater,
            ),
        ];
        for (a, b, expected) in cases {
            assert_eq!(compare_values(&a, &b), expected, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn binary_orders_by_length_then_subtype() {
        let bin = |subtype, bytes: Vec<u8>| Bson::Binary(Binary { subtype, bytes });
        assert_eq!(
            compare_values(
                &bin(BinarySubtype::UserDefined(0x80), vec![1]),
                &bin(BinarySubtype::Generic, vec![0, 0])
            ),
            Ordering::Less
        );
        assert_eq!(
            compare_values(
                &bin(BinarySubtype::Generic, vec![9]),
                &bin(BinarySubtype::Uuid, vec![0])
            ),
            Ordering::Less
        );
    }

    mod total_order {
        use super::*;
        use proptest::prelude::*;

        fn leaf() -> impl Strategy<Value = Bson> {
            prop_oneof![
                Just(Bson::Null),
                Just(Bson::MinKey),
                Just(Bson::MaxKey),
                any::<i32>().prop_map(Bson::Int32),
                any::<i64>().prop_map(Bson::Int64),
                (-3i64..3).prop_map(Bson::Int64),
                (-3i32..3).prop_map(|i| Bson::Double(f64::from(i) / 2.0)),
                any::<f64>().prop_map(Bson::Double),
                prop_oneof![
                    Just("0"),
                    Just("-1.5"),
                    Just("1"),
                    Just("1E+20"),
                    Just("NaN")
                ]
                .prop_map(|s| Bson::Decimal128(Decimal128::from_str(s).unwrap())),
                "[ab]{0,2}".prop_map(Bson::String),
                any::<bool>().prop_map(Bson::Boolean),
            ]
        }

        fn value() -> impl Strategy<Value = Bson> {
            leaf().prop_recursive(2, 8, 3, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
                    proptest::collection::vec(("[ab]", inner), 0..3)
                        .prop_map(|kv| Bson::Document(kv.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #[test]
            fn compare_is_a_total_order(a in value(), b in value(), c in value()) {
                prop_assert_eq!(compare_values(&a, &b), compare_values(&b, &a).reverse());
                prop_assert_eq!(compare_values(&a, &a), Ordering::Equal);
                let mut v = [a, b, c];
                v.sort_by(compare_values);
                prop_assert_ne!(compare_values(&v[0], &v[1]), Ordering::Greater);
                prop_assert_ne!(compare_values(&v[1], &v[2]), Ordering::Greater);
                prop_assert_ne!(compare_values(&v[0], &v[2]), Ordering::Greater);
            }
        }
    }
}
