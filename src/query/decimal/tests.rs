//! The decimal home's tables: bit-exact crossings, mongod's conversions, and decimal128
//! arithmetic at the edges of its range (34 digits, exponents -6176..=6111).

use super::*;
use std::str::FromStr;

fn bson(s: &str) -> BsonDecimal {
    BsonDecimal::from_str(s).unwrap()
}

/// The decimal text of a computed value, as mongod prints it.
fn text(d: Dec) -> String {
    to_bson(d).to_string()
}

#[test]
fn bson_values_cross_to_dec_and_back_unchanged() {
    let values = [
        "0",
        "-0",
        "0E-6176",
        "-0E+6111",
        "1.0",
        "-1.50",
        "0.1",
        "1E-6176",
        "-1E-6176",
        "9.999999999999999999999999999999999E+6144",
        "-9.999999999999999999999999999999999E+6144",
        "1234567890123456789012345678901234",
        "1.000000000000000000000000000000000E-6143",
        "123456789E+6103",
        "Infinity",
        "-Infinity",
        "NaN",
    ];
    for s in values {
        let original = bson(s);
        let back = to_bson(from_bson(&original));
        assert_eq!(back.bytes(), original.bytes(), "{s} came back as {back}");
        assert_eq!(text(from_bson(&original)), original.to_string(), "{s}");
    }
}

#[test]
fn non_canonical_coefficients_read_as_zero() {
    // 10^34 in the small-coefficient form, exponent 0: above the largest coefficient.
    let too_big = (6176u128 << 113) | 10u128.pow(34);
    let d = BsonDecimal::from_bytes(too_big.to_le_bytes());
    assert_eq!(text(from_bson(&d)), "0");
    // The large-coefficient form always implies a coefficient >= 2^113.
    let large_form = (0b11u128 << 125) | (6176u128 << 111) | 1;
    let d = BsonDecimal::from_bytes(large_form.to_le_bytes());
    assert_eq!(text(from_bson(&d)), "0");
    assert_eq!(Parts::of(&d).finite(), Some((false, 0, 0)));
}

#[test]
fn doubles_convert_as_mongod_converts_them() {
    let cases: Vec<(f64, usize, &str)> = vec![
        // kRoundTo15Digits keeps all 15 digits, trailing zeros included.
        (0.1, 15, "0.100000000000000"),
        (2.5, 15, "2.50000000000000"),
        (-1.0, 15, "-1.00000000000000"),
        (1.0 / 3.0, 15, "0.333333333333333"),
        (f64::MAX, 15, "1.79769313486232E+308"),
        (5e-324, 15, "4.94065645841247E-324"),
        (123456789012345680.0, 15, "1.23456789012346E+17"),
        (0.1, 34, "0.1000000000000000055511151231257827"),
        (f64::INFINITY, 15, "Infinity"),
        (f64::NEG_INFINITY, 34, "-Infinity"),
        (f64::NAN, 15, "NaN"),
    ];
    for (f, digits, expected) in cases {
        assert_eq!(
            text(from_f64(f, digits)),
            expected,
            "{f:e} to {digits} digits"
        );
    }
}

#[test]
fn integers_convert_exactly() {
    for (i, expected) in [
        (0, "0"),
        (-7, "-7"),
        (i64::MAX, "9223372036854775807"),
        (i64::MIN, "-9223372036854775808"),
    ] {
        assert_eq!(text(from_i64(i)), expected);
    }
    assert_eq!(
        text(from_i128(12_345_678_901_234_567_890_123_456_789_012_345)),
        "1.234567890123456789012345678901234E+34",
        "35 digits round half to even"
    );
}

#[test]
fn decimals_convert_to_the_nearest_double() {
    let cases: Vec<(&str, f64)> = vec![
        ("0.1", 0.1),
        ("-2.5", -2.5),
        ("-0", -0.0),
        ("1E+400", f64::INFINITY),
        ("-1E+400", f64::NEG_INFINITY),
        ("1E-400", 0.0),
        ("9007199254740993", 9007199254740992.0),
        ("Infinity", f64::INFINITY),
    ];
    for (s, expected) in cases {
        let got = bson_to_f64(&bson(s));
        assert_eq!(got.to_bits(), expected.to_bits(), "{s} gave {got:e}");
        assert_eq!(
            to_f64(from_bson(&bson(s))).to_bits(),
            expected.to_bits(),
            "{s}"
        );
    }
    assert!(bson_to_f64(&bson("NaN")).is_nan());
}

