//! Multi-document updates and deletes work through their targets in bounded batches, each its
//! own durable writer job: another client's writes are served between the batches, the server
//! holds one batch at a time (not every target), an interruption stops the statement between
//! batches, and each target is written at most once, even when the update moves it along the
//! index that selects it.

use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use mongodb::options::WriteConcern;
use mongodb::{Client, Collection};
use std::future::IntoFuture;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Targets of the large statements.
const MILLION: i64 = 1_000_000;
/// The most targets one writer job takes (`MAX_DOCS` in `command/crud/write/batch_size.rs`); a job
/// takes fewer when the writer is slow.
const BATCH: i64 = 1_000;
/// The longest a concurrent single-document insert may wait while a large statement runs.
const MAX_INSERT_LATENCY: Duration = Duration::from_millis(100);
/// How far the server's resident size may grow over its size before a large statement. A
/// statement that loads its million targets at once holds each as a `StoredDoc` (its key, its
/// record and its decoded document: several hundred bytes each) plus, for an update, the new
/// document, and its group's pending writes: far over this (by that count, several hundred MB
/// for a million; the single-job form was not measured). Batched, what moves is fjall's
/// memtables and block cache and whatever the tests running beside this one hold: 85-125 MB in
/// the debug runs measured.
const MAX_RESIDENT_GROWTH_MB: i64 = 400;

async fn resident_mb(client: &Client) -> i64 {
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    let mem = status.get_document("mem").unwrap();
    match mem.get("resident") {
        Some(common::bson::Bson::Int32(n)) => i64::from(*n),
        Some(common::bson::Bson::Int64(n)) => *n,
        other => panic!("serverStatus.mem.resident is {other:?}"),
    }
}

/// Inserts `{_id: i, n: 0}` for every `i` below `count`, in batches as large as a command takes.
async fn fill(coll: &Collection<Document>, count: i64) {
    let mut start = 0;
    while start < count {
        let end = (start + 100_000).min(count);
        coll.insert_many((start..end).map(|i| doc! {"_id": i, "n": 0}))
            .await
            .unwrap();
        start = end;
    }
}

/// [`fill`] as fast as the server takes it: loading is not what is tested. Four clients send
/// unordered inserts of 25,000 documents each, unjournaled (the server still writes its
/// journal; it only skips the sync), so the server prepares one insert while the writer runs
/// another.
async fn fill_fast(server: &TestServer, coll: &str, count: i64) {
    const LOADERS: i64 = 4;
    const CHUNK: i64 = 25_000;
    let unsynced = WriteConcern::builder().journal(false).build();
    let mut loaders = Vec::new();
    for loader in 0..LOADERS {
        let coll: Collection<Document> = server.client().await.database("bw").collection(coll);
        let unsynced = unsynced.clone();
        loaders.push(tokio::spawn(async move {
            let mut start = loader * CHUNK;
            while start < count {
                let end = (start + CHUNK).min(count);
                coll.insert_many((start..end).map(|i| doc! {"_id": i, "n": 0}))
                    .ordered(false)
                    .write_concern(unsynced.clone())
                    .await
                    .unwrap();
                start += LOADERS * CHUNK;
            }
        }));
    }
    for loader in loaders {
        loader.await.unwrap();
    }
}

/// What happened beside a large statement: the latency of each probe insert, and the largest
/// resident size sampled.
struct Beside {
    latencies: Vec<Duration>,
    peak_resident_mb: i64,
}

/// Runs `statement` while another client inserts one document every 5 ms (timing each) and a
/// third samples the server's resident size every 20 ms.
async fn beside<T>(
    server: &TestServer,
    statement: impl std::future::Future<Output = T>,
) -> (T, Beside) {
    let stop = Arc::new(AtomicBool::new(false));
    let prober = {
        let probes: Collection<Document> = server.client().await.database("bw").collection("probe");
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                probes.insert_one(doc! {"p": i}).await.unwrap();
                latencies.push(sent.elapsed());
                i += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            latencies
        })
    };
    let sampler = {
        let client = server.client().await;
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let mut peak = 0;
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(resident_mb(&client).await);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            peak
        })
    };
    let outcome = statement.await;
    stop.store(true, Ordering::Relaxed);
    let latencies = prober.await.unwrap();
    let peak_resident_mb = sampler.await.unwrap();
    (
        outcome,
        Beside {
            latencies,
            peak_resident_mb,
        },
    )
}

fn assert_served_and_bounded(what: &str, beside: &Beside, before_mb: i64) {
    let mut sorted = beside.latencies.clone();
    sorted.sort();
    let slowest = sorted.last().copied().unwrap_or_default();
    let at = |q: usize| {
        sorted
            .get(sorted.len() * q / 100)
            .copied()
            .unwrap_or_default()
    };
    let late = sorted.iter().filter(|l| **l > MAX_INSERT_LATENCY).count();
    eprintln!(
        "{what}: {} probe inserts, median {:?}, p99 {:?}, slowest {slowest:?}, {late} over \
         {MAX_INSERT_LATENCY:?}; resident {before_mb} MB before, peak {} MB",
        sorted.len(),
        at(50),
        at(99),
        beside.peak_resident_mb
    );
    assert!(
        beside.latencies.len() >= 10,
        "{what}: only {} inserts ran beside it",
        beside.latencies.len()
    );
    assert!(
        slowest <= MAX_INSERT_LATENCY,
        "{what}: an insert beside it took {slowest:?}"
    );
    let grown = beside.peak_resident_mb - before_mb;
    assert!(
        grown <= MAX_RESIDENT_GROWTH_MB,
        "{what}: the resident size grew by {grown} MB"
    );
}

