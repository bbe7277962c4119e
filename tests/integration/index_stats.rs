//! `$indexStats`: one document per index with the operations that used it since its creation
//! or the server's start, counted once per operation whose plan scans the index, in memory.

use crate::common;

use common::bson::{doc, Bson, DateTime, Document};
use common::pipelines::{aggregate, aggregate_err};
use common::TestServer;
use futures::TryStreamExt;
use mayfly::clock::Clock;
use mongodb::options::{Credential, FindOptions, IndexOptions};
use mongodb::{Collection, IndexModel};
use std::collections::BTreeMap;
use std::time::Duration;

/// `{index name: (ops, since)}` as `$indexStats` reports them.
async fn usage(coll: &Collection<Document>) -> BTreeMap<String, (i64, DateTime)> {
    aggregate(coll, vec![doc! {"$indexStats": {}}])
        .await
        .into_iter()
        .map(|d| {
            let accesses = d.get_document("accesses").unwrap();
            (
                d.get_str("name").unwrap().to_owned(),
                (
                    accesses.get_i64("ops").unwrap(),
                    *accesses.get_datetime("since").unwrap(),
                ),
            )
        })
        .collect()
}

async fn ops(coll: &Collection<Document>) -> Vec<(String, i64)> {
    usage(coll)
        .await
        .into_iter()
        .map(|(name, (ops, _))| (name, ops))
        .collect()
}

fn counts(expected: &[(&str, i64)]) -> Vec<(String, i64)> {
    let mut v: Vec<_> = expected.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    v.sort();
    v
}

async fn seeded(server: &TestServer) -> Collection<Document> {
    let coll = server.client().await.database("app").collection("c");
    let docs: Vec<Document> = (0..10).map(|i| doc! {"_id": i, "a": i, "b": i}).collect();
    coll.insert_many(docs).await.unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    coll
}

#[tokio::test]
async fn each_operation_that_uses_an_index_counts_once() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    assert_eq!(ops(&coll).await, counts(&[("_id_", 0), ("a_1", 0)]));

    // Collection scans use no index.
    coll.find_one(doc! {"b": 3}).await.unwrap();
    coll.count_documents(doc! {}).await.unwrap();
    assert_eq!(ops(&coll).await, counts(&[("_id_", 0), ("a_1", 0)]));

    // One find through the index, however many batches it returns.
    let found: Vec<Document> = coll
        .find(doc! {"a": {"$gte": 0}})
        .with_options(FindOptions::builder().batch_size(2).build())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 10);
    assert_eq!(ops(&coll).await, counts(&[("_id_", 0), ("a_1", 1)]));

    // Each kind of operation that locates documents through an index.
    coll.find_one(doc! {"_id": 4}).await.unwrap();
    coll.count_documents(doc! {"a": {"$lt": 5}}).await.unwrap();
    coll.distinct("b", doc! {"a": 2}).await.unwrap();
    aggregate(&coll, vec![doc! {"$match": {"a": 3}}]).await;
    coll.update_one(doc! {"a": 4}, doc! {"$set": {"b": 40}})
        .await
        .unwrap();
    coll.delete_one(doc! {"a": 9}).await.unwrap();
    assert_eq!(ops(&coll).await, counts(&[("_id_", 1), ("a_1", 6)]));

    // explain shows a plan without running the operation.
    coll.find(doc! {"a": 1}).await.unwrap();
    let before = ops(&coll).await;
    server
        .client()
        .await
        .database("app")
        .run_command(doc! {"explain": {"find": "c", "filter": {"a": 1}}})
        .await
        .unwrap();
    assert_eq!(ops(&coll).await, before);
}

#[tokio::test]
async fn lookup_counts_each_read_of_the_foreign_collection() {
    let server = TestServer::start().await;
    let db = server.client().await.database("app");
    let local: Collection<Document> = db.collection("local");
    let foreign: Collection<Document> = db.collection("foreign");
    local
        .insert_many([doc! {"k": 1}, doc! {"k": 2}, doc! {"k": 3}])
        .await
        .unwrap();
    foreign
        .insert_many([doc! {"k": 1}, doc! {"k": 2}])
        .await
        .unwrap();
    foreign
        .create_index(IndexModel::builder().keys(doc! {"k": 1}).build())
        .await
        .unwrap();
    let joined = aggregate(
        &local,
        vec![doc! {"$lookup": {"from": "foreign", "localField": "k", "foreignField": "k", "as": "j"}}],
    )
    .await;
    assert_eq!(joined.len(), 3);
    assert_eq!(ops(&foreign).await, counts(&[("_id_", 0), ("k_1", 3)]));
    assert_eq!(ops(&local).await, counts(&[("_id_", 0)]));
}

