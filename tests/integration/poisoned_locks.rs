//! A lock a thread panicked while holding fails loudly: a read on a poisoned catalog answers
//! mongod's InternalError naming the lock, never `ok: 1` with no documents, and
//! `serverStatus` counts the poisoned lock.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::TestServer;
use futures::TryStreamExt;

const MESSAGE: &str =
    "the catalog lock is poisoned: a thread panicked while holding it; restart the server";

#[tokio::test]
async fn a_find_on_a_poisoned_catalog_fails_with_internal_error_and_is_counted() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = client.database("poison").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "a": 1}).await.unwrap();
    let found: Vec<Document> = coll
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found, vec![doc! {"_id": 1, "a": 1}]);

    server.shared().engine.poison_catalog_lock();

    let err = coll.find(doc! {}).await.map(drop).unwrap_err();
    let mongodb::error::ErrorKind::Command(reply) = err.kind.as_ref() else {
        panic!("not a command error: {err}");
    };
    assert_eq!(reply.code, 1);
    assert_eq!(reply.code_name, "InternalError");
    assert_eq!(reply.message, MESSAGE);
    let count = coll.count_documents(doc! {}).await.unwrap_err();
    assert!(count.to_string().contains(MESSAGE), "{count}");

    // The operator's view: serverStatus still answers, counts the lock, and shows no TTL
    // backlog figure rather than a wrong one.
    let admin = client.database("admin");
    let status = admin.run_command(doc! {"serverStatus": 1}).await.unwrap();
    let poisoned = status
        .get_document("locks")
        .and_then(|l| l.get_document("poisoned"))
        .unwrap();
    assert!(poisoned.get_i64("total").unwrap() >= 2, "{poisoned}");
    let by_catalog = poisoned.get_document("byLock").unwrap().get_i64("catalog");
    assert!(by_catalog.unwrap() >= 2, "{poisoned}");
    let ttl = status.get_document("ttl").unwrap();
    assert_eq!(ttl.get("backlog"), Some(&Bson::Null));
}
