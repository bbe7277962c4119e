//! Limits that bound what one client can make the server hold: write batches counted before
//! they are decoded, 100 MB per blocking aggregation stage, and server-wide caps on what open
//! cursors hold and on `noCursorTimeout` cursors. Each refusal is mongod's error (or a clear
//! one where mongod has no such limit), and the server keeps serving.

mod common;

/// The server's heap is counted as the binary counts it, so `--memoryLimitMB` applies here.
#[global_allocator]
static ALLOCATOR: mayfly::allocation::Metered<std::alloc::System> =
    mayfly::allocation::Metered(std::alloc::System);

use common::bson::{doc, Document};
use common::TestServer;
use tokio::io::AsyncWriteExt;

/// The tests of this file run one at a time: one measures this process's peak memory, which
/// another's 112 MB collection would disturb.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn assert_error(reply: &Document, code: i32) {
    assert_eq!(reply.get_f64("ok"), Ok(0.0), "{reply}");
    assert_eq!(reply.get_i32("code"), Ok(code), "{reply}");
}

/// An OP_MSG insert whose `documents` sequence holds `n` empty documents, built as bytes (five
/// bytes a document), without a `Document` for each.
fn insert_of_empty_documents(n: usize) -> Vec<u8> {
    let body = common::bson::to_vec(&doc! {"insert": "c", "$db": "limits"}).unwrap();
    let mut section = b"documents\0".to_vec();
    for _ in 0..n {
        section.extend_from_slice(&[5, 0, 0, 0, 0]);
    }
    let mut payload = 0u32.to_le_bytes().to_vec();
    payload.push(0);
    payload.extend_from_slice(&body);
    payload.push(1);
    payload.extend_from_slice(&(section.len() as i32 + 4).to_le_bytes());
    payload.extend_from_slice(&section);
    let mut message = ((16 + payload.len()) as i32).to_le_bytes().to_vec();
    message.extend_from_slice(&7i32.to_le_bytes());
    message.extend_from_slice(&0i32.to_le_bytes());
    message.extend_from_slice(&2013i32.to_le_bytes());
    message.extend_from_slice(&payload);
    message
}

/// This process's peak resident set since the last [`reset_peak_rss`], in bytes.
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn current_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

#[tokio::test]
async fn a_million_empty_documents_are_refused_before_they_are_decoded() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start().await;
    let message = insert_of_empty_documents(1_000_000);
    let mut raw = server.raw().await;
    reset_peak_rss();
    let before = current_rss();
    raw.send(&message).await;
    let reply = raw.read().await.expect("a reply").document;
    let grown = peak_rss().saturating_sub(before);
    assert_error(&reply, 16);
    assert_eq!(
        reply.get_str("errmsg"),
        Ok("Write batch sizes must be between 1 and 100000. Got 1000000 operations.")
    );
    // The 5 MB message itself is buffered; a million decoded documents would be far more.
    assert!(grown < 48 * 1024 * 1024, "peak RSS grew by {grown} bytes");

    // The connection and the server go on serving.
    let ok = raw
        .command(
            2,
            &doc! {"insert": "c", "documents": [{"_id": 1}], "$db": "limits"},
        )
        .await
        .document;
    assert_eq!(ok.get_i32("n"), Ok(1), "{ok}");
    let count = server
        .client()
        .await
        .database("limits")
        .collection::<Document>("c")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(count, 1, "nothing of the refused batch was written");
}

#[tokio::test]
async fn a_sequence_of_exactly_100000_documents_is_accepted() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    raw.send(&insert_of_empty_documents(100_000)).await;
    let reply = raw.read().await.expect("a reply").document;
    assert_eq!(reply.get_i32("n"), Ok(100_000), "{reply}");
}

/// A collection `big` of 14 documents of 8 MB each: 112 MB, past one stage's 100 MB.
async fn seed_big(server: &TestServer) {
    let client = server.client().await;
    let coll = client.database("limits").collection::<Document>("big");
    for i in 0..14 {
        let s = format!("{i:02}").repeat(4 * 1024 * 1024);
        coll.insert_one(doc! {"_id": i, "g": i % 2, "s": s})
            .await
            .unwrap();
    }
}

