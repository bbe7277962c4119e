//! Hidden indexes through the Rust driver, as MongoDB 7.0 has them: created hidden or hidden
//! and shown again by `collMod` (with mongod's `hidden_old`/`hidden_new`), maintained while
//! hidden (a hidden unique index still refuses duplicates), never planned, refused as a hint,
//! listed with `hidden: true`; the `_id` index cannot be hidden.

use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

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

/// The name of the index the winning plan of `find(filter)` scans, if any.
async fn planned_index(db: &Database, coll: &str, filter: Document) -> Option<String> {
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
        if let Ok(name) = node.get_str("indexName") {
            return Some(name.to_owned());
        }
        node = node.get_document("inputStage").ok()?.clone();
    }
}

const NO_SUCH_INDEX: &str = "hint provided does not correspond to an existing index";

#[tokio::test]
async fn a_hidden_index_is_maintained_but_never_planned_until_shown_again() {
    let server = TestServer::start().await;
    let db = server.client().await.database("hidden");
    let coll = db.collection::<Document>("c");
    let hidden = IndexOptions::builder().hidden(true).unique(true).build();
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"email": 1})
            .options(hidden)
            .build(),
    )
    .await
    .unwrap();
    let listed = coll
        .list_indexes()
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    assert_eq!(listed[1].options.as_ref().unwrap().hidden, Some(true));
    coll.insert_many((0..20).map(|i| doc! {"_id": i, "email": format!("{i}@x")}))
        .await
        .unwrap();
    // Hidden, yet unique: the duplicate is refused.
    let err = coll
        .insert_one(doc! {"_id": 99, "email": "3@x"})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(11000), "{err}");
    // Never planned, and a hint by name or key pattern is refused as for a missing index.
    assert_eq!(planned_index(&db, "c", doc! {"email": "3@x"}).await, None);
    for hint in [doc! {"hint": "email_1"}, doc! {"hint": {"email": 1}}] {
        let mut find = doc! {"find": "c", "filter": {"email": "3@x"}};
        find.extend(hint.clone());
        let (code, message) = command_error(&db, find).await;
        assert_eq!(code, 2, "{hint}");
        assert!(message.ends_with(NO_SUCH_INDEX), "{message}");
    }
    // Shown again: its entries are all there (written while it was hidden).
    let reply = db
        .run_command(doc! {"collMod": "c", "index": {"name": "email_1", "hidden": false}})
        .await
        .unwrap();
    assert_eq!(
        reply,
        doc! {"hidden_old": true, "hidden_new": false, "ok": 1.0}
    );
    assert_eq!(
        planned_index(&db, "c", doc! {"email": "3@x"})
            .await
            .as_deref(),
        Some("email_1")
    );
    let found = db
        .run_command(doc! {"find": "c", "filter": {"email": {"$gte": "15@x"}}, "hint": "email_1"})
        .await
        .unwrap();
    let batch = found
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    // "15@x" .. "19@x", then "1@x" ('@' sorts after the digits), then "2@x" .. "9@x".
    assert_eq!(batch.len(), 14, "{found}");
    // Hiding by key pattern; the same again changes nothing and says nothing.
    let reply = db
        .run_command(doc! {"collMod": "c", "index": {"keyPattern": {"email": 1}, "hidden": true}})
        .await
        .unwrap();
    assert_eq!(
        reply,
        doc! {"hidden_old": false, "hidden_new": true, "ok": 1.0}
    );
    let reply = db
        .run_command(doc! {"collMod": "c", "index": {"name": "email_1", "hidden": true}})
        .await
        .unwrap();
    assert_eq!(reply, doc! {"ok": 1.0});
    assert_eq!(planned_index(&db, "c", doc! {"email": "3@x"}).await, None);
    let validated = db.run_command(doc! {"validate": "c"}).await.unwrap();
    assert!(validated.get_bool("valid").unwrap(), "{validated}");
}

#[tokio::test]
async fn hiding_is_refused_as_mongod_refuses_it() {
    let server = TestServer::start().await;
    let db = server.client().await.database("hidden");
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    let cases = [
        (
            doc! {"collMod": "c", "index": {"name": "_id_", "hidden": true}},
            2,
            "can't hide _id index",
        ),
        (
            doc! {"collMod": "c", "index": {"keyPattern": {"_id": 1}, "hidden": true}},
            2,
            "can't hide _id index",
        ),
        (
            doc! {"collMod": "c", "index": {"name": "nope", "hidden": true}},
            27,
            "cannot find index nope for ns hidden.c",
        ),
        (
            doc! {"collMod": "c", "index": {"hidden": true}},
            72,
            "Must specify either index name or key pattern.",
        ),
        (
            doc! {"collMod": "c", "index": {"name": "a_1"}},
            72,
            "no expireAfterSeconds, hidden, unique, or prepareUnique field",
        ),
        (
            doc! {"createIndexes": "c", "indexes": [{"key": {"_id": 1}, "name": "_id_", "hidden": true}]},
            2,
            "can't hide _id index",
        ),
        (
            doc! {"createIndexes": "c", "indexes": [{"key": {"b": 1}, "name": "b_1", "hidden": 1}]},
            14,
            "The field 'hidden' must be a bool, but got int",
        ),
    ];
    for (cmd, code, message) in cases {
        let (got_code, got) = command_error(&db, cmd.clone()).await;
        assert_eq!((got_code, got.as_str()), (code, message), "{cmd}");
    }
    let (code, _) = command_error(
        &db,
        doc! {"collMod": "c", "index": {"name": "a_1", "hidden": 1}},
    )
    .await;
    assert_eq!(code, 14);
    // The same index asked for again with another `hidden` conflicts with the existing one.
    let (code, _) = command_error(
        &db,
        doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1", "hidden": true}]},
    )
    .await;
    assert_eq!(code, 85);
}
