//! Window frames of `$setWindowFields`: `window: {documents: [lo, hi]}` and
//! `window: {range: [lo, hi], unit}`, parsed with mongod's rules, and the documents of a
//! partition each frame covers around each document.
//!
//! Owns: frame parsing and endpoints. Does not own: what a function computes over the frame
//! (`functions.rs`). A range frame measures from the current document's value of the single
//! ascending `sortBy` field; `"current"` is the current document's position, as mongod's
//! partition iterator takes it.

use super::SortBy;
use crate::calendar::{unit::add, TimeUnit, Zone};
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::{compare_values, is_number, type_bracket};
use crate::query::expr::value::type_name;
use crate::query::expr::{Expression, Value, Variables};
use bson::Bson;
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound<T> {
    Unbounded,
    Current,
    At(T),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Documents(Bound<i64>, Bound<i64>),
    Range {
        lo: Bound<f64>,
        hi: Bound<f64>,
        unit: Option<TimeUnit>,
    },
}

fn parse_error(message: impl Into<String>) -> Error {
    Error::failed_to_parse(message)
}

impl Frame {
    /// The default frame: the whole partition.
    pub const WHOLE: Frame = Frame::Documents(Bound::Unbounded, Bound::Unbounded);

    pub fn is_whole(&self) -> bool {
        *self == Frame::WHOLE
    }

    /// Parses the `window` field of a window function.
    pub fn parse(arg: &Bson, sort: Option<&SortBy>, vars: &Variables) -> Result<Frame> {
        let Bson::Document(spec) = arg else {
            return Err(parse_error("'window' field must be an object"));
        };
        let documents = spec.get("documents");
        let range = spec.get("range");
        let unit = spec.get("unit");
        if documents.is_some() && range.is_some() {
            return Err(parse_error(
                "Window bounds can specify either 'documents' or 'unit', not both.",
            ));
        }
        if range.is_none() && unit.is_some() {
            return Err(parse_error(
                "Window bounds can only specify 'unit' with range-based bounds.",
            ));
        }
        if let Some(documents) = documents {
            if spec.len() != 1 {
                return Err(parse_error(
                    "'window' field that specifies documents cannot have other fields",
                ));
            }
            let (lo, hi) = pair(documents)?;
            let whole_number = |v: &Bson| {
                crate::query::expr::value::integral_i64(v)
                    .ok_or_else(|| parse_error("Numeric document-based bounds must be an integer"))
            };
            let lo = bound(lo, vars, whole_number)?;
            let hi = bound(hi, vars, whole_number)?;
            check_forward(&lo, &hi, |a, b| a <= b, |v| v.to_string())?;
            let frame = Frame::Documents(lo, hi);
            if !frame.is_whole() && sort.is_none() {
                return Err(Error::new(
                    ErrorCode::Location5339901,
                    "Document-based bounds require a sortBy",
                ));
            }
            return Ok(frame);
        }
        let Some(range) = range else {
            if !spec.is_empty() {
                return Err(parse_error(
                    "'window' field can only contain 'documents' as the only argument or \
                     'range' with an optional 'unit' field",
                ));
            }
            return Ok(Frame::WHOLE);
        };
        let (lo, hi) = pair(range)?;
        let unit = match unit {
            Some(unit) => {
                if spec.len() != 2 {
                    return Err(parse_error(
                        "'window' field that specifies unit cannot have other fields besides 'range'",
                    ));
                }
                let Bson::String(unit) = unit else {
                    return Err(parse_error("'unit' must be a string"));
                };
                Some(unit.as_str())
            }
            None => {
                if spec.len() != 1 {
                    return Err(parse_error(
                        "'window' field that specifies range cannot have other fields besides 'unit'",
                    ));
                }
                None
            }
        };
        let number = |v: &Bson| -> Result<f64> {
            if unit.is_some() {
                return crate::query::expr::value::integral_i64(v)
                    .map(|n| n as f64)
                    .ok_or_else(|| {
                        parse_error("With 'unit', range-based bounds must be an integer")
                    });
            }
            numeric(v).ok_or_else(|| parse_error("Range-based bounds expression must be a number"))
        };
        let lo = bound(lo, vars, number)?;
        let hi = bound(hi, vars, number)?;
        check_forward(&lo, &hi, |a, b| a <= b, |v| v.to_string())?;
        let unit = unit.map(TimeUnit::parse).transpose()?;
        match sort {
            Some(sort) if sort.single.is_some() => {
                if !sort.ascending {
                    return Err(Error::new(
                        ErrorCode::Location8947401,
                        "Range-based bounds require an ascending sortBy",
                    ));
                }
            }
            _ => {
                return Err(Error::new(
                    ErrorCode::Location5339902,
                    "Range-based bounds require sortBy a single field",
                ))
            }
        }
        Ok(Frame::Range { lo, hi, unit })
    }

