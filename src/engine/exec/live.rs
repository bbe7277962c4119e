//! Which stored documents a read sees: where reads decide TTL expiry, under every model the
//! collection has (the `_ts` model and its date TTL indexes, [`TtlModel`]). A record is live
//! while [`ttl::is_expired_at`], the one expiry decision, says it is not expired at the read's
//! time (TTL-18, TTL-19). The executor's leaves, the collection scans and point reads of
//! [`ReadView`](crate::engine::read::ReadView), the writes' own lookups and `mayfly dump` take
//! their records through here, so what lies above them (sorts, cursors, change streams,
//! `dbHash`, `validate`'s counts) only ever holds live documents; a cursor re-judges the
//! documents it read ahead with [`is_live_until`] before each batch.
//!
//! Owns: the read time a scan judges expiry by ([`NowCell`]), the scans that yield only live
//! documents ([`DocScan`], [`RecordScan`]) and the point read of a live record. Does not own:
//! the expiry rule (`ttl`), when a record expires (`Record::expires_at`), or removing expired
//! documents (the reaper and the writes' `delete_if_expired`, which decide with the same
//! function). Collection counts subtract the expired documents the expiry index holds, whose
//! keys are these same expiry times (`documents::counts`).

use crate::engine::catalog::CollectionMeta;
use crate::engine::documents::record::Record;
use crate::engine::documents::record::StoredDoc;
use crate::error::Result;
use crate::storage::handle::Snap;
use crate::storage::keys;
use crate::storage::{Keyspace, Snapshot};
use crate::ttl::{self, TtlModel};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The time a scan judges expiry by; a cursor moves it forward before each batch.
pub type NowCell = Arc<AtomicI64>;

/// Whether a document that expires at `expires_at` (if ever) is live at `now`.
pub fn is_live_until(expires_at: Option<i64>, now: i64) -> bool {
    !ttl::is_expired_at(expires_at, now)
}

/// Whether `record`, of a collection whose TTL rules are `model`, is live at `now`.
pub fn is_live(record: &Record, model: &TtlModel, now: i64) -> bool {
    is_live_until(record.expires_at(model), now)
}

/// The stored record `bytes`, or `None` when it is expired at `now`.
pub fn live_record(bytes: &[u8], model: &TtlModel, now: i64) -> Result<Option<Record>> {
    let record = Record::decode(bytes)?;
    Ok(is_live(&record, model, now).then_some(record))
}

/// [`live_record`] of bytes the caller owns (decoded in place).
pub fn live_record_owned(bytes: Vec<u8>, model: &TtlModel, now: i64) -> Result<Option<Record>> {
    let record = Record::decode_owned(bytes)?;
    Ok(is_live(&record, model, now).then_some(record))
}

/// Every live document of `meta` in `snapshot`, in `_id` order ([`DocScan`]).
pub fn scan(snapshot: &Snap, meta: &CollectionMeta, now: NowCell) -> DocScan {
    let prefix = keys::collection_prefix(meta.id);
    DocScan {
        entries: Box::new(snapshot.prefix(Keyspace::Documents, &prefix, false)),
        ttl: meta.ttl_model(),
        now,
    }
}

type Entries = Box<
    dyn Iterator<Item = std::result::Result<(Vec<u8>, Vec<u8>), crate::storage::StorageError>>
        + Send,
>;

/// Live documents of one collection, decoded as they are pulled and judged against a clock cell
/// a cursor advances between batches (TTL-18: a cursor opened earlier never returns a document
/// that has expired since).
pub struct DocScan {
    entries: Entries,
    ttl: TtlModel,
    now: NowCell,
}

impl Iterator for DocScan {
    type Item = Result<StoredDoc>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (key, bytes) = match self.entries.next()? {
                Ok(entry) => entry,
                Err(e) => return Some(Err(e.into())),
            };
            let record = match live_record(&bytes, &self.ttl, self.now.load(Ordering::Relaxed)) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            };
            return Some(record.document().map(|doc| StoredDoc { key, record, doc }));
        }
    }
}

