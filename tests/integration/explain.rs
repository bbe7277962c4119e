//! The planner as users see it, through the Rust driver: explain's plans (IXSCAN, COLLSCAN,
//! IDHACK, SORT only when no index provides the order, rejected candidates), its counters, and
//! `hint` by name, key pattern and `$natural`.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::{Database, IndexModel};

async fn seeded(server: &TestServer) -> Database {
    let db = server.client().await.database("explain");
    let coll = db.collection::<Document>("c");
    let docs: Vec<Document> = (0..1000)
        .map(|i| doc! {"_id": i, "a": i % 100, "b": i % 7, "s": format!("k{i:04}")})
        .collect();
    coll.insert_many(docs).await.unwrap();
    db
}

async fn create_index(db: &Database, keys: Document) {
    db.collection::<Document>("c")
        .create_index(IndexModel::builder().keys(keys).build())
        .await
        .unwrap();
}

async fn explain(db: &Database, command: Document, verbosity: &str) -> Document {
    db.run_command(doc! {"explain": command, "verbosity": verbosity})
        .await
        .unwrap()
}

/// The stage names from the root down, following `inputStage`.
fn stages(plan: &Document) -> Vec<String> {
    let mut out = Vec::new();
    let mut node = Some(plan);
    while let Some(n) = node {
        out.push(n.get_str("stage").unwrap().to_owned());
        node = n.get_document("inputStage").ok();
    }
    out
}

fn winning(reply: &Document) -> &Document {
    reply
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
}

fn stats(reply: &Document) -> &Document {
    reply.get_document("executionStats").unwrap()
}

fn number(doc: &Document, field: &str) -> i64 {
    match doc.get(field) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{field}: {other:?} in {doc}"),
    }
}

#[tokio::test]
async fn an_indexed_equality_is_an_index_scan_that_examines_only_what_it_returns() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    create_index(&db, doc! {"a": 1}).await;
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 42}},
        "executionStats",
    )
    .await;
    assert_eq!(stages(winning(&reply)), ["FETCH", "IXSCAN"]);
    let ixscan = winning(&reply).get_document("inputStage").unwrap();
    assert_eq!(ixscan.get_str("indexName").unwrap(), "a_1");
    assert_eq!(ixscan.get_document("keyPattern").unwrap(), &doc! {"a": 1});
    assert_eq!(
        ixscan.get_document("indexBounds").unwrap(),
        &doc! {"a": ["[42, 42]"]}
    );
    assert_eq!(ixscan.get_str("direction").unwrap(), "forward");
    let s = stats(&reply);
    assert_eq!(number(s, "nReturned"), 10);
    assert_eq!(number(s, "totalDocsExamined"), 10);
    assert_eq!(number(s, "totalKeysExamined"), 10);
    assert_eq!(
        stages(s.get_document("executionStages").unwrap()),
        ["FETCH", "IXSCAN"]
    );
}

#[tokio::test]
async fn a_projection_is_a_stage_above_the_plan() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    create_index(&db, doc! {"a": 1}).await;
    let simple = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 1}, "projection": {"b": 1}},
        "executionStats",
    )
    .await;
    assert_eq!(
        stages(winning(&simple)),
        ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    );
    assert_eq!(
        winning(&simple).get_document("transformBy").unwrap(),
        &doc! {"b": 1}
    );
    assert_eq!(number(stats(&simple), "nReturned"), 10);
    let nested = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 1}, "projection": {"x.y": 1}},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&nested))[0], "PROJECTION_DEFAULT");
}

#[tokio::test]
async fn without_an_index_the_plan_is_a_collection_scan() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 42}},
        "executionStats",
    )
    .await;
    assert_eq!(stages(winning(&reply)), ["COLLSCAN"]);
    assert_eq!(
        winning(&reply).get_document("filter").unwrap(),
        &doc! {"a": 42}
    );
    assert_eq!(number(stats(&reply), "nReturned"), 10);
    assert_eq!(number(stats(&reply), "totalDocsExamined"), 1000);
    assert_eq!(number(stats(&reply), "totalKeysExamined"), 0);
}

#[tokio::test]
async fn an_id_lookup_is_idhack() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"_id": 7}},
        "executionStats",
    )
    .await;
    assert_eq!(stages(winning(&reply)), ["IDHACK"]);
    assert_eq!(number(stats(&reply), "nReturned"), 1);
    assert_eq!(number(stats(&reply), "totalDocsExamined"), 1);
}

