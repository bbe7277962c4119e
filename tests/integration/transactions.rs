//! Multi-document transactions through the Rust driver, against a one-member replica set:
//! atomic commit across two collections, abort, snapshot reads, write conflicts with their
//! label, the states of a session's transactions, and the lifetime limit.

use crate::common;

use common::TestServer;
use mongodb::bson::{doc, Document};
use mongodb::error::{ErrorKind, TRANSIENT_TRANSACTION_ERROR};
use mongodb::{Client, Collection};
use std::time::Duration;

const SET: &str = "rs0";

async fn setup(server: &TestServer) -> (Client, Collection<Document>, Collection<Document>) {
    let client = server.replset_client(SET).await;
    let db = client.database("bank");
    let a = db.collection::<Document>("accounts");
    let b = db.collection::<Document>("ledger");
    a.insert_many([
        doc! {"_id": 1, "balance": 100},
        doc! {"_id": 2, "balance": 0},
    ])
    .await
    .unwrap();
    b.insert_one(doc! {"_id": "open"}).await.unwrap();
    (client, a, b)
}

fn code_of(err: &mongodb::error::Error) -> Option<i32> {
    match &*err.kind {
        ErrorKind::Command(e) => Some(e.code),
        ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => Some(e.code),
        _ => None,
    }
}

async fn balance(coll: &Collection<Document>, id: i32) -> i32 {
    coll.find_one(doc! {"_id": id})
        .await
        .unwrap()
        .unwrap()
        .get_i32("balance")
        .unwrap()
}

#[tokio::test]
async fn a_transaction_across_two_collections_commits_atomically() {
    let server = TestServer::start_replset(SET).await;
    let (client, a, b) = setup(&server).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    a.update_one(doc! {"_id": 1}, doc! {"$inc": {"balance": -30}})
        .session(&mut session)
        .await
        .unwrap();
    a.update_one(doc! {"_id": 2}, doc! {"$inc": {"balance": 30}})
        .session(&mut session)
        .await
        .unwrap();
    b.insert_one(doc! {"_id": "t1", "amount": 30})
        .session(&mut session)
        .await
        .unwrap();
    // Inside: its own writes, counted too.
    let inside = a
        .find_one(doc! {"_id": 2})
        .session(&mut session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(inside.get_i32("balance").unwrap(), 30);
    assert_eq!(
        b.count_documents(doc! {})
            .session(&mut session)
            .await
            .unwrap(),
        2
    );
    // Outside: nothing yet.
    assert_eq!(balance(&a, 1).await, 100);
    assert_eq!(balance(&a, 2).await, 0);
    assert!(b.find_one(doc! {"_id": "t1"}).await.unwrap().is_none());

    session.commit_transaction().await.unwrap();
    assert_eq!(balance(&a, 1).await, 70);
    assert_eq!(balance(&a, 2).await, 30);
    assert!(b.find_one(doc! {"_id": "t1"}).await.unwrap().is_some());
    // A commit retried (as drivers do after a network error) succeeds again.
    session.commit_transaction().await.unwrap();
}

#[tokio::test]
async fn an_aborted_transaction_leaves_nothing() {
    let server = TestServer::start_replset(SET).await;
    let (client, a, b) = setup(&server).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    a.delete_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    b.insert_one(doc! {"_id": "t2"})
        .session(&mut session)
        .await
        .unwrap();
    session.abort_transaction().await.unwrap();
    assert_eq!(balance(&a, 1).await, 100);
    assert_eq!(b.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn reads_see_the_snapshot_the_transaction_started_from() {
    let server = TestServer::start_replset(SET).await;
    let (client, a, _) = setup(&server).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    assert_eq!(
        a.find_one(doc! {"_id": 1})
            .session(&mut session)
            .await
            .unwrap()
            .unwrap()
            .get_i32("balance")
            .unwrap(),
        100
    );
    a.update_one(doc! {"_id": 1}, doc! {"$set": {"balance": 5}})
        .await
        .unwrap();
    let seen = a
        .find_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.get_i32("balance").unwrap(), 100);
    session.commit_transaction().await.unwrap();
}

#[tokio::test]
async fn a_concurrent_writer_conflicts_with_the_transient_label() {
    let server = TestServer::start_replset(SET).await;
    let (client, a, _) = setup(&server).await;
    let mut first = client.start_session().await.unwrap();
    let mut second = client.start_session().await.unwrap();
    first.start_transaction().await.unwrap();
    second.start_transaction().await.unwrap();
    a.update_one(doc! {"_id": 1}, doc! {"$inc": {"balance": 1}})
        .session(&mut first)
        .await
        .unwrap();
    // Another transaction writing the same document conflicts at once.
    let err = a
        .update_one(doc! {"_id": 1}, doc! {"$inc": {"balance": 2}})
        .session(&mut second)
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(112), "{err}");
    assert!(err.contains_label(TRANSIENT_TRANSACTION_ERROR), "{err}");
    // That transaction is aborted: its next statement says so.
    let err = a.find_one(doc! {}).session(&mut second).await.unwrap_err();
    assert_eq!(code_of(&err), Some(251), "{err}");
    drop(second);

    // A write outside any transaction goes through; the transaction then fails to commit.
    a.update_one(doc! {"_id": 1}, doc! {"$set": {"balance": 7}})
        .await
        .unwrap();
    let err = first.commit_transaction().await.unwrap_err();
    assert_eq!(code_of(&err), Some(112), "{err}");
    assert!(err.contains_label(TRANSIENT_TRANSACTION_ERROR), "{err}");
    assert_eq!(balance(&a, 1).await, 7);
}

#[tokio::test]
async fn a_write_error_aborts_the_transaction() {
    let server = TestServer::start_replset(SET).await;
    let (client, a, b) = setup(&server).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    b.insert_one(doc! {"_id": "t3"})
        .session(&mut session)
        .await
        .unwrap();
    let err = a
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(11000), "{err}");
    assert!(!err.contains_label(TRANSIENT_TRANSACTION_ERROR));
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(code_of(&err), Some(251), "{err}");
    assert!(b.find_one(doc! {"_id": "t3"}).await.unwrap().is_none());
}

