//! The opcodes MongoDB 6.0 removed, opcodes no server serves, and the legacy probes old drivers
//! send, answered as mongod 7.0 answers them (its `ServiceEntryPointCommon` op runners):
//! OP_QUERY outside `$cmd` and OP_GET_MORE get an error OP_REPLY; OP_INSERT, OP_UPDATE,
//! OP_DELETE and OP_KILL_CURSORS close the connection; unknown opcodes are ignored; all the
//! removed ones are counted in `opcounters.deprecated`. `getLastError` fails with 5739000,
//! `getnonce` does not exist, and neither is logged as a failed command.

mod common;

use bson::{doc, Bson, Document};
use common::logs::captured_logs;
use common::{error_code, TestServer};
use mayfly::wire::client::{self, Reply};
use mayfly::wire::Compressor;

const REMOVAL_DOC: &str = "The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal";

/// OP_GET_MORE: `int32 0, cstring ns, int32 numberToReturn, int64 cursorID`.
fn get_more_payload() -> Vec<u8> {
    let mut p = 0i32.to_le_bytes().to_vec();
    p.extend_from_slice(b"test.c\0");
    p.extend_from_slice(&2i32.to_le_bytes());
    p.extend_from_slice(&12345i64.to_le_bytes());
    p
}

/// OP_UPDATE: `int32 0, cstring ns, int32 flags, document selector, document update`.
fn update_payload() -> Vec<u8> {
    let mut p = 0i32.to_le_bytes().to_vec();
    p.extend_from_slice(b"test.c\0");
    p.extend_from_slice(&0i32.to_le_bytes());
    doc! {"a": 1}.to_writer(&mut p).unwrap();
    doc! {"$set": {"b": 2}}.to_writer(&mut p).unwrap();
    p
}

/// OP_DELETE: `int32 0, cstring ns, int32 flags, document selector`.
fn delete_payload() -> Vec<u8> {
    let mut p = 0i32.to_le_bytes().to_vec();
    p.extend_from_slice(b"test.c\0");
    p.extend_from_slice(&0i32.to_le_bytes());
    doc! {"a": 1}.to_writer(&mut p).unwrap();
    p
}

/// OP_KILL_CURSORS: `int32 0, int32 numberOfCursorIDs, int64*`.
fn kill_cursors_payload() -> Vec<u8> {
    let mut p = 0i32.to_le_bytes().to_vec();
    p.extend_from_slice(&1i32.to_le_bytes());
    p.extend_from_slice(&12345i64.to_le_bytes());
    p
}

/// `hello` over OP_MSG on the same socket still answers: the request id proves the reply is
/// hello's, not a late answer to what came before.
async fn hello_answers(conn: &mut common::RawConnection, request_id: i32) -> Document {
    let reply = conn
        .command(request_id, &doc! {"hello": 1, "$db": "admin"})
        .await;
    assert_eq!(reply.header.response_to, request_id);
    assert_eq!(reply.document.get("ok"), Some(&Bson::Double(1.0)));
    reply.document
}

fn assert_unsupported_read(reply: &Reply, op: &str) {
    assert_eq!(reply.op_code, 1, "answered with OP_REPLY");
    assert_eq!(reply.response_flags, 2, "QueryFailure set");
    assert_eq!(
        reply.document,
        doc! {
            "$err": format!("{op} is no longer supported. {REMOVAL_DOC}"),
            "code": 5739101,
            "ok": 0.0,
        }
    );
}

async fn deprecated_counters(server: &TestServer) -> Option<Document> {
    let status = server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    status
        .get_document("opcounters")
        .unwrap()
        .get_document("deprecated")
        .ok()
        .cloned()
}

#[tokio::test]
async fn op_get_more_gets_an_error_reply_and_the_connection_stays_open() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    for request_id in [10, 11] {
        conn.send(&client::raw_message(request_id, 2005, &get_more_payload()))
            .await;
        let reply = conn.read().await.expect("a reply");
        assert_eq!(reply.header.response_to, request_id);
        assert_unsupported_read(&reply, "OP_GET_MORE");
    }
    hello_answers(&mut conn, 12).await;
}

