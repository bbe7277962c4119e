//! MongoDB's TTL model (`spec/ttl.md` TTL-25…TTL-29): a *date TTL index* is an ordinary
//! single-field index with `expireAfterSeconds`, and a document under it expires
//! `expireAfterSeconds` after the date its indexed field holds. Pure: no clock, no storage.
//!
//! Owns: mongod 7.0's validation of such an index (the value, then the key pattern), reading a
//! stored document's expiry date from its raw body, and the second at which that date expires
//! it. Cosmos's custom TTL path (TTL-30) is the same walk with numbers read as milliseconds too
//! ([`Instants`], `ttl::custom`). Does not own: the `_ts` model (`ttl::cosmos`), joining the models ([`super::TtlModel`]),
//! or finding due documents (the reaper walks the index itself, ordered by the date).
//!
//! **Units.** BSON dates are milliseconds; the server clock is whole seconds (`now`). A document
//! whose date is `d` ms is expired at second `now` iff `now * 1000 >= d + expireAfterSeconds *
//! 1000`, i.e. from the second `ceil(d / 1000) + expireAfterSeconds` on: a date with a fraction
//! of a second expires at the next whole second, never before the instant it names (with
//! `expireAfterSeconds: 0` an `expiresAt` of 10.5 s is visible at 10 s and gone at 11 s).

use bson::{Bson, Document, RawBsonRef, RawDocument};

use crate::error::{Error, ErrorCode, Result};
use crate::query::path::{array_index, render_document, split, type_name};

/// The largest `expireAfterSeconds` of a secondary TTL index: mongod stores it as a 32-bit
/// integer (its `listIndexes` and `collMod` IDL say `safeInt`).
pub const MAX_EXPIRE_AFTER_SECONDS: i32 = i32::MAX;

/// One date TTL index as expiry sees it: the indexed path, its `expireAfterSeconds`, and which
/// values name an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateTtl {
    /// The key's field, split at its dots.
    pub path: Vec<String>,
    /// `0..=2147483647`.
    pub seconds: u32,
    pub instants: Instants,
}

/// Which values of the indexed field name the instant a document expires from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instants {
    /// BSON dates only: MongoDB's date TTL index (TTL-26).
    Dates,
    /// BSON dates and numbers read as Unix milliseconds: Cosmos's custom TTL path (TTL-30,
    /// `ttl::custom`).
    DatesAndEpochMillis,
}

impl Instants {
    /// The instant, in milliseconds, `value` names; `None` when it names none.
    fn of(self, value: RawBsonRef<'_>) -> Option<i64> {
        match (self, value) {
            (Instants::Dates, RawBsonRef::DateTime(d)) => Some(d.timestamp_millis()),
            (Instants::Dates, _) => None,
            (Instants::DatesAndEpochMillis, value) => super::custom::instant_millis(value),
        }
    }
}

impl DateTtl {
    /// The model of a date TTL index on `field` with `expire_after_seconds`; `None` for a value
    /// no date TTL index can hold (negative: the catalog never stores one).
    pub fn new(field: &str, expire_after_seconds: i32) -> Option<DateTtl> {
        Some(DateTtl {
            path: split(field),
            seconds: u32::try_from(expire_after_seconds).ok()?,
            instants: Instants::Dates,
        })
    }

    /// The model of a Cosmos custom-path TTL index on `field` (TTL-30); `None` for
    /// `expireAfterSeconds: -1`, under which no document expires by the index.
    pub fn custom(field: &str, expire_after_seconds: i32) -> Option<DateTtl> {
        Some(DateTtl {
            instants: Instants::DatesAndEpochMillis,
            ..DateTtl::new(field, expire_after_seconds)?
        })
    }

    /// The first second at which the document whose BSON body is `body` is expired by this
    /// index (TTL-26): its earliest indexed date plus `expireAfterSeconds`, rounded up to a
    /// whole second (see the module's Units). `None`: no date at the path, never expires.
    pub fn expires_at(&self, body: &[u8]) -> Option<i64> {
        let doc = RawDocument::from_bytes(body).ok()?;
        let mut earliest = None;
        earliest_in_document(doc, &self.path, self.instants, &mut earliest);
        expiry_second(earliest?, self.seconds)
    }

