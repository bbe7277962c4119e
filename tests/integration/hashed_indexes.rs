//! Hashed indexes through the Rust driver, as users create and query them: `{a: "hashed"}` and
//! compound hashed indexes built over existing documents and maintained by inserts, updates,
//! deletes and the reaper; equality and `$in` use them (explain shows the hashes as bounds),
//! ranges and sorts do not; arrays, `unique` and two hashed fields refused with mongod's codes.

use crate::common;

use common::bson::{doc, Bson, DateTime, Document};
use common::ttl::{advance, now, reaper};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::{Collection, Database, IndexModel};

/// Hashes from MongoDB's `hasher_test.cpp` (`BSONElementHasher::hash64(element, 0)`).
const HASH_OF_1: i64 = 5_902_408_780_260_971_510;
const HASH_OF_42: i64 = -944_302_157_085_130_861;
const HASH_OF_NULL: i64 = 2_338_878_944_348_059_895;

async fn explain(db: &Database, command: Document) -> Document {
    db.run_command(doc! {"explain": command, "verbosity": "executionStats"})
        .await
        .unwrap()
}

/// The winning plan's stages from the root down, and its IXSCAN if it has one.
fn plan(reply: &Document) -> (Vec<String>, Option<Document>) {
    let mut stages = Vec::new();
    let mut ixscan = None;
    let mut node = reply
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .ok();
    while let Some(n) = node {
        let stage = n.get_str("stage").unwrap().to_owned();
        if stage == "IXSCAN" {
            ixscan = Some(n.clone());
        }
        stages.push(stage);
        node = n.get_document("inputStage").ok();
    }
    (stages, ixscan)
}

async fn ids(coll: &Collection<Document>, filter: Document) -> Vec<Bson> {
    let mut out: Vec<Bson> = coll
        .find(filter)
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.get("_id").unwrap().clone())
        .collect();
    out.dedup();
    out
}

/// The code of a command error or of a single write's error.
fn code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => {
            Some(e.code)
        }
        _ => error_code(err),
    }
}

fn number(doc: &Document, field: &str) -> i64 {
    match doc.get(field) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{field}: {other:?} in {doc}"),
    }
}

fn point(h: i64) -> String {
    format!("[{h}, {h}]")
}

async fn valid(db: &Database) {
    let reply = db.run_command(doc! {"validate": "c"}).await.unwrap();
    assert_eq!(reply.get_bool("valid"), Ok(true), "{reply}");
}

#[tokio::test]
async fn a_hashed_index_is_built_listed_and_used_for_equality_and_in() {
    let server = TestServer::start().await;
    let db = server.client().await.database("hashed");
    let coll = db.collection::<Document>("c");
    let docs: Vec<Document> = (0..200)
        .map(|i| doc! {"_id": i, "a": i % 50, "b": format!("s{}", i % 3)})
        .collect();
    coll.insert_many(docs).await.unwrap();
    // Built over the documents already there.
    let name = coll
        .create_index(IndexModel::builder().keys(doc! {"a": "hashed"}).build())
        .await
        .unwrap()
        .index_name;
    assert_eq!(name, "a_hashed");
    let listed: Vec<Document> = coll
        .list_indexes()
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.keys)
        .collect();
    assert!(listed.contains(&doc! {"a": "hashed"}), "{listed:?}");

    // Equality: an index scan over the value's hash (mongod's bounds), then the fetch.
    let reply = explain(&db, doc! {"find": "c", "filter": {"a": 42}}).await;
    let (stages, ixscan) = plan(&reply);
    assert_eq!(stages, ["FETCH", "IXSCAN"]);
    let ixscan = ixscan.unwrap();
    assert_eq!(ixscan.get_str("indexName"), Ok("a_hashed"));
    assert_eq!(
        ixscan.get_document("keyPattern").unwrap(),
        &doc! {"a": "hashed"}
    );
    assert_eq!(
        ixscan.get_document("indexBounds").unwrap(),
        &doc! {"a": [point(HASH_OF_42)]}
    );
    let stats = reply.get_document("executionStats").unwrap();
    assert_eq!(number(stats, "nReturned"), 4);
    assert_eq!(number(stats, "totalKeysExamined"), 4);
    assert_eq!(
        ids(&coll, doc! {"a": 42}).await,
        [42, 92, 142, 192].map(Bson::from)
    );

    // `$in`: one point per distinct hash, in key order.
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": {"$in": [1, 42, 1.0]}}},
    )
    .await;
    let (stages, ixscan) = plan(&reply);
    assert_eq!(stages, ["FETCH", "IXSCAN"]);
    let mut want = vec![HASH_OF_42, HASH_OF_1];
    want.sort();
    assert_eq!(
        ixscan.unwrap().get_document("indexBounds").unwrap(),
        &doc! {"a": want.into_iter().map(point).collect::<Vec<_>>()}
    );
    assert_eq!(ids(&coll, doc! {"a": {"$in": [1, 42]}}).await.len(), 8);

    // Values that hash alike are told apart by the fetched document's filter.
    coll.insert_one(doc! {"_id": "half", "a": 42.5})
        .await
        .unwrap();
    assert_eq!(ids(&coll, doc! {"a": 42}).await.len(), 4);
    assert_eq!(
        ids(&coll, doc! {"a": 42.5}).await,
        vec![Bson::String("half".into())]
    );

    // `null` also finds documents without the field (they are keyed by null's hash).
    coll.insert_one(doc! {"_id": "none"}).await.unwrap();
    let reply = explain(&db, doc! {"find": "c", "filter": {"a": null}}).await;
    let (stages, ixscan) = plan(&reply);
    assert_eq!(stages, ["FETCH", "IXSCAN"]);
    assert_eq!(
        ixscan.unwrap().get_document("indexBounds").unwrap(),
        &doc! {"a": [point(HASH_OF_NULL)]}
    );
    assert_eq!(
        ids(&coll, doc! {"a": null}).await,
        vec![Bson::String("none".into())]
    );
}

