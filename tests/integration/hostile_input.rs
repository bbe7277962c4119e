//! Hostile input: nesting, path, pattern and pipeline limits answered with mongod's errors, and
//! stored documents nested past every limit ("poison" documents) that no command may crash on.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::TestServer;
use mayfly::engine::Record;
use mayfly::storage::keys::document_key;
use mayfly::storage::Keyspace;
use mongodb::Collection;
use tokio::io::AsyncReadExt;

/// `levels` nested documents `{a: {a: ... {}}}`, encoded by hand (no recursion).
fn nested_bytes(levels: usize) -> Vec<u8> {
    let mut body = vec![5, 0, 0, 0, 0];
    for _ in 1..levels {
        let len = (4 + 3 + body.len() + 1) as i32;
        let mut outer = len.to_le_bytes().to_vec();
        outer.extend_from_slice(&[0x03, b'a', 0]);
        outer.extend_from_slice(&body);
        outer.push(0);
        body = outer;
    }
    body
}

/// `doc` with one more field `key` whose value is the encoded document `sub`.
fn with_raw_field(doc: &Document, key: &str, sub: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    doc.to_writer(&mut bytes).unwrap();
    bytes.pop();
    bytes.push(0x03);
    bytes.extend_from_slice(key.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(sub);
    bytes.push(0);
    let len = bytes.len() as i32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    bytes
}

/// An OP_MSG frame around an already encoded body.
fn op_msg_frame(request_id: i32, body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(&((16 + 4 + 1 + body.len()) as i32).to_le_bytes());
    frame.extend_from_slice(&request_id.to_le_bytes());
    frame.extend_from_slice(&0i32.to_le_bytes());
    frame.extend_from_slice(&2013i32.to_le_bytes());
    frame.extend_from_slice(&0u32.to_le_bytes());
    frame.push(0);
    frame.extend_from_slice(body);
    frame
}

/// A `Bson` value `{a: {a: ... 1}}` with `levels` documents (small enough for the encoder).
fn nested_value(levels: usize) -> Bson {
    let mut v = Bson::Int32(1);
    for _ in 0..levels {
        v = Bson::Document(doc! {"a": v});
    }
    v
}

/// The code of a command error or of a write error.
fn error_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => {
            Some(e.code)
        }
        _ => common::error_code(err),
    }
}

fn dotted(n: usize) -> String {
    vec!["a"; n].join(".")
}

async fn assert_serving(server: &TestServer) {
    let client = server.client().await;
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("the server still answers");
}

#[tokio::test]
async fn a_request_nested_deeper_than_200_levels_is_refused_and_the_server_keeps_serving() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    let other = server.client().await;
    for (levels, ok) in [(200, true), (201, false), (1_500, false), (100_000, false)] {
        let body = with_raw_field(
            &doc! {"ping": 1, "$db": "admin"},
            "x",
            &nested_bytes(levels),
        );
        conn.send(&op_msg_frame(levels as i32, &body)).await;
        let reply = conn.read().await.expect("a reply, not a closed connection");
        if ok {
            assert_eq!(reply.document.get_f64("ok").unwrap(), 1.0, "{levels}");
        } else {
            assert_eq!(reply.document.get_i32("code").unwrap(), 15, "{levels}");
            assert_eq!(
                reply.document.get_str("errmsg").unwrap(),
                "BSONObj exceeds maximum nested object depth"
            );
        }
    }
    other
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    assert_serving(&server).await;
}

