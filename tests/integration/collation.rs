//! Collations as users see them, through the Rust driver: case-insensitive matching and
//! ordering at strength 2, count and distinct agreeing with find, collated indexes (used only by
//! queries with the same collation, unique under it), a collection's default collation, and
//! mongod's errors for invalid collation documents.

use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use mongodb::Database;

const CI: fn() -> Document = || doc! {"locale": "en", "strength": 2};

async fn seeded(server: &TestServer) -> Database {
    let db = server.client().await.database("collation");
    let names = [
        "apple", "Apple", "APPLE", "banana", "Banana", "cherry", "äpple",
    ];
    let docs: Vec<Document> = names
        .iter()
        .enumerate()
        .map(|(i, n)| doc! {"_id": i as i32, "name": *n})
        .collect();
    db.collection::<Document>("fruit")
        .insert_many(docs)
        .await
        .unwrap();
    db
}

async fn run(db: &Database, command: Document) -> Document {
    db.run_command(command).await.unwrap()
}

async fn find_ids(db: &Database, command: Document) -> Vec<i32> {
    let reply = run(db, command).await;
    reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
        .collect()
}

fn normalized(strength: i32) -> Document {
    doc! {
        "locale": "en", "caseLevel": false, "caseFirst": "off", "strength": strength,
        "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
        "normalization": false, "backwards": false, "version": "57.1",
    }
}

#[tokio::test]
async fn strength_two_matches_and_sorts_case_insensitively() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let find = |filter: Document, collation: Option<Document>| {
        let mut cmd = doc! {"find": "fruit", "filter": filter, "sort": {"name": 1, "_id": 1}};
        if let Some(c) = collation {
            cmd.insert("collation", c);
        }
        cmd
    };
    assert_eq!(
        find_ids(&db, find(doc! {"name": "apple"}, Some(CI()))).await,
        vec![0, 1, 2]
    );
    assert_eq!(
        find_ids(&db, find(doc! {"name": "apple"}, None)).await,
        vec![0]
    );
    assert_eq!(
        find_ids(
            &db,
            find(doc! {"name": {"$in": ["BANANA", "Cherry"]}}, Some(CI()))
        )
        .await,
        vec![3, 4, 5]
    );
    assert_eq!(
        find_ids(&db, find(doc! {"name": {"$ne": "APPLE"}}, Some(CI()))).await,
        vec![6, 3, 4, 5]
    );
    // Ranges and the sort follow the collation: "äpple" sorts with the a's, not after "z".
    assert_eq!(
        find_ids(&db, find(doc! {"name": {"$lt": "B"}}, Some(CI()))).await,
        vec![0, 1, 2, 6]
    );
    assert_eq!(
        find_ids(&db, find(doc! {}, Some(CI()))).await,
        vec![0, 1, 2, 6, 3, 4, 5]
    );
    assert_eq!(
        find_ids(&db, find(doc! {}, None)).await,
        vec![2, 1, 4, 0, 3, 5, 6]
    );
    // $regex never uses the collation.
    assert_eq!(
        find_ids(&db, find(doc! {"name": {"$regex": "^a"}}, Some(CI()))).await,
        vec![0]
    );
}

