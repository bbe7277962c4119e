//! Value semantics the operators share: truthiness, missing versus `null`, type names, and how
//! values compare (the one place a collation will plug into expression comparisons).

use super::Value;
use crate::query::compare::compare_values;
use bson::Bson;
use std::cmp::Ordering;

/// How an expression compares values: BSON order, strings by the operation's collation.
#[derive(Debug, Clone, Default)]
pub struct Comparator {
    collation: Option<crate::query::collation::Collation>,
}

impl Comparator {
    /// Strings compare through `collation` (`None`: by bytes).
    pub fn with_collation(collation: Option<crate::query::collation::Collation>) -> Comparator {
        Comparator { collation }
    }

    /// The collation strings compare under (`None`: by bytes).
    pub fn collation(&self) -> Option<&crate::query::collation::Collation> {
        self.collation.as_ref()
    }

    /// The order of two present values.
    pub fn compare(&self, a: &Bson, b: &Bson) -> Ordering {
        crate::query::compare::compare_values_with(a, b, self.collation.as_ref())
    }

    pub fn equal(&self, a: &Bson, b: &Bson) -> bool {
        self.compare(a, b) == Ordering::Equal
    }

    /// The order of two values that may be missing: missing sorts before everything, `null`
    /// included, and equals only missing (so `{$eq: ["$nope", null]}` is false, as in mongod).
    pub fn compare_values(&self, a: &Value, b: &Value) -> Ordering {
        match (a, b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(a), Some(b)) => self.compare(a, b),
        }
    }
}

/// mongod's `coerceToBool`: false for `false`, `null`, `undefined`, missing and numeric zero;
/// true for everything else (empty strings and arrays included).
pub fn truthy(value: &Value) -> bool {
    match value {
        None | Some(Bson::Null | Bson::Undefined | Bson::Boolean(false)) => false,
        Some(Bson::Int32(0) | Bson::Int64(0)) => false,
        Some(Bson::Double(d)) => *d != 0.0,
        Some(d @ Bson::Decimal128(_)) => compare_values(d, &Bson::Int32(0)) != Ordering::Equal,
        Some(_) => true,
    }
}

/// `null`, `undefined` or missing: what most operators answer `null` for.
pub fn nullish(value: &Value) -> bool {
    matches!(value, None | Some(Bson::Null | Bson::Undefined))
}

/// mongod's type name of a value; `"missing"` for none.
pub fn type_name(value: &Value) -> &'static str {
    value
        .as_ref()
        .map_or("missing", crate::query::path::type_name)
}

/// A value as mongod prints it in an error message.
pub fn render(value: &Value) -> String {
    value
        .as_ref()
        .map_or_else(|| "MISSING".to_owned(), crate::query::path::render)
}

/// A number with an integral value that fits in an `i64` (mongod's `integral64Only` checks),
/// as that `i64`.
pub fn integral_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) => double_to_i64(*d),
        Bson::Decimal128(d) => double_to_i64(crate::query::decimal::bson_to_f64(d)),
        _ => None,
    }
}

/// As [`integral_i64`], for values that must fit in an `i32`.
pub fn integral_i32(value: &Bson) -> Option<i32> {
    integral_i64(value).and_then(|i| i32::try_from(i).ok())
}

fn double_to_i64(d: f64) -> Option<i64> {
    // 2^63 is exactly representable; every double below it in magnitude with no fraction
    // converts exactly.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (d.fract() == 0.0 && (-LIMIT..LIMIT).contains(&d)).then_some(d as i64)
}

/// Fails when `value` nests deeper than BSON allows (mongod's limit on values it builds),
/// walking it without recursion.
pub fn check_depth(value: &Bson) -> crate::error::Result<()> {
    use crate::query::depth::MAX_BSON_DEPTH;
    let mut stack: Vec<(&Bson, usize)> = vec![(value, 0)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Bson>> = match v {
            Bson::Document(d) => Box::new(d.values()),
            Bson::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        if depth >= MAX_BSON_DEPTH {
            return Err(crate::error::Error::new(
                crate::error::ErrorCode::Overflow,
                format!("cannot build a value nested more than {MAX_BSON_DEPTH} levels deep"),
            ));
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    Ok(())
}

/// A date as mongod prints it by default (`$toString`, `$dateToString` without a format):
/// `2024-01-31T12:00:00.000Z`, always with milliseconds.
pub fn iso_date_string(date: bson::DateTime) -> String {
    let millis = date.timestamp_millis();
    // Outside the years -9999..=9999: mongod prints these too, but no client relies on the
    // form; say what it is.
    crate::calendar::iso::date_string(millis).unwrap_or_else(|| format!("Date({millis})"))
}
