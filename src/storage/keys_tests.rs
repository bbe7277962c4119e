//! Tests of the key encoding: a table of values in ascending BSON order, and property tests that
//! memcmp order of encodings is the query comparator's order (`query::compare::compare_values`).

use super::*;
use crate::query::compare::{compare_values, values_equal};
use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, DateTime, Decimal128, JavaScriptCodeWithScope, Regex, Timestamp};
use proptest::prelude::*;

fn enc(value: &Bson) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(value, &mut out);
    out
}

fn enc_desc(value: &Bson) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value_descending(value, &mut out);
    out
}

/// A Decimal128 `±coefficient × 10^exponent`, built from its BID bits.
fn dec(negative: bool, coefficient: u128, exponent: i32) -> Bson {
    let biased = u128::try_from(exponent + 6176).unwrap();
    let bits = (u128::from(negative) << 127) | (biased << 113) | coefficient;
    Bson::Decimal128(Decimal128::from_bytes(bits.to_le_bytes()))
}

fn dec_special(negative: bool, combination: u128) -> Bson {
    let bits = (u128::from(negative) << 127) | (combination << 122);
    Bson::Decimal128(Decimal128::from_bytes(bits.to_le_bytes()))
}

fn bin(subtype: u8, bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::from(subtype),
        bytes: bytes.to_vec(),
    })
}

fn oid(byte: u8) -> Bson {
    Bson::ObjectId(ObjectId::from_bytes([byte; 12]))
}

fn ts(time: u32, increment: u32) -> Bson {
    Bson::Timestamp(Timestamp { time, increment })
}

fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.into(),
        options: options.into(),
    })
}

/// A DbPointer (the bson crate has no public constructor): parsed from `{"p": DbPointer}`.
fn db_pointer(namespace: &str, oid_byte: u8) -> Bson {
    let mut value = Vec::new();
    value.extend_from_slice(&i32::try_from(namespace.len() + 1).unwrap().to_le_bytes());
    value.extend_from_slice(namespace.as_bytes());
    value.push(0);
    value.extend_from_slice(&[oid_byte; 12]);
    let mut raw = vec![0x0C, b'p', 0];
    raw.extend_from_slice(&value);
    raw.push(0);
    let total = i32::try_from(raw.len() + 4).unwrap();
    let bytes = [total.to_le_bytes().to_vec(), raw].concat();
    let doc = bson::Document::from_reader(bytes.as_slice()).unwrap();
    doc.get("p").unwrap().clone()
}

const TWO_53: i64 = 1 << 53;

