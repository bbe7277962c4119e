//! Date TTL indexes in the default profile (TTL-25…TTL-29): MongoDB's TTL model with instant
//! expiry, beside the `_ts` model, through the Rust driver and the manual clock.

use crate::common;

use common::bson::{doc, Bson, DateTime, Document};
use common::ttl::{advance, now, reaper, set_collection_ttl, ttl_status, visible};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mayfly::clock::Clock;
use mongodb::{Collection, Database};

/// A BSON date `seconds` after the epoch.
fn at(seconds: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(seconds * 1000))
}

async fn create(
    db: &Database,
    coll: &str,
    key: Document,
    value: Bson,
) -> mongodb::error::Result<Document> {
    db.run_command(doc! {
        "createIndexes": coll,
        "indexes": [{"key": key, "name": "x_ttl", "expireAfterSeconds": value}],
    })
    .await
}

async fn listed(coll: &Collection<Document>, name: &str) -> Document {
    let db = coll.client().database(coll.namespace().db.as_str());
    let indexes: Vec<Document> = db
        .run_command(doc! {"listIndexes": coll.name()})
        .await
        .unwrap()
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .filter_map(|i| i.as_document().cloned())
        .collect();
    indexes
        .into_iter()
        .find(|i| i.get_str("name") == Ok(name))
        .unwrap()
}

async fn counts(coll: &Collection<Document>) -> (u64, u64) {
    (
        coll.count_documents(doc! {}).await.unwrap(),
        coll.estimated_document_count().await.unwrap(),
    )
}

#[tokio::test]
async fn date_ttl_indexes_take_mongods_values_and_key_rules_ttl_25() {
    let server = TestServer::start().await;
    let db = server.client().await.database("dates");
    // Accepted: 0, Int64, an integral double, a fractional double (truncated, listed as Int32).
    for (field, value, listed_as) in [
        ("a", Bson::Int32(0), 0),
        ("b", Bson::Int64(3600), 3600),
        ("c", Bson::Double(10.0), 10),
        ("d", Bson::Double(10.5), 10),
        ("e", Bson::Int32(i32::MAX), i32::MAX),
    ] {
        let coll = format!("ok_{field}");
        let reply = create(&db, &coll, doc! {field: 1}, value).await.unwrap();
        assert_eq!(reply.get_bool("createdCollectionAutomatically"), Ok(true));
        let entry = listed(&db.collection(&coll), "x_ttl").await;
        assert_eq!(
            entry.get("expireAfterSeconds"),
            Some(&Bson::Int32(listed_as)),
            "TTL-29"
        );
    }
    // Refused as mongod 7.0 refuses them; nothing is created.
    for (key, value, code, reason) in [
        (
            doc! {"a": 1},
            Bson::Int32(-1),
            67,
            "option cannot be less than 0",
        ),
        (
            doc! {"a": 1},
            Bson::Int64(2_147_483_648),
            67,
            "must be within the range of a 32-bit integer",
        ),
        (
            doc! {"a": 1},
            Bson::String("10".into()),
            67,
            "must be numeric, but received a type of 'string",
        ),
        (doc! {"a": 1}, Bson::Double(f64::NAN), 67, "must not be NaN"),
        (
            doc! {"a": 1, "b": 1},
            Bson::Int32(10),
            67,
            "compound indexes do not support TTL",
        ),
        (
            doc! {"_ts": 1, "b": 1},
            Bson::Int32(10),
            67,
            "compound indexes do not support TTL",
        ),
        (
            doc! {"_id": 1},
            Bson::Int32(10),
            197,
            "is not valid for an _id index specification",
        ),
    ] {
        let err = create(&db, "refused", key.clone(), value)
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{key}");
        assert!(err.to_string().contains(reason), "{key}: {err}");
    }
    let names = db.list_collection_names().await.unwrap();
    assert!(!names.contains(&"refused".to_string()));
    // TTL-6 as mongod: the same spec again changes nothing; another value conflicts (85).
    let again = create(&db, "ok_a", doc! {"a": 1}, Bson::Int32(0))
        .await
        .unwrap();
    assert_eq!(
        again.get_i32("numIndexesBefore"),
        again.get_i32("numIndexesAfter")
    );
    let err = create(&db, "ok_a", doc! {"a": 1}, Bson::Int32(5))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(85));
    // A collection may have a `_ts` TTL and several date TTL indexes.
    set_collection_ttl(&db, "ok_a", 100).await;
    db.run_command(doc! {"createIndexes": "ok_a", "indexes": [
    {"key": {"z": -1}, "name": "z_ttl", "expireAfterSeconds": 1}]})
        .await
        .unwrap();
    let all = db
        .collection::<Document>("ok_a")
        .list_index_names()
        .await
        .unwrap();
    assert_eq!(all.len(), 4, "{all:?}");
}