#[tokio::test]
async fn count_distinct_update_and_delete_agree_with_find() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let count = run(
        &db,
        doc! {"count": "fruit", "query": {"name": "apple"}, "collation": CI()},
    )
    .await;
    assert_eq!(count.get_i32("n").unwrap(), 3);
    let distinct = run(
        &db,
        doc! {"distinct": "fruit", "key": "name", "collation": CI()},
    )
    .await;
    assert_eq!(distinct.get_array("values").unwrap().len(), 4);
    let distinct = run(&db, doc! {"distinct": "fruit", "key": "name"}).await;
    assert_eq!(distinct.get_array("values").unwrap().len(), 7);

    let updated = run(
        &db,
        doc! {"update": "fruit", "updates": [
            {"q": {"name": "BANANA"}, "u": {"$set": {"yellow": true}}, "multi": true, "collation": CI()}
        ]},
    )
    .await;
    assert_eq!(updated.get_i32("nModified").unwrap(), 2);
    let modified = run(
        &db,
        doc! {"findAndModify": "fruit", "query": {"name": "CHERRY"}, "update": {"$set": {"red": true}}, "collation": CI()},
    )
    .await;
    assert_eq!(
        modified
            .get_document("value")
            .unwrap()
            .get_i32("_id")
            .unwrap(),
        5
    );
    let deleted = run(
        &db,
        doc! {"delete": "fruit", "deletes": [{"q": {"name": "aPPle"}, "limit": 0, "collation": CI()}]},
    )
    .await;
    assert_eq!(deleted.get_i32("n").unwrap(), 3);

    // aggregate: the leading $match and $sort run under the collation.
    let reply = run(
        &db,
        doc! {"aggregate": "fruit", "pipeline": [
            {"$match": {"name": {"$gte": "b"}}}, {"$sort": {"name": -1, "_id": 1}}
        ], "cursor": {}, "collation": CI()},
    )
    .await;
    let ids: Vec<i32> = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
        .collect();
    assert_eq!(ids, vec![5, 3, 4]);
    // Later stages compare under it too (tests/integration/aggregate_collation.rs covers each stage).
    let reply = run(
        &db,
        doc! {"aggregate": "fruit", "pipeline": [
            {"$match": {}}, {"$group": {"_id": "$name"}}
        ], "cursor": {}, "collation": CI()},
    )
    .await;
    let groups = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .len();
    // The apples were deleted above: banana, cherry and äpple remain, two bananas one group.
    assert_eq!(groups, 3);
}

#[tokio::test]
async fn a_strength_two_index_serves_only_collated_queries() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    run(
        &db,
        doc! {"createIndexes": "fruit", "indexes": [
            {"key": {"name": 1}, "name": "name_ci", "collation": CI()}
        ]},
    )
    .await;
    let listed = run(&db, doc! {"listIndexes": "fruit"}).await;
    let entry = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().clone())
        .find(|e| e.get_str("name") == Ok("name_ci"))
        .unwrap();
    assert_eq!(entry.get_document("collation").unwrap(), &normalized(2));

    let explain = |collation: Option<Document>| {
        let mut find = doc! {"find": "fruit", "filter": {"name": "APPLE"}};
        if let Some(c) = collation {
            find.insert("collation", c);
        }
        doc! {"explain": find, "verbosity": "queryPlanner"}
    };
    let plan = run(&db, explain(Some(CI()))).await;
    let winning = plan
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    let ixscan = winning.get_document("inputStage").unwrap();
    assert_eq!(ixscan.get_str("stage").unwrap(), "IXSCAN");
    assert_eq!(ixscan.get_str("indexName").unwrap(), "name_ci");
    assert_eq!(ixscan.get_document("collation").unwrap(), &normalized(2));
    let plan = run(&db, explain(None)).await;
    let winning = plan
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(winning.get_str("stage").unwrap(), "COLLSCAN");

    // Through the index, equality and ranges find the collation-equal strings.
    let ids = find_ids(
        &db,
        doc! {"find": "fruit", "filter": {"name": "APPLE"}, "sort": {"_id": 1}, "collation": CI()},
    )
    .await;
    assert_eq!(ids, vec![0, 1, 2]);
    let ids = find_ids(
        &db,
        doc! {"find": "fruit", "filter": {"name": {"$gt": "APPLE", "$lt": "C"}}, "sort": {"name": 1, "_id": 1}, "collation": CI(), "hint": "name_ci"},
    )
    .await;
    assert_eq!(ids, vec![6, 3, 4]);

    // A unique collated index treats collation-equal strings as duplicates.
    run(
        &db,
        doc! {"createIndexes": "users", "indexes": [
            {"key": {"email": 1}, "name": "email_ci", "unique": true, "collation": CI()}
        ]},
    )
    .await;
    let users = db.collection::<Document>("users");
    users
        .insert_one(doc! {"email": "Ann@Example.com"})
        .await
        .unwrap();
    let err = users
        .insert_one(doc! {"email": "ann@example.COM"})
        .await
        .unwrap_err();
    assert!(
        format!("{err}").contains("E11000"),
        "expected a duplicate key error: {err}"
    );
}