    /// The latest date, in milliseconds, that is due at `now`: a document whose indexed date is
    /// at or before it is expired by this index. `None` when no date is due yet (only before
    /// the epoch's far past, which no clock shows).
    pub fn due_through_millis(&self, now: i64) -> Option<i64> {
        now.checked_sub(i64::from(self.seconds))?.checked_mul(1000)
    }
}

/// The second from which a date of `millis` ms is expired with `seconds` of lifetime:
/// `ceil(millis / 1000) + seconds`; `None` beyond `i64`.
pub fn expiry_second(millis: i64, seconds: u32) -> Option<i64> {
    let whole = millis.div_euclid(1000) + i64::from(millis.rem_euclid(1000) != 0);
    whole.checked_add(i64::from(seconds))
}

/// Records in `out` the earliest instant at `path` below `doc`, following arrays as an index's
/// key generation does (`query::path::lookup`, then the elements of an array value): the
/// same values the index holds entries for, so what the reaper finds through the index and
/// what reads judge agree. Recursion is bounded by the path's length.
fn earliest_in_document(
    doc: &RawDocument,
    path: &[String],
    instants: Instants,
    out: &mut Option<i64>,
) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if let Ok(Some(value)) = doc.get(first) {
        earliest_in_value(value, rest, instants, out);
    }
}

fn earliest_in_value(
    value: RawBsonRef<'_>,
    rest: &[String],
    instants: Instants,
    out: &mut Option<i64>,
) {
    let Some((first, tail)) = rest.split_first() else {
        match value {
            RawBsonRef::Array(items) => {
                for item in items.into_iter().flatten() {
                    if let Some(millis) = instants.of(item) {
                        keep_earliest(millis, out);
                    }
                }
            }
            value => {
                if let Some(millis) = instants.of(value) {
                    keep_earliest(millis, out);
                }
            }
        }
        return;
    };
    match value {
        RawBsonRef::Document(doc) => earliest_in_document(doc, rest, instants, out),
        RawBsonRef::Array(items) => {
            for item in items.into_iter().flatten() {
                if let RawBsonRef::Document(doc) = item {
                    earliest_in_document(doc, rest, instants, out);
                }
            }
            if let Some(item) = array_index(first).and_then(|i| items.into_iter().flatten().nth(i))
            {
                earliest_in_value(item, tail, instants, out);
            }
        }
        _ => {}
    }
}

fn keep_earliest(millis: i64, out: &mut Option<i64>) {
    *out = Some(out.map_or(millis, |m| m.min(millis)));
}

