//! Index builds over existing documents (createIndexes on a collection with data): they run in
//! the background in small writer jobs, so other writes go on meanwhile; writes during a build
//! are indexed; a failed or aborted build leaves no index and no entry; a restart discards an
//! unfinished build.

use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::{Collection, Database};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `n` documents `{_id: i, a: i % 1000, s: "…"}` (or what `doc` makes of `i`), 2,000 a batch.
async fn fill(coll: &Collection<Document>, n: i64, make: impl Fn(i64) -> Document) {
    let mut i = 0;
    while i < n {
        let batch: Vec<Document> = (i..(i + 2_000).min(n)).map(&make).collect();
        coll.insert_many(batch).await.unwrap();
        i += 2_000;
    }
}

fn small(i: i64) -> Document {
    doc! {"_id": i, "a": i % 1_000, "s": "some small document"}
}

async fn index_names(db: &Database, coll: &str) -> Vec<String> {
    let reply = db.run_command(doc! {"listIndexes": coll}).await.unwrap();
    reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().get_str("name").unwrap().to_owned())
        .collect()
}

fn assert_complete(server: &TestServer, coll: &str, index: &str) -> u64 {
    let check = server
        .shared()
        .engine
        .check_index("test", coll, index)
        .unwrap();
    assert!(check.is_consistent(), "{coll}.{index}: {check:?}");
    check.entries
}

/// The old build rewrote every document in one writer job and an insert elsewhere waited
/// seconds behind it. A background build works in small jobs: no insert waits anywhere near a
/// second (the bound is loose on purpose; benchmarks measure, tests do not).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn building_an_index_does_not_hold_up_writes_to_other_collections() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("test");
    let big = db.collection::<Document>("big");
    fill(&big, 200_000, small).await;

    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let other = db.collection::<Document>("other");
        let stop = Arc::clone(&stop);
        writers.push(tokio::spawn(async move {
            let (mut n, mut slowest) = (0_i64, Duration::ZERO);
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                other.insert_one(doc! {"w": w, "n": n}).await.unwrap();
                slowest = slowest.max(started.elapsed());
                n += 1;
            }
            (n, slowest)
        }));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let build = Instant::now();
    db.run_command(doc! {"createIndexes": "big", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    let build = build.elapsed();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        let (inserts, slowest) = writer.await.unwrap();
        eprintln!("build {build:?}: {inserts} inserts meanwhile, the slowest {slowest:?}");
        assert!(inserts > 0);
        assert!(
            slowest < Duration::from_secs(1),
            "an insert waited {slowest:?} behind the build"
        );
    }
    assert_eq!(assert_complete(&server, "big", "a_1"), 200_000);
    assert!(index_names(&db, "big").await.contains(&"a_1".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_to_the_collection_during_a_build_are_indexed() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("test");
    let coll = db.collection::<Document>("c");
    fill(&coll, 40_000, small).await;

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let coll = coll.clone();
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let mut i = 0_i64;
            while !stop.load(Ordering::Relaxed) || i < 300 {
                // New documents, documents moved to another key, arrays, and deletions, spread
                // over the collection so some land before and some after the build's position.
                let at = (i * 7_919) % 40_000;
                coll.insert_one(doc! {"_id": 100_000 + i, "a": [i, -i]})
                    .await
                    .unwrap();
                coll.update_one(doc! {"_id": at}, doc! {"$set": {"a": 5_000 + i}})
                    .await
                    .unwrap();
                coll.delete_one(doc! {"_id": (at + 1) % 40_000})
                    .await
                    .unwrap();
                i += 1;
            }
            i
        })
    };
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    assert!(writer.await.unwrap() >= 300);
    assert_complete(&server, "c", "a_1");
    let catalog = server.shared().engine.catalog().unwrap();
    let index = catalog
        .get("test", "c")
        .unwrap()
        .index("a_1")
        .unwrap()
        .clone();
    assert!(index.multikey && !index.building);
}

#[tokio::test]
async fn a_unique_build_over_a_duplicate_fails_and_leaves_nothing() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("test");
    let coll = db.collection::<Document>("c");
    // Unique values except one pair far apart, so the duplicate is found batches in. The whole
    // request fails: the TTL index, ready at once, goes too.
    fill(
        &coll,
        5_000,
        |i| doc! {"_id": i, "u": if i == 4_321 { 7 } else { i }},
    )
    .await;
    let err = db
        .run_command(doc! {"createIndexes": "c", "indexes": [
            {"key": {"v": 1}, "name": "v_1"},
            {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 3_600},
            {"key": {"u": 1}, "name": "u_1", "unique": true},
        ]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(11000), "{err}");
    let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
        panic!("{err}")
    };
    assert!(
        c.message.contains("index: u_1 dup key: { u: 7 }"),
        "{}",
        c.message
    );
    assert_eq!(index_names(&db, "c").await, vec!["_id_".to_owned()]);
    // A removed index's entries are the sweeper's: let it finish before counting.
    server.shared().engine.sweeper.run_pass().await.unwrap();
    assert_eq!(
        server
            .shared()
            .engine
            .index_entry_count("test", "c")
            .unwrap(),
        0
    );
    // The same request without the duplicate succeeds afterwards.
    coll.delete_one(doc! {"_id": 4_321}).await.unwrap();
    db.run_command(
        doc! {"createIndexes": "c", "indexes": [{"key": {"u": 1}, "name": "u_1", "unique": true}]},
    )
    .await
    .unwrap();
    assert_eq!(assert_complete(&server, "c", "u_1"), 4_999);
}

