//! The read-side commands as drivers and mongosh use them: `count`, `distinct`, `aggregate`
//! (countDocuments, mongosh's `$sample` autocomplete and `db.c.stats()`), `dbStats`, `collStats`.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::{Collection, Database};

async fn setup(server: &TestServer, name: &str) -> (Database, Collection<Document>) {
    let db = server.client().await.database("readtest");
    (db.clone(), db.collection(name))
}

async fn insert(coll: &Collection<Document>, docs: Vec<Document>) {
    coll.insert_many(docs).await.unwrap();
}

async fn run(db: &Database, cmd: Document) -> Document {
    db.run_command(cmd).await.unwrap()
}

async fn run_err(db: &Database, cmd: Document) -> i32 {
    let err = db.run_command(cmd).await.unwrap_err();
    error_code(&err).unwrap_or_else(|| panic!("not a command error: {err}"))
}

async fn aggregate(coll: &Collection<Document>, pipeline: Vec<Document>) -> Vec<Document> {
    coll.aggregate(pipeline)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

async fn aggregate_err(coll: &Collection<Document>, pipeline: Vec<Document>) -> i32 {
    let err = match coll.aggregate(pipeline).await {
        Err(e) => e,
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await.unwrap_err(),
    };
    error_code(&err).unwrap_or_else(|| panic!("not a command error: {err}"))
}

/// A numeric field of any BSON number type, as f64.
fn num(d: &Document, key: &str) -> f64 {
    match d.get(key) {
        Some(Bson::Int32(n)) => f64::from(*n),
        Some(Bson::Int64(n)) => *n as f64,
        Some(Bson::Double(n)) => *n,
        other => panic!("{key} is not a number: {other:?} in {d}"),
    }
}

fn numbered(n: i32) -> Vec<Document> {
    (0..n)
        .map(|i| doc! {"_id": i, "x": i % 2, "g": i % 500})
        .collect()
}

#[tokio::test]
async fn count_honours_query_skip_and_limit() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server, "c").await;
    insert(&coll, numbered(10)).await;
    let n = |reply: Document| num(&reply, "n");
    assert_eq!(n(run(&db, doc! {"count": "c"}).await), 10.0);
    assert_eq!(
        n(run(&db, doc! {"count": "c", "query": {"x": 0}}).await),
        5.0
    );
    assert_eq!(
        n(run(&db, doc! {"count": "c", "query": {"x": 0}, "skip": 2}).await),
        3.0
    );
    assert_eq!(n(run(&db, doc! {"count": "c", "limit": 4}).await), 4.0);
    assert_eq!(n(run(&db, doc! {"count": "c", "limit": -4}).await), 4.0);
    assert_eq!(
        n(run(&db, doc! {"count": "c", "skip": 8, "limit": 5}).await),
        2.0
    );
    assert_eq!(n(run(&db, doc! {"count": "c", "skip": 20}).await), 0.0);
    assert_eq!(
        n(run(
            &db,
            doc! {"count": "c", "query": {"_id": {"$in": [1, 3, 99]}}}
        )
        .await),
        2.0
    );
    assert_eq!(
        n(run(&db, doc! {"count": "nope"}).await),
        0.0,
        "missing collection"
    );
    assert_eq!(
        n(run(&db, doc! {"count": "system.profile"}).await),
        0.0,
        "mongosh show profile"
    );
    assert_eq!(run_err(&db, doc! {"count": "c", "skip": -1}).await, 51024);
    assert_eq!(run_err(&db, doc! {"count": "c", "bogus": 1}).await, 40415);
    assert_eq!(coll.estimated_document_count().await.unwrap(), 10);
}

#[tokio::test]
async fn count_documents_is_an_aggregate_and_empty_counts_zero() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server, "c").await;
    insert(&coll, numbered(10)).await;
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 10);
    assert_eq!(coll.count_documents(doc! {"x": 1}).await.unwrap(), 5);
    assert_eq!(
        coll.count_documents(doc! {"x": 1})
            .skip(1)
            .limit(3)
            .await
            .unwrap(),
        3
    );
    assert_eq!(coll.count_documents(doc! {"x": 7}).await.unwrap(), 0);
    // What mongosh runs on connect, against a collection that does not exist.
    let admin = server.client().await.database("admin");
    let atlascli = admin.collection::<Document>("atlascli");
    let filter = doc! {"managedClusterType": "atlasCliLocalDevCluster"};
    assert_eq!(atlascli.count_documents(filter).await.unwrap(), 0);
    let reply = run(&db, doc! {"aggregate": "nope", "pipeline": [{"$match": {}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}], "cursor": {}}).await;
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_i64("id").unwrap(), 0);
    assert_eq!(cursor.get_str("ns").unwrap(), "readtest.nope");
    assert!(cursor.get_array("firstBatch").unwrap().is_empty());
}

