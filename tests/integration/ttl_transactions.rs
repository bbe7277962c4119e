//! Expiry inside multi-document transactions (TTL-14, TTL-15, TTL-18…TTL-20), through the Rust
//! driver against a one-member replica set with the manual clock and the reaper paused.
//!
//! The rule under test (docs/ttl.md, "Transactions"): a statement judges expiry at its own
//! time, not at the snapshot's; the documents a transaction writes carry its commit time as
//! `_ts`; and a document the transaction writes that was live at its start but has expired by
//! its commit is a write conflict (112, `TransientTransactionError`), whether or not the reaper
//! has deleted it yet. An acknowledged write is never undone by expiry.

use crate::common;

use common::bson::{doc, Document};
use common::ttl::{advance, now, reaper, ttl_collection, ttl_status, visible};
use common::TestServer;
use mongodb::error::{ErrorKind, TRANSIENT_TRANSACTION_ERROR};
use mongodb::{Client, ClientSession, Collection};

const SET: &str = "rs0";

/// A replica-set server with the reaper paused, `ttl.c` with collection TTL 10, and the
/// document `{_id: 1}` written at the returned time T.
async fn setup() -> (TestServer, Client, Collection<Document>, i64) {
    let server = TestServer::start_replset(SET).await;
    let client = server.replset_client(SET).await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_one(doc! {"_id": 1, "n": 0}).await.unwrap();
    let t = now(&client).await;
    (server, client, coll, t)
}

fn code_of(err: &mongodb::error::Error) -> Option<i32> {
    match &*err.kind {
        ErrorKind::Command(e) => Some(e.code),
        ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => Some(e.code),
        _ => None,
    }
}

/// Moves the server clock to `t` (never back).
async fn clock_to(client: &Client, t: i64) {
    let at = now(client).await;
    assert!(t >= at, "the clock only moves forward ({at} -> {t})");
    assert_eq!(advance(client, t - at).await, t);
}

/// Starts a transaction whose first statement reads `{_id: 1}`; returns what it saw.
async fn begin_reading(
    client: &Client,
    coll: &Collection<Document>,
) -> (ClientSession, Option<Document>) {
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let seen = coll
        .find_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    (session, seen)
}

/// `{$inc: {n: 1}}` on `{_id: 1}` in `session`'s transaction: (matched, modified).
async fn bump(coll: &Collection<Document>, session: &mut ClientSession) -> (u64, u64) {
    let result = coll
        .update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .session(session)
        .await
        .unwrap();
    (result.matched_count, result.modified_count)
}

/// The reported case: a transaction opened at T+5 reads the document; the clock passes its
/// expiry (T+10); the update issued then does not match it (TTL-19 at the statement's time),
/// so the client is never told of a write that expiry then undoes.
#[tokio::test]
async fn a_statement_after_expiry_does_not_match_what_the_snapshot_held() {
    let (_server, client, coll, t) = setup().await;
    clock_to(&client, t + 5).await;
    let (mut session, seen) = begin_reading(&client, &coll).await;
    assert!(seen.is_some(), "live at T+5");
    clock_to(&client, t + 11).await;
    assert_eq!(
        bump(&coll, &mut session).await,
        (0, 0),
        "expired at the statement's time"
    );
    session.commit_transaction().await.unwrap();
    assert!(!visible(&coll, 1).await);
}

/// Read-only statements judge expiry at their own time too: find, countDocuments and
/// aggregate inside the transaction stop seeing the document the second it expires.
#[tokio::test]
async fn a_read_after_expiry_sees_nothing_ttl_18() {
    let (_server, client, coll, t) = setup().await;
    clock_to(&client, t + 5).await;
    let (mut session, seen) = begin_reading(&client, &coll).await;
    assert!(seen.is_some());
    clock_to(&client, t + 9).await;
    let count = coll.count_documents(doc! {}).session(&mut session).await;
    assert_eq!(count.unwrap(), 1, "live at T+9");
    clock_to(&client, t + 10).await;
    let found = coll
        .find_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    assert_eq!(found, None, "expired at T+10");
    let count = coll.count_documents(doc! {}).session(&mut session).await;
    assert_eq!(count.unwrap(), 0);
    let mut cursor = coll
        .aggregate(vec![doc! {"$match": {}}])
        .session(&mut session)
        .await
        .unwrap();
    assert!(cursor.next(&mut session).await.is_none());
    session.commit_transaction().await.unwrap();
}

/// An update committed before the document expires gives it the commit time as `_ts`
/// (TTL-15): not the snapshot's time (T+5) nor the statement's (T+6).
#[tokio::test]
async fn an_update_lives_from_its_commit_time_ttl_15() {
    let (_server, client, coll, t) = setup().await;
    clock_to(&client, t + 5).await;
    let (mut session, _) = begin_reading(&client, &coll).await;
    clock_to(&client, t + 6).await;
    assert_eq!(bump(&coll, &mut session).await, (1, 1));
    clock_to(&client, t + 9).await;
    session.commit_transaction().await.unwrap();
    clock_to(&client, t + 18).await;
    let doc = coll.find_one(doc! {"_id": 1}).await.unwrap();
    assert_eq!(doc, Some(doc! {"_id": 1, "n": 1}), "committed at T+9");
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        0
    );
    clock_to(&client, t + 19).await;
    assert!(!visible(&coll, 1).await, "gone at T+9+10");
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        1
    );
}

