//! A NUL byte can reach a field name only through a string a command turns into one: a stage's
//! path argument, `$setField`'s `field`, `$arrayToObject`'s keys, `$rename`'s target. No BSON
//! field name can hold one, so each is refused with mongod's code when the command is parsed
//! (or, for computed keys, when the value is built), never with an internal error while the
//! reply is encoded.

use crate::common;

use common::bson::{doc, Document};
use common::pipelines::aggregate_err;
use common::TestServer;
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::Collection;

/// The code of a single-document write's error.
fn write_error_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
        _ => common::error_code(err),
    }
}

#[tokio::test]
async fn strings_that_would_become_field_names_with_a_nul_byte_are_refused_with_mongods_codes() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("nul_names");
    let coll: Collection<Document> = db.collection("c");
    coll.insert_one(doc! {"_id": 1, "a": [1, 2], "x": 5})
        .await
        .unwrap();
    db.collection::<Document>("o")
        .insert_one(doc! {"_id": 1, "k": 1})
        .await
        .unwrap();
    let set_field = doc! {"$setField": {"field": "a\0b", "input": {}, "value": 1}};
    let cases: Vec<(&str, Vec<Document>, i32)> = vec![
        ("$count", vec![doc! {"$count": "a\0b"}], 40159),
        (
            "$lookup as",
            vec![
                doc! {"$lookup": {"from": "o", "localField": "_id", "foreignField": "_id", "as": "a\0b"}},
            ],
            16411,
        ),
        (
            "$graphLookup as",
            vec![
                doc! {"$graphLookup": {"from": "o", "startWith": "$_id", "connectFromField": "k", "connectToField": "_id", "as": "a\0b"}},
            ],
            16411,
        ),
        (
            "$unwind includeArrayIndex",
            vec![doc! {"$unwind": {"path": "$a", "includeArrayIndex": "i\0x"}}],
            16411,
        ),
        ("$unwind path", vec![doc! {"$unwind": "$a\0b"}], 16411),
        (
            "$group key path",
            vec![doc! {"$group": {"_id": "$x\0y"}}],
            16411,
        ),
        (
            "$densify field",
            vec![doc! {"$densify": {"field": "x\0y", "range": {"step": 1, "bounds": "full"}}}],
            16411,
        ),
        (
            "$setField in $replaceWith",
            vec![
                doc! {"$replaceWith": {"$setField": {"field": "a\0b", "input": "$$ROOT", "value": 1}}},
            ],
            9534700,
        ),
        (
            "$setField in $project",
            vec![doc! {"$project": {"y": set_field.clone()}}],
            9534700,
        ),
        (
            "$unsetField",
            vec![doc! {"$project": {"y": {"$unsetField": {"field": "a\0b", "input": {}}}}}],
            9534700,
        ),
        (
            "$arrayToObject",
            vec![doc! {"$replaceWith": {"$arrayToObject": [[["a\0b", 1]]]}}],
            4940400,
        ),
    ];
    for (name, pipeline, code) in cases {
        assert_eq!(aggregate_err(&coll, pipeline).await, Some(code), "{name}");
    }

    // A pipeline-style update and a find projection compile the same expressions.
    let err = coll
        .update_one(
            doc! {"_id": 1},
            vec![doc! {"$set": {"y": set_field.clone()}}],
        )
        .await
        .unwrap_err();
    assert_eq!(write_error_code(&err), Some(9534700));
    // The document is unchanged.
    let stored = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(stored, doc! {"_id": 1, "a": [1, 2], "x": 5});

    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$rename": {"x": "x\0y"}})
        .await
        .unwrap_err();
    assert_eq!(write_error_code(&err), Some(2));
}
