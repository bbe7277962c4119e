//! `update`, `delete` and `findAndModify` through the Rust driver, as applications use them:
//! operators, upserts, ordered and unordered batches, write errors with mongod's codes, and the
//! reply shapes drivers depend on.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::ReturnDocument;
use mongodb::{Collection, Database};

fn coll(db: &Database, name: &str) -> Collection<Document> {
    db.collection::<Document>(name)
}

async fn seeded(db: &Database, name: &str, docs: Vec<Document>) -> Collection<Document> {
    let c = coll(db, name);
    c.insert_many(docs).await.unwrap();
    c
}

/// The code of a single write error (update_one, delete_one, ...).
fn write_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
        _ => None,
    }
}

async fn get(c: &Collection<Document>, id: i32) -> Document {
    c.find_one(doc! {"_id": id})
        .await
        .unwrap()
        .expect("document exists")
}

fn indexes_of(reply: &Document) -> Vec<i32> {
    reply
        .get_array("writeErrors")
        .map(|errors| {
            errors
                .iter()
                .map(|e| e.as_document().unwrap().get_i32("index").unwrap())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn update_one_applies_every_common_operator() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "ops",
        vec![doc! {
            "_id": 1, "name": "a", "gone": true, "n": 5, "m": 3, "lo": 10, "hi": 10, "old": "x",
            "tags": ["a", "b"], "set": [1, 2], "q": [1, 2, 3], "p": [1, 2, 3, 2], "pa": [1, 2, 3],
        }],
    )
    .await;
    let result = c
        .update_one(
            doc! {"_id": 1},
            doc! {
                "$set": {"name": "b", "nested.x": 1},
                "$unset": {"gone": ""},
                "$inc": {"n": 2},
                "$mul": {"m": 2},
                "$min": {"lo": 5},
                "$max": {"hi": 20},
                "$rename": {"old": "new"},
                "$currentDate": {"when": true},
                "$push": {"tags": "c"},
                "$addToSet": {"set": 2},
                "$pop": {"q": 1},
                "$pull": {"p": 2},
                "$pullAll": {"pa": [1, 3]},
                "$setOnInsert": {"never": true},
            },
        )
        .await
        .unwrap();
    assert_eq!((result.matched_count, result.modified_count), (1, 1));
    assert!(result.upserted_id.is_none());
    let d = get(&c, 1).await;
    assert_eq!(d.get_str("name").unwrap(), "b");
    assert_eq!(d.get_document("nested").unwrap(), &doc! {"x": 1});
    assert!(d.get("gone").is_none());
    assert_eq!(d.get_i32("n").unwrap(), 7);
    assert_eq!(d.get_i32("m").unwrap(), 6);
    assert_eq!(d.get_i32("lo").unwrap(), 5);
    assert_eq!(d.get_i32("hi").unwrap(), 20);
    assert!(d.get("old").is_none());
    assert_eq!(d.get_str("new").unwrap(), "x");
    assert!(matches!(d.get("when"), Some(Bson::DateTime(_))));
    assert_eq!(
        d.get_array("tags").unwrap(),
        &vec![Bson::from("a"), "b".into(), "c".into()]
    );
    assert_eq!(
        d.get_array("set").unwrap(),
        &vec![Bson::Int32(1), Bson::Int32(2)]
    );
    assert_eq!(
        d.get_array("q").unwrap(),
        &vec![Bson::Int32(1), Bson::Int32(2)]
    );
    assert_eq!(
        d.get_array("p").unwrap(),
        &vec![Bson::Int32(1), Bson::Int32(3)]
    );
    assert_eq!(d.get_array("pa").unwrap(), &vec![Bson::Int32(2)]);
    assert!(
        d.get("never").is_none(),
        "$setOnInsert only applies to an upsert's insert"
    );
}

#[tokio::test]
async fn update_one_changes_only_the_first_match() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "one",
        (1..=3).map(|i| doc! {"_id": i, "k": 1}).collect(),
    )
    .await;
    let result = c
        .update_one(doc! {"k": 1}, doc! {"$set": {"hit": true}})
        .await
        .unwrap();
    assert_eq!((result.matched_count, result.modified_count), (1, 1));
    assert_eq!(c.count_documents(doc! {"hit": true}).await.unwrap(), 1);
    assert!(
        get(&c, 1).await.get_bool("hit").unwrap(),
        "the first in _id order"
    );
}

