//! TTL-16, TTL-18, TTL-19, TTL-9: with the reaper paused, an expired document is invisible on
//! every read and write path at once, dropping the TTL index brings it back, and `_ts` never
//! reaches a client.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::ttl::{advance, reaper, set_collection_ttl, ttl_collection, visible};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::{Client, Collection};

/// A collection with TTL 10 holding `live` (written late) and `dead` (expired) documents.
async fn setup(server: &TestServer) -> (Client, Collection<Document>) {
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_many([
        doc! {"_id": 1, "k": "dead", "tag": "a", "u": 1},
        doc! {"_id": 2, "k": "dead", "tag": "b", "u": 2},
    ])
    .await
    .unwrap();
    advance(&client, 5).await;
    coll.insert_many([doc! {"_id": 3, "k": "live", "tag": "a", "u": 3}])
        .await
        .unwrap();
    advance(&client, 5).await; // 1 and 2 are now exactly 10 seconds old: expired (TTL-14).
    (client, coll)
}

async fn ids(cursor: mongodb::Cursor<Document>) -> Vec<Bson> {
    cursor
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.get("_id").unwrap().clone())
        .collect()
}

#[tokio::test]
async fn reads_do_not_see_expired_documents_ttl_18() {
    let server = TestServer::start().await;
    let (client, coll) = setup(&server).await;
    assert_eq!(
        ids(coll.find(doc! {}).await.unwrap()).await,
        vec![Bson::Int32(3)]
    );
    assert!(
        coll.find_one(doc! {"_id": 1}).await.unwrap().is_none(),
        "point lookup"
    );
    assert!(coll
        .find_one(doc! {"_id": {"$in": [1, 2]}})
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        1,
        "countDocuments"
    );
    assert_eq!(coll.estimated_document_count().await.unwrap(), 1, "count");
    assert_eq!(
        coll.distinct("k", doc! {}).await.unwrap(),
        vec![Bson::from("live")]
    );
    let grouped: Vec<Document> = coll
        .aggregate([doc! {"$group": {"_id": "$tag", "n": {"$sum": 1}}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(grouped, vec![doc! {"_id": "a", "n": 1}], "aggregate");
    let db = client.database("ttl");
    let stats = db.run_command(doc! {"collStats": "c"}).await.unwrap();
    assert_eq!(
        stats
            .get_i32("count")
            .or_else(|_| stats.get_i64("count").map(|n| n as i32))
            .unwrap(),
        1,
        "collStats"
    );
    let db_stats = db.run_command(doc! {"dbStats": 1}).await.unwrap();
    let objects = db_stats.get("objects").unwrap();
    assert!(
        matches!(objects, Bson::Int32(1) | Bson::Int64(1) | Bson::Double(1.0)),
        "dbStats {db_stats}"
    );
    let modified = coll
        .find_one_and_update(doc! {"k": "dead"}, doc! {"$set": {"x": 1}})
        .await
        .unwrap();
    assert!(modified.is_none(), "findAndModify");
}

#[tokio::test]
async fn writes_do_not_see_expired_documents_ttl_19() {
    let server = TestServer::start().await;
    let (_client, coll) = setup(&server).await;
    let updated = coll
        .update_many(doc! {}, doc! {"$set": {"seen": true}})
        .await
        .unwrap();
    assert_eq!(
        updated.matched_count, 1,
        "update matches only the live document"
    );
    let deleted = coll.delete_many(doc! {"k": "dead"}).await.unwrap();
    assert_eq!(deleted.deleted_count, 0, "delete");
    let upsert = coll
        .update_one(doc! {"_id": 1}, doc! {"$set": {"k": "new"}})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(
        upsert.upserted_id,
        Some(Bson::Int32(1)),
        "an upsert whose only match expired inserts"
    );
    coll.insert_one(doc! {"_id": 2, "k": "reborn"})
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 3);
}

#[tokio::test]
async fn unique_indexes_ignore_expired_documents_ttl_19() {
    let server = TestServer::start().await;
    let (client, coll) = setup(&server).await;
    let db = client.database("ttl");
    db.run_command(
        doc! {"createIndexes": "c", "indexes": [{"key": {"u": 1}, "name": "u_1", "unique": true}]},
    )
    .await
    .unwrap();
    coll.insert_one(doc! {"_id": 10, "u": 1}).await.unwrap();
    let err = coll.insert_one(doc! {"_id": 11, "u": 3}).await.unwrap_err();
    assert!(
        err.to_string().contains("E11000"),
        "the live holder still conflicts: {err}"
    );
}

#[tokio::test]
async fn a_cursor_skips_documents_that_expire_between_batches_ttl_18() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    let old: Vec<Document> = (0..150).map(|i| doc! {"_id": i, "gen": "old"}).collect();
    coll.insert_many(old).await.unwrap();
    advance(&client, 5).await;
    let young: Vec<Document> = (150..300)
        .map(|i| doc! {"_id": i, "gen": "young"})
        .collect();
    coll.insert_many(young).await.unwrap();
    let mut cursor = coll.find(doc! {}).batch_size(100).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen.push(cursor.try_next().await.unwrap().unwrap());
    }
    advance(&client, 5).await; // the old generation expires between batches
    while let Some(d) = cursor.try_next().await.unwrap() {
        seen.push(d);
    }
    let old_after_first_batch = seen[100..]
        .iter()
        .filter(|d| d.get_str("gen") == Ok("old"))
        .count();
    assert_eq!(old_after_first_batch, 0, "no old document after it expired");
    assert_eq!(seen.len(), 100 + 150);
}

