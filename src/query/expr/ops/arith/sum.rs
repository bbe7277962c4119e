//! `$add` and `$multiply`: mongod's running states, which keep the narrowest type that holds
//! the result (an int, a long that turns into a double on overflow, a double, a decimal), and for
//! `$add` at most one date, which makes the result a date.

use super::super::super::value::type_name;
use super::super::super::Value;
use super::{decimal_bson, int_or_long, Num};
use crate::error::{Error, ErrorCode, Result};
use crate::query::decimal;
use crate::query::decimal::Rounding;
use bson::{Bson, DateTime};
use decimal::Dec;

/// mongod's `AddState`: the narrowest type that holds the sum, a long sum that turns into a
/// double on overflow, and at most one date (the result is then a date).
#[derive(Default)]
struct AddState {
    long: i64,
    double: f64,
    decimal: Option<Dec>,
    widest: Widest,
    date: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(super) enum Widest {
    #[default]
    Int,
    Long,
    Double,
    Decimal,
}

pub(super) fn widest_of(n: Num) -> Widest {
    match n {
        Num::Int(_) => Widest::Int,
        Num::Long(_) => Widest::Long,
        Num::Double(_) => Widest::Double,
        Num::Decimal(_) => Widest::Decimal,
    }
}

impl AddState {
    fn add(&mut self, value: &Bson) -> Result<()> {
        let n = match value {
            Bson::DateTime(d) => {
                if self.date {
                    return Err(Error::new(
                        ErrorCode::Location16612,
                        "only one date allowed in an $add expression",
                    ));
                }
                self.date = true;
                Num::Long(d.timestamp_millis())
            }
            other => Num::of(other).ok_or_else(|| {
                Error::type_mismatch(format!(
                    "$add only supports numeric or date types, not {}",
                    type_name(&Some(other.clone()))
                ))
            })?,
        };
        let old = self.widest;
        if !matches!(value, Bson::DateTime(_)) {
            self.widest = self.widest.max(widest_of(n));
        }
        if old != self.widest {
            match (self.widest, old) {
                (Widest::Double, _) => self.double = self.long as f64,
                (Widest::Decimal, Widest::Double) => {
                    self.decimal = Some(decimal::from_f64(self.double, 34));
                }
                (Widest::Decimal, _) => self.decimal = Some(decimal::from_i64(self.long)),
                _ => {}
            }
        }
        match self.widest {
            Widest::Int | Widest::Long => match self.long.checked_add(n.to_i64()) {
                Some(sum) => self.long = sum,
                None => {
                    self.widest = Widest::Double;
                    self.double = self.long as f64 + n.to_f64();
                }
            },
            Widest::Double => self.double += n.to_f64(),
            Widest::Decimal => {
                let total = self.decimal.unwrap_or_else(|| decimal::from_i64(0));
                self.decimal = Some(decimal::add(total, n.to_dec()));
            }
        }
        Ok(())
    }

    fn value(&self) -> Result<Bson> {
        let total_dec = || self.decimal.unwrap_or_else(|| decimal::from_i64(0));
        if self.date {
            let millis = match self.widest {
                Widest::Int | Widest::Long => self.long,
                Widest::Double => {
                    // The upper bound is exclusive: i64::MAX rounds up as a double.
                    if !(self.double >= i64::MIN as f64 && self.double < i64::MAX as f64) {
                        return Err(Error::new(ErrorCode::Overflow, "date overflow in $add"));
                    }
                    self.double.round() as i64
                }
                // mongod does not check decimal dates for overflow; saturate.
                Widest::Decimal => {
                    decimal::to_i64(total_dec(), Rounding::HalfEven).unwrap_or_else(|| {
                        if decimal::is_positive(total_dec()) {
                            i64::MAX
                        } else {
                            i64::MIN
                        }
                    })
                }
            };
            return Ok(Bson::DateTime(DateTime::from_millis(millis)));
        }
        Ok(match self.widest {
            Widest::Int => int_or_long(self.long),
            Widest::Long => Bson::Int64(self.long),
            Widest::Double => Bson::Double(self.double),
            Widest::Decimal => decimal_bson(total_dec()),
        })
    }
}

pub(super) fn add(values: Vec<Value>) -> Result<Value> {
    let mut state = AddState::default();
    for value in &values {
        match value {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
            Some(v) => state.add(v)?,
        }
    }
    state.value().map(Some)
}

/// mongod's `MultiplyState`: a double product always, a long product until it overflows or
/// meets a non-finite factor, and a decimal product from the first decimal on.
pub(super) fn multiply(values: Vec<Value>) -> Result<Value> {
    let mut double = 1.0f64;
    let mut long: i64 = 1;
    let mut product: Option<Dec> = None;
    let mut widest = Widest::Int;
    for value in &values {
        let value = match value {
            None | Some(Bson::Null | Bson::Undefined) => return Ok(Some(Bson::Null)),
            Some(v) => v,
        };
        let n = Num::of(value).ok_or_else(|| {
            Error::type_mismatch(format!(
                "$multiply only supports numeric types, not {}",
                type_name(&Some(value.clone()))
            ))
        })?;
        let old = widest;
        widest = widest.max(widest_of(n));
        if widest == Widest::Decimal {
            let so_far = match (product, old) {
                (Some(p), _) => p,
                (None, Widest::Double) => decimal::from_f64(double, 15),
                (None, _) => decimal::from_i64(long),
            };
            product = Some(decimal::mul(so_far, n.to_dec()));
            continue;
        }
        double *= n.to_f64();
        if widest != Widest::Double {
            match long.checked_mul(n.to_i64()) {
                Some(p) if n.to_f64().is_finite() => long = p,
                _ => widest = Widest::Double,
            }
        }
    }
    Ok(Some(match widest {
        Widest::Int => int_or_long(long),
        Widest::Long => Bson::Int64(long),
        Widest::Double => Bson::Double(double),
        Widest::Decimal => decimal_bson(product.unwrap_or_else(|| decimal::from_i64(1))),
    }))
}
