//! `$bucketAuto`'s `granularity`: rounding bucket boundaries to a preferred-number series
//! (Renard R5–R80, 1-2-5, the IEC 60063 E6–E192) repeated over every power of ten, or to
//! powers of two.
//!
//! Owns: the series (as mongod lists them) and the two roundings, computed on doubles step for
//! step as mongod does: up to the smallest series value strictly greater than a number, down to
//! the largest strictly smaller one (0 stays 0). A decimal is rounded as a double (mongod
//! rounds it in decimal arithmetic). Callers pass only
//! non-negative numbers (`$bucketAuto` checks with mongod's codes 40258–40260).

use bson::Bson;

/// A rounding granularity.
#[derive(Debug, Clone, Copy)]
pub enum Granularity {
    /// One decade of a series, as mongod lists it (integers, scaled by powers of ten).
    Series(&'static [u32]),
    PowersOf2,
}

const R5: &[u32] = &[10, 16, 25, 40, 63];
const R10: &[u32] = &[100, 125, 160, 200, 250, 315, 400, 500, 630, 800];
const R20: &[u32] = &[
    100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800,
    900,
];
// mongod's series as it has them: its R40 lacks 335, and its R80 holds only the values
// between R40's.
const R40: &[u32] = &[
    100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280,
    300, 315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900,
    950,
];
const R80: &[u32] = &[
    103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290,
    307, 325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875,
    925, 975,
];
const ONE_TWO_FIVE: &[u32] = &[10, 20, 50];
const E6: &[u32] = &[10, 15, 22, 33, 47, 68];
const E12: &[u32] = &[10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82];
const E24: &[u32] = &[
    10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91,
];
const E48: &[u32] = &[
    100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237,
    249, 261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590,
    619, 649, 681, 715, 750, 787, 825, 866, 909, 953,
];
const E96: &[u32] = &[
    100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154,
    158, 162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243,
    249, 255, 261, 267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383,
    392, 402, 412, 422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604,
    619, 634, 649, 665, 681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953,
    976,
];
const E192: &[u32] = &[
    100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123, 124,
    126, 127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152, 154, 156,
    158, 160, 162, 164, 165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189, 191, 193, 196,
    198, 200, 203, 205, 208, 210, 213, 215, 218, 221, 223, 226, 229, 232, 234, 237, 240, 243, 246,
    249, 252, 255, 258, 261, 264, 267, 271, 274, 277, 280, 284, 287, 291, 294, 298, 301, 305, 309,
    312, 316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361, 365, 370, 374, 379, 383, 388,
    392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448, 453, 459, 464, 470, 475, 481, 487,
    493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556, 562, 569, 576, 583, 590, 597, 604, 612,
    619, 626, 634, 642, 649, 657, 665, 673, 681, 690, 698, 706, 715, 723, 732, 741, 750, 759, 768,
    777, 787, 796, 806, 816, 825, 835, 845, 856, 866, 876, 887, 898, 909, 920, 931, 942, 953, 965,
    976, 988,
];

impl Granularity {
    pub fn parse(name: &str) -> Option<Granularity> {
        Some(match name {
            "R5" => Granularity::Series(R5),
            "R10" => Granularity::Series(R10),
            "R20" => Granularity::Series(R20),
            "R40" => Granularity::Series(R40),
            "R80" => Granularity::Series(R80),
            "1-2-5" => Granularity::Series(ONE_TWO_FIVE),
            "E6" => Granularity::Series(E6),
            "E12" => Granularity::Series(E12),
            "E24" => Granularity::Series(E24),
            "E48" => Granularity::Series(E48),
            "E96" => Granularity::Series(E96),
            "E192" => Granularity::Series(E192),
            "POWERSOF2" => Granularity::PowersOf2,
            _ => return None,
        })
    }

    /// The smallest granularity value strictly greater than `value`.
    pub fn round_up(&self, value: &Bson) -> Bson {
        self.round(value, true)
    }

    /// The largest granularity value strictly smaller than `value` (0 for 0).
    pub fn round_down(&self, value: &Bson) -> Bson {
        self.round(value, false)
    }