    /// The inclusive positions of the documents the frame covers around position `i` of a
    /// partition of `n` documents, or `None` when it covers none. `keys` are the documents'
    /// `sortBy` values (range frames only).
    pub fn endpoints(&self, i: usize, n: usize, keys: &[Value]) -> Result<Option<(usize, usize)>> {
        match self {
            Frame::Documents(lo, hi) => Ok(document_endpoints(*lo, *hi, i, n)),
            Frame::Range { lo, hi, unit } => range_endpoints(*lo, *hi, *unit, i, keys),
        }
    }
}

fn document_endpoints(
    lo: Bound<i64>,
    hi: Bound<i64>,
    i: usize,
    n: usize,
) -> Option<(usize, usize)> {
    let last = i64::try_from(n).ok()? - 1;
    let i = i64::try_from(i).ok()?;
    let offset = |b: Bound<i64>, unbounded: i64| match b {
        Bound::Unbounded => unbounded,
        Bound::Current => i,
        Bound::At(k) => i.saturating_add(k),
    };
    let (lo, hi) = (offset(lo, 0), offset(hi, last));
    if lo > last || hi < 0 || lo > hi {
        return None;
    }
    Some((
        usize::try_from(lo.max(0)).ok()?,
        usize::try_from(hi.min(last)).ok()?,
    ))
}

fn range_endpoints(
    lo: Bound<f64>,
    hi: Bound<f64>,
    unit: Option<TimeUnit>,
    i: usize,
    keys: &[Value],
) -> Result<Option<(usize, usize)>> {
    let caused = "PlanExecutor error during aggregation :: caused by :: ";
    let base = keys.get(i).cloned().flatten();
    let expected = |v: &Value| match (unit, v) {
        (Some(_), Some(Bson::DateTime(_))) => true,
        (None, Some(v)) => is_number(v),
        _ => false,
    };
    match (unit, &base) {
        (Some(_), _) if !expected(&base) => {
            return Err(Error::new(
                ErrorCode::Location5429513,
                format!(
                    "{caused}Invalid range: Expected the sortBy field to be a Date, but it was {}",
                    type_name(&base)
                ),
            ))
        }
        (None, Some(Bson::DateTime(_))) => {
            return Err(Error::new(
                ErrorCode::Location5429413,
                format!(
                    "{caused}Invalid range: For windows that involve date or time ranges, a unit \
                     must be provided."
                ),
            ))
        }
        (None, _) if !expected(&base) => {
            return Err(Error::new(
                ErrorCode::Location5429414,
                format!(
                "{caused}Invalid range: Expected the sortBy field to be a number, but it was {}",
                type_name(&base)
            ),
            ))
        }
        _ => {}
    }
    let Some(base) = base else {
        return Ok(None);
    };
    let threshold = |delta: f64| -> Result<Bson> {
        match (unit, &base) {
            (Some(step), Bson::DateTime(d)) => {
                add(d.timestamp_millis(), step, delta as i64, &Zone::Utc)
                    .map(|ms| Bson::DateTime(bson::DateTime::from_millis(ms)))
                    .ok_or_else(|| Error::new(ErrorCode::Overflow, "date overflow in window range"))
            }
            _ => Ok(Bson::Double(numeric(&base).unwrap_or(f64::NAN) + delta)),
        }
    };
    // The partition is sorted by this one field, so each end is a binary search; numbers
    // (or dates) sit together in that order, between the values of other types.
    let key = |j: usize| keys.get(j).cloned().flatten().unwrap_or(Bson::Null);
    let bracket = type_bracket(&base);
    let below = |j: usize, t: &Bson| compare_values(&key(j), t) == Ordering::Less;
    let at_most = |j: usize, t: &Bson| compare_values(&key(j), t) != Ordering::Greater;
    let n = keys.len();
    let lower = match lo {
        Bound::Current => i,
        Bound::Unbounded => first_false(0, n, |j| type_bracket(&key(j)) < bracket),
        Bound::At(delta) => {
            let t = threshold(delta)?;
            first_false(0, n, |j| below(j, &t))
        }
    };
    if lower >= n {
        return Ok(None);
    }
    let upper = match hi {
        Bound::Current => Some(i),
        Bound::Unbounded => {
            first_false(lower.max(i), n, |j| type_bracket(&key(j)) <= bracket).checked_sub(1)
        }
        Bound::At(delta) => {
            let t = threshold(delta)?;
            first_false(lower, n, |j| at_most(j, &t)).checked_sub(1)
        }
    };
    Ok(upper.filter(|&u| u >= lower).map(|u| (lower, u)))
}

