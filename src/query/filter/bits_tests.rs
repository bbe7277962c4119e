//! The bit-test operators value by value: `(value of a, operators on a, matches)` for each operand
//! form and value type, then every parse error with mongod's code and message. mongod's own
//! jstest tables are in `bits_jstests.rs`.

use super::*;
use crate::error::ErrorCode;
use bson::spec::BinarySubtype;
use bson::{bson, doc, Binary, Bson, Decimal128, Document};
use std::str::FromStr;

/// Each `(filter, count)` over the documents `{a: value}`.
pub(super) fn check_counts(values: &[Bson], cases: &[(Document, usize)]) {
    for (filter, expected) in cases {
        let compiled = Filter::compile(filter).unwrap_or_else(|e| panic!("{filter}: {e}"));
        let found = values
            .iter()
            .filter(|a| compiled.matches(&doc! {"a": (*a).clone()}).unwrap())
            .count();
        assert_eq!(found, *expected, "{filter}");
    }
}

/// Each `(value, operators, matches)`: whether `{a: operators}` matches `{a: value}`.
fn check(cases: &[(Bson, Document, bool)]) {
    for (value, ops, expected) in cases {
        let (d, filter) = (doc! {"a": value.clone()}, doc! {"a": ops.clone()});
        let compiled = Filter::compile(&filter).unwrap_or_else(|e| panic!("{filter}: {e}"));
        assert_eq!(compiled.matches(&d).unwrap(), *expected, "{filter} on {d}");
    }
}

pub(super) fn bin(base64: &str) -> Bson {
    Bson::Binary(Binary::from_base64(base64, BinarySubtype::Generic).unwrap())
}

fn bytes(bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    })
}

/// A BinData of the old subtype 2 as the shell writes `BinData(2, base64)`: the payload starts
/// with its inner length, which the bson crate strips when it reads the value.
pub(super) fn old_bin(base64: &str) -> Bson {
    let payload = Binary::from_base64(base64, BinarySubtype::Generic)
        .unwrap()
        .bytes;
    Bson::Binary(Binary {
        subtype: BinarySubtype::BinaryOld,
        bytes: payload[4..].to_vec(),
    })
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(Decimal128::from_str(s).unwrap())
}

pub(super) fn all_positions() -> Vec<i32> {
    (0..64).collect()
}

#[test]
fn numbers_are_64_bit_twos_complement() {
    let (min, max, two_63) = (i64::MIN, i64::MAX, 2f64.powi(63));
    check(&[
        (bson!(6), doc! {"$bitsAllSet": [1, 2]}, true),
        (bson!(6_i64), doc! {"$bitsAllSet": 6_i64}, true),
        (bson!(6.0), doc! {"$bitsAllSet": 6.0}, true),
        (bson!(6.5), doc! {"$bitsAllClear": 0}, false),
        (bson!(6.5), doc! {"$bitsAnyClear": [62]}, false),
        // Positions past 63 test the sign: set for negatives, clear for the rest.
        (bson!(-5), doc! {"$bitsAllSet": [200]}, true),
        (bson!(5), doc! {"$bitsAllClear": [200]}, true),
        (bson!(-5), doc! {"$bitsAllSet": [1]}, true),
        (bson!(-5), doc! {"$bitsAllClear": [2]}, true),
        (bson!(min), doc! {"$bitsAllSet": [63, 64, 2147483647]}, true),
        (bson!(min), doc! {"$bitsAnySet": [0, 62]}, false),
        (bson!(max), doc! {"$bitsAllSet": max}, true),
        (bson!(max), doc! {"$bitsAnyClear": [63]}, true),
        (bson!(-1), doc! {"$bitsAllSet": all_positions()}, true),
        (bson!(i32::MIN), doc! {"$bitsAllSet": [31, 32, 63]}, true),
        // Doubles: integral and within the int64 range only.
        (bson!(-two_63), doc! {"$bitsAllSet": [63]}, true),
        (bson!(two_63), doc! {"$bitsAllClear": 0}, false),
        (bson!(f64::NAN), doc! {"$bitsAllClear": 0}, false),
        (bson!(f64::INFINITY), doc! {"$bitsAnyClear": [1]}, false),
        (bson!(-0.0), doc! {"$bitsAllClear": all_positions()}, true),
        (
            bson!(4_503_599_627_370_496.0),
            doc! {"$bitsAllSet": [52]},
            true,
        ),
    ]);
}