#[tokio::test]
async fn limits_are_answered_with_mongods_errors() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll: Collection<Document> = client.database("test").collection("c");
    coll.insert_one(doc! {"_id": 1, "s": "x"}).await.unwrap();

    // A $set path of 10,000 components.
    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$set": {dotted(10_000): 1}})
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    assert!(err.to_string().contains("FieldPath is too long"), "{err}");

    // A $set that would store a document deeper than 100 levels.
    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$set": {dotted(150): 1}})
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Document exceeds maximum nesting depth of 100"),
        "{err}"
    );
    let err = coll
        .find_one_and_update(doc! {"_id": 1}, doc! {"$set": {dotted(150): 1}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    let err = coll
        .find_one_and_replace(doc! {"_id": 1}, doc! {"v": nested_value(150)})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    // Inserting one.
    let err = coll
        .insert_one(doc! {"_id": 2, "v": nested_value(150)})
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot insert document because it exceeds 100 levels of nesting"),
        "{err}"
    );
    // An upsert whose query path seeds a deep document.
    let err = coll
        .update_one(doc! {"_id": 3, dotted(150): 1}, doc! {"$set": {"y": 1}})
        .upsert(true)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("100 levels of nesting"), "{err}");

    // A regex with 5,000 nested groups.
    let pattern = format!("{}a{}", "(".repeat(5_000), ")".repeat(5_000));
    let err = coll
        .find_one(doc! {"s": {"$regex": pattern}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(51091), "{err}");
    assert!(err
        .to_string()
        .contains("parentheses are too deeply nested"));

    // A projection path of 100,000 components.
    let err = coll
        .find_one(doc! {})
        .projection(doc! {dotted(100_000): 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(5729100), "{err}");

    // A sort path of 100,000 components.
    let err = coll
        .find_one(doc! {})
        .sort(doc! {dotted(100_000): 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");

    // A pipeline of 10,000 stages.
    let pipeline: Vec<Document> = (0..10_000).map(|_| doc! {"$match": {}}).collect();
    let err = coll.aggregate(pipeline).await.unwrap_err();
    assert_eq!(error_code(&err), Some(7749501), "{err}");
    assert!(err
        .to_string()
        .contains("Pipeline length must be no longer than 1000 stages."));
    let pipeline: Vec<Document> = (0..1_000).map(|_| doc! {"$match": {}}).collect();
    coll.aggregate(pipeline).await.unwrap();

    // Stages that each wrap the document one level deeper.
    let pipeline: Vec<Document> = (0..300)
        .map(|_| doc! {"$project": {"_id": 0, "w": "$$ROOT"}})
        .collect();
    let err = coll.aggregate(pipeline).await.unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    assert!(err.to_string().contains(
        "cannot convert document to BSON because it exceeds the limit of 200 levels of nesting"
    ));
    let pipeline: Vec<Document> = (0..150)
        .map(|_| doc! {"$group": {"_id": null, "w": {"$push": "$$ROOT"}}})
        .collect();
    let err = coll.aggregate(pipeline).await.unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");

    assert_serving(&server).await;
}

#[tokio::test]
async fn a_regex_that_runs_out_of_budget_is_an_error_not_a_mismatch() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll: Collection<Document> = client.database("test").collection("re");
    coll.insert_one(doc! {"s": format!("{}c", "a".repeat(28))})
        .await
        .unwrap();
    let err = coll
        .find_one(doc! {"s": {"$regex": "^(a+)+$|c$"}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(51156), "{err}");
    let err = coll
        .count_documents(doc! {"s": {"$regex": "^(a+)+$|c$"}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(51156), "{err}");
    assert_serving(&server).await;
}

/// A 200-level command and a 100-level stored document pass through every path.
#[tokio::test]
async fn documents_at_the_limits_pass_through_every_path() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll: Collection<Document> = client.database("test").collection("deep");
    // 100 levels in all: the document, then 99 nested documents.
    let deep = nested_value(98);
    coll.insert_one(doc! {"_id": 1, "a": deep.clone()})
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 2, "a": 5}).await.unwrap();
    let deep_path = dotted(99);
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! {&deep_path: 1})
            .build(),
    )
    .await
    .unwrap();
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();

    // A filter as deep as a request may be: find, count, distinct, delete (of nothing).
    let filter = doc! {"a": nested_value(197)};
    assert_eq!(coll.count_documents(filter.clone()).await.unwrap(), 0);
    assert!(coll.find_one(filter.clone()).await.unwrap().is_none());
    assert!(coll.distinct("a", filter.clone()).await.unwrap().is_empty());
    assert_eq!(coll.delete_many(filter).await.unwrap().deleted_count, 0);

    let found = coll
        .find_one(doc! {"a": deep.clone()})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.get_i32("_id").unwrap(), 1);
    let sorted: Vec<Document> = coll
        .find(doc! {})
        .sort(doc! {&deep_path: -1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(sorted.len(), 2);
    assert_eq!(coll.count_documents(doc! {&deep_path: 1}).await.unwrap(), 1);
    assert_eq!(coll.distinct("a", doc! {}).await.unwrap().len(), 2);
    let grouped: Vec<Document> = coll
        .aggregate(vec![
            doc! {"$match": {"_id": {"$gte": 1}}},
            doc! {"$sort": {"a": 1}},
            doc! {"$project": {"b": "$a", "c": {"$literal": nested_value(150)}}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(grouped.len(), 2);
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {dotted(98): 7}})
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {&deep_path: 1}).await.unwrap(), 0);
    coll.replace_one(doc! {"_id": 2}, doc! {"a": nested_value(99)})
        .await
        .unwrap();
    let err = coll
        .replace_one(doc! {"_id": 2}, doc! {"a": nested_value(100)})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    assert_serving(&server).await;
}

use futures::TryStreamExt;

