//! The writer and its committer: the next group runs beside a commit, reading the writes being
//! committed that no reader sees yet, and stands or falls with them.

use crate::clock::ManualClock;
use crate::engine::{ddl, documents::collection, Engine, Joins};
use crate::error::{ErrorCode, Result};
use bson::{doc, Bson};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(dir, Arc::new(ManualClock::starting_at_secs(1_000))).unwrap()
}

/// A write job that inserts `{_id: id}` into `db.name`, creating the collection if need be.
async fn insert(engine: &Engine, name: &'static str, id: i32) -> Result<()> {
    engine
        .write(true, move |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", name)?;
            collection::insert(txn, &meta, &doc! {"_id": id}, now)
        })
        .await?
}

/// Whether a reader of the last commit sees `{_id: id}` in `db.name`.
fn visible(engine: &Engine, name: &str, id: i32) -> bool {
    let view = engine.read().unwrap();
    let Some(meta) = view.collection("db", name) else {
        return false;
    };
    view.get(&meta, &doc! {"_id": id}).unwrap().is_some()
}

/// Waits until `done` holds, for at most ten seconds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "waited for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Runs a job in the writer's next group that inserts `{_id: id}` into `db.name` after reading
/// `{_id: read}` there; signals when it has run, and returns whether it found that document.
fn insert_after_reading(
    engine: &Arc<Engine>,
    name: &'static str,
    read: i32,
    id: i32,
) -> (
    tokio::task::JoinHandle<Result<Result<bool>>>,
    std::sync::mpsc::Receiver<()>,
) {
    let (ran, has_run) = std::sync::mpsc::channel();
    let engine = Arc::clone(engine);
    let task = tokio::spawn(async move {
        engine
            .write(true, move |txn, now| {
                let found = match ddl::collection(txn, "db", name) {
                    Some(meta) => {
                        collection::get_by_id(txn, &meta, &Bson::Int32(read), now)?.is_some()
                    }
                    None => false,
                };
                let (meta, _) = ddl::ensure_collection(txn, "db", name)?;
                collection::insert(txn, &meta, &doc! {"_id": id}, now)?;
                let _ = ran.send(());
                Ok(found)
            })
            .await
    });
    (task, has_run)
}

/// An engine on disk with `{_id: 0}` committed in `db.c`.
async fn engine_with_a_document() -> (tempfile::TempDir, Arc<Engine>) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(open(dir.path()));
    insert(&engine, "c", 0).await.unwrap();
    (dir, engine)
}

/// Holds commits, inserts `{_id: id}` into `db.name` (its commit failing when `failing`) and
/// returns once that group's commit has begun and is held.
async fn a_held_commit(
    engine: &Arc<Engine>,
    name: &'static str,
    id: i32,
    failing: bool,
) -> tokio::task::JoinHandle<Result<()>> {
    let faults = engine.storage_faults();
    faults.hold_commits(true);
    if failing {
        faults.fail_next_commits(1);
    }
    let first = tokio::spawn({
        let engine = Arc::clone(engine);
        async move { insert(&engine, name, id).await }
    });
    until("the commit to begin", || faults.commits_waiting() == 1).await;
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_group_reads_a_group_being_committed_which_no_reader_sees_yet() {
    let (_dir, engine) = engine_with_a_document().await;
    let first = a_held_commit(&engine, "c", 1, false).await;
    let (second, has_run) = insert_after_reading(&engine, "c", 1, 2);
    // The second group's job runs while the first group's commit is held.
    has_run.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        !visible(&engine, "c", 1),
        "visible before its commit returned"
    );
    assert!(!visible(&engine, "c", 2));
    assert!(!first.is_finished() && !second.is_finished());
    engine.storage_faults().hold_commits(false);
    first.await.unwrap().unwrap();
    assert!(
        second.await.unwrap().unwrap().unwrap(),
        "the second group read the first"
    );
    assert!(visible(&engine, "c", 1) && visible(&engine, "c", 2));
    // The second group's counter started from the first group's.
    assert_eq!(count(&engine, "c").await, 3);
}