/// The first position in `from..to` where `holds` is false (`to` if none), for a `holds` that
/// is true up to some position and false after it.
fn first_false(from: usize, to: usize, holds: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (from, to.max(from));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `[lo, hi]`.
fn pair(arg: &Bson) -> Result<(&Bson, &Bson)> {
    match arg {
        Bson::Array(items) if items.len() == 2 => match (items.first(), items.get(1)) {
            (Some(lo), Some(hi)) => Ok((lo, hi)),
            _ => Err(parse_error("Window bounds must be a 2-element array")),
        },
        other => Err(parse_error(format!(
            "Window bounds must be a 2-element array: {}",
            crate::query::path::render(other)
        ))),
    }
}

/// One bound: `"unbounded"`, `"current"`, or a constant expression `number` accepts.
fn bound<T>(arg: &Bson, vars: &Variables, number: impl Fn(&Bson) -> Result<T>) -> Result<Bound<T>> {
    match arg {
        Bson::String(s) if s == "unbounded" => Ok(Bound::Unbounded),
        Bson::String(s) if s == "current" => Ok(Bound::Current),
        Bson::String(_) => Err(parse_error(
            "Window bounds must be 'unbounded', 'current', or a number.",
        )),
        other => {
            let expr = Expression::compile(other, vars)?;
            let constant = expr
                .as_const()
                .ok_or_else(|| parse_error("Window bounds expression must be a constant."))?;
            number(constant).map(Bound::At)
        }
    }
}

/// Lower must not exceed upper once `current` counts as 0.
fn check_forward<T: Copy + Default>(
    lo: &Bound<T>,
    hi: &Bound<T>,
    le: impl Fn(T, T) -> bool,
    show: impl Fn(T) -> String,
) -> Result<()> {
    let at = |b: &Bound<T>| match b {
        Bound::Current => Some(T::default()),
        Bound::At(v) => Some(*v),
        Bound::Unbounded => None,
    };
    if let (Some(a), Some(b)) = (at(lo), at(hi)) {
        if !le(a, b) {
            return Err(Error::new(
                ErrorCode::Location5339900,
                format!(
                    "Lower bound must not exceed upper bound: [{}, {}]",
                    show(a),
                    show(b)
                ),
            ));
        }
    }
    Ok(())
}

/// A number's value as a double.
pub fn numeric(v: &Bson) -> Option<f64> {
    match v {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => Some(crate::query::decimal::bson_to_f64(d)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn sorted() -> SortBy {
        SortBy::compile(&doc! {"t": 1}, None).unwrap()
    }

    fn frame(spec: bson::Document) -> Result<Frame> {
        Frame::parse(
            &Bson::Document(spec),
            Some(&sorted()),
            &Variables::default(),
        )
    }

    #[test]
    fn document_frames_clamp_to_the_partition() {
        let f = frame(doc! {"documents": [-1, 1]}).unwrap();
        let keys = vec![None; 4];
        let got: Vec<_> = (0..4).map(|i| f.endpoints(i, 4, &keys).unwrap()).collect();
        assert_eq!(
            got,
            vec![Some((0, 1)), Some((0, 2)), Some((1, 3)), Some((2, 3))]
        );
        let f = frame(doc! {"documents": ["unbounded", "current"]}).unwrap();
        assert_eq!(f.endpoints(2, 4, &keys).unwrap(), Some((0, 2)));
        let f = frame(doc! {"documents": [2, 3]}).unwrap();
        assert_eq!(f.endpoints(2, 4, &keys).unwrap(), None);
        assert!(frame(doc! {}).unwrap().is_whole());
    }

    #[test]
    fn range_frames_measure_from_the_sort_value() {
        let keys: Vec<Value> = [1, 2, 4, 7, 8]
            .iter()
            .map(|n| Some(Bson::Int32(*n)))
            .collect();
        let f = frame(doc! {"range": [-2, 1]}).unwrap();
        let got: Vec<_> = (0..5).map(|i| f.endpoints(i, 5, &keys).unwrap()).collect();
        assert_eq!(
            got,
            vec![
                Some((0, 1)),
                Some((0, 1)),
                Some((1, 2)),
                Some((3, 4)),
                Some((3, 4))
            ]
        );
        let f = frame(doc! {"range": [-10, -5]}).unwrap();
        assert_eq!(f.endpoints(0, 5, &keys).unwrap(), None);
        assert_eq!(f.endpoints(4, 5, &keys).unwrap(), Some((0, 1)));
        let err = frame(doc! {"range": [-1, 0]})
            .unwrap()
            .endpoints(0, 1, &[Some(Bson::String("x".into()))])
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Location5429414);
        let date = |s: &str| {
            Some(Bson::DateTime(
                bson::DateTime::parse_rfc3339_str(s).unwrap(),
            ))
        };
        let keys = vec![
            date("2021-01-01T00:00:00Z"),
            date("2021-01-15T00:00:00Z"),
            date("2021-02-20T00:00:00Z"),
        ];
        let f = frame(doc! {"range": [-1, 0], "unit": "month"}).unwrap();
        assert_eq!(f.endpoints(2, 3, &keys).unwrap(), Some((2, 2)));
        assert_eq!(f.endpoints(1, 3, &keys).unwrap(), Some((0, 1)));
        let err = frame(doc! {"range": [-1, 0]})
            .unwrap()
            .endpoints(0, 3, &keys)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Location5429413);
    }

    #[test]
    fn bad_frames_have_mongod_codes() {
        let code = |spec: bson::Document| frame(spec).unwrap_err().code;
        let cases = [
            (doc! {"documents": [1, 0]}, ErrorCode::Location5339900),
            (doc! {"documents": [0.5, 1]}, ErrorCode::FailedToParse),
            (doc! {"documents": [0]}, ErrorCode::FailedToParse),
            (doc! {"documents": ["now", 1]}, ErrorCode::FailedToParse),
            (doc! {"documents": ["$a", 1]}, ErrorCode::FailedToParse),
            (
                doc! {"documents": [0, 1], "range": [0, 1]},
                ErrorCode::FailedToParse,
            ),
            (
                doc! {"documents": [0, 1], "unit": "day"},
                ErrorCode::FailedToParse,
            ),
            (
                doc! {"range": [0, 1], "unit": "eon"},
                ErrorCode::FailedToParse,
            ),
            (doc! {"range": ["a", 1]}, ErrorCode::FailedToParse),
            (doc! {"range": [2, 1]}, ErrorCode::Location5339900),
            (doc! {"foo": 1}, ErrorCode::FailedToParse),
        ];
        for (spec, want) in cases {
            assert_eq!(code(spec.clone()), want, "{spec}");
        }
        let vars = Variables::default();
        let unsorted = Frame::parse(&Bson::Document(doc! {"documents": [0, 1]}), None, &vars);
        assert_eq!(unsorted.unwrap_err().code, ErrorCode::Location5339901);
        let two = SortBy::compile(&doc! {"a": 1, "b": 1}, None).unwrap();
        let range = Frame::parse(&Bson::Document(doc! {"range": [0, 1]}), Some(&two), &vars);
        assert_eq!(range.unwrap_err().code, ErrorCode::Location5339902);
        let down = SortBy::compile(&doc! {"a": -1}, None).unwrap();
        let range = Frame::parse(&Bson::Document(doc! {"range": [0, 1]}), Some(&down), &vars);
        assert_eq!(range.unwrap_err().code, ErrorCode::Location8947401);
    }
}