/// A decimal goes through `Decimal128::toLong`: rounded half to even; NaN, infinities and
/// values outside the int64 range read as its minimum (only bit 63 set).
#[test]
fn decimals_are_rounded_to_longs() {
    check(&[
        (dec("42"), doc! {"$bitsAllSet": 42}, true),
        (
            dec("42.13"),
            doc! {"$bitsAllSet": [1, 3, 5], "$bitsAllClear": [0, 2, 4]},
            true,
        ),
        (
            dec("2.5"),
            doc! {"$bitsAllSet": [1], "$bitsAllClear": [0]},
            true,
        ),
        (
            dec("3.5"),
            doc! {"$bitsAllSet": [2], "$bitsAllClear": [0, 1]},
            true,
        ),
        (dec("-1.1"), doc! {"$bitsAllSet": all_positions()}, true),
        (dec("0.4"), doc! {"$bitsAllClear": all_positions()}, true),
        (
            dec("1E+2"),
            doc! {"$bitsAllSet": 100, "$bitsAllClear": !100 & 0xff},
            true,
        ),
        (
            dec("9223372036854775807"),
            doc! {"$bitsAllSet": i64::MAX},
            true,
        ),
        (
            dec("-9223372036854775808"),
            doc! {"$bitsAllSet": [63]},
            true,
        ),
        (
            dec("NaN"),
            doc! {"$bitsAllSet": [63], "$bitsAllClear": [0, 62]},
            true,
        ),
        (dec("Infinity"), doc! {"$bitsAllSet": [63]}, true),
        (dec("-Infinity"), doc! {"$bitsAnySet": [5]}, false),
        (
            dec("9223372036854775808"),
            doc! {"$bitsAllSet": [63], "$bitsAnySet": [0]},
            false,
        ),
        (
            dec("9223372036854775808"),
            doc! {"$bitsAllSet": [63], "$bitsAllClear": [0]},
            true,
        ),
        (dec("1E+40"), doc! {"$bitsAllClear": [0, 1, 2]}, true),
        (dec("1E-40"), doc! {"$bitsAllClear": all_positions()}, true),
    ]);
}

#[test]
fn bindata_values_are_bit_strings_of_their_length() {
    let nine = bytes(&[0, 0, 0, 0, 0, 0, 0, 0, 1]);
    check(&[
        (bytes(&[]), doc! {"$bitsAllSet": []}, true),
        (bytes(&[]), doc! {"$bitsAllClear": [0, 100]}, true),
        (bytes(&[]), doc! {"$bitsAnySet": [0]}, false),
        (bytes(&[0x01, 0x80]), doc! {"$bitsAllSet": [0, 15]}, true),
        (
            bytes(&[0x01, 0x80]),
            doc! {"$bitsAllClear": [16, 63, 64]},
            true,
        ),
        (bytes(&[0x01, 0x80]), doc! {"$bitsAnyClear": [0, 15]}, false),
        // A number operand tests its 8 bytes; bytes past the value's end are clear.
        (bytes(&[0x03]), doc! {"$bitsAllSet": 3}, true),
        (bytes(&[0xff]), doc! {"$bitsAllSet": 256}, false),
        (bytes(&[0xff]), doc! {"$bitsAllClear": 256}, true),
        (nine.clone(), doc! {"$bitsAnySet": [64]}, true),
        (nine, doc! {"$bitsAnySet": i64::MAX}, false),
        // A BinData operand tests the value's bytes position by position.
        (
            bytes(&[0xf0, 0x0f]),
            doc! {"$bitsAllSet": bytes(&[0x30, 0x01])},
            true,
        ),
        (
            bytes(&[0xf0]),
            doc! {"$bitsAllClear": bytes(&[0x0f, 0xff])},
            true,
        ),
        (
            bytes(&[0xf0]),
            doc! {"$bitsAnyClear": bytes(&[0x00, 0x01])},
            true,
        ),
        (bytes(&[0xf0]), doc! {"$bitsAnySet": bytes(&[0x0f])}, false),
        // The old binary subtype keeps its 4-byte inner length at the front, as stored.
        (old_bin("BAAAADEyMzQ="), doc! {"$bitsAllSet": [2, 32]}, true),
        (
            old_bin("BAAAADEyMzQ="),
            doc! {"$bitsAnySet": [0, 1, 3]},
            false,
        ),
    ]);
}

