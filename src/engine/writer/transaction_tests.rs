//! Multi-document transactions in the engine: isolation, read-your-writes, atomic commit,
//! conflicts (at the write and at the commit), collections created inside one, and the log.

use crate::clock::{Clock, ManualClock};
use crate::engine::catalog::IndexMeta;
use crate::engine::oplog::state as oplog;
use crate::engine::{ddl, documents::collection, Engine, Transaction};
use crate::error::ErrorCode;
use crate::storage::Backend;
use bson::{doc, Bson, Document};
use std::sync::Arc;

fn engine() -> Engine {
    let engine = Engine::open_memory(Arc::new(ManualClock::starting_at_secs(1_000))).unwrap();
    engine.enable_oplog(64 * 1024 * 1024).unwrap();
    engine
}

async fn setup(engine: &Engine, docs: Vec<Document>) {
    engine
        .write(true, move |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c")?;
            ddl::create_index(
                txn,
                &meta,
                IndexMeta {
                    unique: true,
                    ..IndexMeta::new("u_1", doc! {"u": 1})
                },
                now,
            )?;
            let meta = ddl::collection(txn, "db", "c").unwrap();
            for d in &docs {
                collection::insert(txn, &meta, d, now)?;
            }
            Ok::<_, crate::error::Error>(())
        })
        .await
        .unwrap()
        .unwrap();
}

fn tx_insert(tx: &mut Transaction, coll: &'static str, d: Document) -> crate::error::Result<()> {
    tx.write(move |txn, now| {
        let (meta, _) = ddl::ensure_collection(txn, "db", coll)?;
        collection::insert(txn, &meta, &d, now)
    })?
}

fn tx_set(tx: &mut Transaction, id: i32, a: i32) -> crate::error::Result<()> {
    tx.write(move |txn, now| {
        let meta = ddl::collection(txn, "db", "c").unwrap();
        let old = collection::get_by_id(txn, &meta, &Bson::Int32(id), now)?.unwrap();
        let mut new = old.doc.clone();
        new.insert("a", a);
        collection::update(txn, &meta, &old, &new, now)
    })?
}

async fn set(engine: &Engine, id: i32, a: i32) {
    engine
        .write(true, move |txn, now| {
            let meta = ddl::collection(txn, "db", "c").unwrap();
            let old = collection::get_by_id(txn, &meta, &Bson::Int32(id), now)?.unwrap();
            let mut new = old.doc.clone();
            new.insert("a", a);
            collection::update(txn, &meta, &old, &new, now)
        })
        .await
        .unwrap()
        .unwrap();
}

async fn commit(engine: &Engine, tx: Transaction) -> crate::error::Result<()> {
    let session = doc! {"lsid": {"id": 7}, "txnNumber": 3_i64};
    engine
        .write(true, move |txn, now| tx.apply(txn, now, &session))
        .await?
}

fn visible(view: &crate::engine::ReadView, coll: &str) -> Vec<Document> {
    let Some(meta) = view.collection("db", coll) else {
        return Vec::new();
    };
    view.scan(&meta, view.now_cell())
        .map(|d| d.unwrap().doc)
        .collect()
}

fn count(view: &crate::engine::ReadView, coll: &str) -> u64 {
    view.collection("db", coll)
        .map(|meta| view.visible_count(&meta).unwrap())
        .unwrap_or(0)
}

