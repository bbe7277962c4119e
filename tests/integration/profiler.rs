//! The database profiler and `top`, through the driver as mongosh's `db.setProfilingLevel`,
//! `db.system.profile.find()` and `db.adminCommand({top: 1})` use them.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::Database;

/// Every document of `db`'s `system.profile` (the secrets tests read them too).
pub(crate) async fn profile_entries(db: &Database) -> Vec<Document> {
    db.collection::<Document>("system.profile")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn level_two_profiles_every_operation_with_mongods_fields() {
    let server = TestServer::start_with(|c| c.slow_ms = 100).await;
    let client = server.client().await;
    let db = client.database("shop");
    let reply = db.run_command(doc! {"profile": -1}).await.unwrap();
    assert_eq!(
        reply,
        doc! {"was": 0, "slowms": 100, "sampleRate": 1.0, "ok": 1.0}
    );
    let coll = db.collection::<Document>("c");
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    let reply = db.run_command(doc! {"profile": 2}).await.unwrap();
    assert_eq!(reply.get_i32("was").unwrap(), 0);
    coll.insert_many([doc! {"a": 1}, doc! {"a": 2}, doc! {"a": 3}])
        .await
        .unwrap();
    let found: Vec<Document> = coll
        .find(doc! {"a": {"$gte": 2}})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 2);
    let failed = db
        .run_command(doc! {"find": "c", "filter": {"$bad": 1}})
        .await;
    assert!(failed.is_err());

    let entries = profile_entries(&db).await;
    let insert = entries
        .iter()
        .find(|e| e.get_str("op") == Ok("insert"))
        .expect("the insert is profiled");
    assert_eq!(insert.get_str("ns").unwrap(), "shop.c");
    let query = entries
        .iter()
        .find(|e| {
            e.get_str("op") == Ok("query")
                && e.get_document("command").unwrap().get_document("filter")
                    == Ok(&doc! {"a": {"$gte": 2}})
        })
        .expect("the find is profiled");
    assert_eq!(query.get_str("ns").unwrap(), "shop.c");
    assert_eq!(query.get_str("planSummary").unwrap(), "IXSCAN { a: 1 }");
    assert_eq!(query.get_i64("keysExamined").unwrap(), 2);
    assert_eq!(query.get_i64("docsExamined").unwrap(), 2);
    assert_eq!(query.get_i64("nreturned").unwrap(), 2);
    assert!(query.get_i64("responseLength").unwrap() > 0);
    assert!(query.get_i64("millis").is_ok());
    assert!(matches!(query.get("ts"), Some(Bson::DateTime(_))));
    assert_eq!(query.get_str("client").unwrap(), "127.0.0.1");
    assert_eq!(query.get_str("protocol").unwrap(), "op_msg");
    let error = entries
        .iter()
        .find(|e| e.get_f64("ok") == Ok(0.0))
        .expect("the failed find is profiled");
    assert_eq!(error.get_i32("errCode").unwrap(), 2);

    // Clients cannot write to it, as to any system collection.
    let err = db
        .collection::<Document>("system.profile")
        .insert_one(doc! {"x": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(73));

    // mongod keeps the profile while the profiler writes it.
    let err = db
        .run_command(doc! {"drop": "system.profile"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(20));

    // Off again: nothing more is written.
    let reply = db.run_command(doc! {"profile": 0}).await.unwrap();
    assert_eq!(reply.get_i32("was").unwrap(), 2);
    let before = profile_entries(&db).await.len();
    coll.find_one(doc! {"a": 1}).await.unwrap();
    assert_eq!(profile_entries(&db).await.len(), before);
    db.run_command(doc! {"drop": "system.profile"})
        .await
        .unwrap();
    assert!(profile_entries(&db).await.is_empty());
}

#[tokio::test]
async fn level_one_keeps_slow_operations_and_a_filter_replaces_slowms() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("app");
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"a": 1}).await.unwrap();
    // slowms is server-wide: the reply reports the old value, the next the new one.
    db.run_command(doc! {"profile": 1, "slowms": 100_000})
        .await
        .unwrap();
    let reply = db.run_command(doc! {"profile": -1}).await.unwrap();
    assert_eq!(reply.get_i32("slowms").unwrap(), 100_000);
    assert_eq!(reply.get_i32("was").unwrap(), 1);
    coll.find_one(doc! {}).await.unwrap();
    assert!(
        profile_entries(&db).await.is_empty(),
        "nothing is that slow"
    );

    db.run_command(doc! {"profile": 1, "slowms": 0, "sampleRate": 0.0})
        .await
        .unwrap();
    coll.find_one(doc! {}).await.unwrap();
    assert!(profile_entries(&db).await.is_empty(), "nothing is sampled");

    let reply = db
        .run_command(doc! {"profile": 1, "sampleRate": 1.0, "filter": {"op": "query"}})
        .await
        .unwrap();
    assert!(reply
        .get_str("note")
        .unwrap()
        .starts_with("When a filter expression is set"));
    coll.find_one(doc! {"a": 1}).await.unwrap();
    coll.insert_one(doc! {"a": 2}).await.unwrap();
    let entries = profile_entries(&db).await;
    let ops: Vec<&str> = entries.iter().map(|e| e.get_str("op").unwrap()).collect();
    assert!(ops.contains(&"query"), "{ops:?}");
    assert!(
        !ops.contains(&"insert"),
        "the filter keeps queries only: {ops:?}"
    );
    let reply = db
        .run_command(doc! {"profile": 1, "filter": "unset"})
        .await
        .unwrap();
    assert_eq!(reply.get_document("filter").unwrap(), &doc! {"op": "query"});
    let reply = db.run_command(doc! {"profile": -1}).await.unwrap();
    assert!(reply.get("filter").is_none());

    for (bad, code) in [
        (doc! {"profile": 1, "sampleRate": 1.5}, 2),
        (doc! {"profile": 1, "sampleRate": "all"}, 14),
        (doc! {"profile": 1, "filter": 3}, 14),
        (doc! {"profile": 1, "noSuchOption": 1}, 40415),
    ] {
        let err = db.run_command(bad.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{bad}");
    }
}

