//! Fail points through the Rust driver, as drivers' test suites and users' retry tests use
//! them: `configureFailPoint` with mongod's `failCommand`, each mode and each data field, and
//! `waitForFailPoint`.

use crate::common;

use bson::{doc, Document};
use common::{error_code, TestServer};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::{Client, Collection};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn configure(client: &Client, command: Document) -> mongodb::error::Result<Document> {
    let mut body = doc! {"configureFailPoint": "failCommand"};
    body.extend(command);
    client.database("admin").run_command(body).await
}

async fn fail_point(client: &Client, mode: bson::Bson, data: Document) -> i64 {
    let reply = configure(client, doc! {"mode": mode, "data": data})
        .await
        .unwrap();
    reply.get_i32("count").map(i64::from).unwrap()
}

async fn off(client: &Client) {
    configure(client, doc! {"mode": "off"}).await.unwrap();
}

/// A client that reports errors instead of retrying them.
async fn no_retry(server: &TestServer) -> Client {
    server
        .client_with(|o| {
            o.retry_reads = Some(false);
            o.retry_writes = Some(false);
        })
        .await
}

fn coll(client: &Client) -> Collection<Document> {
    client.database("db").collection("c")
}

/// Runs `find_one` `n` times and says which failed (with their codes; `None` for success).
async fn finds(client: &Client, n: usize) -> Vec<Option<i32>> {
    let mut codes = Vec::new();
    for _ in 0..n {
        codes.push(match coll(client).find_one(doc! {}).await {
            Ok(_) => None,
            Err(e) => Some(error_code(&e).unwrap_or(-1)),
        });
    }
    codes
}

#[tokio::test]
async fn configure_answers_the_count_of_times_it_fired() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    let data = doc! {"failCommands": ["find"], "errorCode": 2};
    assert_eq!(
        fail_point(&client, "alwaysOn".into(), data.clone()).await,
        0
    );
    assert_eq!(finds(&client, 3).await, vec![Some(2); 3]);
    // The count is never reset: turning the fail point off or on again reports it.
    assert_eq!(fail_point(&client, "off".into(), data.clone()).await, 3);
    assert_eq!(finds(&client, 1).await, vec![None]);
    assert_eq!(fail_point(&client, "alwaysOn".into(), data).await, 3);
    off(&client).await;
}

#[tokio::test]
async fn configure_is_refused_as_mongod_refuses_it() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let admin = client.database("admin");
    for (command, code, message) in [
        (
            doc! {"configureFailPoint": "noSuchFailPoint", "mode": "alwaysOn"},
            266,
            "noSuchFailPoint not found",
        ),
        (
            doc! {"configureFailPoint": "failCommand"},
            20,
            "When setting a failpoint, you must supply a 'mode'",
        ),
        (
            doc! {"configureFailPoint": "failCommand", "mode": "sometimes"},
            2,
            "unknown mode: sometimes",
        ),
        (
            doc! {"configureFailPoint": "failCommand", "mode": {"times": -1}},
            2,
            "'times' option to 'mode' must be positive",
        ),
        (
            doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": 1},
            14,
            "the 'data' option must be a JSON object",
        ),
        (
            doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn",
            "data": {"blockConnection": true}},
            72,
            "must specify 'blockTimeMS' when 'blockConnection' is true",
        ),
    ] {
        let err = admin.run_command(command.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{command}: {err}");
        assert!(err.to_string().contains(message), "{command}: {err}");
    }
    // A data field mayfly does not implement is refused, never ignored.
    let err = configure(
        &client,
        doc! {"mode": "alwaysOn", "data": {"errorExtraInfo": {}}},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
    // Only against admin, and only with test commands enabled.
    let err = client
        .database("db")
        .run_command(doc! {"configureFailPoint": "failCommand", "mode": "off"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(13), "{err}");
    let plain = TestServer::start_with(|c| c.enable_test_commands = false).await;
    let err = configure(&plain.client().await, doc! {"mode": "off"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(59), "{err}");
}

#[tokio::test]
async fn each_mode_fails_the_commands_mongod_would() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    let data = doc! {"failCommands": ["find"], "errorCode": 91};
    let f = Some(91);
    for (mode, expected) in [
        (bson::Bson::from("alwaysOn"), vec![f, f, f]),
        (doc! {"times": 2}.into(), vec![f, f, None, None]),
        (doc! {"skip": 2}.into(), vec![None, None, f, f, f]),
        (doc! {"activationProbability": 1.0}.into(), vec![f; 5]),
        (doc! {"activationProbability": 0.0}.into(), vec![None; 5]),
        ("off".into(), vec![None, None]),
    ] {
        fail_point(&client, mode.clone(), data.clone()).await;
        assert_eq!(finds(&client, expected.len()).await, expected, "{mode}");
    }
    off(&client).await;
}

#[tokio::test]
async fn only_the_named_commands_fail_and_configure_never_does() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    coll(&client).insert_one(doc! {"_id": 1}).await.unwrap();
    fail_point(
        &client,
        "alwaysOn".into(),
        doc! {"failCommands": ["count", "configureFailPoint"], "errorCode": 2},
    )
    .await;
    let err = coll(&client).estimated_document_count().await.unwrap_err();
    assert_eq!(error_code(&err), Some(2));
    assert_eq!(finds(&client, 1).await, vec![None]);
    // `failAllCommands` fails everything but configureFailPoint itself (narrowed to one
    // application, whose client connected before, so that the driver's monitoring of the
    // others goes on).
    let victim = server
        .client_with(|o| o.app_name = Some("victim".into()))
        .await;
    victim
        .database("db")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    fail_point(
        &client,
        "alwaysOn".into(),
        doc! {"failAllCommands": true, "errorCode": 8, "appName": "victim"},
    )
    .await;
    let err = victim
        .database("db")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(8));
    let reply = configure(&victim, doc! {"mode": "off"}).await.unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    assert_eq!(finds(&victim, 1).await, vec![None]);
}

