//! Requests whose cost a client controls: each is answered with mongod's error (or the right
//! result) instead of growing without bound or running past its `maxTimeMS`, and the server
//! serves other clients meanwhile. Memory peaks of the same requests are measured in
//! `tests/limits.rs`, a binary of its own.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::pipelines::{aggregate, aggregate_err};
use common::TestServer;
use mongodb::Collection;

async fn collection(server: &TestServer, docs: Vec<Document>) -> Collection<Document> {
    let client = server.client().await;
    let coll: Collection<Document> = client.database("governance").collection("c");
    if !docs.is_empty() {
        coll.insert_many(docs).await.unwrap();
    }
    coll
}

/// Runs `pipeline` with `maxTimeMS` while another client pings; returns the pipeline's error
/// code and whether every ping was answered.
async fn aggregate_while_pinging(
    server: &TestServer,
    coll: &Collection<Document>,
    pipeline: Vec<Document>,
    max_time_ms: u64,
) -> Option<i32> {
    let other = server.client().await;
    let hostile = {
        let coll = coll.clone();
        tokio::spawn(async move {
            let err = match coll
                .aggregate(pipeline)
                .max_time(std::time::Duration::from_millis(max_time_ms))
                .await
            {
                Ok(mut cursor) => {
                    use futures::TryStreamExt;
                    let mut n = 0usize;
                    loop {
                        match cursor.try_next().await {
                            Ok(Some(_)) => n += 1,
                            Ok(None) => panic!("the pipeline ended after {n} documents"),
                            Err(e) => break e,
                        }
                    }
                }
                Err(e) => e,
            };
            common::error_code(&err)
        })
    };
    while !hostile.is_finished() {
        other
            .database("admin")
            .run_command(doc! {"ping": 1})
            .await
            .expect("another client is served meanwhile");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    hostile.await.unwrap()
}

#[tokio::test]
async fn densify_whose_step_cannot_advance_the_value_ends_with_mongods_cap_error() {
    let server = TestServer::start().await;
    // Near 1e17 adding 1.0 leaves a double where it was: the sequence never reaches its bound.
    let coll = collection(
        &server,
        vec![
            doc! {"_id": 1, "v": 1e17},
            doc! {"_id": 2, "v": 1e17 + 64.0},
        ],
    )
    .await;
    let pipeline =
        vec![doc! {"$densify": {"field": "v", "range": {"step": 1.0, "bounds": "full"}}}];
    assert_eq!(aggregate_err(&coll, pipeline).await, Some(5897900));

    // With explicit bounds and a document at the lower bound (never a generated document).
    let pipeline = vec![
        doc! {"$densify": {"field": "v", "range": {"step": 1.0, "bounds": [1e17, 1e17 + 64.0]}}},
    ];
    assert_eq!(aggregate_err(&coll, pipeline).await, Some(5897900));

    // A step the values can take still densifies.
    let pipeline = vec![
        doc! {"$densify": {"field": "v", "range": {"step": 16.0, "bounds": "full"}}},
        doc! {"$count": "n"},
    ];
    assert_eq!(aggregate(&coll, pipeline).await, vec![doc! {"n": 5}]);
}

#[tokio::test]
async fn unwinding_a_long_array_is_linear_and_interruptible() {
    let server = TestServer::start().await;
    let items: Vec<i32> = (0..100_000).collect();
    let coll = collection(&server, vec![doc! {"_id": 1, "xs": items.clone()}]).await;
    let counted = aggregate(
        &coll,
        vec![
            doc! {"$unwind": {"path": "$xs", "includeArrayIndex": "i"}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}, "last": {"$max": "$i"}}},
        ],
    )
    .await;
    assert_eq!(
        counted,
        vec![doc! {"_id": Bson::Null, "n": 100_000, "last": 99_999_i64}]
    );
    // The rows come out in order and keep the document's other fields in place.
    let first = aggregate(
        &coll,
        vec![
            doc! {"$unwind": "$xs"},
            doc! {"$skip": 99_998},
            doc! {"$limit": 5},
        ],
    )
    .await;
    assert_eq!(
        first,
        vec![doc! {"_id": 1, "xs": 99_998}, doc! {"_id": 1, "xs": 99_999}]
    );

    // Unwinding it many times over is stopped by maxTimeMS.
    let many: Vec<Document> = (2..50)
        .map(|i| doc! {"_id": i, "xs": items.clone()})
        .collect();
    coll.insert_many(many).await.unwrap();
    let pipeline = vec![
        doc! {"$unwind": "$xs"},
        doc! {"$addFields": {"ys": {"$range": [0, 1000]}}},
        doc! {"$unwind": "$ys"},
        doc! {"$group": {"_id": "$xs", "n": {"$sum": 1}}},
    ];
    assert_eq!(
        aggregate_while_pinging(&server, &coll, pipeline, 300).await,
        Some(50)
    );
}

