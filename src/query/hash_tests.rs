//! The hash against the values MongoDB's own tests expect.
//!
//! Source of every expected value, unless a case says otherwise: mongod's
//! `src/mongo/db/hasher_test.cpp` (`BSONElementHasher::hash64(element, 0)`, "hard-coded checks
//! to ensure the hash function is consistent across platforms and server versions").

use super::*;
use bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary, DateTime, JavaScriptCodeWithScope};

fn bin(subtype: BinarySubtype, bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype,
        bytes: bytes.to_vec(),
    })
}

fn oid(hex: &str) -> Bson {
    Bson::ObjectId(ObjectId::parse_str(hex).unwrap())
}

/// `BSONDBRef(ns, oid)`: a DBPointer, which the `bson` crate builds only from extended JSON.
fn db_pointer(ns: &str, id: &str) -> Bson {
    Bson::try_from(serde_json::json!({"$dbPointer": {"$ref": ns, "$id": {"$oid": id}}})).unwrap()
}

#[test]
fn hashes_match_mongods_test_vectors() {
    let cases: Vec<(&str, Bson, i64)> = vec![
        // HashIntOrLongOrDouble: numbers hash as their 64-bit integer value.
        ("int 42", Bson::Int32(42), -944_302_157_085_130_861),
        (
            "double 42.123",
            Bson::Double(42.123),
            -944_302_157_085_130_861,
        ),
        ("long 42", Bson::Int64(42), -944_302_157_085_130_861),
        ("int 0", Bson::Int32(0), 4_854_801_880_128_277_513),
        (
            "double 0.456",
            Bson::Double(0.456),
            4_854_801_880_128_277_513,
        ),
        ("long 0", Bson::Int64(0), 4_854_801_880_128_277_513),
        (
            "NaN as zero",
            Bson::Double(f64::NAN),
            4_854_801_880_128_277_513,
        ),
        ("int 1", Bson::Int32(1), 5_902_408_780_260_971_510),
        (
            "double 1.987",
            Bson::Double(1.987),
            5_902_408_780_260_971_510,
        ),
        ("long 1", Bson::Int64(1), 5_902_408_780_260_971_510),
        ("int -1", Bson::Int32(-1), 1_140_205_862_565_771_219),
        (
            "double -1.789",
            Bson::Double(-1.789),
            1_140_205_862_565_771_219,
        ),
        ("long -1", Bson::Int64(-1), 1_140_205_862_565_771_219),
        ("int min", Bson::Int32(i32::MIN), 6_165_898_260_261_354_870),
        (
            "double int min",
            Bson::Double(f64::from(i32::MIN)),
            6_165_898_260_261_354_870,
        ),
        (
            "long int min",
            Bson::Int64(i64::from(i32::MIN)),
            6_165_898_260_261_354_870,
        ),
        ("int max", Bson::Int32(i32::MAX), 1_143_184_177_162_245_883),
        (
            "double int max",
            Bson::Double(f64::from(i32::MAX)),
            1_143_184_177_162_245_883,
        ),
        (
            "long int max",
            Bson::Int64(i64::from(i32::MAX)),
            1_143_184_177_162_245_883,
        ),
        (
            "double max saturates",
            Bson::Double(f64::MAX),
            921_523_596_458_303_250,
        ),
        ("long max", Bson::Int64(i64::MAX), 921_523_596_458_303_250),
        (
            "double lowest saturates",
            Bson::Double(-f64::MAX),
            4_532_067_210_535_695_462,
        ),
        ("long min", Bson::Int64(i64::MIN), 4_532_067_210_535_695_462),
        // HashMinKey, HashMaxKey, HashUndefined, HashNull.
        ("minKey", Bson::MinKey, 7_961_148_599_568_647_290),
        ("maxKey", Bson::MaxKey, 5_504_842_513_779_440_750),
        ("undefined", Bson::Undefined, 40_158_834_000_849_533),
        ("null", Bson::Null, 2_338_878_944_348_059_895),
        // HashString: symbols hash as strings.
        (
            "string abc",
            Bson::String("abc".into()),
            8_478_485_326_885_698_097,
        ),
        (
            "symbol abc",
            Bson::Symbol("abc".into()),
            8_478_485_326_885_698_097,
        ),
        (
            "empty string",
            Bson::String(String::new()),
            2_049_396_243_249_673_340,
        ),
        (
            "empty symbol",
            Bson::Symbol(String::new()),
            2_049_396_243_249_673_340,
        ),
        // HashObject, HashArray.
        (
            "object",
            Bson::Document(doc! {"a": "abc", "b": 123_i64}),
            4_771_603_801_758_380_216,
        ),
        (
            "empty object",
            Bson::Document(doc! {}),
            7_980_500_913_326_740_417,
        ),
        (
            "array",
            Bson::Array(vec!["bar".into(), "baz".into(), "qux".into()]),
            -2_938_911_267_422_831_539,
        ),
        (
            "empty array",
            Bson::Array(vec![]),
            8_849_948_234_993_459_283,
        ),
        // HashBinary.
        (
            "binary general",
            bin(BinarySubtype::Generic, &[0, 1, 2, 3, 4, 6]),
            7_252_465_090_394_235_301,
        ),
        (
            "binary user defined",
            bin(BinarySubtype::UserDefined(0x80), &[0, 1, 2, 3, 4, 6]),
            5_736_670_452_907_618_262,
        ),
        (
            "binary uuid",
            bin(BinarySubtype::Uuid, &(0u8..16).collect::<Vec<u8>>()),
            6_084_661_258_071_355_978,
        ),
        // HashObjectId.
        (
            "objectId",
            oid("010203040506070809101112"),
            -5_588_663_249_627_035_708,
        ),
        (
            "zero objectId",
            oid("000000000000000000000000"),
            -4_293_118_519_463_489_418,
        ),
        // HashBoolean.
        ("true", Bson::Boolean(true), 6_405_873_908_747_105_701),
        ("false", Bson::Boolean(false), 6_289_544_573_401_934_092),
        // HashTimeStamp (its dates; see `timestamps_are_not_dates` for its timestamps).
        (
            "date",
            Bson::DateTime(DateTime::from_millis(0x5566_7788_1122_3344)),
            4_476_222_765_095_560_467,
        ),
        (
            "date 0",
            Bson::DateTime(DateTime::from_millis(0)),
            -1_178_696_894_582_842_035,
        ),
        // HashRegEx.
        (
            "regex",
            Bson::RegularExpression(bson::Regex {
                pattern: "mongodb".into(),
                options: String::new(),
            }),
            -7_275_792_090_268_217_043,
        ),
        (
            "regex with options",
            Bson::RegularExpression(bson::Regex {
                pattern: ".*".into(),
                options: "i".into(),
            }),
            7_095_855_029_187_981_886,
        ),
        // HashDBRef.
        (
            "dbPointer c",
            db_pointer("c", "010203040506070809101112"),
            940_175_826_736_461_384,
        ),
        (
            "dbPointer db.c",
            db_pointer("db.c", "010203040506070809101112"),
            2_426_768_198_104_018_194,
        ),
        // HashCode, HashCodeWScope.
        (
            "code",
            Bson::JavaScriptCode("func f() { return 1; }".into()),
            6_861_638_109_178_014_270,
        ),
        (
            "code with scope",
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: "func f() { return 1; }".into(),
                scope: doc! {"c": true},
            }),
            501_342_939_894_575_968,
        ),
        // MongoDB's `$toHashedIndexKey` reference page: `{$toHashedIndexKey: "string to hash"}`
        // returns `763543691661428748`.
        (
            "string to hash",
            Bson::String("string to hash".into()),
            763_543_691_661_428_748,
        ),
    ];
    for (name, value, expected) in cases {
        assert_eq!(hash64(&value).unwrap(), expected, "{name}: {value}");
    }
}