#[tokio::test]
async fn update_many_updates_every_match() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "many",
        (1..=5)
            .map(|i| doc! {"_id": i, "even": i % 2 == 0})
            .collect(),
    )
    .await;
    let result = c
        .update_many(doc! {"even": false}, doc! {"$inc": {"seen": 1}})
        .await
        .unwrap();
    assert_eq!((result.matched_count, result.modified_count), (3, 3));
    assert_eq!(c.count_documents(doc! {"seen": 1}).await.unwrap(), 3);
}

#[tokio::test]
async fn replace_one_replaces_the_whole_document_and_keeps_its_id() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "replace", vec![doc! {"_id": 1, "a": 1, "b": 2}]).await;
    let result = c.replace_one(doc! {"a": 1}, doc! {"c": 3}).await.unwrap();
    assert_eq!((result.matched_count, result.modified_count), (1, 1));
    assert_eq!(get(&c, 1).await, doc! {"_id": 1, "c": 3});
}

#[tokio::test]
async fn a_replacement_that_only_reorders_fields_is_a_modification() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "reorder", vec![doc! {"_id": 1, "a": 1, "b": 2}]).await;
    let result = c
        .replace_one(doc! {"_id": 1}, doc! {"b": 2, "a": 1})
        .await
        .unwrap();
    assert_eq!(result.modified_count, 1);
    let keys: Vec<String> = get(&c, 1).await.keys().cloned().collect();
    assert_eq!(keys, ["_id", "b", "a"]);
}

#[tokio::test]
async fn upsert_inserts_the_seed_and_a_second_upsert_matches_it() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = coll(&db, "upsert");
    let first = c
        .update_one(
            doc! {"email": "a@b.c", "n": {"$gt": 0}},
            doc! {"$inc": {"visits": 1}, "$setOnInsert": {"created": true}},
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!((first.matched_count, first.modified_count), (0, 0));
    let id = first.upserted_id.expect("an upserted _id");
    assert!(
        matches!(id, Bson::ObjectId(_)),
        "generated _id is an ObjectId"
    );
    let d = c.find_one(doc! {}).await.unwrap().unwrap();
    assert_eq!(
        d.keys().next().map(String::as_str),
        Some("_id"),
        "_id is placed first"
    );
    assert_eq!(d.get("_id"), Some(&id));
    assert_eq!(d.get_str("email").unwrap(), "a@b.c");
    assert!(
        d.get("n").is_none(),
        "only equality fields seed the document"
    );
    assert_eq!(d.get_i32("visits").unwrap(), 1);
    assert!(d.get_bool("created").unwrap());

    let second = c
        .update_one(
            doc! {"email": "a@b.c"},
            doc! {"$inc": {"visits": 1}, "$setOnInsert": {"x": 1}},
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!((second.matched_count, second.modified_count), (1, 1));
    assert!(second.upserted_id.is_none());
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
    let d = c.find_one(doc! {}).await.unwrap().unwrap();
    assert_eq!(d.get_i32("visits").unwrap(), 2);
    assert!(d.get("x").is_none());
}

#[tokio::test]
async fn upsert_keeps_the_query_id_and_replace_upsert_works() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = coll(&db, "upsert_id");
    let r = c
        .update_one(doc! {"_id": 7}, doc! {"$set": {"a": 1}})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::Int32(7)));
    let r = c
        .replace_one(doc! {"_id": 8}, doc! {"b": 2})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::Int32(8)));
    assert_eq!(get(&c, 8).await, doc! {"_id": 8, "b": 2});
    let r = c
        .replace_one(doc! {"x": 1}, doc! {"_id": 20, "x": 1, "y": 2})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(
        r.upserted_id,
        Some(Bson::Int32(20)),
        "a replacement may bring its own _id"
    );
    let err = c
        .replace_one(doc! {"_id": 9}, doc! {"_id": 10, "b": 2})
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(66), "but not change the query's");
    let err = c
        .update_one(doc! {"_id": 9}, doc! {"$set": {"_id": 10}})
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(66));
    assert!(c
        .find_one(doc! {"_id": {"$in": [9, 10]}})
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn an_update_that_changes_nothing_matches_but_does_not_modify() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "noop",
        vec![doc! {"_id": 1, "a": 1}, doc! {"_id": 2, "a": 2}],
    )
    .await;
    let r = c
        .update_one(doc! {"_id": 1}, doc! {"$set": {"a": 1}})
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 0));
    let r = c
        .update_many(doc! {}, doc! {"$set": {"a": 2}})
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (2, 1));
    let r = c
        .update_one(doc! {"_id": 99}, doc! {"$set": {"a": 1}})
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (0, 0));
}