#[tokio::test]
async fn distinct_flattens_arrays_and_merges_numeric_types() {
    let server = TestServer::start().await;
    let (_db, coll) = setup(&server, "d").await;
    insert(
        &coll,
        vec![
            doc! {"a": 2i64, "k": 1},
            doc! {"a": 1.0, "k": 1},
            doc! {"a": [1, 3], "k": 1},
            doc! {"a": "x", "k": 2},
            doc! {"a": null, "k": 2},
            doc! {"b": 1, "k": 2},
            doc! {"a": [[5]], "k": 2},
            doc! {"a": {"c": 1}, "k": 2},
            doc! {"a": 2, "k": 2},
        ],
    )
    .await;
    let values = coll.distinct("a", doc! {}).await.unwrap();
    assert_eq!(
        values,
        vec![
            Bson::Null,
            Bson::Double(1.0),
            Bson::Int64(2),
            Bson::Int32(3),
            Bson::from("x"),
            Bson::from(doc! {"c": 1}),
            Bson::from(vec![5]),
        ]
    );
    let values = coll.distinct("a", doc! {"k": 1}).await.unwrap();
    assert_eq!(values.len(), 3, "{values:?}");
    let nested = setup(&server, "n").await.1;
    insert(
        &nested,
        vec![doc! {"o": [{"p": 1}, {"p": [2, 1]}]}, doc! {"o": {"p": 3}}],
    )
    .await;
    assert_eq!(
        nested.distinct("o.p", doc! {}).await.unwrap(),
        vec![Bson::Int32(1), Bson::Int32(2), Bson::Int32(3)]
    );
    assert!(setup(&server, "nope")
        .await
        .1
        .distinct("a", doc! {})
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn aggregate_group_sort_skip_limit_match() {
    let server = TestServer::start().await;
    let (_db, coll) = setup(&server, "orders").await;
    insert(
        &coll,
        vec![
            doc! {"_id": 1, "cust": "a", "amt": 10, "items": ["x", "y"]},
            doc! {"_id": 2, "cust": "b", "amt": 5.5, "items": ["x"]},
            doc! {"_id": 3, "cust": "a", "amt": 7, "items": []},
            doc! {"_id": 4, "cust": "c", "amt": 1, "items": null},
            doc! {"_id": 5, "cust": "b", "amt": 2},
        ],
    )
    .await;
    let out = aggregate(
        &coll,
        vec![
            doc! {"$match": {"amt": {"$gt": 1}}},
            doc! {"$group": {"_id": "$cust", "total": {"$sum": "$amt"}, "n": {"$sum": 1},
            "avg": {"$avg": "$amt"}, "lo": {"$min": "$amt"}, "hi": {"$max": "$amt"},
            "first": {"$first": "$_id"}, "last": {"$last": "$_id"},
            "ids": {"$push": "$_id"}, "set": {"$addToSet": "$cust"}, "c": {"$count": {}}}},
            doc! {"$sort": {"_id": 1}},
        ],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! {"_id": "a", "total": 17, "n": 2, "avg": 8.5, "lo": 7, "hi": 10, "first": 1, "last": 3,
            "ids": [1, 3], "set": ["a"], "c": 2},
            doc! {"_id": "b", "total": 7.5, "n": 2, "avg": 3.75, "lo": 2, "hi": 5.5, "first": 2, "last": 5,
            "ids": [2, 5], "set": ["b"], "c": 2},
        ]
    );
    let ids = |docs: Vec<Document>| {
        docs.iter()
            .map(|d| d.get_i32("_id").unwrap())
            .collect::<Vec<_>>()
    };
    let out = aggregate(
        &coll,
        vec![
            doc! {"$sort": {"amt": -1}},
            doc! {"$skip": 1},
            doc! {"$limit": 2},
        ],
    )
    .await;
    assert_eq!(ids(out), vec![3, 2]);
    let out = aggregate(
        &coll,
        vec![doc! {"$group": {"_id": null, "n": {"$sum": 1}}}],
    )
    .await;
    assert_eq!(out, vec![doc! {"_id": null, "n": 5}]);
    let out = aggregate(
        &coll,
        vec![
            doc! {"$group": {"_id": {"c": "$cust", "big": "$missing"}}},
            doc! {"$sort": {"_id.c": 1}},
        ],
    )
    .await;
    assert_eq!(out.first(), Some(&doc! {"_id": {"c": "a"}}));
    let out = aggregate(
        &coll,
        vec![
            doc! {"$match": {"_id": {"$in": [2, 4]}}},
            doc! {"$count": "n"},
        ],
    )
    .await;
    assert_eq!(out, vec![doc! {"n": 2}]);
    let out = aggregate(
        &coll,
        vec![doc! {"$match": {"cust": "zzz"}}, doc! {"$count": "n"}],
    )
    .await;
    assert!(out.is_empty(), "$count of nothing is no document");
    let out = aggregate(
        &coll,
        vec![doc! {"$sortByCount": "$cust"}, doc! {"$limit": 2}],
    )
    .await;
    assert_eq!(
        out.iter().map(|d| num(d, "count")).collect::<Vec<_>>(),
        vec![2.0, 2.0]
    );
}

#[tokio::test]
async fn aggregate_reshapes_documents() {
    let server = TestServer::start().await;
    let (_db, coll) = setup(&server, "shapes").await;
    insert(
        &coll,
        vec![
            doc! {"_id": 1, "a": 1, "b": {"c": 2, "d": 3}, "tags": ["x", "y"]},
            doc! {"_id": 2, "a": 2, "tags": []},
            doc! {"_id": 3, "a": 3, "tags": "solo"},
            doc! {"_id": 4, "a": 4},
        ],
    )
    .await;
    let first = |p: Vec<Document>| {
        let coll = coll.clone();
        async move { aggregate(&coll, p).await.into_iter().next().unwrap() }
    };
    assert_eq!(
        first(vec![doc! {"$project": {"a": 1}}]).await,
        doc! {"_id": 1, "a": 1}
    );
    assert_eq!(
        first(vec![doc! {"$project": {"b": 0, "tags": 0}}]).await,
        doc! {"_id": 1, "a": 1}
    );
    assert_eq!(
        first(vec![
            doc! {"$project": {"_id": 0, "cd": "$b.c", "lit": {"$literal": "$x"}, "k": "const"}}
        ])
        .await,
        doc! {"k": "const", "cd": 2, "lit": "$x"}
    );
    assert_eq!(
        first(vec![doc! {"$project": {"a": 1, "id2": "$_id"}}]).await,
        doc! {"_id": 1, "a": 1, "id2": 1}
    );
    assert_eq!(
        first(vec![doc! {"$unset": ["b", "tags"]}]).await,
        doc! {"_id": 1, "a": 1}
    );
    assert_eq!(
        first(vec![doc! {"$addFields": {"z": "$a", "b.e": 9, "lit": 5}}]).await,
        doc! {"_id": 1, "a": 1, "b": {"c": 2, "d": 3, "e": 9}, "tags": ["x", "y"], "z": 1, "lit": 5}
    );
    assert_eq!(
        first(vec![
            doc! {"$set": {"a": "$b.d"}},
            doc! {"$project": {"a": 1}}
        ])
        .await,
        doc! {"_id": 1, "a": 3}
    );
    assert_eq!(
        first(vec![
            doc! {"$match": {"_id": 1}},
            doc! {"$replaceWith": "$b"}
        ])
        .await,
        doc! {"c": 2, "d": 3}
    );
    // As mongod: a replacement that is not a document is an error, not a skipped row.
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$replaceWith": "$b"}]).await,
        40228
    );

    let unwound = aggregate(
        &coll,
        vec![doc! {"$unwind": "$tags"}, doc! {"$project": {"tags": 1}}],
    )
    .await;
    assert_eq!(
        unwound,
        vec![
            doc! {"_id": 1, "tags": "x"},
            doc! {"_id": 1, "tags": "y"},
            doc! {"_id": 3, "tags": "solo"}
        ]
    );
    let unwound = aggregate(
        &coll,
        vec![
            doc! {"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": true, "includeArrayIndex": "i"}},
            doc! {"$project": {"tags": 1, "i": 1}},
        ],
    )
    .await;
    assert_eq!(
        unwound,
        vec![
            doc! {"_id": 1, "tags": "x", "i": 0i64},
            doc! {"_id": 1, "tags": "y", "i": 1i64},
            doc! {"_id": 2, "i": null},
            doc! {"_id": 3, "tags": "solo", "i": null},
            doc! {"_id": 4, "i": null},
        ]
    );
}