#[tokio::test]
async fn expressions_that_double_a_value_stop_at_the_value_size_limit() {
    let server = TestServer::start().await;
    let coll = collection(&server, vec![doc! {"_id": 1, "x": [1], "s": "ab"}]).await;
    let doubling = |body: Document| {
        vec![doc! {"$project": {"v": {"$reduce": {
            "input": {"$range": [0, 64]},
            "initialValue": "$s",
            "in": body,
        }}}}]
    };
    // A string doubled: mongod's limit on strings.
    assert_eq!(
        aggregate_err(&coll, doubling(doc! {"$concat": ["$$value", "$$value"]})).await,
        Some(16493)
    );
    // An array doubled, by $concatArrays and by a literal array.
    let arrays = |body: Document| {
        vec![doc! {"$project": {"v": {"$reduce": {
            "input": {"$range": [0, 64]},
            "initialValue": "$x",
            "in": body,
        }}}}]
    };
    assert_eq!(
        aggregate_err(
            &coll,
            arrays(doc! {"$concatArrays": ["$$value", "$$value"]})
        )
        .await,
        Some(10334)
    );
    let literal = vec![doc! {"$project": {"v": {"$reduce": {
        "input": {"$range": [0, 64]},
        "initialValue": "$x",
        "in": ["$$value", "$$value"],
    }}}}];
    assert_eq!(aggregate_err(&coll, literal).await, Some(10334));
    // A document doubled through $setField: two fields each set to the last value.
    let nested = vec![doc! {"$project": {"v": {"$reduce": {
        "input": {"$range": [0, 64]},
        "initialValue": {"s": "$s"},
        "in": {"$setField": {
            "field": "b",
            "input": {"$setField": {"field": "c", "input": "$$value", "value": "$$value"}},
            "value": "$$value",
        }},
    }}}}];
    assert_eq!(aggregate_err(&coll, nested).await, Some(10334));
    // $replaceAll growing a string past the limit in one step: refused before it is built.
    let replace = vec![doc! {"$project": {"v": {"$reduce": {
        "input": {"$range": [0, 64]},
        "initialValue": "$s",
        // An empty `find` puts the replacement before every character and at the end.
        "in": {"$replaceAll": {"input": "$$value", "find": "", "replacement": "$$value"}},
    }}}}];
    assert_eq!(aggregate_err(&coll, replace).await, Some(16493));
    // $map over a large $range building large elements.
    let map = vec![doc! {"$project": {"v": {"$map": {
        "input": {"$range": [0, 1_000_000]},
        "in": {"$concat": ["$s", "$s", "$s", "$s", "$s", "$s", "$s", "$s"]},
    }}}}];
    assert_eq!(aggregate_err(&coll, map).await, Some(10334));
    // $split of a long string into many parts.
    let split = vec![doc! {"$project": {"v": {"$split": [
        {"$reduce": {"input": {"$range": [0, 22]}, "initialValue": "a,", "in": {"$concat": ["$$value", "$$value"]}}},
        ",",
    ]}}}];
    assert_eq!(aggregate_err(&coll, split).await, Some(10334));

    // An update pipeline doubling an array stage by stage.
    let stages: Vec<Document> = (0..34)
        .map(|_| doc! {"$set": {"x": {"$concatArrays": ["$x", "$x"]}}})
        .collect();
    let err = coll.update_one(doc! {"_id": 1}, stages).await.unwrap_err();
    let code = match err.kind.as_ref() {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => {
            Some(e.code)
        }
        _ => common::error_code(&err),
    };
    assert_eq!(code, Some(10334), "{err}");

    // Values under the limit are computed as before.
    let fine = vec![
        doc! {"$project": {"_id": 0, "n": {"$strLenBytes": {"$reduce": {
            "input": {"$range": [0, 20]},
            "initialValue": "$s",
            "in": {"$concat": ["$$value", "$$value"]},
        }}}}},
    ];
    assert_eq!(aggregate(&coll, fine).await, vec![doc! {"n": 2 << 20}]);
}

