//! `--cacheSizeGB`: the storage engine's memory budget is split between the write buffers and
//! the block cache, and `serverStatus.storageEngine.cache` reports both against it.

use crate::common;

use common::bson::{doc, Document};
use common::TestServer;

const MIB: i64 = 1 << 20;

#[tokio::test]
async fn server_status_reports_the_cache_against_its_budget() {
    let server = TestServer::start_with(|c| {
        c.storage = mayfly::config::StorageKind::Disk;
        c.cache_bytes = 256 * MIB as u64;
    })
    .await;
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("items");
    let docs = (0..1000).map(|i| doc! {"_id": i, "payload": "x".repeat(200)});
    coll.insert_many(docs).await.unwrap();

    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    let cache = status
        .get_document("storageEngine")
        .unwrap()
        .get_document("cache")
        .unwrap();
    assert_eq!(cache.get_i64("maximumBytesConfigured"), Ok(256 * MIB));
    // A sixteenth of the budget per memtable; four memtables set aside, the rest cached blocks.
    assert_eq!(cache.get_i64("memtableLimitBytes"), Ok(16 * MIB));
    assert_eq!(cache.get_i64("blockCacheMaximumBytes"), Ok(192 * MIB));
    // The inserted documents are in the memtables, not yet flushed.
    let memtables = cache.get_i64("memtableBytes").unwrap();
    assert!(memtables > 200 * 1000, "{cache}");
    let cached = cache.get_i64("blockCacheBytes").unwrap();
    assert!((0..=192 * MIB).contains(&cached), "{cache}");

    let options = client
        .database("admin")
        .run_command(doc! {"getCmdLineOpts": 1})
        .await
        .unwrap();
    let storage = options
        .get_document("parsed")
        .unwrap()
        .get_document("storage")
        .unwrap();
    assert_eq!(storage.get_f64("cacheSizeGB"), Ok(0.25));
}