async fn aggregate(server: &TestServer, pipeline: Vec<Document>, allow_disk_use: bool) -> Document {
    let mut raw = server.raw().await;
    raw.command(
        1,
        &doc! {
            "aggregate": "big", "pipeline": pipeline, "cursor": {"batchSize": 1},
            "allowDiskUse": allow_disk_use, "$db": "limits",
        },
    )
    .await
    .document
}

#[tokio::test]
async fn blocking_aggregation_stages_fail_past_100_mb() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start().await;
    seed_big(&server).await;
    let group = vec![doc! {"$group": {"_id": "$g", "all": {"$push": "$$ROOT"}}}];
    let reply = aggregate(&server, group.clone(), false).await;
    assert_error(&reply, 292);
    assert_eq!(
        reply.get_str("errmsg"),
        Ok("PlanExecutor error during aggregation :: caused by :: Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.")
    );
    // With allowDiskUse a $group spills to disk instead: tests/integration/aggregate_group.rs.
    drop(group);

    // A $sort after the leading stages counts too.
    let sort = vec![doc! {"$addFields": {"k": "$g"}}, doc! {"$sort": {"k": 1}}];
    let reply = aggregate(&server, sort, false).await;
    assert_error(&reply, 292);
    assert!(reply
        .get_str("errmsg")
        .unwrap()
        .contains("Sort exceeded memory limit of 104857600 bytes"));

    // So does $sample, which mongod runs as a sort on random keys.
    let reply = aggregate(&server, vec![doc! {"$sample": {"size": 100}}], false).await;
    assert_error(&reply, 292);

    // Under the limit the same stages work, and the server serves on.
    let small = vec![
        doc! {"$group": {"_id": "$g", "ids": {"$push": "$_id"}}},
        doc! {"$sort": {"_id": 1}},
    ];
    let reply = aggregate(&server, small, false).await;
    let first = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(
        first[0]
            .as_document()
            .unwrap()
            .get_array("ids")
            .unwrap()
            .len(),
        7
    );
}

async fn find(server: &TestServer, command: Document) -> Document {
    let mut raw = server.raw().await;
    let mut body = command;
    body.insert("$db", "limits");
    raw.command(1, &body).await.document
}

fn cursor_id(reply: &Document) -> i64 {
    reply
        .get_document("cursor")
        .unwrap_or_else(|_| panic!("{reply}"))
        .get_i64("id")
        .unwrap()
}

#[tokio::test]
async fn no_cursor_timeout_cursors_are_capped() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start_with(|c| c.max_no_timeout_cursors = 2).await;
    let client = server.client().await;
    let coll = client.database("limits").collection::<Document>("c");
    coll.insert_many((0..10).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    let open = doc! {"find": "c", "batchSize": 1, "noCursorTimeout": true};
    let first = cursor_id(&find(&server, open.clone()).await);
    cursor_id(&find(&server, open.clone()).await);
    let refused = find(&server, open.clone()).await;
    assert_error(&refused, 96);
    assert!(refused
        .get_str("errmsg")
        .unwrap()
        .contains("noCursorTimeout"));
    // Ordinary cursors are not counted.
    cursor_id(&find(&server, doc! {"find": "c", "batchSize": 1}).await);
    let status = find(&server, doc! {"serverStatus": 1}).await;
    let open_cursors = status
        .get_document("metrics")
        .and_then(|m| m.get_document("cursor"))
        .and_then(|c| c.get_document("open"))
        .unwrap();
    assert_eq!(open_cursors.get_i64("noTimeout"), Ok(2));
    assert_eq!(open_cursors.get_i64("total"), Ok(3));
    // Closing one makes room.
    find(&server, doc! {"killCursors": "c", "cursors": [first]}).await;
    assert!(cursor_id(&find(&server, open).await) > 0);

    // The driver sees the same refusal.
    let Err(err) = coll
        .find(doc! {})
        .no_cursor_timeout(true)
        .batch_size(1)
        .await
    else {
        panic!("a third noCursorTimeout cursor is refused");
    };
    assert_eq!(common::error_code(&err), Some(96));
}