#[tokio::test]
async fn aggregate_batches_through_get_more() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server, "many").await;
    insert(&coll, numbered(1000)).await;
    let pipeline = vec![doc! {"$group": {"_id": "$g", "n": {"$sum": 1}}}];
    let reply = run(
        &db,
        doc! {"aggregate": "many", "pipeline": pipeline.clone(), "cursor": {"batchSize": 100}},
    )
    .await;
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_array("firstBatch").unwrap().len(), 100);
    assert_ne!(cursor.get_i64("id").unwrap(), 0);
    let groups: Vec<Document> = coll
        .aggregate(pipeline)
        .batch_size(100)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(groups.len(), 500);
    assert!(groups.iter().all(|g| num(g, "n") == 2.0));
    let mut keys: Vec<i32> = groups.iter().map(|g| g.get_i32("_id").unwrap()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 500);
    // A streaming pipeline over the whole collection, default first batch of 101.
    let all: Vec<Document> = coll
        .aggregate(vec![doc! {"$match": {"x": 1}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 500);
    let reply = run(
        &db,
        doc! {"aggregate": "many", "pipeline": [], "cursor": {}},
    )
    .await;
    assert_eq!(
        reply
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .len(),
        101
    );
}

#[tokio::test]
async fn sample_returns_distinct_random_documents() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server, "s").await;
    insert(&coll, numbered(50)).await;
    // mongosh's autocomplete sample.
    let reply = run(&db, doc! {"aggregate": "s", "pipeline": [{"$sample": {"size": 10}}], "allowDiskUse": true, "maxTimeMS": 1000, "cursor": {}}).await;
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let mut ids: Vec<i32> = batch
        .iter()
        .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
        .collect();
    assert_eq!(ids.len(), 10);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 10);
    assert_eq!(
        aggregate(&coll, vec![doc! {"$sample": {"size": 500}}])
            .await
            .len(),
        50
    );
    assert!(aggregate(
        &setup(&server, "nope").await.1,
        vec![doc! {"$sample": {"size": 10}}]
    )
    .await
    .is_empty());
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$sample": {"size": -1}}]).await,
        28747
    );
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$sample": {}}]).await,
        28749
    );
}

