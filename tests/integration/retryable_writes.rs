//! Retryable writes on a replica set member: a write sent with `lsid` and `txnNumber` applies
//! each statement once; a retry returns the original reply, also after a restart. Commands carry
//! `txnNumber` explicitly, with the session's `lsid` from a driver session (or, across a
//! restart, on a raw connection), as the retryable-writes specification's examples do.

use crate::common;

use common::bson::{doc, Bson, Document, Uuid};
use common::{error_code, TestServer};
use mayfly::clock::Clock;
use mongodb::{ClientSession, Database};

async fn replica_set() -> TestServer {
    TestServer::start_with(|c| {
        c.replication.set_name = Some("rs0".into());
        c.storage = mayfly::config::StorageKind::Disk;
    })
    .await
}

async fn run(
    db: &Database,
    session: &mut ClientSession,
    cmd: Document,
) -> mongodb::error::Result<Document> {
    db.run_command(cmd).session(session).await
}

async fn count(db: &Database, coll: &str, filter: Document) -> u64 {
    db.collection::<Document>(coll)
        .count_documents(filter)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_retried_insert_returns_the_original_reply_and_inserts_once() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    let mut s = client.start_session().await.unwrap();
    let cmd = doc! {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "txnNumber": 1_i64};
    let first = run(&db, &mut s, cmd.clone()).await.unwrap();
    assert_eq!(first.get_i32("n"), Ok(2));
    assert!(!first.contains_key("retriedStmtIds"));
    let retry = run(&db, &mut s, cmd).await.unwrap();
    assert_eq!(retry.get_i32("n"), Ok(2), "{retry}");
    assert!(
        !retry.contains_key("writeErrors"),
        "no duplicate key: {retry}"
    );
    assert_eq!(retry.get_array("retriedStmtIds").unwrap().len(), 2);
    assert_eq!(count(&db, "c", doc! {}).await, 2);
}

#[tokio::test]
async fn a_partly_executed_batch_runs_only_the_rest() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 2}).await.unwrap();
    let mut s = client.start_session().await.unwrap();
    let cmd = doc! {
        "insert": "c",
        "documents": [{"_id": 1, "n": 1}, {"_id": 2}, {"_id": 3}],
        "txnNumber": 5_i64,
    };
    let first = run(&db, &mut s, cmd.clone()).await.unwrap();
    assert_eq!(first.get_i32("n"), Ok(1), "{first}");
    assert_eq!(first.get_array("writeErrors").unwrap().len(), 1);
    coll.delete_one(doc! {"_id": 2}).await.unwrap();
    let retry = run(&db, &mut s, cmd).await.unwrap();
    assert_eq!(retry.get_i32("n"), Ok(3), "{retry}");
    assert_eq!(
        retry.get_array("retriedStmtIds").unwrap(),
        &vec![Bson::Int32(0)]
    );
    assert_eq!(count(&db, "c", doc! {}).await, 3);
}

#[tokio::test]
async fn a_retried_update_returns_its_counts_and_upserted_id_and_applies_once() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    db.collection::<Document>("c")
        .insert_one(doc! {"_id": 1, "x": 0})
        .await
        .unwrap();
    let mut s = client.start_session().await.unwrap();
    let cmd = doc! {
        "update": "c",
        "updates": [
            {"q": {"_id": 1}, "u": {"$inc": {"x": 1}}},
            {"q": {"_id": 9}, "u": {"$inc": {"x": 1}}, "upsert": true},
        ],
        "txnNumber": 1_i64,
    };
    let first = run(&db, &mut s, cmd.clone()).await.unwrap();
    let retry = run(&db, &mut s, cmd).await.unwrap();
    for key in ["n", "nModified", "upserted"] {
        assert_eq!(first.get(key), retry.get(key), "{key}: {first} vs {retry}");
    }
    assert_eq!(retry.get_i32("n"), Ok(2));
    assert_eq!(retry.get_i32("nModified"), Ok(1));
    let coll = db.collection::<Document>("c");
    let one = coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(one.get_i32("x"), Ok(1), "incremented once");
    let nine = coll.find_one(doc! {"_id": 9}).await.unwrap().unwrap();
    assert_eq!(nine.get_i32("x"), Ok(1), "upserted once");
}

#[tokio::test]
async fn a_retried_delete_returns_its_count_and_deletes_once() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    db.collection::<Document>("c")
        .insert_many(vec![doc! {"k": 1}, doc! {"k": 1}])
        .await
        .unwrap();
    let mut s = client.start_session().await.unwrap();
    let cmd = doc! {"delete": "c", "deletes": [{"q": {"k": 1}, "limit": 1}], "txnNumber": 3_i64};
    let first = run(&db, &mut s, cmd.clone()).await.unwrap();
    let retry = run(&db, &mut s, cmd).await.unwrap();
    assert_eq!(first.get_i32("n"), Ok(1));
    assert_eq!(retry.get_i32("n"), Ok(1), "{retry}");
    assert_eq!(count(&db, "c", doc! {}).await, 1, "deleted once");
}