/// In a debug build on two shared cores (~140 s: load 25-29 s, update 40-47 s, delete ~43 s)
/// the probes' median is 15-20 ms but the slowest pass 100 ms (p99 80-118 ms, max 186-541 ms):
/// a probe waits for its own group's sync (20-90 ms there) after the commit of the batch before
/// it, and that commit's memtable inserts (20-200 ms in a debug build under load) are not part
/// of the job time the batch sizing measures. Run it in a release build,
/// `cargo test --release --test integration bounded_writes -- --ignored`. There too it does not
/// pass yet: on the idle 2-core machine (four runs, update 10.8-11.6 s, delete 8.5-9.5 s) the
/// probes' p99 is 17-37 ms, but one probe in ~700 a run takes 149-264 ms, midway through the
/// statement (not the first probe: the connection is warm), which points at a stall outside
/// the batch's job (a memtable flush or the two cores taken by the flush and the statement);
/// memory grows 80-125 MB. Traced with the writer's DEBUG events
/// (`RUST_LOG=mayfly::engine::writer::timing=debug,mayfly::storage::fjall_backend=debug,fjall=debug`)
/// in one release run on the same machine busy with other builds (load 5-10, so every figure
/// is inflated; update 19.5 s, probes p50 16 ms, p99 68 ms, two of 754 over 100 ms: 109 and
/// 116 ms, resident 404 MB before, 542 MB peak): both slow probes waited behind the group
/// committed at the instant fjall rotated the `documents` memtable, sealed its 68 MB journal
/// (a full sync, a new preallocated file, a directory sync) and began the flush. That group's
/// fjall commit (journal write and memtable inserts, no sync) took 100 ms instead of 2 ms,
/// ending as the rotation's version and journal maintenance ended; the next group's commit
/// took 115 ms of which 16 ms were fjall's commit and sync, the rest the committer not
/// running, with the flush's compression and the other builds holding both cores. Every other
/// group's commit took 1-25 ms. With both later changes (a batch's measured time includes its
/// commit; a batch's job opens a commit group of its own), one run on the same busy machine:
/// update 23.6 s, 1,040 probes, p50 13 ms, p99 61 ms, slowest 176 ms, four over 100 ms,
/// resident 414 MB before, 526 MB peak: the rotation stall and the starved cores remain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "one probe in ~700 still passes the 100 ms bound (see the comment)"]
async fn a_million_document_update_and_delete_leave_other_writers_and_memory_alone() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll: Collection<Document> = client.database("bw").collection("big");
    let started = Instant::now();
    fill_fast(&server, "big", MILLION).await;
    assert_eq!(
        coll.estimated_document_count().await.unwrap(),
        MILLION as u64
    );
    eprintln!("inserted {MILLION} documents in {:?}", started.elapsed());

    let before = resident_mb(&client).await;
    let started = Instant::now();
    let (updated, beside_update) = beside(
        &server,
        coll.update_many(doc! {}, doc! {"$inc": {"n": 1}})
            .into_future(),
    )
    .await;
    eprintln!("updated in {:?}", started.elapsed());
    let updated = updated.unwrap();
    assert_eq!(updated.matched_count, MILLION as u64);
    assert_eq!(updated.modified_count, MILLION as u64);
    assert_served_and_bounded("updateMany", &beside_update, before);
    assert_eq!(
        coll.count_documents(doc! {"n": 1}).await.unwrap(),
        MILLION as u64
    );

    let before = resident_mb(&client).await;
    let started = Instant::now();
    let (deleted, beside_delete) = beside(&server, coll.delete_many(doc! {}).into_future()).await;
    eprintln!("deleted in {:?}", started.elapsed());
    assert_eq!(deleted.unwrap().deleted_count, MILLION as u64);
    assert_served_and_bounded("deleteMany", &beside_delete, before);
    assert_eq!(coll.estimated_document_count().await.unwrap(), 0);
}

