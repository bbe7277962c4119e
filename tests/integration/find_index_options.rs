//! `find`'s index options through the Rust driver: `min`/`max` (with mongod's own jstest cases
//! and errors 51173/51174/51175), `returnKey` and `showRecordId`.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use mongodb::{Collection, Database, IndexModel};

async fn setup(server: &TestServer) -> (Database, Collection<Document>) {
    let db = server.client().await.database("options");
    let coll = db.collection::<Document>("c");
    coll.insert_many([
        doc! {"_id": 1, "a": 1, "b": 1},
        doc! {"_id": 2, "a": 1, "b": 2},
        doc! {"_id": 3, "a": 2, "b": 1},
        doc! {"_id": 4, "a": 2, "b": 2},
    ])
    .await
    .unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"a": 1, "b": 1}).build())
        .await
        .unwrap();
    (db, coll)
}

async fn find(db: &Database, extra: Document) -> Result<Vec<Document>, i32> {
    let mut cmd = doc! {"find": "c"};
    cmd.extend(extra);
    match db.run_command(cmd).await {
        Ok(reply) => Ok(reply
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .iter()
            .map(|d| d.as_document().unwrap().clone())
            .collect()),
        Err(e) => Err(error_code(&e).unwrap()),
    }
}

fn ids(docs: &[Document]) -> Vec<i32> {
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

#[tokio::test]
async fn min_and_max_bound_the_hinted_index_as_mongod_does() {
    let server = TestServer::start().await;
    let (db, _) = setup(&server).await;
    let hint = doc! {"a": 1, "b": 1};
    // The cases of mongod's jstests/core/query/minmax.js.
    for (min, max, expected) in [
        (
            Some(doc! {"a": 1, "b": 2}),
            Some(doc! {"a": 2, "b": 1}),
            vec![2],
        ),
        (
            Some(doc! {"a": 1, "b": 2}),
            Some(doc! {"a": 2, "b": 1.5}),
            vec![2, 3],
        ),
        (
            Some(doc! {"a": 1, "b": 2}),
            Some(doc! {"a": 2, "b": 2}),
            vec![2, 3],
        ),
        (Some(doc! {"a": 1, "b": 2}), None, vec![2, 3, 4]),
        (None, Some(doc! {"a": 2, "b": 1.5}), vec![1, 2, 3]),
    ] {
        let mut extra = doc! {"hint": hint.clone()};
        if let Some(m) = &min {
            extra.insert("min", m.clone());
        }
        if let Some(m) = &max {
            extra.insert("max", m.clone());
        }
        assert_eq!(
            ids(&find(&db, extra).await.unwrap()),
            expected,
            "{min:?} {max:?}"
        );
    }
    // With a filter, the range and the filter both apply.
    let found = find(
        &db,
        doc! {"filter": {"b": 1}, "hint": hint.clone(), "min": {"a": 1, "b": 0}, "max": {"a": 3, "b": 0}},
    )
    .await
    .unwrap();
    assert_eq!(ids(&found), [1, 3]);
    assert_eq!(
        find(&db, doc! {"min": {"a": 1, "b": 2}}).await.unwrap_err(),
        51173,
        "no hint"
    );
    assert_eq!(
        find(&db, doc! {"hint": {"$natural": 1}, "max": {"a": 1, "b": 2}})
            .await
            .unwrap_err(),
        51173
    );
    assert_eq!(
        find(&db, doc! {"hint": hint.clone(), "min": {"b": 1, "a": 1}})
            .await
            .unwrap_err(),
        51174,
        "fields in another order"
    );
    assert_eq!(
        find(
            &db,
            doc! {"hint": hint.clone(), "min": {"a": 2, "b": 1}, "max": {"a": 1, "b": 1}}
        )
        .await
        .unwrap_err(),
        51175
    );
}

#[tokio::test]
async fn min_and_max_follow_a_descending_index_order() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server).await;
    coll.create_index(IndexModel::builder().keys(doc! {"a": -1}).build())
        .await
        .unwrap();
    let found = find(
        &db,
        doc! {"hint": {"a": -1}, "min": {"a": 2}, "max": {"a": 1}},
    )
    .await
    .unwrap();
    let mut got = ids(&found);
    got.sort_unstable();
    assert_eq!(got, [3, 4]);
}

#[tokio::test]
async fn return_key_gives_the_index_key_each_document_was_found_by() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server).await;
    let keys = find(
        &db,
        doc! {"filter": {"a": 1}, "hint": {"a": 1, "b": 1}, "returnKey": true, "projection": {"_id": 1}},
    )
    .await
    .unwrap();
    assert_eq!(keys, [doc! {"a": 1, "b": 1}, doc! {"a": 1, "b": 2}]);
    let by_id = find(&db, doc! {"filter": {"_id": 3}, "returnKey": true})
        .await
        .unwrap();
    assert_eq!(by_id, [doc! {"_id": 3}]);
    let scanned = find(
        &db,
        doc! {"filter": {"b": 2}, "hint": {"$natural": 1}, "returnKey": true},
    )
    .await
    .unwrap();
    assert_eq!(
        scanned,
        [doc! {}, doc! {}],
        "a collection scan uses no index"
    );
    // A multikey document is returned once, with the first of its keys in scan order.
    coll.insert_one(doc! {"_id": 9, "t": [3, 1, 2]})
        .await
        .unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"t": 1}).build())
        .await
        .unwrap();
    let multikey = find(&db, doc! {"filter": {"t": {"$gte": 2}}, "returnKey": true})
        .await
        .unwrap();
    assert_eq!(multikey, [doc! {"t": 2}]);
    let sorted = find(
        &db,
        doc! {"filter": {"t": {"$gte": 2}}, "hint": {"t": 1}, "sort": {"_id": 1}, "returnKey": true},
    )
    .await
    .unwrap();
    assert_eq!(sorted, [doc! {"t": 2}]);
}

#[tokio::test]
async fn show_record_id_adds_the_clustered_record_id() {
    let server = TestServer::start().await;
    let (db, _) = setup(&server).await;
    let found = find(
        &db,
        doc! {"filter": {"a": 2}, "showRecordId": true, "projection": {"b": 0}},
    )
    .await
    .unwrap();
    assert_eq!(found.len(), 2);
    let mut record_ids = Vec::new();
    for d in &found {
        assert!(!d.contains_key("b"));
        match d.get("$recordId") {
            Some(Bson::Binary(b)) => record_ids.push(b.bytes.clone()),
            other => panic!("{other:?}"),
        }
    }
    // Record ids are the clustered `_id` keys: distinct, and ordered as the `_id`s are.
    assert!(record_ids[0] < record_ids[1]);
}
