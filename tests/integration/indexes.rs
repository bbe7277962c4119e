//! Index commands (createIndexes, listIndexes, dropIndexes) through the Rust driver, including
//! the TTL index on `_ts` (TTL-1 … TTL-9).

use crate::common;

use common::bson::{doc, Bson, Document};
use common::ttl::{advance, reaper, visible};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};
use std::time::Duration;

async fn fails_with(db: &Database, cmd: Document) -> (i32, String) {
    let err = db.run_command(cmd.clone()).await.unwrap_err();
    let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
        panic!("{cmd}: {err}")
    };
    (c.code, c.message.clone())
}

async fn index_entries(db: &Database, coll: &str) -> Vec<Document> {
    let reply = db.run_command(doc! {"listIndexes": coll}).await.unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(
        cursor.get_str("ns").unwrap(),
        format!("{}.{coll}", db.name())
    );
    cursor
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().clone())
        .collect()
}

async fn collection_exists(db: &Database, name: &str) -> bool {
    db.list_collection_names()
        .await
        .unwrap()
        .iter()
        .any(|n| n == name)
}

fn create(coll: &str, index: Document) -> Document {
    doc! {"createIndexes": coll, "indexes": [index]}
}

#[tokio::test]
async fn create_index_reports_counts_and_creates_the_collection() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    let reply = db
        .run_command(create("c", doc! {"key": {"a": 1}, "name": "a_1"}))
        .await
        .unwrap();
    assert_eq!(
        reply,
        doc! {"createdCollectionAutomatically": true, "numIndexesBefore": 1, "numIndexesAfter": 2, "ok": 1.0}
    );
    let reply = db
        .run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"b": 1, "c": -1}}, {"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    assert!(!reply.get_bool("createdCollectionAutomatically").unwrap());
    assert_eq!(
        (
            reply.get_i32("numIndexesBefore").unwrap(),
            reply.get_i32("numIndexesAfter").unwrap()
        ),
        (2, 3)
    );
    let again = db
        .run_command(create("c", doc! {"key": {"a": 1}, "name": "a_1"}))
        .await
        .unwrap();
    assert_eq!(again.get_str("note").unwrap(), "all indexes already exist");
    assert_eq!(again.get_i32("numIndexesAfter").unwrap(), 3);
    // The name is generated when absent; `_id_` always comes first.
    let coll = db.collection::<Document>("c");
    assert_eq!(
        coll.list_index_names().await.unwrap(),
        vec!["_id_", "a_1", "b_1_c_-1"]
    );
    assert_eq!(
        index_entries(&db, "c").await[0],
        doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    );
}

#[tokio::test]
async fn the_drivers_index_helpers_work() {
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("test")
        .collection::<Document>("c");
    let options = IndexOptions::builder().unique(true).sparse(true).build();
    let created = coll
        .create_index(
            IndexModel::builder()
                .keys(doc! {"email": 1})
                .options(options)
                .build(),
        )
        .await
        .unwrap();
    assert_eq!(created.index_name, "email_1");
    coll.create_indexes(vec![
        IndexModel::builder().keys(doc! {"x": 1}).build(),
        IndexModel::builder().keys(doc! {"y": -1}).build(),
    ])
    .await
    .unwrap();
    let models: Vec<IndexModel> = coll
        .list_indexes()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(models.len(), 4);
    let email = models.iter().find(|m| m.keys == doc! {"email": 1}).unwrap();
    let opts = email.options.as_ref().unwrap();
    assert_eq!((opts.unique, opts.sparse), (Some(true), Some(true)));
    coll.drop_index("x_1").await.unwrap();
    assert_eq!(
        coll.list_index_names().await.unwrap(),
        vec!["_id_", "email_1", "y_-1"]
    );
    coll.drop_indexes().await.unwrap();
    assert_eq!(coll.list_index_names().await.unwrap(), vec!["_id_"]);
}