#[tokio::test]
async fn op_query_outside_cmd_gets_the_same_error_reply() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.send(&client::op_query(3, "test.c", &doc! {"a": 1}).unwrap())
        .await;
    assert_unsupported_read(&conn.read().await.expect("a reply"), "OP_QUERY");
    hello_answers(&mut conn, 4).await;
}

#[tokio::test]
async fn removed_writes_and_kill_cursors_close_the_connection_and_the_server_stays_up() {
    let server = TestServer::start().await;
    let insert = client::op_insert(1, "test.c", &[doc! {"a": 1}, doc! {"a": 2}]).unwrap();
    let table: [(&str, Vec<u8>); 4] = [
        ("OP_INSERT", insert),
        ("OP_UPDATE", client::raw_message(1, 2001, &update_payload())),
        ("OP_DELETE", client::raw_message(1, 2006, &delete_payload())),
        (
            "OP_KILL_CURSORS",
            client::raw_message(1, 2007, &kill_cursors_payload()),
        ),
    ];
    for (op, bytes) in table {
        let mut conn = server.raw().await;
        hello_answers(&mut conn, 1).await;
        conn.send(&bytes).await;
        assert!(conn.is_closed().await, "{op} closes the connection");
        let mut fresh = server.raw().await;
        hello_answers(&mut fresh, 2).await;
    }
    // Nothing was written.
    let count = server
        .client()
        .await
        .database("test")
        .collection::<Document>("c")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(count, 0);
}

#[tokio::test]
async fn unknown_opcodes_get_no_reply_and_the_connection_stays_open() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    // OP_GET_BY_OID, OP_COMMAND, OP_COMMANDREPLY, OP_REPLY sent as a request, unassigned ones.
    for (i, op_code) in [2003, 2010, 2011, 1, 0, 9999, -5].into_iter().enumerate() {
        let request_id = 100 + i as i32;
        conn.send(&client::raw_message(request_id, op_code, &[0xab; 12]))
            .await;
        hello_answers(&mut conn, request_id + 1000).await;
    }
    assert_eq!(deprecated_counters(&server).await, None, "not counted");
}

#[tokio::test]
async fn removed_opcodes_are_counted_in_opcounters_deprecated() {
    let server = TestServer::start().await;
    assert_eq!(
        deprecated_counters(&server).await,
        None,
        "absent until used"
    );
    let mut conn = server.raw().await;
    conn.send(&client::raw_message(1, 2005, &get_more_payload()))
        .await;
    conn.read().await.expect("a reply");
    conn.send(&client::op_query(2, "test.c", &doc! {}).unwrap())
        .await;
    conn.read().await.expect("a reply");
    let closing = [
        client::op_insert(3, "test.c", &[doc! {"a": 1}, doc! {"a": 2}, doc! {"a": 3}]).unwrap(),
        client::raw_message(4, 2001, &update_payload()),
        client::raw_message(5, 2006, &delete_payload()),
        client::raw_message(6, 2007, &kill_cursors_payload()),
        // An OP_INSERT without documents fails before mongod counts it.
        client::op_insert(7, "test.c", &[]).unwrap(),
    ];
    for bytes in closing {
        let mut conn = server.raw().await;
        conn.send(&bytes).await;
        assert!(conn.is_closed().await);
    }
    assert_eq!(
        deprecated_counters(&server).await,
        Some(doc! {
            "total": 8i64,
            "insert": 3i64,
            "query": 1i64,
            "update": 1i64,
            "delete": 1i64,
            "getmore": 1i64,
            "killcursors": 1i64,
        })
    );
}

#[tokio::test]
async fn a_compressed_op_get_more_is_answered_compressed() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    for (i, compressor) in Compressor::ALL.into_iter().enumerate() {
        let request_id = 5 + i as i32;
        let bytes =
            client::raw_compressed(request_id, 2005, &get_more_payload(), compressor).unwrap();
        conn.send(&bytes).await;
        let reply = conn.read().await.expect("a reply");
        assert!(reply.compressed, "{}", compressor.name());
        assert_eq!(reply.header.response_to, request_id);
        assert_unsupported_read(&reply, "OP_GET_MORE");
    }
    hello_answers(&mut conn, 20).await;
}

