//! A full disk met by a spill of `allowDiskUse` (a `$sort`, a `$group`, each over mongod's
//! 100 MB): that one operation fails with mongod's sorter error for a failed spill write (14031
//! `OutOfDiskSpace`, naming the spill directory), other clients keep being served, and once
//! space is freed the same spill succeeds; no restart.
//!
//! Runs on a real 256 MiB tmpfs (as root); where mounting is not permitted it prints a loud
//! SKIPPED line (and fails with `MAYFLY_REQUIRE_TMPFS=1`).

use super::disk_full::{fill_leaving, tmpfs_or_skip, OUT_OF_DISK_SPACE};
use crate::common;

use common::bson::{doc, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::Collection;

const MIB: u64 = 1024 * 1024;
/// Rows of 40 KiB after the `$set`: 3,000 of them pass 100 MB, so the stage spills.
const PAD: usize = 40 * 1024;
const ROWS: i32 = 3000;

async fn run(coll: &Collection<Document>, stage: Document) -> mongodb::error::Result<usize> {
    let pipeline = vec![
        doc! {"$set": {"pad": "x".repeat(PAD)}},
        stage,
        doc! {"$project": {"pad": 0}},
    ];
    let docs: Vec<Document> = coll
        .aggregate(pipeline)
        .allow_disk_use(true)
        .await?
        .try_collect()
        .await?;
    Ok(docs.len())
}

#[tokio::test]
async fn a_spill_on_a_full_disk_fails_alone_and_works_once_space_is_freed() {
    let base = tempfile::tempdir().unwrap();
    let test = "a_spill_on_a_full_disk_fails_alone_and_works_once_space_is_freed";
    let Some(_mount) = tmpfs_or_skip(base.path(), "256m", test) else {
        return;
    };
    let dbpath = base.path().join("db");
    let server = TestServer::start_with(|c| c.dbpath = dbpath.clone()).await;
    let client = server.client().await;
    let coll = client.database("spill").collection::<Document>("c");
    let docs: Vec<Document> = (0..ROWS)
        .map(|i| doc! {"_id": i, "k": (i * 7919) % ROWS})
        .collect();
    coll.insert_many(docs).await.unwrap();
    let other = server.client().await;
    let served = other.database("spill").collection::<Document>("other");

    // (stage, what it spills) — a `$sort` writes sorted runs, a `$group` runs of partial
    // groups; both under `<dbpath>/_tmp`.
    let stages = [
        ("$sort", doc! {"$sort": {"k": 1}}),
        (
            "$group",
            doc! {"$group": {"_id": "$k", "pad": {"$first": "$pad"}}},
        ),
    ];
    for (name, stage) in stages {
        // Room for the database's writes (its 2 MiB reserve and more), not for the spill.
        let ballast = fill_leaving(base.path(), 24 * MIB);
        let err = run(&coll, stage.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(OUT_OF_DISK_SPACE), "{name}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(&dbpath.join("_tmp").display().to_string()),
            "{name}: {message}"
        );
        // The failed spill's files are gone with it; the server goes on serving.
        served.insert_one(doc! {"stage": name}).await.unwrap();
        assert_eq!(
            served.count_documents(doc! {"stage": name}).await.unwrap(),
            1
        );
        assert_eq!(
            coll.count_documents(doc! {}).await.unwrap(),
            u64::try_from(ROWS).unwrap()
        );

        // Space is freed: the same spill runs to the end.
        std::fs::remove_file(&ballast).unwrap();
        assert_eq!(
            run(&coll, stage).await.unwrap(),
            usize::try_from(ROWS).unwrap(),
            "{name}"
        );
    }
    server.server.shutdown().await;
}