#[tokio::test]
async fn a_unique_index_refuses_duplicates() {
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("test")
        .collection::<Document>("users");
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"email": 1})
            .options(IndexOptions::builder().unique(true).build())
            .build(),
    )
    .await
    .unwrap();
    coll.insert_one(doc! {"email": "a@b.c"}).await.unwrap();
    let err = coll.insert_one(doc! {"email": "a@b.c"}).await.unwrap_err();
    let mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) =
        err.kind.as_ref()
    else {
        panic!("{err}")
    };
    assert_eq!(e.code, 11000);
    assert!(
        e.message.contains("index: email_1 dup key"),
        "{}",
        e.message
    );
    // The driver keeps only code and message; the raw reply carries keyPattern and keyValue.
    let reply = server
        .client()
        .await
        .database("test")
        .run_command(doc! {"insert": "users", "documents": [{"email": "a@b.c"}]})
        .await
        .unwrap();
    let entry = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(entry.get_i32("code").unwrap(), 11000);
    assert_eq!(
        entry.get_document("keyPattern").unwrap(),
        &doc! {"email": 1}
    );
    assert_eq!(
        entry.get_document("keyValue").unwrap(),
        &doc! {"email": "a@b.c"}
    );
}

#[tokio::test]
async fn a_unique_index_build_fails_on_existing_duplicates_and_leaves_nothing() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    let coll = db.collection::<Document>("c");
    coll.insert_many(vec![
        doc! {"_id": 1, "a": 1, "b": 10},
        doc! {"_id": 2, "a": 2, "b": 20},
        doc! {"_id": 3, "a": 1, "b": 30},
    ])
    .await
    .unwrap();
    // The first index of the request builds, the second fails: neither stays.
    let (code, message) = fails_with(
        &db,
        doc! {"createIndexes": "c", "indexes": [
            {"key": {"b": 1}, "name": "b_1"},
            {"key": {"a": 1}, "name": "a_1", "unique": true},
        ]},
    )
    .await;
    assert_eq!(code, 11000);
    assert!(message.contains("dup key: { a: 1 }"), "{message}");
    assert_eq!(coll.list_index_names().await.unwrap(), vec!["_id_"]);
    // A later index starts clean: no entry of the failed builds remains to be mistaken for one
    // of its own (here `a: 1` of document 1 would read as `b: 1`).
    db.run_command(create(
        "c",
        doc! {"key": {"b": 1}, "name": "b_unique", "unique": true},
    ))
    .await
    .unwrap();
    coll.insert_one(doc! {"_id": 4, "a": 9, "b": 1})
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 5, "a": 9, "b": 2})
        .await
        .unwrap();
    let err = coll.insert_one(doc! {"_id": 6, "b": 1}).await.unwrap_err();
    assert!(
        matches!(err.kind.as_ref(), mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) if e.code == 11000),
        "{err}"
    );
}

