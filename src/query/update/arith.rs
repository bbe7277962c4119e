//! Numeric arithmetic for `$inc` and `$mul`, as mongod's `SafeNum` computes it: int32 op int32
//! stays int32 unless it overflows (then int64); int64 overflow is an error; a double with
//! integers is a double; anything with a decimal is a decimal computed in decimal128 (34 digits,
//! round half to even, ±Infinity only beyond decimal128's range), the other operand converted
//! as `SafeNum::getDecimal` converts it: integers exactly, a double rounded to 15 significant
//! digits (`kRoundTo15Digits`).
//!
//! Owns: the promotion rules and mongod's operand order (`operand op current`, as
//! `ArithmeticNode` computes it). Does not own: the decimal arithmetic (`query::decimal`).

use crate::query::decimal::{self, Dec};
use bson::Bson;
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arith {
    Add,
    Mul,
}

/// `current op operand`; `None` when an int64 result overflows (or an operand is not a number).
pub(super) fn apply(op: Arith, current: &Bson, operand: &Bson) -> Option<Bson> {
    match (operand, current) {
        (Bson::Decimal128(_), _) | (_, Bson::Decimal128(_)) => {
            let (x, y) = (to_decimal(operand)?, to_decimal(current)?);
            Some(Bson::Decimal128(decimal::to_bson(match op {
                Arith::Add => decimal::add(x, y),
                Arith::Mul => decimal::mul(x, y),
            })))
        }
        (Bson::Double(_), _) | (_, Bson::Double(_)) => {
            let (x, y) = (to_f64(operand)?, to_f64(current)?);
            Some(Bson::Double(match op {
                Arith::Add => x + y,
                Arith::Mul => x * y,
            }))
        }
        (Bson::Int32(x), Bson::Int32(y)) => {
            // The i64 result of two i32s never overflows.
            let (x, y) = (i64::from(*x), i64::from(*y));
            let result = match op {
                Arith::Add => x + y,
                Arith::Mul => x * y,
            };
            Some(i32::try_from(result).map_or(Bson::Int64(result), Bson::Int32))
        }
        _ => {
            let (x, y) = (to_i64(operand)?, to_i64(current)?);
            Some(Bson::Int64(match op {
                Arith::Add => x.checked_add(y)?,
                Arith::Mul => x.checked_mul(y)?,
            }))
        }
    }
}

/// What `$mul` writes into a missing field: the operand times int32 zero, as mongod's
/// `setValueForNewElement` computes it (so `-2.5` gives `-0.0`, a decimal keeps its exponent).
/// Parsing admits only numeric operands and nothing overflows times zero, so `apply` answers.
pub(super) fn product_with_zero(operand: &Bson) -> Bson {
    apply(Arith::Mul, &Bson::Int32(0), operand).unwrap_or(Bson::Int32(0))
}

/// mongod's `SafeNum::isIdentical`, which makes an update a no-op: the same numeric type and an
/// equal value (decimals compare by value, so `1.00` is identical to `1`; `-0.0` to `0.0`).
pub(super) fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x == y,
        (Bson::Int64(x), Bson::Int64(y)) => x == y,
        (Bson::Double(x), Bson::Double(y)) => x == y,
        (Bson::Decimal128(x), Bson::Decimal128(y)) => {
            decimal::compare(decimal::from_bson(x), decimal::from_bson(y)) == Some(Ordering::Equal)
        }
        _ => false,
    }
}

fn to_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        _ => None,
    }
}

/// `SafeNum::getDouble`: an int64 rounds to the nearest double.
fn to_f64(value: &Bson) -> Option<f64> {
    match value {
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => Some(decimal::bson_to_f64(d)),
        other => to_i64(other).map(|i| i as f64),
    }
}