#[tokio::test]
async fn a_sort_stage_appears_only_when_no_index_provides_the_order() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let unindexed = explain(
        &db,
        doc! {"find": "c", "filter": {}, "sort": {"a": -1}, "limit": 5},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&unindexed)), ["LIMIT", "SORT", "COLLSCAN"]);

    create_index(&db, doc! {"a": 1}).await;
    let indexed = explain(
        &db,
        doc! {"find": "c", "filter": {}, "sort": {"a": -1}, "limit": 5},
        "executionStats",
    )
    .await;
    assert_eq!(stages(winning(&indexed)), ["LIMIT", "FETCH", "IXSCAN"]);
    let ixscan = winning(&indexed)
        .get_document("inputStage")
        .unwrap()
        .get_document("inputStage")
        .unwrap();
    assert_eq!(ixscan.get_str("direction").unwrap(), "backward");
    // Sort and limit through the index read only `limit` entries.
    assert_eq!(number(stats(&indexed), "totalKeysExamined"), 5);
    let found: Vec<Document> = db
        .collection::<Document>("c")
        .find(doc! {})
        .sort(doc! {"a": -1})
        .limit(5)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(found.iter().all(|d| d.get_i32("a").unwrap() == 99));

    // A range on the sort field keeps the index order; `_id` sorts by the documents themselves.
    let ranged = explain(
        &db,
        doc! {"find": "c", "filter": {"a": {"$gte": 10, "$lt": 20}}, "sort": {"a": 1}},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&ranged)), ["FETCH", "IXSCAN"]);
    let by_id = explain(
        &db,
        doc! {"find": "c", "filter": {}, "sort": {"_id": -1}, "limit": 1},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&by_id)), ["LIMIT", "FETCH", "IXSCAN"]);
}

#[tokio::test]
async fn competing_indexes_race_and_the_losers_are_rejected_plans() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    create_index(&db, doc! {"a": 1}).await;
    create_index(&db, doc! {"b": 1}).await;
    // `a: 5` selects 10 documents, `b: 5` about 143: the index on `a` wins.
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 5, "b": 5}},
        "allPlansExecution",
    )
    .await;
    let planner = reply.get_document("queryPlanner").unwrap();
    let winner = winning(&reply).get_document("inputStage").unwrap();
    assert_eq!(winner.get_str("indexName").unwrap(), "a_1");
    let rejected = planner.get_array("rejectedPlans").unwrap();
    assert_eq!(rejected.len(), 1);
    let loser = rejected[0].as_document().unwrap();
    assert_eq!(
        loser
            .get_document("inputStage")
            .unwrap()
            .get_str("indexName")
            .unwrap(),
        "b_1"
    );
    let all = stats(&reply).get_array("allPlansExecution").unwrap();
    assert_eq!(all.len(), 2);
    let found = db
        .collection::<Document>("c")
        .count_documents(doc! {"a": 5, "b": 5})
        .await
        .unwrap();
    assert_eq!(
        found,
        (0..1000).filter(|i| i % 100 == 5 && i % 7 == 5).count() as u64
    );
}

#[tokio::test]
async fn an_or_of_indexed_branches_is_a_union_of_index_scans() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    create_index(&db, doc! {"a": 1}).await;
    create_index(&db, doc! {"s": 1}).await;
    let filter = doc! {"$or": [{"a": 3}, {"s": {"$regex": "^k000"}}, {"_id": {"$in": [3, 103]}}]};
    let reply = explain(
        &db,
        doc! {"find": "c", "filter": filter.clone()},
        "executionStats",
    )
    .await;
    let or = winning(&reply);
    assert_eq!(or.get_str("stage").unwrap(), "OR");
    let names: Vec<&str> = or
        .get_array("inputStages")
        .unwrap()
        .iter()
        .map(|s| {
            s.as_document()
                .unwrap()
                .get_document("inputStage")
                .unwrap()
                .get_str("indexName")
                .unwrap()
        })
        .collect();
    assert_eq!(names, ["a_1", "s_1", "_id_"]);
    // `a: 3` and `_id in [3, 103]` overlap: each document once.
    let expected = (0..1000)
        .filter(|i| i % 100 == 3 || *i < 10 || [3, 103].contains(i))
        .count() as i64;
    assert_eq!(number(stats(&reply), "nReturned"), expected);
    let counted = db
        .collection::<Document>("c")
        .count_documents(filter)
        .await
        .unwrap();
    assert_eq!(counted as i64, expected);
    // A branch no index serves leaves a collection scan.
    let unindexed = explain(
        &db,
        doc! {"find": "c", "filter": {"$or": [{"a": 3}, {"b": 2}]}},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&unindexed)), ["COLLSCAN"]);
}