/// Groups of values in strictly ascending BSON order; values within a group are equal.
fn ascending_groups() -> Vec<Vec<Bson>> {
    let s = |v: &str| Bson::String(v.into());
    vec![
        vec![Bson::MinKey],
        vec![Bson::Undefined],
        vec![Bson::Null],
        vec![
            Bson::Double(f64::NAN),
            Bson::Double(-f64::NAN),
            dec_special(false, 0x1F),
            dec_special(true, 0x1F),
        ],
        vec![Bson::Double(f64::NEG_INFINITY), dec_special(true, 0x1E)],
        vec![dec(true, 1, 400)],
        vec![Bson::Double(-f64::MAX)],
        vec![
            Bson::Int64(i64::MIN),
            Bson::Double(-9_223_372_036_854_775_808.0),
            dec(true, 9_223_372_036_854_775_808, 0),
        ],
        vec![Bson::Int64(i64::MIN + 1)],
        vec![
            Bson::Int64(-TWO_53 - 1),
            dec(true, 9_007_199_254_740_993, 0),
        ],
        vec![Bson::Int64(-TWO_53), Bson::Double(-(TWO_53 as f64))],
        vec![Bson::Double(-5.5), dec(true, 55, -1)],
        vec![
            Bson::Int32(-5),
            Bson::Int64(-5),
            Bson::Double(-5.0),
            dec(true, 5, 0),
            dec(true, 500, -2),
        ],
        vec![Bson::Double(-5e-324)],
        vec![dec(true, 1, -400)],
        vec![
            Bson::Int32(0),
            Bson::Int64(0),
            Bson::Double(0.0),
            Bson::Double(-0.0),
            dec(false, 0, 0),
            dec(true, 0, 0),
            dec(false, 0, 10),
        ],
        vec![dec(false, 1, -400)],
        vec![Bson::Double(5e-324)],
        vec![dec(false, 1, -1)],
        vec![Bson::Double(0.1)],
        vec![dec(
            false,
            1_000_000_000_000_000_055_511_151_231_257_828,
            -34,
        )],
        vec![Bson::Double(0.5), dec(false, 5, -1), dec(false, 50, -2)],
        vec![
            Bson::Int32(1),
            Bson::Int64(1),
            Bson::Double(1.0),
            dec(false, 1, 0),
        ],
        vec![
            Bson::Int32(5),
            Bson::Int64(5),
            Bson::Double(5.0),
            dec(false, 5, 0),
            dec(false, 5_000, -3),
        ],
        vec![Bson::Int32(i32::MAX), Bson::Double(f64::from(i32::MAX))],
        vec![Bson::Int64(TWO_53), Bson::Double(TWO_53 as f64)],
        vec![
            Bson::Int64(TWO_53 + 1),
            dec(false, 9_007_199_254_740_993, 0),
        ],
        vec![Bson::Int64(TWO_53 + 2), Bson::Double((TWO_53 + 2) as f64)],
        vec![Bson::Int64(i64::MAX - 1)],
        vec![Bson::Int64(i64::MAX)],
        vec![
            Bson::Double(9_223_372_036_854_775_808.0),
            dec(false, 9_223_372_036_854_775_808, 0),
        ],
        vec![Bson::Double(f64::MAX)],
        vec![dec(false, 1, 400)],
        vec![Bson::Double(f64::INFINITY), dec_special(false, 0x1E)],
        vec![s(""), Bson::Symbol(String::new())],
        vec![s("\0")],
        vec![s("\0\0")],
        vec![s("\x01")],
        vec![s("a"), Bson::Symbol("a".into())],
        vec![s("a\0")],
        vec![s("a\0b")],
        vec![s("ab")],
        vec![s("b")],
        vec![s("z")],
        vec![s("é")],
        vec![Bson::Document(doc! {})],
        vec![Bson::Document(doc! {"a": Bson::MinKey})],
        vec![
            Bson::Document(doc! {"a": 1}),
            Bson::Document(doc! {"a": 1.0}),
        ],
        vec![Bson::Document(doc! {"a": 1, "b": 1})],
        vec![Bson::Document(doc! {"a": 2_i64})],
        vec![Bson::Document(doc! {"b": 0})],
        vec![Bson::Document(doc! {"a": "x"})],
        vec![Bson::Document(doc! {"a": {}})],
        vec![Bson::Document(doc! {"a": {"b": 1}})],
        vec![Bson::Array(vec![])],
        vec![Bson::Array(vec![Bson::MinKey])],
        vec![Bson::Array(vec![Bson::Null])],
        vec![
            Bson::Array(vec![Bson::Int32(1)]),
            Bson::Array(vec![Bson::Double(1.0)]),
        ],
        vec![Bson::Array(vec![Bson::Int32(1), Bson::Int32(1)])],
        vec![Bson::Array(vec![Bson::Int32(2)])],
        vec![Bson::Array(vec![s("a")])],
        vec![Bson::Array(vec![Bson::Array(vec![])])],
        vec![bin(0, &[])],
        vec![bin(0, &[0xFF])],
        vec![bin(4, &[0x00])],
        vec![bin(0, &[0, 0])],
        vec![oid(0)],
        vec![oid(0xFF)],
        vec![Bson::Boolean(false)],
        vec![Bson::Boolean(true)],
        vec![Bson::DateTime(DateTime::from_millis(i64::MIN))],
        vec![Bson::DateTime(DateTime::from_millis(-1))],
        vec![Bson::DateTime(DateTime::from_millis(0))],
        vec![Bson::DateTime(DateTime::from_millis(i64::MAX))],
        vec![ts(0, 0)],
        vec![ts(1, u32::MAX)],
        vec![ts(2, 0)],
        vec![ts(u32::MAX, u32::MAX)],
        vec![regex("a", "")],
        vec![regex("a", "i")],
        vec![regex("ab", "")],
        vec![db_pointer("z", 0)],
        vec![db_pointer("z", 1)],
        vec![db_pointer("bb", 0)],
        vec![Bson::JavaScriptCode("a".into())],
        vec![Bson::JavaScriptCode("b".into())],
        vec![Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
            code: "a".into(),
            scope: doc! {"x": 1},
        })],
        vec![Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
            code: "a".into(),
            scope: doc! {"x": 2},
        })],
        vec![Bson::MaxKey],
    ]
}