/// mongod builds the number mask from a BinData operand's first 8 bytes through a signed
/// `char` (x86-64): a byte of 0x80 or more also sets every higher bit. Later bytes set bit 63.
#[test]
fn bindata_operands_on_numbers() {
    let nine = bytes(&[0, 0, 0, 0, 0, 0, 0, 0, 1]);
    check(&[
        (bson!(513), doc! {"$bitsAllSet": bytes(&[0x01, 0x02])}, true),
        (
            bson!(512),
            doc! {"$bitsAnyClear": bytes(&[0x01, 0x02])},
            true,
        ),
        (bson!(0x7f), doc! {"$bitsAllSet": bytes(&[0x7f])}, true),
        (bson!(0x80), doc! {"$bitsAllSet": bytes(&[0x80])}, false),
        (bson!(-128), doc! {"$bitsAllSet": bytes(&[0x80])}, true),
        (
            bson!(0x8000),
            doc! {"$bitsAnySet": bytes(&[0x00, 0x80])},
            true,
        ),
        (
            bson!(0x8000),
            doc! {"$bitsAllSet": bytes(&[0x00, 0x80])},
            false,
        ),
        (bson!(1), doc! {"$bitsAllClear": nine.clone()}, true),
        (bson!(-1), doc! {"$bitsAllSet": nine}, true),
        (bson!(1), doc! {"$bitsAllSet": bytes(&[])}, true),
        (bson!(1), doc! {"$bitsAnySet": bytes(&[])}, false),
    ]);
}

#[test]
fn other_types_never_match() {
    let values = [
        bson!("7"),
        bson!(true),
        Bson::Null,
        bson!({"b": 7}),
        bson!([]),
        Bson::DateTime(bson::DateTime::from_millis(7)),
        Bson::Timestamp(bson::Timestamp {
            time: 7,
            increment: 7,
        }),
    ];
    for value in values {
        check(&[
            (value.clone(), doc! {"$bitsAllClear": 0}, false),
            (value.clone(), doc! {"$bitsAllSet": []}, false),
            (value.clone(), doc! {"$bitsAnyClear": [0]}, false),
            (value, doc! {"$bitsAnySet": 7}, false),
        ]);
    }
    let missing = Filter::compile(&doc! {"a": {"$bitsAllClear": 0}}).unwrap();
    assert!(!missing.matches(&doc! {"b": 1}).unwrap());
}

#[test]
fn arrays_match_through_their_elements() {
    let elem_match = doc! {"$elemMatch": {"$bitsAllSet": 2, "$bitsAllClear": 1}};
    check(&[
        (bson!([1.5, "x", 54]), doc! {"$bitsAllSet": 54}, true),
        (bson!([1, 2]), doc! {"$bitsAllSet": 3}, false),
        (bson!([[54]]), doc! {"$bitsAllSet": 54}, false),
        (bson!([bytes(&[1]), 2]), doc! {"$bitsAllSet": [0]}, true),
        (bson!([1, 2]), elem_match.clone(), true),
        (bson!([3, 4]), elem_match, false),
        (bson!([1, 2]), doc! {"$all": [1], "$bitsAnySet": [1]}, true),
    ]);
    let dotted = Filter::compile(&doc! {"a.b": {"$bitsAnySet": [2]}}).unwrap();
    assert!(dotted.matches(&doc! {"a": [{"b": 3}, {"b": 4}]}).unwrap());
    assert!(!dotted.matches(&doc! {"a": [{"b": 3}, {"b": 8}]}).unwrap());
}