#[tokio::test]
async fn open_cursors_hold_at_most_the_server_wide_cursor_memory() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start_with(|c| c.cursor_memory_limit_bytes = 5 * 1024 * 1024).await;
    let client = server.client().await;
    let coll = client.database("limits").collection::<Document>("c");
    let s = "x".repeat(200 * 1024);
    coll.insert_many((0..10).map(|i| doc! {"_id": i, "a": 10 - i, "s": s.clone()}))
        .await
        .unwrap();
    let shared = server.shared();

    // An unsorted cursor keeps a snapshot and a position, nothing materialised.
    let plain = cursor_id(&find(&server, doc! {"find": "c", "batchSize": 1}).await);
    assert!(plain > 0);
    assert_eq!(shared.engine.cursors.held_bytes(), 0);

    // A sorted one holds the rest of its sorted result (9 x 200 KB, stored and decoded).
    let sorted = doc! {"find": "c", "sort": {"a": 1}, "batchSize": 1};
    let first = cursor_id(&find(&server, sorted.clone()).await);
    let held = shared.engine.cursors.held_bytes();
    assert!(
        (2 * 9 * 200 * 1024..5 * 1024 * 1024).contains(&held),
        "held {held}"
    );
    let status = find(&server, doc! {"serverStatus": 1}).await;
    let shown = status
        .get_document("metrics")
        .and_then(|m| m.get_document("cursor"))
        .and_then(|c| c.get_i64("heldBytes"))
        .unwrap();
    assert_eq!(shown, held as i64, "serverStatus shows what cursors hold");
    // A second would pass the 5 MB cap: refused, and nothing more is held.
    let refused = find(&server, sorted.clone()).await;
    assert_error(&refused, 146);
    assert_eq!(shared.engine.cursors.held_bytes(), held);
    let grouped = find(
        &server,
        doc! {"aggregate": "c", "pipeline": [{"$sort": {"a": 1}}], "cursor": {"batchSize": 1}},
    )
    .await;
    assert_error(&grouped, 146);

    // Reading a cursor releases what it held; killing it releases the rest.
    let mut raw = server.raw().await;
    let more = raw
        .command(
            2,
            &doc! {"getMore": first, "collection": "c", "batchSize": 4, "$db": "limits"},
        )
        .await
        .document;
    assert_eq!(
        more.get_document("cursor")
            .unwrap()
            .get_array("nextBatch")
            .unwrap()
            .len(),
        4
    );
    assert!(shared.engine.cursors.held_bytes() < held);
    find(&server, doc! {"killCursors": "c", "cursors": [first]}).await;
    assert_eq!(shared.engine.cursors.held_bytes(), 0);
    assert!(cursor_id(&find(&server, sorted).await) > 0);
}

#[tokio::test]
async fn a_million_empty_documents_in_the_command_body_are_counted_not_decoded() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start().await;
    let documents: Vec<Document> = (0..1_000_000).map(|_| Document::new()).collect();
    let body = doc! {"insert": "c", "documents": documents, "$db": "limits"};
    let message = mayfly::wire::client::op_msg(3, &body, &Default::default()).unwrap();
    drop(body);
    let mut raw = server.raw().await;
    reset_peak_rss();
    let before = current_rss();
    raw.send(&message).await;
    let reply = raw.read().await.expect("a reply").document;
    let grown = peak_rss().saturating_sub(before);
    assert_error(&reply, 16);
    assert!(grown < 48 * 1024 * 1024, "peak RSS grew by {grown} bytes");
    let ok = raw
        .command(4, &doc! {"ping": 1, "$db": "limits"})
        .await
        .document;
    assert_eq!(ok.get_f64("ok"), Ok(1.0));
}

/// The peak RSS growth while `run` runs, with its result.
async fn peak_growth<T>(run: impl std::future::Future<Output = T>) -> (usize, T) {
    reset_peak_rss();
    let before = current_rss();
    let out = run.await;
    (peak_rss().saturating_sub(before), out)
}

