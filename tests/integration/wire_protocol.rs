//! The wire protocol as the server speaks it: OP_QUERY handshakes and their allow-list,
//! moreToCome, checksums, compression, and what closes a connection (framing errors only).

use crate::common;

use common::bson::{doc, Bson};
use common::TestServer;
use mayfly::wire::client::{self, MsgOptions};
use mayfly::wire::{Compressor, MsgFlags};

#[tokio::test]
async fn op_query_is_master_is_answered_with_op_reply() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.send(&client::op_query(11, "admin.$cmd", &doc! {"isMaster": 1, "helloOk": true}).unwrap())
        .await;
    let reply = conn.read().await.unwrap();
    assert_eq!(reply.op_code, 1, "OP_REPLY");
    assert_eq!(reply.header.response_to, 11);
    assert!(reply.document.get_bool("ismaster").unwrap());
    assert!(reply.document.get_bool("helloOk").unwrap());
}

#[tokio::test]
async fn op_query_allows_only_the_handshake_commands() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    for (i, name) in ["buildinfo", "buildInfo", "hello", "ismaster"]
        .iter()
        .enumerate()
    {
        conn.send(&client::op_query(i as i32, "test.$cmd", &doc! {*name: 1}).unwrap())
            .await;
        let reply = conn.read().await.unwrap();
        assert_eq!(reply.document.get_f64("ok").unwrap(), 1.0, "{name}");
    }
    conn.send(&client::op_query(20, "test.$cmd", &doc! {"find": "c"}).unwrap())
        .await;
    let refused = conn.read().await.unwrap();
    assert_eq!(refused.op_code, 1);
    assert_eq!(refused.document.get_i32("code").unwrap(), 352);
    assert_eq!(
        refused.document.get_str("codeName").unwrap(),
        "UnsupportedOpQueryCommand"
    );
    assert!(refused
        .document
        .get_str("errmsg")
        .unwrap()
        .starts_with("Unsupported OP_QUERY command: find."));
}

#[tokio::test]
async fn op_query_sasl_start_reaches_the_auth_command() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.send(
        &client::op_query(
            1,
            "admin.$cmd",
            &doc! {
                "saslStart": 1,
                "mechanism": "SCRAM-SHA-256",
                "payload": common::bson::Binary {
                    subtype: common::bson::spec::BinarySubtype::Generic,
                    bytes: b"n,,n=nobody,r=abcdefgh".to_vec(),
                },
            },
        )
        .unwrap(),
    )
    .await;
    let reply = conn.read().await.unwrap();
    assert_eq!(
        reply.document.get_i32("code").unwrap(),
        18,
        "AuthenticationFailed, not 352"
    );
}

#[tokio::test]
async fn op_query_rules_on_namespace_db_and_query_wrapper() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    conn.send(&client::op_query(1, "test.users", &doc! {"a": 1}).unwrap())
        .await;
    let reply = conn.read().await.unwrap();
    assert_eq!(reply.document.get_i32("code").unwrap(), 5739101);
    assert!(reply.document.get_str("$err").is_ok());
    conn.send(&client::op_query(2, "admin.$cmd", &doc! {"isMaster": 1, "$db": "admin"}).unwrap())
        .await;
    assert_eq!(
        conn.read().await.unwrap().document.get_i32("code").unwrap(),
        40621
    );
    conn.send(
        &client::op_query(
            3,
            "admin.$cmd",
            &doc! {"$query": {"isMaster": 1}, "$readPreference": {"mode": "primary"}},
        )
        .unwrap(),
    )
    .await;
    let unwrapped = conn.read().await.unwrap().document;
    assert!(unwrapped.get_bool("ismaster").unwrap());
}

#[tokio::test]
async fn op_msg_without_db_is_an_error_and_the_connection_stays_open() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    let reply = conn.command(1, &doc! {"ping": 1}).await;
    assert_eq!(reply.document.get_i32("code").unwrap(), 40571);
    let reply = conn.command(2, &doc! {"ping": 1, "$db": "admin"}).await;
    assert_eq!(reply.document.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn more_to_come_gets_no_reply() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    let quiet = MsgOptions {
        flags: MsgFlags::MORE_TO_COME,
        ..Default::default()
    };
    conn.send(&client::op_msg(1, &doc! {"ping": 1, "$db": "admin"}, &quiet).unwrap())
        .await;
    // Even an error is swallowed.
    conn.send(&client::op_msg(2, &doc! {"nope": 1, "$db": "admin"}, &quiet).unwrap())
        .await;
    let reply = conn.command(3, &doc! {"ping": 1, "$db": "admin"}).await;
    assert_eq!(
        reply.header.response_to, 3,
        "the first reply answers the first request that wants one"
    );
}

