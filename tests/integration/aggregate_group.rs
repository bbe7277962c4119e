//! `$group` with every accumulator, `$bucket`, `$bucketAuto` with a granularity, and a
//! `$group` past its 100 MB: refused without `allowDiskUse`, spilled to disk and merged with it.
//! All through the driver, with the examples of mongod's reference pages.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::pipelines::{aggregate, aggregate_err};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::Collection;

async fn scores(server: &TestServer) -> Collection<Document> {
    let coll = server
        .client()
        .await
        .database("agg")
        .collection::<Document>("scores");
    coll.insert_many(vec![
        doc! {"_id": 1, "game": "G1", "player": "A", "score": 31, "meta": {"a": 1}},
        doc! {"_id": 2, "game": "G1", "player": "B", "score": 33, "meta": {"b": 1}},
        doc! {"_id": 3, "game": "G1", "player": "C", "score": 99, "meta": {"a": 2}},
        doc! {"_id": 4, "game": "G1", "player": "D", "score": 1},
        doc! {"_id": 5, "game": "G2", "player": "A", "score": 10.5},
        doc! {"_id": 6, "game": "G2", "player": "B", "score": 14},
    ])
    .await
    .unwrap();
    coll
}

#[tokio::test]
async fn every_accumulator_runs_in_a_group() {
    let server = TestServer::start().await;
    let coll = scores(&server).await;
    let out = aggregate(
        &coll,
        vec![
            doc! {"$group": {
                "_id": "$game",
                "sum": {"$sum": "$score"}, "avg": {"$avg": "$score"},
                "min": {"$min": "$score"}, "max": {"$max": "$score"},
                "first": {"$first": "$player"}, "last": {"$last": "$player"},
                "push": {"$push": "$player"}, "set": {"$addToSet": "$game"},
                "count": {"$count": {}}, "merged": {"$mergeObjects": "$meta"},
                "pop": {"$stdDevPop": "$score"}, "samp": {"$stdDevSamp": "$score"},
                "median": {"$median": {"input": "$score", "method": "approximate"}},
                "pct": {"$percentile": {"input": "$score", "p": [0.25, 1], "method": "approximate"}},
                "firstN": {"$firstN": {"input": "$player", "n": 2}},
                "lastN": {"$lastN": {"input": "$player", "n": 2}},
                "minN": {"$minN": {"input": "$score", "n": 2}},
                "maxN": {"$maxN": {"input": "$score", "n": 2}},
                "top": {"$top": {"output": "$player", "sortBy": {"score": -1}}},
                "bottom": {"$bottom": {"output": "$player", "sortBy": {"score": -1}}},
                "topN": {"$topN": {"output": "$player", "sortBy": {"score": -1}, "n": 2}},
                "bottomN": {"$bottomN": {"output": "$player", "sortBy": {"score": -1}, "n": 2}},
            }},
            doc! {"$sort": {"_id": 1}},
        ],
    )
    .await;
    assert_eq!(out.len(), 2);
    let g1 = &out[0];
    let want = doc! {
        "_id": "G1", "sum": 164, "avg": 41.0, "min": 1, "max": 99, "first": "A", "last": "D",
        "push": ["A", "B", "C", "D"], "set": ["G1"], "count": 4, "merged": {"a": 2, "b": 1},
        "pop": g1.get("pop").cloned().unwrap(), "samp": g1.get("samp").cloned().unwrap(),
        "median": 31.0, "pct": [1.0, 99.0], "firstN": ["A", "B"], "lastN": ["C", "D"],
        "minN": [1, 31], "maxN": [99, 33], "top": "C", "bottom": "D", "topN": ["C", "B"],
        "bottomN": ["A", "D"],
    };
    assert_eq!(g1, &want);
    let pop = g1.get_f64("pop").unwrap();
    assert!((pop - 1282f64.sqrt()).abs() < 1e-9, "{pop}");
    assert_eq!(out[1].get("sum"), Some(&Bson::Double(24.5)));
    let samp = out[1].get_f64("samp").unwrap();
    assert!((samp - 6.125f64.sqrt()).abs() < 1e-9, "{samp}");

    // Errors keep mongod's codes.
    let n0 = doc! {"$group": {"_id": null, "x": {"$firstN": {"input": "$score", "n": 0}}}};
    assert_eq!(aggregate_err(&coll, vec![n0]).await, Some(5787908));
    let js = doc! {"$group": {"_id": null, "x": {"$accumulator": {"init": "function() {}"}}}};
    assert_eq!(aggregate_err(&coll, vec![js]).await, Some(31264));
}