#[tokio::test]
async fn changing_id_is_write_error_66() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "immutable", vec![doc! {"_id": 1}]).await;
    let err = c
        .update_one(doc! {"_id": 1}, doc! {"$set": {"_id": 2}})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(66));
    let err = c
        .replace_one(doc! {"_id": 1}, doc! {"_id": 2, "a": 1})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(66));
    assert_eq!(get(&c, 1).await, doc! {"_id": 1});
}

#[tokio::test]
async fn unknown_modifier_is_write_error_9() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "unknown", vec![doc! {"_id": 1}]).await;
    let err = c
        .update_one(doc! {"_id": 1}, doc! {"$frobnicate": {"a": 1}})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(9));
}

#[tokio::test]
async fn inc_on_a_string_is_write_error_14_and_changes_nothing() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "typemismatch",
        vec![doc! {"_id": 1, "a": 1}, doc! {"_id": 2, "a": "text"}],
    )
    .await;
    let err = c
        .update_many(doc! {}, doc! {"$inc": {"a": 1}})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(14));
    assert_eq!(
        get(&c, 1).await.get_i32("a").unwrap(),
        1,
        "the statement failed as a whole"
    );
}

#[tokio::test]
async fn a_bad_filter_is_write_error_2() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "badfilter", vec![doc! {"_id": 1}]).await;
    let err = c
        .update_one(doc! {"a": {"$bogus": 1}}, doc! {"$set": {"b": 1}})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(2));
    let err = c.delete_one(doc! {"a": {"$bogus": 1}}).await.unwrap_err();
    assert_eq!(write_code(&err), Some(2));
}

#[tokio::test]
async fn ordered_update_batch_stops_at_the_first_error() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    seeded(
        &db,
        "ordered",
        (1..=3).map(|i| doc! {"_id": i, "v": 0}).collect(),
    )
    .await;
    let reply = db
        .run_command(doc! {
            "update": "ordered",
            "updates": [
                {"q": {"_id": 1}, "u": {"$set": {"v": 1}}},
                {"q": {"_id": 2}, "u": {"$bogus": {"v": 1}}},
                {"q": {"_id": 3}, "u": {"$set": {"v": 1}}},
            ],
        })
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    assert_eq!(reply.get_i32("n").unwrap(), 1);
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    assert_eq!(indexes_of(&reply), vec![1]);
    let c = coll(&db, "ordered");
    assert_eq!(
        get(&c, 3).await.get_i32("v").unwrap(),
        0,
        "statement 2 never ran"
    );
}

#[tokio::test]
async fn unordered_update_batch_reports_every_error_and_runs_the_rest() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    seeded(
        &db,
        "unordered",
        (1..=4).map(|i| doc! {"_id": i, "v": 0}).collect(),
    )
    .await;
    let reply = db
        .run_command(doc! {
            "update": "unordered",
            "ordered": false,
            "updates": [
                {"q": {"_id": 1}, "u": {"$set": {"v": 1}}},
                {"q": {"_id": 2}, "u": {"$set": {"_id": 5}}},
                {"q": {"_id": 3}, "u": {"$set": {"v": 1}}},
                {"q": {"_id": 4}, "u": {"$inc": {"v": "x"}}},
                {"q": {"_id": 9}, "u": {"$set": {"v": 1}}, "upsert": true},
            ],
        })
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 3, "two matches and one upsert");
    assert_eq!(reply.get_i32("nModified").unwrap(), 2);
    assert_eq!(indexes_of(&reply), vec![1, 3]);
    let codes: Vec<i32> = reply
        .get_array("writeErrors")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().get_i32("code").unwrap())
        .collect();
    assert_eq!(codes, vec![66, 14]);
    let upserted = reply.get_array("upserted").unwrap();
    assert_eq!(upserted.len(), 1);
    assert_eq!(
        upserted[0].as_document().unwrap(),
        &doc! {"index": 4, "_id": 9}
    );
}

