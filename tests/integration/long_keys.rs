//! Index keys and `_id`s of any length, as mongod 4.2+ takes them (its 1,024-byte index key
//! limit and `failIndexKeyTooLong` are gone; only the 16 MiB document bounds a key): 70 KB
//! values indexed (unique too), found by equality and range through the index, sorted by it
//! both ways — among values sharing their first 65 KB — updated and deleted with `validate`
//! finding the index whole, on disk and in memory.

use crate::common::TestServer;
use bson::{doc, Bson, Document};
use futures::TryStreamExt;
use mongodb::options::FindOptions;

/// The code of a write error (an insert's duplicate key).
fn write_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => {
            Some(e.code)
        }
        _ => None,
    }
}

/// `(_id, value)`: short values, and values of 60 to 70 KB, most sharing their first 69,990
/// bytes, inserted out of order.
fn values() -> Vec<(i32, String)> {
    let x = |n: usize, tail: &str| "x".repeat(n) + tail;
    vec![
        (1, x(70_000, "b")),
        (2, "z".to_owned()),
        (3, x(69_999, "y")),
        (4, x(60_000, "")),
        (5, x(70_000, "a")),
        (6, "a".to_owned()),
        (7, x(70_001, "")),
        (8, "y".repeat(70_000)),
        (9, x(65_510, "")),
        (10, x(70_000, "c")),
        (11, x(69_990, "")),
    ]
}

/// The `_id`s of `values` in value order (bytewise, as BSON orders strings).
fn ids_in_order(values: &[(i32, String)], descending: bool) -> Vec<i32> {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.1.cmp(&b.1));
    if descending {
        sorted.reverse();
    }
    sorted.into_iter().map(|(id, _)| id).collect()
}

async fn ids(
    items: &mongodb::Collection<Document>,
    filter: Document,
    sort: Option<Document>,
) -> Vec<i32> {
    let options = FindOptions::builder()
        .sort(sort)
        .projection(doc! {"_id": 1})
        .build();
    items
        .find(filter)
        .with_options(options)
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect()
}

/// The winning plan's stages from the root down.
async fn plan(db: &mongodb::Database, find: Document) -> Vec<String> {
    let reply = db
        .run_command(doc! {"explain": find, "verbosity": "queryPlanner"})
        .await
        .unwrap();
    let mut stages = Vec::new();
    let mut node = reply
        .get_document("queryPlanner")
        .and_then(|p| p.get_document("winningPlan"))
        .ok();
    while let Some(n) = node {
        stages.push(n.get_str("stage").unwrap().to_owned());
        node = n.get_document("inputStage").ok();
    }
    stages
}

async fn validate(db: &mongodb::Database) -> Document {
    let reply = db
        .run_command(doc! {"validate": "items", "full": true})
        .await
        .unwrap();
    assert_eq!(reply.get_bool("valid"), Ok(true), "{reply}");
    assert_eq!(reply.get_array("errors").map(Vec::len), Ok(0), "{reply}");
    reply
}