#[tokio::test]
async fn bucket_and_bucket_auto_cut_as_mongod() {
    let server = TestServer::start().await;
    let coll = scores(&server).await;
    let out = aggregate(
        &coll,
        vec![doc! {"$bucket": {
            "groupBy": "$score", "boundaries": [0, 20, 50], "default": "Other",
            "output": {"count": {"$sum": 1}, "players": {"$push": "$player"}},
        }}],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! {"_id": 0, "count": 3, "players": ["D", "A", "B"]},
            doc! {"_id": 20, "count": 2, "players": ["A", "B"]},
            doc! {"_id": "Other", "count": 1, "players": ["C"]},
        ]
    );
    let no_default = doc! {"$bucket": {"groupBy": "$score", "boundaries": [0, 50]}};
    assert_eq!(aggregate_err(&coll, vec![no_default]).await, Some(40066));
    let unsorted = doc! {"$bucket": {"groupBy": "$score", "boundaries": [5, 0]}};
    assert_eq!(aggregate_err(&coll, vec![unsorted]).await, Some(40194));

    let out = aggregate(
        &coll,
        vec![doc! {"$bucketAuto": {"groupBy": "$score", "buckets": 3}}],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! {"_id": {"min": 1, "max": 14}, "count": 2},
            doc! {"_id": {"min": 14, "max": 33}, "count": 2},
            doc! {"_id": {"min": 33, "max": 99}, "count": 2},
        ]
    );
    let out = aggregate(
        &coll,
        vec![doc! {"$bucketAuto": {"groupBy": "$score", "buckets": 2, "granularity": "R5"}}],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! {"_id": {"min": 0.63, "max": 16.0}, "count": 3},
            doc! {"_id": {"min": 16.0, "max": 100.0}, "count": 3},
        ]
    );
    let bad = doc! {"$bucketAuto": {"groupBy": "$player", "buckets": 2, "granularity": "E6"}};
    assert_eq!(aggregate_err(&coll, vec![bad]).await, Some(40258));
}

#[tokio::test]
async fn a_group_past_100_mb_spills_with_allow_disk_use() {
    let server = TestServer::start().await;
    let db = server.client().await.database("agg");
    let coll = db.collection::<Document>("big");
    // Eight 7 MB keys: each group holds its key twice, 112 MB in all.
    for i in 0..8u8 {
        let key = char::from(b'h' - i).to_string().repeat(7 * 1024 * 1024);
        coll.insert_one(doc! {"_id": i32::from(i), "k": key})
            .await
            .unwrap();
    }
    let pipeline = vec![doc! {"$group": {"_id": "$k", "n": {"$sum": 1}, "ids": {"$push": "$_id"}}}];
    let err = match coll.aggregate(pipeline.clone()).allow_disk_use(false).await {
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await.unwrap_err(),
        Err(e) => e,
    };
    assert_eq!(error_code(&err), Some(292));
    let out: Vec<Document> = coll
        .aggregate(pipeline)
        .allow_disk_use(true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let firsts: Vec<&str> = out
        .iter()
        .map(|d| d.get_str("_id").unwrap().get(..1).unwrap())
        .collect();
    // Spilled groups come back merged, one per key, in key order.
    assert_eq!(firsts, ["a", "b", "c", "d", "e", "f", "g", "h"]);
    for d in &out {
        assert_eq!(d.get_i32("n"), Ok(1));
    }
}

#[tokio::test]
async fn a_sort_after_the_leading_stages_spills_with_allow_disk_use() {
    let server = TestServer::start().await;
    let db = server.client().await.database("agg");
    let coll = db.collection::<Document>("bigsort");
    // Sixteen 7 MB documents: 112 MB reach the $sort, which the $project keeps from the
    // executor (a leading $sort would be the executor's own).
    for i in 0..16i32 {
        let pad = "x".repeat(7 * 1024 * 1024);
        coll.insert_one(doc! {"_id": i, "k": (i * 7) % 16, "pad": pad})
            .await
            .unwrap();
    }
    let pipeline = vec![
        doc! {"$project": {"k": 1, "pad": 1}},
        doc! {"$sort": {"k": -1}},
        doc! {"$project": {"pad": 0}},
    ];
    let err = match coll.aggregate(pipeline.clone()).allow_disk_use(false).await {
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await.unwrap_err(),
        Err(e) => e,
    };
    assert_eq!(error_code(&err), Some(292));
    let out: Vec<Document> = coll
        .aggregate(pipeline)
        .allow_disk_use(true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let keys: Vec<i32> = out.iter().map(|d| d.get_i32("k").unwrap()).collect();
    assert_eq!(keys, (0..16).rev().collect::<Vec<_>>());
}
