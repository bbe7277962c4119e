//! Partial and sparse indexes through the Rust driver, as MongoDB 7.0 has them: creation with
//! the driver's own index options, mongod's refusals of filters and option mixes, entries only
//! for the documents the filter matches (kept so by inserts, updates, deletes and builds over
//! existing documents), uniqueness only among them, and the planner using a partial index only
//! for queries that imply its filter (explain's `isPartial`).

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::options::IndexOptions;
use mongodb::{Collection, Database, IndexModel};

/// The code of a write error, or of a command error.
fn write_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => {
            Some(e.code)
        }
        _ => error_code(err),
    }
}

async fn command_error(db: &Database, cmd: Document) -> (i32, String) {
    let err = db.run_command(cmd.clone()).await.unwrap_err();
    let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
        panic!("{cmd}: {err}")
    };
    (c.code, c.message.clone())
}

/// The index scan of the winning plan of `find(filter)`, if it has one.
async fn index_scan(db: &Database, coll: &str, filter: Document) -> Option<Document> {
    let reply = db
        .run_command(
            doc! {"explain": {"find": coll, "filter": filter}, "verbosity": "queryPlanner"},
        )
        .await
        .unwrap();
    let mut node = reply
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .clone();
    loop {
        if node.get_str("stage").unwrap() == "IXSCAN" {
            return Some(node);
        }
        node = node.get_document("inputStage").ok()?.clone();
    }
}

async fn ids(coll: &Collection<Document>, filter: Document) -> Vec<i32> {
    let docs: Vec<Document> = coll
        .find(filter)
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

/// How many entries `validate` counted in index `name`.
fn keys_in(validated: &Document, name: &str) -> i64 {
    match validated.get_document("keysPerIndex").unwrap().get(name) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{name}: {other:?}"),
    }
}

fn partial(keys: Document, filter: Document, unique: bool) -> IndexModel {
    IndexModel::builder()
        .keys(keys)
        .options(
            IndexOptions::builder()
                .partial_filter_expression(filter)
                .unique(unique)
                .build(),
        )
        .build()
}

#[tokio::test]
async fn a_unique_partial_index_is_unique_among_matching_documents_only() {
    let server = TestServer::start().await;
    let db = server.client().await.database("partial");
    let users = db.collection::<Document>("users");
    let created = users
        .create_index(partial(doc! {"email": 1}, doc! {"active": true}, true))
        .await
        .unwrap();
    assert_eq!(created.index_name, "email_1");
    // listIndexes shows the filter as given.
    let listed = users
        .list_indexes()
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    let options = listed[1].options.clone().unwrap();
    assert_eq!(
        options.partial_filter_expression,
        Some(doc! {"active": true})
    );
    assert_eq!(options.unique, Some(true));

    users
        .insert_many([
            doc! {"_id": 1, "email": "a@x", "active": true},
            doc! {"_id": 2, "email": "a@x", "active": false},
            doc! {"_id": 3, "email": "a@x"},
        ])
        .await
        .unwrap();
    // A second active user with the same email is a duplicate.
    let err = users
        .insert_one(doc! {"_id": 4, "email": "a@x", "active": true})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(11000), "{err}");
    // Moving an inactive one into the filter collides; moving the active one out frees the key.
    let err = users
        .update_one(doc! {"_id": 2}, doc! {"$set": {"active": true}})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(11000), "{err}");
    users
        .update_one(doc! {"_id": 1}, doc! {"$set": {"active": false}})
        .await
        .unwrap();
    users
        .update_one(doc! {"_id": 2}, doc! {"$set": {"active": true}})
        .await
        .unwrap();
    // Deleting the holder frees the key again.
    users.delete_one(doc! {"_id": 2}).await.unwrap();
    users
        .insert_one(doc! {"_id": 5, "email": "a@x", "active": true})
        .await
        .unwrap();
    assert_eq!(
        ids(&users, doc! {"email": "a@x", "active": true}).await,
        vec![5]
    );
    // The index holds exactly the one matching document: validate agrees with its entries.
    let validated = db.run_command(doc! {"validate": "users"}).await.unwrap();
    assert!(validated.get_bool("valid").unwrap(), "{validated}");
    assert_eq!(keys_in(&validated, "email_1"), 1, "{validated}");
}