#[tokio::test]
async fn a_retried_find_and_modify_returns_the_original_document() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    db.collection::<Document>("c")
        .insert_one(doc! {"_id": 1, "x": 0})
        .await
        .unwrap();
    let mut s = client.start_session().await.unwrap();
    let cmd = doc! {
        "findAndModify": "c",
        "query": {"_id": 1},
        "update": {"$inc": {"x": 1}},
        "new": true,
        "txnNumber": 1_i64,
    };
    let first = run(&db, &mut s, cmd.clone()).await.unwrap();
    let retry = run(&db, &mut s, cmd).await.unwrap();
    assert_eq!(
        first.get_document("value").unwrap(),
        &doc! {"_id": 1, "x": 1}
    );
    assert_eq!(retry.get("value"), first.get("value"), "{retry}");
    assert_eq!(retry.get("lastErrorObject"), first.get("lastErrorObject"));
    assert_eq!(retry.get_i32("retriedStmtId"), Ok(0));
    let stored = db
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.get_i32("x"), Ok(1), "incremented once");
}

#[tokio::test]
async fn a_newer_txn_number_starts_fresh_and_an_older_one_is_too_old() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    let mut s = client.start_session().await.unwrap();
    let insert = |txn: i64| doc! {"insert": "c", "documents": [{"v": txn}], "txnNumber": txn};
    run(&db, &mut s, insert(1)).await.unwrap();
    let second = run(&db, &mut s, insert(2)).await.unwrap();
    assert!(!second.contains_key("retriedStmtIds"), "{second}");
    assert_eq!(count(&db, "c", doc! {}).await, 2);
    let err = run(&db, &mut s, insert(1)).await.unwrap_err();
    assert_eq!(error_code(&err), Some(225), "{err}");
    assert!(
        err.to_string()
            .contains("Retryable write with txnNumber 1 is prohibited on session"),
        "{err}"
    );
    assert_eq!(count(&db, "c", doc! {}).await, 2);
}

#[tokio::test]
async fn multi_statement_updates_and_deletes_are_not_retryable() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    let mut s = client.start_session().await.unwrap();
    let update = doc! {
        "update": "c",
        "updates": [{"q": {}, "u": {"$set": {"y": 1}}}, {"q": {}, "u": {"$set": {"z": 1}}, "multi": true}],
        "txnNumber": 1_i64,
    };
    let reply = run(&db, &mut s, update).await.unwrap();
    let errors = reply.get_array("writeErrors").unwrap();
    assert_eq!(errors.len(), 1, "{reply}");
    let error = errors[0].as_document().unwrap();
    assert_eq!(error.get_i32("index"), Ok(1));
    assert_eq!(error.get_i32("code"), Ok(72));
    let delete = doc! {
        "delete": "c",
        "deletes": [{"q": {}, "limit": 0}],
        "txnNumber": 2_i64,
    };
    let reply = run(&db, &mut s, delete).await.unwrap();
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(error.get_i32("code"), Ok(72), "{reply}");
}

#[tokio::test]
async fn transaction_fields_are_checked_as_mongod_checks_them() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("rw");
    let mut s = client.start_session().await.unwrap();
    let cases = [
        (doc! {"find": "c", "txnNumber": 1_i64}, 50768),
        (
            doc! {"insert": "c", "documents": [{}], "txnNumber": -1_i64},
            72,
        ),
        (
            doc! {"count": "c", "txnNumber": 1_i64, "autocommit": false, "startTransaction": true},
            263,
        ),
        (
            doc! {"insert": "c", "documents": [{}], "txnNumber": 2_i64, "autocommit": false},
            251,
        ),
    ];
    for (cmd, code) in cases {
        let err = run(&db, &mut s, cmd.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{cmd}: {err}");
    }
    // Without a session, on a raw connection (a driver always sends one).
    let mut raw = server.raw().await;
    let reply = raw
        .command(
            1,
            &doc! {"insert": "c", "documents": [{}], "txnNumber": 1_i64, "$db": "rw"},
        )
        .await;
    assert_eq!(
        reply.document.get_i32("code"),
        Ok(72),
        "{:?}",
        reply.document
    );

    let standalone = TestServer::start().await;
    let client = standalone.client().await;
    let db = client.database("rw");
    let mut s = client.start_session().await.unwrap();
    let cmd = doc! {"insert": "c", "documents": [{}], "txnNumber": 1_i64};
    let err = run(&db, &mut s, cmd).await.unwrap_err();
    assert_eq!(error_code(&err), Some(20), "{err}");
}