#[tokio::test]
async fn long_expression_loops_stop_at_max_time_ms() {
    let server = TestServer::start().await;
    let coll = collection(&server, vec![doc! {"_id": 1}]).await;
    // About 10^9 additions: far longer than the limit.
    let pipeline = vec![doc! {"$project": {"v": {"$reduce": {
        "input": {"$range": [0, 1_000_000]},
        "initialValue": 0,
        "in": {"$add": ["$$value", {"$reduce": {
            "input": {"$range": [0, 1000]},
            "initialValue": 0,
            "in": {"$add": ["$$value", "$$this"]},
        }}]},
    }}}}];
    assert_eq!(
        aggregate_while_pinging(&server, &coll, pipeline, 200).await,
        Some(50)
    );
    // The same in a find's $expr and in an update's pipeline.
    let expensive = doc! {"$gt": [{"$size": {"$map": {
        "input": {"$range": [0, 1_000_000]},
        "in": {"$size": {"$range": [0, 1000]}},
    }}}, 0]};
    let err = coll
        .find_one(doc! {"$expr": expensive.clone()})
        .max_time(std::time::Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(common::error_code(&err), Some(50), "{err}");
    let client = server.client().await;
    let reply = client
        .database("governance")
        .run_command(doc! {
            "update": "c",
            "updates": [{"q": {"_id": 1}, "u": [{"$set": {"v": expensive}}]}],
            "maxTimeMS": 200,
        })
        .await;
    let err = reply.unwrap_err();
    assert_eq!(common::error_code(&err), Some(50), "{err}");
}

#[tokio::test]
async fn regex_find_all_with_an_empty_pattern_is_linear_and_bounded() {
    let server = TestServer::start().await;
    // 400 KB: 200,000 matches, each reading the text on from the last one.
    let text = "é".repeat(200_000);
    let coll = collection(&server, vec![doc! {"_id": 1, "t": text}]).await;
    let pipeline = vec![doc! {"$project": {"_id": 0,
        "n": {"$size": {"$regexFindAll": {"input": "$t", "regex": ""}}},
        "last": {"$arrayElemAt": [{"$regexFindAll": {"input": "$t", "regex": ""}}, -1]},
    }}];
    let out = aggregate(&coll, pipeline).await;
    assert_eq!(
        out,
        vec![doc! {"n": 200_000, "last": {"match": "", "idx": 199_999, "captures": []}}]
    );
    // A million matches make an array past the value limit: refused as it is built.
    coll.insert_one(doc! {"_id": 2, "t": "a".repeat(1_000_000)})
        .await
        .unwrap();
    let pipeline = vec![
        doc! {"$match": {"_id": 2}},
        doc! {"$project": {"n": {"$size": {"$regexFindAll": {"input": "$t", "regex": ""}}}}},
    ];
    assert_eq!(aggregate_err(&coll, pipeline).await, Some(10334));
}

#[tokio::test]
async fn a_result_document_past_16_mib_and_16_kib_is_refused() {
    let server = TestServer::start().await;
    let coll = collection(
        &server,
        vec![
            doc! {"_id": 1, "s": "x".repeat(8_400_000)},
            doc! {"_id": 2, "s": "x".repeat(8_000_000)},
        ],
    )
    .await;
    let twice = |id: i32| {
        vec![
            doc! {"$match": {"_id": id}},
            doc! {"$project": {"a": "$s", "b": "$s"}},
        ]
    };
    // 16.8 MB: past what mongod serializes (16,793,600 bytes).
    assert_eq!(aggregate_err(&coll, twice(1)).await, Some(10334));
    // 16.0 MB: returned.
    let out = aggregate(&coll, twice(2)).await;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].get_str("b").unwrap().len(), 8_000_000);
}

#[tokio::test]
async fn a_window_over_a_growing_frame_stops_at_max_time_ms() {
    let server = TestServer::start().await;
    let docs: Vec<Document> = (0..3_000)
        .map(|i| doc! {"_id": i, "a": i, "tags": [i % 7, i % 5, i % 3]})
        .collect();
    let coll = collection(&server, docs).await;
    // Each document's $push holds every document before it: the column is the square of the
    // partition (4.5 million arrays), far past the time limit.
    let pipeline = vec![doc! {"$setWindowFields": {
        "sortBy": {"a": 1},
        "output": {"w": {"$push": "$tags", "window": {"documents": ["unbounded", "current"]}}},
    }}];
    assert_eq!(
        aggregate_while_pinging(&server, &coll, pipeline, 300).await,
        Some(50)
    );
}