#[tokio::test]
async fn counters_start_at_creation_and_end_with_the_index() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let started = usage(&coll).await;
    coll.find_one(doc! {"a": 1}).await.unwrap();

    // A new index starts at 0, counted from its creation; the others go on.
    server.clock.advance(Duration::from_secs(60));
    let created = server.clock.now_datetime();
    coll.create_index(IndexModel::builder().keys(doc! {"b": 1}).build())
        .await
        .unwrap();
    let now = usage(&coll).await;
    assert_eq!(now["b_1"], (0, created));
    assert_eq!(now["a_1"], (1, started["a_1"].1));
    assert_eq!(now["_id_"], started["_id_"]);

    // Dropping an index drops its counter: created again, it starts afresh.
    server.clock.advance(Duration::from_secs(60));
    coll.drop_index("a_1").await.unwrap();
    assert!(!usage(&coll).await.contains_key("a_1"));
    coll.create_index(IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    assert_eq!(usage(&coll).await["a_1"], (0, server.clock.now_datetime()));

    // A renamed collection, and one dropped and created again, start afresh.
    coll.find_one(doc! {"b": 1}).await.unwrap();
    server.clock.advance(Duration::from_secs(60));
    let admin = server.client().await.database("admin");
    admin
        .run_command(doc! {"renameCollection": "app.c", "to": "app.d"})
        .await
        .unwrap();
    let renamed: Collection<Document> = server.client().await.database("app").collection("d");
    let after = usage(&renamed).await;
    assert_eq!(after["b_1"], (0, server.clock.now_datetime()));
    renamed.drop().await.unwrap();
    assert!(usage(&renamed).await.is_empty());
    renamed.insert_one(doc! {"a": 1}).await.unwrap();
    assert_eq!(ops(&renamed).await, counts(&[("_id_", 0)]));
}

#[tokio::test]
async fn counters_live_in_memory_and_start_again_with_the_server() {
    // On disk, so the collection and its indexes outlive the restart.
    let server = TestServer::start_with(|c| c.storage = mayfly::config::StorageKind::Disk).await;
    let coll = seeded(&server).await;
    coll.find_one(doc! {"a": 1}).await.unwrap();
    assert_eq!(ops(&coll).await, counts(&[("_id_", 0), ("a_1", 1)]));
    server.clock.advance(Duration::from_secs(3600));
    let server = server.restart().await;
    let coll: Collection<Document> = server.client().await.database("app").collection("c");
    let restarted = server.clock.now_datetime();
    let after = usage(&coll).await;
    assert_eq!(after["a_1"], (0, restarted));
    assert_eq!(after["_id_"], (0, restarted));
}

#[tokio::test]
async fn documents_have_mongods_shape() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"b": -1})
            .options(
                IndexOptions::builder()
                    .unique(true)
                    .name("by_b".to_owned())
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();
    let docs = aggregate(&coll, vec![doc! {"$indexStats": {}}]).await;
    let names: Vec<&str> = docs.iter().map(|d| d.get_str("name").unwrap()).collect();
    assert_eq!(names, ["_id_", "a_1", "by_b"]);
    let by_b = &docs[2];
    let keys: Vec<&str> = by_b.keys().map(String::as_str).collect();
    assert_eq!(keys, ["name", "key", "host", "accesses", "spec"]);
    assert_eq!(by_b.get_document("key").unwrap(), &doc! {"b": -1});
    assert_eq!(
        by_b.get_document("spec").unwrap(),
        &doc! {"v": 2, "key": {"b": -1}, "name": "by_b", "unique": true}
    );
    assert_eq!(
        docs[0].get_document("spec").unwrap(),
        &doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    );
    // The server names itself as `$collStats` does: its host name and configured port.
    let host = by_b.get_str("host").unwrap();
    let coll_stats = aggregate(&coll, vec![doc! {"$collStats": {}}]).await;
    assert_eq!(host, coll_stats[0].get_str("host").unwrap());
    assert!(
        host.starts_with(&format!("{}:", mayfly::host::hostname())),
        "{host}"
    );
    assert!(matches!(
        by_b.get_document("accesses").unwrap().get("ops"),
        Some(Bson::Int64(0))
    ));

    // Later stages see the documents; a missing collection has none.
    let names = aggregate(
        &coll,
        vec![
            doc! {"$indexStats": {}},
            doc! {"$match": {"accesses.ops": 0}},
            doc! {"$project": {"_id": 0, "name": 1}},
            doc! {"$sort": {"name": -1}},
        ],
    )
    .await;
    assert_eq!(
        names,
        [
            doc! {"name": "by_b"},
            doc! {"name": "a_1"},
            doc! {"name": "_id_"}
        ]
    );
    let missing: Collection<Document> = server.client().await.database("app").collection("none");
    assert!(aggregate(&missing, vec![doc! {"$indexStats": {}}])
        .await
        .is_empty());
}