/// A bulk insert checks its `_id`s against the collection in one ordered walk: held `_id`s
/// interleaved with free ones, a repeat within the batch and a batch out of order must each be
/// judged as one-by-one reads would judge them.
#[tokio::test]
async fn unordered_insert_batch_reports_held_and_repeated_ids_and_inserts_the_rest() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "bulk_ids",
        (0..20).step_by(2).map(|i| doc! {"_id": i}).collect(),
    )
    .await;
    // 0..20, the odd ones free, in reverse order, then 21 twice.
    let mut documents: Vec<Bson> = (0..20)
        .rev()
        .map(|i| Bson::Document(doc! {"_id": i, "new": true}))
        .collect();
    documents.push(Bson::Document(doc! {"_id": 21, "new": true}));
    documents.push(Bson::Document(doc! {"_id": 21, "new": true}));
    let reply = db
        .run_command(doc! {"insert": "bulk_ids", "ordered": false, "documents": documents})
        .await
        .unwrap();
    assert_eq!(
        reply.get_i32("n").unwrap(),
        11,
        "the ten odd _ids and the first 21"
    );
    let failed: Vec<i32> = (0..20).filter(|i| i % 2 == 1).chain([21]).collect();
    assert_eq!(
        indexes_of(&reply),
        failed,
        "the even _ids (every other statement) and the repeat"
    );
    use futures::TryStreamExt;
    let mut held: Vec<i32> = c
        .find(doc! {"new": true})
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    held.sort();
    let want: Vec<i32> = (1..20).step_by(2).chain([21]).collect();
    assert_eq!(held, want);
}

#[tokio::test]
async fn statements_of_one_batch_see_each_other() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let reply = db
        .run_command(doc! {
            "update": "sequence",
            "updates": [
                {"q": {"_id": 1}, "u": {"$set": {"v": 1}}, "upsert": true},
                {"q": {"_id": 1}, "u": {"$inc": {"v": 1}}, "upsert": true},
            ],
        })
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 2);
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    assert_eq!(
        get(&coll(&db, "sequence"), 1).await.get_i32("v").unwrap(),
        2
    );
}

#[tokio::test]
async fn multi_replacement_is_write_error_9() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    seeded(&db, "multirepl", vec![doc! {"_id": 1}]).await;
    let reply = db
        .run_command(doc! {
            "update": "multirepl",
            "updates": [{"q": {}, "u": {"a": 1}, "multi": true}],
        })
        .await
        .unwrap();
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(error.get_i32("code").unwrap(), 9);
    assert_eq!(error.get_i32("index").unwrap(), 0);
}

#[tokio::test]
async fn malformed_statements_fail_the_command() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let cases = [
        (
            doc! {"update": "m", "updates": [{"q": {}, "u": {}, "bogus": 1}]},
            40415,
        ),
        (doc! {"update": "m", "updates": [{"u": {}}]}, 40414),
        (doc! {"update": "m", "updates": [{"q": 1, "u": {}}]}, 14),
        (doc! {"update": "m"}, 40414),
        (doc! {"update": "m", "updates": []}, 16),
        (doc! {"update": "m", "updates": [], "bogus": 1}, 40415),
        (doc! {"delete": "m", "deletes": [{"q": {}}]}, 40414),
        (doc! {"delete": "m", "deletes": [{"q": {}, "limit": 2}]}, 9),
        (
            doc! {"delete": "m", "deletes": [{"q": {}, "limit": 0, "x": 1}]},
            40415,
        ),
    ];
    for (cmd, code) in cases {
        let err = db.run_command(cmd.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{cmd}");
    }
}

