//! `$sum` and `$avg`: mongod's widening of int32 → int64 → double, its double-double
//! summation of doubles (`DoubleDoubleSummation`, so a long column of doubles loses no more than
//! mongod loses), and decimal128 totals once a decimal is seen (`query::decimal`'s arithmetic).
//!
//! Owns: the running total and its result type. Does not own: which values reach it (the
//! accumulator ignores non-numbers before calling in).

use crate::query::decimal::{self, Dec};
use bson::{doc, Bson, Document};

/// A running numeric total.
#[derive(Debug, Default, Clone)]
pub struct Sum {
    /// Exact total of the int32 and int64 inputs (i128 never overflows on 2^64 inputs).
    int: i128,
    /// Double-double total of the double inputs: `sum + addend` carries ~106 bits.
    sum: f64,
    addend: f64,
    /// NaN and infinities, kept apart as mongod does.
    special: f64,
    width: Width,
    decimal: Option<Dec>,
    /// Whether a double was added (mongod then converts the non-decimal total as a double).
    doubles: bool,
    count: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, PartialOrd)]
enum Width {
    #[default]
    Int,
    Long,
    Double,
    Decimal,
}

fn dec_to_bson(d: Dec) -> Bson {
    Bson::Decimal128(decimal::to_bson(d))
}

/// `a + b` exactly, as a rounded sum and its error (Knuth's two-sum).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    (s, err)
}

impl Sum {
    /// Adds a value; returns whether it was a number (others do not count).
    pub fn add(&mut self, value: &Bson) -> bool {
        match value {
            Bson::Int32(n) => self.add_int(i128::from(*n), Width::Int),
            Bson::Int64(n) => self.add_int(i128::from(*n), Width::Long),
            Bson::Double(d) => {
                self.add_double(*d);
                self.doubles = true;
                self.widen(Width::Double);
            }
            Bson::Decimal128(d) => {
                let d = decimal::from_bson(d);
                self.decimal = Some(match self.decimal {
                    Some(total) => decimal::add(total, d),
                    None => d,
                });
                self.widen(Width::Decimal);
            }
            _ => return false,
        }
        self.count += 1;
        true
    }

    fn widen(&mut self, width: Width) {
        if self.width < width {
            self.width = width;
        }
    }

    fn add_int(&mut self, n: i128, width: Width) {
        self.int += n;
        self.widen(width);
    }

    fn add_double(&mut self, x: f64) {
        if !x.is_finite() {
            self.special += x;
            return;
        }
        let (s, e) = two_sum(self.sum, x);
        let (s, e2) = two_sum(s, self.addend + e);
        self.sum = s;
        self.addend = e2;
    }

    /// The int64 total, when no double or decimal was added and it fits.
    fn exact_long(&self) -> Option<i64> {
        i64::try_from(self.int).ok()
    }

    /// Every non-decimal input as one double.
    fn as_double(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        // The integers split into two exactly representable halves before joining the doubles.
        let high = (self.int >> 53) << 53;
        let low = self.int - high;
        let mut total = self.clone();
        total.add_double(high as f64);
        total.add_double(low as f64);
        total.sum + total.addend
    }

    /// The decimal total plus the others: exactly while they were integers, else as mongod's
    /// `getDecimal` does, their double total converted with 34 digits.
    fn as_decimal(&self) -> Dec {
        // mongod converts the double total with `kRoundTo34Digits`.
        let rest = if self.doubles {
            decimal::from_f64(self.as_double(), 34)
        } else {
            decimal::from_i128(self.int)
        };
        match self.decimal {
            Some(total) => decimal::add(total, rest),
            None => rest,
        }
    }

