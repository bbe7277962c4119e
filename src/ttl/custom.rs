//! Cosmos DB's custom TTL path (`spec/ttl.md` TTL-30, the account capability
//! `EnableTtlOnCustomPath`): the collection's TTL index sits on one single field instead of
//! `_ts`, and a document expires `expireAfterSeconds` after the instant that field names. Pure.
//!
//! Owns: validating such an index (the key pattern, then the Cosmos value rules of TTL-2/TTL-3)
//! and reading the instant a value names ([`instant_millis`]). Does not own: walking a
//! document's path and keeping the earliest instant, or the expiry second (`ttl::date`, whose
//! [`super::DateTtl`] both models share), the one-TTL-index-per-collection rules (the index
//! commands, which see the other indexes), or finding due documents (`date_expiry`).
//!
//! **Instants.** A BSON date is its milliseconds. A number is read as Unix epoch
//! **milliseconds** by its exact value: Int32, Int64, Double and Decimal128 alike, a fraction
//! of a millisecond rounding up (a value never expires before the instant it names), and a
//! value beyond `i64` saturating (far past: expired; far future: never reached). NaN names no
//! instant. Every numeric type counts because the index orders all of them in one bracket by
//! exact value: the due key range of the index (`date_expiry`) is then exactly the set of
//! entries whose instant is due, which the counts and the reaper rely on.

use bson::{Bson, Document, RawBsonRef};

use crate::error::{Error, Result};
use crate::query::decimal;

/// Our text for `expireAfterSeconds` on a key pattern a custom TTL path cannot have (a compound
/// key, `_id`): Cosmos's TTL-4 code, with a message that names what is allowed.
pub const NOT_ONE_FIELD_MESSAGE: &str = "The 'expireAfterSeconds' option is supported on '_ts' \
     or on one single custom field other than '_id' only.";

/// Validates a custom-path TTL index (TTL-30) on `key`, which is not `{_ts: ±1}`, and returns
/// its `expireAfterSeconds` as stored and listed (Int32, TTL-8). The key pattern first, as
/// TTL-4 orders the checks: one field, not `_id` (code 2 `BadValue`); then the value with the
/// `_ts` index's rules (`-1` or `1..=2147483647`, else 67).
pub fn validate_custom_ttl_index(key: &Document, expire_after_seconds: &Bson) -> Result<i32> {
    let mut fields = key.keys();
    match (fields.next(), fields.next()) {
        (Some(field), None) if field != "_id" => {}
        _ => return Err(Error::bad_value(NOT_ONE_FIELD_MESSAGE)),
    }
    super::validate_ttl_value(expire_after_seconds)
}

/// The instant, in Unix milliseconds, a value on a custom TTL path names (see the module's
/// Instants); `None` for anything else (strings, null, timestamps, NaN, …), which never
/// expires.
pub fn instant_millis(value: RawBsonRef<'_>) -> Option<i64> {
    match value {
        RawBsonRef::DateTime(d) => Some(d.timestamp_millis()),
        RawBsonRef::Int32(n) => Some(i64::from(n)),
        RawBsonRef::Int64(n) => Some(n),
        RawBsonRef::Double(d) => ceil_millis(d),
        RawBsonRef::Decimal128(d) => {
            decimal::to_i64(decimal::from_bson(&d), decimal::Rounding::Ceiling)
                .or_else(|| ceil_millis(decimal::bson_to_f64(&d)))
        }
        _ => None,
    }
}