/// Each write command reads its fields as mongod 7.0's IDL does: the first bad field in the
/// document's order is the error, a statement's standing where its array stands; a statement
/// knows no generic field; `update` statements have no `sort` (8.0) and `insert` no `let`.
#[tokio::test]
async fn write_commands_refuse_fields_as_mongod_7_does() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let cases = [
        (
            doc! {"update": "m", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "sort": {"a": 1}}]},
            40415,
            "BSON field 'update.updates.sort' is an unknown field.",
        ),
        (
            doc! {"update": "m", "updates": [{"q": {}, "u": {}, "comment": "x"}]},
            40415,
            "BSON field 'update.updates.comment' is an unknown field.",
        ),
        (
            doc! {"update": "m", "updates": [{"q": 1, "u": {}, "x": 1}], "bogus": 1},
            14,
            "BSON field 'update.updates.q' is the wrong type 'int', expected type 'object'",
        ),
        (
            doc! {"update": "m", "bogus": 1, "updates": [{"q": 1, "u": {}}]},
            40415,
            "BSON field 'update.bogus' is an unknown field.",
        ),
        (
            doc! {"update": "m", "updates": [{"q": {}, "u": {}, "hint": 1}]},
            9,
            "Hint must be either a string or nested object",
        ),
        (
            doc! {"delete": "m", "deletes": [{"q": {}, "limit": 0}], "ordered": "no"},
            14,
            "BSON field 'delete.ordered' is the wrong type 'string', expected type 'bool'",
        ),
        (
            doc! {"delete": "m", "deletes": [{"q": {}, "x": 1, "limit": 2}]},
            40415,
            "BSON field 'delete.deletes.x' is an unknown field.",
        ),
        (
            doc! {"insert": "m", "documents": [{}], "let": {"x": 1}},
            40415,
            "BSON field 'insert.let' is an unknown field.",
        ),
        (
            doc! {"insert": "m", "documents": [{}, 1]},
            14,
            "BSON field 'insert.documents.1' is the wrong type 'int', expected type 'object'",
        ),
        (
            doc! {"insert": "m"},
            40414,
            "BSON field 'insert.documents' is missing but a required field",
        ),
        (
            doc! {"insert": "m", "documents": [{}], "stmtId": 1i64},
            14,
            "BSON field 'insert.stmtId' is the wrong type 'long', expected type 'int'",
        ),
        (
            doc! {"findAndModify": "m", "update": {}, "multi": true},
            40415,
            "BSON field 'findAndModify.multi' is an unknown field.",
        ),
        (
            doc! {"findAndModify": "m", "new": "yes", "query": 1},
            14,
            "BSON field 'findAndModify.new' is the wrong type 'string', expected type 'bool'",
        ),
    ];
    for (cmd, code, message) in cases {
        let err = db.run_command(cmd.clone()).await.unwrap_err();
        let ErrorKind::Command(failure) = err.kind.as_ref() else {
            panic!("{cmd}: {err}");
        };
        assert_eq!(
            (failure.code, failure.message.as_str()),
            (code, message),
            "{cmd}"
        );
    }
    // Nothing was written by any of them.
    assert_eq!(coll(&db, "m").count_documents(doc! {}).await.unwrap(), 0);
}

#[tokio::test]
async fn delete_one_and_delete_many() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "del",
        (1..=5)
            .map(|i| doc! {"_id": i, "odd": i % 2 == 1})
            .collect(),
    )
    .await;
    assert_eq!(
        c.delete_one(doc! {"odd": true})
            .await
            .unwrap()
            .deleted_count,
        1
    );
    assert!(
        c.find_one(doc! {"_id": 1}).await.unwrap().is_none(),
        "the first match goes"
    );
    assert_eq!(
        c.delete_many(doc! {"odd": true})
            .await
            .unwrap()
            .deleted_count,
        2
    );
    assert_eq!(
        c.delete_one(doc! {"odd": true})
            .await
            .unwrap()
            .deleted_count,
        0
    );
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 2);
    assert_eq!(c.delete_many(doc! {}).await.unwrap().deleted_count, 2);
}

#[tokio::test]
async fn unordered_delete_batch_continues_past_errors() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    seeded(&db, "delbatch", (1..=3).map(|i| doc! {"_id": i}).collect()).await;
    let reply = db
        .run_command(doc! {
            "delete": "delbatch",
            "ordered": false,
            "deletes": [
                {"q": {"_id": 1}, "limit": 1},
                {"q": {"_id": {"$bogus": 1}}, "limit": 1},
                {"q": {"_id": {"$gte": 2}}, "limit": 0},
            ],
        })
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 3);
    assert_eq!(indexes_of(&reply), vec![1]);
}