    /// `$sum`'s result: int32 while every input was an int32 and the total fits, int64 while
    /// the inputs were integers and it fits, else double; decimal once a decimal was added.
    pub fn total(&self) -> Bson {
        match self.width {
            Width::Int | Width::Long => match self.exact_long() {
                Some(n) if self.width == Width::Int => {
                    i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32)
                }
                Some(n) => Bson::Int64(n),
                None => Bson::Double(self.as_double()),
            },
            Width::Double => Bson::Double(self.as_double()),
            Width::Decimal => dec_to_bson(self.as_decimal()),
        }
    }

    /// `$avg`'s result: null without numbers, a decimal once a decimal was added, else a double.
    pub fn average(&self) -> Bson {
        if self.count == 0 {
            return Bson::Null;
        }
        if self.width == Width::Decimal {
            let count = decimal::from_i128(i128::from(self.count));
            return dec_to_bson(decimal::div(self.as_decimal(), count));
        }
        Bson::Double(self.as_double() / self.count as f64)
    }

    /// The state as a document, to be merged into another total later (spilled groups).
    pub fn partial(&self) -> Document {
        doc! {
            "i": self.int.to_string(),
            "s": self.sum,
            "a": self.addend,
            "x": self.special,
            "w": self.width as i32,
            "d": self.decimal.map_or(Bson::Null, dec_to_bson),
            "c": i64::try_from(self.count).unwrap_or(i64::MAX),
            "h": self.doubles,
        }
    }

    /// Adds a total written by [`Sum::partial`].
    pub fn merge(&mut self, partial: &Document) {
        if let Ok(i) = partial.get_str("i").unwrap_or("0").parse::<i128>() {
            self.int += i;
        }
        self.add_double(partial.get_f64("s").unwrap_or(0.0));
        self.add_double(partial.get_f64("a").unwrap_or(0.0));
        self.special += partial.get_f64("x").unwrap_or(0.0);
        let width = match partial.get_i32("w").unwrap_or(0) {
            0 => Width::Int,
            1 => Width::Long,
            2 => Width::Double,
            _ => Width::Decimal,
        };
        self.widen(width);
        if let Ok(d) = partial.get_decimal128("d") {
            let d = decimal::from_bson(d);
            self.decimal = Some(match self.decimal {
                Some(total) => decimal::add(total, d),
                None => d,
            });
        }
        self.count += u64::try_from(partial.get_i64("c").unwrap_or(0)).unwrap_or(0);
        self.doubles |= partial.get_bool("h").unwrap_or(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(values: &[Bson]) -> (Bson, Bson) {
        let mut s = Sum::default();
        for v in values {
            s.add(v);
        }
        (s.total(), s.average())
    }

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(s.parse().unwrap())
    }

    #[test]
    fn totals_widen_as_mongods() {
        let cases: Vec<(Vec<Bson>, Bson, Bson)> = vec![
            (vec![], Bson::Int32(0), Bson::Null),
            (
                vec![Bson::Int32(1), Bson::Int32(2)],
                Bson::Int32(3),
                Bson::Double(1.5),
            ),
            (
                vec![Bson::Int32(i32::MAX), Bson::Int32(1)],
                Bson::Int64(i64::from(i32::MAX) + 1),
                Bson::Double(1_073_741_824.0),
            ),
            (
                vec![Bson::Int32(1), Bson::Int64(2)],
                Bson::Int64(3),
                Bson::Double(1.5),
            ),
            (
                vec![Bson::Int64(i64::MAX), Bson::Int64(1), Bson::Int64(-1)],
                Bson::Int64(i64::MAX),
                Bson::Double(i64::MAX as f64 / 3.0),
            ),
            (
                vec![Bson::Int64(i64::MAX), Bson::Int64(1)],
                Bson::Double(9_223_372_036_854_775_808.0),
                Bson::Double(4_611_686_018_427_387_904.0),
            ),
            (
                vec![Bson::Int32(1), Bson::Double(0.5)],
                Bson::Double(1.5),
                Bson::Double(0.75),
            ),
            (
                vec![Bson::String("x".into()), Bson::Null],
                Bson::Int32(0),
                Bson::Null,
            ),
            (
                vec![Bson::Double(f64::INFINITY), Bson::Int32(1)],
                Bson::Double(f64::INFINITY),
                Bson::Double(f64::INFINITY),
            ),
            (vec![dec("1.5"), Bson::Int32(2)], dec("3.5"), dec("1.75")),
            (vec![dec("0.1"), dec("0.2")], dec("0.3"), dec("0.15")),
        ];
        for (input, total, avg) in cases {
            assert_eq!(sum(&input), (total, avg), "{input:?}");
        }
    }

    #[test]
    fn double_sums_keep_their_low_bits() {
        // 0.1 ten times is 0.9999999999999999 with naive addition; mongod's double-double sum
        // rounds to the nearest double of the exact total.
        let (total, _) = sum(&vec![Bson::Double(0.1); 10]);
        assert_eq!(total, Bson::Double(1.0));
        let (total, _) = sum(&[Bson::Double(1e100), Bson::Double(1.0), Bson::Double(-1e100)]);
        assert_eq!(total, Bson::Double(1.0));
    }

    #[test]
    fn partial_totals_merge() {
        let mut a = Sum::default();
        a.add(&Bson::Int32(1));
        a.add(&Bson::Double(0.25));
        let mut b = Sum::default();
        b.add(&dec("2"));
        b.merge(&a.partial());
        // A double meets a decimal as its exact value to 34 digits, as in mongod.
        assert_eq!(b.total(), dec("3.250000000000000000000000000000000"));
        assert_eq!(b.average(), dec("1.083333333333333333333333333333333"));
    }
}