#[tokio::test]
async fn an_injected_error_has_mongod_shape_and_the_given_labels() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    fail_point(
        &client,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["ping"], "errorCode": 189},
    )
    .await;
    let err = client
        .database("db")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap_err();
    let ErrorKind::Command(command) = err.kind.as_ref() else {
        panic!("{err}");
    };
    assert_eq!(
        (
            command.code,
            command.code_name.as_str(),
            command.message.as_str()
        ),
        (
            189,
            "PrimarySteppedDown",
            "Failing command via 'failCommand' failpoint"
        )
    );
    assert!(err.labels().is_empty(), "a standalone adds no labels");
    fail_point(
        &client,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["insert"], "errorCode": 112,
        "errorLabels": ["TransientTransactionError"]},
    )
    .await;
    let err = coll(&client).insert_one(doc! {"a": 1}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(112));
    assert!(err.contains_label("TransientTransactionError"), "{err}");
    assert_eq!(
        coll(&client).count_documents(doc! {}).await.unwrap(),
        0,
        "a failed command does not run"
    );
}

#[tokio::test]
async fn close_connection_closes_without_a_reply() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    fail_point(
        &client,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["find"], "closeConnection": true},
    )
    .await;
    let err = coll(&client).find_one(doc! {}).await.unwrap_err();
    assert!(matches!(err.kind.as_ref(), ErrorKind::Io(_)), "{err}");
    assert_eq!(finds(&client, 1).await, vec![None], "the client reconnects");
    // On the wire: no reply at all, then the end of the stream.
    fail_point(
        &client,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["find"], "closeConnection": true},
    )
    .await;
    let mut raw = server.raw().await;
    let find =
        mayfly::wire::client::op_msg(1, &doc! {"find": "c", "$db": "db"}, &Default::default())
            .unwrap();
    raw.send(&find).await;
    assert!(raw.read().await.is_none(), "no reply");
    assert!(raw.is_closed().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_connection_delays_the_reply_without_holding_a_worker() {
    let server = TestServer::start().await;
    let client = server.client().await;
    coll(&client).insert_one(doc! {"_id": 1}).await.unwrap();
    let block = Duration::from_millis(1500);
    let before = fail_point(
        &client,
        "alwaysOn".into(),
        doc! {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 1500},
    )
    .await;
    // More blocked commands than the runtime has workers.
    let finished = Arc::new(AtomicUsize::new(0));
    let mut blocked = Vec::new();
    for _ in 0..8 {
        let (client, finished) = (client.clone(), Arc::clone(&finished));
        blocked.push(tokio::spawn(async move {
            let start = Instant::now();
            let found = coll(&client).find_one(doc! {}).await.unwrap();
            finished.fetch_add(1, Ordering::SeqCst);
            (found, start.elapsed())
        }));
    }
    let admin = client.database("admin");
    admin
        .run_command(
            doc! {"waitForFailPoint": "failCommand", "timesEntered": before + 8,
            "maxTimeMS": 10_000},
        )
        .await
        .unwrap();
    // All eight are waiting, and another command is still served at once.
    admin.run_command(doc! {"ping": 1}).await.unwrap();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        0,
        "a blocked find replied early"
    );
    for handle in blocked {
        let (found, waited) = handle.await.unwrap();
        assert_eq!(
            found,
            Some(doc! {"_id": 1}),
            "the command runs after the wait"
        );
        assert!(waited >= block, "replied after {waited:?}");
    }
    off(&client).await;
}