#[test]
fn equal_numbers_hash_equal_and_squash_recursively() {
    // hasher_test.cpp's RecursiveSquashingIntsAndDoubles and VeryLargeAndSmallDoubles.
    let a = Bson::Document(doc! {"a": 3, "b": [3.1, {"c": 3}]});
    let b = Bson::Document(doc! {"a": 3.1, "b": [3, {"c": 3.0}]});
    assert_eq!(hash64(&a).unwrap(), hash64(&b).unwrap());
    let max = hash64(&Bson::Int64(i64::MAX)).unwrap();
    assert_eq!(hash64(&Bson::Double(f64::MAX)).unwrap(), max);
    assert_ne!(hash64(&Bson::Double((i64::MAX / 2) as f64)).unwrap(), max);
    // Exactly 2^63 wraps to i64::MIN (safeNumberLongForHash keeps older servers' cast).
    assert_eq!(
        hash64(&Bson::Double(9_223_372_036_854_775_808.0)).unwrap(),
        hash64(&Bson::Int64(i64::MIN)).unwrap()
    );
    // Decimals: toLong rounds half to even, so 2.5 hashes as 2 and 3.5 as 4.
    let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
    assert_eq!(
        hash64(&dec("2.5")).unwrap(),
        hash64(&Bson::Int32(2)).unwrap()
    );
    assert_eq!(
        hash64(&dec("3.5")).unwrap(),
        hash64(&Bson::Int32(4)).unwrap()
    );
    assert_eq!(
        hash64(&dec("NaN")).unwrap(),
        hash64(&Bson::Int32(0)).unwrap()
    );
}

#[test]
fn structure_and_types_matter() {
    // hasher_test.cpp: ArrayAndSubobjectHashesDiffer, SubDocumentGroupingHashesDiffer,
    // IntAndStringHashesDiffer.
    let h = |v: Bson| hash64(&v).unwrap();
    assert_ne!(
        h(Bson::Document(doc! {"0": 0, "1": 1})),
        h(Bson::Array(vec![0.into(), 1.into()]))
    );
    assert_ne!(
        h(Bson::Document(doc! {"a": {}, "b": 1})),
        h(Bson::Document(doc! {"a": {"b": 1}}))
    );
    assert_ne!(h(Bson::Int32(3)), h(Bson::String("3".into())));
}

#[test]
fn timestamps_are_not_dates() {
    // hasher_test.cpp once expected a timestamp to hash as the date of the same 8 bytes, from
    // when both had the canonical type 45; since timestamps have their own (47) they differ.
    let ts = Bson::Timestamp(bson::Timestamp {
        time: 0x5566_7788,
        increment: 0x1122_3344,
    });
    let date = Bson::DateTime(DateTime::from_millis(0x5566_7788_1122_3344));
    assert_ne!(hash64(&ts).unwrap(), hash64(&date).unwrap());
}
