//! Every aggregation stage compares strings under the operation's collation (the command's,
//! else the aggregated collection's default), as mongod 7.0 does: later `$match` and `$sort`,
//! `$group` keys and the comparing accumulators, `$bucket`, `$bucketAuto`, `$setWindowFields`,
//! `$densify`, `$fill`, `$sortByCount`, expressions, `$lookup`, `$graphLookup`, `$unionWith`
//! (whose foreign collection's own default is ignored), `$facet`, `$redact` and `$merge`.
//!
//! One table, each case a pipeline under a case-insensitive collation (strength 2) or
//! `numericOrdering`, with what mongod documents for it; each case is also run without a
//! collation and must then give another answer, so no case passes by comparing bytes.

use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use mongodb::Database;

fn ci() -> Document {
    doc! {"locale": "en", "strength": 2}
}

fn numeric() -> Document {
    doc! {"locale": "en", "numericOrdering": true}
}

/// `items`: three spellings of apple and a banana (`s`), numeric strings (`n`), keys that
/// differ only in case (`k`); `other`: what `$lookup`, `$graphLookup` and `$unionWith` read.
async fn seeded(server: &TestServer) -> Database {
    let db = server.client().await.database("aggcoll");
    let items = vec![
        doc! {"_id": 1, "s": "apple", "n": "10", "k": "a", "v": 1, "x": "seen"},
        doc! {"_id": 2, "s": "Apple", "n": "9", "k": "A", "v": 2},
        doc! {"_id": 3, "s": "banana", "n": "100", "k": "b", "v": 3},
        doc! {"_id": 4, "s": "APPLE", "n": "2", "k": "B", "v": 4},
    ];
    db.collection::<Document>("items")
        .insert_many(items)
        .await
        .unwrap();
    let other = vec![
        doc! {"_id": 10, "name": "APPLE"},
        doc! {"_id": 11, "name": "Banana"},
    ];
    db.collection::<Document>("other")
        .insert_many(other)
        .await
        .unwrap();
    db
}

/// Runs `pipeline` on `coll` under `collation` (none: the collection's default); the whole
/// result (it fits one batch) or the error code.
async fn aggregate(
    db: &Database,
    coll: &str,
    pipeline: &[Document],
    collation: Option<Document>,
) -> Result<Vec<Document>, Option<i32>> {
    let mut cmd = doc! {"aggregate": coll, "pipeline": pipeline.to_vec(), "cursor": {}};
    if let Some(c) = collation {
        cmd.insert("collation", c);
    }
    let reply = db.run_command(cmd).await.map_err(|e| error_code(&e))?;
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_i64("id").unwrap_or(0), 0, "one batch");
    Ok(cursor
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().clone())
        .collect())
}

struct Case {
    name: &'static str,
    collation: fn() -> Document,
    pipeline: Vec<Document>,
    expected: Vec<Document>,
}