#[tokio::test]
async fn a_collection_default_collation_applies_until_overridden() {
    let server = TestServer::start().await;
    let db = server.client().await.database("collation");
    run(&db, doc! {"create": "people", "collation": CI()}).await;
    let people = db.collection::<Document>("people");
    people
        .insert_many(vec![
            doc! {"_id": 1, "name": "Zoë"},
            doc! {"_id": 2, "name": "zoe"},
            doc! {"_id": 3, "name": "ZOE"},
        ])
        .await
        .unwrap();
    run(
        &db,
        doc! {"createIndexes": "people", "indexes": [{"key": {"name": 1}, "name": "name_1"}]},
    )
    .await;

    let check = |db: Database| async move {
        let listed = run(
            &db,
            doc! {"listCollections": 1, "filter": {"name": "people"}},
        )
        .await;
        let options = listed
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()[0]
            .as_document()
            .unwrap()
            .get_document("options")
            .unwrap()
            .clone();
        assert_eq!(options.get_document("collation").unwrap(), &normalized(2));
        let indexes = run(&db, doc! {"listIndexes": "people"}).await;
        let inherited = indexes
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .iter()
            .map(|e| e.as_document().unwrap().clone())
            .find(|e| e.get_str("name") == Ok("name_1"))
            .unwrap();
        assert_eq!(inherited.get_document("collation").unwrap(), &normalized(2));
        let default = find_ids(
            &db,
            doc! {"find": "people", "filter": {"name": "Zoe"}, "sort": {"_id": 1}},
        )
        .await;
        assert_eq!(default, vec![2, 3]);
        let simple = find_ids(
            &db,
            doc! {"find": "people", "filter": {"name": "Zoe"}, "collation": {"locale": "simple"}},
        )
        .await;
        assert!(simple.is_empty());
        let count = run(&db, doc! {"count": "people", "query": {"name": "ZOË"}}).await;
        assert_eq!(count.get_i32("n").unwrap(), 1);
    };
    check(db).await;
    // The default is in the catalog: it survives a restart.
    let server = server.restart().await;
    check(server.client().await.database("collation")).await;
}