async fn long_values_through_an_index(server: &TestServer) {
    let client = server.client().await;
    let db = client.database("long");
    let items = db.collection::<Document>("items");
    db.run_command(doc! {"createIndexes": "items", "indexes": [
        {"key": {"s": 1}, "name": "s_1", "unique": true},
    ]})
    .await
    .unwrap();
    let mut values = values();
    let docs: Vec<Document> = values
        .iter()
        .map(|(id, s)| doc! {"_id": id, "s": s})
        .collect();
    items.insert_many(docs).await.unwrap();

    // Unique: a second document with a 70 KB value already held.
    let duplicate = items
        .insert_one(doc! {"_id": 100, "s": "x".repeat(70_000) + "b"})
        .await
        .unwrap_err();
    assert_eq!(write_code(&duplicate), Some(11000));

    // Equality and range, through the index.
    let b = "x".repeat(70_000) + "b";
    assert_eq!(ids(&items, doc! {"s": &b}, None).await, vec![1]);
    assert_eq!(
        plan(&db, doc! {"find": "items", "filter": {"s": &b}}).await,
        ["FETCH", "IXSCAN"]
    );
    let range = doc! {"s": {"$gt": "x".repeat(70_000) + "a", "$lte": "x".repeat(70_001)}};
    assert_eq!(
        plan(&db, doc! {"find": "items", "filter": range.clone()}).await,
        ["FETCH", "IXSCAN"]
    );
    let mut within: Vec<(i32, String)> = values
        .iter()
        .filter(|(_, s)| *s > "x".repeat(70_000) + "a" && *s <= "x".repeat(70_001))
        .cloned()
        .collect();
    within.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        ids(&items, range, Some(doc! {"s": 1})).await,
        ids_in_order(&within, false)
    );
    assert_eq!(ids_in_order(&within, false), vec![1, 10, 7]);

    // Sorted by the index, both ways: no SORT stage, and exact order among the values that
    // share their first 69,990 bytes.
    for (direction, descending) in [(1, false), (-1, true)] {
        let find = doc! {"find": "items", "filter": {}, "sort": {"s": direction}, "hint": "s_1"};
        assert_eq!(plan(&db, find).await, ["FETCH", "IXSCAN"]);
        let options = FindOptions::builder()
            .sort(doc! {"s": direction})
            .hint(mongodb::options::Hint::Name("s_1".to_owned()))
            .projection(doc! {"_id": 1})
            .build();
        let got: Vec<i32> = items
            .find(doc! {})
            .with_options(options)
            .await
            .unwrap()
            .try_collect::<Vec<Document>>()
            .await
            .unwrap()
            .iter()
            .map(|d| d.get_i32("_id").unwrap())
            .collect();
        assert_eq!(got, ids_in_order(&values, descending), "{direction}");
    }

    // Updated: the old value's entry goes, the new one's comes.
    let new_value = "x".repeat(70_000) + "bb";
    items
        .update_one(doc! {"_id": 1}, doc! {"$set": {"s": &new_value}})
        .await
        .unwrap();
    if let Some(entry) = values.iter_mut().find(|(id, _)| *id == 1) {
        entry.1 = new_value.clone();
    }
    assert_eq!(ids(&items, doc! {"s": &b}, None).await, Vec::<i32>::new());
    assert_eq!(ids(&items, doc! {"s": &new_value}, None).await, vec![1]);
    // The freed value can be taken again by another document.
    items.insert_one(doc! {"_id": 12, "s": &b}).await.unwrap();
    values.push((12, b.clone()));
    assert_eq!(
        ids(&items, doc! {}, Some(doc! {"s": -1})).await,
        ids_in_order(&values, true)
    );

    // Deleted by a long value: its entries go with it.
    let deleted = items
        .delete_one(doc! {"s": "x".repeat(70_000) + "c"})
        .await
        .unwrap();
    assert_eq!(deleted.deleted_count, 1);
    values.retain(|(id, _)| *id != 10);
    let report = validate(&db).await;
    let per_index = report.get_document("keysPerIndex").unwrap();
    assert_eq!(
        per_index.get_i32("s_1"),
        Ok(values.len() as i32),
        "{report}"
    );
    assert_eq!(
        ids(&items, doc! {}, Some(doc! {"s": 1})).await,
        ids_in_order(&values, false)
    );
}

#[tokio::test]
async fn seventy_kilobyte_index_keys_work_through_the_index_on_disk() {
    let server = TestServer::start().await;
    long_values_through_an_index(&server).await;
}

#[tokio::test]
async fn seventy_kilobyte_index_keys_work_through_the_index_in_memory() {
    let server = TestServer::start_memory().await;
    long_values_through_an_index(&server).await;
}

/// An `_id` of 70 KB is stored, found, kept unique, survives a restart, and is deleted.
#[tokio::test]
async fn a_seventy_kilobyte_id_is_a_document_key_like_any_other() {
    let server = TestServer::start().await;
    let long_id = "i".repeat(70_000);
    let sibling = long_id.clone() + "2";
    {
        let client = server.client().await;
        let items = client.database("long").collection::<Document>("items");
        items
            .insert_many(vec![
                doc! {"_id": &sibling, "n": 2},
                doc! {"_id": &long_id, "n": 1},
                doc! {"_id": "short", "n": 0},
            ])
            .await
            .unwrap();
        let again = items
            .insert_one(doc! {"_id": &long_id, "n": 3})
            .await
            .unwrap_err();
        assert_eq!(write_code(&again), Some(11000));
    }
    let server = server.restart().await;
    let client = server.client().await;
    let db = client.database("long");
    let items = db.collection::<Document>("items");
    let found = items
        .find_one(doc! {"_id": &long_id})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.get_i32("n"), Ok(1));
    let ns: Vec<i32> = items
        .find(doc! {})
        .sort(doc! {"_id": -1})
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("n").unwrap())
        .collect();
    // Descending: "short" > "iii…2" > "iii…".
    assert_eq!(ns, vec![0, 2, 1]);
    let deleted = items.delete_one(doc! {"_id": &long_id}).await.unwrap();
    assert_eq!(deleted.deleted_count, 1);
    assert_eq!(
        items.count_documents(doc! {}).await.unwrap(),
        2,
        "only the long _id is gone"
    );
    let report = validate(&db).await;
    assert_eq!(report.get_i32("nrecords"), Ok(2), "{report}");
    assert!(matches!(
        items.find_one(doc! {"_id": Bson::String(long_id)}).await,
        Ok(None)
    ));
}
