//! A blocking sort over its memory limit: refused with 292 without `allowDiskUse`, and with it,
//! sorted through runs on disk into exactly the order an in-memory sort gives, leaving no file
//! behind. Runs on the engine with a small limit (mongod's is 100 MB).

use bson::{doc, Document};
use mayfly::clock::{Clock, ManualClock};
use mayfly::engine::exec::{ReadRequest, StageStats};
use mayfly::engine::{ddl, documents::collection, Engine, Interrupt};
use mayfly::error::ErrorCode;
use std::sync::Arc;

async fn engine_with_docs(n: i32) -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::starting_at_secs(1_000_000));
    let engine = Engine::open(dir.path(), clock).unwrap();
    engine
        .write(false, move |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "d", "c").unwrap();
            for i in 0..n {
                // Keys repeat, so stability across runs is tested too.
                let d = doc! {"_id": i, "k": (i * 7919) % 97, "pad": "x".repeat(100)};
                collection::insert(txn, &meta, &d, now).unwrap();
            }
        })
        .await
        .unwrap();
    (dir, engine)
}

fn sorted(
    engine: &Engine,
    limit: Option<u64>,
    allow_disk_use: bool,
) -> Result<(Vec<Document>, StageStats), ErrorCode> {
    let view = engine.read().unwrap();
    let meta = view.collection("d", "c");
    let mut req = ReadRequest::new(doc! {})
        .unwrap()
        .sorted(doc! {"k": -1})
        .unwrap();
    req.limit = limit;
    req.allow_disk_use = allow_disk_use;
    req.sort_memory_limit = 20_000;
    let execution = view
        .execute(meta.as_deref(), &req, view.now_cell(), Interrupt::none())
        .map_err(|e| e.code)?;
    let docs = execution
        .docs
        .map(|d| d.map(|d| d.doc))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.code)?;
    Ok((docs, execution.stats))
}

fn spills(stats: &StageStats) -> u64 {
    // The root is the SORT, or a LIMIT above it.
    let sort = stats.child.as_deref().unwrap_or(stats);
    let own = stats
        .counters
        .spills
        .load(std::sync::atomic::Ordering::Relaxed);
    own + sort
        .counters
        .spills
        .load(std::sync::atomic::Ordering::Relaxed)
}

#[tokio::test]
async fn a_sort_over_its_memory_limit_needs_allow_disk_use_and_then_spills() {
    let (dir, engine) = engine_with_docs(2000).await;
    assert_eq!(
        sorted(&engine, None, false).unwrap_err(),
        ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed
    );
    let (docs, stats) = sorted(&engine, None, true).unwrap();
    assert!(spills(&stats) > 5, "{} runs", spills(&stats));
    assert_eq!(docs.len(), 2000);
    // Descending by k; equal keys keep their input (`_id`) order, as an in-memory sort would.
    let mut expected: Vec<(i32, i32)> = (0..2000).map(|i| ((i * 7919) % 97, i)).collect();
    expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let got: Vec<(i32, i32)> = docs
        .iter()
        .map(|d| (d.get_i32("k").unwrap(), d.get_i32("_id").unwrap()))
        .collect();
    assert_eq!(got, expected);
    // A limited sort keeps only the best documents and needs no disk.
    let (top, stats) = sorted(&engine, Some(5), false).unwrap();
    assert_eq!(top.len(), 5);
    assert_eq!(spills(&stats), 0);
    // Spilled runs are unlinked files: nothing is left in the data directory.
    let left = std::fs::read_dir(dir.path().join("_tmp")).unwrap().count();
    assert_eq!(left, 0);
}
