//! Expiry-ordered keys (TTL-20): every document has at most one entry in the `Expiry` keyspace,
//! so the reaper finds due documents by range scans instead of scanning collections, and
//! creating or dropping a TTL index never rewrites documents.
//!
//! - `T` entries order documents that follow the collection TTL by `_ts`; with collection TTL
//!   `n`, those with `_ts <= now - n` are due.
//! - `E` entries order documents with their own valid positive `ttl` by `_ts + ttl`; those at
//!   or before `now` are due (only while the collection has a TTL, TTL-10).
//! - Documents whose own `ttl` is `-1` never expire and have no entry.
//!
//! Key: `collection prefix ++ kind ++ time (i64, sign-flipped BE) ++ encoded _id`; the document's
//! key is `collection prefix ++ encoded _id`, so it is recovered from the expiry key. Value: the
//! document's BSON body size (u32 BE), so expired documents are sized without reading them
//! (`counts`); entries written before that have an empty value.

use crate::engine::documents::record::Record;
use crate::storage::keys::{collection_prefix, split_id, MAX_ID_LEN};

pub const FOLLOWS_COLLECTION: u8 = b'T';
pub const OWN_TTL: u8 = b'E';

/// The expiry key of a document stored as `record` under `doc_key`, if it can ever expire.
pub fn key_for(doc_key: &[u8], record: &Record) -> Option<Vec<u8>> {
    key_at(doc_key, record.ts, record.own_ttl)
}

/// The expiry key of a document stored under `doc_key`, written at `ts` with its own `ttl`
/// `own_ttl`, if it can ever expire.
pub fn key_at(doc_key: &[u8], ts: i64, own_ttl: Option<i32>) -> Option<Vec<u8>> {
    let (_, encoded_id) = split_id(doc_key)?;
    let prefix = doc_key.get(..doc_key.len() - encoded_id.len())?;
    let (kind, time) = match own_ttl {
        Some(ttl) if ttl > 0 => (OWN_TTL, ts.saturating_add(i64::from(ttl))),
        Some(_) => return None,
        None => (FOLLOWS_COLLECTION, ts),
    };
    let mut key = Vec::with_capacity(doc_key.len() + 9);
    key.extend_from_slice(prefix);
    key.push(kind);
    key.extend_from_slice(&encode_time(time));
    key.extend_from_slice(encoded_id);
    Some(key)
}

/// The value of a document's expiry entry: its body size.
pub fn value_for(record: &Record) -> Vec<u8> {
    value_for_len(record.body.len())
}

/// The value of the expiry entry of a document whose body is `body_len` bytes.
pub fn value_for_len(body_len: usize) -> Vec<u8> {
    u32::try_from(body_len)
        .unwrap_or(u32::MAX)
        .to_be_bytes()
        .to_vec()
}

/// The body size an expiry entry's value holds; `None` for an entry written without it.
pub fn body_len_of(value: &[u8]) -> Option<u64> {
    let bytes: [u8; 4] = value.try_into().ok()?;
    Some(u64::from(u32::from_be_bytes(bytes)))
}

/// The document key an expiry key points at.
pub fn document_key_of(expiry_key: &[u8]) -> Option<Vec<u8>> {
    let (_, rest) = split_id(expiry_key)?;
    let prefix = expiry_key.get(..expiry_key.len() - rest.len())?;
    let id = rest.get(9..)?;
    let mut key = Vec::with_capacity(MAX_ID_LEN + id.len());
    key.extend_from_slice(prefix);
    key.extend_from_slice(id);
    Some(key)
}

/// The time an expiry key orders its document by (`_ts`, or `_ts + ttl`).
pub fn time_of(expiry_key: &[u8]) -> Option<i64> {
    let (_, rest) = split_id(expiry_key)?;
    let bytes: [u8; 8] = rest.get(1..9)?.try_into().ok()?;
    Some((u64::from_be_bytes(bytes) ^ (1 << 63)) as i64)
}

/// The range start of one kind of entries of a collection.
pub fn kind_prefix(collection_id: u64, kind: u8) -> Vec<u8> {
    let mut key = collection_prefix(collection_id).to_vec();
    key.push(kind);
    key
}

/// Exclusive range end: entries of `kind` whose time is `<= time`.
pub fn due_end(collection_id: u64, kind: u8, time: i64) -> Vec<u8> {
    let mut key = kind_prefix(collection_id, kind);
    key.extend_from_slice(&encode_time(time.saturating_add(1)));
    key
}

fn encode_time(time: i64) -> [u8; 8] {
    ((time as u64) ^ (1 << 63)).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::keys::document_key;
    use bson::{doc, Bson};

    #[test]
    fn kinds_and_round_trip() {
        let dk = document_key(7, &Bson::Int32(1));
        let plain = Record::new(100, &doc! {"_id": 1}).unwrap();
        let k = key_for(&dk, &plain).unwrap();
        assert_eq!(
            k[1], FOLLOWS_COLLECTION,
            "after the one-byte prefix of collection 7"
        );
        assert_eq!(document_key_of(&k).unwrap(), dk);
        let own = Record::new(100, &doc! {"_id": 1, "ttl": 5}).unwrap();
        assert_eq!(key_for(&dk, &own).unwrap()[1], OWN_TTL);
        let never = Record::new(100, &doc! {"_id": 1, "ttl": -1}).unwrap();
        assert!(key_for(&dk, &never).is_none());
    }

    #[test]
    fn times_order_and_due_end_is_inclusive() {
        let dk = document_key(7, &Bson::Int32(1));
        for (ts, own) in [
            (-5, None),
            (0, None),
            (100, Some(5)),
            (i64::MAX, None),
            (i64::MAX, Some(7)),
        ] {
            let key = key_at(&dk, ts, own).unwrap();
            let time = own.map_or(ts, |t| ts.saturating_add(i64::from(t)));
            assert_eq!(time_of(&key), Some(time), "{ts} {own:?}");
        }
        let at = |ts| key_for(&dk, &Record::new(ts, &doc! {"_id": 1}).unwrap()).unwrap();
        assert!(at(-5) < at(0) && at(0) < at(100));
        assert!(at(100) < due_end(7, FOLLOWS_COLLECTION, 100));
        assert!(at(101) >= due_end(7, FOLLOWS_COLLECTION, 100));
    }
}
