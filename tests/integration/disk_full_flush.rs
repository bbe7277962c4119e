//! A full disk met by the storage engine's background memtable flush (not by the journal
//! write the free-space check guards): the engine stops, writes are refused with 14031 while
//! the disk is full, and once space is freed the next write reopens the engine from its
//! journal without a restart; open cursors are closed by the reopen (CursorNotFound), and
//! every acknowledged document is there, now and after a restart, and no refused one.
//!
//! Runs on a real 16 MiB tmpfs (as root); where mounting is not permitted it prints a loud
//! SKIPPED line (and fails with `MAYFLY_REQUIRE_TMPFS=1`).

use super::disk_full::{
    fill_leaving, free_bytes, ids, incompressible, storage_engine, tmpfs_or_skip, OUT_OF_DISK_SPACE,
};
use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use std::time::Duration;

const CURSOR_NOT_FOUND: i32 = 43;
const MIB: u64 = 1024 * 1024;

async fn background(client: &mongodb::Client) -> Document {
    storage_engine(client)
        .await
        .get_document("background")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_memtable_flush_on_a_full_disk_recovers_without_a_restart() {
    let base = tempfile::tempdir().unwrap();
    let test = "a_memtable_flush_on_a_full_disk_recovers_without_a_restart";
    let Some(_mount) = tmpfs_or_skip(base.path(), "16m", test) else {
        return;
    };
    let dbpath = base.path().join("db");
    // The smallest budget: memtables of 4 MiB, sealed and flushed past that.
    let server = TestServer::start_with(|c| {
        c.dbpath = dbpath.clone();
        c.cache_bytes = 64 * MIB;
    })
    .await;
    let client = server.client().await;
    let fill = client.database("app").collection::<Document>("fill");
    let mut padding = incompressible();

    // 3.75 MiB in the documents keyspace's memtable: just below its flush size.
    let mut acknowledged = Vec::new();
    for id in 0i64..240 {
        fill.insert_one(doc! {"_id": id, "pad": padding()})
            .await
            .unwrap();
        acknowledged.push(id);
    }
    // Room for the journal writes the space check admits (it keeps 2 MiB free), not for the
    // 4 MiB table the flush of the full memtable writes.
    let ballast = fill_leaving(base.path(), 2 * MIB + 600 * 1024);
    let mut refused = None;
    for id in 240i64..400 {
        match fill.insert_one(doc! {"_id": id, "pad": padding()}).await {
            Ok(_) => acknowledged.push(id),
            Err(err) => {
                assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
                refused = Some(id);
                break;
            }
        }
        if background(&client).await.get_bool("halted") == Ok(true) {
            break;
        }
    }
    // The flush runs in the background: wait for it to fail.
    let mut halted = false;
    for id in 10_000i64..10_200 {
        // A write is what meets the stopped engine.
        if let Err(err) = fill.insert_one(doc! {"_id": id, "pad": padding()}).await {
            assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
            refused.get_or_insert(id);
        } else {
            acknowledged.push(id);
        }
        halted = background(&client).await.get_bool("halted") == Ok(true);
        if halted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        halted,
        "the flush never failed: {:?}, {} bytes free",
        storage_engine(&client).await,
        free_bytes(base.path())
    );
    let status = background(&client).await;
    assert_eq!(status.get_i64("failures"), Ok(1), "{status:?}");
    assert_eq!(status.get_i64("reopens"), Ok(0), "{status:?}");
    assert_eq!(
        storage_engine(&client).await.get_bool("readOnly"),
        Ok(false)
    );

    // Still full: writes are refused as out of disk space, reads go on.
    let err = fill.insert_one(doc! {"_id": 20_000i64}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
    acknowledged.sort_unstable();
    assert_eq!(ids(&fill).await, acknowledged);
    // A cursor open across the reopen.
    let opened = client
        .database("app")
        .run_command(doc! {"find": "fill", "batchSize": 2, "projection": {"pad": 0}})
        .await
        .unwrap();
    let cursor_id = opened
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    assert_ne!(cursor_id, 0);

    // Space is freed: the next write reopens the engine and succeeds, no restart.
    std::fs::remove_file(&ballast).unwrap();
    fill.insert_one(doc! {"_id": 30_000i64}).await.unwrap();
    acknowledged.push(30_000);
    let status = background(&client).await;
    assert_eq!(status.get_bool("halted"), Ok(false), "{status:?}");
    assert_eq!(status.get_i64("reopens"), Ok(1), "{status:?}");
    for id in 30_001i64..30_050 {
        fill.insert_one(doc! {"_id": id, "pad": padding()})
            .await
            .unwrap();
        acknowledged.push(id);
    }
    assert_eq!(ids(&fill).await, acknowledged);
    // The reopen closed the cursor: its snapshot was of the engine closed.
    let err = client
        .database("app")
        .run_command(doc! {"getMore": cursor_id, "collection": "fill"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(CURSOR_NOT_FOUND), "{err}");

    // After a restart: exactly the acknowledged documents.
    let server = server.restart().await;
    let client = server.client().await;
    let fill = client.database("app").collection::<Document>("fill");
    let stored = ids(&fill).await;
    assert_eq!(stored, acknowledged);
    if let Some(refused) = refused {
        assert!(!stored.contains(&refused));
    }
    assert!(!stored.contains(&20_000));
    server.server.shutdown().await;
}