#[tokio::test]
async fn writes_to_a_missing_collection_do_not_create_it_unless_upserting() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud_missing");
    let c = coll(&db, "ghost");
    let r = c
        .update_many(doc! {}, doc! {"$set": {"a": 1}})
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (0, 0));
    assert_eq!(c.delete_many(doc! {}).await.unwrap().deleted_count, 0);
    assert!(c
        .find_one_and_update(doc! {}, doc! {"$set": {"a": 1}})
        .await
        .unwrap()
        .is_none());
    assert!(c.find_one_and_delete(doc! {}).await.unwrap().is_none());
    assert!(db.list_collection_names().await.unwrap().is_empty());

    c.update_one(doc! {"_id": 1}, doc! {"$set": {"a": 1}})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(
        db.list_collection_names().await.unwrap(),
        vec!["ghost".to_string()]
    );
}

#[tokio::test]
async fn find_one_and_update_returns_the_document_before_or_after() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "fam", vec![doc! {"_id": 1, "n": 1}]).await;
    let before = c
        .find_one_and_update(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .await
        .unwrap();
    assert_eq!(before, Some(doc! {"_id": 1, "n": 1}));
    let after = c
        .find_one_and_update(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(after, Some(doc! {"_id": 1, "n": 3}));
}

#[tokio::test]
async fn find_one_and_update_upserts_projects_and_sorts() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "famsort",
        vec![
            doc! {"_id": 1, "rank": 3},
            doc! {"_id": 2, "rank": 1},
            doc! {"_id": 3, "rank": 2},
        ],
    )
    .await;
    let top = c
        .find_one_and_update(doc! {}, doc! {"$set": {"picked": true}})
        .sort(doc! {"rank": 1})
        .projection(doc! {"rank": 1, "picked": 1, "_id": 0})
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(top, Some(doc! {"rank": 1, "picked": true}));
    assert!(get(&c, 2).await.get_bool("picked").unwrap());
    let last = c
        .find_one_and_update(doc! {}, doc! {"$set": {"last": true}})
        .sort(doc! {"rank": -1})
        .await
        .unwrap();
    assert_eq!(last.unwrap().get_i32("_id").unwrap(), 1);

    let none = c
        .find_one_and_update(doc! {"_id": 10}, doc! {"$set": {"rank": 10}})
        .upsert(true)
        .await
        .unwrap();
    assert!(none.is_none(), "the pre-image of an upsert is null");
    let inserted = c
        .find_one_and_update(doc! {"_id": 11}, doc! {"$set": {"rank": 11}})
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(inserted, Some(doc! {"_id": 11, "rank": 11}));
    assert_eq!(get(&c, 10).await, doc! {"_id": 10, "rank": 10});
}

#[tokio::test]
async fn find_and_modify_reply_always_carries_value_and_last_error_object() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    seeded(&db, "famraw", vec![doc! {"_id": 1}]).await;
    let miss = db
        .run_command(
            doc! {"findAndModify": "famraw", "query": {"_id": 2}, "update": {"$set": {"a": 1}}},
        )
        .await
        .unwrap();
    assert_eq!(miss.get("value"), Some(&Bson::Null));
    assert_eq!(
        miss.get_document("lastErrorObject").unwrap(),
        &doc! {"n": 0, "updatedExisting": false}
    );
    let hit = db
        .run_command(doc! {"findandmodify": "famraw", "query": {"_id": 1}, "update": {"$set": {"a": 1}}, "new": true})
        .await
        .unwrap();
    assert_eq!(hit.get_document("value").unwrap(), &doc! {"_id": 1, "a": 1});
    assert_eq!(
        hit.get_document("lastErrorObject").unwrap(),
        &doc! {"n": 1, "updatedExisting": true}
    );
    let upsert = db
        .run_command(doc! {"findAndModify": "famraw", "query": {"_id": 3}, "update": {"$set": {"a": 1}}, "upsert": true})
        .await
        .unwrap();
    assert_eq!(upsert.get("value"), Some(&Bson::Null));
    assert_eq!(
        upsert.get_document("lastErrorObject").unwrap(),
        &doc! {"n": 1, "updatedExisting": false, "upserted": 3}
    );
    let removed = db
        .run_command(doc! {"findAndModify": "famraw", "query": {"_id": 3}, "remove": true})
        .await
        .unwrap();
    assert_eq!(
        removed.get_document("lastErrorObject").unwrap(),
        &doc! {"n": 1}
    );
    assert_eq!(
        removed.get_document("value").unwrap(),
        &doc! {"_id": 3, "a": 1}
    );
}