/// Validates a date TTL index as mongod 7.0's `validateIndexSpecTTL` does and returns its
/// `expireAfterSeconds` as stored and listed (Int32, TTL-29). `spec` is the whole index
/// specification, which mongod's messages quote.
///
/// The value first: a number (67 `... must be numeric, but received a type of '<type>`), not
/// NaN, within a 32-bit integer once mongod's `safeNumberLong` has read it (a double is
/// truncated toward zero, a Decimal128 rounded half to even, as mongod reads them: `10.5`
/// becomes 10, as mongod 7.3+ stores and every version lists it), and not negative. Then the
/// key pattern: one field (67 for a compound key), not `_id` (197, as mongod's `_id` index
/// rules refuse the option).
pub fn validate_date_ttl_index(spec: &Document, key: &Document, value: &Bson) -> Result<i32> {
    let index_spec = || render_document(spec);
    let cannot = |reason: String| {
        Error::new(
            ErrorCode::CannotCreateIndex,
            format!("{reason}. Index spec: {}", index_spec()),
        )
    };
    let read = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) if d.is_nan() => {
            return Err(cannot(
                "TTL index 'expireAfterSeconds' option must not be NaN".into(),
            ))
        }
        // `as` saturates, as mongod's safeNumberLong does for doubles out of range.
        Bson::Double(d) => *d as i64,
        Bson::Decimal128(d) => match crate::query::decimal::nearest_i64(d) {
            Some((n, _)) => n,
            None if d.to_string().contains("NaN") => {
                return Err(cannot(
                    "TTL index 'expireAfterSeconds' option must not be NaN".into(),
                ))
            }
            None if d.to_string().starts_with('-') => i64::MIN,
            None => i64::MAX,
        },
        other => {
            return Err(cannot(format!(
                "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '{}",
                type_name(other)
            )))
        }
    };
    let Ok(seconds) = i32::try_from(read) else {
        return Err(cannot(
            "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer".into(),
        ));
    };
    if seconds < 0 {
        return Err(cannot(
            "TTL index 'expireAfterSeconds' option cannot be less than 0".into(),
        ));
    }
    if key.len() != 1 {
        return Err(Error::new(
            ErrorCode::CannotCreateIndex,
            format!(
                "TTL indexes are single-field indexes, compound indexes do not support TTL. \
                 Index spec: {}",
                index_spec()
            ),
        ));
    }
    if key.keys().any(|field| field == "_id") {
        return Err(Error::new(
            ErrorCode::InvalidIndexSpecificationOption,
            format!(
                "The field 'expireAfterSeconds' is not valid for an _id index specification. \
                 Specification: {}",
                index_spec()
            ),
        ));
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc, DateTime, Decimal128};

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(s.parse::<Decimal128>().unwrap())
    }

    fn validate(key: Document, value: Bson) -> Result<i32> {
        let spec = doc! {"key": key.clone(), "name": "x_1", "expireAfterSeconds": value.clone()};
        validate_date_ttl_index(&spec, &key, &value)
    }

    #[test]
    fn ttl_25_values_mongod_accepts() {
        let cases: Vec<(Bson, i32)> = vec![
            (Bson::Int32(0), 0),
            (Bson::Int32(3600), 3600),
            (Bson::Int64(0), 0),
            (Bson::Int64(2_147_483_647), i32::MAX),
            (Bson::Double(10.0), 10),
            (Bson::Double(10.5), 10),
            (Bson::Double(0.9), 0),
            (Bson::Double(-0.5), 0),
            (dec("86400"), 86400),
            (dec("10.5"), 10),
            (dec("11.5"), 12),
        ];
        for (value, expected) in cases {
            assert_eq!(
                validate(doc! {"expiresAt": 1}, value.clone()),
                Ok(expected),
                "TTL-25 {value:?}"
            );
        }
    }

    #[test]
    fn ttl_25_values_mongod_refuses_with_67() {
        let cases: Vec<(Bson, &str)> = vec![
            (
                Bson::Int32(-1),
                "TTL index 'expireAfterSeconds' option cannot be less than 0",
            ),
            (
                Bson::Double(-1.5),
                "TTL index 'expireAfterSeconds' option cannot be less than 0",
            ),
            (
                Bson::Int64(2_147_483_648),
                "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer",
            ),
            (
                Bson::Int64(-2_147_483_649),
                "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer",
            ),
            (
                Bson::Double(9_223_372_036_854_775_808.0),
                "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer",
            ),
            (
                Bson::Double(f64::INFINITY),
                "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer",
            ),
            (
                dec("1E+20"),
                "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer",
            ),
            (
                Bson::Double(f64::NAN),
                "TTL index 'expireAfterSeconds' option must not be NaN",
            ),
            (
                dec("NaN"),
                "TTL index 'expireAfterSeconds' option must not be NaN",
            ),
            (
                Bson::String("10".into()),
                "TTL index 'expireAfterSeconds' option must be numeric, but received a type of 'string",
            ),
            (
                Bson::Null,
                "TTL index 'expireAfterSeconds' option must be numeric, but received a type of 'null",
            ),
            (
                Bson::Boolean(true),
                "TTL index 'expireAfterSeconds' option must be numeric, but received a type of 'bool",
            ),
        ];
        for (value, reason) in cases {
            let err = validate(doc! {"expiresAt": 1}, value.clone()).unwrap_err();
            assert_eq!(err.code, ErrorCode::CannotCreateIndex, "TTL-25 {value:?}");
            assert!(
                err.message
                    .starts_with(&format!("{reason}. Index spec: {{")),
                "TTL-25 {value:?}: {}",
                err.message
            );
        }
    }

    #[test]
    fn ttl_25_key_patterns_mongod_refuses() {
        for key in [
            doc! {"a": 1, "b": 1},
            doc! {"expiresAt": 1, "_ts": 1},
            doc! {"_id": 1, "a": 1},
        ] {
            let err = validate(key.clone(), Bson::Int32(10)).unwrap_err();
            assert_eq!(err.code, ErrorCode::CannotCreateIndex, "TTL-25 {key:?}");
            assert!(err
                .message
                .starts_with("TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: {"));
        }
        let err = validate(doc! {"_id": 1}, Bson::Int32(10)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidIndexSpecificationOption);
        assert_eq!(err.code.code(), 197);
        assert!(err.message.starts_with(
            "The field 'expireAfterSeconds' is not valid for an _id index specification."
        ));
        // The value is checked before the key pattern, as mongod does.
        let err = validate(doc! {"a": 1, "b": 1}, Bson::Int32(-1)).unwrap_err();
        assert!(
            err.message.contains("cannot be less than 0"),
            "{}",
            err.message
        );
        // Dotted single fields are single fields.
        assert_eq!(validate(doc! {"meta.expiresAt": -1}, Bson::Int32(5)), Ok(5));
    }

    fn at(millis: i64) -> Bson {
        Bson::DateTime(DateTime::from_millis(millis))
    }

    fn body(doc: Document) -> Vec<u8> {
        let mut out = Vec::new();
        doc.to_writer(&mut out).unwrap();
        out
    }

    #[test]
    fn ttl_26_expiry_from_the_indexed_date() {
        let d = 1_700_000_000_000_i64;
        let index = |field: &str, seconds| DateTtl::new(field, seconds).unwrap();
        // (index, document, first second it is expired)
        let cases: Vec<(DateTtl, Document, Option<i64>)> = vec![
            (index("at", 10), doc! {"at": at(d)}, Some(1_700_000_010)),
            (index("at", 0), doc! {"at": at(d)}, Some(1_700_000_000)),
            // A fraction of a second rounds up: never gone before the instant the date names.
            (
                index("at", 0),
                doc! {"at": at(d + 500)},
                Some(1_700_000_001),
            ),
            (
                index("at", 0),
                doc! {"at": at(d - 500)},
                Some(1_700_000_000),
            ),
            (index("at", 0), doc! {"at": at(-1_500)}, Some(-1)),
            // An array: its earliest date; other elements ignored.
            (
                index("at", 5),
                doc! {"at": [at(d + 9_000), "x", at(d + 3_000), 7]},
                Some(1_700_000_008),
            ),
            (index("at", 5), doc! {"at": ["x", 7]}, None),
            (index("at", 5), doc! {"at": []}, None),
            // Missing or not a date: never by this index.
            (index("at", 5), doc! {"other": at(d)}, None),
            (index("at", 5), doc! {"at": "2024-01-01"}, None),
            (index("at", 5), doc! {"at": d}, None),
            (index("at", 5), doc! {"at": Bson::Null}, None),
            (
                index("at", 5),
                doc! {"at": Bson::Timestamp(bson::Timestamp { time: 1, increment: 1 })},
                None,
            ),
            // Nested paths, through documents and arrays of documents.
            (
                index("m.at", 1),
                doc! {"m": {"at": at(d)}},
                Some(1_700_000_001),
            ),
            (
                index("m.at", 1),
                doc! {"m": [{"at": at(d + 4_000)}, {"at": at(d)}, {"x": 1}]},
                Some(1_700_000_001),
            ),
            (
                index("m.1", 1),
                doc! {"m": [at(d + 4_000), at(d)]},
                Some(1_700_000_001),
            ),
            (index("m.at", 1), doc! {"m": at(d)}, None),
            // The longest lifetime does not overflow.
            (
                index("at", i32::MAX),
                doc! {"at": at(d)},
                Some(1_700_000_000 + i64::from(i32::MAX)),
            ),
        ];
        for (index, doc, expected) in cases {
            assert_eq!(
                index.expires_at(&body(doc.clone())),
                expected,
                "TTL-26 {doc:?}"
            );
        }
        assert_eq!(DateTtl::new("at", -1), None);
        assert_eq!(index("at", 1).expires_at(&[1, 2, 3]), None);
    }

    #[test]
    fn ttl_26_due_through_matches_the_expiry_second() {
        // A date is due at `now` exactly when `now` has reached its expiry second.
        let index = DateTtl::new("at", 7).unwrap();
        let now = 1_700_000_000;
        let through = index.due_through_millis(now).unwrap();
        for millis in [
            through - 1_001,
            through - 1,
            through,
            through + 1,
            through + 999,
        ] {
            let second = expiry_second(millis, 7).unwrap();
            assert_eq!(millis <= through, second <= now, "{millis}");
        }
        let raw = rawdoc! {"at": DateTime::from_millis(through)};
        assert_eq!(index.expires_at(raw.as_bytes()), Some(now));
    }
}
