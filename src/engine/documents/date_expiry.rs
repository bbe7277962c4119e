//! Due documents of a date TTL index (TTL-27), found through the index's own entries: a date TTL
//! index is an ordinary secondary index on the date, so its entries are already ordered by the
//! expiry time (date + `expireAfterSeconds`), and the entries whose date is at or before
//! `now - expireAfterSeconds` lead to exactly the documents it has expired — an array's
//! earliest date included, since every element has its entry. This is how mongod's TTL monitor
//! finds them; no second set of expiry keys is kept, so creating the index or changing its
//! value (`collMod`) rewrites nothing.
//!
//! Owns: the due key range of one index and the document key of an entry. Does not own: the
//! expiry rule (`ttl::date`), deleting (`collection::delete_if_expired`, which re-judges the
//! document under every model) or counting (`counts`).

use crate::engine::catalog::IndexMeta;
use crate::engine::documents::index_keys::direction_of;
use crate::storage::keys::{self, Direction};
use bson::{Bson, DateTime};

/// The `Indexes` key range `[start, end)` of `index`'s entries whose date is due at `now`:
/// BSON dates at or before [`crate::ttl::DateTtl::due_through_millis`]. `None` when `index` is
/// not a ready date TTL index or nothing can be due yet.
pub fn due_range(collection_id: u64, index: &IndexMeta, now: i64) -> Option<(Vec<u8>, Vec<u8>)> {
    let through = index.date_ttl()?.due_through_millis(now)?;
    let direction = index.key.values().next().map(direction_of)?;
    let prefix = keys::index_prefix(collection_id, index.id);
    let with = |bytes: &[u8]| {
        let mut key = prefix.clone();
        key.extend_from_slice(bytes);
        key
    };
    let tag = keys::type_tag(&Bson::DateTime(DateTime::from_millis(0)));
    match direction {
        Direction::Ascending => {
            let mut end = prefix.clone();
            keys::encode_value(&date(through.checked_add(1)?), &mut end);
            Some((with(&[tag]), end))
        }
        // Inverted bytes: the latest dates come first, the due ones last in the date bracket.
        Direction::Descending => {
            let mut start = prefix.clone();
            keys::encode_value_descending(&date(through), &mut start);
            Some((start, with(&[(!tag).checked_add(1)?])))
        }
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
            let (start, end) = due_range(7, &index, now).unwrap();
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
        assert!(due_range(7, &plain, 100).is_none());
        let ts = IndexMeta {
            expire_after_seconds: Some(10),
            ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
        };
        assert!(due_range(7, &ts, 100).is_none());
        let building = IndexMeta {
            expire_after_seconds: Some(10),
            building: true,
            ..IndexMeta::new("at", doc! {"at": 1})
        };
        assert!(due_range(7, &building, 100).is_none());
    }
}
