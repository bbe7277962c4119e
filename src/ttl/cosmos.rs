//! The Cosmos TTL model (`spec/ttl.md` TTL-1…TTL-24): the collection TTL set by the `_ts`
//! index and a document's own `ttl`, counted from the system last-modified time `_ts`. Pure.
//!
//! Owns: validation of a `_ts` TTL index, the validity of a document's `ttl`, the effective
//! lifetime of a document, and the expiry inequality. Does not own: the date TTL model
//! (`ttl::date`), where the collection TTL is stored, `_ts` stamping (TTL-15), visibility
//! filtering (TTL-18/19) or the reaper (TTL-20); those call into this module.
//!
//! A TTL value (collection TTL or valid document `ttl`) is an `i32` that is `-1` (never expires)
//! or in `1..=2147483647`; that is the form stored in the catalog and shown by `listIndexes`
//! (TTL-8). [`Lifetime`] is what it means for one document.

use bson::{Bson, Document};

use crate::error::{Error, ErrorCode, Result};

/// The system field that drives expiry and the only key a TTL index may have (TTL-1, TTL-4).
pub const TS_FIELD: &str = "_ts";
/// The root-level document field that overrides the collection TTL (TTL-11).
pub const TTL_FIELD: &str = "ttl";
/// The TTL value that means "never expires" (TTL-2, TTL-13).
pub const NEVER_EXPIRES: i32 = -1;
/// The longest lifetime, in seconds: about 68 years (TTL-22).
pub const MAX_TTL_SECONDS: i32 = i32::MAX;

/// The message Cosmos sends for `expireAfterSeconds` on any key but `_ts` (TTL-4).
const NOT_ON_TS_MESSAGE: &str = "The 'expireAfterSeconds' option is supported on '_ts' field only.";
/// How much of a rejected string value is echoed back in an error message.
const ECHO_CHARS: usize = 64;

/// How long a document lives after its last write (`_ts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Never expires: collection TTL absent (TTL-10) or an effective TTL of `-1` (TTL-13).
    Never,
    /// Expires this many seconds after `_ts`; `1..=2147483647` when built from a TTL value.
    Seconds(u32),
}

impl Lifetime {
    /// The lifetime a TTL value means: `-1` → never, `1..=2147483647` → seconds, anything else
    /// is not a TTL value (`None`). TTL-2, TTL-11, TTL-13, TTL-22.
    pub fn from_ttl(ttl: i32) -> Option<Lifetime> {
        if ttl == NEVER_EXPIRES {
            Some(Lifetime::Never)
        } else {
            u32::try_from(ttl)
                .ok()
                .filter(|seconds| *seconds >= 1)
                .map(Lifetime::Seconds)
        }
    }
}

/// Whether `ttl` is a TTL value: `-1` or `1..=2147483647` (TTL-2, TTL-11, TTL-22).
pub fn is_ttl_value(ttl: i32) -> bool {
    Lifetime::from_ttl(ttl).is_some()
}

/// The collection TTL an index spec sets, if any.
///
/// TTL-5: without `expireAfterSeconds` the index is ordinary (even on `{_ts: 1}`) and TTL stays
/// off → `Ok(None)`. With it, see [`validate_ttl_index`] (TTL-1…TTL-4).
pub fn index_ttl(
    key_pattern: &Document,
    expire_after_seconds: Option<&Bson>,
) -> Result<Option<i32>> {
    match expire_after_seconds {
        None => Ok(None),
        Some(value) => validate_ttl_index(key_pattern, value).map(Some),
    }
}

/// Validates a TTL index and returns the collection TTL it sets, always as `i32` (TTL-8).
///
/// The key pattern is checked first (TTL-4): it must be the single field `_ts` with direction
/// `1` or `-1` in any numeric type, else code 2 `BadValue` with Cosmos's exact message.
/// Then the value (TTL-2, TTL-3, TTL-22): Int32, Int64, Double or Decimal128 holding an integer
/// that is `-1` or in `1..=2147483647`, else code 67 `CannotCreateIndex`.
pub fn validate_ttl_index(key_pattern: &Document, expire_after_seconds: &Bson) -> Result<i32> {
    if !is_ts_key_pattern(key_pattern) {
        return Err(Error::bad_value(NOT_ON_TS_MESSAGE));
    }
    validate_ttl_value(expire_after_seconds)
}