#[test]
fn encodings_follow_bson_order_across_every_bracket() {
    let groups = ascending_groups();
    let flat: Vec<(usize, &Bson)> = groups
        .iter()
        .enumerate()
        .flat_map(|(rank, group)| group.iter().map(move |value| (rank, value)))
        .collect();
    for (rank_a, a) in &flat {
        for (rank_b, b) in &flat {
            let (ea, eb) = (enc(a), enc(b));
            assert_eq!(
                ea.cmp(&eb),
                rank_a.cmp(rank_b),
                "{a:?} vs {b:?}: {ea:02x?} vs {eb:02x?}"
            );
            // The table is the query comparator's spec too.
            assert_eq!(
                compare_values(a, b),
                rank_a.cmp(rank_b),
                "compare_values({a:?}, {b:?})"
            );
            assert_eq!(
                enc_desc(a).cmp(&enc_desc(b)),
                rank_b.cmp(rank_a),
                "descending {a:?} vs {b:?}"
            );
        }
    }
}

#[test]
fn equal_numbers_of_different_types_encode_identically() {
    let five = enc(&Bson::Int32(5));
    assert_eq!(enc(&Bson::Int64(5)), five);
    assert_eq!(enc(&Bson::Double(5.0)), five);
    assert_eq!(enc(&dec(false, 5, 0)), five);
    assert_eq!(enc(&Bson::Double(-0.0)), enc(&Bson::Int32(0)));
}

#[test]
fn int64_beyond_2_pow_53_orders_exactly_against_doubles() {
    // 2^53 + 1 rounds to 2^53 as a double but must sort strictly between 2^53 and 2^53 + 2.
    let below = enc(&Bson::Double(TWO_53 as f64));
    let exact = enc(&Bson::Int64(TWO_53 + 1));
    let above = enc(&Bson::Double((TWO_53 + 2) as f64));
    assert!(below < exact && exact < above);
    // i64::MAX rounds up to 2^63 but is below it.
    assert!(enc(&Bson::Int64(i64::MAX)) < enc(&Bson::Double(9_223_372_036_854_775_808.0)));
    assert!(enc(&Bson::Int64(i64::MAX - 1)) < enc(&Bson::Int64(i64::MAX)));
}

#[test]
fn string_prefixes_order_before_extensions() {
    let order = ["", "a", "a\0", "a\0\0", "a\x01", "ab", "b"];
    for pair in order.windows(2) {
        let (a, b) = (enc(&Bson::from(pair[0])), enc(&Bson::from(pair[1])));
        assert!(a < b, "{:?} < {:?}", pair[0], pair[1]);
    }
}

#[test]
fn nested_documents_compare_fieldwise() {
    let a = Bson::Document(doc! {"x": {"y": [1, 2]}, "z": 1});
    let b = Bson::Document(doc! {"x": {"y": [1, 2, 0]}});
    let c = Bson::Document(doc! {"x": {"y": [1.0, 2_i64]}, "z": 1.0});
    assert!(enc(&a) < enc(&b));
    assert_eq!(enc(&a), enc(&c));
}

