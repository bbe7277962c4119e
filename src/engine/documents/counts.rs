//! Per-collection document counts and body sizes, so `count` with an empty query,
//! `estimatedDocumentCount`, `collStats` and `dbStats` need not read every document.
//!
//! Each collection has one counter record in the `Catalog` keyspace, keyed by its id: the number
//! of documents stored and the sum of their BSON body sizes, expired-but-unreaped ones included.
//! Writes change it through [`Txn::count_change`](crate::engine::writer::txn::Txn::count_change), which writes each
//! changed counter once per commit group, in the same batch as the documents; a drop deletes it
//! with the collection, and a rename leaves it alone (keys carry the id, not the name).
//!
//! What a reader sees at `now` is the stored totals less the documents expired but not yet
//! reaped, found through the expiry-ordered keys (O(backlog), which the reaper keeps small) and
//! the expiry times the one rule ([`crate::ttl::is_expired_at`]) compares with `now` (TTL-18).
//! Does not own: which writes change a collection (`collection`, `ddl`).

use crate::engine::catalog::{Catalog, CollectionMeta};
use crate::engine::documents::date_expiry;
use crate::engine::documents::expiry::{self, FOLLOWS_COLLECTION, OWN_TTL};
use crate::engine::documents::record::{Record, HEADER_LEN};
use crate::error::{Error, Result};
use crate::storage::handle::Db;
use crate::storage::keys::collection_prefix;
use crate::storage::{Backend, Durability, Keyspace, Snapshot, WriteBatch};
use crate::ttl::Lifetime;
use std::collections::HashSet;
use std::ops::Bound;

/// Counter records live beside the collections' entries in the `Catalog` keyspace; `"coll\0"`
/// entries never start with this prefix.
const COUNTER_KEY_PREFIX: &[u8] = b"count\0";

/// How many documents a collection holds and the sum of their BSON body sizes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub count: u64,
    pub size: u64,
}

/// A change to a collection's [`Totals`] accumulated within one commit group.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Delta {
    pub count: i64,
    pub size: i64,
}

impl Delta {
    pub fn is_zero(&self) -> bool {
        self.count == 0 && self.size == 0
    }
}

impl Totals {
    pub fn apply(self, delta: Delta) -> Totals {
        Totals {
            count: self.count.saturating_add_signed(delta.count),
            size: self.size.saturating_add_signed(delta.size),
        }
    }

    /// Value layout: count (u64 BE) ++ size (u64 BE).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Totals> {
        let corrupt = || Error::internal("corrupt collection counter");
        let (count, size) = bytes.split_at_checked(8).ok_or_else(corrupt)?;
        Ok(Totals {
            count: u64::from_be_bytes(count.try_into().map_err(|_| corrupt())?),
            size: u64::from_be_bytes(size.try_into().map_err(|_| corrupt())?),
        })
    }

    fn less(self, other: Totals) -> Totals {
        Totals {
            count: self.count.saturating_sub(other.count),
            size: self.size.saturating_sub(other.size),
        }
    }
}

/// The `Catalog` key of collection `collection_id`'s counter.
pub fn counter_key(collection_id: u64) -> Vec<u8> {
    let mut key = COUNTER_KEY_PREFIX.to_vec();
    key.extend_from_slice(&collection_id.to_be_bytes());
    key
}

/// The stored totals of a collection; `None` when it has no counter (a collection no write has
/// counted yet is empty; at start, every collection without one is counted, [`backfill`]).
pub fn stored<S: Snapshot>(snapshot: &S, collection_id: u64) -> Result<Option<Totals>> {
    snapshot
        .get(Keyspace::Catalog, &counter_key(collection_id))?
        .map(|bytes| Totals::decode(&bytes))
        .transpose()
}

/// The documents of `meta` that are visible at `now`, counted and sized without reading them.
pub fn visible<S: Snapshot>(snapshot: &S, meta: &CollectionMeta, now: i64) -> Result<Totals> {
    let total = stored(snapshot, meta.id)?.unwrap_or_default();
    Ok(total.less(expired(snapshot, meta, now)?))
}