/// The Cosmos value rules for `expireAfterSeconds` (TTL-2, TTL-3, TTL-22), whatever the key:
/// an Int32, Int64, Double or Decimal128 holding an integer that is `-1` or in
/// `1..=2147483647`, returned as `i32` (TTL-8); else 67 `CannotCreateIndex`.
pub fn validate_ttl_value(expire_after_seconds: &Bson) -> Result<i32> {
    integral_value(expire_after_seconds)
        .and_then(|n| i32::try_from(n).ok())
        .filter(|n| is_ttl_value(*n))
        .ok_or_else(|| {
            Error::new(
                ErrorCode::CannotCreateIndex,
                format!(
                    "TTL index 'expireAfterSeconds' option must be -1 or an integer between 1 \
                     and {MAX_TTL_SECONDS}, got {}",
                    describe(expire_after_seconds)
                ),
            )
        })
}

/// Whether a key pattern is exactly `{_ts: 1}` or `{_ts: -1}`, the direction in any numeric
/// type (TTL-1, TTL-4). Compound patterns, even ones containing `_ts`, are not.
pub fn is_ts_key_pattern(key_pattern: &Document) -> bool {
    let mut fields = key_pattern.iter();
    match (fields.next(), fields.next()) {
        (Some((name, direction)), None) => {
            name == TS_FIELD && matches!(integral_value(direction), Some(1 | -1))
        }
        _ => false,
    }
}

/// The document's own valid `ttl`, or `None` when it has none or it is invalid (TTL-11, TTL-12).
///
/// Only the root-level field named exactly `ttl` counts. Valid: Int32; Int64 that fits in Int32;
/// Double without a fractional part that fits in Int32 — and the value is `-1` or `>= 1`.
/// Everything else (Decimal128, strings, `0`, `-5`, `20.5`, …) is ignored, never an error.
pub fn document_ttl(doc: &Document) -> Option<i32> {
    own_ttl_of(doc.get(TTL_FIELD)?)
}

/// [`document_ttl`] for the value of a document's `ttl` field.
pub fn own_ttl_of(value: &Bson) -> Option<i32> {
    let ttl = match value {
        Bson::Int32(n) => *n,
        Bson::Int64(n) => i32::try_from(*n).ok()?,
        Bson::Double(d) => exact_i32(*d)?,
        _ => return None,
    };
    is_ttl_value(ttl).then_some(ttl)
}

/// The lifetime of a document (TTL-10, TTL-12, TTL-13).
///
/// Collection TTL absent (`None`) → never expires, whatever the document says (TTL-10); this is
/// also the state after the TTL index is dropped (TTL-9). Otherwise a valid document `ttl`
/// overrides the collection TTL, and `-1` means never. Arguments that are not TTL values (see
/// [`is_ttl_value`]) are treated as absent: an invalid document `ttl` falls back to the
/// collection TTL (TTL-12); a collection TTL cannot be stored invalid (TTL-3).
pub fn effective_lifetime(document_ttl: Option<i32>, collection_ttl: Option<i32>) -> Lifetime {
    match collection_ttl.and_then(Lifetime::from_ttl) {
        None => Lifetime::Never,
        Some(collection) => document_ttl
            .and_then(Lifetime::from_ttl)
            .unwrap_or(collection),
    }
}

/// The lifetime of `doc` under `collection_ttl`: [`document_ttl`] then [`effective_lifetime`]
/// (TTL-10…TTL-13).
pub fn document_lifetime(doc: &Document, collection_ttl: Option<i32>) -> Lifetime {
    effective_lifetime(document_ttl(doc), collection_ttl)
}

/// The first second at which a document written at `ts` is expired: `ts + lifetime` in 64-bit
/// arithmetic (TTL-14; `_ts + 2147483647` overflows Int32, TTL-22). `None` when it never expires
/// (or when that second is beyond `i64`, which no clock reaches).
pub fn expires_at(ts: i64, lifetime: Lifetime) -> Option<i64> {
    match lifetime {
        Lifetime::Never => None,
        Lifetime::Seconds(seconds) => ts.checked_add(i64::from(seconds)),
    }
}

/// Whether a document written at `ts` is expired at `now`: `now >= ts + lifetime` (TTL-14).
/// At exactly `ts + lifetime` it is already expired.
pub fn is_expired(ts: i64, lifetime: Lifetime, now: i64) -> bool {
    is_expired_at(expires_at(ts, lifetime), now)
}

/// Whether a document that expires at `expires_at` (`None`: never, [`expires_at`]) is expired
/// at `now`: the one expiry decision, which every read and write of a document makes through
/// this function (TTL-14, TTL-18).
pub fn is_expired_at(expires_at: Option<i64>, now: i64) -> bool {
    expires_at.is_some_and(|at| now >= at)
}