#[test]
fn not_negates_the_test() {
    check(&[
        (bson!(2), doc! {"$not": {"$bitsAllSet": 1}}, true),
        (bson!(3), doc! {"$not": {"$bitsAllSet": 1}}, false),
        (bson!("x"), doc! {"$not": {"$bitsAllSet": 1}}, true),
        (bson!([1, 2]), doc! {"$not": {"$bitsAnySet": [0]}}, false),
        (bytes(&[1]), doc! {"$not": {"$bitsAnyClear": [0]}}, true),
    ]);
    let missing = Filter::compile(&doc! {"a": {"$not": {"$bitsAnySet": [0]}}}).unwrap();
    assert!(missing.matches(&doc! {"b": 1}).unwrap());
    let nor = Filter::compile(&doc! {"$nor": [{"a": {"$bitsAllClear": [0]}}]}).unwrap();
    assert!(nor.matches(&doc! {"a": 1}).unwrap());
}

#[test]
fn operands_that_parse() {
    let operands = [
        bson!(0),
        bson!(i64::MAX),
        bson!(2.0),
        bson!(-0.0),
        dec("2"),
        dec("2.000"),
        dec("-0"),
        bson!([]),
        bson!([i32::MAX, 5_i64, 3.0, dec("4")]),
        bytes(&[]),
        bytes(&[0xff; 40]),
    ];
    for operand in operands {
        let filter = doc! {"a": {"$bitsAnySet": operand}};
        assert!(Filter::compile(&filter).is_ok(), "{filter}");
    }
}