#[tokio::test]
async fn small_hostile_requests_stay_within_bounded_memory() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start().await;
    let db = server.client().await.database("limits");
    let coll = db.collection::<Document>("hostile");
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();

    // A $or of 8,000 equality clauses on an indexed field (mongod plans it in a few MB; each
    // leaf of the plan once held a copy of the whole filter).
    let clauses: Vec<Document> = (0..8_000).map(|i| doc! {"a": i}).collect();
    let (grown, found) = peak_growth(async {
        let mut raw = server.raw().await;
        raw.command(
            1,
            &doc! {"find": "hostile", "filter": {"$or": clauses}, "$db": "limits"},
        )
        .await
        .document
    })
    .await;
    assert_eq!(found.get_f64("ok"), Ok(1.0), "{found}");
    assert!(grown < 256 * 1024 * 1024, "peak RSS grew by {grown} bytes");

    // $unwind of a 10,000-element array in a document with a 1 MB field: rows are made as
    // the cursor pulls them, never all at once.
    let big = "x".repeat(1024 * 1024);
    let items: Vec<i32> = (0..10_000).collect();
    coll.insert_one(doc! {"_id": 1, "big": big, "xs": items})
        .await
        .unwrap();
    let (grown, reply) = peak_growth(async {
        let mut raw = server.raw().await;
        raw.command(
            1,
            &doc! {
                "aggregate": "hostile",
                "pipeline": [{"$unwind": "$xs"}, {"$match": {"xs": {"$gte": 9_990}}}, {"$project": {"xs": 1}}],
                "cursor": {}, "$db": "limits",
            },
        )
        .await
        .document
    })
    .await;
    let batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap_or_else(|_| panic!("{reply}"));
    assert_eq!(batch.len(), 10);
    assert!(grown < 256 * 1024 * 1024, "peak RSS grew by {grown} bytes");

    // A value doubled 64 times by $reduce: refused at 16 MB.
    let (grown, reply) = peak_growth(async {
        let mut raw = server.raw().await;
        raw.command(
            1,
            &doc! {
                "aggregate": "hostile",
                "pipeline": [{"$project": {"v": {"$reduce": {
                    "input": {"$range": [0, 64]}, "initialValue": "ab",
                    "in": {"$concat": ["$$value", "$$value"]},
                }}}}],
                "cursor": {}, "$db": "limits",
            },
        )
        .await
        .document
    })
    .await;
    assert_error(&reply, 16493);
    assert!(grown < 256 * 1024 * 1024, "peak RSS grew by {grown} bytes");
}

