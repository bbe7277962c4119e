//! Long operations that are real scans, through the driver: `maxTimeMS` stops a collection scan
//! in `find`, `count` and `aggregate` with 50 MaxTimeMSExpired, a `ping` is answered at once
//! while other connections scan, `killOp` stops a scan found through `currentOp` with 11601
//! Interrupted, and a client that disconnects mid-scan stops it. The scans use a regex that
//! matches nothing, so every document is examined. The bit-test operators, which no index
//! serves, are answered by such scans with mongod 7.0's results and parse errors.

use crate::common;

use common::bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mayfly::wire::client::{self, MsgOptions};
use mongodb::{Client, Collection};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Enough small documents that one scan of them lasts a few times 50 ms in a debug build
/// (about 250 ms on the machine the tests were written on).
const DOCS: i32 = 100_000;

/// A filter no document matches and that no index serves: every scan examines all documents.
fn matches_nothing() -> Document {
    doc! {"s": {"$regex": "zzz$"}}
}

/// Matches nothing either, but costs 64 regexes a document: a scan lasts seconds (about 5 s
/// in a debug build), far longer than a test waits for it to be stopped.
fn matches_nothing_slowly() -> Document {
    let ors: Vec<Document> = (0..64)
        .map(|k| doc! {"s": {"$regex": format!("zz{k}$")}})
        .collect();
    doc! {"$or": ors}
}

async fn seeded(server: &TestServer) -> Collection<Document> {
    let coll = server
        .client()
        .await
        .database("test")
        .collection::<Document>("c");
    coll.insert_many((0..DOCS).map(|i| doc! {"_id": i, "s": format!("s{i}")}))
        .await
        .unwrap();
    coll
}

/// Waits (up to five seconds) until `pred` holds of the operations that carry `comment`.
async fn wait_for_ops(
    client: &Client,
    comment: &str,
    pred: impl Fn(&[Document]) -> bool,
) -> Vec<Document> {
    common::wait_for_ops(client, doc! {"command.comment": comment}, pred).await
}

