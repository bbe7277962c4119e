//! Cosmos TTL at a multi-document transaction's commit: the time its writes take, and the
//! conflict expiry makes.
//!
//! The rule (docs/ttl.md, "Transactions"), which keeps every acknowledged write from being
//! undone by expiry:
//! - A statement judges expiry at its own time, not at the snapshot's (TTL-18, TTL-19): what
//!   expired since the transaction started is neither read nor matched by later statements
//!   ([`Transaction`](super::transaction::Transaction) passes that time to each statement).
//! - A write's `_ts` is the moment it becomes visible to others, its commit time `c` (TTL-15):
//!   records a transaction writes carry [`PENDING_TS`] while it runs (so its own writes never
//!   expire under it) and `c` once committed, with their expiry keys ([`stamped`]).
//! - Expiry is a delete that happens at the expiry instant; the reaper only reclaims the space
//!   (TTL-20). So a document the transaction writes (updates, replaces, deletes) that was live
//!   when it started and is expired at `c` was deleted by someone else after the snapshot:
//!   first writer wins, the commit is a write conflict (112) and applies nothing
//!   ([`expired_since`]). This holds whether or not the reaper has removed the record yet (a
//!   removed record fails the commit's unchanged check the same way), so the outcome never
//!   depends on the reaper's timing.
//!
//! Owns: stamping at commit and the expiry conflict. Does not own: the expiry rule (`ttl`,
//! `exec::live`), the other conflicts and the commit's other effects (`transaction`).

use crate::engine::catalog::Catalog;
use crate::engine::documents::expiry;
use crate::engine::documents::record::{self, Record, HEADER_LEN};
use crate::engine::exec::live;
use crate::engine::writer::txn::PENDING_TS;
use crate::error::Result;
use crate::storage::handle::Snap;
use crate::storage::keys;
use crate::storage::overlay::Overlay;
use crate::storage::{Keyspace, Snapshot};

/// A pending write: keyspace, key, value (`None`: a delete).
pub(super) type Write = (Keyspace, Vec<u8>, Option<Vec<u8>>);

/// Whether a document `writes` changes was live in `base` at `start` (the transaction's
/// snapshot time) and is expired at `commit`, judged under `catalog` (the transaction's): an
/// expiry since the snapshot, which conflicts with the transaction's write.
pub(super) fn expired_since(
    base: &Snap,
    writes: &Overlay,
    catalog: &Catalog,
    start: i64,
    commit: i64,
) -> Result<bool> {
    for key in writes.of(Keyspace::Documents).keys() {
        let Some(bytes) = base.get(Keyspace::Documents, key)? else {
            continue;
        };
        let Some((collection_id, _)) = keys::split_id(key) else {
            continue;
        };
        let model = catalog
            .by_id(collection_id)
            .map(|meta| meta.ttl_model())
            .unwrap_or_default();
        let record = Record::decode(&bytes)?;
        if live::is_live(&record, &model, start) && !live::is_live(&record, &model, commit) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The transaction's pending writes as they are committed at `commit`: each record it wrote
/// stamped with `commit` as its `_ts`, the expiry keys of the pending stamp left out and those
/// of the commit time added. Fails (on a record it cannot read) before anything is applied.
pub(super) fn stamped(writes: Overlay, commit: i64) -> Result<Vec<Write>> {
    let mut out = Vec::new();
    let mut expiry_keys = Vec::new();
    for (keyspace, key, value) in writes.into_entries() {
        match (keyspace, value) {
            (Keyspace::Documents, Some(mut bytes)) => {
                let header = Record::decode(bytes.get(..HEADER_LEN).unwrap_or_default())?;
                if header.ts == PENDING_TS {
                    record::stamp(&mut bytes, commit, header.own_ttl);
                    if let Some(at) = expiry::key_at(&key, commit, header.own_ttl) {
                        let size = expiry::value_for_len(Record::body_len_of(&bytes));
                        expiry_keys.push((Keyspace::Expiry, at, Some(size)));
                    }
                }
                out.push((Keyspace::Documents, key, Some(bytes)));
            }
            // An entry for the pending stamp (its time saturates at the stamp): never stored.
            (Keyspace::Expiry, _) if expiry::time_of(&key) == Some(PENDING_TS) => {}
            (keyspace, value) => out.push((keyspace, key, value)),
        }
    }
    // After the transaction's own deletes of expiry keys: a document rewritten in the same
    // second it was last committed keeps the key, with its new size.
    out.extend(expiry_keys);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::documents::record::Record;
    use crate::storage::keys::document_key;
    use crate::ttl::TtlModel;
    use bson::{doc, Bson};

    #[test]
    fn a_pending_record_never_expires_while_pending() {
        let pending = Record::new(PENDING_TS, &doc! {"_id": 1}).unwrap();
        let model = TtlModel::cosmos(Some(1));
        assert_eq!(pending.expires_at(&model), None);
        assert!(live::is_live(&pending, &model, i64::MAX - 1));
        let own = Record::new(PENDING_TS, &doc! {"_id": 1, "ttl": 2}).unwrap();
        assert!(live::is_live(
            &own,
            &TtlModel::cosmos(Some(10)),
            i64::MAX - 1
        ));
    }

    #[test]
    fn stamping_gives_the_commit_time_and_its_expiry_key() {
        let key = document_key(3, &Bson::Int32(1));
        let own_key = document_key(3, &Bson::Int32(2));
        let kept_key = document_key(3, &Bson::Int32(3));
        let pending = Record::new(PENDING_TS, &doc! {"_id": 1}).unwrap();
        let own = Record::new(PENDING_TS, &doc! {"_id": 2, "ttl": 4}).unwrap();
        let kept = Record::new(50, &doc! {"_id": 3}).unwrap();
        let mut writes = Overlay::default();
        for (k, r) in [(&key, &pending), (&own_key, &own), (&kept_key, &kept)] {
            writes.put(Keyspace::Documents, k.clone(), r.encode());
            let at = expiry::key_for(k, r).unwrap();
            writes.put(Keyspace::Expiry, at, expiry::value_for(r));
        }
        let out = stamped(writes, 100).unwrap();
        let docs: Vec<(Vec<u8>, i64)> = out
            .iter()
            .filter(|(ks, _, _)| *ks == Keyspace::Documents)
            .map(|(_, k, v)| (k.clone(), Record::decode(v.as_ref().unwrap()).unwrap().ts))
            .collect();
        assert_eq!(
            docs,
            vec![
                (key.clone(), 100),
                (own_key.clone(), 100),
                (kept_key.clone(), 50)
            ]
        );
        let mut times: Vec<(Vec<u8>, i64)> = out
            .iter()
            .filter(|(ks, _, _)| *ks == Keyspace::Expiry)
            .map(|(_, k, v)| {
                assert!(v.is_some());
                (
                    expiry::document_key_of(k).unwrap(),
                    expiry::time_of(k).unwrap(),
                )
            })
            .collect();
        times.sort();
        assert_eq!(times, vec![(key, 100), (own_key, 104), (kept_key, 50)]);
    }
}
