//! The operation log: what each kind of change writes, that entries commit with their change,
//! that times keep increasing across restarts, and that the size bound holds.

use crate::clock::{Clock, ManualClock};
use crate::engine::catalog::IndexMeta;
use crate::engine::oplog::state as oplog;
use crate::engine::{ddl, documents::collection, Engine};
use crate::storage::{Backend, Keyspace, Snapshot};
use bson::{doc, Bson, Document, Timestamp};
use std::sync::Arc;
use std::time::Duration;

fn open(dir: &std::path::Path, clock: Arc<ManualClock>) -> Engine {
    let engine = Engine::open(dir, clock).unwrap();
    engine.enable_oplog(64 * 1024 * 1024).unwrap();
    engine
}

fn entries(engine: &Engine) -> Vec<(Timestamp, Document)> {
    oplog::entries_after(&engine.backend.snapshot(), None)
        .collect::<crate::error::Result<_>>()
        .unwrap()
}

/// Each entry without its time fields, for comparing shapes.
fn shapes(engine: &Engine) -> Vec<Document> {
    entries(engine)
        .into_iter()
        .map(|(_, mut e)| {
            for field in ["ts", "t", "v", "wall", "ui"] {
                e.remove(field);
            }
            e
        })
        .collect()
}

async fn insert(engine: &Engine, d: Document) {
    engine
        .write(true, move |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c")?;
            collection::insert(txn, &meta, &d, now)
        })
        .await
        .unwrap()
        .unwrap();
}

async fn rewrite(engine: &Engine, new: Document, replace: bool) {
    engine
        .write(true, move |txn, now| {
            let meta = ddl::collection(txn, "db", "c").unwrap();
            let id = new.get("_id").cloned().unwrap();
            let old = collection::get_by_id(txn, &meta, &id, now)?.unwrap();
            if replace {
                collection::replace(txn, &meta, &old, &new, now)
            } else {
                collection::update(txn, &meta, &old, &new, now)
            }
        })
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn each_change_is_logged_in_mongods_shape() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), Arc::new(ManualClock::starting_at_secs(1_000)));
    insert(&engine, doc! {"_id": 1, "a": 1, "b": [1, 2, 3]}).await;
    rewrite(&engine, doc! {"_id": 1, "a": 2, "b": [1, 2]}, false).await;
    rewrite(&engine, doc! {"_id": 1, "z": true}, true).await;
    engine
        .write(true, |txn, now| {
            let meta = ddl::collection(txn, "db", "c").unwrap();
            let old = collection::get_by_id(txn, &meta, &Bson::Int32(1), now)?.unwrap();
            collection::delete(txn, &meta, &old)?;
            ddl::create_index(txn, &meta, IndexMeta::new("a_1", doc! {"a": 1}), now)?;
            let meta = ddl::collection(txn, "db", "c").unwrap();
            ddl::drop_index(txn, &meta, "a_1")?;
            ddl::rename_collection(txn, ("db", "c"), ("db", "d"), false)?;
            ddl::drop_collection(txn, "db", "d")?;
            ddl::log_drop_database(txn, "db")
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        shapes(&engine),
        vec![
            doc! {"op": "c", "ns": "db.$cmd", "o": {"create": "c"}},
            doc! {"op": "i", "ns": "db.c", "o": {"_id": 1, "a": 1, "b": [1, 2, 3]}},
            doc! {"op": "u", "ns": "db.c", "o": {"$v": 2, "diff": {"u": {"a": 2}, "sb": {"a": true, "l": 2}}}, "o2": {"_id": 1}},
            doc! {"op": "u", "ns": "db.c", "o": {"_id": 1, "z": true}, "o2": {"_id": 1}},
            doc! {"op": "d", "ns": "db.c", "o": {"_id": 1}},
            doc! {"op": "c", "ns": "db.$cmd", "o": {"createIndexes": "c", "v": 2, "key": {"a": 1}, "name": "a_1"}},
            doc! {"op": "c", "ns": "db.$cmd", "o": {"dropIndexes": "c", "index": "a_1"}},
            doc! {"op": "c", "ns": "db.$cmd", "o": {"renameCollection": "db.c", "to": "db.d", "stayTemp": false, "dropTarget": false}},
            doc! {"op": "c", "ns": "db.$cmd", "o": {"drop": "d"}},
            doc! {"op": "c", "ns": "db.$cmd", "o": {"dropDatabase": 1}},
        ]
    );
    let all = entries(&engine);
    for pair in all.windows(2) {
        assert!(pair[0].0 < pair[1].0, "times increase");
    }
    for (time, entry) in &all {
        assert_eq!(entry.get_timestamp("ts").unwrap(), *time);
        assert_eq!(entry.get_i64("t").unwrap(), oplog::TERM);
        assert!(entry.get_datetime("wall").is_ok());
    }
    // The collection's entries name it by its uuid.
    assert!(matches!(all[1].1.get("ui"), Some(Bson::Binary(_))));
    assert_eq!(engine.optimes().last_committed(), all.last().unwrap().0);
}

