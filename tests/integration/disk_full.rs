//! Storage failures and a full disk: a failed write or sync never becomes a success reply, an
//! error reply never hides a committed write, a full disk is an ordinary write error that ends
//! once space is freed (no restart, `drop` included), and nothing acknowledged is lost.
//!
//! The first tests inject faults through the engine's storage wrapper; the last fills a real
//! 8 MiB tmpfs.

use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::{Client, Collection};

pub const OUT_OF_DISK_SPACE: i32 = 14031;
const ILLEGAL_OPERATION: i32 = 20;
const INTERNAL_ERROR: i32 = 1;

pub async fn ids(coll: &Collection<Document>) -> Vec<i64> {
    let docs: Vec<Document> = coll
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter()
        .map(|d| match d.get("_id") {
            Some(common::bson::Bson::Int32(i)) => i64::from(*i),
            Some(common::bson::Bson::Int64(i)) => *i,
            other => panic!("unexpected _id {other:?}"),
        })
        .collect()
}

pub async fn storage_engine(client: &Client) -> Document {
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    status.get_document("storageEngine").unwrap().clone()
}

#[tokio::test]
async fn writes_fail_cleanly_while_the_disk_is_full_and_work_again_after() {
    let server = TestServer::start().await;
    let faults = server.shared().engine.storage_faults();
    let client = server.client().await;
    let db = client.database("app");
    let coll = db.collection::<Document>("items");
    coll.insert_many([doc! {"_id": 1i64}, doc! {"_id": 2i64}])
        .await
        .unwrap();

    faults.set_disk_full(true);
    let err = coll.insert_one(doc! {"_id": 3i64}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
    let err = coll
        .update_one(doc! {"_id": 1i64}, doc! {"$set": {"x": 1}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
    let err = coll.drop().await.unwrap_err();
    assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
    // Nothing of the failed writes is visible; reads go on; the server is not read-only.
    assert_eq!(ids(&coll).await, vec![1, 2]);
    assert_eq!(coll.count_documents(doc! {"x": 1}).await.unwrap(), 0);
    assert_eq!(
        storage_engine(&client).await.get_bool("readOnly"),
        Ok(false)
    );

    // Space is freed: writes succeed again without a restart, drop included.
    faults.set_disk_full(false);
    coll.insert_one(doc! {"_id": 4i64}).await.unwrap();
    let other = db.collection::<Document>("other");
    other.insert_one(doc! {"_id": 1i64}).await.unwrap();
    other.drop().await.unwrap();

    // Nothing acknowledged is lost, nothing refused appears, after a restart.
    let server = server.restart().await;
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("items");
    assert_eq!(ids(&coll).await, vec![1, 2, 4]);
    assert_eq!(coll.count_documents(doc! {"x": 1}).await.unwrap(), 0);
    let names = client
        .database("app")
        .list_collection_names()
        .await
        .unwrap();
    assert_eq!(names, vec!["items".to_owned()]);
}

#[tokio::test]
async fn a_commit_that_fails_before_applying_is_an_ordinary_error() {
    let server = TestServer::start().await;
    let faults = server.shared().engine.storage_faults();
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("items");
    coll.insert_one(doc! {"_id": 1i64}).await.unwrap();

    faults.fail_next_commits(1);
    let err = coll.insert_one(doc! {"_id": 2i64}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(INTERNAL_ERROR), "{err}");
    assert_eq!(ids(&coll).await, vec![1]);
    // The next write is taken as usual, and the one that failed never shows up.
    coll.insert_one(doc! {"_id": 3i64}).await.unwrap();
    let server = server.restart().await;
    let coll = server
        .client()
        .await
        .database("app")
        .collection::<Document>("items");
    assert_eq!(ids(&coll).await, vec![1, 3]);
}

#[tokio::test]
async fn a_failed_sync_makes_the_server_read_only_until_restarted() {
    let server = TestServer::start().await;
    let faults = server.shared().engine.storage_faults();
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("items");
    coll.insert_one(doc! {"_id": 1i64}).await.unwrap();

    faults.fail_next_syncs(1);
    let err = coll.insert_one(doc! {"_id": 2i64}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(INTERNAL_ERROR), "{err}");
    assert!(
        err.to_string().contains("may or may not have been applied"),
        "the error must not claim the write failed: {err}"
    );
    // Every later write is refused, reads keep working.
    for attempt in [doc! {"_id": 5i64}, doc! {"_id": 6i64}] {
        let err = coll.insert_one(attempt).await.unwrap_err();
        assert_eq!(error_code(&err), Some(ILLEGAL_OPERATION), "{err}");
    }
    let err = coll.drop().await.unwrap_err();
    assert_eq!(error_code(&err), Some(ILLEGAL_OPERATION), "{err}");
    assert!(ids(&coll).await.starts_with(&[1]));
    let engine = storage_engine(&client).await;
    assert_eq!(engine.get_bool("readOnly"), Ok(true));
    assert!(engine.get_str("readOnlyReason").is_ok(), "{engine}");

    // A restart recovers from the journal and takes writes again; what was acknowledged is
    // there, what was refused is not.
    let server = server.restart().await;
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("items");
    coll.insert_one(doc! {"_id": 7i64}).await.unwrap();
    let after = ids(&coll).await;
    assert!(after.contains(&1) && after.contains(&7), "{after:?}");
    assert!(!after.contains(&5) && !after.contains(&6), "{after:?}");
    assert_eq!(
        storage_engine(&client).await.get_bool("readOnly"),
        Ok(false)
    );
}

/// Unmounts the tmpfs when the test ends, however it ends.
pub struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

pub fn mount_tmpfs(dir: &std::path::Path, size: &str) -> Result<Mount, String> {
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(Mount(dir.to_path_buf()))
    } else {
        Err(format!("mount exited with {status}"))
    }
}

/// A tmpfs of `size` on `dir`, or `None` after a loud SKIPPED line where mounting is not
/// permitted (a failure with `MAYFLY_REQUIRE_TMPFS=1`).
pub fn tmpfs_or_skip(dir: &std::path::Path, size: &str, test: &str) -> Option<Mount> {
    match mount_tmpfs(dir, size) {
        Ok(mount) => Some(mount),
        Err(why) => {
            let message = format!("SKIPPED {test}: cannot mount a tmpfs ({why})");
            if std::env::var("MAYFLY_REQUIRE_TMPFS").as_deref() == Ok("1") {
                panic!("{message}");
            }
            eprintln!("\n!!! {message}\n");
            None
        }
    }
}

/// Free bytes on the file system of `dir`.
pub fn free_bytes(dir: &std::path::Path) -> u64 {
    let stats = rustix::fs::statvfs(dir).unwrap();
    stats.f_bavail * stats.f_frsize
}

/// A ballast file under `dir` leaving about `leave` bytes free on its file system.
pub fn fill_leaving(dir: &std::path::Path, leave: u64) -> std::path::PathBuf {
    let ballast = dir.join("ballast");
    let size = free_bytes(dir).saturating_sub(leave);
    let file = std::fs::File::create(&ballast).unwrap();
    // Written, not sparse: tmpfs counts only written pages.
    let mut out = std::io::BufWriter::new(file);
    let chunk = vec![7u8; 1 << 20];
    let mut left = size as usize;
    while left > 0 {
        let n = left.min(chunk.len());
        std::io::Write::write_all(&mut out, &chunk[..n]).unwrap();
        left -= n;
    }
    std::io::Write::flush(&mut out).unwrap();
    ballast
}

/// 16 KiB of incompressible bytes (fjall compresses large journal entries and tables), a new
/// value at each call.
pub fn incompressible() -> impl FnMut() -> common::bson::Binary {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    move || {
        let bytes: Vec<u8> = (0..16 * 1024)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        common::bson::Binary {
            subtype: common::bson::spec::BinarySubtype::Generic,
            bytes,
        }
    }
}

#[tokio::test]
async fn a_real_full_disk_refuses_writes_until_space_is_freed() {
    let base = tempfile::tempdir().unwrap();
    let Some(_mount) = tmpfs_or_skip(
        base.path(),
        "8m",
        "a_real_full_disk_refuses_writes_until_space_is_freed",
    ) else {
        return;
    };
    let dbpath = base.path().join("db");
    // Ballast: the space an operator frees once the disk is full.
    let ballast = base.path().join("ballast");
    std::fs::write(&ballast, vec![7u8; 3 * 1024 * 1024]).unwrap();

    let server = TestServer::start_with(|c| c.dbpath = dbpath.clone()).await;
    let client = server.client().await;
    let db = client.database("app");
    let keep = db.collection::<Document>("keep");
    let fill = db.collection::<Document>("fill");
    keep.insert_one(doc! {"_id": 0i64}).await.unwrap();

    let mut padding = incompressible();
    let mut acknowledged = Vec::new();
    let mut refused = None;
    for id in 0i64..2_000 {
        match fill.insert_one(doc! {"_id": id, "pad": padding()}).await {
            Ok(_) => acknowledged.push(id),
            Err(err) => {
                assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
                refused = Some(id);
                break;
            }
        }
    }
    let refused = refused.expect("8 MiB filled up");
    assert!(!acknowledged.is_empty());
    // Still full: writes keep failing, drop included, and reads work.
    let err = keep
        .insert_one(doc! {"_id": 1i64, "pad": padding()})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{err}");
    assert_eq!(ids(&fill).await, acknowledged);

    // Space is freed: writes work again without a restart.
    std::fs::remove_file(&ballast).unwrap();
    keep.insert_one(doc! {"_id": 2i64}).await.unwrap();

    // Nothing acknowledged is lost and the refused insert never appears, after a restart.
    let server = server.restart().await;
    let client = server.client().await;
    let db = client.database("app");
    let fill = db.collection::<Document>("fill");
    let keep = db.collection::<Document>("keep");
    let stored = ids(&fill).await;
    assert_eq!(stored, acknowledged);
    assert!(!stored.contains(&refused));
    assert_eq!(ids(&keep).await, vec![0, 2]);

    // Dropping the big collection works and gives the space back to writes.
    fill.drop().await.unwrap();
    keep.insert_one(doc! {"_id": 3i64, "pad": padding()})
        .await
        .unwrap();
    let server = server.restart().await;
    let client = server.client().await;
    let keep = client.database("app").collection::<Document>("keep");
    assert_eq!(ids(&keep).await, vec![0, 2, 3]);
    server.server.shutdown().await;
}