#[tokio::test]
async fn an_index_being_built_is_listed_as_building() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    // An index added as a build adds it, before its entries are written.
    let shared = server.shared();
    shared
        .engine
        .write(true, |txn, _| {
            use mayfly::engine::{ddl, IndexMeta};
            let meta = ddl::collection(txn, "app", "c").unwrap();
            let index = IndexMeta {
                building: true,
                ..IndexMeta::new("b_1", doc! {"b": 1})
            };
            ddl::add_index(txn, meta.id, index).unwrap();
        })
        .await
        .unwrap();
    drop(shared);
    let docs = aggregate(&coll, vec![doc! {"$indexStats": {}}]).await;
    let building: Vec<(&str, Option<&Bson>)> = docs
        .iter()
        .map(|d| (d.get_str("name").unwrap(), d.get("building")))
        .collect();
    assert_eq!(
        building,
        [
            ("_id_", None),
            ("a_1", None),
            ("b_1", Some(&Bson::Boolean(true)))
        ]
    );
    // The planner does not use it, so nothing counts for it.
    coll.find_one(doc! {"b": 1}).await.unwrap();
    assert_eq!(
        ops(&coll).await,
        counts(&[("_id_", 0), ("a_1", 0), ("b_1", 0)])
    );
}

#[tokio::test]
async fn misplaced_or_malformed_stages_are_refused() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let cases: Vec<(Vec<Document>, i32)> = vec![
        (vec![doc! {"$indexStats": 1}], 28803),
        (vec![doc! {"$indexStats": {"a": 1}}], 28803),
        (vec![doc! {"$match": {}}, doc! {"$indexStats": {}}], 40602),
        (vec![doc! {"$facet": {"f": [{"$indexStats": {}}]}}], 40600),
        (
            vec![doc! {"$lookup": {"from": "c", "pipeline": [{"$indexStats": {}}], "as": "x"}}],
            238,
        ),
        (
            vec![doc! {"$unionWith": {"coll": "c", "pipeline": [{"$indexStats": {}}]}}],
            238,
        ),
    ];
    for (pipeline, code) in cases {
        assert_eq!(
            aggregate_err(&coll, pipeline.clone()).await,
            Some(code),
            "{pipeline:?}"
        );
    }
    let db = server.client().await.database("app");
    let err = db
        .run_command(doc! {"aggregate": 1, "pipeline": [{"$indexStats": {}}], "cursor": {}})
        .await
        .unwrap_err();
    assert_eq!(common::error_code(&err), Some(73));
    let err = db
        .run_command(
            doc! {"explain": {"aggregate": "c", "pipeline": [{"$indexStats": {}}], "cursor": {}}},
        )
        .await
        .unwrap_err();
    assert_eq!(common::error_code(&err), Some(238));
}

#[tokio::test]
async fn needs_the_index_stats_action() {
    let server = TestServer::start_with(|c| c.auth = true).await;
    let setup = server.client().await.database("admin");
    setup
        .run_command(doc! {"createUser": "root", "pwd": "pw", "roles": ["root"]})
        .await
        .unwrap();
    let login = |user: &str| {
        let user = user.to_owned();
        server.client_with(move |o| {
            o.credential = Some(
                Credential::builder()
                    .username(user)
                    .password("pw".to_owned())
                    .source("admin".to_owned())
                    .build(),
            )
        })
    };
    let root = login("root").await;
    let admin = root.database("admin");
    for (user, role) in [("monitor", "clusterMonitor"), ("reader", "readAnyDatabase")] {
        admin
            .run_command(doc! {"createUser": user, "pwd": "pw", "roles": [role]})
            .await
            .unwrap();
    }
    root.database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"a": 1})
        .await
        .unwrap();
    let stats = vec![doc! {"$indexStats": {}}];
    let monitor = login("monitor").await;
    let coll = monitor.database("app").collection::<Document>("c");
    assert_eq!(aggregate(&coll, stats.clone()).await.len(), 1);
    let reader = login("reader").await;
    let coll = reader.database("app").collection::<Document>("c");
    assert_eq!(aggregate_err(&coll, stats).await, Some(13));
    // The reader may still read.
    assert_eq!(aggregate(&coll, vec![]).await.len(), 1);
}