#[tokio::test]
async fn the_planner_uses_a_partial_index_only_for_queries_that_imply_its_filter() {
    let server = TestServer::start().await;
    let db = server.client().await.database("partial");
    let coll = db.collection::<Document>("orders");
    coll.create_index(partial(doc! {"sku": 1}, doc! {"qty": {"$gte": 10}}, false))
        .await
        .unwrap();
    let docs: Vec<Document> = (0..40)
        .map(|i| doc! {"_id": i, "sku": i % 4, "qty": i})
        .collect();
    coll.insert_many(docs).await.unwrap();
    let cases = [
        // (filter, uses the partial index)
        (doc! {"sku": 1, "qty": {"$gte": 10}}, true),
        (doc! {"sku": 1, "qty": {"$gt": 20}}, true),
        (doc! {"sku": 1, "qty": 30}, true),
        (doc! {"sku": 1, "qty": {"$in": [13, 17]}}, true),
        (doc! {"sku": 1}, false),
        (doc! {"sku": 1, "qty": {"$gte": 5}}, false),
        (doc! {"sku": 1, "qty": {"$lt": 20}}, false),
        (doc! {"sku": 1, "qty": {"$in": [5, 17]}}, false),
    ];
    for (filter, uses) in cases {
        let scan = index_scan(&db, "orders", filter.clone()).await;
        assert_eq!(scan.is_some(), uses, "{filter}: {scan:?}");
        if let Some(scan) = scan {
            assert_eq!(scan.get_str("indexName").unwrap(), "sku_1");
            assert!(scan.get_bool("isPartial").unwrap());
        }
        // Whichever plan runs, the answer is the collection scan's.
        let expected: Vec<i32> = (0..40)
            .filter(|i| {
                mayfly::query::filter::Filter::compile(&filter)
                    .unwrap()
                    .matches(&doc! {"_id": i, "sku": i % 4, "qty": i})
                    .unwrap()
            })
            .collect();
        assert_eq!(ids(&coll, filter.clone()).await, expected, "{filter}");
    }
    // A hint cannot make the planner read a partial index that would miss documents.
    let (code, message) = command_error(
        &db,
        doc! {"find": "orders", "filter": {"sku": 1}, "hint": "sku_1"},
    )
    .await;
    assert_eq!(code, 2);
    assert!(message.ends_with("hint provided does not correspond to an existing index"));
    let hinted = db
        .run_command(
            doc! {"find": "orders", "filter": {"sku": 1, "qty": {"$gt": 30}}, "hint": "sku_1"},
        )
        .await
        .unwrap();
    let batch = hinted
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 2, "{hinted}");
}

#[tokio::test]
async fn a_partial_index_built_over_existing_documents_holds_only_the_matching_ones() {
    let server = TestServer::start().await;
    let db = server.client().await.database("partial");
    let coll = db.collection::<Document>("built");
    let docs: Vec<Document> = (0..30)
        .map(|i| doc! {"_id": i, "k": i % 3, "kind": if i % 2 == 0 { "even" } else { "odd" }})
        .collect();
    coll.insert_many(docs).await.unwrap();
    coll.create_index(partial(doc! {"k": 1}, doc! {"kind": "even"}, false))
        .await
        .unwrap();
    let validated = db.run_command(doc! {"validate": "built"}).await.unwrap();
    assert!(validated.get_bool("valid").unwrap(), "{validated}");
    assert_eq!(keys_in(&validated, "k_1"), 15, "{validated}");
    // A unique partial index over existing documents checks only the matching ones.
    coll.create_index(partial(doc! {"k": -1}, doc! {"_id": {"$lt": 3}}, true))
        .await
        .unwrap();
    let err = coll
        .create_index(partial(doc! {"kind": 1}, doc! {"_id": {"$lt": 3}}, true))
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(11000), "{err}");
    assert_eq!(
        ids(&coll, doc! {"k": 0, "kind": "even"}).await,
        vec![0, 6, 12, 18, 24]
    );
}