#[tokio::test]
async fn conflicts_and_invalid_specs_get_mongods_codes() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    db.run_command(create("c", doc! {"key": {"a": 1}, "name": "a_1"}))
        .await
        .unwrap();
    let cases: Vec<(Document, i32)> = vec![
        // Same key, another name.
        (doc! {"key": {"a": 1}, "name": "other"}, 85),
        // Same name and key, other options.
        (doc! {"key": {"a": 1}, "name": "a_1", "unique": true}, 85),
        // Same name, another key.
        (doc! {"key": {"b": 1}, "name": "a_1"}, 86),
        (doc! {"key": {"_id": 1}, "name": "id"}, 85),
        (doc! {"key": {"b": 1}, "name": ""}, 67),
        (doc! {"key": {}, "name": "e"}, 67),
        (doc! {"key": {"b": 0}, "name": "z"}, 67),
        (doc! {"key": {"b": true}, "name": "z"}, 67),
        (doc! {"key": {"b": "nonsense"}, "name": "z"}, 67),
        (doc! {"key": {"$b": 1}, "name": "z"}, 67),
        (doc! {"key": {"b": 1}, "name": "*"}, 67),
        (doc! {"key": {"b": 1}, "name": "_id_"}, 2),
        (doc! {"key": {"b": 1}, "name": "z", "bogus": 1}, 197),
        (doc! {"key": {"b": "text"}, "name": "t"}, 115),
        (doc! {"key": {"b": "2dsphere"}, "name": "t"}, 115),
        (
            doc! {"key": {"b": "hashed"}, "name": "t", "unique": true},
            16764,
        ),
        (
            doc! {"key": {"b": "hashed", "c": "hashed"}, "name": "t"},
            31303,
        ),
        (doc! {"key": {"$**": 1}, "name": "t"}, 115),
        (
            doc! {"key": {"b": 1}, "name": "p", "partialFilterExpression": {"b": {"$ne": 1}}},
            67,
        ),
    ];
    for (spec, code) in cases {
        let (got, message) = fails_with(&db, create("c", spec.clone())).await;
        assert_eq!(got, code, "{spec}: {message}");
    }
    let (_, message) = fails_with(&db, create("c", doc! {"key": {"a": 1}, "name": "other"})).await;
    assert_eq!(message, "Index already exists with a different name: a_1");
    let (code, _) = fails_with(&db, doc! {"createIndexes": "c", "indexes": []}).await;
    assert_eq!(code, 2);
    let (code, _) = fails_with(&db, doc! {"createIndexes": "c"}).await;
    assert_eq!(code, 40414);
    let coll = db.collection::<Document>("c");
    assert_eq!(
        coll.list_index_names().await.unwrap(),
        vec!["_id_", "a_1"],
        "nothing was created"
    );
    // A failing request on a missing collection does not create it.
    fails_with(
        &db,
        create("fresh", doc! {"key": {"b": "text"}, "name": "t"}),
    )
    .await;
    assert!(!collection_exists(&db, "fresh").await);
}

#[tokio::test]
async fn list_indexes_of_a_missing_collection_is_26() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    let (code, message) = fails_with(&db, doc! {"listIndexes": "missing"}).await;
    assert_eq!(
        (code, message.as_str()),
        (26, "ns does not exist: test.missing")
    );
}

#[tokio::test]
async fn list_indexes_batches_through_get_more() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    for field in ["a", "b", "c"] {
        db.run_command(create(
            "c",
            doc! {"key": {field: 1}, "name": format!("{field}_1")},
        ))
        .await
        .unwrap();
    }
    let reply = db
        .run_command(doc! {"listIndexes": "c", "cursor": {"batchSize": 2}})
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_array("firstBatch").unwrap().len(), 2);
    let id = cursor.get_i64("id").unwrap();
    let more = db
        .run_command(doc! {"getMore": id, "collection": "c"})
        .await
        .unwrap();
    let more = more.get_document("cursor").unwrap();
    assert_eq!(more.get_array("nextBatch").unwrap().len(), 2);
    assert_eq!(more.get_i64("id").unwrap(), 0);
}