fn cases() -> Vec<Case> {
    let by_id = doc! {"$sort": {"_id": 1}};
    let not_leading = doc! {"$project": {"s": 1, "n": 1, "k": 1, "v": 1, "x": 1}};
    vec![
        Case {
            name: "a later $match compiles its filter with the collation",
            collation: ci,
            pipeline: vec![
                not_leading.clone(),
                doc! {"$match": {"s": "APPLE"}},
                by_id.clone(),
                doc! {"$project": {"_id": 1}},
            ],
            expected: vec![doc! {"_id": 1}, doc! {"_id": 2}, doc! {"_id": 4}],
        },
        Case {
            name: "a later $match compares numeric strings by their numbers",
            collation: numeric,
            pipeline: vec![
                not_leading.clone(),
                doc! {"$match": {"n": {"$gt": "50"}}},
                doc! {"$project": {"_id": 1}},
            ],
            expected: vec![doc! {"_id": 3}],
        },
        Case {
            name: "$group keys of numeric strings with leading zeros are one group",
            collation: numeric,
            pipeline: vec![
                by_id.clone(),
                doc! {"$group": {
                    "_id": {"$cond": [{"$eq": ["$_id", 1]}, "010", "10"]},
                    "ids": {"$push": "$_id"}
                }},
            ],
            expected: vec![doc! {"_id": "010", "ids": [1, 2, 3, 4]}],
        },
        Case {
            name: "a later $sort orders case-insensitively, ties by the next key",
            collation: ci,
            pipeline: vec![
                not_leading.clone(),
                doc! {"$sort": {"s": 1, "_id": 1}},
                doc! {"$project": {"_id": 1}},
            ],
            expected: vec![
                doc! {"_id": 1},
                doc! {"_id": 2},
                doc! {"_id": 4},
                doc! {"_id": 3},
            ],
        },
        Case {
            name: "a later $sort orders numeric strings by their numbers",
            collation: numeric,
            pipeline: vec![
                not_leading.clone(),
                doc! {"$sort": {"n": 1}},
                doc! {"$project": {"_id": 1}},
            ],
            expected: vec![
                doc! {"_id": 4},
                doc! {"_id": 2},
                doc! {"_id": 1},
                doc! {"_id": 3},
            ],
        },
        Case {
            name: "$group keys equal under the collation form one group keeping the first key",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$group": {"_id": "$s", "n": {"$sum": 1}}},
                doc! {"$sort": {"n": -1}},
            ],
            expected: vec![
                doc! {"_id": "apple", "n": 3},
                doc! {"_id": "banana", "n": 1},
            ],
        },
        Case {
            name: "$group on a document key compares its strings under the collation",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$group": {"_id": {"s": "$s"}, "ids": {"$push": "$_id"}}},
                doc! {"$sort": {"_id": 1}},
            ],
            expected: vec![
                doc! {"_id": {"s": "apple"}, "ids": [1, 2, 4]},
                doc! {"_id": {"s": "banana"}, "ids": [3]},
            ],
        },
        Case {
            name: "$addToSet keeps one of the values equal under the collation",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$group": {"_id": null, "set": {"$addToSet": "$s"}}},
            ],
            expected: vec![doc! {"_id": null, "set": ["apple", "banana"]}],
        },
        Case {
            name: "$min and $max compare under the collation, the first of equals kept",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$group": {"_id": null, "lo": {"$min": "$k"}, "hi": {"$max": "$k"}}},
            ],
            expected: vec![doc! {"_id": null, "lo": "a", "hi": "b"}],
        },
        Case {
            name: "$max of numeric strings under numericOrdering",
            collation: numeric,
            pipeline: vec![doc! {"$group": {"_id": null, "hi": {"$max": "$n"}}}],
            expected: vec![doc! {"_id": null, "hi": "100"}],
        },
        Case {
            name: "$minN under numericOrdering",
            collation: numeric,
            pipeline: vec![
                doc! {"$group": {"_id": null, "lo": {"$minN": {"input": "$n", "n": 2}}}},
            ],
            expected: vec![doc! {"_id": null, "lo": ["2", "9"]}],
        },
        Case {
            name: "$topN sorts its sortBy under the collation",
            collation: ci,
            pipeline: vec![doc! {"$group": {"_id": null, "top": {"$topN": {
                "n": 2, "sortBy": {"s": 1, "_id": 1}, "output": "$_id"
            }}}}],
            expected: vec![doc! {"_id": null, "top": [1, 2]}],
        },
        Case {
            name: "$bucket puts values in the boundaries the collation orders them into",
            collation: ci,
            pipeline: vec![doc! {"$bucket": {
                "groupBy": "$s", "boundaries": ["a", "b", "c"], "default": "other"
            }}],
            expected: vec![doc! {"_id": "a", "count": 3}, doc! {"_id": "b", "count": 1}],
        },
        Case {
            name: "$bucket boundaries of numeric strings under numericOrdering",
            collation: numeric,
            pipeline: vec![doc! {"$bucket": {
                "groupBy": "$n", "boundaries": ["1", "50", "1000"], "default": "other"
            }}],
            expected: vec![
                doc! {"_id": "1", "count": 3},
                doc! {"_id": "50", "count": 1},
            ],
        },
        Case {
            name: "$bucketAuto keeps values equal under the collation in one bucket",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$bucketAuto": {"groupBy": "$s", "buckets": 2}},
            ],
            expected: vec![
                doc! {"_id": {"min": "apple", "max": "banana"}, "count": 3},
                doc! {"_id": {"min": "banana", "max": "banana"}, "count": 1},
            ],
        },
        Case {
            name: "$bucketAuto orders numeric strings under numericOrdering",
            collation: numeric,
            pipeline: vec![doc! {"$bucketAuto": {"groupBy": "$n", "buckets": 2}}],
            expected: vec![
                doc! {"_id": {"min": "2", "max": "10"}, "count": 2},
                doc! {"_id": {"min": "10", "max": "100"}, "count": 2},
            ],
        },
        Case {
            name: "$setWindowFields partitions by keys equal under the collation",
            collation: ci,
            pipeline: vec![
                doc! {"$setWindowFields": {
                    "partitionBy": "$s", "sortBy": {"_id": 1},
                    "output": {"c": {"$sum": 1, "window": {"documents": ["unbounded", "unbounded"]}}}
                }},
                by_id.clone(),
                doc! {"$project": {"c": 1}},
            ],
            expected: vec![
                doc! {"_id": 1, "c": 3},
                doc! {"_id": 2, "c": 3},
                doc! {"_id": 3, "c": 1},
                doc! {"_id": 4, "c": 3},
            ],
        },
        Case {
            name: "$denseRank ties values equal under the collation",
            collation: ci,
            pipeline: vec![
                doc! {"$setWindowFields": {
                    "sortBy": {"k": 1}, "output": {"r": {"$denseRank": {}}}
                }},
                by_id.clone(),
                doc! {"$project": {"r": 1}},
            ],
            expected: vec![
                doc! {"_id": 1, "r": 1},
                doc! {"_id": 2, "r": 1},
                doc! {"_id": 3, "r": 2},
                doc! {"_id": 4, "r": 2},
            ],
        },
        Case {
            name: "$rank sorts numeric strings under numericOrdering",
            collation: numeric,
            pipeline: vec![
                doc! {"$setWindowFields": {"sortBy": {"n": 1}, "output": {"r": {"$rank": {}}}}},
                by_id.clone(),
                doc! {"$project": {"r": 1}},
            ],
            expected: vec![
                doc! {"_id": 1, "r": 3},
                doc! {"_id": 2, "r": 2},
                doc! {"_id": 3, "r": 4},
                doc! {"_id": 4, "r": 1},
            ],
        },
        Case {
            name: "$densify partitions by keys equal under the collation",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$densify": {
                    "field": "v", "partitionByFields": ["s"],
                    "range": {"step": 1, "bounds": "partition"}
                }},
                doc! {"$project": {"_id": 0, "s": 1, "v": 1}},
                doc! {"$sort": {"v": 1, "s": 1}},
            ],
            expected: vec![
                doc! {"s": "apple", "v": 1},
                doc! {"s": "Apple", "v": 2},
                doc! {"s": "apple", "v": 3},
                doc! {"s": "banana", "v": 3},
                doc! {"s": "APPLE", "v": 4},
            ],
        },
        Case {
            name: "$fill carries the last value within a partition under the collation",
            collation: ci,
            pipeline: vec![
                doc! {"$fill": {
                    "partitionByFields": ["s"], "sortBy": {"v": 1},
                    "output": {"x": {"method": "locf"}}
                }},
                doc! {"$match": {"x": "seen"}},
                by_id.clone(),
                doc! {"$project": {"_id": 1}},
            ],
            expected: vec![doc! {"_id": 1}, doc! {"_id": 2}, doc! {"_id": 4}],
        },
        Case {
            name: "$sortByCount counts keys equal under the collation together",
            collation: ci,
            pipeline: vec![by_id.clone(), doc! {"$sortByCount": "$s"}],
            expected: vec![
                doc! {"_id": "apple", "count": 3},
                doc! {"_id": "banana", "count": 1},
            ],
        },
        Case {
            name: "expressions compare under the collation",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$project": {
                    "eq": {"$eq": ["$s", "APPLE"]},
                    "in": {"$in": ["$s", ["APPLE", "x"]]},
                    "at": {"$indexOfArray": [["x", "APPLE"], "$s"]},
                    "set": {"$size": {"$setUnion": [["$k", "A", "B"]]}},
                }},
            ],
            expected: vec![
                doc! {"_id": 1, "eq": true, "in": true, "at": 1, "set": 2},
                doc! {"_id": 2, "eq": true, "in": true, "at": 1, "set": 2},
                doc! {"_id": 3, "eq": false, "in": false, "at": -1, "set": 2},
                doc! {"_id": 4, "eq": true, "in": true, "at": 1, "set": 2},
            ],
        },
        Case {
            name: "$sortArray and $lt under numericOrdering",
            collation: numeric,
            pipeline: vec![
                doc! {"$match": {"_id": 1}},
                doc! {"$project": {
                    "sorted": {"$sortArray": {"input": ["10", "9", "100", "2"], "sortBy": 1}},
                    "lt": {"$lt": ["$n", "9"]},
                }},
            ],
            expected: vec![doc! {"_id": 1, "sorted": ["2", "9", "10", "100"], "lt": false}],
        },
        Case {
            name: "$lookup joins localField to foreignField under the collation",
            collation: ci,
            pipeline: vec![
                by_id.clone(),
                doc! {"$lookup": {"from": "other", "localField": "s", "foreignField": "name", "as": "j"}},
                doc! {"$project": {"ids": "$j._id"}},
            ],
            expected: vec![
                doc! {"_id": 1, "ids": [10]},
                doc! {"_id": 2, "ids": [10]},
                doc! {"_id": 3, "ids": [11]},
                doc! {"_id": 4, "ids": [10]},
            ],
        },
        Case {
            name: "$lookup's sub-pipeline compares under the collation",
            collation: ci,
            pipeline: vec![
                doc! {"$match": {"_id": 3}},
                doc! {"$lookup": {"from": "other", "let": {"x": "$s"}, "as": "j", "pipeline": [
                    {"$match": {"$expr": {"$eq": ["$name", "$$x"]}}},
                    {"$group": {"_id": {"$toLower": "$name"}}},
                ]}},
                doc! {"$project": {"j": 1}},
            ],
            expected: vec![doc! {"_id": 3, "j": [{"_id": "banana"}]}],
        },
        Case {
            name: "$graphLookup connects values equal under the collation",
            collation: ci,
            pipeline: vec![
                doc! {"$match": {"_id": 2}},
                doc! {"$graphLookup": {
                    "from": "other", "startWith": "$s", "connectFromField": "name",
                    "connectToField": "name", "as": "g"
                }},
                doc! {"$project": {"ids": "$g._id"}},
            ],
            expected: vec![doc! {"_id": 2, "ids": [10]}],
        },
        Case {
            name: "$unionWith runs its pipeline under the collation",
            collation: ci,
            pipeline: vec![
                doc! {"$match": {"_id": 0}},
                doc! {"$unionWith": {"coll": "other", "pipeline": [{"$match": {"name": "apple"}}]}},
            ],
            expected: vec![doc! {"_id": 10, "name": "APPLE"}],
        },
        Case {
            name: "$facet sub-pipelines compare under the collation",
            collation: ci,
            pipeline: vec![doc! {"$facet": {
                "a": [{"$match": {"s": "APPLE"}}, {"$count": "n"}],
                "b": [{"$group": {"_id": "$k"}}, {"$count": "n"}],
            }}],
            expected: vec![doc! {"a": [{"n": 3}], "b": [{"n": 2}]}],
        },
        Case {
            name: "$redact's expression compares under the collation",
            collation: ci,
            pipeline: vec![
                doc! {"$redact": {"$cond": [{"$eq": ["$s", "APPLE"]}, "$$KEEP", "$$PRUNE"]}},
                by_id.clone(),
                doc! {"$project": {"_id": 1}},
            ],
            expected: vec![doc! {"_id": 1}, doc! {"_id": 2}, doc! {"_id": 4}],
        },
    ]
}