#[tokio::test]
async fn find_and_modify_refuses_conflicting_options_with_9() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    for cmd in [
        doc! {"findAndModify": "c", "remove": true, "update": {"$set": {"a": 1}}},
        doc! {"findAndModify": "c", "remove": true, "new": true},
        doc! {"findAndModify": "c", "remove": true, "upsert": true},
        doc! {"findAndModify": "c", "query": {}},
    ] {
        let err = db.run_command(cmd.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(9), "{cmd}");
    }
    let err = db
        .run_command(doc! {"findAndModify": "c", "remove": true, "bogus": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(40415));
}

#[tokio::test]
async fn find_one_and_replace_and_find_one_and_delete() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "famrd",
        vec![doc! {"_id": 1, "v": 2}, doc! {"_id": 2, "v": 1}],
    )
    .await;
    let replaced = c
        .find_one_and_replace(doc! {"_id": 1}, doc! {"w": 9})
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(replaced, Some(doc! {"_id": 1, "w": 9}));
    let deleted = c
        .find_one_and_delete(doc! {"v": {"$exists": true}})
        .sort(doc! {"v": 1})
        .await
        .unwrap();
    assert_eq!(deleted, Some(doc! {"_id": 2, "v": 1}));
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
    assert!(c
        .find_one_and_delete(doc! {"_id": 2})
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn find_and_modify_duplicate_key_is_a_command_error_11000() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    seeded(&db, "famdup", vec![doc! {"_id": 1, "x": 1}]).await;
    let err = db
        .run_command(doc! {
            "findAndModify": "famdup",
            "query": {"_id": 1, "x": 2},
            "update": {"$set": {"y": 1}},
            "upsert": true,
        })
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(11000));
    match err.kind.as_ref() {
        ErrorKind::Command(c) => assert!(c.message.contains("E11000"), "{}", c.message),
        other => panic!("expected a command error, got {other:?}"),
    }
    // The raw reply carries keyPattern/keyValue like mongod.
    let mut raw = server.raw().await;
    let reply = raw
        .command(
            1,
            &doc! {
                "findAndModify": "famdup", "$db": "crud",
                "query": {"_id": 1, "x": 2}, "update": {"$set": {"y": 1}}, "upsert": true,
            },
        )
        .await;
    let body = reply.document;
    assert_eq!(body.get_f64("ok").unwrap(), 0.0);
    assert_eq!(body.get_i32("code").unwrap(), 11000);
    assert_eq!(body.get_document("keyPattern").unwrap(), &doc! {"_id": 1});
    assert_eq!(body.get_document("keyValue").unwrap(), &doc! {"_id": 1});
}

#[tokio::test]
async fn update_upsert_duplicate_key_is_a_write_error_11000() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "updup", vec![doc! {"_id": 1, "x": 1}]).await;
    let err = c
        .update_one(doc! {"_id": 1, "x": 2}, doc! {"$set": {"y": 1}})
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(11000));
}

#[tokio::test]
async fn array_filters_update_only_the_selected_elements() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "arrayfilters",
        vec![doc! {"_id": 1, "grades": [{"g": 80, "ok": false}, {"g": 95, "ok": false}, {"g": 90, "ok": false}]}],
    )
    .await;
    let r = c
        .update_one(doc! {"_id": 1}, doc! {"$set": {"grades.$[high].ok": true}})
        .array_filters(vec![doc! {"high.g": {"$gte": 90}}])
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    let oks: Vec<bool> = get(&c, 1)
        .await
        .get_array("grades")
        .unwrap()
        .iter()
        .map(|g| g.as_document().unwrap().get_bool("ok").unwrap())
        .collect();
    assert_eq!(oks, vec![false, true, true]);

    let after = c
        .find_one_and_update(doc! {"_id": 1}, doc! {"$inc": {"grades.$[low].g": 1}})
        .array_filters(vec![doc! {"low.g": {"$lt": 90}}])
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    let first = after.get_array("grades").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(first.get_i32("g").unwrap(), 81);

    // An identifier without a filter is a write error (mongod's 2 BadValue).
    let err = c
        .update_one(doc! {"_id": 1}, doc! {"$set": {"grades.$[x].ok": true}})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(2));
}