#[tokio::test]
async fn nothing_is_logged_unless_the_log_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Arc::new(ManualClock::starting_at_secs(10))).unwrap();
    insert(&engine, doc! {"_id": 1}).await;
    assert!(entries(&engine).is_empty());
    // Operation times still move with every write.
    assert!(engine.optimes().last_committed().time >= 10);
}

#[tokio::test]
async fn ttl_deletions_are_logged_as_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_at_secs(1_000));
    let engine = open(dir.path(), Arc::clone(&clock));
    engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c")?;
            let mut ttl = IndexMeta::new("_ts_1", doc! {"_ts": 1});
            ttl.expire_after_seconds = Some(10);
            let meta = ddl::create_index(txn, &meta, ttl, now)?;
            collection::insert(txn, &meta, &doc! {"_id": "gone"}, now)
        })
        .await
        .unwrap()
        .unwrap();
    clock.advance(Duration::from_secs(60));
    assert_eq!(engine.reaper.run_pass().await.unwrap(), 1);
    let last = shapes(&engine).pop().unwrap();
    assert_eq!(last, doc! {"op": "d", "ns": "db.c", "o": {"_id": "gone"}});
}

#[tokio::test]
async fn times_continue_after_a_restart_even_when_the_clock_went_back() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let engine = open(dir.path(), Arc::new(ManualClock::starting_at_secs(5_000)));
        insert(&engine, doc! {"_id": 1}).await;
        entries(&engine).last().unwrap().0
    };
    let engine = open(dir.path(), Arc::new(ManualClock::starting_at_secs(100)));
    assert_eq!(engine.optimes().last_committed(), before);
    insert(&engine, doc! {"_id": 2}).await;
    let after = entries(&engine).last().unwrap().0;
    assert!(after > before, "{after:?} after {before:?}");
}

#[tokio::test]
async fn a_failed_commit_logs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), Arc::new(ManualClock::starting_at_secs(1_000)));
    insert(&engine, doc! {"_id": 1}).await;
    let logged = entries(&engine).len();
    engine.storage_faults().fail_next_commits(1);
    let failed = engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c")?;
            collection::insert(txn, &meta, &doc! {"_id": 2}, now)
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(entries(&engine).len(), logged);
    assert_eq!(engine.oplog().bytes(), entries_bytes(&engine));
}

fn entries_bytes(engine: &Engine) -> u64 {
    engine
        .backend
        .snapshot()
        .range(
            Keyspace::Oplog,
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            false,
        )
        .map(|e| e.unwrap().1.len() as u64)
        .sum()
}

#[tokio::test]
async fn the_log_keeps_within_its_size_by_dropping_the_oldest_entries() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), Arc::new(ManualClock::starting_at_secs(1))).unwrap();
    engine.enable_oplog(4_096).unwrap();
    for i in 0..200 {
        insert(&engine, doc! {"_id": i, "pad": "x".repeat(50)}).await;
    }
    let kept = entries(&engine);
    let bytes = entries_bytes(&engine);
    assert!(bytes <= 4_096, "{bytes} bytes kept");
    assert_eq!(engine.oplog().bytes(), bytes);
    // The newest entries are the ones kept, and the oldest kept is known.
    assert_eq!(
        kept.last()
            .unwrap()
            .1
            .get_document("o")
            .unwrap()
            .get_i32("_id"),
        Ok(199)
    );
    assert_eq!(engine.oplog().oldest(), Some(kept[0].0));
    // After a restart the size is measured again.
    drop(engine);
    let engine = Engine::open(dir.path(), Arc::new(ManualClock::starting_at_secs(1))).unwrap();
    engine.enable_oplog(4_096).unwrap();
    assert_eq!(engine.oplog().bytes(), bytes);
    assert_eq!(engine.oplog().oldest(), Some(kept[0].0));
}

#[tokio::test]
async fn an_expired_document_overwritten_by_an_insert_is_logged_as_deleted_first() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_at_secs(1_000));
    let engine = open(dir.path(), Arc::clone(&clock));
    engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c")?;
            let mut ttl = IndexMeta::new("_ts_1", doc! {"_ts": 1});
            ttl.expire_after_seconds = Some(10);
            let meta = ddl::create_index(txn, &meta, ttl, now)?;
            collection::insert(txn, &meta, &doc! {"_id": 7, "v": 1}, now)
        })
        .await
        .unwrap()
        .unwrap();
    clock.advance(Duration::from_secs(60));
    insert(&engine, doc! {"_id": 7, "v": 2}).await;
    let mut tail = shapes(&engine);
    let inserted = tail.pop().unwrap();
    let deleted = tail.pop().unwrap();
    assert_eq!(deleted, doc! {"op": "d", "ns": "db.c", "o": {"_id": 7}});
    assert_eq!(
        inserted,
        doc! {"op": "i", "ns": "db.c", "o": {"_id": 7, "v": 2}}
    );
    assert!(clock.now_secs() > 1_000);
}