#[tokio::test]
async fn ranges_and_sorts_on_a_hashed_field_do_not_use_it() {
    let server = TestServer::start().await;
    let db = server.client().await.database("hashed");
    let coll = db.collection::<Document>("c");
    coll.insert_many((0..50).map(|i| doc! {"_id": i, "a": i}))
        .await
        .unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"a": "hashed"}).build())
        .await
        .unwrap();
    let reply = explain(&db, doc! {"find": "c", "filter": {"a": {"$gt": 45}}}).await;
    assert_eq!(plan(&reply).0, ["COLLSCAN"]);
    assert_eq!(
        ids(&coll, doc! {"a": {"$gt": 45}}).await,
        [46, 47, 48, 49].map(Bson::from)
    );
    let reply = explain(&db, doc! {"find": "c", "filter": {}, "sort": {"a": 1}}).await;
    assert_eq!(plan(&reply).0, ["SORT", "COLLSCAN"]);
    // Hinted, the scan covers every hash and the documents still come back in order.
    let sorted: Vec<i32> = coll
        .find(doc! {"a": {"$lt": 3}})
        .sort(doc! {"a": -1})
        .hint(mongodb::options::Hint::Keys(doc! {"a": "hashed"}))
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("a").unwrap())
        .collect();
    assert_eq!(sorted, [2, 1, 0]);
}

#[tokio::test]
async fn compound_hashed_indexes_with_the_hashed_field_first_or_not() {
    let server = TestServer::start().await;
    let db = server.client().await.database("hashed");
    let coll = db.collection::<Document>("c");
    coll.insert_many((0..100).map(|i| doc! {"_id": i, "a": i % 10, "b": i % 4}))
        .await
        .unwrap();
    for keys in [doc! {"a": "hashed", "b": 1}, doc! {"b": 1, "a": "hashed"}] {
        coll.create_index(IndexModel::builder().keys(keys).build())
            .await
            .unwrap();
    }
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 1, "b": 1}, "hint": {"a": "hashed", "b": 1}},
    )
    .await;
    let (_, ixscan) = plan(&reply);
    assert_eq!(
        ixscan.unwrap().get_document("indexBounds").unwrap(),
        &doc! {"a": [point(HASH_OF_1)], "b": ["[1, 1]"]}
    );
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 1, "b": {"$gte": 2}}, "hint": {"b": 1, "a": "hashed"}},
    )
    .await;
    let (_, ixscan) = plan(&reply);
    assert_eq!(
        ixscan.unwrap().get_document("indexBounds").unwrap(),
        &doc! {"b": ["[2, inf.0]"], "a": ["[MinKey, MaxKey]"]}
    );
    for filter in [doc! {"a": 1, "b": 1}, doc! {"a": 1, "b": {"$gte": 2}}] {
        for hint in [doc! {"a": "hashed", "b": 1}, doc! {"b": 1, "a": "hashed"}] {
            let found: Vec<Document> = coll
                .find(filter.clone())
                .hint(mongodb::options::Hint::Keys(hint))
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            let want = (0..100)
                .filter(|i| {
                    i % 10 == 1
                        && if filter.get_i32("b").is_ok() {
                            i % 4 == 1
                        } else {
                            i % 4 >= 2
                        }
                })
                .count();
            assert_eq!(found.len(), want, "{filter}");
        }
    }
}