#[tokio::test]
async fn drop_indexes_by_name_key_list_and_star() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    for field in ["a", "b", "c", "d"] {
        db.run_command(create(
            "c",
            doc! {"key": {field: 1}, "name": format!("{field}_1")},
        ))
        .await
        .unwrap();
    }
    let reply = db
        .run_command(doc! {"dropIndexes": "c", "index": "a_1"})
        .await
        .unwrap();
    assert_eq!(reply, doc! {"nIndexesWas": 5, "ok": 1.0});
    let reply = db
        .run_command(doc! {"dropIndexes": "c", "index": {"b": 1}})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nIndexesWas").unwrap(), 4);
    let (code, message) = fails_with(&db, doc! {"dropIndexes": "c", "index": "nope"}).await;
    assert_eq!(
        (code, message.as_str()),
        (27, "index not found with name [nope]")
    );
    let (code, message) = fails_with(&db, doc! {"dropIndexes": "c", "index": {"z": 1}}).await;
    assert_eq!(
        (code, message.as_str()),
        (27, "can't find index with key: { z: 1 }")
    );
    let (code, message) = fails_with(&db, doc! {"dropIndexes": "c", "index": "_id_"}).await;
    assert_eq!((code, message.as_str()), (72, "cannot drop _id index"));
    let (code, _) = fails_with(&db, doc! {"dropIndexes": "c", "index": {"_id": 1}}).await;
    assert_eq!(code, 72);
    // A list is all or nothing.
    let (code, _) = fails_with(&db, doc! {"dropIndexes": "c", "index": ["c_1", "nope"]}).await;
    assert_eq!(code, 27);
    let reply = db
        .run_command(doc! {"dropIndexes": "c", "index": ["c_1", "d_1"]})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nIndexesWas").unwrap(), 3);
    db.run_command(create("c", doc! {"key": {"e": 1}, "name": "e_1"}))
        .await
        .unwrap();
    let reply = db
        .run_command(doc! {"dropIndexes": "c", "index": "*"})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nIndexesWas").unwrap(), 2);
    assert_eq!(index_entries(&db, "c").await.len(), 1);
    let (code, _) = fails_with(&db, doc! {"dropIndexes": "missing", "index": "*"}).await;
    assert_eq!(code, 26);
}

// ---------------------------------------------------------------------------------------------
// The TTL index on `_ts`

#[tokio::test]
async fn ttl_index_values_are_validated_and_listed_as_int32() {
    // TTL-2, TTL-3, TTL-8.
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    let accepted: Vec<(Bson, i32)> = vec![
        (Bson::Int32(10), 10),
        (Bson::Int64(20), 20),
        (Bson::Double(30.0), 30),
        (Bson::Decimal128("40".parse().unwrap()), 40),
        (Bson::Int32(-1), -1),
        (Bson::Int64(2147483647), 2147483647),
    ];
    for (i, (value, stored)) in accepted.into_iter().enumerate() {
        let coll = format!("ok{i}");
        db.run_command(create(
            &coll,
            doc! {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": value.clone()},
        ))
        .await
        .unwrap_or_else(|e| panic!("{value}: {e}"));
        let entries = index_entries(&db, &coll).await;
        assert_eq!(
            entries[1],
            doc! {"v": 2, "key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": Bson::Int32(stored)},
            "{value}"
        );
    }
    let refused = vec![
        Bson::Int32(0),
        Bson::Int32(-2),
        Bson::Int64(2147483648),
        Bson::Double(10.5),
        Bson::Double(f64::NAN),
        Bson::String("10".into()),
        Bson::Null,
    ];
    for value in refused {
        let (code, _) = fails_with(
            &db,
            create(
                "bad",
                doc! {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": value.clone()},
            ),
        )
        .await;
        assert_eq!(code, 67, "{value}");
    }
    assert!(!collection_exists(&db, "bad").await);
}

#[tokio::test]
async fn expire_after_seconds_on_any_other_key_is_bad_value() {
    // TTL-4 (the Cosmos profile): the key pattern is checked before the value.
    let server = TestServer::start_cosmos(mayfly::profile::Profile::cosmos(
        mayfly::profile::CosmosVersion::V7_0,
    ))
    .await;
    let db = server.client().await.database("test");
    for key in [
        doc! {"a": 1},
        doc! {"_ts": 1, "a": 1},
        doc! {"_id": 1},
        doc! {"ts": 1},
    ] {
        for value in [Bson::Int32(10), Bson::String("nonsense".into())] {
            let (code, message) = fails_with(
                &db,
                create(
                    "c",
                    doc! {"key": key.clone(), "name": "x", "expireAfterSeconds": value},
                ),
            )
            .await;
            assert_eq!(code, 2, "{key}");
            assert_eq!(
                message,
                "The 'expireAfterSeconds' option is supported on '_ts' field only."
            );
        }
    }
}

#[tokio::test]
async fn the_rust_drivers_expire_after_sends_int64_and_is_listed_as_int32() {
    // TTL-1, TTL-2, TTL-8 through `IndexOptions::expire_after`.
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    let coll = db.collection::<Document>("c");
    let options = IndexOptions::builder()
        .expire_after(Duration::from_secs(3600))
        .build();
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"_ts": -1})
            .options(options)
            .build(),
    )
    .await
    .unwrap();
    let entries = index_entries(&db, "c").await;
    assert_eq!(
        entries[1].get("expireAfterSeconds"),
        Some(&Bson::Int32(3600))
    );
    assert_eq!(entries[1].get_str("name").unwrap(), "_ts_-1");
    let models: Vec<IndexModel> = coll
        .list_indexes()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let ttl = models[1].options.as_ref().unwrap().expire_after;
    assert_eq!(ttl, Some(Duration::from_secs(3600)));
}

