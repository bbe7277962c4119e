//! Targets read from a snapshot a batch at a time, and re-checked in the writer against what
//! happened to them since.

use super::*;
use crate::clock::ManualClock;
use crate::engine::{ddl, documents::collection, Engine};
use bson::{doc, Document};

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(dir, Arc::new(ManualClock::starting_at_secs(1_000))).unwrap()
}

async fn insert_all(engine: &Engine, docs: Vec<Document>) {
    engine
        .write(true, move |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "db", "c")?;
            docs.iter()
                .try_for_each(|d| collection::insert(txn, &meta, d, now))
        })
        .await
        .unwrap()
        .unwrap();
}

/// The targets of `filter`, read from the last commit in batches of `limits`.
fn batches(engine: &Engine, filter: Document, limits: BatchLimits) -> Vec<Vec<StoredDoc>> {
    let view = engine.read().unwrap();
    let meta = view.collection("db", "c").unwrap();
    let req = ReadRequest::new(filter).unwrap();
    let mut targets = TargetBatches::start(&view, &meta, &req, Interrupt::none()).unwrap();
    assert_eq!(targets.collection_id(), meta.id);
    let mut all = Vec::new();
    loop {
        let batch = targets.next_batch(limits).unwrap();
        if batch.is_empty() {
            return all;
        }
        all.push(batch);
    }
}

#[tokio::test]
async fn batches_end_at_the_first_bound_reached_and_hold_at_least_one_target() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    // Ten documents of about 1 KiB each.
    let pad = "x".repeat(1_000);
    insert_all(
        &engine,
        (0..10).map(|i| doc! {"_id": i, "pad": &pad}).collect(),
    )
    .await;
    let sizes = |limits| -> Vec<usize> {
        batches(&engine, doc! {}, limits)
            .iter()
            .map(Vec::len)
            .collect()
    };
    let cases = [
        (
            BatchLimits {
                docs: 4,
                bytes: 1 << 20,
            },
            vec![4, 4, 2],
        ),
        (
            BatchLimits {
                docs: 100,
                bytes: 2_500,
            },
            vec![3, 3, 3, 1],
        ),
        // A document over the byte bound still moves forward, one a batch.
        (
            BatchLimits {
                docs: 100,
                bytes: 10,
            },
            vec![1; 10],
        ),
        (
            BatchLimits {
                docs: 100,
                bytes: 1 << 20,
            },
            vec![10],
        ),
    ];
    for (limits, expected) in cases {
        assert_eq!(sizes(limits), expected, "{limits:?}");
    }
}

#[tokio::test]
async fn a_target_is_rechecked_against_what_happened_to_it_since_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    insert_all(&engine, (0..5).map(|i| doc! {"_id": i, "a": 1}).collect()).await;
    let all = BatchLimits {
        docs: 100,
        bytes: 1 << 20,
    };
    let targets: Vec<StoredDoc> = batches(&engine, doc! {"a": 1}, all).concat();
    assert_eq!(targets.len(), 5);

    // After the snapshot: 1 rewritten still matching, 2 rewritten no longer matching, 3
    // deleted; 0 and 4 untouched.
    let outcomes = engine
        .write(true, move |txn, now| {
            let meta = collection::existing_collection(txn, "db", "c").unwrap();
            let at = |i: usize| targets.get(i).unwrap();
            collection::update(txn, &meta, at(1), &doc! {"_id": 1, "a": 1, "b": 2}, now)?;
            collection::update(txn, &meta, at(2), &doc! {"_id": 2, "a": 2}, now)?;
            collection::delete(txn, &meta, at(3))?;
            let filter = Filter::compile(&doc! {"a": 1}).unwrap();
            targets
                .iter()
                .map(|t| {
                    Ok(match recheck(txn, &meta, t, &filter, now)? {
                        Recheck::Unchanged => "unchanged".to_owned(),
                        Recheck::Changed(current) => format!("changed {}", current.doc),
                        Recheck::Gone => "gone".to_owned(),
                    })
                })
                .collect::<Result<Vec<_>>>()
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcomes,
        [
            "unchanged",
            "changed { \"_id\": 1, \"a\": 1, \"b\": 2 }",
            "gone",
            "gone",
            "unchanged",
        ]
    );
}