#[tokio::test]
async fn the_positional_operator_updates_the_matched_element() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "positional", vec![doc! {"_id": 1, "xs": [1, 5, 9]}]).await;
    c.update_one(doc! {"xs": {"$gt": 3}}, doc! {"$set": {"xs.$": 50}})
        .await
        .unwrap();
    assert_eq!(
        get(&c, 1).await.get_array("xs").unwrap(),
        &vec![Bson::Int32(1), Bson::Int32(50), Bson::Int32(9)]
    );
}

#[tokio::test]
async fn pipeline_updates_are_applied() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "pipeline", vec![doc! {"_id": 1, "a": 1, "b": 2}]).await;
    let r = c
        .update_one(
            doc! {"_id": 1},
            vec![doc! {"$set": {"c": "$a"}}, doc! {"$unset": "b"}],
        )
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(get(&c, 1).await, doc! {"_id": 1, "a": 1, "c": 1});
}

#[tokio::test]
async fn a_collation_selects_the_documents_updates_and_deletes_act_on() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(&db, "collation", vec![doc! {"_id": 1, "s": "A"}]).await;
    let collation = mongodb::options::Collation::builder()
        .locale("en")
        .strength(mongodb::options::CollationStrength::Secondary)
        .build();
    let r = c
        .update_one(doc! {"s": "a"}, doc! {"$set": {"t": 1}})
        .collation(collation.clone())
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    let deleted = c
        .find_one_and_delete(doc! {"s": "a"})
        .collation(collation)
        .await
        .unwrap();
    assert_eq!(deleted, Some(doc! {"_id": 1, "s": "A", "t": 1}));
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 0);
}

#[tokio::test]
async fn a_duplicate_key_in_an_update_leaves_the_document_and_its_index_entries_intact() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = seeded(
        &db,
        "uniq",
        vec![doc! {"_id": 1, "u": 1}, doc! {"_id": 2, "u": 2}],
    )
    .await;
    db.run_command(doc! {"createIndexes": "uniq", "indexes": [{"key": {"u": 1}, "name": "u_1", "unique": true}]})
        .await
        .unwrap();
    let err = c
        .update_one(doc! {"_id": 2}, doc! {"$set": {"u": 1}})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(11000));
    assert_eq!(get(&c, 2).await, doc! {"_id": 2, "u": 2});
    // `u: 2` is still held by document 2: inserting it again must still fail.
    let err = c.insert_one(doc! {"_id": 3, "u": 2}).await.unwrap_err();
    assert_eq!(write_code(&err), Some(11000));
    // And `u: 2` can move once document 2 lets go of it.
    c.update_one(doc! {"_id": 2}, doc! {"$set": {"u": 3}})
        .await
        .unwrap();
    c.insert_one(doc! {"_id": 3, "u": 2}).await.unwrap();
}

#[tokio::test]
async fn inserted_documents_are_stored_with_their_id_first() {
    let server = TestServer::start().await;
    let db = server.client().await.database("crud");
    let c = coll(&db, "id_first");
    // insert_many sends a document sequence (kept as bytes); a command body carries its
    // documents decoded: both paths store `_id` first, as mongod does.
    c.insert_many([doc! {"a": 1, "_id": 1, "z": [1, {"y": 2}]}, doc! {"b": 2}])
        .await
        .unwrap();
    db.run_command(doc! {"insert": "id_first", "documents": [{"c": 3, "_id": 3}]})
        .await
        .unwrap();
    let docs: Vec<Document> = {
        use futures::TryStreamExt;
        c.find(doc! {})
            .sort(doc! {"_id": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    };
    assert_eq!(docs.len(), 3);
    for d in &docs {
        assert_eq!(d.keys().next().map(String::as_str), Some("_id"), "{d}");
    }
    assert_eq!(docs[0], doc! {"_id": 1, "a": 1, "z": [1, {"y": 2}]});
    assert_eq!(docs[1], doc! {"_id": 3, "c": 3});
    assert!(matches!(docs[2].get("_id"), Some(Bson::ObjectId(_))));
    assert_eq!(docs[2].get_i32("b"), Ok(2));
}