#[tokio::test]
async fn a_checksummed_request_is_verified_and_answered_without_a_checksum() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    let opts = MsgOptions {
        checksum: true,
        ..Default::default()
    };
    conn.send(&client::op_msg(1, &doc! {"ping": 1, "$db": "admin"}, &opts).unwrap())
        .await;
    let reply = conn.read().await.unwrap();
    assert_eq!(reply.document.get_f64("ok").unwrap(), 1.0);
    let mut bad = client::op_msg(2, &doc! {"ping": 1, "$db": "admin"}, &opts).unwrap();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    conn.send(&bad).await;
    assert!(
        conn.is_closed().await,
        "a bad checksum closes the connection"
    );
}

#[tokio::test]
async fn document_sequences_reach_the_command() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    // `hello` ignores unknown fields, so a sequence merged into it is harmless and proves framing.
    let opts = MsgOptions {
        sequences: vec![("documents", vec![doc! {"_id": 1}, doc! {"_id": 2}])],
        ..Default::default()
    };
    conn.send(&client::op_msg(1, &doc! {"hello": 1, "$db": "admin"}, &opts).unwrap())
        .await;
    assert_eq!(
        conn.read().await.unwrap().document.get_f64("ok").unwrap(),
        1.0
    );
}

#[tokio::test]
async fn compressed_requests_get_replies_compressed_the_same_way() {
    let server = TestServer::start().await;
    let mut conn = server.raw().await;
    for (i, c) in Compressor::ALL.into_iter().enumerate() {
        let opts = MsgOptions {
            compressor: Some(c),
            ..Default::default()
        };
        conn.send(
            &client::op_msg(i as i32, &doc! {"buildInfo": 1, "$db": "admin"}, &opts).unwrap(),
        )
        .await;
        let reply = conn.read().await.unwrap();
        assert!(reply.compressed, "{} reply compressed", c.name());
        assert_eq!(reply.document.get_str("version").unwrap(), "7.0.0");
    }
    // hello is never compressed, even when asked compressed.
    let opts = MsgOptions {
        compressor: Some(Compressor::Zlib),
        ..Default::default()
    };
    conn.send(&client::op_msg(9, &doc! {"hello": 1, "$db": "admin"}, &opts).unwrap())
        .await;
    assert!(!conn.read().await.unwrap().compressed);
}

#[tokio::test]
async fn framing_errors_close_the_connection_and_bad_bson_does_not() {
    let server = TestServer::start().await;
    // Garbage BSON inside a well-formed frame: an error reply, connection open.
    let mut conn = server.raw().await;
    let mut payload = 0u32.to_le_bytes().to_vec();
    payload.push(0);
    payload.extend_from_slice(&[12, 0, 0, 0, 0x7f, b'a', 0, 1, 2, 3, 4, 0]);
    let mut frame = ((16 + payload.len()) as i32).to_le_bytes().to_vec();
    frame.extend_from_slice(&5i32.to_le_bytes());
    frame.extend_from_slice(&0i32.to_le_bytes());
    frame.extend_from_slice(&2013i32.to_le_bytes());
    frame.extend_from_slice(&payload);
    conn.send(&frame).await;
    let reply = conn.read().await.unwrap();
    assert_eq!(reply.document.get_i32("code").unwrap(), 22, "InvalidBSON");
    assert_eq!(
        conn.command(6, &doc! {"ping": 1, "$db": "a"})
            .await
            .document
            .get_f64("ok")
            .unwrap(),
        1.0
    );

    // A length below 16, a legacy opcode: closed.
    for bad in [vec![8, 0, 0, 0, 0, 0, 0, 0], {
        let mut f = 20i32.to_le_bytes().to_vec();
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&2002i32.to_le_bytes());
        f.extend_from_slice(&[0; 4]);
        f
    }] {
        let mut conn = server.raw().await;
        conn.send(&bad).await;
        assert!(conn.is_closed().await);
    }
    // The server is still fine.
    let mut conn = server.raw().await;
    let ok = conn.command(1, &doc! {"ping": 1, "$db": "a"}).await;
    assert_eq!(ok.document.get("ok"), Some(&Bson::Double(1.0)));
}