#[tokio::test]
async fn a_retry_after_a_restart_returns_the_original_reply() {
    let server = replica_set().await;
    let lsid = doc! {"id": Uuid::new()};
    let insert = doc! {
        "insert": "c",
        "documents": [{"_id": 1}],
        "lsid": lsid.clone(),
        "txnNumber": 7_i64,
        "$db": "rw",
    };
    let fam = doc! {
        "findAndModify": "c",
        "query": {"_id": 1},
        "update": {"$set": {"seen": true}},
        "lsid": {"id": Uuid::new()},
        "txnNumber": 1_i64,
        "$db": "rw",
    };
    let mut raw = server.raw().await;
    let first = raw.command(1, &insert).await.document;
    assert_eq!(first.get_i32("n"), Ok(1), "{first}");
    let first_fam = raw.command(2, &fam).await.document;
    assert_eq!(first_fam.get_document("value").unwrap(), &doc! {"_id": 1});

    let server = server.restart().await;
    let mut raw = server.raw().await;
    let retry = raw.command(3, &insert).await.document;
    assert_eq!(retry.get_i32("n"), Ok(1), "{retry}");
    assert!(!retry.contains_key("writeErrors"), "{retry}");
    let retry_fam = raw.command(4, &fam).await.document;
    assert_eq!(
        retry_fam.get("value"),
        first_fam.get("value"),
        "{retry_fam}"
    );

    // The session's record is a document of config.transactions, as on mongod.
    let client = server.client().await;
    let record = client
        .database("config")
        .collection::<Document>("transactions")
        .find_one(doc! {"_id.id": lsid.get("id").unwrap().clone()})
        .await
        .unwrap()
        .expect("a record of the session");
    assert_eq!(record.get_i64("txnNum"), Ok(7));
    assert!(record.get_datetime("lastWriteDate").is_ok());
}

#[tokio::test]
async fn an_expired_sessions_record_is_removed_with_it() {
    let server = replica_set().await;
    server
        .shared()
        .sessions
        .set_reap_interval(std::time::Duration::from_millis(20));
    let client = server.client().await;
    let db = client.database("rw");
    let mut s = client.start_session().await.unwrap();
    let cmd = doc! {"insert": "c", "documents": [{"v": 1}], "txnNumber": 1_i64};
    run(&db, &mut s, cmd).await.unwrap();
    let records = client
        .database("config")
        .collection::<Document>("transactions");
    let own = doc! {"_id.id": s.id().get("id").unwrap().clone()};
    assert_eq!(records.count_documents(own.clone()).await.unwrap(), 1);
    // Idle for longer than logicalSessionTimeoutMinutes and the record's lifetime (30 each);
    // every session of this client expires, and its record with it.
    server
        .clock
        .advance(std::time::Duration::from_secs(31 * 60));
    let start = std::time::Instant::now();
    while server
        .shared()
        .engine
        .read()
        .unwrap()
        .collection("config", "transactions")
        .is_some()
        && count(&client.database("config"), "transactions", doc! {}).await > 0
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "the expired session's record was never removed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `failCommand` with `closeConnection` closes the connection before the command runs, as
/// mongod does (the fail point is evaluated before the command is invoked), so nothing was
/// written. With retryable writes (the driver's default) the driver sends the same `txnNumber`
/// again on a new connection and the insert applies once; without them the driver reports the
/// network error and the document is not there.
#[tokio::test]
async fn an_insert_whose_connection_closed_applies_once_when_retried_and_never_when_not() {
    let server = replica_set().await;
    for retry_writes in [None, Some(false)] {
        let mut options = mongodb::options::ClientOptions::parse(server.replset_uri("rs0"))
            .await
            .unwrap();
        options.server_selection_timeout = Some(std::time::Duration::from_secs(5));
        options.retry_writes = retry_writes;
        let client = mongodb::Client::with_options(options).unwrap();
        let coll = client
            .database("rw")
            .collection::<Document>(&format!("closed_{retry_writes:?}"));
        let configure = |mode: Bson| {
            let admin = client.database("admin");
            async move {
                let reply = admin
                    .run_command(doc! {
                        "configureFailPoint": "failCommand",
                        "mode": mode,
                        "data": {"failCommands": ["insert"], "closeConnection": true},
                    })
                    .await
                    .unwrap();
                reply.get_i32("count").unwrap()
            }
        };
        let before = configure(doc! {"times": 1}.into()).await;
        let inserted = coll.insert_one(doc! {"_id": 1, "v": "once"}).await;
        let fired = configure("off".into()).await - before;
        assert_eq!(
            fired, 1,
            "{retry_writes:?}: the first attempt's connection was closed"
        );
        match retry_writes {
            None => {
                assert_eq!(inserted.unwrap().inserted_id, Bson::Int32(1));
                let found: Vec<Document> =
                    futures::TryStreamExt::try_collect(coll.find(doc! {}).await.unwrap())
                        .await
                        .unwrap();
                assert_eq!(found, vec![doc! {"_id": 1, "v": "once"}]);
            }
            _ => {
                let err = inserted.unwrap_err();
                assert!(
                    matches!(err.kind.as_ref(), mongodb::error::ErrorKind::Io(_)),
                    "a network error, not a server reply: {err}"
                );
                assert_eq!(count(&client.database("rw"), coll.name(), doc! {}).await, 0);
                // The connection closed before the insert ran: sending it again inserts it.
                coll.insert_one(doc! {"_id": 1, "v": "once"}).await.unwrap();
                assert_eq!(count(&client.database("rw"), coll.name(), doc! {}).await, 1);
            }
        }
    }
}