#[test]
fn descending_fields_reverse_only_their_component() {
    let key = |a: i32, b: &str, id: i32| {
        index_key(
            1,
            2,
            &[
                (Bson::Int32(a), Direction::Ascending),
                (Bson::from(b), Direction::Descending),
            ],
            &enc(&Bson::Int32(id)),
        )
    };
    let ordered = [
        key(1, "b", 0),
        key(1, "a", 0),
        key(1, "a", 1),
        key(1, "", 0),
        key(2, "zz", 0),
    ];
    for pair in ordered.windows(2) {
        assert!(pair[0] < pair[1]);
    }
    // Every entry lies under its index prefix.
    let prefix = index_prefix(1, 2);
    let end = prefix_end(&prefix).unwrap();
    assert!(ordered
        .iter()
        .all(|k| k.starts_with(&prefix) && k.as_slice() < end.as_slice()));
}

#[test]
fn document_keys_group_by_collection() {
    let a = document_key(1, &Bson::MaxKey);
    let b = document_key(2, &Bson::MinKey);
    assert!(a < b);
    assert!(a.starts_with(&collection_prefix(1)));
    assert_eq!(&*collection_prefix(1), &[1]);
}

#[test]
fn ids_are_compact_ordered_and_prefix_free() {
    let samples = [
        0u64,
        1,
        0xF6,
        0xF7,
        0xF8,
        0xFF,
        0x100,
        300,
        0xFFFF,
        0x1_0000,
        1 << 40,
        u64::MAX - 1,
        u64::MAX,
    ];
    assert_eq!(&*encode_id(0xF7), &[0xF7]);
    assert_eq!(&*encode_id(0xF8), &[0xF8, 0xF8]);
    assert_eq!(&*encode_id(300), &[0xF9, 0x01, 0x2C]);
    assert_eq!(encode_id(u64::MAX).len(), MAX_ID_LEN);
    for a in samples {
        let mut key = encode_id(a).to_vec();
        key.extend_from_slice(b"rest");
        assert_eq!(split_id(&key), Some((a, &b"rest"[..])), "{a}");
        for b in samples {
            assert_eq!((*encode_id(a)).cmp(&*encode_id(b)), a.cmp(&b), "{a} vs {b}");
        }
    }
    assert_eq!(split_id(&[0xF9, 0x01]), None, "a cut id");
    assert_eq!(split_id(&[]), None);
}

proptest! {
    /// Byte order is id order, and an id followed by anything splits back into both.
    #[test]
    fn encoded_ids_order_as_ids(a in any::<u64>(), b in any::<u64>(), rest in prop::collection::vec(any::<u8>(), 0..4)) {
        prop_assert_eq!((*encode_id(a)).cmp(&*encode_id(b)), a.cmp(&b));
        let mut key = encode_id(a).to_vec();
        key.extend_from_slice(&rest);
        prop_assert_eq!(split_id(&key), Some((a, rest.as_slice())));
    }
}

#[test]
fn prefix_end_is_the_next_prefix() {
    assert_eq!(prefix_end(&[1, 2]), Some(vec![1, 3]));
    assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
    assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
    assert_eq!(prefix_end(&[]), None);
}

#[test]
fn non_canonical_decimal_is_zero() {
    // Form-2 encoding (implied coefficient >= 2^113) and a coefficient above 10^34 - 1.
    let form2 = (0b11u128 << 125) | (6176u128 << 111) | 1;
    let big = (6176u128 << 113) | 10u128.pow(34);
    for bits in [form2, big] {
        let value = Bson::Decimal128(Decimal128::from_bytes(bits.to_le_bytes()));
        assert_eq!(enc(&value), enc(&Bson::Int32(0)));
    }
}

// ---- property test: memcmp order is `query::compare::compare_values` ----

/// A decimal from its string form (test input is always valid).
fn dec_str(s: &str) -> Bson {
    Bson::Decimal128(s.parse().unwrap())
}

