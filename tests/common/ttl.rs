//! Helpers for TTL tests: the test commands of TTL-23, driven through the driver.
#![allow(dead_code)]

use super::bson::{doc, Bson, Document};
use mongodb::{Client, Collection, Database};

/// `{advanceClock: seconds}` on admin; returns the server time it reports.
pub async fn advance(client: &Client, seconds: i64) -> i64 {
    let reply = client
        .database("admin")
        .run_command(doc! {"advanceClock": seconds})
        .await
        .unwrap();
    reply.get_i64("now").unwrap()
}

/// The server time, in epoch seconds.
pub async fn now(client: &Client) -> i64 {
    advance(client, 0).await
}

pub async fn reaper(client: &Client, action: &str) -> Document {
    client
        .database("admin")
        .run_command(doc! {"reaper": action})
        .await
        .unwrap()
}

/// Creates the TTL index `{_ts: 1}` with this `expireAfterSeconds`.
pub async fn set_collection_ttl(db: &Database, coll: &str, seconds: impl Into<Bson>) {
    db.run_command(doc! {
        "createIndexes": coll,
        "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": seconds.into()}],
    })
    .await
    .unwrap();
}

/// `ttl.c` with a collection TTL of `seconds` (the TTL index on `_ts`).
pub async fn ttl_collection(client: &Client, seconds: i32) -> Collection<Document> {
    let db = client.database("ttl");
    set_collection_ttl(&db, "c", seconds).await;
    db.collection("c")
}

pub async fn visible(coll: &Collection<Document>, id: impl Into<Bson>) -> bool {
    coll.find_one(doc! {"_id": id.into()})
        .await
        .unwrap()
        .is_some()
}

/// serverStatus.ttl
pub async fn ttl_status(client: &Client) -> Document {
    client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap()
        .get_document("ttl")
        .unwrap()
        .clone()
}