/// A find with `filter` (which matches nothing), tagged with `comment`.
async fn scan(
    coll: &Collection<Document>,
    filter: Document,
    comment: &str,
) -> mongodb::error::Result<usize> {
    let found: Vec<Document> = coll
        .find(filter)
        .comment(comment)
        .await?
        .try_collect()
        .await?;
    Ok(found.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_time_ms_stops_scans_in_find_count_and_aggregate() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let db = coll.client().database("test");
    let commands = [
        doc! {"find": "c", "filter": matches_nothing(), "maxTimeMS": 50},
        doc! {"count": "c", "query": matches_nothing(), "maxTimeMS": 50},
        doc! {"aggregate": "c", "pipeline": [{"$match": matches_nothing()}], "cursor": {},
        "maxTimeMS": 50},
        doc! {"aggregate": "c", "pipeline": [{"$match": matches_nothing()}, {"$count": "n"}],
        "cursor": {}, "maxTimeMS": 50},
        doc! {"distinct": "c", "key": "s", "query": matches_nothing(), "maxTimeMS": 50},
    ];
    for command in commands {
        let started = Instant::now();
        let err = db.run_command(command.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(50), "{command}: {err}");
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "{command}: stopped after {took:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_is_answered_while_other_connections_scan() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let pinger = server.client().await;
    let done = Arc::new(AtomicBool::new(false));
    let mut scanners = Vec::new();
    for _ in 0..2 {
        // A client each, so the scans hold two connections.
        let client = server.client_with(|o| o.max_pool_size = Some(1)).await;
        let done = Arc::clone(&done);
        scanners.push(tokio::spawn(async move {
            let coll = client.database("test").collection::<Document>("c");
            let mut scans = 0;
            while !done.load(Ordering::Relaxed) {
                assert_eq!(scan(&coll, matches_nothing(), "busy").await.unwrap(), 0);
                scans += 1;
            }
            scans
        }));
    }
    drop(coll);
    wait_for_ops(&pinger, "busy", |ops| ops.len() == 2).await;
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let start = Instant::now();
        pinger
            .database("admin")
            .run_command(doc! {"ping": 1})
            .await
            .unwrap();
        slowest = slowest.max(start.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done.store(true, Ordering::Relaxed);
    for scanner in scanners {
        assert!(scanner.await.unwrap() >= 1);
    }
    assert!(
        slowest < Duration::from_millis(500),
        "slowest ping {slowest:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_op_stops_a_scan_found_through_current_op() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let watcher = server.client().await;
    let scanning =
        tokio::spawn(async move { scan(&coll, matches_nothing_slowly(), "to-kill").await });
    let ops = wait_for_ops(&watcher, "to-kill", |ops| ops.len() == 1).await;
    let op = &ops[0];
    assert_eq!(op.get_str("op").unwrap(), "query");
    assert_eq!(op.get_str("ns").unwrap(), "test.c");
    let started = Instant::now();
    watcher
        .database("admin")
        .run_command(doc! {"killOp": 1, "op": op.get_i32("opid").unwrap()})
        .await
        .unwrap();
    let err = scanning.await.unwrap().unwrap_err();
    assert_eq!(error_code(&err), Some(11601), "{err}");
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "the scan stopped {took:?} after killOp"
    );
    wait_for_ops(&watcher, "to-kill", |ops| ops.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_scan_stops_it() {
    let server = TestServer::start().await;
    let _coll = seeded(&server).await;
    let watcher = server.client().await;
    let mut raw = server.raw().await;
    let find = doc! {"find": "c", "filter": matches_nothing_slowly(), "comment": "abandoned",
    "$db": "test"};
    raw.send(&client::op_msg(1, &find, &MsgOptions::default()).unwrap())
        .await;
    wait_for_ops(&watcher, "abandoned", |ops| ops.len() == 1).await;
    drop(raw);
    let start = Instant::now();
    wait_for_ops(&watcher, "abandoned", |ops| ops.is_empty()).await;
    let took = start.elapsed();
    assert!(took < Duration::from_secs(2), "the scan went on {took:?}");
}

#[tokio::test]
async fn a_full_first_batch_is_returned_without_scanning_for_more() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let db = coll.client().database("test");
    // The first document matches; the rest of the scan would take seconds.
    let mut filter = matches_nothing_slowly();
    filter
        .get_array_mut("$or")
        .unwrap()
        .push(doc! {"s": "s0"}.into());
    let started = Instant::now();
    let reply = db
        .run_command(doc! {"find": "c", "filter": filter, "batchSize": 1})
        .await
        .unwrap();
    let took = started.elapsed();
    let cursor = reply.get_document("cursor").unwrap();
    let batch = cursor.get_array("firstBatch").unwrap();
    assert_eq!(batch.len(), 1, "{reply}");
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0, "the cursor stays open: {reply}");
    assert!(
        took < Duration::from_secs(1),
        "the first batch took {took:?}"
    );
    db.run_command(doc! {"killCursors": "c", "cursors": [id]})
        .await
        .unwrap();
}

#[tokio::test]
async fn the_current_op_stage_lists_running_operations_on_admin_only() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let admin = client.database("admin");
    let reply = admin
        .run_command(doc! {
            "aggregate": 1,
            "pipeline": [{"$currentOp": {"allUsers": true, "idleConnections": false}}, {"$match": {"command.aggregate": 1}}],
            "cursor": {},
        })
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_str("ns").unwrap(), "admin.$cmd.aggregate");
    let ops = cursor.get_array("firstBatch").unwrap();
    assert_eq!(ops.len(), 1, "the aggregate itself: {ops:?}");
    let op = ops[0].as_document().unwrap();
    assert_eq!(op.get_str("op").unwrap(), "command");
    let err = client
        .database("test")
        .run_command(doc! {"aggregate": 1, "pipeline": [{"$currentOp": {}}], "cursor": {}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(73));
    let err = admin
        .run_command(
            doc! {"aggregate": 1, "pipeline": [{"$match": {}}, {"$currentOp": {}}], "cursor": {}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(40602));
}

/// Documents `{a: v}` for mongod's `bittest.js` numbers (doubles, as the shell writes them), a
/// BinData, a string and an array.
fn bit_values() -> Vec<Bson> {
    let mut values: Vec<Bson> = [0.0, 1.0, 54.0, 88.0, 255.0, 1e18]
        .into_iter()
        .map(Bson::Double)
        .collect();
    values.push(binary(&[0x36]));
    values.push(Bson::String("54".into()));
    values.push(Bson::Array(vec![Bson::Double(1.5), Bson::Int32(54)]));
    values
}

fn binary(bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    })
}

#[tokio::test]
async fn bit_test_operators_scan_with_mongod_results_and_errors() {
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("test")
        .collection::<Document>("bits");
    coll.insert_many(bit_values().into_iter().map(|a| doc! {"a": a}))
        .await
        .unwrap();
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    let cases = [
        (doc! {"a": {"$bitsAllSet": 54}}, 4),
        (doc! {"a": {"$bitsAllClear": [0, 2]}}, 3),
        (doc! {"a": {"$bitsAnySet": binary(&[0x08])}}, 2),
        (doc! {"a": {"$bitsAnyClear": 255_i64}}, 7),
        (doc! {"a": {"$not": {"$bitsAllSet": 54}}}, 5),
        (doc! {"a": {"$bitsAllSet": 54, "$bitsAllClear": 201}}, 3),
        (doc! {"a": {"$bitsAllSet": [1, 7, 6, 3, 100]}}, 0),
    ];
    let db = coll.client().database("test");
    for (filter, expected) in cases {
        let found: Vec<Document> = coll
            .find(filter.clone())
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(found.len(), expected, "{filter}");
        let explain = db
            .run_command(doc! {"explain": {"find": "bits", "filter": filter.clone()}})
            .await
            .unwrap();
        let stage = explain
            .get_document("queryPlanner")
            .and_then(|p| p.get_document("winningPlan"))
            .and_then(|w| w.get_str("stage"))
            .unwrap();
        assert_eq!(stage, "COLLSCAN", "{filter}");
    }
    let errors = [
        (
            doc! {"a": {"$bitsAllSet": "54"}},
            2,
            "a takes an Array, a number, or a BinData but received: $bitsAllSet: \"54\"",
        ),
        (
            doc! {"a": {"$bitsAnySet": -1}},
            9,
            "Expected a non-negative number in: $bitsAnySet: -1",
        ),
        (
            doc! {"a": {"$bitsAllClear": [1, -1]}},
            2,
            "Failed to parse bit position. Expected a non-negative number in: 1: -1",
        ),
    ];
    for (filter, code, message) in errors {
        let err = coll.find(filter.clone()).await.unwrap_err();
        let mongodb::error::ErrorKind::Command(reply) = err.kind.as_ref() else {
            panic!("{filter}: {err}");
        };
        assert_eq!(
            (reply.code, reply.message.as_str()),
            (code, message),
            "{filter}"
        );
    }
}