#[tokio::test]
async fn coll_stats_stage_has_what_mongosh_stats_reads() {
    let server = TestServer::start().await;
    let (_db, coll) = setup(&server, "st").await;
    insert(&coll, numbered(20)).await;
    let out = aggregate(
        &coll,
        vec![doc! {"$collStats": {"storageStats": {"scale": 1}}}],
    )
    .await;
    assert_eq!(out.len(), 1);
    let row = &out[0];
    assert_eq!(row.get_str("ns").unwrap(), "readtest.st");
    assert!(row.get_str("host").is_ok());
    assert!(matches!(row.get("localTime"), Some(Bson::DateTime(_))));
    let s = row.get_document("storageStats").unwrap();
    assert_eq!(num(s, "count"), 20.0);
    let size = num(s, "size");
    assert!(size > 20.0 * 20.0, "{s}");
    assert_eq!(num(s, "avgObjSize"), (size / 20.0).floor());
    assert_eq!(num(s, "nindexes"), 1.0);
    assert!(num(s, "totalIndexSize") > 0.0);
    assert!(num(s.get_document("indexSizes").unwrap(), "_id_") > 0.0);
    assert_eq!(
        num(s, "totalSize"),
        num(s, "storageSize") + num(s, "totalIndexSize")
    );
    assert!(!s.get_bool("capped").unwrap());
    assert_eq!(num(s, "scaleFactor"), 1.0);
    assert!(s.get_array("indexBuilds").unwrap().is_empty());
    for field in ["storageSize", "freeStorageSize"] {
        num(s, field);
    }
    let scaled = aggregate(
        &coll,
        vec![doc! {"$collStats": {"storageStats": {"scale": 1024}}}],
    )
    .await;
    let scaled = scaled[0].get_document("storageStats").unwrap();
    assert_eq!(num(scaled, "size"), (size / 1024.0).floor());
    assert_eq!(num(scaled, "scaleFactor"), 1024.0);
    let counted = aggregate(&coll, vec![doc! {"$collStats": {"count": {}}}]).await;
    assert_eq!(num(&counted[0], "count"), 20.0);

    let missing = setup(&server, "nope").await.1;
    assert_eq!(
        aggregate_err(&missing, vec![doc! {"$collStats": {"storageStats": {}}}]).await,
        26
    );
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$match": {}}, doc! {"$collStats": {}}]).await,
        40602
    );
    assert_eq!(
        aggregate_err(
            &coll,
            vec![doc! {"$collStats": {"storageStats": {"scale": 0}}}]
        )
        .await,
        51024
    );
}

