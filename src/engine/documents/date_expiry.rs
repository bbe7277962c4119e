//! Due documents of a date TTL index (TTL-27), found through the index's own entries: a date TTL
//! index is an ordinary secondary index on the date, so its entries are already ordered by the
//! expiry time (date + `expireAfterSeconds`), and the entries whose date is at or before
//! `now - expireAfterSeconds` lead to exactly the documents it has expired — an array's
//! earliest date included, since every element has its entry. This is how mongod's TTL monitor
//! finds them; no second set of expiry keys is kept, so creating the index or changing its
//! value (`collMod`) rewrites nothing.
//!
//! A Cosmos custom TTL path (TTL-30) is such an index whose numbers are Unix milliseconds: the
//! index orders every number by exact value in one bracket, so its due numbers are one more
//! key range beside the dates'.
//!
//! Owns: the due key ranges of one index and the document key of an entry. Does not own: the
//! expiry rule (`ttl::date`), deleting (`expired::delete_batch`, which re-judges the
//! document under every model) or counting (`counts`).

use crate::engine::catalog::IndexMeta;
use crate::engine::documents::index_keys::direction_of;
use crate::storage::keys::{self, Direction};
use crate::ttl::Instants;
use bson::{Bson, DateTime};

/// The `Indexes` key ranges `[start, end)` of `index`'s entries that are due at `now`, in key
/// order: BSON dates at or before [`crate::ttl::DateTtl::due_through_millis`], and for a Cosmos
/// custom TTL path (TTL-30) numbers in `[-inf, through]` too, which read as milliseconds. The
/// numbers' bracket sorts below the dates' (BSON order), NaN at its very bottom, below `-inf`,
/// so starting at `-inf` leaves NaN, which names no instant, out; a number between `through`
/// and `through + 1` (a fraction) is not due, so the numbers' range ends after every encoding
/// of `through` itself. Empty when `index` is not a ready date TTL index or nothing can be due.
pub fn due_ranges(collection_id: u64, index: &IndexMeta, now: i64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let Some(ttl) = index.date_ttl() else {
        return Vec::new();
    };
    let Some(through) = ttl.due_through_millis(now) else {
        return Vec::new();
    };
    let Some(direction) = index.key.values().next().map(direction_of) else {
        return Vec::new();
    };
    let prefix = keys::index_prefix(collection_id, index.id);
    let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = [
        date_range(&prefix, through, direction),
        match ttl.instants {
            Instants::Dates => None,
            Instants::DatesAndEpochMillis => number_range(&prefix, through, direction),
        },
    ]
    .into_iter()
    .flatten()
    .collect();
    ranges.sort();
    ranges
}

/// The due dates' range: dates at or before `through` ms.
fn date_range(prefix: &[u8], through: i64, direction: Direction) -> Option<(Vec<u8>, Vec<u8>)> {
    let with = |bytes: &[u8]| {
        let mut key = prefix.to_vec();
        key.extend_from_slice(bytes);
        key
    };
    let tag = keys::type_tag(&Bson::DateTime(DateTime::from_millis(0)));
    match direction {
        Direction::Ascending => {
            let mut end = prefix.to_vec();
            keys::encode_value(&date(through.checked_add(1)?), &mut end);
            Some((with(&[tag]), end))
        }
        // Inverted bytes: the latest dates come first, the due ones last in the date bracket.
        Direction::Descending => {
            let mut start = prefix.to_vec();
            keys::encode_value_descending(&date(through), &mut start);
            Some((start, with(&[(!tag).checked_add(1)?])))
        }
    }
}

/// The due numbers' range: `-inf` through `through` (TTL-30).
fn number_range(prefix: &[u8], through: i64, direction: Direction) -> Option<(Vec<u8>, Vec<u8>)> {
    let lowest = Bson::Double(f64::NEG_INFINITY);
    let highest = Bson::Int64(through);
    let encoded = |value: &Bson| {
        let mut key = prefix.to_vec();
        keys::encode_value_directed(value, direction, &mut key);
        key
    };
    // Every entry of a value starts with the value's encoding (encodings are prefix-free), so
    // the keys of entries of `v` are exactly `[enc(v), prefix_end(enc(v)))`.
    match direction {
        Direction::Ascending => Some((encoded(&lowest), keys::prefix_end(&encoded(&highest))?)),
        Direction::Descending => Some((encoded(&highest), keys::prefix_end(&encoded(&lowest))?)),
    }
}

/// The document key an entry of an index of collection `collection_id` leads to: the entry's
/// value is the document's key without the collection prefix (`keys::index_key`).
pub fn document_key(collection_id: u64, entry_value: &[u8]) -> Vec<u8> {
    let mut key = keys::collection_prefix(collection_id).to_vec();
    key.extend_from_slice(entry_value);
    key
}

