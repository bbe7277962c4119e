//! `--storage memory`: a server that keeps everything in memory works end to end through a
//! driver, writes nothing to its data directory, and forgets everything when it stops.

use crate::common;

use common::bson::{doc, Document};
use common::TestServer;
use futures::TryStreamExt;
use mayfly::clock::{Clock, ManualClock};
use mayfly::engine::exec::ReadRequest;
use mayfly::engine::{ddl, documents::collection, Engine, Interrupt};
use mongodb::IndexModel;
use std::sync::Arc;

#[tokio::test]
async fn a_memory_server_serves_crud_indexes_and_aggregation() {
    let server = TestServer::start_memory().await;
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("items");

    coll.insert_many((0..500).map(|i| doc! {"_id": i, "k": i % 10, "s": format!("v{i}")}))
        .await
        .unwrap();
    coll.create_index(IndexModel::builder().keys(doc! {"k": 1}).build())
        .await
        .unwrap();
    coll.update_many(doc! {"k": 3}, doc! {"$set": {"hit": true}})
        .await
        .unwrap();
    coll.delete_many(doc! {"k": 9}).await.unwrap();

    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 450);
    assert_eq!(coll.count_documents(doc! {"hit": true}).await.unwrap(), 50);
    let sorted: Vec<Document> = coll
        .find(doc! {"k": {"$gte": 7}})
        .sort(doc! {"_id": -1})
        .limit(3)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let ids: Vec<i32> = sorted.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, vec![498, 497, 488]);
    let groups: Vec<Document> = coll
        .aggregate([
            doc! {"$group": {"_id": "$k", "n": {"$sum": 1}}},
            doc! {"$sort": {"_id": 1}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(groups.len(), 9);
    assert!(groups.iter().all(|g| g.get_i32("n") == Ok(50)));

    // A cursor keeps its point-in-time view across getMores while writes go on.
    let mut cursor = coll.find(doc! {}).batch_size(10).await.unwrap();
    let first = cursor.try_next().await.unwrap().unwrap();
    coll.delete_many(doc! {}).await.unwrap();
    let mut seen = 1;
    while cursor.try_next().await.unwrap().is_some() {
        seen += 1;
    }
    assert!(seen > 10, "the cursor saw {seen} documents after {first}");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);

    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    let engine = status.get_document("storageEngine").unwrap();
    assert_eq!(engine.get_str("backend"), Ok("memory"));
    assert_eq!(engine.get_bool("persistent"), Ok(false));
    assert_eq!(engine.get_bool("readOnly"), Ok(false));
    // No block cache or memtables: the memory backend holds everything.
    assert_eq!(engine.get("cache"), None);
}

#[tokio::test]
async fn a_memory_server_writes_nothing_to_disk_and_forgets_at_restart() {
    let server = TestServer::start_memory().await;
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("items");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    let written: Vec<_> = std::fs::read_dir(server.dbpath()).unwrap().collect();
    assert!(
        written.is_empty(),
        "files in the data directory: {written:?}"
    );

    let server = server.restart().await;
    let client = server.client().await;
    let names = client.list_database_names().await.unwrap();
    assert!(!names.contains(&"app".to_owned()), "{names:?}");
    let coll = client.database("app").collection::<Document>("items");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
}

/// A sort over its memory limit spills to a temporary directory when there is no data
/// directory, and merges exactly as on disk.
#[tokio::test]
async fn a_memory_engine_spills_big_sorts_to_a_temporary_directory() {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::starting_at_secs(1_000_000));
    let engine = Engine::open_memory(clock).unwrap();
    engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "d", "c").unwrap();
            for i in 0..2000 {
                let d = doc! {"_id": i, "k": (i * 7919) % 97, "pad": "x".repeat(100)};
                collection::insert(txn, &meta, &d, now).unwrap();
            }
        })
        .await
        .unwrap();
    let view = engine.read().unwrap();
    let meta = view.collection("d", "c");
    let mut req = ReadRequest::new(doc! {})
        .unwrap()
        .sorted(doc! {"k": -1})
        .unwrap();
    req.allow_disk_use = true;
    req.sort_memory_limit = 20_000;
    let execution = view
        .execute(meta.as_deref(), &req, view.now_cell(), Interrupt::none())
        .unwrap();
    let docs: Vec<Document> = execution
        .docs
        .map(|d| d.map(|d| d.doc))
        .collect::<Result<_, _>>()
        .unwrap();
    // Without a limit the root is the SORT.
    let spills = execution
        .stats
        .counters
        .spills
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(spills > 5, "{spills} runs");
    let mut expected: Vec<(i32, i32)> = (0..2000).map(|i| ((i * 7919) % 97, i)).collect();
    expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let got: Vec<(i32, i32)> = docs
        .iter()
        .map(|d| (d.get_i32("k").unwrap(), d.get_i32("_id").unwrap()))
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test]
async fn a_full_memory_store_refuses_writes_with_14031_and_serves_reads_and_deletes() {
    let server = TestServer::start_with(|c| {
        c.storage = mayfly::config::StorageKind::Memory;
        c.in_memory_bytes = 4 << 20;
    })
    .await;
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("full");
    let big = "x".repeat(64 * 1024);
    let mut inserted = 0;
    let code = loop {
        match coll.insert_one(doc! {"_id": inserted, "s": &big}).await {
            Ok(_) => inserted += 1,
            Err(e) => break common::error_code(&e).or_else(|| write_code(&e)),
        }
        assert!(
            inserted < 1_000,
            "a 4 MB store took {inserted} documents of 64 KB"
        );
    };
    assert_eq!(code, Some(14031));
    assert!(
        inserted >= 40,
        "only {inserted} documents of 64 KB fit in 4 MB"
    );
    // Reads go on.
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        inserted as u64
    );
    // Deletes free space, and writes are accepted again.
    coll.delete_many(doc! {"_id": {"$lt": 10}}).await.unwrap();
    coll.insert_one(doc! {"_id": -1, "s": &big}).await.unwrap();
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        inserted as u64 - 10 + 1
    );
}

fn write_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => {
            Some(e.code)
        }
        _ => None,
    }
}