#[tokio::test]
async fn writes_are_seen_inside_and_appear_outside_only_at_commit() {
    let engine = engine();
    setup(&engine, vec![doc! {"_id": 1, "a": 0, "u": 1}]).await;
    let mut tx = engine.begin_transaction().unwrap();
    tx_insert(&mut tx, "c", doc! {"_id": 2, "u": 2}).unwrap();
    tx_set(&mut tx, 1, 5).unwrap();
    tx_insert(&mut tx, "other", doc! {"_id": "x"}).unwrap();

    let inside = tx.read_view().unwrap();
    assert_eq!(
        visible(&inside, "c"),
        vec![doc! {"_id": 1, "a": 5, "u": 1}, doc! {"_id": 2, "u": 2}]
    );
    assert_eq!(count(&inside, "c"), 2);
    assert_eq!(count(&inside, "other"), 1);
    let outside = engine.read().unwrap();
    assert_eq!(
        visible(&outside, "c"),
        vec![doc! {"_id": 1, "a": 0, "u": 1}]
    );
    assert!(outside.collection("db", "other").is_none());

    commit(&engine, tx).await.unwrap();
    let after = engine.read().unwrap();
    assert_eq!(
        visible(&after, "c"),
        vec![doc! {"_id": 1, "a": 5, "u": 1}, doc! {"_id": 2, "u": 2}]
    );
    assert_eq!(count(&after, "c"), 2);
    assert_eq!(visible(&after, "other"), vec![doc! {"_id": "x"}]);
    assert_eq!(engine.transaction_locks().unwrap(), 0);
}

#[tokio::test]
async fn a_snapshot_does_not_see_later_commits() {
    let engine = engine();
    setup(&engine, vec![doc! {"_id": 1, "a": 0, "u": 1}]).await;
    let mut tx = engine.begin_transaction().unwrap();
    set(&engine, 1, 9).await;
    assert_eq!(
        visible(&tx.read_view().unwrap(), "c"),
        vec![doc! {"_id": 1, "a": 0, "u": 1}]
    );
}

#[tokio::test]
async fn the_second_transaction_to_write_a_document_conflicts_at_once() {
    let engine = engine();
    setup(&engine, vec![doc! {"_id": 1, "a": 0, "u": 1}]).await;
    let mut first = engine.begin_transaction().unwrap();
    let mut second = engine.begin_transaction().unwrap();
    tx_set(&mut first, 1, 1).unwrap();
    let err = tx_set(&mut second, 1, 2).unwrap_err();
    assert_eq!(err.code, ErrorCode::WriteConflict);
    drop(second);
    commit(&engine, first).await.unwrap();
    assert_eq!(engine.transaction_locks().unwrap(), 0);
}

#[tokio::test]
async fn a_document_committed_since_the_snapshot_conflicts_at_the_write() {
    let engine = engine();
    setup(&engine, vec![doc! {"_id": 1, "a": 0, "u": 1}]).await;
    let mut tx = engine.begin_transaction().unwrap();
    set(&engine, 1, 9).await;
    let err = tx_set(&mut tx, 1, 2).unwrap_err();
    assert_eq!(err.code, ErrorCode::WriteConflict);
}

#[tokio::test]
async fn a_plain_write_after_the_transactions_write_fails_its_commit_whole() {
    let engine = engine();
    setup(&engine, vec![doc! {"_id": 1, "a": 0, "u": 1}]).await;
    let mut tx = engine.begin_transaction().unwrap();
    tx_insert(&mut tx, "c", doc! {"_id": 2, "u": 2}).unwrap();
    tx_set(&mut tx, 1, 5).unwrap();
    set(&engine, 1, 9).await;
    let err = commit(&engine, tx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::WriteConflict);
    let after = engine.read().unwrap();
    assert_eq!(visible(&after, "c"), vec![doc! {"_id": 1, "a": 9, "u": 1}]);
    assert_eq!(count(&after, "c"), 1);
    assert_eq!(engine.transaction_locks().unwrap(), 0);
}

#[tokio::test]
async fn a_unique_key_taken_since_the_snapshot_fails_the_commit() {
    let engine = engine();
    setup(&engine, vec![]).await;
    let mut tx = engine.begin_transaction().unwrap();
    tx_insert(&mut tx, "c", doc! {"_id": 1, "u": 7}).unwrap();
    engine
        .write(true, |txn, now| {
            let meta = ddl::collection(txn, "db", "c").unwrap();
            collection::insert(txn, &meta, &doc! {"_id": 2, "u": 7}, now)
        })
        .await
        .unwrap()
        .unwrap();
    let err = commit(&engine, tx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::WriteConflict);
    assert_eq!(
        visible(&engine.read().unwrap(), "c"),
        vec![doc! {"_id": 2, "u": 7}]
    );
}

