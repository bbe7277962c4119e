use super::*;
use crate::engine::catalog::Catalog;
use crate::engine::documents::record::Record;
use crate::error::ErrorCode;
use bson::{doc, Regex};

/// Prepared from the decoded document, or from its bytes.
fn prepare(doc: &Document, keep: bool, raw: bool) -> Result<NewDocument> {
    if raw {
        NewDocument::prepare_raw(&body_of(doc), keep)
    } else {
        NewDocument::prepare(doc, keep)
    }
}

const BOTH: [(bool, bool); 4] = [(true, false), (false, false), (true, true), (false, true)];

fn body_of(doc: &Document) -> Vec<u8> {
    let mut bytes = Vec::new();
    doc.to_writer(&mut bytes).unwrap();
    bytes
}

#[test]
fn a_document_with_an_id_is_stored_as_it_came() {
    let doc = doc! {"_id": "a", "x": 1, "ttl": 20};
    for (keep, raw) in BOTH {
        let new = prepare(&doc, keep, raw).unwrap();
        assert_eq!(new.id(), &Bson::String("a".into()));
        assert_eq!(new.own_ttl(), Some(20));
        let meta = Catalog::default().new_collection("db", "c", doc! {});
        assert_eq!(
            new.key(&meta).unwrap(),
            keys::document_key(meta.id, &Bson::String("a".into()))
        );
        assert_eq!(new.document().unwrap().as_ref(), &doc);
        let record = Record::decode(&new.into_record(1_234)).unwrap();
        assert_eq!(
            (record.ts, record.own_ttl, record.body),
            (1_234, Some(20), body_of(&doc))
        );
    }
}

#[test]
fn a_document_without_an_id_gets_an_object_id_first() {
    let doc = doc! {"a": 1, "b": {"c": "d"}, "ttl": 2.0};
    for (keep, raw) in BOTH {
        let mut new = prepare(&doc, keep, raw).unwrap();
        let Bson::ObjectId(oid) = new.id().clone() else {
            panic!("not an ObjectId: {:?}", new.id());
        };
        let expected = doc! {"_id": oid, "a": 1, "b": {"c": "d"}, "ttl": 2.0};
        assert_eq!(new.document().unwrap().as_ref(), &expected);
        assert_eq!(new.take_document().unwrap(), expected);
        assert_eq!(new.own_ttl(), Some(2));
        assert_eq!(new.body_len(), body_of(&expected).len());
        let record = Record::decode(&new.into_record(5)).unwrap();
        assert_eq!(record.body, body_of(&expected));
        assert_eq!(record.document().unwrap(), expected);
    }
}

#[test]
fn an_empty_document_gets_an_id() {
    for (keep, raw) in BOTH {
        let new = prepare(&Document::new(), keep, raw).unwrap();
        let doc = new.document().unwrap().into_owned();
        assert_eq!(doc.len(), 1);
        assert!(matches!(doc.get("_id"), Some(Bson::ObjectId(_))));
    }
}

#[test]
fn documents_that_cannot_be_stored_are_refused_with_mongods_codes() {
    let deep = (0..120).fold(Bson::Int32(1), |inner, _| Bson::Document(doc! {"a": inner}));
    let cases: Vec<(Document, ErrorCode, &str)> = vec![
        (
            doc! {"_id": [1, 2]},
            ErrorCode::InvalidIdField,
            "The '_id' value cannot be of type array",
        ),
        (
            doc! {"_id": Regex { pattern: "a".into(), options: String::new() }},
            ErrorCode::InvalidIdField,
            "The '_id' value cannot be of type regex",
        ),
        (
            doc! {"_id": Bson::Undefined},
            ErrorCode::InvalidIdField,
            "The '_id' value cannot be of type undefined",
        ),
        (
            doc! {"_id": {"x": {"$bad": 1}}},
            ErrorCode::DollarPrefixedFieldName,
            "_id fields may not contain '$'-prefixed fields: $bad is not valid for storage.",
        ),
        (
            doc! {"_id": 1, "big": "x".repeat(MAX_BSON_OBJECT_SIZE)},
            ErrorCode::BadValue,
            "object to insert too large. size in bytes: ",
        ),
        (
            doc! {"_id": 1, "deep": deep},
            ErrorCode::Overflow,
            "cannot insert document because it exceeds",
        ),
    ];
    for (doc, code, message) in cases {
        for raw in [false, true] {
            let error = prepare(&doc, false, raw).unwrap_err();
            assert_eq!(error.code, code, "{message}");
            assert!(
                error.message.starts_with(message),
                "{} does not start with {message}",
                error.message
            );
        }
    }
}

