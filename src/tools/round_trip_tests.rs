//! `dump` then `restore` through the engine, on manual clocks: every record comes back with its
//! `_ts` and own `ttl`, documents expired at the dump are left out, and a restore over existing
//! collections is refused unless told to drop them. Cosmos settings go along, and with them
//! how a sharded collection keys its documents.

use super::archive::Counts;
use super::progress_line::ProgressLine;
use super::{check, dump, restore};
use crate::auth::{Credentials, Mechanism, RoleName, ScramCredential, User};
use crate::clock::{Clock, ManualClock};
use crate::engine::{ddl, documents::collection, users, Engine, IndexMeta, Record};
use crate::profile::account::{CollectionSettings, Throughput};
use crate::storage::{keys, Backend, FjallBackend, Keyspace, Snapshot};
use bson::{doc, Bson, Document};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const START: i64 = 1_000_000;

fn engine(dir: &Path, clock: &Arc<ManualClock>) -> Engine {
    Engine::open(dir, Arc::clone(clock) as Arc<dyn Clock>).unwrap()
}

async fn insert(engine: &Engine, db: &'static str, coll: &'static str, docs: Vec<Document>) {
    engine
        .write(true, move |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, db, coll).unwrap();
            for d in &docs {
                collection::insert(txn, &meta, d, now).unwrap();
            }
        })
        .await
        .unwrap();
}

/// `shop.carts` (collection TTL 100, a unique sparse index), `shop.events` (TTL -1, documents
/// with their own `ttl`), `shop.orders` (sharded on `tenant`, two documents with one `_id`),
/// `other.plain` (2,500 documents: several restore batches), a user; written at START and
/// START + 30, read at START + 60.
async fn source(dir: &Path) {
    let clock = Arc::new(ManualClock::starting_at_secs(START));
    let engine = engine(dir, &clock);
    engine
        .write(true, |txn, now| {
            let (meta, _) = ddl::ensure_collection(txn, "shop", "carts").unwrap();
            let ttl = IndexMeta {
                expire_after_seconds: Some(100),
                ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
            };
            let meta = ddl::create_index(txn, &meta, ttl, now).unwrap();
            let code = IndexMeta {
                unique: true,
                sparse: true,
                partial_filter: None,
                hidden: false,
                ..IndexMeta::new("code_1", doc! {"code": 1})
            };
            ddl::create_index(txn, &meta, code, now).unwrap();
            let (meta, _) = ddl::ensure_collection(txn, "shop", "events").unwrap();
            let never = IndexMeta {
                expire_after_seconds: Some(-1),
                ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
            };
            ddl::create_index(txn, &meta, never, now).unwrap();
            let (meta, _) = ddl::ensure_collection(txn, "shop", "orders").unwrap();
            // A custom TTL path (TTL-30) keeps reading numbers as milliseconds once restored.
            let custom = IndexMeta {
                expire_after_seconds: Some(1_000_000),
                custom_ttl: true,
                ..IndexMeta::new("at_1", doc! {"at": 1})
            };
            ddl::create_index(txn, &meta, custom, now).unwrap();
            ddl::set_cosmos_settings(txn, "shop", "orders", orders_settings()).unwrap();
            let user = User {
                db: "shop".into(),
                name: "ann".into(),
                user_id: bson::Uuid::new(),
                credentials: Credentials {
                    sha1: None,
                    sha256: Some(
                        ScramCredential::generate(Mechanism::ScramSha256, "ann", "pw").unwrap(),
                    ),
                },
                roles: vec![RoleName::new("readWrite", "shop")],
                custom_data: None,
            };
            users::put_user(txn, user).unwrap();
        })
        .await
        .unwrap();
    let carts = vec![
        doc! {"_id": 1, "code": "a"},
        doc! {"_id": 2, "code": "b", "ttl": 50},
        doc! {"_id": 3, "ttl": -1},
    ];
    insert(&engine, "shop", "carts", carts).await;
    let events = vec![doc! {"_id": "e1", "ttl": 20}, doc! {"_id": "e2"}];
    insert(&engine, "shop", "events", events).await;
    let orders = vec![
        doc! {"_id": 1, "tenant": "a"},
        doc! {"_id": 1, "tenant": "b"},
    ];
    insert(&engine, "shop", "orders", orders).await;
    let plain = (0..2_500).map(|i| doc! {"_id": i, "n": i % 7}).collect();
    insert(&engine, "other", "plain", plain).await;
    clock.advance(std::time::Duration::from_secs(30));
    insert(&engine, "shop", "carts", vec![doc! {"_id": 4, "code": "d"}]).await;
}

fn orders_settings() -> CollectionSettings {
    CollectionSettings {
        shard_key: Some("tenant".into()),
        throughput: Some(Throughput::Manual(500)),
    }
}

/// Every record of every collection, by namespace then record id.
fn records<S: Snapshot>(snapshot: &S) -> BTreeMap<String, BTreeMap<Vec<u8>, Record>> {
    let catalog = crate::engine::Catalog::load(snapshot).unwrap();
    let mut all = BTreeMap::new();
    for meta in catalog.all() {
        let prefix = keys::collection_prefix(meta.id);
        let records = snapshot
            .prefix(Keyspace::Documents, &prefix, false)
            .map(|e| {
                let (key, value) = e.unwrap();
                (
                    key[prefix.len()..].to_vec(),
                    Record::decode(&value).unwrap(),
                )
            })
            .collect();
        all.insert(meta.namespace(), records);
    }
    all
}

fn indexes(engine: &Engine) -> BTreeMap<String, Vec<Document>> {
    engine
        .catalog()
        .unwrap()
        .all()
        .map(|m| {
            let list = m
                .indexes
                .iter()
                .map(|i| {
                    let mut entry = i.to_list_entry();
                    entry.insert("custom", i.custom_ttl);
                    entry
                })
                .collect();
            (m.namespace(), list)
        })
        .collect()
}