#[tokio::test]
async fn writes_keep_the_index_and_arrays_are_refused() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("hashed");
    let coll = db.collection::<Document>("c");
    coll.create_index(IndexModel::builder().keys(doc! {"a.b": "hashed"}).build())
        .await
        .unwrap();
    coll.insert_many([
        doc! {"_id": 1, "a": {"b": 1}},
        doc! {"_id": 2, "a": {"b": 2}},
        doc! {"_id": 3, "a": {"b": 1}},
    ])
    .await
    .unwrap();

    // mongod's 16766, for an array at the end of the path or along it.
    for bad in [
        doc! {"_id": 4, "a": {"b": [1, 2]}},
        doc! {"_id": 4, "a": [{"b": 1}]},
    ] {
        let err = coll.insert_one(bad.clone()).await.unwrap_err();
        assert_eq!(code(&err), Some(16766), "{bad}");
        assert!(
            err.to_string()
                .contains("hashed indexes do not currently support array values"),
            "{err}"
        );
    }
    let err = coll
        .update_one(doc! {"_id": 2}, doc! {"$set": {"a.b": [2]}})
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some(16766));

    coll.update_one(doc! {"_id": 2}, doc! {"$set": {"a.b": 1}})
        .await
        .unwrap();
    coll.delete_one(doc! {"_id": 3}).await.unwrap();
    assert_eq!(ids(&coll, doc! {"a.b": 1}).await, [1, 2].map(Bson::from));
    assert!(ids(&coll, doc! {"a.b": 2}).await.is_empty());
    valid(&db).await;

    // An index build over a document with an array fails as mongod's does.
    let other = db.collection::<Document>("arrays");
    other.insert_one(doc! {"x": [1]}).await.unwrap();
    let err = other
        .create_index(IndexModel::builder().keys(doc! {"x": "hashed"}).build())
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(16766));
}

#[tokio::test]
async fn the_reaper_removes_expired_documents_from_a_hashed_index() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("hashed");
    let coll = db.collection::<Document>("c");
    db.run_command(doc! {
        "createIndexes": "c",
        "indexes": [
            {"key": {"at": 1}, "name": "at_ttl", "expireAfterSeconds": 0},
            {"key": {"a": "hashed"}, "name": "a_hashed"},
        ],
    })
    .await
    .unwrap();
    let t = now(&client).await;
    coll.insert_many((0..20).map(|i| {
        doc! {"_id": i, "a": i % 2, "at": DateTime::from_millis((t + 5 + i64::from(i % 2) * 1000) * 1000)}
    }))
    .await
    .unwrap();
    advance(&client, 10).await;
    assert_eq!(reaper(&client, "runOnce").await.get_i64("reaped"), Ok(10));
    // The reaped documents' entries are gone with them: the index agrees with the documents.
    valid(&db).await;
    assert_eq!(ids(&coll, doc! {"a": 0}).await.len(), 0);
    assert_eq!(ids(&coll, doc! {"a": 1}).await.len(), 10);
}

#[tokio::test]
async fn unique_and_two_hashed_fields_are_refused() {
    let server = TestServer::start().await;
    let db = server.client().await.database("hashed");
    let cases = [
        (
            doc! {"key": {"a": "hashed"}, "name": "u", "unique": true},
            16764,
            "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.",
        ),
        (
            doc! {"key": {"a": "hashed", "b": "hashed"}, "name": "two"},
            31303,
            "A maximum of one index field is allowed to be hashed but found 2 for 'key' { a: \"hashed\", b: \"hashed\" }",
        ),
        (
            doc! {"key": {"a": "hash"}, "name": "typo"},
            67,
            "Unknown index plugin 'hash'",
        ),
    ];
    for (spec, code, message) in cases {
        let err = db
            .run_command(doc! {"createIndexes": "c", "indexes": [spec.clone()]})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{spec}");
        assert!(err.to_string().contains(message), "{spec}: {err}");
    }
    // `{_id: "hashed"}` is an ordinary secondary index, as on mongod.
    db.collection::<Document>("c")
        .create_index(IndexModel::builder().keys(doc! {"_id": "hashed"}).build())
        .await
        .unwrap();
}