#[tokio::test]
async fn every_stage_compares_strings_under_the_operations_collation() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    for case in cases() {
        let got = aggregate(&db, "items", &case.pipeline, Some((case.collation)())).await;
        assert_eq!(got, Ok(case.expected.clone()), "{}", case.name);
        // By bytes the answer differs (or the stage fails): the collation made the difference.
        let simple = aggregate(&db, "items", &case.pipeline, None).await;
        assert_ne!(
            simple,
            Ok(case.expected),
            "{} (simple collation)",
            case.name
        );
    }
}

#[tokio::test]
async fn a_collection_default_applies_to_every_stage_unless_the_command_overrides_it() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    db.run_command(doc! {"create": "itemsci", "collation": ci()})
        .await
        .unwrap();
    let docs: Vec<Document> = ["x", "X", "y"]
        .iter()
        .enumerate()
        .map(|(i, s)| doc! {"_id": i as i32, "s": *s})
        .collect();
    db.collection::<Document>("itemsci")
        .insert_many(docs)
        .await
        .unwrap();
    let pipeline = [
        doc! {"$sort": {"_id": 1}},
        doc! {"$group": {"_id": "$s", "n": {"$sum": 1}}},
        doc! {"$sort": {"_id": 1}},
    ];
    assert_eq!(
        aggregate(&db, "itemsci", &pipeline, None).await,
        Ok(vec![doc! {"_id": "x", "n": 2}, doc! {"_id": "y", "n": 1}])
    );
    assert_eq!(
        aggregate(&db, "itemsci", &pipeline, Some(doc! {"locale": "simple"})).await,
        Ok(vec![
            doc! {"_id": "X", "n": 1},
            doc! {"_id": "x", "n": 1},
            doc! {"_id": "y", "n": 1}
        ])
    );
    // A foreign collection's default is ignored: `items` is read under the aggregate's
    // collation (here itemsci's default), and `itemsci` under the simple one when the
    // command says so (mongod's rule for $lookup and $unionWith).
    let lookup = [
        doc! {"$match": {"_id": 0}},
        doc! {"$lookup": {"from": "items", "pipeline": [{"$match": {"s": "APPLE"}}], "as": "j"}},
        doc! {"$project": {"n": {"$size": "$j"}}},
    ];
    assert_eq!(
        aggregate(&db, "itemsci", &lookup, None).await,
        Ok(vec![doc! {"_id": 0, "n": 3}])
    );
    let union = [
        doc! {"$match": {"_id": 0}},
        doc! {"$unionWith": {"coll": "itemsci", "pipeline": [{"$match": {"s": "X"}}]}},
        doc! {"$project": {"_id": 1}},
    ];
    assert_eq!(
        aggregate(&db, "items", &union, None).await,
        Ok(vec![doc! {"_id": 1}])
    );
}