#[tokio::test]
async fn concurrent_growing_requests_are_stopped_at_the_memory_limit_not_killed() {
    let _serial = ONE_AT_A_TIME.lock().await;
    mayfly::allocation::enable();
    // The limit sits 768 MiB above what the process holds now.
    let limit = u64::try_from(mayfly::allocation::live_bytes()).unwrap() + (768 << 20);
    let server = TestServer::start_with(|c| c.memory_limit_bytes = limit).await;
    let client = server.client().await;
    let coll = client.database("limits").collection::<Document>("growing");
    coll.insert_one(doc! {"_id": 1, "x": [1, 2, 3, 4]})
        .await
        .unwrap();
    // Each request builds arrays of about a million elements, several copies at once: alone
    // it stays under the value limit's 16 MB of BSON, but decoded it holds hundreds of MB.
    let request = || {
        let coll = coll.clone();
        async move {
            let pipeline = vec![doc! {"$project": {"n": {"$size": {"$reduce": {
                "input": {"$range": [0, 18]},
                "initialValue": "$x",
                "in": {"$concatArrays": ["$$value", "$$value"]},
            }}}}}];
            match coll.aggregate(pipeline).await {
                Ok(cursor) => {
                    use futures::TryStreamExt;
                    cursor.try_collect::<Vec<_>>().await.map(|_| 0)
                }
                Err(e) => Err(e),
            }
            .map_err(|e| common::error_code(&e))
        }
    };
    reset_peak_rss();
    let before = current_rss();
    let outcomes = futures::future::join_all((0..12).map(|_| request())).await;
    let grown = peak_rss().saturating_sub(before);
    mayfly::allocation::set_limit(0);
    for outcome in &outcomes {
        assert!(
            matches!(outcome, Ok(_) | Err(Some(146))),
            "each request succeeds or is stopped with 146: {outcomes:?}"
        );
    }
    assert!(
        outcomes.contains(&Err(Some(146))),
        "together they pass the limit: {outcomes:?}"
    );
    assert!(
        grown < 1536 << 20,
        "peak RSS grew by {grown} bytes, the limit being 768 MiB above the start"
    );
    // The server serves on, and a request of ordinary size succeeds.
    let n = coll.count_documents(doc! {}).await.unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn past_the_memory_limit_a_message_still_arriving_closes_its_connection() {
    let _serial = ONE_AT_A_TIME.lock().await;
    mayfly::allocation::enable();
    let server = TestServer::start().await;
    let mut slow = server.raw().await;
    let mut other = server.raw().await;
    // The process is past its limit from here on (the limit is below what it holds).
    mayfly::allocation::set_limit(1);
    // A header announcing 10 MB, then 2 MB of it: more than a message may hold meanwhile.
    let mut partial = (10_000_000i32).to_le_bytes().to_vec();
    partial.extend_from_slice(&7i32.to_le_bytes());
    partial.extend_from_slice(&0i32.to_le_bytes());
    partial.extend_from_slice(&2013i32.to_le_bytes());
    partial.resize(2 << 20, 0);
    // The server may close the connection while the bytes are still being written.
    let _ = slow.stream.write_all(&partial).await;
    let closed = slow.is_closed().await;
    // Small messages and small operations are still answered.
    let ping = other
        .command(1, &doc! {"ping": 1, "$db": "admin"})
        .await
        .document;
    mayfly::allocation::set_limit(0);
    assert!(
        closed,
        "the connection holding a large partial message is closed"
    );
    assert_eq!(ping.get_f64("ok"), Ok(1.0), "{ping}");
}

#[tokio::test]
async fn a_sort_by_ten_thousand_keys_holds_what_its_limit_counts() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("limits")
        .collection::<Document>("wide_sort");
    coll.insert_many((0..1_000).map(|i| doc! {"_id": i, "k": (i * 37) % 1_000}))
        .await
        .unwrap();
    // `k` descending, then 9,999 fields no document has: each document's row of sort keys is
    // 10,000 values, over a megabyte decoded, while the documents are a few bytes of BSON.
    let mut sort = doc! {"k": -1};
    for i in 0..9_999 {
        sort.insert(format!("f{i}"), 1);
    }
    let command = |allow_disk_use: bool| {
        doc! {
            "find": "wide_sort", "sort": sort.clone(), "batchSize": 1_000,
            "allowDiskUse": allow_disk_use,
        }
    };
    // Counted as BSON, the sort held all 1,000 rows of keys: over 1 GB (2.2 GB for 2,000
    // documents). Counted decoded, it stops at 100 MB: without allowDiskUse with 292, with it
    // by writing runs. 384 MB leaves room for the 100 MB, the allocator's slack and the
    // server's own buffers, and is far below the gigabyte the keys would take.
    let (grown, refused) = peak_growth(find(&server, command(false))).await;
    assert_error(&refused, 292);
    assert!(grown < 384 * 1024 * 1024, "peak RSS grew by {grown} bytes");
    let (grown, sorted) = peak_growth(find(&server, command(true))).await;
    assert!(grown < 384 * 1024 * 1024, "peak RSS grew by {grown} bytes");
    let batch = sorted
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap_or_else(|_| panic!("{sorted}"));
    let ks: Vec<i32> = batch
        .iter()
        .map(|d| d.as_document().unwrap().get_i32("k").unwrap())
        .collect();
    assert_eq!(ks, (0..1_000).rev().collect::<Vec<_>>());
}