#[tokio::test]
async fn documents_expire_at_their_date_plus_expire_after_seconds_ttl_26_ttl_27() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("dates");
    create(&db, "c", doc! {"expiresAt": 1}, Bson::Int32(10))
        .await
        .unwrap();
    let coll = db.collection::<Document>("c");
    let t = now(&client).await;
    coll.insert_many([
        doc! {"_id": "past", "expiresAt": at(t - 10)},
        doc! {"_id": "future", "expiresAt": at(t + 5)},
        doc! {"_id": "array", "expiresAt": [at(t + 50), "x", at(t + 2)]},
        doc! {"_id": "string", "expiresAt": "tomorrow"},
        doc! {"_id": "number", "expiresAt": t},
        doc! {"_id": "missing"},
    ])
    .await
    .unwrap();
    // Past: d + 10 <= t, gone at once.
    assert!(!visible(&coll, "past").await, "TTL-27: gone at once");
    assert_eq!(counts(&coll).await, (5, 5), "TTL-18 counts");
    // Array: the earliest date, t + 2, decides: gone at t + 12.
    advance(&client, 11).await;
    assert!(visible(&coll, "array").await);
    advance(&client, 1).await;
    assert!(!visible(&coll, "array").await, "TTL-26: earliest date");
    // Future: visible at d + eas - 1 = t + 14, gone at t + 15.
    advance(&client, 2).await;
    assert!(visible(&coll, "future").await);
    advance(&client, 1).await;
    assert!(!visible(&coll, "future").await, "TTL-26: gone at d + eas");
    // TTL-19: writes do not see expired documents; their `_id` is free.
    let updated = coll
        .update_one(doc! {"_id": "future"}, doc! {"$set": {"x": 1}})
        .await
        .unwrap();
    assert_eq!(updated.matched_count, 0);
    coll.insert_one(doc! {"_id": "past"}).await.unwrap();
    // Non-dates and missing never expire.
    advance(&client, 1_000_000).await;
    for id in ["string", "number", "missing", "past"] {
        assert!(visible(&coll, id).await, "{id}");
    }
    assert_eq!(counts(&coll).await, (4, 4));
    let found: Vec<Document> = coll
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 4);
}

#[tokio::test]
async fn expire_after_seconds_zero_expires_at_the_date_itself() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("dates");
    create(&db, "c", doc! {"expiresAt": 1}, Bson::Int32(0))
        .await
        .unwrap();
    let coll = db.collection::<Document>("c");
    let t = now(&client).await;
    coll.insert_one(doc! {"_id": 1, "expiresAt": at(t + 3)})
        .await
        .unwrap();
    // A date with a fraction of a second expires at the next whole second.
    let half = Bson::DateTime(DateTime::from_millis((t + 3) * 1000 + 500));
    coll.insert_one(doc! {"_id": 2, "expiresAt": half})
        .await
        .unwrap();
    advance(&client, 2).await;
    assert!(visible(&coll, 1).await);
    advance(&client, 1).await;
    assert!(!visible(&coll, 1).await);
    assert!(visible(&coll, 2).await, "t + 3.5 is not reached at t + 3");
    advance(&client, 1).await;
    assert!(!visible(&coll, 2).await);
}

#[tokio::test]
async fn two_date_indexes_and_the_ts_ttl_expire_a_document_once_ttl_26() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("dates");
    create(&db, "c", doc! {"a": 1}, Bson::Int32(100))
        .await
        .unwrap();
    db.run_command(doc! {"createIndexes": "c", "indexes": [
    {"key": {"b": -1}, "name": "b_ttl", "expireAfterSeconds": 0}]})
        .await
        .unwrap();
    set_collection_ttl(&db, "c", 50).await;
    let coll = db.collection::<Document>("c");
    let t = now(&client).await;
    coll.insert_many([
        doc! {"_id": "a", "a": at(t - 90)},                   // a: t + 10
        doc! {"_id": "b", "b": at(t + 20)},                   // b: t + 20
        doc! {"_id": "ts"},                                   // _ts: t + 50
        doc! {"_id": "all", "a": at(t - 95), "b": at(t + 5)}, // b first: t + 5
        doc! {"_id": "own", "ttl": -1, "a": at(t)},           // a: t + 100, own ttl only stops _ts
    ])
    .await
    .unwrap();
    for (step, gone) in [(5, "all"), (5, "a"), (10, "b"), (30, "ts"), (50, "own")] {
        advance(&client, step - 1).await;
        assert!(visible(&coll, gone).await, "{gone} visible a second before");
        advance(&client, 1).await;
        assert!(!visible(&coll, gone).await, "{gone}");
    }
    // Every document is due under two or three models: each is counted and reaped once.
    assert_eq!(counts(&coll).await, (0, 0));
    assert_eq!(ttl_status(&client).await.get_i64("backlog"), Ok(5));
    let reaped = reaper(&client, "runOnce").await;
    assert_eq!(reaped.get_i64("reaped"), Ok(5));
    assert_eq!(ttl_status(&client).await.get_i64("backlog"), Ok(0));
}