#[tokio::test]
async fn db_stats_and_coll_stats_commands() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server, "a").await;
    insert(&coll, numbered(10)).await;
    insert(&db.collection("b"), numbered(5)).await;
    for name in ["dbStats", "dbstats"] {
        let s = run(&db, doc! {name: 1, "scale": 1}).await;
        assert_eq!(s.get_str("db").unwrap(), "readtest");
        assert_eq!(num(&s, "collections"), 2.0);
        assert_eq!(num(&s, "views"), 0.0);
        assert_eq!(num(&s, "objects"), 15.0);
        assert_eq!(num(&s, "indexes"), 2.0);
        let data = num(&s, "dataSize");
        assert!(data > 0.0);
        assert!((num(&s, "avgObjSize") - data / 15.0).abs() < 1e-9);
        assert_eq!(
            num(&s, "totalSize"),
            num(&s, "storageSize") + num(&s, "indexSize")
        );
        assert_eq!(num(&s, "scaleFactor"), 1.0);
        assert_eq!(num(&s, "ok"), 1.0);
    }
    let empty = run(
        &server.client().await.database("nothing"),
        doc! {"dbStats": 1},
    )
    .await;
    assert_eq!(num(&empty, "collections"), 0.0);
    assert_eq!(num(&empty, "objects"), 0.0);
    assert_eq!(run_err(&db, doc! {"dbStats": 1, "scale": 0}).await, 51024);

    let s = run(&db, doc! {"collStats": "a"}).await;
    assert_eq!(s.get_str("ns").unwrap(), "readtest.a");
    assert_eq!(num(&s, "count"), 10.0);
    assert_eq!(num(&s, "nindexes"), 1.0);
    assert!(num(&s, "size") > 0.0);
    assert!(s.get_document("indexSizes").unwrap().contains_key("_id_"));
    assert!(!s.get_bool("capped").unwrap());
    let kb = run(&db, doc! {"collStats": "a", "scale": 1024}).await;
    assert_eq!(num(&kb, "size"), (num(&s, "size") / 1024.0).floor());
    // mongod 7.0 answers ok with zeros for a missing collection.
    let missing = run(&db, doc! {"collStats": "nope"}).await;
    assert_eq!(num(&missing, "count"), 0.0);
    assert_eq!(num(&missing, "ok"), 1.0);
}

#[tokio::test]
async fn bad_pipelines_get_mongod_errors() {
    let server = TestServer::start().await;
    let (db, coll) = setup(&server, "e").await;
    insert(&coll, numbered(3)).await;
    assert_eq!(aggregate_err(&coll, vec![doc! {"$foo": {}}]).await, 40324);
    assert_eq!(aggregate_err(&coll, vec![doc! {"$lookup": {}}]).await, 9);
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$planCacheStats": {}}]).await,
        238
    );
    assert_eq!(aggregate_err(&coll, vec![doc! {"$limit": 0}]).await, 15958);
    assert_eq!(aggregate_err(&coll, vec![doc! {"$skip": -1}]).await, 15956);
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$group": {"n": {"$sum": 1}}}]).await,
        15955
    );
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$match": {}, "$limit": 1}]).await,
        40323
    );
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$project": {"x": {"$nope": [1, 2]}}}]).await,
        168
    );
    assert_eq!(
        aggregate_err(
            &coll,
            vec![doc! {"$project": {"a": 0, "x": {"$add": [1, 2]}}}]
        )
        .await,
        31252
    );
    // A field path is an operand, not an operator expression: mongod's parseLiteral answers.
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$project": {"a": 0, "x": "$_id"}}]).await,
        31310
    );
    assert_eq!(
        aggregate_err(&coll, vec![doc! {"$unwind": "tags"}]).await,
        28818
    );
    assert_eq!(
        run_err(&db, doc! {"aggregate": "e", "pipeline": []}).await,
        9
    );
    assert_eq!(
        run_err(&db, doc! {"aggregate": "e", "cursor": {}}).await,
        40414
    );
    assert_eq!(
        run_err(
            &db,
            doc! {"aggregate": 1, "pipeline": [{"$match": {}}], "cursor": {}}
        )
        .await,
        73
    );
    assert_eq!(
        run_err(
            &db,
            doc! {"aggregate": "e", "pipeline": [], "cursor": {}, "bogus": 1}
        )
        .await,
        40415
    );
    assert_eq!(run_err(&db, doc! {"distinct": "e"}).await, 40414);
}