#[tokio::test]
async fn get_last_error_fails_with_5739000_and_getnonce_does_not_exist() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let table: [(&str, i32, &str, &str); 3] = [
        (
            "getLastError",
            5739000,
            "Location5739000",
            "getLastError command is not supported",
        ),
        (
            "getlasterror",
            5739000,
            "Location5739000",
            "getLastError command is not supported",
        ),
        (
            "getnonce",
            59,
            "CommandNotFound",
            "no such command: 'getnonce'",
        ),
    ];
    for (name, code, code_name, message) in table {
        for db in ["admin", "test"] {
            let err = client
                .database(db)
                .run_command(doc! {name: 1})
                .await
                .unwrap_err();
            assert_eq!(error_code(&err), Some(code), "{name}");
            let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
                panic!("{err}")
            };
            assert_eq!(
                (c.code_name.as_str(), c.message.as_str()),
                (code_name, message)
            );
        }
    }
    // Over OP_QUERY (the C# driver's fallback probe) it is not an allowed command: 352.
    let mut conn = server.raw().await;
    conn.send(&client::op_query(1, "admin.$cmd", &doc! {"getlasterror": 1}).unwrap())
        .await;
    let reply = conn.read().await.expect("a reply");
    assert_eq!(reply.op_code, 1);
    assert_eq!(reply.document.get_i32("code"), Ok(352));
    assert_eq!(
        reply.document.get_str("errmsg"),
        Ok(format!("Unsupported OP_QUERY command: getlasterror. {REMOVAL_DOC}").as_str())
    );
}

#[tokio::test]
async fn get_last_error_needs_no_authentication() {
    let server = TestServer::start_with(|c| c.auth = true).await;
    let mut conn = server.raw().await;
    let reply = conn
        .command(1, &doc! {"getLastError": 1, "$db": "admin"})
        .await;
    assert_eq!(reply.document.get_i32("code"), Ok(5739000));
}

#[tokio::test]
async fn probes_are_not_logged_as_failed_commands_and_deprecations_warn_once() {
    let logs = captured_logs();
    let server = TestServer::start().await;
    // Log lines name the connection id, which each test's server counts from 1: this test
    // takes an id no other test in this binary reaches.
    let (mut conn, id) = loop {
        let mut conn = server.raw().await;
        let id = hello_answers(&mut conn, 1)
            .await
            .get_i32("connectionId")
            .unwrap();
        if id > 100 {
            break (conn, id);
        }
    };
    for (i, name) in [
        "getLastError",
        "getlasterror",
        "getnonce",
        // mongosh's start-up probes: 59 off Atlas, and 72 for a parameter that does not exist.
        "atlasVersion",
        "getParameter",
        "legacyProbeControl",
    ]
    .into_iter()
    .enumerate()
    {
        let reply = conn
            .command(10 + i as i32, &doc! {name: 1, "$db": "admin"})
            .await;
        assert_eq!(reply.document.get("ok"), Some(&Bson::Double(0.0)));
    }
    for request_id in [20, 21] {
        conn.send(&client::raw_message(request_id, 2005, &get_more_payload()))
            .await;
        conn.read().await.expect("a reply");
    }
    hello_answers(&mut conn, 30).await;

    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let this_conn: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!("conn{{id={id}}}")))
        .collect();
    let failed: Vec<&&str> = this_conn
        .iter()
        .filter(|l| l.contains("command failed"))
        .collect();
    // The control command is logged, so the capture works; the probes are not.
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(failed[0].contains("legacyProbeControl"), "{failed:#?}");
    let warnings: Vec<&&str> = this_conn
        .iter()
        .filter(|l| l.contains("deprecated operation requested"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].contains("WARN") && warnings[0].contains("getmore"));
}