/// The stored documents of `meta` that are expired at `now` (TTL-10, TTL-13, TTL-14), found
/// through the expiry keys: with a collection TTL of `n` seconds, the `T` entries whose `_ts` is
/// at most `now - n` (a collection TTL of `-1` expires none of them); with any collection TTL,
/// the `E` entries whose `_ts + ttl` is at most `now`. Documents with `ttl: -1` have no entry.
/// Then the documents each date TTL index has expired, through its due entries
/// (`date_expiry`, TTL-27): each document once, however many models or array elements say so.
pub fn expired<S: Snapshot>(snapshot: &S, meta: &CollectionMeta, now: i64) -> Result<Totals> {
    let dates: Vec<(Vec<u8>, Vec<u8>)> = meta
        .indexes
        .iter()
        .flat_map(|index| date_expiry::due_ranges(meta.id, index, now))
        .collect();
    // Only with date TTL indexes are documents remembered, to count each one once.
    let mut counted = (!dates.is_empty()).then(HashSet::new);
    let mut out = cosmos_expired(snapshot, meta, now, counted.as_mut())?;
    for (start, end) in dates {
        let range = snapshot.range(
            Keyspace::Indexes,
            Bound::Included(&start),
            Bound::Excluded(&end),
            false,
        );
        for entry in range {
            let (_, value) = entry?;
            let doc_key = date_expiry::document_key(meta.id, &value);
            if let Some(counted) = counted.as_mut() {
                if !counted.insert(doc_key.clone()) {
                    continue;
                }
            }
            if let Some(bytes) = snapshot.get(Keyspace::Documents, &doc_key)? {
                out.count += 1;
                out.size += Record::body_len_of(&bytes) as u64;
            }
        }
    }
    Ok(out)
}

/// The documents the `_ts` model has expired ([`expired`]); each one's key goes into `counted`
/// when given.
fn cosmos_expired<S: Snapshot>(
    snapshot: &S,
    meta: &CollectionMeta,
    now: i64,
    mut counted: Option<&mut HashSet<Vec<u8>>>,
) -> Result<Totals> {
    let Some(collection) = meta.ttl().and_then(Lifetime::from_ttl) else {
        return Ok(Totals::default());
    };
    let mut due = Vec::with_capacity(2);
    if let Lifetime::Seconds(n) = collection {
        if let Some(ts) = now.checked_sub(i64::from(n)) {
            due.push((FOLLOWS_COLLECTION, ts));
        }
    }
    due.push((OWN_TTL, now));
    let mut out = Totals::default();
    for (kind, time) in due {
        let start = expiry::kind_prefix(meta.id, kind);
        let end = expiry::due_end(meta.id, kind, time);
        let range = snapshot.range(
            Keyspace::Expiry,
            Bound::Included(&start),
            Bound::Excluded(&end),
            false,
        );
        for entry in range {
            let (key, value) = entry?;
            if let Some(counted) = counted.as_deref_mut() {
                counted.extend(expiry::document_key_of(&key));
            }
            out.count += 1;
            out.size += match expiry::body_len_of(&value) {
                Some(len) => len,
                None => stored_body_len(snapshot, &key)?,
            };
        }
    }
    Ok(out)
}

/// The body size of the document an expiry entry written before entries carried it points at.
fn stored_body_len<S: Snapshot>(snapshot: &S, expiry_key: &[u8]) -> Result<u64> {
    let Some(doc_key) = expiry::document_key_of(expiry_key) else {
        return Ok(0);
    };
    Ok(snapshot
        .get(Keyspace::Documents, &doc_key)?
        .map_or(0, |bytes| bytes.len().saturating_sub(HEADER_LEN) as u64))
}