/// `d` rounded up to a whole millisecond; `as` saturates (infinities and values beyond `i64`
/// become its ends). `None` for NaN.
fn ceil_millis(d: f64) -> Option<i64> {
    (!d.is_nan()).then(|| d.ceil() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use bson::{doc, rawdoc, DateTime, Decimal128};

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(s.parse::<Decimal128>().unwrap())
    }

    #[test]
    fn ttl_30_key_patterns() {
        for key in [doc! {"expiresAt": 1}, doc! {"at": -1}, doc! {"meta.at": 1}] {
            assert_eq!(
                validate_custom_ttl_index(&key, &Bson::Int32(10)),
                Ok(10),
                "{key:?}"
            );
        }
        for key in [
            doc! {"a": 1, "b": 1},
            doc! {"_id": 1},
            doc! {"at": 1, "_ts": 1},
        ] {
            let err = validate_custom_ttl_index(&key, &Bson::Int32(10)).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadValue, "{key:?}");
            assert_eq!(err.message, NOT_ONE_FIELD_MESSAGE);
        }
        // The key pattern is checked before the value (TTL-4's order).
        let err = validate_custom_ttl_index(&doc! {"a": 1, "b": 1}, &Bson::Int32(0)).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadValue);
    }

    #[test]
    fn ttl_30_values_follow_the_cosmos_rules_ttl_2_ttl_3() {
        let key = doc! {"at": 1};
        for (value, expected) in [
            (Bson::Int32(10), 10),
            (Bson::Int64(10), 10),
            (Bson::Double(10.0), 10),
            (dec("10"), 10),
            (Bson::Int32(-1), -1),
            (Bson::Int64(2_147_483_647), i32::MAX),
        ] {
            assert_eq!(
                validate_custom_ttl_index(&key, &value),
                Ok(expected),
                "{value:?}"
            );
        }
        for value in [
            Bson::Int32(0),
            Bson::Int32(-2),
            Bson::Int64(2_147_483_648),
            Bson::Double(10.5),
            Bson::Double(f64::NAN),
            Bson::String("10".into()),
            Bson::Null,
        ] {
            let err = validate_custom_ttl_index(&key, &value).unwrap_err();
            assert_eq!(err.code, ErrorCode::CannotCreateIndex, "{value:?}");
            assert!(
                err.message
                    .starts_with("TTL index 'expireAfterSeconds' option must be -1 or an integer"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn ttl_30_the_instant_a_value_names() {
        let ms = 1_700_000_000_123_i64;
        let doc = rawdoc! {
            "date": DateTime::from_millis(ms),
            "int": 1_700_000_i32,
            "long": ms,
            "double": 1_700_000_000_123.0_f64,
            "fraction": 1_700_000_000_123.25_f64,
            "negative": -1_500.5_f64,
            "decimal": "1700000000123".parse::<Decimal128>().unwrap(),
            "decimalFraction": "1700000000123.001".parse::<Decimal128>().unwrap(),
            "hugeDecimal": "1E+30".parse::<Decimal128>().unwrap(),
            "tinyDecimal": "-1E+30".parse::<Decimal128>().unwrap(),
            "big": 1e300_f64,
            "minusInf": f64::NEG_INFINITY,
            "nan": f64::NAN,
            "decimalNaN": "NaN".parse::<Decimal128>().unwrap(),
            "string": "1700000000123",
            "null": bson::RawBson::Null,
            "bool": true,
            "timestamp": bson::Timestamp { time: 1, increment: 1 },
            "object": {"at": ms},
        };
        let cases: Vec<(&str, Option<i64>)> = vec![
            ("date", Some(ms)),
            ("int", Some(1_700_000)),
            ("long", Some(ms)),
            ("double", Some(ms)),
            // A fraction of a millisecond rounds up: never before the instant named.
            ("fraction", Some(ms + 1)),
            ("negative", Some(-1_500)),
            ("decimal", Some(ms)),
            ("decimalFraction", Some(ms + 1)),
            ("hugeDecimal", Some(i64::MAX)),
            ("tinyDecimal", Some(i64::MIN)),
            ("big", Some(i64::MAX)),
            ("minusInf", Some(i64::MIN)),
            ("nan", None),
            ("decimalNaN", None),
            ("string", None),
            ("null", None),
            ("bool", None),
            ("timestamp", None),
            ("object", None),
        ];
        for (field, expected) in cases {
            let value = doc.get(field).unwrap().unwrap();
            assert_eq!(instant_millis(value), expected, "{field}");
        }
    }
}