/// Numbers that collide often: equal values in several types, and close neighbours.
fn pooled_number() -> impl Strategy<Value = Bson> {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let pool = vec![
        Bson::Int32(0),
        Bson::Int64(0),
        Bson::Double(0.0),
        Bson::Double(-0.0),
        dec_str("0"),
        dec_str("-0"),
        dec_str("0E+10"),
        dec_str("-0.000"),
        Bson::Double(0.5),
        dec_str("0.5"),
        dec_str("0.50"),
        Bson::Double(0.1),
        dec_str("0.1"),
        // The double 0.1 lies strictly between these two 34-digit decimals.
        dec_str("0.1000000000000000055511151231257827"),
        dec_str("0.1000000000000000055511151231257828"),
        Bson::Double(-0.1),
        dec_str("-0.1"),
        Bson::Double(9.99),
        dec_str("9.99"),
        Bson::Int32(1),
        Bson::Double(1.0),
        dec_str("1.000000000000000000000000000000001"),
        dec_str("0.9999999999999999999999999999999999"),
        Bson::Int64(TWO_53),
        Bson::Int64(TWO_53 + 1),
        Bson::Double(TWO_53 as f64),
        Bson::Double((TWO_53 + 2) as f64),
        dec_str("9007199254740993"),
        dec_str("9007199254740992.5"),
        Bson::Int64(-TWO_53 - 1),
        Bson::Double(-(TWO_53 as f64)),
        Bson::Int64(i64::MAX),
        Bson::Int64(i64::MAX - 1),
        Bson::Int64(i64::MIN),
        Bson::Int64(i64::MIN + 1),
        Bson::Double(TWO_63),
        Bson::Double(-TWO_63),
        Bson::Double(TWO_63 - 1024.0),
        dec_str("9223372036854775807"),
        dec_str("9223372036854775808"),
        dec_str("9223372036854775807.5"),
        dec_str("-9223372036854775808"),
        Bson::Double(f64::MAX),
        dec_str("1.797693134862315708145274237317043E+308"),
        dec_str("1.797693134862315708145274237317044E+308"),
        dec_str("1E+400"),
        dec_str("-1E+400"),
        dec_str("9.999999999999999999999999999999999E+6144"),
        Bson::Double(5e-324),
        Bson::Double(-5e-324),
        dec_str("4.940656458412465441765687928682213E-324"),
        dec_str("4.940656458412465441765687928682214E-324"),
        dec_str("1E-400"),
        dec_str("1E-6176"),
        Bson::Double(f64::MIN_POSITIVE),
        Bson::Double(f64::NAN),
        Bson::Double(-f64::NAN),
        dec_str("NaN"),
        Bson::Double(f64::INFINITY),
        Bson::Double(f64::NEG_INFINITY),
        dec_str("Infinity"),
        dec_str("-Infinity"),
    ];
    prop::sample::select(pool)
}

/// A dyadic rational `m / 2^j` as a double or as the decimal of the same value.
fn dyadic(m: i32, j: u32, as_decimal: bool) -> Bson {
    if as_decimal {
        let coefficient = u128::from(m.unsigned_abs()) * 5u128.pow(j);
        dec(m < 0, coefficient, -i32::try_from(j).unwrap())
    } else {
        Bson::Double(f64::from(m) / f64::from(1u32 << j))
    }
}