#[tokio::test]
async fn block_connection_with_an_error_code_waits_then_fails() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    fail_point(
        &client,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 200,
        "errorCode": 2},
    )
    .await;
    let start = Instant::now();
    assert_eq!(finds(&client, 1).await, vec![Some(2)]);
    assert!(start.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn write_concern_error_is_added_to_a_write_that_happened() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    fail_point(
        &client,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["insert"],
        "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"},
        "errorLabels": ["RetryableWriteError"]},
    )
    .await;
    let err = coll(&client).insert_one(doc! {"_id": 1}).await.unwrap_err();
    let ErrorKind::Write(WriteFailure::WriteConcernError(wce)) = err.kind.as_ref() else {
        panic!("{err}");
    };
    assert_eq!(wce.code, 91);
    assert_eq!(wce.message, "Replication is being shut down");
    assert!(err.contains_label("RetryableWriteError"), "{err}");
    assert_eq!(coll(&client).count_documents(doc! {}).await.unwrap(), 1);
    // Once: the next insert has no write concern error.
    coll(&client).insert_one(doc! {"_id": 2}).await.unwrap();
    // A read takes no write concern: never given one.
    fail_point(
        &client,
        "alwaysOn".into(),
        doc! {"failCommands": ["find"], "writeConcernError": {"code": 64, "errmsg": "x"}},
    )
    .await;
    assert_eq!(finds(&client, 1).await, vec![None]);
    off(&client).await;
}

#[tokio::test]
async fn app_name_and_namespace_choose_the_clients_and_collections() {
    let server = TestServer::start().await;
    let chosen = server
        .client_with(|o| {
            o.app_name = Some("chosen".into());
            o.retry_reads = Some(false);
        })
        .await;
    let other = server
        .client_with(|o| {
            o.app_name = Some("other".into());
            o.retry_reads = Some(false);
        })
        .await;
    fail_point(
        &chosen,
        "alwaysOn".into(),
        doc! {"failCommands": ["find"], "errorCode": 2, "appName": "chosen",
        "namespace": "db.c"},
    )
    .await;
    assert_eq!(finds(&chosen, 1).await, vec![Some(2)]);
    assert_eq!(finds(&other, 1).await, vec![None]);
    let elsewhere = chosen
        .database("db")
        .collection::<Document>("d")
        .find_one(doc! {})
        .await;
    assert!(elsewhere.is_ok(), "another namespace: {elsewhere:?}");
    off(&chosen).await;
}

#[tokio::test]
async fn the_handshake_of_a_chosen_application_can_be_failed() {
    let server = TestServer::start().await;
    let admin = server.client().await;
    fail_point(
        &admin,
        "alwaysOn".into(),
        doc! {"failCommands": ["hello", "isMaster"], "errorCode": 91, "appName": "refused"},
    )
    .await;
    let refused = server
        .client_with(|o| {
            o.app_name = Some("refused".into());
            o.server_selection_timeout = Some(Duration::from_millis(500));
        })
        .await;
    let err = refused
        .database("db")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind.as_ref(), ErrorKind::ServerSelection { .. }),
        "{err}"
    );
    // Other clients connect as usual.
    admin
        .database("db")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    off(&admin).await;
}

#[tokio::test]
async fn wait_for_fail_point_waits_for_the_hits() {
    let server = TestServer::start().await;
    let client = no_retry(&server).await;
    let admin = client.database("admin");
    let before = fail_point(
        &client,
        "alwaysOn".into(),
        doc! {"failCommands": ["find"], "errorCode": 2},
    )
    .await;
    let finder = client.clone();
    let hits = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        finds(&finder, 2).await
    });
    admin
        .run_command(
            doc! {"waitForFailPoint": "failCommand", "timesEntered": before + 2,
            "maxTimeMS": 10_000},
        )
        .await
        .unwrap();
    assert_eq!(hits.await.unwrap(), vec![Some(2), Some(2)]);
    for (command, code) in [
        // Never reached in time.
        (
            doc! {"waitForFailPoint": "failCommand", "timesEntered": before + 100,
            "maxTimeMS": 50},
            50,
        ),
        (
            doc! {"waitForFailPoint": "failCommand", "timesEntered": 1},
            9,
        ),
        (
            doc! {"waitForFailPoint": "other", "timesEntered": 1, "maxTimeMS": 50},
            266,
        ),
        (
            doc! {"waitForFailPoint": "failCommand", "maxTimeMS": 50},
            40414,
        ),
    ] {
        let err = admin.run_command(command.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{command}: {err}");
    }
    off(&client).await;
}

#[tokio::test]
async fn a_retryable_read_succeeds_on_the_retry() {
    let server = TestServer::start().await;
    let client = server.client().await; // retryReads is on by default
    coll(&client).insert_one(doc! {"_id": 1}).await.unwrap();
    for data in [
        doc! {"failCommands": ["find"], "errorCode": 91},
        doc! {"failCommands": ["find"], "errorCode": 189},
        doc! {"failCommands": ["find"], "closeConnection": true},
    ] {
        let before = fail_point(&client, doc! {"times": 1}.into(), data.clone()).await;
        let found = coll(&client).find_one(doc! {}).await;
        assert_eq!(found.unwrap(), Some(doc! {"_id": 1}), "{data}");
        // The first attempt did fail.
        let after = fail_point(&client, "off".into(), doc! {}).await;
        assert_eq!(after, before + 1, "{data}");
    }
}
