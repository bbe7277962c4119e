//! An index build over a large collection shows its progress in `currentOp` while it runs, as
//! mongod's does: an `IndexBuildsCoordinatorMongod` entry whose `progress.done` grows towards
//! `progress.total`, the collection's document count, with the same numbers in `msg`.

use crate::common;

use common::bson::{doc, Document};
use common::{current_ops, TestServer};
use std::time::{Duration, Instant};

/// Documents in the collection: a build over them takes long enough to be watched.
const DOCUMENTS: i64 = 1_000_000;
/// Documents an `insert_many` sends: tiny ones, so the fill is quick.
const INSERT_BATCH: i64 = 100_000;

fn progress_of(op: &Document) -> (i64, i64) {
    let progress = op.get_document("progress").unwrap();
    (
        progress.get_i64("done").unwrap(),
        progress.get_i64("total").unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn current_op_shows_an_index_build_moving_over_a_million_documents() {
    let server = TestServer::start_memory().await;
    let client = server.client().await;
    let coll = client.database("test").collection::<Document>("big");
    let filled = Instant::now();
    let mut i = 0;
    while i < DOCUMENTS {
        let batch: Vec<Document> = (i..i + INSERT_BATCH)
            .map(|i| doc! {"_id": i, "a": i % 97})
            .collect();
        coll.insert_many(batch).await.unwrap();
        i += INSERT_BATCH;
    }
    eprintln!("inserted {DOCUMENTS} documents in {:?}", filled.elapsed());

    let build = {
        let coll = coll.clone();
        tokio::spawn(async move {
            coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
                .await
        })
    };
    let started = Instant::now();
    let filter = doc! {"desc": {"$regex": "^IndexBuildsCoordinatorMongod"}};
    let mut seen: Vec<(i64, i64)> = Vec::new();
    while !build.is_finished() {
        for op in current_ops(&client, filter.clone()).await {
            assert_eq!(op.get_str("type").unwrap(), "op");
            assert_eq!(op.get_str("op").unwrap(), "command");
            assert_eq!(op.get_str("ns").unwrap(), "test.big");
            let command = op.get_document("command").unwrap();
            assert_eq!(command.get_str("createIndexes").unwrap(), "big");
            let (done, total) = progress_of(&op);
            let msg = op.get_str("msg").unwrap();
            if total > 0 {
                assert_eq!(
                    msg,
                    format!(
                        "Index Build: scanning collection Index Build: scanning collection: \
                         {done}/{total} {}%",
                        done * 100 / total
                    )
                );
            }
            seen.push((done, total));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    build.await.unwrap().unwrap();
    eprintln!(
        "built the index in {:?}; currentOp saw {} states",
        started.elapsed(),
        seen.len()
    );
    let started: Vec<(i64, i64)> = seen.iter().copied().filter(|(_, t)| *t > 0).collect();
    assert!(
        started.iter().all(|(_, total)| *total == DOCUMENTS),
        "total is the document count: {started:?}"
    );
    assert!(
        started.windows(2).all(|w| w[0].0 <= w[1].0),
        "done never goes back: {started:?}"
    );
    let moving: Vec<i64> = {
        let mut done: Vec<i64> = started.iter().map(|(d, _)| *d).collect();
        done.dedup();
        done
    };
    assert!(
        moving.len() >= 3 && moving.iter().all(|d| (1..=DOCUMENTS).contains(d)),
        "done grew while the build ran: {moving:?}"
    );
    // Finished builds leave `currentOp`.
    assert!(current_ops(&client, filter).await.is_empty());
}