/// A collection's stored records in `_id` order, with their `_ts` and own `ttl` and their
/// bodies undecoded — what a dump copies — judged at a fixed `now`: expired ones are skipped
/// (TTL-18) and counted in `expired`.
pub struct RecordScan<I> {
    entries: I,
    ttl: TtlModel,
    now: i64,
    pub expired: u64,
}

/// The live records of `meta` in `snapshot` at `now` ([`RecordScan`]).
pub fn records<S: Snapshot>(snapshot: &S, meta: &CollectionMeta, now: i64) -> RecordScan<S::Iter> {
    RecordScan {
        entries: snapshot.prefix(
            Keyspace::Documents,
            &keys::collection_prefix(meta.id),
            false,
        ),
        ttl: meta.ttl_model(),
        now,
        expired: 0,
    }
}

impl<I> Iterator for RecordScan<I>
where
    I: Iterator<Item = std::result::Result<(Vec<u8>, Vec<u8>), crate::storage::StorageError>>,
{
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let bytes = match self.entries.next()? {
                Ok((_, bytes)) => bytes,
                Err(e) => return Some(Err(e.into())),
            };
            let record = match Record::decode_owned(bytes) {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            if is_live(&record, &self.ttl, self.now) {
                return Some(Ok(record));
            }
            self.expired += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn liveness_follows_the_ttl_rules() {
        let (none, m10) = (TtlModel::default(), TtlModel::cosmos(Some(10)));
        let plain = Record::new(100, &doc! {"_id": 1}).unwrap();
        assert!(is_live(&plain, &none, i64::MAX), "TTL-10");
        assert!(is_live(&plain, &m10, 109));
        assert!(!is_live(&plain, &m10, 110), "TTL-14");
        let own = Record::new(100, &doc! {"_id": 1, "ttl": 2}).unwrap();
        assert!(
            is_live(&own, &none, 1_000),
            "TTL-10: no collection TTL, own ttl ignored"
        );
        assert!(!is_live(&own, &m10, 102), "TTL-13");
        let never = Record::new(100, &doc! {"_id": 1, "ttl": -1}).unwrap();
        assert!(is_live(&never, &m10, i64::MAX));
        assert!(is_live_until(None, i64::MAX));
        assert!(is_live_until(Some(110), 109));
        assert!(
            !is_live_until(Some(110), 110),
            "TTL-14: gone at the second it expires"
        );
    }

    #[test]
    fn point_reads_return_only_live_records() {
        let (none, m10) = (TtlModel::default(), TtlModel::cosmos(Some(10)));
        let stored = Record::new(100, &doc! {"_id": 1}).unwrap().encode();
        assert!(live_record(&stored, &m10, 109).unwrap().is_some());
        assert!(live_record(&stored, &m10, 110).unwrap().is_none());
        assert!(live_record_owned(stored.clone(), &m10, 110)
            .unwrap()
            .is_none());
        assert!(live_record_owned(stored, &none, 110).unwrap().is_some());
        assert!(live_record(&[1, 2, 3], &none, 0).is_err());
    }

    #[test]
    fn a_date_ttl_index_decides_liveness_with_the_collection_ttl_ttl_26() {
        let at = |secs: i64| bson::DateTime::from_millis(secs * 1000);
        let dates = TtlModel {
            collection_ttl: None,
            dates: vec![ttl::DateTtl::new("expiresAt", 0).unwrap()],
        };
        let future = Record::new(100, &doc! {"_id": 1, "expiresAt": at(150)}).unwrap();
        assert!(is_live(&future, &dates, 149));
        assert!(!is_live(&future, &dates, 150), "TTL-26: gone at d + 0");
        let missing = Record::new(100, &doc! {"_id": 2}).unwrap();
        assert!(
            is_live(&missing, &dates, i64::MAX),
            "TTL-26: no date, never"
        );
        let both = TtlModel {
            collection_ttl: Some(10),
            ..dates.clone()
        };
        assert!(
            !is_live(&future, &both, 110),
            "the _ts model expires it first"
        );
        let stored = future.encode();
        assert!(live_record(&stored, &dates, 149).unwrap().is_some());
        assert!(live_record_owned(stored, &dates, 150).unwrap().is_none());
    }
}
