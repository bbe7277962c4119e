//! What TTL is doing in one collection, where mongod users look (TTL-24): `collStats` and
//! `$collStats.storageStats` carry `ttl: {indexes, expiredNotReaped, deleted}` for a collection
//! with a TTL index, before expiry, after it (not reaped) and after a reaper pass; a drop
//! clears the counter.

use crate::common::ttl::{advance, reaper, set_collection_ttl};
use crate::common::TestServer;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

async fn coll_stats_ttl(db: &Database, coll: &str) -> Option<Document> {
    let reply = db.run_command(doc! {"collStats": coll}).await.unwrap();
    reply.get_document("ttl").ok().cloned()
}

async fn stage_ttl(db: &Database, coll: &str) -> Option<Document> {
    let rows: Vec<Document> = db
        .collection::<Document>(coll)
        .aggregate(vec![doc! {"$collStats": {"storageStats": {}}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let storage = rows[0].get_document("storageStats").unwrap();
    storage.get_document("ttl").ok().cloned()
}

/// Both places report the same `ttl` sub-document; returns it.
async fn ttl_of(db: &Database, coll: &str) -> Option<Document> {
    let command = coll_stats_ttl(db, coll).await;
    assert_eq!(
        command,
        stage_ttl(db, coll).await,
        "collStats and $collStats agree"
    );
    command
}

fn expected(expired_not_reaped: i32, deleted: i32) -> Document {
    doc! {
        "indexes": [{"name": "_ts_1", "model": "cosmos", "field": "_ts", "expireAfterSeconds": 10}],
        "expiredNotReaped": expired_not_reaped,
        "deleted": deleted,
    }
}

#[tokio::test]
async fn coll_stats_shows_expired_not_reaped_and_deleted_per_collection_ttl_24() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("view");
    set_collection_ttl(&db, "c", 10).await;
    let c = db.collection::<Document>("c");
    // Three follow the collection TTL (due at T+10), one its own ttl 5 (due at T+5), one never.
    c.insert_many(vec![
        doc! {"_id": 1},
        doc! {"_id": 2},
        doc! {"_id": 3},
        doc! {"_id": 4, "ttl": 5},
        doc! {"_id": 5, "ttl": -1},
    ])
    .await
    .unwrap();
    // A collection without a TTL index has no `ttl` section, nor does a missing one.
    db.collection::<Document>("plain")
        .insert_one(doc! {"_id": 1, "ttl": 5})
        .await
        .unwrap();
    assert_eq!(ttl_of(&db, "plain").await, None);
    assert_eq!(coll_stats_ttl(&db, "missing").await, None);

    // (seconds advanced, expiredNotReaped, deleted, count)
    let table = [
        (0, 0, 0, 5),
        (4, 0, 0, 5),
        (1, 1, 0, 4),
        (4, 1, 0, 4),
        (1, 4, 0, 1),
    ];
    for (seconds, expired, deleted, count) in table {
        advance(&client, seconds).await;
        assert_eq!(
            ttl_of(&db, "c").await,
            Some(expected(expired, deleted)),
            "after +{seconds}"
        );
        let stats = db.run_command(doc! {"collStats": "c"}).await.unwrap();
        assert_eq!(stats.get("count"), Some(&Bson::Int32(count)));
    }
    // The server-wide backlog counts the same documents.
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    assert_eq!(
        status.get_document("ttl").unwrap().get_i64("backlog"),
        Ok(4)
    );

    let reaped = reaper(&client, "runOnce").await;
    assert_eq!(reaped.get_i64("reaped"), Ok(4));
    assert_eq!(ttl_of(&db, "c").await, Some(expected(0, 4)));
    // Another pass with nothing due changes nothing.
    reaper(&client, "runOnce").await;
    assert_eq!(ttl_of(&db, "c").await, Some(expected(0, 4)));

    // A rename keeps the collection, and so its counter.
    client
        .database("admin")
        .run_command(doc! {"renameCollection": "view.c", "to": "view.renamed"})
        .await
        .unwrap();
    assert_eq!(ttl_of(&db, "renamed").await, Some(expected(0, 4)));

    // Dropping the collection drops its counter: created again, it starts from zero.
    db.collection::<Document>("renamed").drop().await.unwrap();
    set_collection_ttl(&db, "renamed", 10).await;
    assert_eq!(ttl_of(&db, "renamed").await, Some(expected(0, 0)));

    // Dropping the TTL index takes the section away.
    db.run_command(doc! {"dropIndexes": "renamed", "index": "_ts_1"})
        .await
        .unwrap();
    assert_eq!(ttl_of(&db, "renamed").await, None);
}

#[tokio::test]
async fn a_date_ttl_index_is_one_more_entry_with_its_documents_counted_once_ttl_26() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("view_dates");
    set_collection_ttl(&db, "c", 10).await;
    db.run_command(doc! {
        "createIndexes": "c",
        "indexes": [{"key": {"at": 1}, "name": "at_1", "expireAfterSeconds": 0}],
    })
    .await
    .unwrap();
    let now = advance(&client, 0).await;
    let at = |seconds: i64| mongodb::bson::DateTime::from_millis((now + seconds) * 1000);
    let c = db.collection::<Document>("c");
    // By date at T+3; by date at T+20 but by the collection TTL at T+10; a date in an array
    // at T+3 and its other element later (one document, one count); no date: T+10.
    c.insert_many(vec![
        doc! {"_id": 1, "at": at(3)},
        doc! {"_id": 2, "at": at(20)},
        doc! {"_id": 3, "at": [at(30), at(3)]},
        doc! {"_id": 4, "at": "soon"},
    ])
    .await
    .unwrap();
    let expected = |expired: i32, deleted: i32| {
        doc! {
            "indexes": [
                {"name": "_ts_1", "model": "cosmos", "field": "_ts", "expireAfterSeconds": 10},
                {"name": "at_1", "model": "date", "field": "at", "expireAfterSeconds": 0},
            ],
            "expiredNotReaped": expired,
            "deleted": deleted,
        }
    };
    assert_eq!(ttl_of(&db, "c").await, Some(expected(0, 0)));
    advance(&client, 3).await;
    assert_eq!(ttl_of(&db, "c").await, Some(expected(2, 0)), "T+3: 1 and 3");
    advance(&client, 7).await;
    assert_eq!(ttl_of(&db, "c").await, Some(expected(4, 0)), "T+10: all");
    let reaped = reaper(&client, "runOnce").await;
    assert_eq!(reaped.get_i64("reaped"), Ok(4));
    assert_eq!(ttl_of(&db, "c").await, Some(expected(0, 4)));
}