#[tokio::test]
async fn the_profile_stays_within_a_megabyte_dropping_the_oldest() {
    let server = TestServer::start().await;
    let db = server.client().await.database("big");
    db.run_command(doc! {"profile": 2}).await.unwrap();
    let coll = db.collection::<Document>("c");
    let pad = "x".repeat(40 * 1024);
    for i in 0..40 {
        coll.find_one(doc! {"i": i, "pad": &pad}).await.unwrap();
    }
    let entries = profile_entries(&db).await;
    let size: usize = entries.iter().map(|e| bson::to_vec(e).unwrap().len()).sum();
    assert!(size <= 1024 * 1024, "{size} bytes");
    assert!(entries.len() < 40, "the oldest went: {}", entries.len());
    let first = entries[0]
        .get_document("command")
        .unwrap()
        .get_document("filter")
        .unwrap()
        .get_i32("i")
        .unwrap();
    let last = entries
        .iter()
        .rev()
        .find_map(|e| {
            e.get_document("command")
                .ok()?
                .get_document("filter")
                .ok()?
                .get_i32("i")
                .ok()
        })
        .unwrap();
    assert!(first > 0, "the first entries were dropped");
    assert_eq!(last, 39, "the newest is kept");
}

#[tokio::test]
async fn top_counts_time_and_operations_per_collection() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = client.database("shop").collection::<Document>("c");
    coll.insert_one(doc! {"a": 1}).await.unwrap();
    coll.insert_one(doc! {"a": 2}).await.unwrap();
    coll.find_one(doc! {}).await.unwrap();
    coll.update_one(doc! {"a": 1}, doc! {"$set": {"b": 1}})
        .await
        .unwrap();
    coll.delete_one(doc! {"a": 2}).await.unwrap();
    coll.count_documents(doc! {}).await.unwrap();
    let missing = client.database("shop").collection::<Document>("nothing");
    missing.find_one(doc! {}).await.unwrap();

    let admin = client.database("admin");
    let top = admin.run_command(doc! {"top": 1}).await.unwrap();
    let totals = top.get_document("totals").unwrap();
    assert_eq!(totals.get_str("note").unwrap(), "all times in microseconds");
    assert!(totals.get("shop.nothing").is_none(), "{totals}");
    let row = totals.get_document("shop.c").unwrap();
    let count = |category: &str| {
        row.get_document(category)
            .unwrap()
            .get_i64("count")
            .unwrap()
    };
    assert_eq!(count("insert"), 2);
    assert_eq!(count("queries"), 1);
    assert_eq!(count("update"), 1);
    assert_eq!(count("remove"), 1);
    assert_eq!(count("commands"), 1, "the count (an aggregate)");
    assert_eq!(count("writeLock"), 4);
    assert_eq!(count("readLock"), 2);
    assert_eq!(count("total"), 6);
    assert!(row.get_document("total").unwrap().get_i64("time").unwrap() > 0);

    coll.drop().await.unwrap();
    let top = admin.run_command(doc! {"top": 1}).await.unwrap();
    assert!(top.get_document("totals").unwrap().get("shop.c").is_none());
    let err = client
        .database("shop")
        .run_command(doc! {"top": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(13));
}

/// `--profile 1` (mongod's start-up option) profiles every database's slow operations until
/// `profile` says otherwise for one.
#[tokio::test]
async fn the_start_up_level_applies_to_every_database() {
    let server = TestServer::start_with(|c| {
        c.profile_level = 1;
        c.slow_ms = 0;
    })
    .await;
    let client = server.client().await;
    for name in ["one", "two"] {
        let db = client.database(name);
        db.collection::<Document>("c")
            .insert_one(doc! {"a": 1})
            .await
            .unwrap();
        let ops: Vec<String> = profile_entries(&db)
            .await
            .iter()
            .map(|e| e.get_str("op").unwrap().to_owned())
            .collect();
        assert!(ops.contains(&"insert".to_owned()), "{name}: {ops:?}");
    }
    let db = client.database("one");
    let reply = db.run_command(doc! {"profile": 0}).await.unwrap();
    assert_eq!(reply.get_i32("was").unwrap(), 1);
    let before = profile_entries(&db).await.len();
    db.collection::<Document>("c")
        .insert_one(doc! {"a": 2})
        .await
        .unwrap();
    assert_eq!(profile_entries(&db).await.len(), before, "one is off now");
    let opts = client
        .database("admin")
        .run_command(doc! {"getCmdLineOpts": 1})
        .await
        .unwrap();
    let profiling = opts
        .get_document("parsed")
        .unwrap()
        .get_document("operationProfiling")
        .unwrap();
    assert_eq!(profiling.get_str("mode").unwrap(), "slowOp");
}