#[tokio::test]
async fn an_indexed_or_of_thousands_of_branches_stops_at_max_time_ms() {
    let server = TestServer::start().await;
    let docs: Vec<Document> = (0..3_000).map(|i| doc! {"_id": i, "a": i}).collect();
    let coll = collection(&server, docs).await;
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    // 20,000 ranges, each a scan of its own that returns a few entries.
    let branches: Vec<Document> = (0..20_000)
        .map(|i| doc! {"a": {"$gte": (i * 7) % 6_000 - 3_000, "$lt": (i * 7) % 6_000 - 2_900}})
        .collect();
    let err = coll
        .count_documents(doc! {"$or": branches})
        .max_time(std::time::Duration::from_millis(50))
        .await
        .unwrap_err();
    assert_eq!(common::error_code(&err), Some(50), "{err}");
}

#[tokio::test]
async fn a_multi_update_planning_thousands_of_branches_stops_at_max_time_ms() {
    let server = TestServer::start().await;
    let docs: Vec<Document> = (0..300).map(|i| doc! {"_id": i, "a": i}).collect();
    let coll = collection(&server, docs).await;
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    // 50,000 ranges that match nothing: all the statement's time is planning and opening one
    // scan per branch, which once ran unchecked and answered `n: 0` long past the limit.
    let branches: Vec<Document> = (0..50_000)
        .map(|i| doc! {"a": {"$gte": -10 * i - 5, "$lt": -10 * i}})
        .collect();
    let reply = coll
        .client()
        .database("governance")
        .run_command(doc! {
            "update": "c",
            "updates": [{"q": {"$or": branches}, "u": {"$set": {"z": 1}}, "multi": true}],
            "maxTimeMS": 5,
        })
        .await;
    let err = reply.expect_err("the update stops at its time limit");
    assert_eq!(common::error_code(&err), Some(50), "{err}");
}

#[tokio::test]
async fn explaining_an_or_of_thousands_of_branches_shows_the_filter_once() {
    let server = TestServer::start().await;
    let docs: Vec<Document> = (0..100)
        .map(|i| doc! {"_id": i, "a": i, "b": i % 2})
        .collect();
    let coll = collection(&server, docs).await;
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    // Each input stage once showed the whole filter: 20,000 copies of 20,000 branches.
    let branches: Vec<Document> = (0..20_000)
        .map(|i| doc! {"a": {"$gte": i % 100, "$lt": 100}})
        .collect();
    let filter = doc! {"$or": branches.clone(), "b": 1};
    let reply = coll
        .client()
        .database("governance")
        .run_command(doc! {
            "explain": {"find": "c", "filter": filter},
            "verbosity": "executionStats",
        })
        .await
        .unwrap();
    let plan = reply
        .get_document("executionStats")
        .unwrap()
        .get_document("executionStages")
        .unwrap();
    assert_eq!(plan.get_str("stage").unwrap(), "OR");
    assert_eq!(plan.get_document("filter").unwrap(), &doc! {"b": 1});
    let inputs = plan.get_array("inputStages").unwrap();
    assert_eq!(inputs.len(), 20_000);
    let mut examined = 0;
    for (input, branch) in inputs.iter().zip(&branches) {
        let fetch = input.as_document().unwrap();
        assert_eq!(fetch.get_document("filter").unwrap(), branch);
        examined += fetch.get_i64("docsExamined").unwrap();
    }
    // Every branch reaches the odd documents the first one returned: each is loaded once.
    assert_eq!(plan.get_i64("nReturned").unwrap(), 50);
    assert!(examined <= 100, "{examined} documents loaded");
}

#[tokio::test]
async fn skip_passes_errors_on_instead_of_counting_them_as_documents() {
    let server = TestServer::start().await;
    let docs: Vec<Document> = (0..50).map(|i| doc! {"_id": i}).collect();
    let coll = collection(&server, docs).await;
    // Each document's $set fails; $skip once swallowed the errors and answered an empty ok.
    let pipeline = vec![
        doc! {"$set": {"u": {"$range": [-10_000_000, 100_000_000, 1]}}},
        doc! {"$skip": 1_000_000},
    ];
    assert_eq!(
        aggregate_err(&coll, pipeline).await,
        Some(146),
        "the stage's error, not an empty result"
    );
    // So does an interruption: a long pipeline under $skip still stops at maxTimeMS.
    let pipeline = vec![
        doc! {"$set": {"u": {"$size": {"$map": {
            "input": {"$range": [0, 100_000]},
            "in": {"$size": {"$range": [0, 1000]}},
        }}}}},
        doc! {"$skip": 1_000_000},
    ];
    assert_eq!(
        aggregate_while_pinging(&server, &coll, pipeline, 100).await,
        Some(50)
    );
}
