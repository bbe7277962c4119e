//! `validate` checks a collection's records, secondary indexes, expiry keys and stored count
//! against each other, and finds what was planted behind the server's back: a dangling index
//! entry, a missing one, and an expiry entry no document gives.

use crate::common::{error_code, TestServer};
use bson::{doc, Bson, Document};
use mayfly::engine::documents::record_key;
use mayfly::storage::keys::{self, Direction};
use mayfly::storage::Keyspace;

async fn validate(db: &mongodb::Database) -> Document {
    db.run_command(doc! {"validate": "items", "full": true})
        .await
        .unwrap()
}

#[tokio::test]
async fn validate_finds_planted_dangling_and_missing_entries() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("v");
    let items = db.collection::<Document>("items");
    let docs: Vec<Document> = (0..100)
        .map(|i| match i % 3 {
            0 => doc! {"_id": i, "n": i, "tags": ["a", "b"]},
            1 => doc! {"_id": i, "n": i, "ttl": 60},
            _ => doc! {"_id": i, "n": i, "ttl": -1},
        })
        .collect();
    items.insert_many(docs).await.unwrap();
    db.run_command(doc! {"createIndexes": "items", "indexes": [
        {"key": {"n": 1}, "name": "n_1"},
        {"key": {"tags": 1}, "name": "tags_1"},
        {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 3600},
    ]})
    .await
    .unwrap();

    let sound = validate(&db).await;
    assert_eq!(sound.get_bool("valid"), Ok(true), "{sound}");
    assert_eq!(sound.get_i32("nrecords"), Ok(100), "{sound}");
    assert_eq!(sound.get_i32("nIndexes"), Ok(4), "{sound}");
    let per_index = sound.get_document("keysPerIndex").unwrap();
    assert_eq!(per_index.get_i32("_id_"), Ok(100));
    assert_eq!(per_index.get_i32("n_1"), Ok(100));
    // 34 documents with two tags each; the others have no tags (one null entry each).
    assert_eq!(per_index.get_i32("tags_1"), Ok(34 * 2 + 66));
    // The `_ts` index is the expiry keys: one per document that can expire (not `ttl: -1`).
    assert_eq!(per_index.get_i32("_ts_1"), Ok(67));
    assert_eq!(sound.get_array("errors").map(Vec::len), Ok(0), "{sound}");

    // Behind the server's back: an entry of n_1 for a value no document has, the entry of
    // document 3 in n_1 removed, and an expiry entry for a document that does not exist.
    let shared = server.shared();
    let meta = shared
        .engine
        .catalog()
        .unwrap()
        .get("v", "items")
        .cloned()
        .unwrap();
    let n_index = meta.indexes.iter().find(|i| i.name == "n_1").unwrap();
    let asc = |v: i32| vec![(Bson::Int32(v), Direction::Ascending)];
    let dangling = keys::index_key(
        meta.id,
        n_index.id,
        &asc(999),
        record_key::record(&keys::document_key(meta.id, &Bson::Int32(999))),
    );
    let removed = keys::index_key(
        meta.id,
        n_index.id,
        &asc(3),
        record_key::record(&keys::document_key(meta.id, &Bson::Int32(3))),
    );
    let ghost_doc = keys::document_key(meta.id, &Bson::Int32(5000));
    let ghost_expiry = mayfly::engine::documents::expiry::key_at(&ghost_doc, 1, None).unwrap();
    shared
        .engine
        .write(true, move |txn, _| {
            txn.put(Keyspace::Indexes, dangling, Vec::new());
            txn.delete(Keyspace::Indexes, removed);
            txn.put(Keyspace::Expiry, ghost_expiry, Vec::new());
        })
        .await
        .unwrap();

    let broken = validate(&db).await;
    assert_eq!(broken.get_bool("valid"), Ok(false), "{broken}");
    let extra = broken.get_array("extraIndexEntries").unwrap();
    assert_eq!(extra.len(), 1, "{broken}");
    assert_eq!(extra[0].as_document().unwrap().get_str("index"), Ok("n_1"));
    let missing = broken.get_array("missingIndexEntries").unwrap();
    assert_eq!(missing.len(), 1, "{broken}");
    let details = broken.get_document("indexDetails").unwrap();
    assert_eq!(
        details.get_document("n_1").unwrap().get_bool("valid"),
        Ok(false)
    );
    assert_eq!(
        details.get_document("tags_1").unwrap().get_bool("valid"),
        Ok(true)
    );
    let errors: Vec<&str> = broken
        .get_array("errors")
        .unwrap()
        .iter()
        .filter_map(Bson::as_str)
        .collect();
    assert!(
        errors.iter().any(|e| e.contains("expiry keys hold 1")),
        "{errors:?}"
    );
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(!broken.get_str("advice").unwrap().is_empty());
}

#[tokio::test]
async fn validate_refuses_what_it_cannot_do() {
    let server = TestServer::start().await;
    let db = server.client().await.database("v");
    let err = db
        .run_command(doc! {"validate": "absent"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(26), "{err}");
    db.collection::<Document>("items")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    for flag in ["repair", "metadata"] {
        let err = db
            .run_command(doc! {"validate": "items", flag: true})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(238), "{err}");
    }
    let reply = db
        .run_command(doc! {"validate": "items", "background": true, "enforceFastCount": true})
        .await
        .unwrap();
    assert_eq!(reply.get_bool("valid"), Ok(true), "{reply}");
}
