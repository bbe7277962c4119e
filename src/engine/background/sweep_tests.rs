//! Dropping leaves markers and no scan; the sweep deletes exactly the dropped ranges, across
//! restarts; a dropped collection's id is not reused while its entries remain.

use super::*;
use crate::clock::ManualClock;
use crate::engine::catalog::IndexMeta;
use crate::engine::{ddl, documents::collection, Engine};
use crate::storage::keys::collection_prefix;
use bson::doc;

fn open(dir: &std::path::Path) -> Engine {
    let engine = Engine::open(dir, Arc::new(ManualClock::starting_at_secs(1_000))).unwrap();
    engine.sweeper.pause();
    engine.reaper.pause();
    engine
}

fn count(engine: &Engine, keyspace: Keyspace, prefix: &[u8]) -> usize {
    engine
        .backend
        .snapshot()
        .prefix(keyspace, prefix, false)
        .count()
}

/// Entries of collection `id` in the three keyspaces a drop leaves to the sweeper.
fn entries_of(engine: &Engine, id: u64) -> [usize; 3] {
    let prefix = collection_prefix(id);
    [Keyspace::Documents, Keyspace::Indexes, Keyspace::Expiry].map(|k| count(engine, k, &prefix))
}

/// Collection `db.c` with `n` documents, secondary indexes on `a` and `b` (`2n` entries) and
/// a TTL, so that it has entries in every keyspace; returns its id.
async fn collection_of(engine: &Engine, n: usize) -> u64 {
    engine
        .write(true, move |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
            let ttl = IndexMeta {
                expire_after_seconds: Some(3600),
                ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
            };
            let meta = ddl::create_index(txn, &meta, ttl, now).unwrap();
            let meta =
                ddl::create_index(txn, &meta, IndexMeta::new("a_1", doc! {"a": 1}), now).unwrap();
            let meta =
                ddl::create_index(txn, &meta, IndexMeta::new("b_1", doc! {"b": 1}), now).unwrap();
            for i in 0..n {
                let d = doc! {"_id": i as i64, "a": (i % 10) as i64, "b": i as i64};
                collection::insert(txn, &meta, &d, now).unwrap();
            }
            meta.id
        })
        .await
        .unwrap()
}

async fn drop_c(engine: &Engine) {
    engine
        .write(true, |txn, _| ddl::drop_collection(txn, "db", "c").unwrap())
        .await
        .unwrap()
        .unwrap();
}

/// A drop leaves the entries where they are with a marker per keyspace; a pass deletes all
/// of them over several jobs, and the markers with the last.
#[tokio::test]
async fn a_drop_leaves_markers_and_a_pass_deletes_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let n = BATCH * 2 + 7;
    let id = collection_of(&engine, n).await;
    assert_eq!(entries_of(&engine, id), [n, 2 * n, n]);
    drop_c(&engine).await;
    assert!(engine.catalog().unwrap().get("db", "c").is_none());
    assert_eq!(
        entries_of(&engine, id),
        [n, 2 * n, n],
        "the drop scanned nothing"
    );
    assert_eq!(engine.sweeper.pending_ranges().unwrap(), 3);
    assert_eq!(engine.sweeper.run_pass().await.unwrap(), 4 * n as u64);
    assert_eq!(entries_of(&engine, id), [0, 0, 0]);
    assert_eq!(engine.sweeper.pending_ranges().unwrap(), 0);
    assert_eq!(
        engine.sweeper.stats.swept.load(Ordering::Relaxed),
        4 * n as u64
    );
    assert_eq!(engine.sweeper.run_pass().await.unwrap(), 0, "nothing left");
}

/// A collection created under the dropped one's name gets a new id, before and after a
/// restart, so it never sees the entries left to sweep.
#[tokio::test]
async fn a_dropped_collections_id_is_not_reused_while_its_entries_remain() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let engine = open(dir.path());
        let id = collection_of(&engine, 10).await;
        drop_c(&engine).await;
        let again = engine
            .write(true, |txn, _| {
                ddl::ensure_collection(txn, "db", "c").unwrap().0.id
            })
            .await
            .unwrap();
        assert!(again > id);
        engine
            .write(true, |txn, _| ddl::drop_collection(txn, "db", "c").unwrap())
            .await
            .unwrap();
        id
    };
    // The dropped collections were the last created: only the markers keep their ids.
    let engine = open(dir.path());
    let mut catalog = (*engine.catalog().unwrap()).clone();
    assert!(catalog.new_collection("db", "c", doc! {}).id > id + 1);
    assert_eq!(entries_of(&engine, id), [10, 20, 10]);
    let fresh = engine
        .write(true, |txn, _| {
            ddl::ensure_collection(txn, "db", "c").unwrap().0
        })
        .await
        .unwrap();
    assert_eq!(entries_of(&engine, fresh.id), [0, 0, 0]);
}

