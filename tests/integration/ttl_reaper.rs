//! The reaper (TTL-20, TTL-21, TTL-24): runOnce deletes exactly the expired documents,
//! re-checks at delete time, reports in serverStatus, and expiry survives a restart.

use crate::common;

use common::bson::{doc, Document};
use common::ttl::{advance, reaper, set_collection_ttl, ttl_collection, ttl_status, visible};
use common::TestServer;
use mayfly::clock::Clock;

#[tokio::test]
async fn run_once_reaps_what_expired_and_nothing_else_ttl_20() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    let docs: Vec<Document> = (0..2500).map(|i| doc! {"_id": i}).collect();
    coll.insert_many(docs).await.unwrap();
    coll.insert_one(doc! {"_id": "own", "ttl": 3})
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": "never", "ttl": -1})
        .await
        .unwrap();
    advance(&client, 3).await;
    let status = ttl_status(&client).await;
    assert_eq!(
        status.get_i64("backlog").unwrap(),
        1,
        "only the own-ttl document is due"
    );
    assert!(status.get_bool("paused").unwrap());
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        1
    );
    advance(&client, 7).await;
    assert_eq!(ttl_status(&client).await.get_i64("backlog").unwrap(), 2500);
    // More than two batches: the pass resumes from its watermark batch after batch.
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        2500
    );
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        0
    );
    let status = ttl_status(&client).await;
    assert_eq!(status.get_i64("backlog").unwrap(), 0);
    assert_eq!(status.get_i64("deletedDocuments").unwrap(), 2501);
    assert!(status.get_i64("passes").unwrap() >= 3);
    assert!(status.get_f64("lastPassMillis").is_ok());
    assert_eq!(status.get_i64("errors").unwrap(), 0);
    assert!(visible(&coll, "never").await);
    // Reaped documents stay gone when TTL is turned off (they are deleted, not hidden).
    coll.drop_index("_ts_1").await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn a_document_rewritten_after_it_was_due_survives_ttl_20() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    advance(&client, 10).await;
    // Expired and invisible; inserting its _id again rewrites it (TTL-19) with a new _ts.
    coll.insert_one(doc! {"_id": 1, "v": 2}).await.unwrap();
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        0
    );
    assert!(visible(&coll, 1).await);
}

#[tokio::test]
async fn the_background_reaper_deletes_expired_documents_on_its_own() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("ttl");
    set_collection_ttl(&db, "c", 1).await;
    let coll = db.collection::<Document>("c");
    coll.insert_many((0..50).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    advance(&client, 1).await;
    // The background pass runs every second; wait (bounded) for it to catch up.
    let mut deleted = 0;
    for _ in 0..100 {
        deleted = ttl_status(&client)
            .await
            .get_i64("deletedDocuments")
            .unwrap();
        if deleted == 50 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(deleted, 50);
    assert_eq!(ttl_status(&client).await.get_i64("backlog").unwrap(), 0);
}

#[tokio::test]
async fn expiry_survives_a_restart_ttl_21() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_many([doc! {"_id": 1}, doc! {"_id": 2, "ttl": 100}])
        .await
        .unwrap();
    drop(client);
    // The server is down while the first document expires.
    server.clock.advance(std::time::Duration::from_secs(50));
    let server = server.restart().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = client.database("ttl").collection::<Document>("c");
    assert!(
        !visible(&coll, 1).await,
        "invisible from the first request after start"
    );
    assert!(visible(&coll, 2).await);
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        1,
        "and reaped afterwards"
    );
}