/// Stores `levels`-deep `{_id: id, a: {a: ...}}` under `_id` directly, past every check.
async fn store_poison(server: &TestServer, coll: &str, id: i32, levels: usize) {
    let shared = server.shared();
    let meta = shared
        .engine
        .catalog()
        .unwrap()
        .get("test", coll)
        .unwrap()
        .clone();
    let body = with_raw_field(&doc! {"_id": id}, "a", &nested_bytes(levels));
    let record = Record {
        ts: shared.engine.now(),
        own_ttl: None,
        body,
    };
    let key = document_key(meta.id, &Bson::Int32(id));
    shared
        .engine
        .write(true, move |txn, _| {
            txn.put(Keyspace::Documents, key, record.encode())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_poison_document_crashes_no_command_and_can_be_removed() {
    for levels in [1_000, 5_000] {
        let server = TestServer::start().await;
        let client = server.client().await;
        let coll: Collection<Document> = client.database("test").collection("p");
        coll.insert_many([doc! {"_id": 1, "a": 1}, doc! {"_id": 2, "a": 2}])
            .await
            .unwrap();
        store_poison(&server, "p", 1, levels).await;

        let overflow = |e: mongodb::error::Error| {
            assert_eq!(error_code(&e), Some(15), "{e}");
        };
        // Reads that must decode it fail with an error; the server keeps serving.
        overflow(coll.find_one(doc! {"a": 1}).await.unwrap_err());
        let sorted = async {
            let cursor = coll.find(doc! {}).sort(doc! {"a": 1}).await?;
            cursor.try_collect::<Vec<_>>().await
        };
        overflow(sorted.await.unwrap_err());
        let projected = async {
            let cursor = coll.aggregate(vec![doc! {"$project": {"a": 1}}]).await?;
            cursor.try_collect::<Vec<_>>().await
        };
        overflow(projected.await.unwrap_err());
        overflow(coll.distinct("a", doc! {}).await.unwrap_err());
        overflow(
            coll.count_documents(doc! {"a": {"$gt": 0}})
                .await
                .unwrap_err(),
        );
        overflow(
            coll.update_one(doc! {"_id": 1}, doc! {"$set": {"b": 1}})
                .await
                .unwrap_err(),
        );
        overflow(
            coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
                .await
                .unwrap_err(),
        );
        // A find without projection sends it as stored, never decoding it (read here as bytes:
        // a client's recursive decoder is not under test).
        let mut conn = server.raw().await;
        let mut find = Vec::new();
        doc! {"find": "p", "filter": {"_id": 1}, "$db": "test"}
            .to_writer(&mut find)
            .unwrap();
        conn.send(&op_msg_frame(7, &find)).await;
        let mut len = [0u8; 4];
        conn.stream.read_exact(&mut len).await.unwrap();
        let mut rest = vec![0u8; i32::from_le_bytes(len) as usize - 4];
        conn.stream.read_exact(&mut rest).await.unwrap();
        assert!(
            rest.len() > levels * 8,
            "the reply carries the stored document"
        );
        // Counting and reads that never decode it still work.
        assert_eq!(coll.estimated_document_count().await.unwrap(), 2);
        overflow(coll.count_documents(doc! {}).await.unwrap_err());
        assert_eq!(
            coll.find_one(doc! {"_id": 2}).await.unwrap().unwrap(),
            doc! {"_id": 2, "a": 2}
        );
        assert_serving(&server).await;

        // Deleting it needs its body (for its index entries), so that is refused too; dropping
        // the collection removes it.
        overflow(coll.delete_one(doc! {"_id": 1}).await.unwrap_err());
        store_poison(&server, "p", 3, levels).await;
        coll.drop().await.unwrap();
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
        assert_serving(&server).await;
    }
}

/// A stored document as deep as a read may decode (written past the 100-level store check, as
/// an older server could have stored it) goes through every path that decodes it, on the
/// server's 2 MiB stacks, without a crash.
#[tokio::test]
async fn a_document_at_the_read_limit_goes_through_every_path() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll: Collection<Document> = client.database("test").collection("r");
    coll.insert_many([doc! {"_id": 1, "a": 1}, doc! {"_id": 2, "a": 2}])
        .await
        .unwrap();
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"b": 1}).build())
        .await
        .unwrap();
    // 200 levels: the document, then 199 nested documents (the innermost one empty).
    store_poison(&server, "r", 1, 200).await;

    let projected = coll
        .find_one(doc! {"_id": 1})
        .projection(doc! {"a": 1})
        .await
        .unwrap()
        .unwrap();
    assert!(projected.contains_key("a"));
    assert_eq!(
        coll.count_documents(doc! {"a": {"$gt": 0}}).await.unwrap(),
        1
    );
    assert_eq!(
        coll.count_documents(doc! {"a.a.a": {"$exists": true}})
            .await
            .unwrap(),
        1
    );
    let sorted: Vec<Document> = coll
        .find(doc! {})
        .sort(doc! {"a": -1})
        .projection(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(sorted.len(), 2);
    assert_eq!(coll.distinct("a", doc! {}).await.unwrap().len(), 2);
    let grouped = async {
        let cursor = coll
            .aggregate(vec![
                doc! {"$sort": {"a": 1}},
                doc! {"$group": {"_id": null, "all": {"$push": "$$ROOT"}}},
            ])
            .await?;
        cursor.try_collect::<Vec<_>>().await
    };
    // `$push` nests the document one level deeper than any document may be.
    assert_eq!(error_code(&grouped.await.unwrap_err()), Some(15));
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    assert_eq!(
        coll.count_documents(doc! {"a": {"$type": "object"}})
            .await
            .unwrap(),
        1
    );
    // Its update would store a document deeper than 100 levels: refused, as any such write.
    let err = coll
        .update_one(doc! {"_id": 1}, doc! {"$set": {"b": 1}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(15), "{err}");
    assert_eq!(
        coll.delete_one(doc! {"_id": 1})
            .await
            .unwrap()
            .deleted_count,
        1
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    assert_serving(&server).await;
}