/// Markers survive a restart and the sweep there deletes what is left.
#[tokio::test]
async fn the_sweep_goes_on_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let engine = open(dir.path());
        let id = collection_of(&engine, BATCH + 1).await;
        drop_c(&engine).await;
        id
    };
    let engine = open(dir.path());
    assert_eq!(engine.sweeper.pending_ranges().unwrap(), 3);
    engine.sweeper.run_pass().await.unwrap();
    assert_eq!(entries_of(&engine, id), [0, 0, 0]);
    assert_eq!(engine.sweeper.pending_ranges().unwrap(), 0);
}

/// Dropping an index leaves only its own entries to sweep; the collection's documents and
/// other indexes are untouched, and the background thread sweeps without being asked.
#[tokio::test]
async fn a_dropped_index_is_swept_alone_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let n = BATCH + 3;
    let id = collection_of(&engine, n).await;
    let a_1 = engine
        .catalog()
        .unwrap()
        .get("db", "c")
        .unwrap()
        .index("a_1")
        .unwrap()
        .id;
    let b_1 = engine
        .catalog()
        .unwrap()
        .get("db", "c")
        .unwrap()
        .index("b_1")
        .unwrap()
        .id;
    engine
        .write(true, |txn, _| {
            let meta = txn.catalog.get("db", "c").cloned().unwrap();
            ddl::drop_index(txn, &meta, "a_1").unwrap();
        })
        .await
        .unwrap();
    assert_eq!(engine.sweeper.pending_ranges().unwrap(), 1);
    engine.sweeper.resume();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while engine.sweeper.pending_ranges().unwrap() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sweeper never ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let index = |index_id| {
        count(
            &engine,
            Keyspace::Indexes,
            &keys::index_prefix(id, index_id),
        )
    };
    assert_eq!(index(a_1), 0);
    assert_eq!(index(b_1), n);
    assert_eq!(entries_of(&engine, id), [n, n, n]);
}

/// Marker keys round-trip, and a key that is not a whole marker is refused, not misread.
#[test]
fn marker_keys_round_trip() {
    for keyspace in Keyspace::ALL {
        for prefix in [
            vec![1u8],
            keys::index_prefix(300, 2),
            collection_prefix(1 << 40).to_vec(),
        ] {
            let marker = Marker { keyspace, prefix };
            assert_eq!(Marker::from_key(&marker.key()), Some(marker.clone()));
        }
    }
    assert_eq!(Marker::from_key(b"sweep\0"), None);
    assert_eq!(Marker::from_key(b"sweep\0\x00"), None, "no prefix");
    assert_eq!(
        Marker::from_key(b"sweep\0\xff\x01"),
        None,
        "no such keyspace"
    );
    assert_eq!(Marker::from_key(b"coll\0db\0c"), None);
    let marker = Marker {
        keyspace: Keyspace::Documents,
        prefix: keys::index_prefix(300, 2),
    };
    assert_eq!(marker.collection_id(), Some(300));
}

/// The sweeper's writer slot holds a handle a panic cannot leave half written: a poisoned one
/// is counted, and the sweeper goes on instead of stopping quietly.
#[tokio::test]
async fn a_poisoned_writer_slot_is_counted_and_the_sweeper_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let id = collection_of(&engine, 3).await;
    drop_c(&engine).await;
    let sweeper = Arc::clone(&engine.sweeper);
    let _ = std::thread::spawn(move || {
        let _held = sweeper.writer.lock();
        std::panic::resume_unwind(Box::new("a bug while holding the sweeper's writer"));
    })
    .join();
    let count = || {
        crate::sync::poisoned_by_lock()
            .into_iter()
            .find(|(n, _)| *n == SWEEPER_WRITER)
            .map_or(0, |(_, n)| n)
    };
    let before = count();
    assert_eq!(engine.sweeper.run_pass().await.unwrap(), 3 + 2 * 3 + 3);
    assert_eq!(entries_of(&engine, id), [0, 0, 0]);
    assert!(count() > before);
}