#[tokio::test]
async fn an_update_moving_documents_along_the_scanned_index_updates_each_once() {
    let server = TestServer::start().await;
    let coll: Collection<Document> = server.client().await.database("bw").collection("moving");
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    // Two and a half batches, so the scan goes on after documents it already passed have moved
    // ahead of it in the index.
    let count = BATCH * 5 / 2;
    coll.insert_many((0..count).map(|i| doc! {"_id": i, "a": i}))
        .await
        .unwrap();
    let result = coll
        .update_many(doc! {"a": {"$gte": 0}}, doc! {"$inc": {"a": 10}})
        .hint(mongodb::options::Hint::Keys(doc! {"a": 1}))
        .await
        .unwrap();
    assert_eq!(result.matched_count, count as u64);
    assert_eq!(result.modified_count, count as u64);
    for (id, a) in [
        (0, 10),
        (1, 11),
        (count / 2, count / 2 + 10),
        (count - 1, count + 9),
    ] {
        let found = coll.find_one(doc! {"_id": id}).await.unwrap().unwrap();
        assert_eq!(
            found
                .get_i64("a")
                .ok()
                .or(found.get_i32("a").ok().map(i64::from)),
            Some(a)
        );
    }
    assert_eq!(
        coll.count_documents(doc! {"a": {"$lt": 10}}).await.unwrap(),
        0,
        "every document moved by 10 exactly once"
    );
    assert_eq!(
        coll.count_documents(doc! {"a": {"$gte": count + 10}})
            .await
            .unwrap(),
        0,
        "no document moved twice"
    );
}

#[tokio::test]
async fn a_multi_update_counts_matches_and_changes_exactly() {
    let server = TestServer::start().await;
    let coll: Collection<Document> = server.client().await.database("bw").collection("exact");
    // Three batches and a bit; every third document already holds the value set.
    let count = BATCH * 3 + 7;
    coll.insert_many((0..count).map(|i| doc! {"_id": i, "k": i % 2, "v": i64::from(i % 3 == 0)}))
        .await
        .unwrap();
    let result = coll
        .update_many(doc! {"k": 0}, doc! {"$set": {"v": 1i64}})
        .await
        .unwrap();
    let evens = (count + 1) / 2;
    let evens_already_one = (0..count).filter(|i| i % 2 == 0 && i % 3 == 0).count() as u64;
    assert_eq!(result.matched_count, evens as u64);
    assert_eq!(result.modified_count, evens as u64 - evens_already_one);
    assert_eq!(
        coll.count_documents(doc! {"k": 0, "v": 1i64})
            .await
            .unwrap(),
        evens as u64
    );
}

#[tokio::test]
async fn a_multi_upsert_inserts_when_nothing_matches_and_updates_every_match_otherwise() {
    let server = TestServer::start().await;
    let coll: Collection<Document> = server.client().await.database("bw").collection("upsert");
    let inserted = coll
        .update_many(doc! {"g": "x"}, doc! {"$set": {"seen": true}})
        .upsert(true)
        .await
        .unwrap();
    assert_eq!((inserted.matched_count, inserted.modified_count), (0, 0));
    assert!(inserted.upserted_id.is_some());

    coll.insert_many((0..(BATCH + 10)).map(|i| doc! {"_id": i, "g": "x"}))
        .await
        .unwrap();
    let updated = coll
        .update_many(doc! {"g": "x"}, doc! {"$set": {"seen": true}})
        .upsert(true)
        .await
        .unwrap();
    // The upserted document already has `seen: true`: matched, not modified.
    assert_eq!(updated.matched_count, (BATCH + 11) as u64);
    assert_eq!(updated.modified_count, (BATCH + 10) as u64);
    assert_eq!(updated.upserted_id, None);
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        (BATCH + 11) as u64
    );
}

/// A `deleteMany` given too little time fails with 50 between two batches: what it deleted
/// stays deleted, and what it had not reached stays. The batches' sizes follow the writer's
/// speed, so what is checked is that the deleted documents are the scan's first ones (`_id`
/// order), with nothing skipped and nothing past them deleted.
#[tokio::test]
async fn a_multi_delete_past_max_time_stops_between_batches() {
    let server = TestServer::start().await;
    let db = server.client().await.database("bw");
    let coll: Collection<Document> = db.collection("timed");
    let count = BATCH * 40;
    // The time one batch takes depends on the machine: try shorter and longer limits until
    // one stops the statement part way, and check every outcome on the way.
    let mut stopped_part_way = false;
    for max_ms in [10, 25, 50, 100, 200, 400, 800, 1600] {
        coll.drop().await.unwrap();
        fill(&coll, count).await;
        let outcome = db
            .run_command(doc! {
                "delete": "timed",
                "deletes": [{"q": {"n": 0}, "limit": 0}],
                "maxTimeMS": max_ms,
            })
            .await;
        let left = coll.count_documents(doc! {}).await.unwrap() as i64;
        match outcome {
            Ok(reply) => {
                assert_eq!(reply.get_i32("n").map(i64::from), Ok(count), "{reply}");
                assert_eq!(left, 0);
            }
            Err(e) => {
                assert_eq!(error_code(&e), Some(50), "{e}");
                let deleted = count - left;
                assert_eq!(
                    coll.count_documents(doc! {"_id": {"$gte": deleted}})
                        .await
                        .unwrap() as i64,
                    left,
                    "{deleted} deleted: the scan's first ones, in order"
                );
                if left > 0 && left < count {
                    stopped_part_way = true;
                    break;
                }
            }
        }
    }
    assert!(stopped_part_way, "no limit stopped the delete part way");
}