/// The stored document count of `db.name`, as the writer's next group reads it.
async fn count(engine: &Engine, name: &'static str) -> u64 {
    engine
        .write(false, move |txn, _| {
            let meta = ddl::collection(txn, "db", name).unwrap();
            txn.totals(meta.id).unwrap().count
        })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_read_a_failed_commit_fails_with_it_and_the_catalog_goes_back() {
    let (_dir, engine) = engine_with_a_document().await;
    // The first group creates `db.new`; the second finds it in the writer's catalog.
    let first = a_held_commit(&engine, "new", 1, true).await;
    let (second, has_run) = insert_after_reading(&engine, "new", 1, 2);
    has_run.recv_timeout(Duration::from_secs(10)).unwrap();
    engine.storage_faults().hold_commits(false);
    let first = first.await.unwrap().unwrap_err();
    let second = second.await.unwrap().unwrap_err();
    assert!(
        first.to_string().contains("journal write failed"),
        "{first}"
    );
    assert_eq!(second.to_string(), first.to_string());
    assert!(engine.read().unwrap().collection("db", "new").is_none());
    // The writer's own catalog went back too: the next group creates the collection afresh.
    let (third, _) = insert_after_reading(&engine, "new", 1, 3);
    assert!(!third.await.unwrap().unwrap().unwrap());
    assert!(visible(&engine, "new", 3));
    assert!(!visible(&engine, "new", 1) && !visible(&engine, "new", 2));
    assert_eq!(count(&engine, "new").await, 1);
    assert!(visible(&engine, "c", 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_did_not_read_a_failed_commit_prepared_beside_it_still_fails() {
    // It ran on a snapshot with the failed writes over it, whatever it read: it cannot stand.
    let (_dir, engine) = engine_with_a_document().await;
    let first = a_held_commit(&engine, "c", 1, true).await;
    let (second, has_run) = insert_after_reading(&engine, "other", 9, 2);
    has_run.recv_timeout(Duration::from_secs(10)).unwrap();
    engine.storage_faults().hold_commits(false);
    assert!(first.await.unwrap().is_err());
    assert!(second.await.unwrap().is_err());
    // Commits go on once the failure has passed.
    insert(&engine, "c", 1).await.unwrap();
    assert!(visible(&engine, "c", 1) && !visible(&engine, "other", 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_prepared_beside_a_commit_of_unknown_fate_is_refused_as_read_only() {
    let (_dir, engine) = engine_with_a_document().await;
    let faults = engine.storage_faults();
    faults.fail_next_syncs(1);
    let first = a_held_commit(&engine, "c", 1, false).await;
    let (second, has_run) = insert_after_reading(&engine, "c", 1, 2);
    has_run.recv_timeout(Duration::from_secs(10)).unwrap();
    faults.hold_commits(false);
    let first = first.await.unwrap().unwrap_err();
    assert!(
        first
            .to_string()
            .contains("may or may not have been applied"),
        "{first}"
    );
    // The second group was surely not applied: it is refused as every write now is.
    let second = second.await.unwrap().unwrap_err();
    assert_eq!(second.code, ErrorCode::IllegalOperation, "{second}");
    assert!(second.to_string().contains("read-only"), "{second}");
    assert!(!visible(&engine, "c", 2));
    let third = insert(&engine, "c", 3).await.unwrap_err();
    assert_eq!(third.code, ErrorCode::IllegalOperation);
}

#[test]
fn a_statement_batch_joins_only_an_empty_group() {
    // (jobs in the group so far, how the next job joins, whether the group takes it)
    let cases = [
        (0, Joins::Any, true),
        (0, Joins::First, true),
        (1, Joins::Any, true),
        (4095, Joins::Any, true),
        (1, Joins::First, false),
        (4095, Joins::First, false),
    ];
    for (jobs, joins, taken) in cases {
        assert_eq!(super::takes(jobs, joins), taken, "{jobs} jobs, {joins:?}");
    }
}

/// Jobs waiting in the writer's queue.
fn queued(engine: &Engine) -> usize {
    engine.writer.queue.max_capacity() - engine.writer.queue.capacity()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_queued_behind_a_write_starts_the_next_group_and_later_writes_join_it() {
    use std::sync::atomic::Ordering::Relaxed;
    let (_dir, engine) = engine_with_a_document().await;
    let (groups, jobs) = (
        engine.writer_stats.groups.load(Relaxed),
        engine.writer_stats.jobs.load(Relaxed),
    );
    // A write whose job holds the writer until the batch and a later write are queued.
    let (started, has_started) = std::sync::mpsc::channel();
    let (proceed, go) = std::sync::mpsc::channel::<()>();
    let write = tokio::spawn({
        let engine = Arc::clone(&engine);
        async move {
            engine
                .write(true, move |txn, now| {
                    let _ = started.send(());
                    let _ = go.recv_timeout(Duration::from_secs(10));
                    let meta = ddl::collection(txn, "db", "c").unwrap();
                    collection::insert(txn, &meta, &doc! {"_id": 2}, now)
                })
                .await
        }
    });
    has_started.recv_timeout(Duration::from_secs(10)).unwrap();
    let batch = tokio::spawn({
        let engine = Arc::clone(&engine);
        async move {
            engine
                .write_joining(Joins::First, false, |txn, now| {
                    let meta = ddl::collection(txn, "db", "c").unwrap();
                    collection::insert(txn, &meta, &doc! {"_id": 3}, now)
                })
                .await
        }
    });
    until("the batch to be queued", || queued(&engine) == 1).await;
    let later = tokio::spawn({
        let engine = Arc::clone(&engine);
        async move { insert(&engine, "c", 4).await }
    });
    until("the later write to be queued", || queued(&engine) == 2).await;
    proceed.send(()).unwrap();
    write.await.unwrap().unwrap().unwrap();
    batch.await.unwrap().unwrap().unwrap();
    later.await.unwrap().unwrap();
    // The write's group took neither; the batch opened the next one, which the write queued
    // after it joined: three jobs in two groups.
    assert_eq!(engine.writer_stats.jobs.load(Relaxed) - jobs, 3);
    assert_eq!(engine.writer_stats.groups.load(Relaxed) - groups, 2);
    assert!((2..=4).all(|id| visible(&engine, "c", id)));
}
