//! Numeric arithmetic for `$inc` and `$mul` with mongod's type promotion: int32 op int32 stays
//! int32 unless it overflows (then int64); int64 overflow is an error; anything with a double
//! is a double; anything with a decimal is a decimal (exact when the result fits 34 digits).

use crate::query::compare::{Dec, Number};
use bson::{Bson, Decimal128};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arith {
    Add,
    Mul,
}

/// `current op operand`; `None` when an int64 result overflows (or an operand is not a number).
pub(super) fn apply(op: Arith, current: &Bson, operand: &Bson) -> Option<Bson> {
    let (a, b) = (Number::of(current)?, Number::of(operand)?);
    match (a, b) {
        (Number::Decimal(_), _) | (_, Number::Decimal(_)) => {
            Some(Bson::Decimal128(decimal(op, to_dec(a), to_dec(b))))
        }
        (Number::Double(_), _) | (_, Number::Double(_)) => {
            let (x, y) = (to_f64(a), to_f64(b));
            Some(Bson::Double(match op {
                Arith::Add => x + y,
                Arith::Mul => x * y,
            }))
        }
        (Number::Int(x), Number::Int(y)) => {
            let both_int32 = matches!(current, Bson::Int32(_)) && matches!(operand, Bson::Int32(_));
            let result = match op {
                Arith::Add => x.checked_add(y)?,
                Arith::Mul => x.checked_mul(y)?,
            };
            if both_int32 {
                if let Ok(small) = i32::try_from(result) {
                    return Some(Bson::Int32(small));
                }
            }
            Some(Bson::Int64(result))
        }
    }
}

/// Zero of the operand's numeric type (what `$mul` writes into a missing field).
pub(super) fn zero_like(operand: &Bson) -> Bson {
    match operand {
        Bson::Int32(_) => Bson::Int32(0),
        Bson::Int64(_) => Bson::Int64(0),
        Bson::Decimal128(_) => Bson::Decimal128(
            Dec::encode(false, 0, 0).unwrap_or_else(|| Decimal128::from_bytes([0; 16])),
        ),
        _ => Bson::Double(0.0),
    }
}

fn to_f64(n: Number) -> f64 {
    match n {
        Number::Int(i) => i as f64,
        Number::Double(d) => d,
        Number::Decimal(d) => d.to_f64(),
    }
}

fn to_dec(n: Number) -> Dec {
    match n {
        Number::Int(i) => Dec::from_i64(i),
        Number::Double(d) => Dec::from_f64(d),
        Number::Decimal(d) => d,
    }
}

fn decimal(op: Arith, a: Dec, b: Dec) -> Decimal128 {
    exact(op, a, b).unwrap_or_else(|| {
        let (x, y) = (a.to_f64(), b.to_f64());
        let r = match op {
            Arith::Add => x + y,
            Arith::Mul => x * y,
        };
        let text = if r.is_nan() {
            "NaN".to_owned()
        } else if r.is_infinite() {
            if r > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
        } else {
            format!("{r:e}")
        };
        text.parse()
            .unwrap_or_else(|_| Decimal128::from_bytes([0; 16]))
    })
}

fn exact(op: Arith, a: Dec, b: Dec) -> Option<Decimal128> {
    let (na, ca, ea) = a.finite()?;
    let (nb, cb, eb) = b.finite()?;
    match op {
        Arith::Mul => {
            let c = ca.checked_mul(cb)?;
            let (c, e) = normalize(c, ea.checked_add(eb)?);
            Dec::encode(na != nb && c != 0, c, e)
        }
        Arith::Add => {
            let e = ea.min(eb);
            let scale = |c: u128, from: i32| -> Option<i128> {
                let factor = 10u128.checked_pow(u32::try_from(from - e).ok()?)?;
                i128::try_from(c.checked_mul(factor)?).ok()
            };
            let sa = if na { -scale(ca, ea)? } else { scale(ca, ea)? };
            let sb = if nb { -scale(cb, eb)? } else { scale(cb, eb)? };
            let sum = sa.checked_add(sb)?;
            let (c, e) = normalize(sum.unsigned_abs(), e);
            Dec::encode(sum < 0, c, e)
        }
    }
}

/// Drops trailing zeros only while the coefficient is too wide for 34 digits.
fn normalize(mut c: u128, mut e: i32) -> (u128, i32) {
    while c >= 10u128.pow(34) && c.is_multiple_of(10) {
        c /= 10;
        e += 1;
    }
    (c, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(Decimal128::from_str(s).unwrap())
    }

    #[test]
    fn promotion_follows_mongod() {
        let cases: Vec<(Arith, Bson, Bson, Option<Bson>)> = vec![
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
            (Arith::Add, dec("0.1"), dec("0.2"), Some(dec("0.3"))),
            (Arith::Add, dec("1.5"), Bson::Int32(-2), Some(dec("-0.5"))),
            (Arith::Mul, dec("1.5"), Bson::Int32(2), Some(dec("3.0"))),
        ];
        for (op, a, b, expected) in cases {
            let got = apply(op, &a, &b);
            match (&got, &expected) {
                (Some(Bson::Decimal128(g)), Some(Bson::Decimal128(e))) => {
                    assert_eq!(g.to_string(), e.to_string(), "{op:?} {a} {b}")
                }
                _ => assert_eq!(got, expected, "{op:?} {a} {b}"),
            }
        }
    }
}
