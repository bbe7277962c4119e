//! `estimatedDocumentCount`, `count` with an empty query, `collStats`, `dbStats`, `$collStats` and
//! `listDatabases` sizes read each collection's stored counter instead of its documents. They must agree with the
//! documents a client can see after every kind of write, a restart, a drop and a rename, and
//! (TTL-18) drop an expired document at once, before the reaper deletes it.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::ttl::{advance, reaper, ttl_collection};
use common::TestServer;
use futures::TryStreamExt;
use mongodb::{Collection, Database};

fn num(d: &Document, key: &str) -> u64 {
    match d.get(key) {
        Some(Bson::Int32(n)) => u64::try_from(*n).unwrap(),
        Some(Bson::Int64(n)) => u64::try_from(*n).unwrap(),
        Some(Bson::Double(n)) => *n as u64,
        other => panic!("{key} is not a number: {other:?} in {d}"),
    }
}

/// The number and total BSON size of the documents `find` returns.
async fn seen(coll: &Collection<Document>) -> (u64, u64) {
    let docs: Vec<Document> = coll
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let size = docs
        .iter()
        .map(|d| bson::to_vec(d).unwrap().len() as u64)
        .sum();
    (docs.len() as u64, size)
}

/// Every way of counting a collection gives what `find` sees, `n` documents.
async fn assert_counts(db: &Database, coll: &Collection<Document>, n: u64, context: &str) {
    let (count, size) = seen(coll).await;
    assert_eq!(count, n, "{context}: find");
    assert_eq!(
        coll.estimated_document_count().await.unwrap(),
        n,
        "{context}: estimatedDocumentCount"
    );
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        n,
        "{context}: countDocuments"
    );
    let name = coll.name();
    let stats = db.run_command(doc! {"collStats": name}).await.unwrap();
    assert_eq!(num(&stats, "count"), n, "{context}: collStats {stats}");
    assert_eq!(num(&stats, "size"), size, "{context}: collStats size");
    let db_stats = db.run_command(doc! {"dbStats": 1}).await.unwrap();
    assert_eq!(
        num(&db_stats, "objects"),
        n,
        "{context}: dbStats {db_stats}"
    );
    assert_eq!(
        num(&db_stats, "dataSize"),
        size,
        "{context}: dbStats dataSize"
    );
    let listed = coll
        .client()
        .database("admin")
        .run_command(doc! {"listDatabases": 1, "filter": {"name": db.name()}})
        .await
        .unwrap();
    let entry = listed.get_array("databases").unwrap().first().unwrap();
    let entry = entry.as_document().unwrap();
    assert_eq!(
        num(entry, "sizeOnDisk"),
        size,
        "{context}: listDatabases {listed}"
    );
    let rows: Vec<Document> = coll
        .aggregate([doc! {"$collStats": {"count": {}, "storageStats": {}}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let row = rows.first().unwrap();
    assert_eq!(num(row, "count"), n, "{context}: $collStats {row}");
    assert_eq!(
        num(row.get_document("storageStats").unwrap(), "count"),
        n,
        "{context}: $collStats storageStats"
    );
}

#[tokio::test]
async fn counts_follow_inserts_deletes_growing_updates_and_a_restart() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("counts");
    let coll: Collection<Document> = db.collection("c");
    assert_eq!(coll.estimated_document_count().await.unwrap(), 0, "missing");
    coll.insert_many((0..50).map(|i| doc! {"_id": i, "v": "x"}))
        .await
        .unwrap();
    assert_counts(&db, &coll, 50, "inserted").await;
    coll.delete_many(doc! {"_id": {"$lt": 10}}).await.unwrap();
    coll.delete_one(doc! {"_id": 10}).await.unwrap();
    assert_counts(&db, &coll, 39, "deleted").await;
    coll.update_many(
        doc! {"_id": {"$lt": 20}},
        doc! {"$set": {"v": "y".repeat(500)}},
    )
    .await
    .unwrap();
    coll.replace_one(doc! {"_id": 30}, doc! {"w": [1, 2, 3]})
        .await
        .unwrap();
    coll.find_one_and_delete(doc! {"_id": 31}).await.unwrap();
    coll.update_one(doc! {"_id": 100}, doc! {"$set": {"v": 1}})
        .upsert(true)
        .await
        .unwrap();
    assert_counts(&db, &coll, 39, "updated, grown, upserted").await;
    // A duplicate in an unordered batch fails alone.
    let _ = coll
        .insert_many([doc! {"_id": 12}, doc! {"_id": 200}])
        .ordered(false)
        .await;
    assert_counts(&db, &coll, 40, "after a duplicate").await;

    let server = server.restart().await;
    let client = server.client().await;
    let db = client.database("counts");
    let coll: Collection<Document> = db.collection("c");
    assert_counts(&db, &coll, 40, "restarted").await;
}

#[tokio::test]
async fn count_applies_skip_and_limit_to_the_stored_count() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("counts");
    let coll: Collection<Document> = db.collection("c");
    coll.insert_many((0..40).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    for (args, n) in [
        (doc! {}, 40),
        (doc! {"query": {}}, 40),
        (doc! {"skip": 5, "limit": 10}, 10),
        (doc! {"skip": 35, "limit": 10}, 5),
        (doc! {"skip": 50}, 0),
        (doc! {"limit": -3}, 3),
        (doc! {"limit": 0}, 40),
        (doc! {"hint": "_id_"}, 40),
        (doc! {"hint": {}}, 40),
    ] {
        let mut cmd = doc! {"count": "c"};
        cmd.extend(args.clone());
        let reply = db.run_command(cmd).await.unwrap();
        assert_eq!(num(&reply, "n"), n, "{args}");
    }
}

#[tokio::test]
async fn a_dropped_or_renamed_collection_takes_its_count_along() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("counts");
    let coll: Collection<Document> = db.collection("c");
    coll.insert_many((0..7).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    coll.drop().await.unwrap();
    assert_eq!(coll.estimated_document_count().await.unwrap(), 0);
    let stats = db.run_command(doc! {"collStats": "c"}).await.unwrap();
    assert_eq!(num(&stats, "count"), 0);
    coll.insert_many((0..3).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    assert_counts(&db, &coll, 3, "recreated").await;
    client
        .database("admin")
        .run_command(doc! {"renameCollection": "counts.c", "to": "counts.d"})
        .await
        .unwrap();
    let renamed: Collection<Document> = db.collection("d");
    assert_counts(&db, &renamed, 3, "renamed").await;
    assert_eq!(coll.estimated_document_count().await.unwrap(), 0);
}

#[tokio::test]
async fn expired_documents_leave_every_count_at_once_ttl_18() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    let db = client.database("ttl");
    coll.insert_many([
        doc! {"_id": 1},
        doc! {"_id": 2, "pad": "p".repeat(100)},
        doc! {"_id": 3, "ttl": "20"}, // invalid: follows the collection TTL (TTL-12)
        doc! {"_id": 4, "ttl": -1},   // never expires (TTL-13)
        doc! {"_id": 5, "ttl": 3},
        doc! {"_id": 6, "ttl": 20},
        doc! {"_id": 7, "ttl": 20.0},
    ])
    .await
    .unwrap();
    assert_counts(&db, &coll, 7, "written").await;
    advance(&client, 3).await;
    assert_counts(&db, &coll, 6, "own ttl 3 expired").await;
    advance(&client, 7).await;
    assert_counts(&db, &coll, 3, "collection TTL expired").await;
    advance(&client, 10).await;
    assert_counts(&db, &coll, 1, "own ttl 20 expired").await;
    reaper(&client, "runOnce").await;
    assert_counts(&db, &coll, 1, "reaped").await;
    let server = server.restart().await;
    let client = server.client().await;
    let db = client.database("ttl");
    assert_counts(&db, &db.collection("c"), 1, "restarted").await;
}

/// TTL-19: inserting the `_id` of an expired document that fails on another unique key still
/// removes the expired document, so no count includes it.
#[tokio::test]
async fn a_refused_insert_over_an_expired_id_leaves_the_counts_right() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    let db = client.database("ttl");
    db.run_command(doc! {
        "createIndexes": "c",
        "indexes": [{"key": {"u": 1}, "name": "u_1", "unique": true}],
    })
    .await
    .unwrap();
    coll.insert_one(doc! {"_id": 1, "u": 1}).await.unwrap();
    advance(&client, 10).await;
    coll.insert_one(doc! {"_id": 2, "u": 5}).await.unwrap();
    let err = coll.insert_one(doc! {"_id": 1, "u": 5}).await.unwrap_err();
    assert!(err.to_string().contains("E11000"), "{err}");
    assert_counts(&db, &coll, 1, "refused insert").await;
    reaper(&client, "runOnce").await;
    assert_counts(&db, &coll, 1, "reaped").await;
}

#[tokio::test]
async fn without_a_collection_ttl_nothing_leaves_the_count_ttl_10() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("ttl");
    let coll: Collection<Document> = db.collection("c");
    coll.insert_many([doc! {"_id": 1, "ttl": 5}, doc! {"_id": 2}])
        .await
        .unwrap();
    advance(&client, 100).await;
    assert_counts(&db, &coll, 2, "no TTL index").await;
    // A collection TTL of -1 expires only documents with their own ttl (TTL-13).
    common::ttl::set_collection_ttl(&db, "c", -1).await;
    assert_counts(&db, &coll, 1, "collection TTL -1").await;
    db.run_command(doc! {"dropIndexes": "c", "index": "_ts_1"})
        .await
        .unwrap();
    assert_counts(&db, &coll, 2, "TTL index dropped (TTL-9)").await;
}