#[tokio::test]
async fn a_collection_created_inside_conflicts_with_ddl_committed_meanwhile() {
    let engine = engine();
    setup(&engine, vec![]).await;
    let mut tx = engine.begin_transaction().unwrap();
    tx_insert(&mut tx, "fresh", doc! {"_id": 1}).unwrap();
    engine
        .write(true, |txn, _| {
            ddl::ensure_collection(txn, "db", "elsewhere").map(|_| ())
        })
        .await
        .unwrap()
        .unwrap();
    let err = commit(&engine, tx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::WriteConflict);
    assert!(engine.read().unwrap().collection("db", "fresh").is_none());
}

#[tokio::test]
async fn an_aborted_transaction_leaves_nothing_and_frees_its_documents() {
    let engine = engine();
    setup(&engine, vec![doc! {"_id": 1, "a": 0, "u": 1}]).await;
    let mut tx = engine.begin_transaction().unwrap();
    tx_set(&mut tx, 1, 5).unwrap();
    assert_eq!(engine.transaction_locks().unwrap(), 1);
    drop(tx);
    assert_eq!(engine.transaction_locks().unwrap(), 0);
    let mut next = engine.begin_transaction().unwrap();
    tx_set(&mut next, 1, 6).unwrap();
    commit(&engine, next).await.unwrap();
    assert_eq!(
        visible(&engine.read().unwrap(), "c"),
        vec![doc! {"_id": 1, "a": 6, "u": 1}]
    );
}

#[tokio::test]
async fn the_log_has_each_operation_with_the_transactions_session_in_one_commit() {
    let engine = engine();
    setup(&engine, vec![doc! {"_id": 1, "a": 0, "u": 1}]).await;
    let before = oplog::entries_after(&engine.backend.snapshot(), None).count();
    let mut tx = engine.begin_transaction().unwrap();
    tx_insert(&mut tx, "c", doc! {"_id": 2, "u": 2}).unwrap();
    tx_set(&mut tx, 1, 5).unwrap();
    assert_eq!(
        oplog::entries_after(&engine.backend.snapshot(), None).count(),
        before,
        "nothing is logged before the commit"
    );
    commit(&engine, tx).await.unwrap();
    let logged: Vec<Document> = oplog::entries_after(&engine.backend.snapshot(), None)
        .skip(before)
        .map(|e| e.unwrap().1)
        .collect();
    assert_eq!(logged.len(), 2);
    for entry in &logged {
        assert_eq!(entry.get_document("lsid").unwrap(), &doc! {"id": 7});
        assert_eq!(entry.get_i64("txnNumber").unwrap(), 3);
    }
    assert_eq!(logged[0].get_str("op").unwrap(), "i");
    assert_eq!(logged[1].get_str("op").unwrap(), "u");
    assert!(logged[0].get_timestamp("ts").unwrap() < logged[1].get_timestamp("ts").unwrap());
}

/// An engine at 1,000 s with `db.t` (collection TTL 10) holding `{_id: 1}` written then.
async fn ttl_engine() -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::starting_at_secs(1_000));
    let engine = Engine::open_memory(clock.clone()).unwrap();
    engine.reaper.pause();
    engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "t")?;
            let ttl = IndexMeta {
                expire_after_seconds: Some(10),
                ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
            };
            let meta = ddl::create_index(txn, &meta, ttl, now)?;
            collection::insert(txn, &meta, &doc! {"_id": 1, "a": 0}, now)
        })
        .await
        .unwrap()
        .unwrap();
    (engine, clock)
}

fn tx_set_in(tx: &mut Transaction, coll: &'static str, id: i32) -> crate::error::Result<bool> {
    tx.write(move |txn, now| {
        let meta = ddl::collection(txn, "db", coll).unwrap();
        let Some(old) = collection::get_by_id(txn, &meta, &Bson::Int32(id), now)? else {
            return Ok(false);
        };
        let mut new = old.doc.clone();
        new.insert("a", 1);
        collection::update(txn, &meta, &old, &new, now).map(|()| true)
    })?
}

