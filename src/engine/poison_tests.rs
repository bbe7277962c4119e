//! A poisoned catalog lock (a thread panicked while holding it) fails reads and the reaper's
//! passes loudly, never as an empty catalog.

use super::*;
use crate::clock::ManualClock;
use crate::engine::catalog::IndexMeta;
use crate::engine::documents::collection;
use crate::engine::published::CATALOG_LOCK;
use crate::error::ErrorCode;
use bson::doc;

const MESSAGE: &str =
    "the catalog lock is poisoned: a thread panicked while holding it; restart the server";

fn poisoned_count(name: &str) -> u64 {
    crate::sync::poisoned_by_lock()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, n)| n)
}

/// An engine with `db.c` holding one document, under a one-hour collection TTL.
async fn engine_with_a_document() -> Engine {
    let engine = Engine::open_memory(Arc::new(ManualClock::starting_at_secs(1_000))).unwrap();
    engine.reaper.pause();
    engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
            let ttl = IndexMeta {
                expire_after_seconds: Some(3600),
                ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
            };
            let meta = ddl::create_index(txn, &meta, ttl, now).unwrap();
            collection::insert(txn, &meta, &doc! {"_id": 1, "a": 1}, now).unwrap();
        })
        .await
        .unwrap();
    engine
}

fn find_one(engine: &Engine) -> Result<Option<bson::Document>> {
    let view = engine.read()?;
    let meta = view.collection("db", "c").expect("the collection");
    Ok(view.get(&meta, &doc! {"_id": 1})?.map(|d| d.doc))
}

#[tokio::test]
async fn a_read_on_a_poisoned_catalog_fails_instead_of_finding_nothing() {
    let engine = engine_with_a_document().await;
    assert_eq!(find_one(&engine).unwrap(), Some(doc! {"_id": 1, "a": 1}));
    let before = poisoned_count(CATALOG_LOCK);
    engine.poison_catalog_lock();

    let failures = [
        ("read", find_one(&engine).map(drop)),
        ("catalog", engine.catalog().map(drop)),
        ("transaction", engine.begin_transaction().map(drop)),
        ("reader", engine.reader().read().map(drop)),
        ("backlog", engine.reaper.backlog().map(drop)),
    ];
    for (what, result) in failures {
        let err = result.expect_err(what);
        assert_eq!(err.code, ErrorCode::InternalError, "{what}");
        assert_eq!(err.message, MESSAGE, "{what}");
    }
    assert!(poisoned_count(CATALOG_LOCK) >= before + 5);
}

#[tokio::test]
async fn a_reaper_pass_on_a_poisoned_catalog_fails_and_is_reported() {
    let engine = engine_with_a_document().await;
    engine.poison_catalog_lock();
    for pass in 1..=2u64 {
        let err = engine.reaper.run_pass().await.unwrap_err();
        assert_eq!(err.code, ErrorCode::InternalError);
        let stats = &engine.reaper.stats;
        assert_eq!(
            stats.errors.load(std::sync::atomic::Ordering::Relaxed),
            pass
        );
        assert_eq!(
            stats.passes.load(std::sync::atomic::Ordering::Relaxed),
            pass
        );
        let last = stats
            .last_error()
            .clone()
            .expect("the pass's error is kept");
        assert!(last.contains(MESSAGE), "{last}");
    }
}

/// The reaper's own locks hold values a panic cannot leave half written: a poisoned one is
/// counted and the reaper goes on deleting.
#[tokio::test]
async fn a_poisoned_reaper_lock_is_counted_and_the_reaper_goes_on() {
    let engine = engine_with_a_document().await;
    let reaper = Arc::clone(&engine.reaper);
    let _ = std::thread::spawn(move || {
        let _held = reaper.stats.last_error.lock();
        std::panic::resume_unwind(Box::new("a bug while holding the reaper's last error"));
    })
    .join();
    let before = poisoned_count("reaper last error");
    assert_eq!(*engine.reaper.stats.last_error(), None);
    assert_eq!(poisoned_count("reaper last error"), before + 1);
    engine.clock().advance(std::time::Duration::from_secs(3600));
    assert_eq!(
        engine.reaper.run_pass().await.unwrap(),
        1,
        "the expired document"
    );
}
