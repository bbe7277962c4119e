//! The fields of a bson Decimal128: IEEE 754-2008 decimal128 in the binary integer decimal (BID)
//! encoding, as stored on the wire and on disk, read and written bit by bit.
//!
//! Owns: decoding the 128 bits into sign, kind, coefficient and exponent, and encoding finite
//! values back. Non-canonical coefficients (above 10^34 - 1, including every value of the
//! large-coefficient form) read as zero, as the standard and mongod's library say. Does not own:
//! arithmetic or ordering (callers compare parts; `compare` orders them).

use bson::Decimal128 as BsonDecimal;

/// 10^34 - 1, the largest canonical coefficient.
pub(crate) const MAX_COEFFICIENT: u128 = 9_999_999_999_999_999_999_999_999_999_999_999;

/// The encoded exponent is the real one plus this bias (decimal128: -6176..=6111 encoded).
const EXPONENT_BIAS: i32 = 6176;

/// A decoded Decimal128. The sign of a NaN is not kept: no operation mongod offers shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parts {
    NaN,
    Infinity {
        negative: bool,
    },
    /// `±coefficient × 10^exponent`, `coefficient <= MAX_COEFFICIENT`.
    Finite {
        negative: bool,
        coefficient: u128,
        exponent: i32,
    },
}

impl Parts {
    /// Decodes the BID bits (bson stores them little-endian).
    pub(crate) fn of(d: &BsonDecimal) -> Parts {
        let bits = u128::from_le_bytes(d.bytes());
        let negative = bits >> 127 == 1;
        let combination = (bits >> 122) & 0x1F;
        if combination == 0x1F {
            return Parts::NaN;
        }
        if combination == 0x1E {
            return Parts::Infinity { negative };
        }
        // Both shifts leave at most 14 bits, so the casts are exact.
        let (biased_exponent, coefficient) = if (bits >> 125) & 0b11 == 0b11 {
            // Large-coefficient form: the implied coefficient is >= 2^113 > MAX_COEFFICIENT.
            (((bits >> 111) & 0x3FFF) as i32, 0)
        } else {
            (((bits >> 113) & 0x3FFF) as i32, bits & ((1u128 << 113) - 1))
        };
        Parts::Finite {
            negative,
            coefficient: if coefficient > MAX_COEFFICIENT {
                0
            } else {
                coefficient
            },
            exponent: biased_exponent - EXPONENT_BIAS,
        }
    }

    /// Encodes the value in the small-coefficient form (every canonical finite value fits it);
    /// `None` when the coefficient or the exponent is out of decimal128's range.
    pub(crate) fn encode(self) -> Option<BsonDecimal> {
        let bits = match self {
            Parts::NaN => 0x1F << 122,
            Parts::Infinity { negative } => (u128::from(negative) << 127) | (0x1E << 122),
            Parts::Finite {
                negative,
                coefficient,
                exponent,
            } => {
                if coefficient > MAX_COEFFICIENT || !(-6176..=6111).contains(&exponent) {
                    return None;
                }
                let biased = u128::try_from(exponent + EXPONENT_BIAS).ok()?;
                (u128::from(negative) << 127) | (biased << 113) | coefficient
            }
        };
        Some(BsonDecimal::from_bytes(bits.to_le_bytes()))
    }

    /// An integer, exactly (every i64 has at most 19 digits).
    pub(crate) fn from_i64(i: i64) -> Parts {
        Parts::Finite {
            negative: i < 0,
            coefficient: u128::from(i.unsigned_abs()),
            exponent: 0,
        }
    }

    /// `(negative, coefficient, exponent)` for finite values.
    pub(crate) fn finite(self) -> Option<(bool, u128, i32)> {
        match self {
            Parts::Finite {
                negative,
                coefficient,
                exponent,
            } => Some((negative, coefficient, exponent)),
            _ => None,
        }
    }

    /// The nearest double, ties to even (Rust's float parser rounds correctly; out of range
    /// becomes ±inf or ±0), as mongod's `Decimal128::toDouble`.
    pub(crate) fn to_f64(self) -> f64 {
        match self {
            Parts::NaN => f64::NAN,
            Parts::Infinity { negative: true } => f64::NEG_INFINITY,
            Parts::Infinity { negative: false } => f64::INFINITY,
            Parts::Finite {
                negative,
                coefficient,
                exponent,
            } => {
                let magnitude = format!("{coefficient}e{exponent}")
                    .parse::<f64>()
                    .unwrap_or(f64::NAN);
                if negative {
                    -magnitude
                } else {
                    magnitude
                }
            }
        }
    }
}