/// Documents a transaction inserts are its own until the commit: they do not expire while it
/// runs, however long, and live from the commit time, with the collection TTL or their own
/// `ttl` (TTL-13). The reaper and the backlog agree (the expiry keys carry the commit time).
#[tokio::test]
async fn inserted_documents_live_from_the_commit_time() {
    let (_server, client, coll, t) = setup().await;
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.insert_many([doc! {"_id": "a"}, doc! {"_id": "own", "ttl": 2}])
        .session(&mut session)
        .await
        .unwrap();
    clock_to(&client, t + 15).await;
    let mine = coll.count_documents(doc! {"_id": {"$in": ["a", "own"]}});
    assert_eq!(mine.session(&mut session).await.unwrap(), 2, "not expired");
    session.commit_transaction().await.unwrap();
    clock_to(&client, t + 16).await;
    assert!(visible(&coll, "own").await, "visible at c+1");
    clock_to(&client, t + 17).await;
    assert!(!visible(&coll, "own").await, "own ttl 2: gone at c+2");
    clock_to(&client, t + 24).await;
    assert!(visible(&coll, "a").await, "visible at c+9");
    assert_eq!(ttl_status(&client).await.get_i64("backlog").unwrap(), 2);
    clock_to(&client, t + 25).await;
    assert!(!visible(&coll, "a").await, "gone at c+10");
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        3
    );
    assert_eq!(ttl_status(&client).await.get_i64("backlog").unwrap(), 0);
}

/// The document was live when the transaction wrote it (T+8) but expired (T+10) before the
/// commit (T+11): expiry is a delete that happened after the snapshot, so the commit fails
/// with a write conflict, labelled transient, and applies nothing. The reaper has not run:
/// the outcome does not depend on when it does.
#[tokio::test]
async fn expiry_between_the_write_and_the_commit_is_a_write_conflict() {
    let (_server, client, coll, t) = setup().await;
    clock_to(&client, t + 5).await;
    let (mut session, _) = begin_reading(&client, &coll).await;
    clock_to(&client, t + 8).await;
    assert_eq!(bump(&coll, &mut session).await, (1, 1));
    clock_to(&client, t + 11).await;
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(code_of(&err), Some(112), "{err}");
    assert!(err.contains_label(TRANSIENT_TRANSACTION_ERROR), "{err}");
    assert!(!visible(&coll, 1).await);
    assert_eq!(ttl_status(&client).await.get_i64("backlog").unwrap(), 1);
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        1
    );
}

/// As above with the reaper deleting the document between the write and the commit; the
/// retried transaction then finds no document, and commits.
#[tokio::test]
async fn reaped_between_the_write_and_the_commit_is_a_write_conflict_ttl_20() {
    let (_server, client, coll, t) = setup().await;
    clock_to(&client, t + 5).await;
    let (mut session, _) = begin_reading(&client, &coll).await;
    clock_to(&client, t + 8).await;
    assert_eq!(bump(&coll, &mut session).await, (1, 1));
    clock_to(&client, t + 10).await;
    assert_eq!(
        reaper(&client, "runOnce").await.get_i64("reaped").unwrap(),
        1
    );
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(code_of(&err), Some(112), "{err}");
    assert!(err.contains_label(TRANSIENT_TRANSACTION_ERROR), "{err}");

    // The retry the label asks for: the whole transaction again.
    let (mut retry, seen) = begin_reading(&client, &coll).await;
    assert_eq!(seen, None);
    assert_eq!(bump(&coll, &mut retry).await, (0, 0));
    retry.commit_transaction().await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
}

/// A document that had expired before the transaction started is not in its snapshot's
/// view: inserting its `_id` succeeds (TTL-19) and the commit does not conflict.
#[tokio::test]
async fn inserting_the_id_of_a_document_expired_before_the_start_commits() {
    let (_server, client, coll, t) = setup().await;
    clock_to(&client, t + 10).await;
    let (mut session, seen) = begin_reading(&client, &coll).await;
    assert_eq!(seen, None);
    coll.insert_one(doc! {"_id": 1, "n": 9})
        .session(&mut session)
        .await
        .unwrap();
    clock_to(&client, t + 12).await;
    session.commit_transaction().await.unwrap();
    let doc = coll.find_one(doc! {"_id": 1}).await.unwrap();
    assert_eq!(doc, Some(doc! {"_id": 1, "n": 9}));
    clock_to(&client, t + 21).await;
    assert!(
        visible(&coll, 1).await,
        "committed at T+12: visible at T+21"
    );
}