#[test]
fn parse_errors_carry_mongod_codes_and_messages() {
    let takes = "takes an Array, a number, or a BinData but received:";
    let (bad, ftp) = (ErrorCode::BadValue, ErrorCode::FailedToParse);
    let position = "Failed to parse bit position.";
    let cases: Vec<(Document, ErrorCode, String)> = vec![
        (
            doc! {"a": {"$bitsAllSet": "123"}},
            bad,
            format!("a {takes} $bitsAllSet: \"123\""),
        ),
        (
            doc! {"a.b": {"$bitsAnySet": null}},
            bad,
            format!("a.b {takes} $bitsAnySet: null"),
        ),
        (
            doc! {"a": {"$bitsAllClear": {"x": 1}}},
            bad,
            format!("a {takes} $bitsAllClear: {{ x: 1 }}"),
        ),
        (
            doc! {"a": {"$bitsAnyClear": true}},
            bad,
            format!("a {takes} $bitsAnyClear: true"),
        ),
        (
            doc! {"a": {"$not": {"$bitsAnyClear": true}}},
            bad,
            format!("a {takes} $bitsAnyClear: true"),
        ),
        // mongod parses `$elemMatch`'s value case with an empty path.
        (
            doc! {"a": {"$elemMatch": {"$bitsAllSet": "x"}}},
            bad,
            format!(" {takes} $bitsAllSet: \"x\""),
        ),
        (
            doc! {"a": {"$bitsAllSet": -1}},
            ftp,
            "Expected a non-negative number in: $bitsAllSet: -1".into(),
        ),
        (
            doc! {"a": {"$bitsAllClear": -1_i64}},
            ftp,
            "Expected a non-negative number in: $bitsAllClear: -1".into(),
        ),
        (
            doc! {"a": {"$bitsAnySet": -1.0}},
            ftp,
            "Expected a non-negative number in: $bitsAnySet: -1.0".into(),
        ),
        (
            doc! {"a": {"$bitsAnyClear": -1e18}},
            ftp,
            "Expected a non-negative number in: $bitsAnyClear: -1e+18.0".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": 1.2}},
            ftp,
            "Expected an integer: $bitsAllSet: 1.2".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": f64::NAN}},
            ftp,
            "Expected an integer, but found NaN in: $bitsAllSet: nan.0".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": 1e19}},
            ftp,
            "Cannot represent as a 64-bit integer: $bitsAllSet: 1e+19.0".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": f64::INFINITY}},
            ftp,
            "Cannot represent as a 64-bit integer: $bitsAllSet: inf.0".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": f64::NEG_INFINITY}},
            ftp,
            "Cannot represent as a 64-bit integer: $bitsAllSet: -inf.0".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": 2f64.powi(63)}},
            ftp,
            "Cannot represent as a 64-bit integer: $bitsAllSet: 9.223372036854776e+18".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": dec("1.5")}},
            ftp,
            "Cannot represent as a 64-bit integer: $bitsAllSet: 1.5".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": dec("NaN")}},
            ftp,
            "Cannot represent as a 64-bit integer: $bitsAllSet: NaN".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": dec("9223372036854775808")}},
            ftp,
            "Cannot represent as a 64-bit integer: $bitsAllSet: 9223372036854775808".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": dec("-2")}},
            ftp,
            "Expected a non-negative number in: $bitsAllSet: -2".into(),
        ),
        (
            doc! {"a": {"$bitsAllSet": [-1]}},
            bad,
            format!("{position} Expected a non-negative number in: 0: -1"),
        ),
        (
            doc! {"a": {"$bitsAllSet": [1, "123"]}},
            bad,
            format!("{position} Expected a number in: 1: \"123\""),
        ),
        (
            doc! {"a": {"$bitsAllSet": [null]}},
            bad,
            format!("{position} Expected a number in: 0: null"),
        ),
        (
            doc! {"a": {"$bitsAnyClear": [[1]]}},
            bad,
            format!("{position} Expected a number in: 0: [ 1 ]"),
        ),
        (
            doc! {"a": {"$bitsAllClear": [1.2]}},
            bad,
            format!("{position} Expected an integer: 0: 1.2"),
        ),
        (
            doc! {"a": {"$bitsAllClear": [f64::NAN]}},
            bad,
            format!("{position} Expected an integer, but found NaN in: 0: nan.0"),
        ),
        (
            doc! {"a": {"$bitsAllClear": [1e300]}},
            bad,
            format!("{position} Cannot represent as a 64-bit integer: 0: 1e+300.0"),
        ),
        (
            doc! {"a": {"$bitsAnySet": [2_147_483_648_i64]}},
            bad,
            format!("{position} Cannot represent 0: 2147483648 in an int"),
        ),
        (
            doc! {"a": {"$bitsAnySet": [-2_147_483_649_i64]}},
            bad,
            format!("{position} Cannot represent 0: -2147483649 in an int"),
        ),
        (
            doc! {"a": {"$bitsAnySet": [-1.0]}},
            bad,
            format!("{position} Expected a non-negative number in: 0: -1.0"),
        ),
        (
            doc! {"a": {"$bitsAnyClear": [dec("2.5")]}},
            bad,
            format!("{position} Cannot represent as a 64-bit integer: 0: 2.5"),
        ),
        // The geo operators stay refused.
        (
            doc! {"a": {"$near": [0, 0]}},
            ErrorCode::NotImplemented,
            "$near is not supported by this server".into(),
        ),
        (
            doc! {"a": {"$geoWithin": {}}},
            ErrorCode::NotImplemented,
            "$geoWithin is not supported by this server".into(),
        ),
    ];
    for (filter, code, message) in cases {
        let err = Filter::compile(&filter).unwrap_err();
        assert_eq!((err.code, err.message), (code, message), "{filter}");
    }
}

/// C's `%.16g` plus mongod's `.0` when the text has no `.`, `E` or `N`: doubles in these
/// messages.
#[test]
fn doubles_print_as_mongod_prints_them() {
    let cases = [
        (1.2, "1.2"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16.0"),
        (1.5e16, "1.5e+16"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05.0"),
        (1.0 / 3.0, "0.3333333333333333"),
        (123_456_789.125, "123456789.125"),
        (f64::MAX, "1.797693134862316e+308"),
    ];
    for (value, text) in cases {
        assert_eq!(super::bits::double_nice(value), text, "{value:e}");
    }
}
