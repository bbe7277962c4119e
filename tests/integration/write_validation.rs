//! Write commands refuse what mongod 7.0 refuses, with its codes and messages, and the server
//! keeps serving afterwards: write concerns a standalone cannot honour, empty and oversized
//! batches, and `_id` values that cannot be stored.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};

/// Runs `command` on database `wv` and returns the reply (ok or not).
async fn run(server: &TestServer, command: Document) -> Document {
    let mut raw = server.raw().await;
    let mut body = command;
    body.insert("$db", "wv");
    raw.command(1, &body).await.document
}

fn assert_error(reply: &Document, code: i32, message: &str) {
    assert_eq!(reply.get_f64("ok"), Ok(0.0), "{reply}");
    assert_eq!(reply.get_i32("code"), Ok(code), "{reply}");
    assert_eq!(reply.get_str("errmsg"), Ok(message), "{reply}");
}

#[tokio::test]
async fn write_concerns_a_standalone_cannot_honour_are_refused_and_nothing_is_written() {
    let server = TestServer::start().await;
    let cases: Vec<(Bson, i32, &str)> = vec![
        (
            Bson::Document(doc! {"w": 2}),
            2,
            "cannot use 'w' > 1 when a host is not replicated",
        ),
        (
            Bson::Document(doc! {"w": 50}),
            2,
            "cannot use 'w' > 1 when a host is not replicated",
        ),
        (
            Bson::Document(doc! {"w": "bogusTag"}),
            2,
            "cannot use non-majority 'w' mode \"bogusTag\" when a host is not a member of a replica set",
        ),
        (
            Bson::Document(doc! {"w": -1}),
            9,
            "w has to be a non-negative number and not greater than 50; found: -1",
        ),
        (
            Bson::Document(doc! {"j": "yes"}),
            14,
            "BSON field 'writeConcern.j' is the wrong type 'string', expected types '[bool, long, int, decimal, double]'",
        ),
        (
            Bson::Document(doc! {"wtimeout": 3_000_000_000i64}),
            9,
            "wtimeout must be a 32-bit integer",
        ),
    ];
    for (wc, code, message) in cases {
        for command in [
            doc! {"insert": "c", "documents": [{"_id": 1}], "writeConcern": wc.clone()},
            doc! {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "upsert": true}], "writeConcern": wc.clone()},
            doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}], "writeConcern": wc.clone()},
            doc! {"findAndModify": "c", "query": {}, "update": {"a": 1}, "upsert": true, "writeConcern": wc.clone()},
        ] {
            assert_error(&run(&server, command.clone()).await, code, message);
        }
    }
    let client = server.client().await;
    let coll = client.database("wv").collection::<Document>("c");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);

    for wc in [
        doc! {"w": 0},
        doc! {"w": 1},
        doc! {"w": "majority", "j": true},
    ] {
        let reply = run(
            &server,
            doc! {"insert": "ok", "documents": [{}], "writeConcern": wc.clone()},
        )
        .await;
        assert_eq!(reply.get_f64("ok"), Ok(1.0), "{wc}: {reply}");
    }
}

#[tokio::test]
async fn batch_sizes_outside_1_to_100000_are_refused() {
    let server = TestServer::start().await;
    let message =
        |n: usize| format!("Write batch sizes must be between 1 and 100000. Got {n} operations.");
    for (command, n) in [
        (doc! {"insert": "c", "documents": []}, 0),
        (doc! {"update": "c", "updates": []}, 0),
        (doc! {"delete": "c", "deletes": []}, 0),
    ] {
        assert_error(&run(&server, command).await, 16, &message(n));
    }
    let too_many: Vec<Document> = (0..100_001).map(|i| doc! {"_id": i}).collect();
    let reply = run(&server, doc! {"insert": "c", "documents": too_many}).await;
    assert_error(&reply, 16, &message(100_001));

    // The largest allowed batch is applied.
    let most: Vec<Document> = (0..100_000).map(|i| doc! {"_id": i}).collect();
    let reply = run(&server, doc! {"insert": "c", "documents": most}).await;
    assert_eq!(reply.get_i32("n"), Ok(100_000), "{reply}");
}