#[tokio::test]
async fn commands_a_transaction_cannot_run_are_refused() {
    let server = TestServer::start_replset(SET).await;
    let (client, a, _) = setup(&server).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let err = client
        .database("bank")
        .run_command(doc! {"count": "accounts"})
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(263), "{err}");
    let err = a
        .aggregate([doc! {"$out": "copy"}])
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(263), "{err}");
}

#[tokio::test]
async fn a_transaction_open_past_its_lifetime_is_aborted() {
    let server = TestServer::start_with(|c| {
        c.replication.set_name = Some(SET.into());
        c.replication.transaction_lifetime_limit_secs = 1;
    })
    .await;
    let (client, a, _) = setup(&server).await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    a.update_one(doc! {"_id": 1}, doc! {"$set": {"balance": 1}})
        .session(&mut session)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(code_of(&err), Some(251), "{err}");
    // Its document is free again.
    a.update_one(doc! {"_id": 1}, doc! {"$set": {"balance": 2}})
        .await
        .unwrap();
    assert_eq!(balance(&a, 1).await, 2);
}

#[tokio::test]
async fn a_change_stream_sees_a_committed_transaction_with_its_session() {
    use futures::StreamExt;
    let server = TestServer::start_replset(SET).await;
    let (client, a, b) = setup(&server).await;
    let mut stream = client.database("bank").watch().await.unwrap();
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    a.update_one(doc! {"_id": 1}, doc! {"$inc": {"balance": -1}})
        .session(&mut session)
        .await
        .unwrap();
    b.insert_one(doc! {"_id": "t9"})
        .session(&mut session)
        .await
        .unwrap();
    session.abort_transaction().await.unwrap();
    session.start_transaction().await.unwrap();
    b.insert_one(doc! {"_id": "t10"})
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // The aborted transaction left no event; the committed one names its session.
    assert_eq!(event.document_key, Some(doc! {"_id": "t10"}), "{event:?}");
    assert_eq!(event.txn_number, Some(2));
    assert!(event.lsid.is_some());
}

#[tokio::test]
async fn collections_and_their_indexes_can_be_created_inside() {
    let server = TestServer::start_replset(SET).await;
    let (client, a, _) = setup(&server).await;
    let db = client.database("bank");
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    db.create_collection("audit")
        .session(&mut session)
        .await
        .unwrap();
    db.run_command(doc! {"createIndexes": "audit", "indexes": [{"key": {"at": 1}, "name": "at_1", "unique": true}]})
        .session(&mut session)
        .await
        .unwrap();
    let audit = db.collection::<Document>("audit");
    audit
        .insert_one(doc! {"_id": 1, "at": 5})
        .session(&mut session)
        .await
        .unwrap();
    let err = audit
        .insert_one(doc! {"_id": 2, "at": 5})
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(
        code_of(&err),
        Some(11000),
        "the new unique index holds inside: {err}"
    );
    // That aborted it: nothing of it exists.
    assert!(!db
        .list_collection_names()
        .await
        .unwrap()
        .contains(&"audit".to_owned()));
    // The driver still thinks it open; the server answers its abort with 251, which the driver
    // ignores.
    session.abort_transaction().await.unwrap();

    session.start_transaction().await.unwrap();
    db.create_collection("audit")
        .session(&mut session)
        .await
        .unwrap();
    db.run_command(
        doc! {"createIndexes": "audit", "indexes": [{"key": {"at": 1}, "name": "at_1"}]},
    )
    .session(&mut session)
    .await
    .unwrap();
    audit
        .insert_one(doc! {"_id": 1, "at": 5})
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    let names: Vec<String> = audit.list_index_names().await.unwrap();
    assert_eq!(names, vec!["_id_".to_owned(), "at_1".to_owned()]);
    assert_eq!(audit.count_documents(doc! {}).await.unwrap(), 1);

    // An index on a collection that existed before the transaction is refused.
    session.start_transaction().await.unwrap();
    let err = db
        .run_command(
            doc! {"createIndexes": a.name(), "indexes": [{"key": {"b": 1}, "name": "b_1"}]},
        )
        .session(&mut session)
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(263), "{err}");
}
