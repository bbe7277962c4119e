//! `$bucketAuto`, `$setWindowFields` and `$sample` past their 100 MB: refused with 292 without
//! `allowDiskUse`; with it, spilled to disk with exactly the results the same pipeline gives
//! in memory on the same data, and no spill file left open afterwards, also when the client
//! kills the cursor part-way.

use crate::common;

use bson::{doc, Bson, Document};
use common::pipelines::aggregate;
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::Collection;
use std::path::Path;
use std::time::Duration;

/// Bytes of padding a `$set` gives each row: 3,000 rows of it pass 100 MB.
const PAD: usize = 48 * 1024;

/// 3,000 documents with ties, missing fields and mixed types in `g` and `v`; `t` is numeric
/// (range windows need it) with ties.
async fn seeded(server: &TestServer) -> Collection<Document> {
    let coll = server
        .client()
        .await
        .database("spill")
        .collection::<Document>("c");
    let docs: Vec<Document> = (0..3000i32)
        .map(|i| {
            let mut d = doc! {"_id": i, "t": (i * 13) % 1000};
            match i % 5 {
                0 => {}
                1 => {
                    d.insert("g", format!("s{}", i % 13));
                }
                2 => {
                    d.insert("g", f64::from((i * 7) % 97) + 0.5);
                }
                _ => {
                    d.insert("g", (i * 7) % 97);
                }
            }
            if i % 4 != 0 {
                d.insert(
                    "v",
                    if i % 3 == 0 {
                        Bson::Int64(i64::from(i))
                    } else {
                        Bson::Int32(i % 17)
                    },
                );
            }
            if i % 10 == 0 {
                d.insert("p", "small");
            }
            d
        })
        .collect();
    coll.insert_many(docs).await.unwrap();
    coll
}

/// `stages` after a `$set` that pads every row with `pad` bytes.
fn padded(pad: usize, stages: &[Document]) -> Vec<Document> {
    let mut pipeline = vec![doc! {"$set": {"pad": "x".repeat(pad)}}];
    pipeline.extend(stages.iter().cloned());
    pipeline
}

async fn with_disk(coll: &Collection<Document>, pipeline: Vec<Document>) -> Vec<Document> {
    coll.aggregate(pipeline)
        .allow_disk_use(true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

async fn refused(coll: &Collection<Document>, pipeline: Vec<Document>) -> (Option<i32>, String) {
    let err = match coll.aggregate(pipeline).allow_disk_use(false).await {
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await.unwrap_err(),
        Err(e) => e,
    };
    (error_code(&err), err.to_string())
}

/// Files of this process still open under the server's spill directory (spill files are
/// unlinked, so only open descriptors show them).
fn open_spill_files(dbpath: &Path) -> usize {
    let dir = dbpath.join("_tmp");
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .count()
}

async fn disk_server() -> TestServer {
    TestServer::start_with(|c| c.storage = mayfly::config::StorageKind::Disk).await
}

#[tokio::test]
async fn bucket_auto_spills_with_allow_disk_use_and_cuts_the_same_buckets() {
    let server = disk_server().await;
    let coll = seeded(&server).await;
    // The $max argument holds each row's padding, so the sorted entries pass 100 MB.
    let stages = |pad: usize| {
        padded(
            pad,
            &[
                doc! {"$bucketAuto": {"groupBy": "$g", "buckets": 7, "output": {
                    "n": {"$sum": 1},
                    "ids": {"$push": "$_id"},
                    "vs": {"$sum": "$v"},
                    "longest": {"$max": {"$concat": ["$pad", {"$toString": "$_id"}]}},
                }}},
                doc! {"$set": {"longest": {"$substrCP": ["$longest", pad as i32, 10]}}},
            ],
        )
    };
    let (code, message) = refused(&coll, stages(PAD)).await;
    assert_eq!(code, Some(292), "{message}");
    assert!(
        message.contains("Exceeded memory limit for $bucketAuto, but didn't allow external sort"),
        "{message}"
    );
    let spilled = with_disk(&coll, stages(PAD)).await;
    let expected = aggregate(&coll, stages(0)).await;
    assert_eq!(spilled.len(), 7);
    assert_eq!(spilled, expected);
    assert_eq!(open_spill_files(server.dbpath()), 0);
}

#[tokio::test]
async fn set_window_fields_spills_its_sort_and_a_large_partition() {
    let server = disk_server().await;
    let coll = seeded(&server).await;
    // One partition of 2,700 padded rows (over 100 MB) and one of 300.
    let stages = [
        doc! {"$setWindowFields": {"partitionBy": "$p", "sortBy": {"t": 1}, "output": {
            "near": {"$sum": "$v", "window": {"documents": [-5, 5]}},
            "last3": {"$push": "$_id", "window": {"documents": [-2, 0]}},
            "close": {"$sum": "$v", "window": {"range": [-3, 3]}},
            "rank": {"$rank": {}},
            "shifted": {"$shift": {"output": "$g", "by": -1}},
        }}},
        doc! {"$project": {"pad": 0}},
    ];
    let (code, message) = refused(&coll, padded(PAD, &stages)).await;
    assert_eq!(code, Some(292), "{message}");
    assert!(
        message.contains("Sort exceeded memory limit of 104857600 bytes, but did not opt in to external sorting."),
        "{message}"
    );
    let spilled = with_disk(&coll, padded(PAD, &stages)).await;
    let expected = aggregate(&coll, padded(0, &stages)).await;
    assert_eq!(spilled.len(), 3000);
    assert_eq!(spilled, expected);
    assert_eq!(open_spill_files(server.dbpath()), 0);
}

#[tokio::test]
async fn sample_spills_with_allow_disk_use_and_samples_distinct_documents() {
    let server = disk_server().await;
    let coll = seeded(&server).await;
    let stages = [
        doc! {"$sample": {"size": 2500}},
        doc! {"$project": {"pad": 0}},
    ];
    let (code, message) = refused(&coll, padded(PAD, &stages)).await;
    assert_eq!(code, Some(292), "{message}");
    let spilled = with_disk(&coll, padded(PAD, &stages)).await;
    let mut ids: Vec<i32> = spilled.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids.len(), 2500);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2500);
    assert!(ids.iter().all(|id| (0..3000).contains(id)));
    // Each sampled document is the stored one.
    let t: Vec<i32> = spilled.iter().map(|d| d.get_i32("t").unwrap()).collect();
    let expected: Vec<i32> = spilled
        .iter()
        .map(|d| (d.get_i32("_id").unwrap() * 13) % 1000)
        .collect();
    assert_eq!(t, expected);
    assert_eq!(open_spill_files(server.dbpath()), 0);
}

#[tokio::test]
async fn killing_a_spilled_cursor_closes_its_spill_files() {
    let server = disk_server().await;
    let coll = seeded(&server).await;
    let stages = [
        doc! {"$setWindowFields": {"sortBy": {"t": 1}, "output": {"rank": {"$rank": {}}}}},
        doc! {"$project": {"pad": 0}},
    ];
    let mut cursor = coll
        .aggregate(padded(PAD, &stages))
        .allow_disk_use(true)
        .batch_size(10)
        .await
        .unwrap();
    let first = cursor.try_next().await.unwrap().unwrap();
    assert_eq!(first.get_i32("rank"), Ok(1));
    // The merge of the spilled sort and the spilled partition are open while the cursor is.
    assert!(open_spill_files(server.dbpath()) > 0);
    drop(cursor);
    let mut left = open_spill_files(server.dbpath());
    for _ in 0..100 {
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = open_spill_files(server.dbpath());
    }
    assert_eq!(left, 0, "spill files still open after killCursors");
}
