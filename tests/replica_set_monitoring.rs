//! Replica-set monitoring: the awaitable `hello` drivers send once a member advertises
//! `topologyVersion`, with and without OP_MSG exhaust, through raw wire messages.

mod common;

use common::bson::doc;
use common::TestServer;
use mayfly::wire::client::{self, MsgOptions};
use std::time::{Duration, Instant};

const SET: &str = "rs0";

/// An awaitable hello that names the current topology version waits `maxAwaitTimeMS`.
#[tokio::test]
async fn an_awaitable_hello_waits_then_replies() {
    let server = TestServer::start_replset(SET).await;
    let mut raw = server.raw().await;
    let first = raw
        .command(1, &doc! {"hello": 1, "$db": "admin"})
        .await
        .document;
    let topology = first.get_document("topologyVersion").unwrap().clone();
    let started = Instant::now();
    let reply = raw
        .command(
            2,
            &doc! {"hello": 1, "topologyVersion": topology.clone(), "maxAwaitTimeMS": 300, "$db": "admin"},
        )
        .await
        .document;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(reply.get_document("topologyVersion").unwrap(), &topology);
    // Another process id (a restarted server) is answered at once.
    let started = Instant::now();
    let other = doc! {"processId": mongodb::bson::oid::ObjectId::new(), "counter": 0i64};
    raw.command(
        3,
        &doc! {"hello": 1, "topologyVersion": other, "maxAwaitTimeMS": 10_000, "$db": "admin"},
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    // Only one of the two: mongod's 31368.
    let reply = raw
        .command(4, &doc! {"hello": 1, "maxAwaitTimeMS": 10, "$db": "admin"})
        .await
        .document;
    assert_eq!(reply.get_i32("code").unwrap(), 31368);
}

/// Monitoring connections wait in hello all the time: that is not a slow command.
#[tokio::test]
async fn an_awaitable_hello_is_not_logged_as_slow() {
    let logs = common::logs::captured_logs();
    let server = TestServer::start_replset(SET).await;
    let mut raw = server.raw().await;
    let first = raw
        .command(1, &doc! {"hello": 1, "$db": "admin"})
        .await
        .document;
    let topology = first.get_document("topologyVersion").unwrap().clone();
    raw.command(
        2,
        &doc! {"hello": 1, "topologyVersion": topology, "maxAwaitTimeMS": 300, "$db": "admin"},
    )
    .await;
    raw.command(3, &doc! {"sleep": 1, "millis": 300, "$db": "admin"})
        .await;
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let slow: Vec<&str> = text.lines().filter(|l| l.contains("Slow query")).collect();
    assert!(
        slow.iter().any(|l| l.contains(r#"command={"sleep":1,"#)),
        "the sleep is slow: {slow:?}"
    );
    assert!(
        !slow.iter().any(|l| l.contains(r#"command={"hello""#)),
        "{slow:?}"
    );
}

/// With exhaustAllowed, the awaitable hello streams: each reply has moreToCome and answers
/// the previous one, and the server sends the next after maxAwaitTimeMS without a request.
#[tokio::test]
async fn an_exhaust_hello_streams_replies_with_more_to_come() {
    let server = TestServer::start_replset(SET).await;
    let mut raw = server.raw().await;
    let first = raw
        .command(1, &doc! {"hello": 1, "$db": "admin"})
        .await
        .document;
    let topology = first.get_document("topologyVersion").unwrap().clone();
    let request =
        doc! {"hello": 1, "topologyVersion": topology, "maxAwaitTimeMS": 100, "$db": "admin"};
    let bytes = client::op_msg(
        7,
        &request,
        &MsgOptions {
            flags: mayfly::wire::MsgFlags::EXHAUST_ALLOWED,
            ..Default::default()
        },
    )
    .unwrap();
    raw.send(&bytes).await;
    let mut responds_to = 7;
    for _ in 0..3 {
        let reply = raw.read().await.expect("a streamed reply");
        assert_eq!(reply.header.response_to, responds_to);
        assert_eq!(
            reply.response_flags as u32 & mayfly::wire::MsgFlags::MORE_TO_COME,
            mayfly::wire::MsgFlags::MORE_TO_COME
        );
        assert_eq!(reply.document.get_str("setName").unwrap(), SET);
        responds_to = reply.header.request_id;
    }
}

/// Without exhaustAllowed, the same request gets one reply, without moreToCome.
#[tokio::test]
async fn an_awaitable_hello_without_exhaust_gets_one_reply() {
    let server = TestServer::start_replset(SET).await;
    let mut raw = server.raw().await;
    let first = raw
        .command(1, &doc! {"hello": 1, "$db": "admin"})
        .await
        .document;
    let topology = first.get_document("topologyVersion").unwrap().clone();
    let reply = raw
        .command(
            2,
            &doc! {"hello": 1, "topologyVersion": topology, "maxAwaitTimeMS": 50, "$db": "admin"},
        )
        .await;
    assert_eq!(reply.response_flags, 0);
    let next = tokio::time::timeout(Duration::from_millis(300), raw.read()).await;
    assert!(next.is_err(), "no further reply: {next:?}");
}

#[tokio::test]
async fn shutdown_ends_a_waiting_hello() {
    let server = TestServer::start_replset(SET).await;
    let mut raw = server.raw().await;
    let first = raw
        .command(1, &doc! {"hello": 1, "$db": "admin"})
        .await
        .document;
    let topology = first.get_document("topologyVersion").unwrap().clone();
    let bytes = client::op_msg(
        2,
        &doc! {"hello": 1, "topologyVersion": topology, "maxAwaitTimeMS": 60_000, "$db": "admin"},
        &Default::default(),
    )
    .unwrap();
    raw.send(&bytes).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), server.server.shutdown())
        .await
        .expect("shutdown does not wait for maxAwaitTimeMS");
    assert!(started.elapsed() < Duration::from_secs(10));
}