#[tokio::test]
async fn hints_choose_the_index_by_name_key_or_natural_order() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    create_index(&db, doc! {"a": 1}).await;
    create_index(&db, doc! {"b": 1, "a": 1}).await;
    let by_name = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 5}, "hint": "b_1_a_1"},
        "queryPlanner",
    )
    .await;
    let ixscan = winning(&by_name).get_document("inputStage").unwrap();
    assert_eq!(ixscan.get_str("indexName").unwrap(), "b_1_a_1");
    let by_key = explain(
        &db,
        doc! {"find": "c", "filter": {"b": 2}, "hint": {"a": 1}},
        "queryPlanner",
    )
    .await;
    let ixscan = winning(&by_key).get_document("inputStage").unwrap();
    assert_eq!(ixscan.get_str("indexName").unwrap(), "a_1");
    assert_eq!(
        ixscan.get_document("indexBounds").unwrap(),
        &doc! {"a": ["[MinKey, MaxKey]"]}
    );
    let natural = explain(
        &db,
        doc! {"find": "c", "filter": {"a": 5}, "hint": {"$natural": -1}},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&natural)), ["COLLSCAN"]);
    assert_eq!(winning(&natural).get_str("direction").unwrap(), "backward");

    // Hinted reads return the same documents as the planner's choice.
    let coll = db.collection::<Document>("c");
    use mongodb::options::Hint;
    for hint in [
        Hint::Name("b_1_a_1".into()),
        Hint::Keys(doc! {"a": 1}),
        Hint::Keys(doc! {"$natural": 1}),
    ] {
        let mut ids: Vec<i32> = coll
            .find(doc! {"a": 5})
            .hint(hint.clone())
            .await
            .unwrap()
            .try_collect::<Vec<Document>>()
            .await
            .unwrap()
            .iter()
            .map(|d| d.get_i32("_id").unwrap())
            .collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            (0..10).map(|k| k * 100 + 5).collect::<Vec<_>>(),
            "{hint:?}"
        );
    }

    let err = coll
        .find(doc! {"a": 5})
        .hint(Hint::Name("nope".into()))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
}

#[tokio::test]
async fn count_distinct_aggregate_and_writes_explain_their_plans() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    create_index(&db, doc! {"a": 1}).await;
    let count = explain(
        &db,
        doc! {"count": "c", "query": {"a": {"$in": [1, 2]}}},
        "executionStats",
    )
    .await;
    // The bounds are exactly the filter: the index entries are counted, no document is read.
    assert_eq!(stages(winning(&count)), ["COUNT", "COUNT_SCAN"]);
    assert_eq!(number(stats(&count), "totalKeysExamined"), 20);
    assert_eq!(number(stats(&count), "totalDocsExamined"), 0);
    let fetched = explain(
        &db,
        doc! {"count": "c", "query": {"a": {"$in": [1, 2]}, "b": 1}},
        "executionStats",
    )
    .await;
    assert_eq!(stages(winning(&fetched)), ["COUNT", "FETCH", "IXSCAN"]);
    assert_eq!(number(stats(&fetched), "totalDocsExamined"), 20);
    let counted = db
        .collection::<Document>("c")
        .count_documents(doc! {"a": {"$gte": 90}})
        .await
        .unwrap();
    assert_eq!(counted, 100);

    let fast = explain(&db, doc! {"count": "c"}, "executionStats").await;
    assert_eq!(stages(winning(&fast)), ["RECORD_STORE_FAST_COUNT"]);
    assert_eq!(number(stats(&fast), "totalDocsExamined"), 0);
    assert_eq!(
        number(
            stats(&fast).get_document("executionStages").unwrap(),
            "nCounted"
        ),
        1000
    );

    let distinct = explain(
        &db,
        doc! {"distinct": "c", "key": "b", "query": {"a": 3}},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&distinct)), ["FETCH", "IXSCAN"]);

    let pushed_down = explain(
        &db,
        doc! {"aggregate": "c", "pipeline": [{"$match": {"a": 3}}, {"$sort": {"a": 1}}], "cursor": {}},
        "queryPlanner",
    )
    .await;
    assert_eq!(stages(winning(&pushed_down)), ["FETCH", "IXSCAN"]);
    let with_group = explain(
        &db,
        doc! {"aggregate": "c", "pipeline": [{"$match": {"a": 3}}, {"$group": {"_id": "$b"}}], "cursor": {}},
        "queryPlanner",
    )
    .await;
    let pipeline = with_group.get_array("stages").unwrap();
    let cursor = pipeline[0]
        .as_document()
        .unwrap()
        .get_document("$cursor")
        .unwrap();
    assert_eq!(stages(winning(cursor)), ["FETCH", "IXSCAN"]);
    assert!(pipeline[1].as_document().unwrap().contains_key("$group"));

    let update = explain(
        &db,
        doc! {"update": "c", "updates": [{"q": {"a": 4}, "u": {"$set": {"x": 1}}, "multi": true}]},
        "executionStats",
    )
    .await;
    assert_eq!(stages(winning(&update)), ["UPDATE", "FETCH", "IXSCAN"]);
    let delete = explain(
        &db,
        doc! {"delete": "c", "deletes": [{"q": {"_id": 4}, "limit": 1}]},
        "executionStats",
    )
    .await;
    assert_eq!(stages(winning(&delete)), ["DELETE", "LIMIT", "IDHACK"]);
    // Explaining a write changes nothing.
    let coll = db.collection::<Document>("c");
    assert_eq!(coll.count_documents(doc! {"x": 1}).await.unwrap(), 0);
    assert_eq!(coll.count_documents(doc! {"_id": 4}).await.unwrap(), 1);

    let fam = explain(
        &db,
        doc! {"findAndModify": "c", "query": {"a": 4}, "sort": {"a": 1}, "remove": true},
        "queryPlanner",
    )
    .await;
    assert_eq!(
        stages(winning(&fam)),
        ["DELETE", "LIMIT", "FETCH", "IXSCAN"]
    );
}