/// When `doc`, last written at `ts`, expires under `collection_ttl`; `None` for never
/// (TTL-10…TTL-14).
pub fn document_expires_at(doc: &Document, ts: i64, collection_ttl: Option<i32>) -> Option<i64> {
    expires_at(ts, document_lifetime(doc, collection_ttl))
}

/// The integer a numeric value holds exactly, or `None` for non-numbers, NaN, infinities,
/// fractions and values outside `i64`.
pub(super) fn integral_value(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(d) => exact_i64(*d),
        Bson::Decimal128(d) => crate::query::decimal::exact_i64(d),
        _ => None,
    }
}

/// `d` as an `i32` if it is an integer in range. NaN and infinities fail the range check.
fn exact_i32(d: f64) -> Option<i32> {
    exact_i64(d).and_then(|n| i32::try_from(n).ok())
}

/// `d` as an `i64` if it is an integer in range. NaN and infinities fail the range check.
fn exact_i64(d: f64) -> Option<i64> {
    // -2^63 and 2^63 are exact in f64; 2^63 itself is out of range.
    const LOWER: f64 = -9_223_372_036_854_775_808.0;
    const UPPER: f64 = 9_223_372_036_854_775_808.0;
    if (LOWER..UPPER).contains(&d) && d.fract() == 0.0 {
        // In range and integral, so the cast is exact.
        Some(d as i64)
    } else {
        None
    }
}