#[tokio::test]
async fn the_same_ttl_index_again_is_a_no_op_and_another_value_conflicts() {
    // TTL-6.
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    let ttl_index = |v: i32| {
        create(
            "c",
            doc! {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": v},
        )
    };
    let first = db.run_command(ttl_index(10)).await.unwrap();
    assert!(
        first.get_bool("createdCollectionAutomatically").unwrap(),
        "TTL-1"
    );
    let again = db.run_command(ttl_index(10)).await.unwrap();
    assert_eq!(
        again.get_i32("numIndexesBefore").unwrap(),
        again.get_i32("numIndexesAfter").unwrap()
    );
    let (code, _) = fails_with(&db, ttl_index(20)).await;
    assert_eq!(code, 85);
    // Another TTL index on `_ts` (the other direction) would be a second collection TTL.
    let (code, _) = fails_with(
        &db,
        create(
            "c",
            doc! {"key": {"_ts": -1}, "name": "_ts_-1", "expireAfterSeconds": 5},
        ),
    )
    .await;
    assert_eq!(code, 85);
    assert_eq!(
        index_entries(&db, "c").await[1].get("expireAfterSeconds"),
        Some(&Bson::Int32(10))
    );
}

#[tokio::test]
async fn the_ttl_index_turns_expiry_on_and_dropping_it_turns_it_off() {
    // TTL-1, TTL-5, TTL-9.
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("test");
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    // TTL-5: `{_ts: 1}` without expireAfterSeconds is an ordinary index; nothing expires.
    db.run_command(create("c", doc! {"key": {"_ts": 1}, "name": "_ts_plain"}))
        .await
        .unwrap();
    advance(&client, 100).await;
    assert!(visible(&coll, 1).await);
    db.run_command(doc! {"dropIndexes": "c", "index": "_ts_plain"})
        .await
        .unwrap();

    db.run_command(create(
        "c",
        doc! {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 10},
    ))
    .await
    .unwrap();
    assert!(
        !visible(&coll, 1).await,
        "TTL-1: written 100 s ago, lifetime 10 s"
    );
    // TTL-9 by key pattern: the expired, unreaped document is visible again.
    db.run_command(doc! {"dropIndexes": "c", "index": {"_ts": 1}})
        .await
        .unwrap();
    assert!(visible(&coll, 1).await);
    // TTL-9 by "*".
    db.run_command(create(
        "c",
        doc! {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 10},
    ))
    .await
    .unwrap();
    assert!(!visible(&coll, 1).await);
    db.run_command(doc! {"dropIndexes": "c", "index": "*"})
        .await
        .unwrap();
    assert!(visible(&coll, 1).await);
    let err = coll.drop_index("_ts_1").await.unwrap_err();
    assert_eq!(error_code(&err), Some(27));
}