#[tokio::test]
async fn dump_and_restore_keep_each_records_ts_and_leave_out_the_expired() {
    let from = tempfile::tempdir().unwrap();
    source(from.path()).await;
    let (archive, original) = {
        let backend = FjallBackend::open(from.path()).unwrap();
        let snapshot = backend.snapshot();
        // At START + 60: carts 2 (own ttl 50) and events e1 (20) have expired.
        let (bytes, summary) = dump::dump(
            &snapshot,
            Vec::new(),
            None,
            (START + 60) * 1000,
            &mut ProgressLine::off(),
        )
        .unwrap();
        assert_eq!(summary.expired, 2);
        assert_eq!(
            summary.counts,
            Counts {
                collections: 4,
                documents: 3 + 1 + 2 + 2_500,
                users: 1
            }
        );
        let mut original = records(&snapshot);
        for (ns, id) in [
            ("shop.carts", Bson::Int32(2)),
            ("shop.events", Bson::from("e1")),
        ] {
            let mut key = Vec::new();
            keys::encode_value(&id, &mut key);
            assert!(
                original.get_mut(ns).unwrap().remove(&key).is_some(),
                "{ns} {id}"
            );
        }
        (bytes, original)
    };
    let source_indexes = {
        let clock = Arc::new(ManualClock::starting_at_secs(START + 60));
        indexes(&engine(from.path(), &clock))
    };

    let to = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_at_secs(START + 60));
    let target = engine(to.path(), &clock);
    let counts =
        restore::restore(&target, archive.as_slice(), false, &mut ProgressLine::off()).unwrap();
    assert_eq!(counts.documents, 2_506);
    assert_eq!(
        records(&target.read().unwrap().snapshot),
        original,
        "same records, same _ts"
    );
    assert_eq!(indexes(&target), source_indexes);
    let orders = target
        .catalog()
        .unwrap()
        .get("shop", "orders")
        .cloned()
        .unwrap();
    assert_eq!(orders.cosmos, Some(orders_settings()));
    assert_eq!(orders.partition_path(), Some("tenant"));
    let user = target
        .catalog()
        .unwrap()
        .user("shop", "ann")
        .cloned()
        .unwrap();
    assert_eq!(user.roles, vec![RoleName::new("readWrite", "shop")]);
    let mut lines = Vec::new();
    assert!(check::check(
        &target.read().unwrap().snapshot,
        &mut lines,
        &mut ProgressLine::off()
    )
    .unwrap());
    let lines = String::from_utf8(lines).unwrap();
    assert!(
        lines.contains("other.plain: valid (2500 records)"),
        "{lines}"
    );

    // Again over what is there: refused, naming everything; with drop, replaced.
    let contents = restore::survey(archive.as_slice()).unwrap();
    let refused =
        restore::refuse_conflicts(&contents, &target.catalog().unwrap(), false, to.path())
            .unwrap_err()
            .to_string();
    for name in [
        "collection shop.carts",
        "collection other.plain",
        "user ann@shop",
    ] {
        assert!(refused.contains(name), "{refused}");
    }
    assert!(
        restore::refuse_conflicts(&contents, &target.catalog().unwrap(), true, to.path()).is_ok()
    );
    restore::restore(&target, archive.as_slice(), true, &mut ProgressLine::off()).unwrap();
    assert_eq!(
        records(&target.read().unwrap().snapshot),
        original,
        "replaced, not doubled"
    );
}

#[tokio::test]
async fn dump_of_one_database_and_of_none() {
    let from = tempfile::tempdir().unwrap();
    source(from.path()).await;
    let backend = FjallBackend::open(from.path()).unwrap();
    let snapshot = backend.snapshot();
    let (_, summary) = dump::dump(
        &snapshot,
        Vec::new(),
        Some("other"),
        START * 1000,
        &mut ProgressLine::off(),
    )
    .unwrap();
    assert_eq!(
        summary.counts,
        Counts {
            collections: 1,
            documents: 2_500,
            users: 0
        }
    );
    let err = dump::dump(
        &snapshot,
        Vec::new(),
        Some("nope"),
        START * 1000,
        &mut ProgressLine::off(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no database \"nope\""), "{err}");
}

#[tokio::test]
async fn a_dump_that_fails_leaves_no_archive_and_check_names_the_record() {
    let from = tempfile::tempdir().unwrap();
    source(from.path()).await;
    {
        let clock = Arc::new(ManualClock::starting_at_secs(START));
        let engine = engine(from.path(), &clock);
        let meta = engine
            .catalog()
            .unwrap()
            .get("other", "plain")
            .cloned()
            .unwrap();
        let key = keys::document_key(meta.id, &Bson::Int32(99_999));
        engine
            .write(true, move |txn, _| {
                txn.put(Keyspace::Documents, key, vec![9; 20])
            })
            .await
            .unwrap();
    }
    let backend = FjallBackend::open(from.path()).unwrap();
    let snapshot = backend.snapshot();
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("a.archive");
    let err = dump::dump_to_file(
        &snapshot,
        &path,
        None,
        START * 1000,
        &mut ProgressLine::off(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("other.plain"), "{err}");
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "no file left"
    );
    let mut lines = Vec::new();
    assert!(!check::check(&snapshot, &mut lines, &mut ProgressLine::off()).unwrap());
    let lines = String::from_utf8(lines).unwrap();
    assert!(
        lines.contains("other.plain: NOT VALID (2501 records): record"),
        "{lines}"
    );
    assert!(lines.contains("shop.carts: valid"), "{lines}");
}