#[tokio::test]
async fn invalid_collations_get_mongods_codes() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let cases: Vec<(Document, i32)> = vec![
        (doc! {"strength": 2}, 4),
        (doc! {"locale": "xx"}, 2),
        (doc! {"locale": ""}, 2),
        (doc! {"locale": "en", "strength": 9}, 9),
        (doc! {"locale": "en", "caseFirst": "sideways"}, 9),
        (doc! {"locale": "en", "bogus": true}, 9),
        (doc! {"locale": "en", "strength": "2"}, 14),
        (doc! {"locale": "simple", "strength": 2}, 9),
        (doc! {"locale": "en", "version": "1"}, 95),
        (
            doc! {"locale": "en", "strength": 1, "caseFirst": "upper"},
            2,
        ),
        (doc! {"locale": "en", "backwards": true}, 238),
    ];
    for (collation, code) in cases {
        for command in [
            doc! {"find": "fruit", "collation": collation.clone()},
            doc! {"count": "fruit", "collation": collation.clone()},
            doc! {"create": "other", "collation": collation.clone()},
            doc! {"createIndexes": "fruit", "indexes": [
                {"key": {"x": 1}, "name": "x_1", "collation": collation.clone()}
            ]},
        ] {
            let err = db.run_command(command.clone()).await.unwrap_err();
            assert_eq!(error_code(&err), Some(code), "{command:?}: {err}");
        }
    }
    let err = db
        .run_command(doc! {"find": "fruit", "collation": "en"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(14));
    // Nothing was created by the refused requests.
    let listed = run(&db, doc! {"listIndexes": "fruit"}).await;
    assert_eq!(
        listed
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn updates_that_compare_strings_outside_their_query_are_refused_under_a_collation() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    run(&db, doc! {"create": "tags", "collation": CI()}).await;
    db.collection::<Document>("tags")
        .insert_one(doc! {"_id": 1, "t": ["x"]})
        .await
        .unwrap();
    let write_error = |reply: &Document| {
        reply.get_array("writeErrors").unwrap()[0]
            .as_document()
            .unwrap()
            .get_i32("code")
            .unwrap()
    };
    let cases = [
        // The statement's collation with array filters.
        doc! {"update": "fruit", "updates": [{
            "q": {"name": "apple"}, "u": {"$set": {"n.$[e]": 1}},
            "arrayFilters": [{"e": "x"}], "collation": CI(),
        }]},
        // The collection's default with $addToSet.
        doc! {"update": "tags", "updates": [{"q": {"_id": 1}, "u": {"$addToSet": {"t": "X"}}}]},
    ];
    for command in cases {
        let reply = run(&db, command.clone()).await;
        assert_eq!(write_error(&reply), 238, "{command:?}");
    }
    let err = db
        .run_command(
            doc! {"findAndModify": "tags", "query": {"_id": 1}, "update": {"$pull": {"t": "X"}}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(238));
    // {locale: "simple"} overrides the default: the update runs, comparing by bytes.
    let reply = run(
        &db,
        doc! {"update": "tags", "updates": [{
            "q": {"_id": 1}, "u": {"$addToSet": {"t": "X"}}, "collation": {"locale": "simple"},
        }]},
    )
    .await;
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
}

#[tokio::test]
async fn min_max_and_projection_elem_match_respect_the_collation() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    run(
        &db,
        doc! {"createIndexes": "fruit", "indexes": [
            {"key": {"name": 1}, "name": "name_ci", "collation": CI()}
        ]},
    )
    .await;
    // min/max are keys of the hinted index: its strings are compared under its collation.
    let ids = find_ids(
        &db,
        doc! {"find": "fruit", "hint": "name_ci", "min": {"name": "APPLE"}, "max": {"name": "b"}, "collation": CI()},
    )
    .await;
    assert_eq!(ids.len(), 4, "{ids:?}");
    let err = db
        .run_command(doc! {"find": "fruit", "hint": "name_ci", "min": {"name": "a"}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(51174));
    let err = db
        .run_command(doc! {"find": "fruit", "projection": {"tags": {"$elemMatch": {"$eq": "x"}}}, "collation": CI()})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(238));
}

/// A string predicate an index of another collation cannot bound must not let a count trust
/// the index's bounds alone (found by the planner's differential test).
#[tokio::test]
async fn a_count_does_not_drop_a_string_predicate_the_index_cannot_bound() {
    let server = TestServer::start().await;
    let db = server.client().await.database("collation_count");
    let coll = db.collection::<Document>("c");
    coll.insert_many((0..5).map(|i| doc! {"_id": i, "u": i * 7}))
        .await
        .unwrap();
    db.run_command(
        doc! {"createIndexes": "c", "indexes": [{"key": {"u": 1}, "name": "u_1", "unique": true}]},
    )
    .await
    .unwrap();
    let reply = db
        .run_command(doc! {
            "count": "c",
            "query": {"u": {"$in": ["a"]}, "$and": [{"u": 0}]},
            "collation": {"locale": "en", "strength": 2},
        })
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n"), Ok(0));
}