#[tokio::test]
async fn partial_filters_and_option_mixes_are_refused_as_mongod_refuses_them() {
    let server = TestServer::start().await;
    let db = server.client().await.database("partial");
    let create = |spec: Document| doc! {"createIndexes": "c", "indexes": [spec]};
    let cases = [
        (
            doc! {"key": {"a": 1}, "name": "p", "partialFilterExpression": {"a": {"$ne": 1}}},
            67,
            "Error in specification { key: { a: 1 }, name: \"p\", partialFilterExpression: { a: { $ne: 1 } }, v: 2 } :: caused by :: Expression not supported in partial index: $not\n    a $eq 1\n",
        ),
        (
            doc! {"key": {"a": 1}, "name": "p", "partialFilterExpression": {"a": {"$exists": false}}},
            67,
            "Error in specification { key: { a: 1 }, name: \"p\", partialFilterExpression: { a: { $exists: false } }, v: 2 } :: caused by :: Expression not supported in partial index: $not\n    a exists\n",
        ),
        (
            doc! {"key": {"a": 1}, "name": "p", "sparse": true, "partialFilterExpression": {"a": 1}},
            67,
            "Error in specification { key: { a: 1 }, name: \"p\", sparse: true, partialFilterExpression: { a: 1 }, v: 2 } :: caused by :: cannot mix \"partialFilterExpression\" and \"sparse\" options",
        ),
        (
            doc! {"key": {"a": 1}, "name": "p", "partialFilterExpression": 1},
            67,
            "Error in specification { key: { a: 1 }, name: \"p\", partialFilterExpression: 1, v: 2 } :: caused by :: \"partialFilterExpression\" for an index must be a document",
        ),
        (
            doc! {"key": {"a": 1}, "name": "p", "partialFilterExpression": {"$expr": {"$eq": ["$a", 1]}}},
            224,
            "Error in specification { key: { a: 1 }, name: \"p\", partialFilterExpression: { $expr: { $eq: [ \"$a\", 1 ] } }, v: 2 } :: caused by :: $expr is not allowed in this context",
        ),
        (
            doc! {"key": {"_id": 1}, "name": "_id_", "partialFilterExpression": {"a": 1}},
            197,
            "The field 'partialFilterExpression' is not valid for an _id index specification. Specification: { key: { _id: 1 }, name: \"_id_\", partialFilterExpression: { a: 1 } }",
        ),
        (
            doc! {"key": {"d": 1}, "name": "p", "expireAfterSeconds": 5, "partialFilterExpression": {"a": 1}},
            115,
            "a partial TTL index (partialFilterExpression with expireAfterSeconds) is not supported by mayfly",
        ),
    ];
    for (spec, code, message) in cases {
        let (got_code, got) = command_error(&db, create(spec.clone())).await;
        assert_eq!((got_code, got.as_str()), (code, message), "{spec}");
    }
    // What mongod 7.0 accepts: equality, $exists: true, ranges, $type, $in, $and and $or.
    for (i, filter) in [
        doc! {"a": {"$exists": true}},
        doc! {"a": {"$in": [1, 2]}},
        doc! {"a": {"$type": "string"}},
        doc! {"$or": [{"a": 1}, {"b": {"$gt": 2}}]},
        doc! {"$and": [{"a": {"$gte": 1}}, {"a": {"$lt": 5}}]},
        doc! {"a": null},
    ]
    .into_iter()
    .enumerate()
    {
        db.run_command(create(
            doc! {"key": {format!("f{i}"): 1}, "name": format!("p{i}"), "partialFilterExpression": filter.clone()},
        ))
        .await
        .unwrap_or_else(|e| panic!("{filter}: {e}"));
    }
}

#[tokio::test]
async fn sparse_indexes_skip_documents_without_any_key_field_and_are_not_planned_for_them() {
    let server = TestServer::start().await;
    let db = server.client().await.database("sparse");
    let coll = db.collection::<Document>("s");
    let sparse = IndexOptions::builder().sparse(true).unique(true).build();
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"a": 1, "b": 1})
            .options(sparse)
            .build(),
    )
    .await
    .unwrap();
    coll.insert_many([
        doc! {"_id": 1, "a": 1},
        doc! {"_id": 2, "b": 2},
        doc! {"_id": 3},
        doc! {"_id": 4},
        doc! {"_id": 5, "a": null},
    ])
    .await
    .unwrap();
    // Documents with neither key field are left out, so they do not collide on the unique key;
    // a document with one of them is indexed (the other keys as null) and does.
    let err = coll.insert_one(doc! {"_id": 6, "b": 2}).await.unwrap_err();
    assert_eq!(write_code(&err), Some(11000), "{err}");
    let validated = db.run_command(doc! {"validate": "s"}).await.unwrap();
    assert_eq!(keys_in(&validated, "a_1_b_1"), 3, "{validated}");
    // A query that may want a document without `a` does not read the sparse index.
    for (filter, uses) in [
        (doc! {"a": 1}, true),
        (doc! {"a": {"$gt": 0}}, true),
        (doc! {"a": null}, false),
        (doc! {"a": {"$exists": false}}, false),
        (doc! {"a": {"$ne": 1}}, false),
    ] {
        let scan = index_scan(&db, "s", filter.clone()).await;
        assert_eq!(scan.is_some(), uses, "{filter}: {scan:?}");
        if let Some(scan) = scan {
            assert!(scan.get_bool("isSparse").unwrap());
        }
    }
    assert_eq!(ids(&coll, doc! {"a": null}).await, vec![2, 3, 4, 5]);
    assert_eq!(
        ids(&coll, doc! {"a": {"$exists": false}}).await,
        vec![2, 3, 4]
    );
}

#[tokio::test]
async fn the_cosmos_profile_refuses_partial_indexes() {
    let server = TestServer::start_cosmos_7().await;
    let db = server.client().await.database("cosmos");
    let (code, message) = command_error(
        &db,
        doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "p", "unique": true, "partialFilterExpression": {"a": {"$exists": true}}}]},
    )
    .await;
    assert_eq!(code, 115);
    assert!(
        message.contains("'partialFilterExpression' is not supported"),
        "{message}"
    );
}
