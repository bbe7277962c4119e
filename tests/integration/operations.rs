//! Running operations: long commands run off the async workers (a `ping` from another client is
//! answered at once), `maxTimeMS` stops them with 50 MaxTimeMSExpired, `currentOp` lists them,
//! `killOp` stops them with 11601 Interrupted, and a client that disconnects stops its own.
//! The `sleep` test command stands in for a long scan: it holds a blocking thread and checks its
//! interrupt as a scan does.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mayfly::wire::client::{self, MsgOptions};
use mongodb::Client;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

async fn admin(client: &Client, cmd: Document) -> mongodb::error::Result<Document> {
    client.database("admin").run_command(cmd).await
}

/// The running operations whose command is `sleep`.
async fn sleeping_ops(client: &Client) -> Vec<Document> {
    common::current_ops(client, doc! {"command.sleep": {"$exists": true}}).await
}

/// Waits (up to five seconds) until `pred` holds of the sleeping operations.
async fn wait_for_sleepers(client: &Client, pred: impl Fn(&[Document]) -> bool) -> Vec<Document> {
    common::wait_for_ops(client, doc! {"command.sleep": {"$exists": true}}, pred).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_is_answered_while_other_connections_run_long_commands() {
    let server = TestServer::start().await;
    let pinger = server.client().await;
    admin(&pinger, doc! {"ping": 1}).await.unwrap();
    let busy = server.client_with(|o| o.max_pool_size = Some(8)).await;
    let sleepers: Vec<_> = (0..4)
        .map(|_| {
            let busy = busy.clone();
            tokio::spawn(async move { admin(&busy, doc! {"sleep": 1, "millis": 3000}).await })
        })
        .collect();
    wait_for_sleepers(&pinger, |ops| ops.len() == 4).await;
    for _ in 0..5 {
        let start = Instant::now();
        admin(&pinger, doc! {"ping": 1}).await.unwrap();
        let waited = start.elapsed();
        assert!(waited < Duration::from_millis(500), "ping took {waited:?}");
    }
    // Shorten the test: stop the sleepers.
    for op in sleeping_ops(&pinger).await {
        admin(
            &pinger,
            doc! {"killOp": 1, "op": op.get_i32("opid").unwrap()},
        )
        .await
        .unwrap();
    }
    for sleeper in sleepers {
        assert_eq!(
            error_code(&sleeper.await.unwrap().unwrap_err()),
            Some(11601)
        );
    }
}

#[tokio::test]
async fn max_time_ms_stops_a_long_command_with_max_time_ms_expired() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let start = Instant::now();
    let err = admin(
        &client,
        doc! {"sleep": 1, "millis": 20_000, "maxTimeMS": 100},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(50), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
    // 0 means no limit.
    admin(&client, doc! {"sleep": 1, "millis": 10, "maxTimeMS": 0})
        .await
        .unwrap();
}

#[tokio::test]
async fn invalid_max_time_ms_gets_mongods_errors_on_any_command() {
    let server = TestServer::start().await;
    let client = server.client().await;
    for (value, message) in [
        (Bson::String("abc".into()), "maxTimeMS must be a number"),
        (Bson::Int32(-1), "-1 value for maxTimeMS is out of range"),
        (
            Bson::Int64(1 << 31),
            "2147483648 value for maxTimeMS is out of range",
        ),
        (Bson::Double(1.5), "maxTimeMS has non-integral value"),
    ] {
        let err = admin(&client, doc! {"ping": 1, "maxTimeMS": value.clone()})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(2), "{value}: {err}");
        assert!(err.to_string().contains(message), "{value}: {err}");
    }
    admin(&client, doc! {"ping": 1, "maxTimeMS": 2_147_483_647_i64})
        .await
        .unwrap();
    admin(&client, doc! {"ping": 1, "maxTimeMS": 5.0})
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_op_stops_an_operation_found_through_current_op() {
    let server = TestServer::start().await;
    let sleeper = server.client().await;
    let watcher = server.client().await;
    let sleeping = {
        let sleeper = sleeper.clone();
        tokio::spawn(async move {
            sleeper
                .database("test")
                .run_command(doc! {"sleep": 1, "millis": 30_000})
                .await
        })
    };
    let ops = wait_for_sleepers(&watcher, |ops| ops.len() == 1).await;
    let op = &ops[0];
    assert_eq!(op.get_str("op").unwrap(), "command");
    assert_eq!(op.get_str("ns").unwrap(), "test.$cmd");
    assert!(op.get_bool("active").unwrap());
    assert_eq!(op.get_str("type").unwrap(), "op");
    let conn = op.get_i32("connectionId").unwrap();
    assert_eq!(op.get_str("desc").unwrap(), format!("conn{conn}"));
    assert!(op.get_str("client").unwrap().starts_with("127.0.0.1:"));
    assert!(op.get_i64("microsecs_running").unwrap() >= 0);
    assert_eq!(
        op.get_document("command").unwrap().get_i32("millis"),
        Ok(30_000)
    );

    let opid = op.get_i32("opid").unwrap();
    let reply = admin(&watcher, doc! {"killOp": 1, "op": opid})
        .await
        .unwrap();
    assert_eq!(reply.get_str("info").unwrap(), "attempting to kill op");
    let err = sleeping.await.unwrap().unwrap_err();
    assert_eq!(error_code(&err), Some(11601), "{err}");
    wait_for_sleepers(&watcher, |ops| ops.is_empty()).await;

    // Killing an op that is not running still succeeds, as in mongod.
    admin(&watcher, doc! {"killOp": 1, "op": opid})
        .await
        .unwrap();
}

#[tokio::test]
async fn current_op_and_kill_op_check_their_arguments() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let code = |r: mongodb::error::Result<Document>| error_code(&r.unwrap_err());
    assert_eq!(code(admin(&client, doc! {"killOp": 1}).await), Some(4));
    assert_eq!(
        code(admin(&client, doc! {"killOp": 1, "op": "x"}).await),
        Some(14)
    );
    assert_eq!(
        code(admin(&client, doc! {"killOp": 1, "op": 2.5}).await),
        Some(2)
    );
    assert_eq!(
        code(admin(&client, doc! {"killOp": 1, "op": 1_i64 << 40}).await),
        Some(26823)
    );
    let db = client.database("test");
    assert_eq!(code(db.run_command(doc! {"currentOp": 1}).await), Some(13));
    assert_eq!(
        code(db.run_command(doc! {"killOp": 1, "op": 1}).await),
        Some(13)
    );

    // currentOp lists itself; `$all` and `$ownOps` are accepted; filters use query operators.
    let reply = admin(
        &client,
        doc! {"currentOp": 1, "$all": true, "$ownOps": false},
    )
    .await
    .unwrap();
    let inprog = reply.get_array("inprog").unwrap();
    assert!(inprog.iter().any(|op| {
        op.as_document()
            .and_then(|d| d.get_document("command").ok())
            .is_some_and(|c| c.contains_key("currentOp"))
    }));
    let none = admin(
        &client,
        doc! {"currentOp": 1, "op": {"$in": ["insert", "remove"]}},
    )
    .await
    .unwrap();
    assert!(none.get_array("inprog").unwrap().is_empty());
    let commands = admin(&client, doc! {"listCommands": 1}).await.unwrap();
    let commands = commands.get_document("commands").unwrap();
    assert!(commands.contains_key("currentOp") && commands.contains_key("killOp"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_stops_its_operation() {
    let server = TestServer::start().await;
    let watcher = server.client().await;
    let mut raw = server.raw().await;
    let sleep = doc! {"sleep": 1, "millis": 30_000, "$db": "admin"};
    raw.send(&client::op_msg(1, &sleep, &MsgOptions::default()).unwrap())
        .await;
    wait_for_sleepers(&watcher, |ops| ops.len() == 1).await;
    drop(raw);
    let start = Instant::now();
    wait_for_sleepers(&watcher, |ops| ops.is_empty()).await;
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn requests_pipelined_behind_a_long_command_are_all_answered() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    let mut bytes = client::op_msg(
        1,
        &doc! {"sleep": 1, "millis": 200, "$db": "admin"},
        &MsgOptions::default(),
    )
    .unwrap();
    bytes.extend(
        client::op_msg(
            2,
            &doc! {"insert": "c", "documents": [{"_id": 1}], "$db": "test"},
            &MsgOptions {
                flags: mayfly::wire::MsgFlags::MORE_TO_COME,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    bytes.extend(
        client::op_msg(
            3,
            &doc! {"count": "c", "$db": "test"},
            &MsgOptions::default(),
        )
        .unwrap(),
    );
    raw.send(&bytes).await;
    let first = raw.read().await.expect("the sleep's reply");
    let second = raw.read().await.expect("the count's reply");
    assert_eq!(first.header.response_to, 1);
    assert_eq!(second.header.response_to, 3);
    assert_eq!(second.document.get_i32("n"), Ok(1), "{:?}", second.document);
}

#[tokio::test]
async fn get_more_refuses_max_time_ms_and_keeps_the_cursor() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = client.database("test").collection::<Document>("c");
    coll.insert_many((0..5).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    let db = client.database("test");
    let reply = db
        .run_command(doc! {"find": "c", "batchSize": 2, "maxTimeMS": 60_000})
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    let err = db
        .run_command(doc! {"getMore": id, "collection": "c", "maxTimeMS": 100})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
    let rest = db
        .run_command(doc! {"getMore": id, "collection": "c"})
        .await
        .unwrap();
    let batch = rest
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap();
    assert_eq!(batch.len(), 3);
    let all: Vec<Document> = coll
        .find(doc! {})
        .max_time(Duration::from_secs(10))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 5);
}

#[tokio::test]
async fn a_half_closed_client_still_gets_its_replies() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    let mut bytes = client::op_msg(
        1,
        &doc! {"insert": "c", "documents": [{"_id": 1}], "$db": "test"},
        &MsgOptions::default(),
    )
    .unwrap();
    bytes.extend(
        client::op_msg(2, &doc! {"ping": 1, "$db": "admin"}, &MsgOptions::default()).unwrap(),
    );
    raw.send(&bytes).await;
    raw.stream.shutdown().await.unwrap();
    let first = raw.read().await.expect("the insert's reply");
    assert_eq!(first.header.response_to, 1);
    let second = raw.read().await.expect("the ping's reply");
    assert_eq!(second.header.response_to, 2);
    assert!(raw.is_closed().await);
}