#[tokio::test]
async fn merge_matches_on_fields_under_the_collation() {
    let server = TestServer::start().await;
    let db = seeded(&server).await;
    db.collection::<Document>("target")
        .insert_one(doc! {"_id": 100, "name": "APPLE", "t": 1})
        .await
        .unwrap();
    let merge = [
        doc! {"$match": {"_id": 1}},
        doc! {"$project": {"_id": 0, "name": "$s", "m": {"$literal": 1}}},
        doc! {"$merge": {"into": "target", "on": "name", "whenMatched": "merge", "whenNotMatched": "insert"}},
    ];
    // `on` fields need a unique index whose collation is the operation's.
    db.run_command(doc! {"createIndexes": "target", "indexes": [
        {"key": {"name": 1}, "name": "by_name", "unique": true}
    ]})
    .await
    .unwrap();
    assert_eq!(
        aggregate(&db, "items", &merge, Some(ci())).await,
        Err(Some(51183))
    );
    db.run_command(doc! {"dropIndexes": "target", "index": "by_name"})
        .await
        .unwrap();
    db.run_command(doc! {"createIndexes": "target", "indexes": [
        {"key": {"name": 1}, "name": "by_name", "unique": true, "collation": ci()}
    ]})
    .await
    .unwrap();
    assert_eq!(
        aggregate(&db, "items", &merge, None).await,
        Err(Some(51183))
    );
    aggregate(&db, "items", &merge, Some(ci())).await.unwrap();
    // "apple" matched "APPLE" under the collation: merged into it, nothing inserted.
    let all = aggregate(&db, "target", &[], None).await.unwrap();
    assert_eq!(
        all,
        vec![doc! {"_id": 100, "name": "apple", "t": 1, "m": 1}]
    );
}