/// Counts every collection that has no counter yet (a data directory written before counters
/// existed) by reading its documents once, and stores the counters durably. Runs at start,
/// before the writer. Returns how many collections it counted.
pub(in crate::engine) fn backfill(backend: &Db, catalog: &Catalog) -> Result<usize> {
    let snapshot = backend.snapshot();
    let mut batch = WriteBatch::new();
    let mut counted = 0;
    for meta in catalog.all() {
        if stored(&snapshot, meta.id)?.is_some() {
            continue;
        }
        let mut totals = Totals::default();
        for entry in snapshot.prefix(Keyspace::Documents, &collection_prefix(meta.id), false) {
            let (_, bytes) = entry?;
            totals.count += 1;
            totals.size += bytes.len().saturating_sub(HEADER_LEN) as u64;
        }
        tracing::info!(
            namespace = %meta.namespace(),
            documents = totals.count,
            "counted a collection stored without a document counter"
        );
        batch.put(Keyspace::Catalog, counter_key(meta.id), totals.encode());
        counted += 1;
    }
    if !batch.is_empty() {
        backend.commit(batch, Durability::Buffered)?;
        backend.persist(Durability::SyncData)?;
    }
    Ok(counted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::engine::{ddl, documents::collection, Engine, IndexMeta, ReadView, Record};
    use bson::{doc, Bson, Document};
    use proptest::prelude::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// One document: when it is written, its `ttl` field (valid or not), its padding, and
    /// whether it is later rewritten (bigger, at `rewrite_at`) or deleted.
    #[derive(Debug, Clone)]
    struct Spec {
        written: i64,
        ttl: Option<Bson>,
        pad: usize,
        later: Option<(bool, i64)>,
    }

    fn ttl_field() -> impl Strategy<Value = Option<Bson>> {
        prop_oneof![
            Just(None),
            Just(Some(Bson::Int32(-1))),
            (1..60i32).prop_map(|n| Some(Bson::Int32(n))),
            (1..60i64).prop_map(|n| Some(Bson::Int64(n))),
            Just(Some(Bson::Int32(0))),
            Just(Some(Bson::Double(20.5))),
            Just(Some(Bson::String("20".into()))),
        ]
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (
            0..100i64,
            ttl_field(),
            0..200usize,
            proptest::option::of((any::<bool>(), 0..60i64)),
        )
            .prop_map(|(written, ttl, pad, later)| Spec {
                written,
                ttl,
                pad,
                later: later.map(|(delete, after)| (delete, written + after)),
            })
    }

    fn document(i: usize, spec: &Spec, pad: usize) -> Document {
        let mut d = doc! {"_id": i as i32, "a": i as i32 % 3, "pad": "x".repeat(pad)};
        if let Some(ttl) = &spec.ttl {
            d.insert("ttl", ttl.clone());
        }
        d
    }

    /// What `live::is_live` says of every stored record, counted and sized by reading them.
    fn judged_one_by_one(view: &ReadView, meta: &CollectionMeta, now: i64) -> Totals {
        let mut out = Totals::default();
        for entry in view
            .snapshot
            .prefix(Keyspace::Documents, &collection_prefix(meta.id), false)
        {
            let record = Record::decode(&entry.unwrap().1).unwrap();
            if crate::engine::exec::live::is_live(&record, &meta.ttl_model(), now) {
                out.count += 1;
                out.size += record.body.len() as u64;
            }
        }
        out
    }

    fn check(engine: &Engine, nows: &[i64]) {
        let view = engine.read().unwrap();
        let meta = view.collection("db", "c").unwrap();
        let stored_records = view
            .snapshot
            .prefix(Keyspace::Documents, &collection_prefix(meta.id), false)
            .count() as u64;
        let counter = stored(&view.snapshot, meta.id).unwrap().unwrap_or_default();
        assert_eq!(counter.count, stored_records);
        for &now in nows {
            let at = ReadView::new(
                view.snapshot.clone(),
                Arc::clone(&view.catalog),
                now,
                Default::default(),
                None,
                Arc::new(crate::engine::index_usage::IndexUsage::new(Arc::new(
                    crate::clock::ManualClock::starting_at_secs(0),
                ))),
            );
            assert_eq!(
                at.visible_totals(&meta).unwrap(),
                judged_one_by_one(&at, &meta, now),
                "now {now}, collection TTL {:?}",
                meta.ttl()
            );
        }
    }

    /// Inserts document `i` at `at`, or later rewrites (bigger) or deletes it if still visible.
    fn write_event(txn: &mut crate::engine::Txn<'_>, spec: &Spec, i: usize, at: i64, later: bool) {
        let meta = ddl::collection(txn, "db", "c").unwrap();
        if !later {
            let d = document(i, spec, spec.pad);
            return collection::insert(txn, &meta, &d, at).unwrap();
        }
        let id = Bson::Int32(i as i32);
        let Some(old) = collection::get_by_id(txn, &meta, &id, at).unwrap() else {
            return;
        };
        match spec.later {
            Some((true, _)) => collection::delete(txn, &meta, &old).unwrap(),
            _ => {
                let grown = document(i, spec, spec.pad + 100);
                collection::replace(txn, &meta, &old, &grown, at).unwrap()
            }
        }
    }

    async fn run_case(
        specs: Vec<Spec>,
        collection_ttl: Option<i32>,
        indexed: bool,
        nows: Vec<i64>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::starting_at_secs(0));
        let engine = Engine::open(dir.path(), clock.clone()).unwrap();
        engine.reaper.pause();
        engine
            .write(true, move |txn, now| {
                let (mut meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
                if let Some(ttl) = collection_ttl {
                    let ts = IndexMeta {
                        expire_after_seconds: Some(ttl),
                        ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
                    };
                    meta = ddl::create_index(txn, &meta, ts, now).unwrap();
                }
                if indexed {
                    let a = IndexMeta::new("a_1", doc! {"a": 1});
                    ddl::create_index(txn, &meta, a, now).unwrap();
                }
            })
            .await
            .unwrap();
        // Writes in time order, each in its own job; the job's own clock is ignored.
        let mut events: Vec<(i64, usize, bool)> = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            events.push((s.written, i, false));
            if let Some((_, at)) = s.later {
                events.push((at, i, true));
            }
        }
        events.sort();
        // A few writes per commit group: counters change both within a group and across them.
        for chunk in events.chunks(8) {
            let (chunk, specs) = (chunk.to_vec(), specs.clone());
            engine
                .write(true, move |txn, _| {
                    for (at, i, later) in chunk {
                        write_event(txn, &specs[i], i, at, later);
                    }
                })
                .await
                .unwrap();
        }
        check(&engine, &nows);
        // The reaper's deletes keep the counter right, before and after its point in time.
        clock.advance(Duration::from_secs(130));
        engine.reaper.run_pass().await.unwrap();
        check(&engine, &nows);
        // A restart keeps the counter.
        drop(engine);
        let engine = Engine::open(dir.path(), clock).unwrap();
        check(&engine, &nows);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// TTL-10, TTL-13, TTL-14, TTL-18: the counter less the expired documents found through
        /// the expiry keys is exactly what judging every record with `live::is_live` gives.
        #[test]
        fn visible_totals_match_judging_every_document(
            specs in proptest::collection::vec(spec(), 0..40),
            collection_ttl in prop_oneof![Just(None), Just(Some(-1)), (1..60i32).prop_map(Some)],
            indexed in any::<bool>(),
            nows in proptest::collection::vec(0..220i64, 1..8),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(run_case(specs, collection_ttl, indexed, nows));
        }
    }

    #[tokio::test]
    async fn a_data_directory_without_counters_is_counted_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::starting_at_secs(1_000));
        let engine = Engine::open(dir.path(), Arc::clone(&clock)).unwrap();
        engine
            .write(true, |txn, now| {
                let (meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
                for i in 0..5 {
                    collection::insert(txn, &meta, &doc! {"_id": i}, now).unwrap();
                }
                // As a server from before counters would have left it.
                txn.drop_counter(meta.id);
            })
            .await
            .unwrap();
        let meta = engine.catalog().unwrap().get("db", "c").cloned().unwrap();
        assert_eq!(
            stored(&engine.read().unwrap().snapshot, meta.id).unwrap(),
            None
        );
        drop(engine);
        let engine = Engine::open(dir.path(), clock).unwrap();
        let view = engine.read().unwrap();
        let size = Record::new(0, &doc! {"_id": 0}).unwrap().body.len() as u64;
        assert_eq!(
            view.visible_totals(&meta).unwrap(),
            Totals {
                count: 5,
                size: 5 * size
            }
        );
    }

    #[test]
    fn a_group_writes_each_counter_once() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), Arc::new(ManualClock::starting_at_secs(1))).unwrap();
        let snapshot = engine.backend.snapshot();
        let mut catalog = (*engine.catalog().unwrap()).clone();
        let mut txn = crate::engine::Txn::new(&snapshot, &mut catalog);
        let (meta, _) = ddl::ensure_collection(&mut txn, "db", "c").unwrap();
        for i in 0..100 {
            collection::insert(&mut txn, &meta, &doc! {"_id": i}, 1).unwrap();
        }
        let (batch, _) = txn.finish().unwrap();
        let counters: Vec<_> = batch
            .writes()
            .filter_map(|write| match write {
                (Keyspace::Catalog, key, Some(value)) if key.starts_with(COUNTER_KEY_PREFIX) => {
                    Some(Totals::decode(value).unwrap())
                }
                _ => None,
            })
            .collect();
        assert_eq!(counters.len(), 1);
        assert_eq!(counters[0].count, 100);
    }
}