fn date(millis: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn key_of(index: &IndexMeta, millis: i64) -> Vec<u8> {
        let direction = direction_of(index.key.values().next().unwrap());
        keys::index_key(7, index.id, &[(date(millis), direction)], b"\x10id")
    }

    #[test]
    fn the_due_range_holds_exactly_the_due_dates_in_either_direction_ttl_27() {
        for direction in [1, -1] {
            let index = IndexMeta {
                id: 3,
                expire_after_seconds: Some(10),
                ..IndexMeta::new("at", doc! {"at": direction})
            };
            let now = 1_700_000_000;
            let ranges = due_ranges(7, &index, now);
            assert_eq!(ranges.len(), 1);
            let (start, end) = ranges[0].clone();
            let through = (now - 10) * 1000;
            for (millis, due) in [
                (i64::MIN, true),
                (-5, true),
                (through - 1, true),
                (through, true),
                (through + 1, false),
                (now * 1000, false),
                (i64::MAX, false),
            ] {
                let key = key_of(&index, millis);
                assert_eq!(
                    key >= start && key < end,
                    due,
                    "direction {direction} {millis}"
                );
            }
            // Other types in the same index are never in the range.
            for other in [Bson::Int64(0), Bson::String("x".into()), Bson::Null] {
                let dir = direction_of(&Bson::Int32(direction));
                let key = keys::index_key(7, 3, &[(other.clone(), dir)], b"\x10id");
                assert!(!(key >= start && key < end), "{other:?}");
            }
        }
    }

    #[test]
    fn only_ready_date_ttl_indexes_have_a_due_range() {
        let plain = IndexMeta::new("at", doc! {"at": 1});
        assert!(due_ranges(7, &plain, 100).is_empty());
        let ts = IndexMeta {
            expire_after_seconds: Some(10),
            ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
        };
        assert!(due_ranges(7, &ts, 100).is_empty());
        let building = IndexMeta {
            expire_after_seconds: Some(10),
            building: true,
            ..IndexMeta::new("at", doc! {"at": 1})
        };
        assert!(due_ranges(7, &building, 100).is_empty());
        let never = IndexMeta {
            expire_after_seconds: Some(-1),
            custom_ttl: true,
            ..IndexMeta::new("at", doc! {"at": 1})
        };
        assert!(due_ranges(7, &never, 100).is_empty());
    }

    #[test]
    fn a_custom_path_is_due_over_numbers_and_dates_exactly_ttl_30() {
        let now = 1_700_000_000;
        let through = (now - 10) * 1000;
        let dec = |s: String| Bson::Decimal128(s.parse().unwrap());
        // (value, due): every type the index orders, around both brackets' edges.
        let cases: Vec<(Bson, bool)> = vec![
            (Bson::Double(f64::NAN), false),
            (Bson::Double(f64::NEG_INFINITY), true),
            (Bson::Double(-1e300), true),
            (Bson::Int64(i64::MIN), true),
            (Bson::Int32(-5), true),
            (Bson::Int32(i32::MAX), true),
            (Bson::Int64(through - 1), true),
            (Bson::Int64(through), true),
            (Bson::Double(through as f64), true),
            (dec(through.to_string()), true),
            (Bson::Double(through as f64 - 0.5), true),
            (dec(format!("{through}.001")), false),
            (Bson::Double(through as f64 + 0.5), false),
            (Bson::Int64(through + 1), false),
            (Bson::Int64(i64::MAX), false),
            (Bson::Double(f64::INFINITY), false),
            (date(i64::MIN), true),
            (date(through), true),
            (date(through + 1), false),
            (date(i64::MAX), false),
            (Bson::Null, false),
            (Bson::String("1".into()), false),
            (Bson::Boolean(true), false),
            (
                Bson::Timestamp(bson::Timestamp {
                    time: 0,
                    increment: 1,
                }),
                false,
            ),
            (Bson::MaxKey, false),
        ];
        for direction in [1, -1] {
            let index = IndexMeta {
                id: 3,
                expire_after_seconds: Some(10),
                custom_ttl: true,
                ..IndexMeta::new("at", doc! {"at": direction})
            };
            let ranges = due_ranges(7, &index, now);
            assert_eq!(ranges.len(), 2);
            assert!(ranges[0].1 <= ranges[1].0, "ranges in key order");
            let dir = direction_of(&Bson::Int32(direction));
            for (value, due) in &cases {
                let key = keys::index_key(7, 3, &[(value.clone(), dir)], b"\x10id");
                let inside = ranges.iter().any(|(s, e)| &key >= s && &key < e);
                assert_eq!(inside, *due, "direction {direction} {value:?}");
                // The range agrees with the expiry rule the reads apply.
                let ttl = index.date_ttl().unwrap();
                let mut body = Vec::new();
                doc! {"at": value.clone()}.to_writer(&mut body).unwrap();
                let expired = ttl.expires_at(&body).is_some_and(|second| second <= now);
                assert_eq!(expired, *due, "rule {direction} {value:?}");
            }
        }
    }
}