/// While a build runs its index is not listed; the same request again waits for the build and
/// then finds the index there; dropping the index ends the build with IndexBuildAborted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_during_a_build() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("test");
    let coll = db.collection::<Document>("c");
    fill(&coll, 60_000, small).await;
    let create = doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]};

    let first = tokio::spawn({
        let db = db.clone();
        let create = create.clone();
        async move { db.run_command(create).await }
    });
    let building = wait_until_building(&server, "c").await;
    assert!(building, "the build did not start");
    assert_eq!(index_names(&db, "c").await, vec!["_id_".to_owned()]);
    let again = db.run_command(create.clone()).await.unwrap();
    assert_eq!(again.get_str("note").unwrap(), "all indexes already exist");
    first.await.unwrap().unwrap();
    assert_complete(&server, "c", "a_1");

    // Dropped mid-build: the build ends, and nothing of it stays.
    coll.drop_index("a_1").await.unwrap();
    let second = tokio::spawn({
        let db = db.clone();
        async move { db.run_command(create).await }
    });
    if wait_until_building(&server, "c").await {
        coll.drop_index("a_1").await.unwrap();
        let err = second.await.unwrap().unwrap_err();
        assert_eq!(error_code(&err), Some(276), "{err}");
    } else {
        second.await.unwrap().unwrap();
        coll.drop_index("a_1").await.unwrap();
    }
    assert_eq!(index_names(&db, "c").await, vec!["_id_".to_owned()]);
    // A removed index's entries are the sweeper's: let it finish before counting.
    server.shared().engine.sweeper.run_pass().await.unwrap();
    assert_eq!(
        server
            .shared()
            .engine
            .index_entry_count("test", "c")
            .unwrap(),
        0
    );
}

/// Whether an index of `coll` is seen `building` within a few seconds.
async fn wait_until_building(server: &TestServer, coll: &str) -> bool {
    for _ in 0..2_000 {
        let catalog = server.shared().engine.catalog().unwrap();
        if let Some(meta) = catalog.get("test", coll) {
            if meta.indexes.iter().any(|i| i.building) {
                return true;
            }
            if !meta.indexes.is_empty() {
                return false;
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    false
}

#[tokio::test]
async fn a_restart_discards_an_unfinished_build() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("test");
    let coll = db.collection::<Document>("c");
    fill(&coll, 3_000, small).await;
    // An index left `building` with some entries, as a stop in the middle of a build leaves it.
    let shared = server.shared();
    shared
        .engine
        .write(true, |txn, now| {
            use mayfly::engine::{ddl, documents::collection, IndexMeta};
            let meta = ddl::collection(txn, "test", "c").unwrap();
            let index = IndexMeta {
                building: true,
                ..IndexMeta::new("a_1", doc! {"a": 1})
            };
            let (meta, id) = ddl::add_index(txn, meta.id, index).unwrap();
            let index = meta.index_by_id(id).unwrap().clone();
            let prefix = mayfly::storage::keys::collection_prefix(meta.id);
            let docs: Vec<_> = collection::scan(txn, &meta, &prefix, now)
                .take(1_000)
                .collect::<Result<_, _>>()
                .unwrap();
            for d in &docs {
                collection::add_index_entries(txn, &meta, &index, &d.key, &d.doc, now).unwrap();
            }
        })
        .await
        .unwrap();
    drop(shared);
    assert_eq!(index_names(&db, "c").await, vec!["_id_".to_owned()]);
    drop(client);
    let server = server.restart().await;
    let db = server.client().await.database("test");
    assert_eq!(index_names(&db, "c").await, vec!["_id_".to_owned()]);
    // A removed index's entries are the sweeper's: let it finish before counting.
    server.shared().engine.sweeper.run_pass().await.unwrap();
    assert_eq!(
        server
            .shared()
            .engine
            .index_entry_count("test", "c")
            .unwrap(),
        0
    );
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    assert_eq!(assert_complete(&server, "c", "a_1"), 3_000);
    let found: Vec<Document> = db
        .collection::<Document>("c")
        .find(doc! {"a": 7})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
}