#[tokio::test]
async fn the_reaper_deletes_date_expired_documents_in_batches_ttl_27() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("dates");
    create(&db, "c", doc! {"at": 1}, Bson::Int32(0))
        .await
        .unwrap();
    let coll = db.collection::<Document>("c");
    let t = now(&client).await;
    // More than a batch, with arrays (several entries per document).
    let docs: Vec<Document> = (0..300)
        .map(|i| doc! {"_id": i, "at": [at(t + 10 + i % 7), at(t + 5)]})
        .collect();
    coll.insert_many(docs).await.unwrap();
    coll.insert_one(doc! {"_id": "later", "at": at(t + 1000)})
        .await
        .unwrap();
    assert_eq!(reaper(&client, "runOnce").await.get_i64("reaped"), Ok(0));
    advance(&client, 5).await;
    assert_eq!(counts(&coll).await, (1, 1));
    let before = ttl_status(&client)
        .await
        .get_i64("deletedDocuments")
        .unwrap();
    assert_eq!(reaper(&client, "runOnce").await.get_i64("reaped"), Ok(300));
    let status = ttl_status(&client).await;
    assert_eq!(
        status.get_i64("deletedDocuments").unwrap() - before,
        300,
        "TTL-29"
    );
    assert_eq!(status.get_i64("backlog"), Ok(0));
    // Deleted, not hidden: dropping the index brings nothing back.
    coll.drop_index("x_ttl").await.unwrap();
    assert_eq!(counts(&coll).await, (1, 1));
}

#[tokio::test]
async fn coll_mod_changes_a_date_ttl_index_at_once_ttl_28() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("dates");
    create(&db, "c", doc! {"at": 1}, Bson::Int32(1000))
        .await
        .unwrap();
    db.run_command(
        doc! {"createIndexes": "c", "indexes": [{"key": {"plain": 1}, "name": "plain_1"}]},
    )
    .await
    .unwrap();
    let coll = db.collection::<Document>("c");
    let t = now(&client).await;
    coll.insert_many([
        doc! {"_id": 1, "at": at(t - 100)},
        doc! {"_id": 2, "plain": at(t - 100)},
    ])
    .await
    .unwrap();
    assert_eq!(counts(&coll).await, (2, 2));
    let reply = db
        .run_command(
            doc! {"collMod": "c", "index": {"keyPattern": {"at": 1}, "expireAfterSeconds": 50}},
        )
        .await
        .unwrap();
    assert_eq!(reply.get_i32("expireAfterSeconds_old"), Ok(1000));
    assert_eq!(reply.get_i32("expireAfterSeconds_new"), Ok(50));
    assert!(
        !visible(&coll, 1).await,
        "applies to existing documents at once"
    );
    assert_eq!(
        listed(&coll, "x_ttl").await.get("expireAfterSeconds"),
        Some(&Bson::Int32(50))
    );
    // A plain single-field index becomes a date TTL index.
    let reply = db
        .run_command(doc! {"collMod": "c", "index": {"name": "plain_1", "expireAfterSeconds": 0}})
        .await
        .unwrap();
    assert!(reply.get("expireAfterSeconds_old").is_none());
    assert_eq!(reply.get_i32("expireAfterSeconds_new"), Ok(0));
    assert!(!visible(&coll, 2).await);
    // Errors: no such index (27), a bad value (67), the `_ts` index (TTL-7: 115).
    for (cmd, code) in [
        (
            doc! {"collMod": "c", "index": {"name": "nope", "expireAfterSeconds": 5}},
            27,
        ),
        (
            doc! {"collMod": "c", "index": {"name": "x_ttl", "expireAfterSeconds": -5}},
            67,
        ),
        (
            doc! {"collMod": "c", "index": {"name": "x_ttl", "keyPattern": {"at": 1}, "expireAfterSeconds": 5}},
            72,
        ),
        (
            doc! {"collMod": "nope", "index": {"name": "x_ttl", "expireAfterSeconds": 5}},
            26,
        ),
    ] {
        let err = db.run_command(cmd.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{cmd}");
    }
    set_collection_ttl(&db, "c", 10).await;
    let err = db
        .run_command(
            doc! {"collMod": "c", "index": {"keyPattern": {"_ts": 1}, "expireAfterSeconds": 5}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(115), "TTL-7");
}

#[tokio::test]
async fn date_expiry_survives_a_restart_ttl_21() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("dates");
    create(&db, "c", doc! {"at": 1}, Bson::Int32(10))
        .await
        .unwrap();
    let t = now(&client).await;
    db.collection::<Document>("c")
        .insert_many([
            doc! {"_id": 1, "at": at(t)},
            doc! {"_id": 2, "at": at(t + 100)},
        ])
        .await
        .unwrap();
    drop(client);
    server.clock.advance(std::time::Duration::from_secs(50));
    let server = server.restart().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = client.database("dates").collection::<Document>("c");
    assert!(
        !visible(&coll, 1).await,
        "invisible from the first request after start"
    );
    assert!(visible(&coll, 2).await);
    assert_eq!(reaper(&client, "runOnce").await.get_i64("reaped"), Ok(1));
}