/// A value as an error message shows it: numbers as written, other types named, long strings cut.
pub(super) fn describe(value: &Bson) -> String {
    match value {
        Bson::Int32(n) => n.to_string(),
        Bson::Int64(n) => n.to_string(),
        Bson::Double(d) => format!("{d:?}"),
        Bson::Decimal128(d) => d.to_string(),
        Bson::String(s) => {
            let shown: String = s.chars().take(ECHO_CHARS).collect();
            let cut = if s.chars().nth(ECHO_CHARS).is_some() {
                "…"
            } else {
                ""
            };
            format!("string \"{shown}{cut}\"")
        }
        Bson::Null => "null".to_string(),
        Bson::Boolean(b) => format!("bool {b}"),
        other => format!("a value of BSON type {:?}", other.element_type()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Decimal128};

    /// Time of the first write in every example.
    const T: i64 = 1_700_000_000;
    /// Past the longest lifetime (TTL-22) of anything written at `T` or a few seconds later.
    const FAR: i64 = T + MAX_TTL_SECONDS as i64 + 100;

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(s.parse::<Decimal128>().unwrap())
    }

    #[derive(Debug, Clone, Copy)]
    enum Outcome {
        /// Not expired at any time, checked up to `FAR` and `i64::MAX`.
        Never,
        /// Visible at `T + n - 1`, expired at `T + n` (and later).
        GoneAt(i64),
    }

    struct Example {
        rule: &'static str,
        doc: Document,
        collection_ttl: Option<i32>,
        /// Seconds after `T` of the last write (`_ts`).
        written: i64,
        outcome: Outcome,
    }

    fn ex(
        rule: &'static str,
        doc: Document,
        collection_ttl: Option<i32>,
        outcome: Outcome,
    ) -> Example {
        Example {
            rule,
            doc,
            collection_ttl,
            written: 0,
            outcome,
        }
    }

    /// Every row of the Examples table in spec/ttl.md, one case per listed value.
    fn examples() -> Vec<Example> {
        use Outcome::{GoneAt, Never};
        vec![
            // | no `ttl` | absent | never expires |
            ex("TTL-10", doc! {"a": 1}, None, Never),
            // | `ttl: 5` | absent | never expires (TTL-10) |
            ex("TTL-10", doc! {"ttl": 5}, None, Never),
            // | no `ttl` | -1 | never expires |
            ex("TTL-13", doc! {"a": 1}, Some(-1), Never),
            // | `ttl: 5` | -1 | gone at T+5 |
            ex("TTL-13", doc! {"ttl": 5}, Some(-1), GoneAt(5)),
            // | `ttl: 20.5` | -1 | never expires (invalid ttl, default -1) |
            ex("TTL-12", doc! {"ttl": 20.5}, Some(-1), Never),
            // | no `ttl` | 10 | visible at T+9, gone at T+10 |
            ex("TTL-14", doc! {"a": 1}, Some(10), GoneAt(10)),
            // | `ttl: NumberInt(20)`, `NumberLong(20)`, `20.0` | 10 | visible at T+19, gone at T+20 |
            ex("TTL-11", doc! {"ttl": 20_i32}, Some(10), GoneAt(20)),
            ex("TTL-11", doc! {"ttl": 20_i64}, Some(10), GoneAt(20)),
            ex("TTL-11", doc! {"ttl": 20.0}, Some(10), GoneAt(20)),
            // | `ttl: 2` | 10 | gone at T+2 |
            ex("TTL-13", doc! {"ttl": 2}, Some(10), GoneAt(2)),
            // | `ttl: -1` (any numeric type) | 10 | never expires |
            // (Decimal128 is not a valid `ttl` type, TTL-12: see `decimal128_ttl_is_ignored`.)
            ex("TTL-13", doc! {"ttl": -1_i32}, Some(10), Never),
            ex("TTL-13", doc! {"ttl": -1_i64}, Some(10), Never),
            ex("TTL-13", doc! {"ttl": -1.0}, Some(10), Never),
            // | `ttl: 20.5`, `NumberLong(2147483649)`, `0`, `-5`, `"20"` | 10 | gone at T+10 |
            ex("TTL-12", doc! {"ttl": 20.5}, Some(10), GoneAt(10)),
            ex(
                "TTL-12",
                doc! {"ttl": 2_147_483_649_i64},
                Some(10),
                GoneAt(10),
            ),
            ex("TTL-12", doc! {"ttl": 0}, Some(10), GoneAt(10)),
            ex("TTL-12", doc! {"ttl": -5}, Some(10), GoneAt(10)),
            ex("TTL-12", doc! {"ttl": "20"}, Some(10), GoneAt(10)),
            // | no `ttl`, updated at T+8 | 10 | visible at T+17, gone at T+18 |
            Example {
                written: 8,
                ..ex("TTL-14", doc! {"a": 1}, Some(10), GoneAt(18))
            },
        ]
    }

    fn check(e: &Example) {
        let ts = T + e.written;
        let lifetime = document_lifetime(&e.doc, e.collection_ttl);
        let at = document_expires_at(&e.doc, ts, e.collection_ttl);
        let ctx = format!(
            "{} {:?} collection {:?} written T+{}",
            e.rule, e.doc, e.collection_ttl, e.written
        );
        assert!(!is_expired(ts, lifetime, ts), "{ctx}: visible when written");
        match e.outcome {
            Outcome::Never => {
                assert_eq!(lifetime, Lifetime::Never, "{ctx}");
                assert_eq!(at, None, "{ctx}");
                for now in [T + 10, T + 20, FAR, i64::MAX] {
                    assert!(!is_expired(ts, lifetime, now), "{ctx}: alive at {now}");
                }
            }
            Outcome::GoneAt(n) => {
                assert_eq!(at, Some(T + n), "{ctx}");
                assert_eq!(expires_at(ts, lifetime), Some(T + n), "{ctx}");
                assert!(
                    !is_expired(ts, lifetime, T + n - 1),
                    "{ctx}: visible at T+{}",
                    n - 1
                );
                assert!(is_expired(ts, lifetime, T + n), "{ctx}: gone at T+{n}");
                assert!(is_expired(ts, lifetime, FAR), "{ctx}: gone at FAR");
            }
        }
    }

    #[test]
    fn examples_table() {
        let examples = examples();
        assert_eq!(examples.len(), 19);
        for e in &examples {
            check(e);
        }
    }

    // ---- TTL-1, TTL-2: accepted TTL indexes ----

    #[test]
    fn ttl_2_every_numeric_type_is_accepted_when_integral_and_in_range() {
        let key = doc! {"_ts": 1};
        let cases: Vec<(Bson, i32)> = vec![
            (Bson::Int32(10), 10),
            (Bson::Int64(10), 10),
            (Bson::Double(10.0), 10),
            (dec("10"), 10),
            (dec("1.0E+1"), 10),
            (dec("10.00"), 10),
            (dec("1000E-2"), 10),
            (Bson::Int32(-1), -1),
            (Bson::Int64(-1), -1),
            (Bson::Double(-1.0), -1),
            (dec("-1"), -1),
            (dec("-1.000"), -1),
            (Bson::Int32(1), 1),
            (Bson::Double(1.0), 1),
            (dec("1"), 1),
        ];
        for (value, expected) in cases {
            assert_eq!(
                validate_ttl_index(&key, &value),
                Ok(expected),
                "TTL-2 {value:?}"
            );
            assert_eq!(
                index_ttl(&key, Some(&value)),
                Ok(Some(expected)),
                "TTL-2 {value:?}"
            );
        }
    }

    #[test]
    fn ttl_1_both_directions_in_any_numeric_type() {
        for direction in [
            Bson::Int32(1),
            Bson::Int32(-1),
            Bson::Int64(1),
            Bson::Int64(-1),
            Bson::Double(1.0),
            Bson::Double(-1.0),
            dec("1"),
            dec("-1.0"),
        ] {
            let key = doc! {"_ts": direction.clone()};
            assert!(is_ts_key_pattern(&key), "TTL-1 {key:?}");
            assert_eq!(
                validate_ttl_index(&key, &Bson::Int32(10)),
                Ok(10),
                "TTL-1 {key:?}"
            );
        }
    }

    // ---- TTL-22 ----

    #[test]
    fn ttl_22_maximum_lifetime_is_2147483647() {
        let key = doc! {"_ts": -1};
        for value in [
            Bson::Int32(i32::MAX),
            Bson::Int64(2_147_483_647),
            Bson::Double(2_147_483_647.0),
            dec("2147483647"),
            dec("2.147483647E+9"),
        ] {
            assert_eq!(
                validate_ttl_index(&key, &value),
                Ok(MAX_TTL_SECONDS),
                "TTL-22 {value:?}"
            );
        }
        for value in [
            Bson::Int64(2_147_483_648),
            Bson::Double(2_147_483_648.0),
            dec("2147483648"),
        ] {
            let err = validate_ttl_index(&key, &value).unwrap_err();
            assert_eq!(err.code, ErrorCode::CannotCreateIndex, "TTL-22 {value:?}");
        }
        assert_eq!(
            Lifetime::from_ttl(MAX_TTL_SECONDS),
            Some(Lifetime::Seconds(2_147_483_647))
        );
        assert_eq!(
            document_ttl(&doc! {"ttl": 2_147_483_647_i64}),
            Some(MAX_TTL_SECONDS)
        );
        assert_eq!(
            document_ttl(&doc! {"ttl": 2_147_483_647.0}),
            Some(MAX_TTL_SECONDS)
        );
        // The longest lifetime ends exactly 2147483647 seconds after the write.
        let lifetime = effective_lifetime(None, Some(MAX_TTL_SECONDS));
        assert!(!is_expired(T, lifetime, T + 2_147_483_646));
        assert!(is_expired(T, lifetime, T + 2_147_483_647));
    }

    // ---- TTL-3: refused values ----

    #[test]
    fn ttl_3_out_of_domain_values_are_refused_with_67() {
        let key = doc! {"_ts": 1};
        let cases: Vec<(Bson, &str)> = vec![
            (Bson::Int32(0), "0"),
            (Bson::Int64(0), "0"),
            (Bson::Double(0.0), "0.0"),
            (Bson::Double(-0.0), "-0.0"),
            (dec("0"), "0"),
            (dec("-0"), "-0"),
            (dec("0E+3"), "0E+3"),
            (Bson::Int32(-2), "-2"),
            (Bson::Int32(-5), "-5"),
            (Bson::Int32(i32::MIN), "-2147483648"),
            (Bson::Int64(-5), "-5"),
            (Bson::Double(-5.0), "-5.0"),
            (dec("-5"), "-5"),
            (Bson::Int64(2_147_483_648), "2147483648"),
            (Bson::Int64(i64::MAX), "9223372036854775807"),
            (Bson::Double(1e300), "1e300"),
            (dec("1E+10"), "1E+10"),
            (dec("1E+6111"), "1E+6111"),
            (Bson::Double(10.5), "10.5"),
            (Bson::Double(0.5), "0.5"),
            (dec("10.5"), "10.5"),
            (dec("1.05E+1"), "10.5"),
            (dec("1E-6176"), "1E-6176"),
            (Bson::Double(f64::NAN), "NaN"),
            (Bson::Double(f64::INFINITY), "inf"),
            (Bson::Double(f64::NEG_INFINITY), "-inf"),
            (dec("NaN"), "NaN"),
            (dec("Infinity"), "Infinity"),
            (dec("-Infinity"), "-Infinity"),
            (Bson::String("10".into()), "string \"10\""),
            (Bson::Null, "null"),
            (Bson::Boolean(true), "bool true"),
            (
                Bson::Document(doc! {"n": 10}),
                "a value of BSON type EmbeddedDocument",
            ),
            (
                Bson::Array(vec![Bson::Int32(10)]),
                "a value of BSON type Array",
            ),
        ];
        for (value, shown) in cases {
            let err = validate_ttl_index(&key, &value).unwrap_err();
            assert_eq!(err.code, ErrorCode::CannotCreateIndex, "TTL-3 {value:?}");
            assert_eq!(
                err.message,
                format!(
                    "TTL index 'expireAfterSeconds' option must be -1 or an integer between 1 \
                     and 2147483647, got {shown}"
                ),
                "TTL-3 {value:?}"
            );
            assert_eq!(index_ttl(&key, Some(&value)), Err(err), "TTL-3 {value:?}");
        }
    }

    #[test]
    fn ttl_3_long_strings_are_cut_in_the_message() {
        let value = Bson::String("x".repeat(10_000));
        let err = validate_ttl_index(&doc! {"_ts": 1}, &value).unwrap_err();
        assert_eq!(err.code, ErrorCode::CannotCreateIndex);
        assert!(err.message.len() < 300, "TTL-3 {}", err.message);
        assert!(err.message.ends_with("…\""), "TTL-3 {}", err.message);
    }

    // ---- TTL-4: only on `_ts` ----

    #[test]
    fn ttl_4_other_key_patterns_are_refused_with_bad_value_before_the_value() {
        let message = "The 'expireAfterSeconds' option is supported on '_ts' field only.";
        let keys = [
            doc! {"a": 1},
            doc! {"_id": 1},
            doc! {"ts": 1},
            doc! {"_TS": 1},
            doc! {"_ts": 1, "a": 1},
            doc! {"a": 1, "_ts": 1},
            doc! {"_ts": -1, "_id": 1},
            doc! {"meta._ts": 1},
            doc! {"_ts": "hashed"},
            doc! {"_ts": "text"},
            doc! {"_ts": 2},
            doc! {"_ts": 0},
            doc! {"_ts": 1.5},
            doc! {"_ts": Bson::Null},
            doc! {},
        ];
        for key in keys {
            assert!(!is_ts_key_pattern(&key), "TTL-4 {key:?}");
            // A good value and bad values alike: the key pattern is checked first.
            for value in [
                Bson::Int32(10),
                Bson::Int32(0),
                Bson::String("10".into()),
                Bson::Null,
            ] {
                let err = validate_ttl_index(&key, &value).unwrap_err();
                assert_eq!(err.code, ErrorCode::BadValue, "TTL-4 {key:?} {value:?}");
                assert_eq!(err.code.code(), 2);
                assert_eq!(err.message, message, "TTL-4 {key:?} {value:?}");
            }
        }
    }

    // ---- TTL-5 ----

    #[test]
    fn ttl_5_ts_index_without_expire_after_seconds_is_ordinary() {
        assert_eq!(index_ttl(&doc! {"_ts": 1}, None), Ok(None));
        assert_eq!(index_ttl(&doc! {"_ts": -1}, None), Ok(None));
        // Any other index without the option is ordinary too, never an error.
        assert_eq!(index_ttl(&doc! {"a": 1, "_ts": 1}, None), Ok(None));
    }

    // ---- TTL-10 ----

    #[test]
    fn ttl_10_no_collection_ttl_means_never_whatever_the_document_says() {
        for document in [None, Some(-1), Some(1), Some(5), Some(MAX_TTL_SECONDS)] {
            assert_eq!(
                effective_lifetime(document, None),
                Lifetime::Never,
                "TTL-10 {document:?}"
            );
        }
        let doc = doc! {"ttl": 1};
        assert_eq!(document_expires_at(&doc, T, None), None, "TTL-10");
        assert!(!is_expired(T, document_lifetime(&doc, None), FAR), "TTL-10");
    }

    // ---- TTL-11, TTL-12 ----

    #[test]
    fn ttl_11_valid_document_ttl() {
        let cases: Vec<(Document, i32)> = vec![
            (doc! {"ttl": 1}, 1),
            (doc! {"ttl": 20_i32}, 20),
            (doc! {"ttl": 20_i64}, 20),
            (doc! {"ttl": 20.0}, 20),
            (doc! {"ttl": -1_i32}, -1),
            (doc! {"ttl": -1_i64}, -1),
            (doc! {"ttl": -1.0}, -1),
            (doc! {"ttl": i32::MAX}, MAX_TTL_SECONDS),
            (doc! {"ttl": 2_147_483_647_i64}, MAX_TTL_SECONDS),
            (doc! {"ttl": 2_147_483_647.0}, MAX_TTL_SECONDS),
            // Position among the fields does not matter; only the root-level name does.
            (doc! {"a": 1, "meta": {"ttl": 99}, "ttl": 7, "TTL": 99}, 7),
        ];
        for (doc, expected) in cases {
            assert_eq!(document_ttl(&doc), Some(expected), "TTL-11 {doc:?}");
        }
    }

    #[test]
    fn ttl_12_invalid_document_ttl_is_ignored_and_the_collection_ttl_applies() {
        let invalid = [
            doc! {"ttl": 20.5},
            doc! {"ttl": 0.5},
            doc! {"ttl": 2_147_483_649_i64},
            doc! {"ttl": 2_147_483_648_i64},
            doc! {"ttl": -2_147_483_649_i64},
            doc! {"ttl": 2_147_483_648.0},
            doc! {"ttl": 0},
            doc! {"ttl": 0_i64},
            doc! {"ttl": 0.0},
            doc! {"ttl": -0.0},
            doc! {"ttl": -5},
            doc! {"ttl": -5_i64},
            doc! {"ttl": -5.0},
            doc! {"ttl": -1.5},
            doc! {"ttl": i32::MIN},
            doc! {"ttl": f64::NAN},
            doc! {"ttl": f64::INFINITY},
            doc! {"ttl": f64::NEG_INFINITY},
            doc! {"ttl": "20"},
            doc! {"ttl": Bson::Null},
            doc! {"ttl": true},
            doc! {"ttl": {"seconds": 20}},
            doc! {"ttl": [20]},
            doc! {"meta": {"ttl": 20}},
            doc! {"TTL": 20},
            doc! {"Ttl": 20},
            doc! {"a": 1},
        ];
        for doc in invalid {
            assert_eq!(document_ttl(&doc), None, "TTL-12 {doc:?}");
            assert_eq!(
                document_lifetime(&doc, Some(10)),
                Lifetime::Seconds(10),
                "TTL-12 {doc:?}"
            );
            assert_eq!(
                document_lifetime(&doc, Some(-1)),
                Lifetime::Never,
                "TTL-12 {doc:?}"
            );
            assert_eq!(
                document_expires_at(&doc, T, Some(10)),
                Some(T + 10),
                "TTL-12 {doc:?}"
            );
        }
    }

    #[test]
    fn ttl_12_decimal128_ttl_is_ignored() {
        for value in ["20", "-1", "1", "2.0E+1"] {
            let doc = doc! {"ttl": dec(value)};
            assert_eq!(document_ttl(&doc), None, "TTL-12 Decimal128 {value}");
            assert_eq!(
                document_expires_at(&doc, T, Some(10)),
                Some(T + 10),
                "TTL-12 {value}"
            );
        }
    }

    // ---- TTL-13 ----

    #[test]
    fn ttl_13_valid_document_ttl_overrides_the_collection_ttl() {
        let cases = [
            // (document ttl, collection ttl, lifetime)
            (None, Some(10), Lifetime::Seconds(10)),
            (None, Some(-1), Lifetime::Never),
            (Some(5), Some(10), Lifetime::Seconds(5)),
            (Some(20), Some(10), Lifetime::Seconds(20)),
            (Some(5), Some(-1), Lifetime::Seconds(5)),
            (Some(-1), Some(10), Lifetime::Never),
            (Some(-1), Some(-1), Lifetime::Never),
            (
                Some(MAX_TTL_SECONDS),
                Some(1),
                Lifetime::Seconds(2_147_483_647),
            ),
            // Values that are not TTL values are treated as absent (TTL-12, TTL-3).
            (Some(0), Some(10), Lifetime::Seconds(10)),
            (Some(-5), Some(10), Lifetime::Seconds(10)),
            (Some(5), Some(0), Lifetime::Never),
            (Some(5), Some(-7), Lifetime::Never),
        ];
        for (document, collection, expected) in cases {
            assert_eq!(
                effective_lifetime(document, collection),
                expected,
                "TTL-13 document {document:?} collection {collection:?}"
            );
        }
    }

    #[test]
    fn ttl_13_lifetime_from_ttl_value() {
        assert_eq!(Lifetime::from_ttl(-1), Some(Lifetime::Never));
        assert_eq!(Lifetime::from_ttl(1), Some(Lifetime::Seconds(1)));
        for n in [0, -2, -5, i32::MIN] {
            assert_eq!(Lifetime::from_ttl(n), None, "TTL-13 {n}");
            assert!(!is_ttl_value(n), "TTL-13 {n}");
        }
    }

    // ---- TTL-14 ----

    #[test]
    fn ttl_14_expired_at_exactly_ts_plus_lifetime() {
        let lifetime = Lifetime::Seconds(10);
        assert!(
            !is_expired(T, lifetime, T - 1),
            "TTL-14: a clock before _ts is not expiry"
        );
        assert!(!is_expired(T, lifetime, T + 9), "TTL-14");
        assert!(
            is_expired(T, lifetime, T + 10),
            "TTL-14: already expired at ts + lifetime"
        );
        assert!(is_expired(T, lifetime, T + 11), "TTL-14");
        assert!(!is_expired(T, Lifetime::Never, i64::MAX), "TTL-14");
    }

    #[test]
    fn ttl_14_arithmetic_is_64_bit() {
        // `_ts + 2147483647` overflows Int32; it must not wrap.
        let ts = i64::from(i32::MAX);
        let lifetime = Lifetime::Seconds(2_147_483_647);
        assert_eq!(expires_at(ts, lifetime), Some(4_294_967_294), "TTL-14");
        assert!(!is_expired(ts, lifetime, 4_294_967_293), "TTL-14");
        assert!(is_expired(ts, lifetime, 4_294_967_294), "TTL-14");
        assert!(
            !is_expired(ts, lifetime, ts + 1),
            "TTL-14: no wrap to the past"
        );
        // Beyond i64 no clock reaches: never expires rather than wrapping.
        assert_eq!(
            expires_at(i64::MAX - 5, Lifetime::Seconds(10)),
            None,
            "TTL-14"
        );
        assert!(
            !is_expired(i64::MAX - 5, Lifetime::Seconds(10), i64::MAX),
            "TTL-14"
        );
    }

    // ---- Decimal128 decoding (TTL-2, TTL-3) ----

    #[test]
    fn decimal128_integers_round_trip() {
        let mut values: Vec<i64> = (-1000..=1000).collect();
        for p in 0..19 {
            let n = 10_i64.pow(p);
            values.extend([n, n - 1, n + 1, -n, 1 - n, -n - 1]);
        }
        values.extend([i64::MAX, i64::MIN, i64::from(i32::MAX), i64::from(i32::MIN)]);
        for n in values {
            for text in [n.to_string(), format!("{n}.000"), format!("{n}E+0")] {
                let d: Decimal128 = text.parse().unwrap();
                assert_eq!(
                    crate::query::decimal::exact_i64(&d),
                    Some(n),
                    "{text} ({d})"
                );
            }
        }
    }

    #[test]
    fn decimal128_non_integers_and_specials() {
        let cases: [(&str, Option<i64>); 18] = [
            ("1.0E+1", Some(10)),
            ("1E+18", Some(1_000_000_000_000_000_000)),
            ("9.223372036854775807E+18", Some(i64::MAX)),
            ("-9.223372036854775808E+18", Some(i64::MIN)),
            ("9.223372036854775808E+18", None),
            ("1E+19", None),
            ("1E+38", None),
            ("1E+6111", None),
            ("-0", Some(0)),
            ("0E+6111", Some(0)),
            ("0E-6176", Some(0)),
            ("10.5", None),
            ("0.1", None),
            ("1E-6176", None),
            ("9999999999999999999999999999999999E-6176", None),
            ("NaN", None),
            ("Infinity", None),
            ("-Infinity", None),
        ];
        for (text, expected) in cases {
            let d: Decimal128 = text.parse().unwrap();
            assert_eq!(
                crate::query::decimal::exact_i64(&d),
                expected,
                "{text} ({d})"
            );
        }
    }

    #[test]
    fn decimal128_non_canonical_coefficients_read_as_zero() {
        // Long-exponent form (the two bits after the sign are 11), exponent 0, coefficient bits 1.
        let long_form: u128 = (0b11 << 125) | (6176 << 111) | 1;
        let d = Decimal128::from_bytes(long_form.to_le_bytes());
        assert_eq!(d.to_string(), "0");
        assert_eq!(crate::query::decimal::exact_i64(&d), Some(0));
        // Short form with a coefficient above 10^34 - 1.
        let too_big: u128 = (6176 << 113) | ((1 << 113) - 1);
        let d = Decimal128::from_bytes(too_big.to_le_bytes());
        assert_eq!(d.to_string(), "0");
        assert_eq!(crate::query::decimal::exact_i64(&d), Some(0));
        // Zero is not a TTL value either way.
        let err = validate_ttl_index(&doc! {"_ts": 1}, &Bson::Decimal128(d)).unwrap_err();
        assert_eq!(err.code, ErrorCode::CannotCreateIndex);
    }
}