#[test]
fn the_id_is_stored_first_as_mongod_stores_it() {
    let doc = doc! {"a": 1, "b": {"c": [1, 2]}, "_id": "k", "z": "last"};
    let expected = doc! {"_id": "k", "a": 1, "b": {"c": [1, 2]}, "z": "last"};
    for (keep, raw) in BOTH {
        let new = prepare(&doc, keep, raw).unwrap();
        assert_eq!(new.document().unwrap().as_ref(), &expected);
        let record = Record::decode(&new.into_record(1)).unwrap();
        assert_eq!(record.body, body_of(&expected), "keep {keep}, raw {raw}");
    }
}

#[test]
fn a_second_id_field_is_refused() {
    // Two `_id` elements: only raw bytes can carry them (a decoded document keeps one).
    let mut bytes = body_of(&doc! {"_id": 1, "x": 2});
    let at = bytes.windows(2).position(|w| w == b"x\0").unwrap();
    bytes.splice(at..at + 1, b"_id".iter().copied());
    let len = bytes.len() as i32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    assert!(RawDocument::from_bytes(&bytes)
        .unwrap()
        .iter()
        .all(|e| e.is_ok()));
    let error = NewDocument::prepare_raw(&bytes, false).unwrap_err();
    assert_eq!(error.code, ErrorCode::BadValue);
    assert_eq!(
        error.message,
        "can't have multiple _id fields in one document"
    );
}

/// A document that comes as bytes is stored in one buffer of its record's size, allocated
/// once: the header, the document and a generated `_id` (built with the document's own length
/// prefix, which is then removed).
#[test]
fn a_raw_documents_record_is_allocated_once_at_its_size() {
    let long = "x".repeat(300);
    for (doc, spare) in [
        (doc! {"_id": 1, "a": long.as_str()}, 0),
        (doc! {"a": long.as_str()}, 4),
        (doc! {}, 4),
    ] {
        let bytes = bson::to_vec(&doc).unwrap();
        let new = NewDocument::prepare_raw(&bytes, false).unwrap();
        assert_eq!(new.stored.capacity(), new.stored.len() + spare, "{doc}");
    }
}

/// A key computed before the writer's group is used by it only for the same collection, and
/// only while that is not partitioned: a shard key given meanwhile, or a collection dropped
/// and created again, makes the group compute the key itself.
#[test]
fn a_key_computed_ahead_is_used_only_where_it_still_holds() {
    let plain = Catalog::default().new_collection("db", "c", doc! {});
    let mut partitioned = plain.clone();
    partitioned.cosmos = Some(crate::profile::account::CollectionSettings {
        shard_key: Some("p".to_owned()),
        throughput: None,
    });
    partitioned.partitioned = true;
    let mut recreated = plain.clone();
    recreated.id += 1;
    let doc = doc! {"_id": 7, "p": "west"};
    for group in [&plain, &partitioned, &recreated] {
        let mut new = NewDocument::prepare(&doc, false).unwrap();
        new.key_ahead(&plain);
        let expected = new.key(group).unwrap();
        assert_eq!(new.take_key(group).unwrap(), expected);
        new.key_ahead(&plain);
        assert_eq!(new.probed_key(group).unwrap(), (expected, false));
    }
    assert_ne!(plain_key(&plain, &doc), plain_key(&partitioned, &doc));

    // A partitioned collection's keys are never computed ahead.
    let mut new = NewDocument::prepare(&doc, false).unwrap();
    new.key_ahead(&partitioned);
    assert!(new.probed.is_none());
}

fn plain_key(meta: &CollectionMeta, doc: &Document) -> Vec<u8> {
    NewDocument::prepare(doc, false).unwrap().key(meta).unwrap()
}