/// `SafeNum::getDecimal`.
fn to_decimal(value: &Bson) -> Option<Dec> {
    match value {
        Bson::Decimal128(d) => Some(decimal::from_bson(d)),
        Bson::Double(d) => Some(decimal::from_f64(*d, 15)),
        other => to_i64(other).map(decimal::from_i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::Decimal128;
    use std::str::FromStr;

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(Decimal128::from_str(s).unwrap())
    }

    /// `(op, current, operand, result)`: results compare bit for bit (type, sign, exponent).
    fn check(cases: Vec<(Arith, Bson, Bson, Option<Bson>)>) {
        for (op, current, operand, expected) in cases {
            let got = apply(op, &current, &operand);
            let same = match (&got, &expected) {
                (Some(Bson::Double(g)), Some(Bson::Double(e))) => {
                    g.to_bits() == e.to_bits() || (g.is_nan() && e.is_nan())
                }
                _ => got == expected,
            };
            assert!(
                same,
                "{op:?} {current} by {operand}: got {got:?}, expected {expected:?}"
            );
        }
    }

    #[test]
    fn integers_and_doubles_promote_as_mongod() {
        check(vec![
            (
                Arith::Add,
                Bson::Int32(1),
                Bson::Int32(2),
                Some(Bson::Int32(3)),
            ),
            (
                Arith::Add,
                Bson::Int32(i32::MAX),
                Bson::Int32(1),
                Some(Bson::Int64(i64::from(i32::MAX) + 1)),
            ),
            (
                Arith::Add,
                Bson::Int32(1),
                Bson::Int64(2),
                Some(Bson::Int64(3)),
            ),
            (Arith::Add, Bson::Int64(i64::MAX), Bson::Int32(1), None),
            (Arith::Mul, Bson::Int64(i64::MIN), Bson::Int32(-1), None),
            (
                Arith::Add,
                Bson::Int32(1),
                Bson::Double(0.5),
                Some(Bson::Double(1.5)),
            ),
            (
                Arith::Mul,
                Bson::Int32(65536),
                Bson::Int32(65536),
                Some(Bson::Int64(1 << 32)),
            ),
            (
                Arith::Mul,
                Bson::Int64(3),
                Bson::Double(2.0),
                Some(Bson::Double(6.0)),
            ),
            // An int64 meets a double as the nearest double.
            (
                Arith::Add,
                Bson::Int64(i64::MAX),
                Bson::Double(0.0),
                Some(Bson::Double(9_223_372_036_854_775_808.0)),
            ),
            (
                Arith::Mul,
                Bson::Double(-0.0),
                Bson::Int32(1),
                Some(Bson::Double(-0.0)),
            ),
        ]);
    }

    #[test]
    fn decimals_compute_in_decimal128() {
        let max = "9.999999999999999999999999999999999E+6144";
        check(vec![
            (Arith::Add, dec("0.1"), dec("0.2"), Some(dec("0.3"))),
            (Arith::Add, dec("1.5"), Bson::Int32(-2), Some(dec("-0.5"))),
            (Arith::Mul, dec("1.5"), Bson::Int32(2), Some(dec("3.0"))),
            // 35 digits round half to even at 34: 0.1 is lost, as in mongod.
            (
                Arith::Add,
                dec("1234567890123456789012345678901234"),
                dec("0.1"),
                Some(dec("1234567890123456789012345678901234")),
            ),
            (
                Arith::Add,
                dec("1234567890123456789012345678901235"),
                dec("0.5"),
                Some(dec("1234567890123456789012345678901236")),
            ),
            (
                Arith::Add,
                dec("1E+6000"),
                Bson::Int32(1),
                Some(dec("1.000000000000000000000000000000000E+6000")),
            ),
            (
                Arith::Mul,
                dec("1E+6000"),
                dec("1E+144"),
                Some(dec("1.000000000000000000000000000000000E+6144")),
            ),
            // Infinity only beyond decimal128's range.
            (Arith::Mul, dec(max), Bson::Int32(10), Some(dec("Infinity"))),
            (
                Arith::Mul,
                dec(max),
                Bson::Int64(-10),
                Some(dec("-Infinity")),
            ),
            (Arith::Add, dec(max), dec("1E+6111"), Some(dec("Infinity"))),
            (Arith::Mul, dec("1E-6176"), dec("0.1"), Some(dec("0E-6176"))),
            // Integers convert exactly, even beyond a double's 53 bits.
            (
                Arith::Add,
                dec("0"),
                Bson::Int64(i64::MAX),
                Some(dec("9223372036854775807")),
            ),
            (
                Arith::Mul,
                Bson::Int64(i64::MIN),
                dec("2"),
                Some(dec("-18446744073709551616")),
            ),
            // A double converts with 15 significant digits (kRoundTo15Digits), either side.
            (
                Arith::Add,
                dec("1"),
                Bson::Double(0.1),
                Some(dec("1.100000000000000")),
            ),
            (
                Arith::Add,
                Bson::Double(0.1),
                dec("1"),
                Some(dec("1.100000000000000")),
            ),
            (
                Arith::Mul,
                dec("10"),
                Bson::Double(f64::MAX),
                Some(dec("1.797693134862320E+309")),
            ),
            (
                Arith::Mul,
                Bson::Double(1.0 / 3.0),
                dec("3"),
                Some(dec("0.999999999999999")),
            ),
            // NaN and the infinities.
            (Arith::Add, dec("NaN"), Bson::Int32(1), Some(dec("NaN"))),
            (
                Arith::Add,
                Bson::Double(f64::NAN),
                dec("1"),
                Some(dec("NaN")),
            ),
            (
                Arith::Add,
                dec("Infinity"),
                Bson::Double(f64::NEG_INFINITY),
                Some(dec("NaN")),
            ),
            (
                Arith::Mul,
                dec("Infinity"),
                Bson::Int32(0),
                Some(dec("NaN")),
            ),
            (
                Arith::Add,
                dec("-Infinity"),
                dec("1E+6144"),
                Some(dec("-Infinity")),
            ),
            // Negative zero.
            (Arith::Mul, dec("-0"), Bson::Int32(5), Some(dec("-0"))),
            (Arith::Add, dec("-0"), dec("0"), Some(dec("0"))),
            (Arith::Add, dec("-0"), dec("-0"), Some(dec("-0"))),
            (
                Arith::Mul,
                dec("2.5"),
                Bson::Double(-0.0),
                Some(dec("-0E-15")),
            ),
        ]);
    }

    #[test]
    fn mul_into_a_missing_field_multiplies_the_operand_by_int32_zero() {
        let cases: Vec<(Bson, Bson)> = vec![
            (Bson::Int32(7), Bson::Int32(0)),
            (Bson::Int64(-7), Bson::Int64(0)),
            (Bson::Double(2.5), Bson::Double(0.0)),
            (Bson::Double(-2.5), Bson::Double(-0.0)),
            (dec("2.50"), dec("0.00")),
            (dec("-1.5"), dec("-0.0")),
            (dec("1E+10"), dec("0E+10")),
            (dec("Infinity"), dec("NaN")),
        ];
        for (operand, expected) in cases {
            let got = product_with_zero(&operand);
            let same = match (&got, &expected) {
                (Bson::Double(g), Bson::Double(e)) => g.to_bits() == e.to_bits(),
                _ => got == expected,
            };
            assert!(same, "{operand}: got {got:?}, expected {expected:?}");
        }
        assert!(
            matches!(product_with_zero(&Bson::Double(f64::NAN)), Bson::Double(d) if d.is_nan())
        );
    }

    #[test]
    fn identical_results_are_no_ops_as_in_mongod() {
        let cases: Vec<(Bson, Bson, bool)> = vec![
            (Bson::Int32(1), Bson::Int32(1), true),
            (Bson::Int32(1), Bson::Int64(1), false),
            (Bson::Double(0.0), Bson::Double(-0.0), true),
            (Bson::Double(f64::NAN), Bson::Double(f64::NAN), false),
            (dec("1"), dec("1.00"), true),
            (dec("-0"), dec("0E+5"), true),
            (dec("1"), Bson::Double(1.0), false),
            (dec("NaN"), dec("NaN"), false),
            (dec("Infinity"), dec("Infinity"), true),
        ];
        for (a, b, expected) in cases {
            assert_eq!(identical(&a, &b), expected, "{a} and {b}");
        }
    }
}