#[tokio::test]
async fn a_delete_limit_other_than_0_or_1_is_refused() {
    let server = TestServer::start().await;
    for limit in [Bson::Int32(-1), Bson::Int32(2)] {
        let reply = run(
            &server,
            doc! {"delete": "c", "deletes": [{"q": {}, "limit": limit.clone()}]},
        )
        .await;
        assert_eq!(reply.get_f64("ok"), Ok(0.0), "{reply}");
        assert_eq!(reply.get_i32("code"), Ok(9), "{reply}");
        assert!(reply
            .get_str("errmsg")
            .unwrap()
            .starts_with("The limit field in delete objects must be 0 or 1."));
    }
}

#[tokio::test]
async fn ids_that_cannot_be_stored_are_write_errors() {
    let server = TestServer::start().await;
    let cases: Vec<(Bson, i32, &str)> = vec![
        (
            Bson::Array(vec![Bson::Int32(1)]),
            53,
            "The '_id' value cannot be of type array",
        ),
        (
            Bson::RegularExpression(common::bson::Regex {
                pattern: "a".into(),
                options: String::new(),
            }),
            53,
            "The '_id' value cannot be of type regex",
        ),
        (
            Bson::Document(doc! {"$gt": 1}),
            52,
            "_id fields may not contain '$'-prefixed fields: $gt is not valid for storage.",
        ),
        (
            Bson::Document(doc! {"a": {"b": [{"$c": 1}]}}),
            52,
            "_id fields may not contain '$'-prefixed fields: $c is not valid for storage.",
        ),
    ];
    for (id, code, message) in cases {
        let reply = run(
            &server,
            doc! {"insert": "c", "documents": [{"_id": id.clone()}, {"_id": "fine"}], "ordered": false},
        )
        .await;
        assert_eq!(reply.get_f64("ok"), Ok(1.0), "{reply}");
        assert_eq!(reply.get_i32("n"), Ok(1), "{reply}");
        let errors = reply.get_array("writeErrors").unwrap();
        let error = errors[0].as_document().unwrap();
        assert_eq!(error.get_i32("index"), Ok(0));
        assert_eq!(error.get_i32("code"), Ok(code), "{id}");
        assert_eq!(error.get_str("errmsg"), Ok(message), "{id}");
        run(
            &server,
            doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}]},
        )
        .await;
    }
    // A document `_id` without `$` fields is stored.
    let client = server.client().await;
    let coll = client.database("wv").collection::<Document>("ids");
    coll.insert_one(doc! {"_id": {"a": 1, "b": {"c": 2}}})
        .await
        .unwrap();
    let err = coll.insert_one(doc! {"_id": [1, 2]}).await.unwrap_err();
    assert_eq!(
        match *err.kind {
            mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(ref e)) =>
                e.code,
            _ => error_code(&err).unwrap_or(0),
        },
        53
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn a_negative_or_non_numeric_max_time_ms_is_refused() {
    let server = TestServer::start().await;
    for (value, message) in [
        (Bson::Int32(-1), "-1 value for maxTimeMS is out of range"),
        (Bson::String("10".into()), "maxTimeMS must be a number"),
        (Bson::Double(1.5), "maxTimeMS has non-integral value"),
    ] {
        for command in [
            doc! {"insert": "c", "documents": [{}], "maxTimeMS": value.clone()},
            doc! {"find": "c", "maxTimeMS": value.clone()},
        ] {
            assert_error(&run(&server, command).await, 2, message);
        }
    }
    let reply = run(&server, doc! {"find": "c", "maxTimeMS": 1000}).await;
    assert_eq!(reply.get_f64("ok"), Ok(1.0), "{reply}");
}