fn number() -> impl Strategy<Value = Bson> {
    prop_oneof![
        3 => pooled_number(),
        2 => (-8i32..8, 0u32..3, any::<bool>()).prop_map(|(m, j, d)| dyadic(m, j, d)),
        1 => (any::<i32>(), 0u32..20, any::<bool>()).prop_map(|(m, j, d)| dyadic(m, j, d)),
        1 => (-3i32..3).prop_map(Bson::Int32),
        1 => (-3i64..3).prop_map(Bson::Int64),
        1 => any::<i32>().prop_map(Bson::Int32),
        1 => any::<i64>().prop_map(Bson::Int64),
        1 => (TWO_53..i64::MAX).prop_map(Bson::Int64),
        1 => (-4i64..4).prop_map(|d| Bson::Int64(TWO_53 + d)),
        1 => (-4i64..4).prop_map(|d| Bson::Double((TWO_53 + d) as f64)),
        1 => any::<f64>().prop_map(Bson::Double),
        1 => (-1e20f64..1e20).prop_map(Bson::Double),
        // Many digits, any exponent.
        1 => (any::<bool>(), 0..10u128.pow(34), -6176i32..=6111)
            .prop_map(|(n, c, e)| dec(n, c, e)),
        // Few digits, exponents near doubles' range of common values.
        1 => (any::<bool>(), 0u128..1000, -30i32..30).prop_map(|(n, c, e)| dec(n, c, e)),
        // Many digits, near 1.
        1 => (any::<bool>(), 10u128.pow(33)..10u128.pow(34)).prop_map(|(n, c)| dec(n, c, -33)),
    ]
}

fn small_string() -> impl Strategy<Value = String> {
    "[a\\x00b]{0,3}"
}

/// One strategy per kind of leaf value, so that tests can also draw pairs of one kind.
fn leaf_kinds() -> Vec<BoxedStrategy<Bson>> {
    vec![
        number().boxed(),
        prop::sample::select(vec![
            Bson::Null,
            Bson::Undefined,
            Bson::MinKey,
            Bson::MaxKey,
        ])
        .boxed(),
        any::<bool>().prop_map(Bson::Boolean).boxed(),
        prop_oneof![
            small_string().prop_map(Bson::String),
            small_string().prop_map(Bson::Symbol),
        ]
        .boxed(),
        (0u8..3).prop_map(oid).boxed(),
        prop_oneof![-2i64..2, any::<i64>()]
            .prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms)))
            .boxed(),
        prop_oneof![(0u32..3, 0u32..3), (any::<u32>(), any::<u32>())]
            .prop_map(|(t, i)| ts(t, i))
            .boxed(),
        (
            prop::sample::select(vec![0u8, 4, 0x80]),
            prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xFF]), 0..3),
        )
            .prop_map(|(subtype, bytes)| bin(subtype, &bytes))
            .boxed(),
        (small_string(), "[im]{0,2}")
            .prop_map(|(p, o)| regex(&p, &o))
            .boxed(),
        (prop::sample::select(vec!["z", "bb"]), 0u8..2)
            .prop_map(|(ns, b)| db_pointer(ns, b))
            .boxed(),
        small_string().prop_map(Bson::JavaScriptCode).boxed(),
        (small_string(), -2i32..2)
            .prop_map(|(code, x)| {
                Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                    code,
                    scope: doc! {"x": x},
                })
            })
            .boxed(),
    ]
}

fn leaf() -> impl Strategy<Value = Bson> {
    let kinds = leaf_kinds();
    // Numbers are the subtle part: draw them as often as all other kinds together.
    let weights = std::iter::once(kinds.len() - 1).chain(std::iter::repeat(1));
    prop::strategy::Union::new_weighted(
        weights
            .map(|w| u32::try_from(w).unwrap())
            .zip(kinds)
            .collect(),
    )
}

/// Two leaves of the same kind (both numbers, both strings, …); half of them numbers.
fn same_kind_pair() -> impl Strategy<Value = (Bson, Bson)> {
    let kinds = leaf_kinds();
    prop_oneof![
        (number(), number()),
        (0..kinds.len()).prop_flat_map(move |k| (kinds[k].clone(), kinds[k].clone())),
    ]
}