#[test]
fn decimals_round_to_integers_half_to_even() {
    let cases: Vec<(&str, Option<(i64, bool)>)> = vec![
        ("2", Some((2, true))),
        ("2.00", Some((2, true))),
        ("2E+3", Some((2000, true))),
        ("2.5", Some((2, false))),
        ("3.5", Some((4, false))),
        ("-2.5", Some((-2, false))),
        ("1E-40", Some((0, false))),
        ("-0", Some((0, true))),
        ("9223372036854775807", Some((i64::MAX, true))),
        ("-9223372036854775808", Some((i64::MIN, true))),
        ("9223372036854775808", None),
        ("1E+40", None),
        ("NaN", None),
        ("-Infinity", None),
    ];
    for (s, expected) in cases {
        assert_eq!(nearest_i64(&bson(s)), expected, "{s}");
        let exact = expected.and_then(|(n, exact)| exact.then_some(n));
        assert_eq!(exact_i64(&bson(s)), exact, "{s}");
    }
}

#[test]
fn arithmetic_rounds_to_34_digits_and_overflows_only_beyond_the_range() {
    type Op = fn(Dec, Dec) -> Dec;
    let cases: Vec<(Op, &str, &str, &str)> = vec![
        // Exact results keep the ideal exponent.
        (add, "0.1", "0.2", "0.3"),
        (add, "1.5", "-2", "-0.5"),
        (mul, "1.5", "2", "3.0"),
        (mul, "0.1", "0.1", "0.01"),
        (sub, "1.00", "1", "0.00"),
        // Inexact results round half to even at 34 digits.
        (
            add,
            "1234567890123456789012345678901234",
            "0.1",
            "1234567890123456789012345678901234",
        ),
        (
            add,
            "1234567890123456789012345678901234",
            "0.5",
            "1234567890123456789012345678901234",
        ),
        (
            add,
            "1234567890123456789012345678901235",
            "0.5",
            "1234567890123456789012345678901236",
        ),
        (
            add,
            "1234567890123456789012345678901234",
            "0.51",
            "1234567890123456789012345678901235",
        ),
        (
            add,
            "9999999999999999999999999999999999",
            "1",
            "1.000000000000000000000000000000000E+34",
        ),
        (div, "1", "3", "0.3333333333333333333333333333333333"),
        (
            add,
            "1E+6000",
            "1",
            "1.000000000000000000000000000000000E+6000",
        ),
        // Overflow only beyond 9.999…E+6144.
        (
            add,
            "9.999999999999999999999999999999999E+6144",
            "1E+6110",
            "9.999999999999999999999999999999999E+6144",
        ),
        (
            add,
            "9.999999999999999999999999999999999E+6144",
            "1E+6111",
            "Infinity",
        ),
        (
            mul,
            "9.999999999999999999999999999999999E+6144",
            "-2",
            "-Infinity",
        ),
        (
            mul,
            "1E+3072",
            "1E+3072",
            "1.000000000000000000000000000000000E+6144",
        ),
        (mul, "1E+3073", "1E+3072", "Infinity"),
        // Underflow goes through the subnormals to zero.
        (mul, "1E-6176", "0.5", "0E-6176"),
        (mul, "1E-6170", "1E-6", "1E-6176"),
        (mul, "-1E-6176", "0.1", "-0E-6176"),
        // NaN and the infinities.
        (add, "NaN", "1", "NaN"),
        (mul, "Infinity", "0", "NaN"),
        (add, "Infinity", "-Infinity", "NaN"),
        (add, "Infinity", "1E+6144", "Infinity"),
        (mul, "-Infinity", "-2", "Infinity"),
        // Negative zero.
        (add, "-0", "0", "0"),
        (add, "-0", "-0", "-0"),
        (mul, "-0", "5", "-0"),
        (mul, "-1.5", "0", "-0.0"),
    ];
    for (op, a, b, expected) in cases {
        let got = op(from_bson(&bson(a)), from_bson(&bson(b)));
        assert_eq!(text(got), expected, "{a} with {b}");
        assert_eq!(to_bson(got).bytes(), bson(expected).bytes(), "{a} with {b}");
    }
}