    fn round(&self, value: &Bson, up: bool) -> Bson {
        let x = number(value);
        if x == 0.0 || !x.is_finite() {
            return value.clone();
        }
        match self {
            Granularity::Series(series) => {
                let series: Vec<f64> = series.iter().map(|m| f64::from(*m)).collect();
                Bson::Double(if up {
                    series_up(&series, x)
                } else {
                    series_down(&series, x)
                })
            }
            Granularity::PowersOf2 => powers_of_two(value, x, up),
        }
    }
}

fn number(value: &Bson) -> f64 {
    match value {
        Bson::Int32(i) => f64::from(*i),
        Bson::Int64(i) => *i as f64,
        Bson::Double(d) => *d,
        Bson::Decimal128(d) => crate::query::decimal::bson_to_f64(d),
        _ => f64::NAN,
    }
}

/// mongod's `GranularityRounderPreferredNumbers::roundUp` on doubles, step for step (its
/// scaling by repeated multiplication and division by ten decides the last bits).
fn series_up(series: &[f64], x: f64) -> f64 {
    let (Some(&first), Some(&last)) = (series.first(), series.last()) else {
        return x;
    };
    let mut multiplier = 1.0;
    while x >= last * multiplier {
        multiplier *= 10.0;
    }
    while x < first * multiplier {
        let previous_min = first * multiplier;
        multiplier /= 10.0;
        if x >= last * multiplier {
            return previous_min;
        }
    }
    series
        .iter()
        .find(|s| x < **s * multiplier)
        .map_or(x, |s| s * multiplier)
}

/// mongod's `roundDown` on doubles.
fn series_down(series: &[f64], x: f64) -> f64 {
    let (Some(&first), Some(&last)) = (series.first(), series.last()) else {
        return x;
    };
    let mut multiplier = 1.0;
    while x <= first * multiplier {
        multiplier /= 10.0;
    }
    while x > last * multiplier {
        let previous_max = last * multiplier;
        multiplier *= 10.0;
        if x <= first * multiplier {
            return previous_max;
        }
    }
    series
        .iter()
        .rev()
        .find(|s| **s * multiplier < x)
        .map_or(x, |s| s * multiplier)
}

/// mongod computes the power as `$pow: [2, k]` with an integer `k`: an int32 (or int64) while it
/// fits, a double for negative `k`, whatever the input's type.
fn powers_of_two(value: &Bson, x: f64, up: bool) -> Bson {
    let k = match value {
        Bson::Int32(_) | Bson::Int64(_) => {
            let n = match value {
                Bson::Int32(i) => i64::from(*i),
                Bson::Int64(i) => *i,
                _ => 0,
            };
            // The highest set bit, as mongod finds it by counting leading zeros.
            let top = 63 - i64::from(n.leading_zeros());
            if up {
                top + 1
            } else if n & (n - 1) == 0 {
                top - 1
            } else {
                top
            }
        }
        _ => {
            let top = x.log2().floor() as i64;
            if up {
                top + 1
            } else if 2f64.powi(top as i32) == x {
                top - 1
            } else {
                top
            }
        }
    };
    match u32::try_from(k).ok().and_then(|k| 2i64.checked_pow(k)) {
        Some(p) => i32::try_from(p).map_or(Bson::Int64(p), Bson::Int32),
        None => Bson::Double(2f64.powi(k.clamp(-2000, 2000) as i32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_the_next_series_value() {
        let r5 = Granularity::parse("R5").unwrap();
        assert_eq!(r5.round_up(&Bson::Int32(1)), Bson::Double(1.6));
        // mongod scales by repeated multiplication: 6.3 rounds up to 63 × 0.1, a hair above it.
        assert_eq!(r5.round_up(&Bson::Double(6.3)), Bson::Double(63.0 * 0.1));
        assert_eq!(r5.round_up(&Bson::Int32(99)), Bson::Double(100.0));
        assert_eq!(r5.round_down(&Bson::Int32(1)), Bson::Double(0.63));
        assert_eq!(r5.round_down(&Bson::Int32(20)), Bson::Double(16.0));
        assert_eq!(r5.round_down(&Bson::Double(0.2)), Bson::Double(0.16));
        let e6 = Granularity::parse("E6").unwrap();
        assert_eq!(e6.round_up(&Bson::Int32(50)), Bson::Double(68.0));
        let one_two_five = Granularity::parse("1-2-5").unwrap();
        assert_eq!(one_two_five.round_up(&Bson::Int32(7)), Bson::Double(10.0));
        assert_eq!(one_two_five.round_down(&Bson::Int32(7)), Bson::Double(5.0));
        let p2 = Granularity::parse("POWERSOF2").unwrap();
        assert_eq!(p2.round_up(&Bson::Int32(8)), Bson::Int32(16));
        assert_eq!(p2.round_down(&Bson::Int32(8)), Bson::Int32(4));
        assert_eq!(p2.round_up(&Bson::Double(0.3)), Bson::Double(0.5));
        assert_eq!(p2.round_up(&Bson::Double(5.0)), Bson::Int32(8));
        assert_eq!(p2.round_down(&Bson::Double(5.0)), Bson::Int32(4));
        assert_eq!(p2.round_down(&Bson::Int64(1 << 40)), Bson::Int64(1 << 39));
        assert_eq!(p2.round_up(&Bson::Int32(0)), Bson::Int32(0));
        let r80 = Granularity::parse("R80").unwrap();
        assert_eq!(r80.round_up(&Bson::Int32(104)), Bson::Double(109.0));
        assert!(Granularity::parse("R7").is_none());
    }
}