#[tokio::test]
async fn explain_refuses_what_it_cannot_explain() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let err = db
        .run_command(doc! {"explain": {"insert": "c", "documents": [{}]}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(59));
    let err = db
        .run_command(doc! {"explain": {"find": "c"}, "verbosity": "loud"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2));
    let err = db
        .run_command(doc! {"explain": {"delete": "c", "deletes": [{"q": {}, "limit": 0}, {"q": {}, "limit": 0}]}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(16));
}

/// An explained write is read by the same spec as the write itself: the same refusals, in the
/// same order, before anything is planned.
#[tokio::test]
async fn an_explained_write_refuses_the_fields_the_write_refuses() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    let cases = [
        (
            doc! {"update": "c", "updates": [{"q": {}, "u": {}, "sort": {"a": 1}}]},
            40415,
            "BSON field 'update.updates.sort' is an unknown field.",
        ),
        (
            doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0, "x": 1}]},
            40415,
            "BSON field 'delete.deletes.x' is an unknown field.",
        ),
        (
            doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}, {"q": {}}]},
            40414,
            "BSON field 'delete.deletes.limit' is missing but a required field",
        ),
        (
            doc! {"findAndModify": "c", "remove": true, "multi": true},
            40415,
            "BSON field 'findAndModify.multi' is an unknown field.",
        ),
        (
            doc! {"findAndModify": "c", "query": 1, "bogus": 1},
            14,
            "BSON field 'findAndModify.query' is the wrong type 'int', expected type 'object'",
        ),
    ];
    for (command, code, message) in cases {
        let err = db
            .run_command(doc! {"explain": command.clone(), "verbosity": "queryPlanner"})
            .await
            .unwrap_err();
        let mongodb::error::ErrorKind::Command(failure) = err.kind.as_ref() else {
            panic!("{command}: {err}");
        };
        assert_eq!(
            (failure.code, failure.message.as_str()),
            (code, message),
            "{command}"
        );
    }
}

#[tokio::test]
async fn a_raced_choice_is_cached_per_shape_and_replanned_when_it_turns_bad() {
    let server = TestServer::start().await;
    let db = server.client().await.database("explain");
    let coll = db.collection::<Document>("cache");
    // `a` is selective below 1,000 and `b` is not, and the other way round above.
    let docs: Vec<Document> = (0..4000)
        .map(|i| {
            if i < 2000 {
                doc! {"_id": i, "a": i, "b": 0}
            } else {
                doc! {"_id": i, "a": 0, "b": i}
            }
        })
        .collect();
    coll.insert_many(docs).await.unwrap();
    for key in [doc! {"a": 1}, doc! {"b": 1}] {
        coll.create_index(IndexModel::builder().keys(key).build())
            .await
            .unwrap();
    }
    let shared = server.shared();
    let plans = || {
        let mut p = shared.engine.plans.plans();
        p.sort();
        p
    };
    assert!(plans().is_empty());
    assert_eq!(
        coll.count_documents(doc! {"a": 5, "b": 0}).await.unwrap(),
        1
    );
    assert_eq!(plans(), ["ix:a_1"]);
    // Same shape, other values: the cached index on `a` now meets 2,000 entries for one
    // result, which is far more work than it took to win; it is replanned and `b` wins.
    assert_eq!(
        coll.count_documents(doc! {"a": 0, "b": 3000})
            .await
            .unwrap(),
        1
    );
    assert_eq!(plans(), ["ix:b_1"]);
    // A new index changes the key: the next query of the shape races again.
    coll.create_index(IndexModel::builder().keys(doc! {"a": 1, "b": 1}).build())
        .await
        .unwrap();
    assert_eq!(
        coll.count_documents(doc! {"a": 0, "b": 3000})
            .await
            .unwrap(),
        1
    );
    assert_eq!(plans().len(), 2);
}