fn bson_value() -> impl Strategy<Value = Bson> {
    leaf().prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
            prop::collection::vec(("[a\\x00b]{0,2}", inner), 0..3)
                .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn memcmp_order_matches_compare_values(a in bson_value(), b in bson_value()) {
        let expected = compare_values(&a, &b);
        let (ea, eb) = (enc(&a), enc(&b));
        prop_assert_eq!(ea.cmp(&eb), expected, "{:?} vs {:?}: {:02x?} vs {:02x?}", a, b, ea, eb);
        prop_assert_eq!(enc_desc(&a).cmp(&enc_desc(&b)), expected.reverse());
        prop_assert_eq!(values_equal(&a, &b), ea == eb);
    }

    #[test]
    fn memcmp_order_matches_compare_values_within_a_kind((a, b) in same_kind_pair()) {
        let expected = compare_values(&a, &b);
        let (ea, eb) = (enc(&a), enc(&b));
        prop_assert_eq!(ea.cmp(&eb), expected, "{:?} vs {:?}: {:02x?} vs {:02x?}", a, b, ea, eb);
        prop_assert_eq!(enc_desc(&a).cmp(&enc_desc(&b)), expected.reverse());
        prop_assert_eq!(values_equal(&a, &b), ea == eb);
    }

    #[test]
    fn index_keys_order_as_tuples(
        a in (number(), bson_value(), any::<bool>()),
        b in (number(), bson_value(), any::<bool>()),
    ) {
        let key = |(x, y, id): &(Bson, Bson, bool)| index_key(
            7, 1, &[(x.clone(), Direction::Ascending), (y.clone(), Direction::Descending)],
            &enc(&Bson::Boolean(*id)),
        );
        let expected = compare_values(&a.0, &b.0)
            .then_with(|| compare_values(&a.1, &b.1).reverse())
            .then_with(|| a.2.cmp(&b.2));
        prop_assert_eq!(key(&a).cmp(&key(&b)), expected);
    }
}

proptest! {
    #[test]
    fn exact_decimal_of_a_double_has_all_its_digits(d in prop_oneof![
        any::<f64>(),
        Just(5e-324),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
        Just(0.1),
    ]) {
        prop_assume!(d.is_finite());
        // Every double has at most 767 significant digits: 800 after the point is exact.
        let long = format!("{:.800e}", d.abs());
        let (mantissa, exponent) = long.split_once('e').unwrap();
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let expected = ExactDecimal::new(d < 0.0, &digits, exponent.parse::<i32>().unwrap() - 800);
        prop_assert_eq!(ExactDecimal::from_f64(d), expected);
    }
}

/// Encoding and comparing values nested far past every limit need no stack per level: they run
/// on a 256 KiB stack (values are built and dropped on a big one: `Drop` recurses).
#[test]
fn deeply_nested_values_encode_and_compare_without_recursion() {
    fn nested(levels: usize, leaf: i32, arrays: bool) -> Bson {
        let mut v = Bson::Int32(leaf);
        for _ in 0..levels {
            v = if arrays {
                Bson::Array(vec![v])
            } else {
                Bson::Document(doc! {"a": v})
            };
        }
        v
    }
    std::thread::Builder::new()
        .stack_size(512 * 1024 * 1024)
        .spawn(|| {
            let (one, two) = (nested(50_000, 1, false), nested(50_000, 2, false));
            let (arr_one, arr_two) = (nested(50_000, 1, true), nested(50_000, 2, true));
            std::thread::scope(|s| {
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(s, || {
                        use crate::query::compare::compare_values;
                        use std::cmp::Ordering;
                        assert_eq!(compare_values(&one, &two), Ordering::Less);
                        assert_eq!(compare_values(&two, &one), Ordering::Greater);
                        assert_eq!(compare_values(&one, &one), Ordering::Equal);
                        assert_eq!(compare_values(&arr_one, &arr_two), Ordering::Less);
                        let key = |v: &Bson| {
                            let mut out = Vec::new();
                            encode_value(v, &mut out);
                            out
                        };
                        assert!(key(&one) < key(&two));
                        assert!(key(&arr_one) < key(&arr_two));
                        assert!(key(&arr_one) > key(&one), "arrays sort after documents");
                    })
                    .unwrap()
                    .join()
                    .unwrap();
            });
        })
        .unwrap()
        .join()
        .unwrap();
}
