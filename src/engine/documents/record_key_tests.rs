use super::*;
use crate::engine::catalog::Catalog;
use crate::profile::account::CollectionSettings;
use bson::RawDocumentBuf;

fn collection(shard_key: Option<&str>, partitioned: bool) -> CollectionMeta {
    let mut meta = Catalog::default().new_collection("db", "c", doc! {});
    meta.cosmos = shard_key.map(|path| CollectionSettings {
        shard_key: Some(path.to_owned()),
        throughput: None,
    });
    meta.partitioned = partitioned;
    meta
}

/// Every way of naming `doc`'s key agrees: from the document, from its bytes as an insert
/// sees them, and from its `documentKey`.
fn key(meta: &CollectionMeta, doc: &Document) -> Vec<u8> {
    let from_doc = of_document(meta, doc);
    let raw = RawDocumentBuf::from_document(doc).unwrap();
    let mut encoded_id = Vec::new();
    keys::encode_value(doc.get("_id").unwrap(), &mut encoded_id);
    assert_eq!(of_new(meta, &encoded_id, &raw).unwrap(), from_doc, "{doc}");
    assert_eq!(
        of_document_key(meta, &document_key(meta, doc)),
        Some(from_doc.clone()),
        "{doc}"
    );
    from_doc
}

#[test]
fn an_unpartitioned_collection_keys_documents_by_id_alone() {
    // A collection sharded by an earlier mayfly is not partitioned.
    for meta in [collection(None, false), collection(Some("k"), false)] {
        let doc = doc! {"_id": 7, "k": "a"};
        let k = key(&meta, &doc);
        assert_eq!(k, keys::document_key(meta.id, &Bson::Int32(7)));
        assert_eq!(key(&meta, &doc! {"_id": 7, "k": "b"}), k);
        assert_eq!(of_id(&meta, &Bson::Int32(7)), IdKeys::Exact(k));
        assert_eq!(document_key(&meta, &doc), doc! {"_id": 7});
        assert_eq!(record(&keys::document_key(meta.id, &Bson::Int32(7))), {
            let mut id = Vec::new();
            keys::encode_value(&Bson::Int32(7), &mut id);
            id
        });
    }
}

#[test]
fn a_partitioned_collection_keys_documents_by_id_then_shard_key_value() {
    let meta = collection(Some("k"), true);
    let a = key(&meta, &doc! {"_id": 7, "k": "a"});
    let b = key(&meta, &doc! {"_id": 7, "k": "b"});
    let other = key(&meta, &doc! {"_id": 8, "k": "a"});
    assert_ne!(a, b, "one _id in two shard-key values is two documents");
    assert!(a < b && b < other, "ordered by _id, then shard-key value");
    let IdKeys::Prefix(prefix) = of_id(&meta, &Bson::Int32(7)) else {
        panic!("a partitioned collection's _id names a prefix");
    };
    assert!(a.starts_with(&prefix) && b.starts_with(&prefix));
    assert!(!other.starts_with(&prefix));
    // Equal values are one shard-key value; a missing one is null.
    assert_eq!(
        key(&meta, &doc! {"_id": 7, "k": 1}),
        key(&meta, &doc! {"_id": 7, "k": 1.0})
    );
    assert_eq!(
        key(&meta, &doc! {"_id": 7}),
        key(&meta, &doc! {"_id": 7, "k": null})
    );
    assert_eq!(
        document_key(&meta, &doc! {"_id": 7, "x": 1, "k": "a"}),
        doc! {"k": "a", "_id": 7}
    );
    assert_eq!(of_document_key(&meta, &doc! {"_id": 7}), None);
}

#[test]
fn a_nested_shard_key_is_found_by_its_path() {
    let meta = collection(Some("tenant.id"), true);
    let doc = doc! {"_id": 1, "tenant": {"id": 42, "name": "x"}};
    let k = key(&meta, &doc);
    assert_ne!(k, key(&meta, &doc! {"_id": 1, "tenant": {"id": 43}}));
    assert_eq!(document_key(&meta, &doc), doc! {"tenant.id": 42, "_id": 1});
}

#[test]
fn a_shard_key_value_of_any_size_makes_a_key() {
    let meta = collection(Some("k"), true);
    let long = "x".repeat(70_000);
    let doc = doc! {"_id": 1, "k": long.clone()};
    let raw = RawDocumentBuf::from_document(&doc).unwrap();
    let mut encoded_id = Vec::new();
    keys::encode_value(&Bson::Int32(1), &mut encoded_id);
    let new = of_new(&meta, &encoded_id, &raw).unwrap();
    assert!(new.len() > 70_000);
    // An update's key of the same document is the same key; another value, another key.
    assert_eq!(of_document(&meta, &doc), new);
    assert_ne!(of_document(&meta, &doc! {"_id": 1, "k": long + "y"}), new);
}