#[tokio::test]
async fn dropping_the_ttl_index_brings_unreaped_documents_back_ttl_9() {
    let server = TestServer::start().await;
    let (_client, coll) = setup(&server).await;
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    coll.drop_index("_ts_1").await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 3);
    assert!(visible(&coll, 1).await);
}

#[tokio::test]
async fn dropping_all_indexes_turns_ttl_off_too_ttl_9() {
    let server = TestServer::start().await;
    let (_client, coll) = setup(&server).await;
    coll.drop_indexes().await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 3);
}

#[tokio::test]
async fn ts_never_reaches_a_client_ttl_16() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("ttl");
    set_collection_ttl(&db, "c", 100).await;
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "a": 1}).await.unwrap();
    let plain = coll.find_one(doc! {}).await.unwrap().unwrap();
    assert!(!plain.contains_key("_ts"));
    let projected = coll
        .find_one(doc! {})
        .projection(doc! {"_ts": 1})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(projected, doc! {"_id": 1}, "even when projected");
    let updated = coll
        .find_one_and_update(doc! {"_id": 1}, doc! {"$set": {"a": 2}})
        .return_document(mongodb::options::ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert!(!updated.contains_key("_ts"));
    let agg: Vec<Document> = coll
        .aggregate([doc! {"$match": {}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(agg.iter().all(|d| !d.contains_key("_ts")));
    // Filters and sorts see no system _ts.
    assert!(coll
        .find_one(doc! {"_ts": {"$exists": true}})
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_clients_own_ts_field_is_ordinary_data_ttl_16() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_one(doc! {"_id": 1, "_ts": 5}).await.unwrap();
    assert_eq!(
        coll.find_one(doc! {"_ts": 5}).await.unwrap().unwrap(),
        doc! {"_id": 1, "_ts": 5}
    );
    advance(&client, 9).await;
    assert!(
        visible(&coll, 1).await,
        "a client _ts of 5 does not drive expiry"
    );
}

#[tokio::test]
async fn test_commands_exist_only_when_enabled_and_only_on_admin_ttl_23() {
    let disabled = TestServer::start_with(|c| c.enable_test_commands = false).await;
    let client = disabled.client().await;
    for cmd in [doc! {"advanceClock": 1}, doc! {"reaper": "pause"}] {
        let err = client.database("admin").run_command(cmd).await.unwrap_err();
        assert_eq!(error_code(&err), Some(59));
        // The answer names the flag that enables it.
        assert!(err.to_string().contains("--enable-test-commands"), "{err}");
    }
    let enabled = TestServer::start().await;
    let client = enabled.client().await;
    let err = client
        .database("test")
        .run_command(doc! {"advanceClock": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(13));
    let err = client
        .database("admin")
        .run_command(doc! {"advanceClock": -1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
}