/// The stored `_ts` of `db.t`'s `_id` `id`, expired or not, and its expiry entry's time.
fn stored_ts(engine: &Engine, id: impl Into<Bson>) -> Option<(i64, Option<i64>)> {
    use crate::engine::documents::{expiry, record::Record};
    use crate::storage::{keys, Keyspace, Snapshot};
    let meta = engine.catalog().unwrap().get("db", "t").cloned().unwrap();
    let key = keys::document_key(meta.id, &id.into());
    let snapshot = engine.backend.snapshot();
    let record = Record::decode(&snapshot.get(Keyspace::Documents, &key).unwrap()?).unwrap();
    let entries: Vec<i64> = snapshot
        .prefix(Keyspace::Expiry, &keys::collection_prefix(meta.id), false)
        .map(|e| e.unwrap().0)
        .filter(|k| expiry::document_key_of(k).as_deref() == Some(key.as_slice()))
        .map(|k| expiry::time_of(&k).unwrap())
        .collect();
    assert!(entries.len() <= 1, "one expiry entry a document");
    Some((record.ts, entries.first().copied()))
}

#[tokio::test]
async fn statements_judge_expiry_at_their_own_time() {
    let (engine, clock) = ttl_engine().await;
    clock.advance(std::time::Duration::from_secs(5));
    let mut tx = engine.begin_transaction().unwrap();
    assert_eq!(count(&tx.read_view().unwrap(), "t"), 1);
    clock.advance(std::time::Duration::from_secs(5));
    assert_eq!(count(&tx.read_view().unwrap(), "t"), 0, "expired at 1010");
    assert!(!tx_set_in(&mut tx, "t", 1).unwrap(), "not matched at 1010");
}

#[tokio::test]
async fn the_commit_stamps_the_transactions_records_with_its_time() {
    let (engine, clock) = ttl_engine().await;
    let mut tx = engine.begin_transaction().unwrap();
    assert!(tx_set_in(&mut tx, "t", 1).unwrap());
    tx.write(|txn, now| {
        let meta = ddl::collection(txn, "db", "t").unwrap();
        collection::insert(txn, &meta, &doc! {"_id": 2, "ttl": 3}, now)
    })
    .unwrap()
    .unwrap();
    clock.advance(std::time::Duration::from_secs(9));
    assert_eq!(
        count(&tx.read_view().unwrap(), "t"),
        2,
        "its own writes are not expired under it"
    );
    commit(&engine, tx).await.unwrap();
    assert_eq!(stored_ts(&engine, 1), Some((1_009, Some(1_009))));
    assert_eq!(stored_ts(&engine, 2), Some((1_009, Some(1_012))));
    clock.advance(std::time::Duration::from_secs(3));
    assert_eq!(
        count(&engine.read().unwrap(), "t"),
        1,
        "own ttl 3 from 1009"
    );
    assert_eq!(engine.reaper.run_pass().await.unwrap(), 1);
}

#[tokio::test]
async fn a_document_expired_since_the_snapshot_fails_the_commit_reaped_or_not() {
    for reap in [false, true] {
        let (engine, clock) = ttl_engine().await;
        clock.advance(std::time::Duration::from_secs(5));
        let mut tx = engine.begin_transaction().unwrap();
        clock.advance(std::time::Duration::from_secs(3));
        assert!(tx_set_in(&mut tx, "t", 1).unwrap());
        clock.advance(std::time::Duration::from_secs(2));
        if reap {
            assert_eq!(engine.reaper.run_pass().await.unwrap(), 1);
        }
        let err = commit(&engine, tx).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::WriteConflict, "reaped: {reap}");
        let left = stored_ts(&engine, 1);
        assert_eq!(
            left,
            (!reap).then_some((1_000, Some(1_000))),
            "nothing applied"
        );
        assert_eq!(engine.transaction_locks().unwrap(), 0);
    }
}
