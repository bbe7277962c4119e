//! SCRAM authentication as clients meet it: the Rust driver with credentials (explicit
//! mechanism, negotiated through `saslSupportedMechs`, speculative in the handshake), and the
//! conversation over raw OP_MSG and OP_QUERY messages where a driver hides the detail.

mod common;

use common::auth::{add_user, ScramClient};
use common::bson::spec::BinarySubtype;
use common::bson::{doc, Binary, Bson, Document};
use common::logs::captured_logs;
use common::{RawConnection, TestServer};
use mayfly::auth::Mechanism;
use mayfly::wire::client;
use mongodb::options::{AuthMechanism, Credential};

const BOTH: &[Mechanism] = &[Mechanism::ScramSha1, Mechanism::ScramSha256];

fn bin(bytes: &[u8]) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    }
}

fn payload_of(reply: &Document) -> Vec<u8> {
    match reply.get("payload") {
        Some(Bson::Binary(b)) => b.bytes.clone(),
        other => panic!("payload is not BinData: {other:?} in {reply}"),
    }
}

fn code_of(reply: &Document) -> i32 {
    reply
        .get_i32("code")
        .unwrap_or_else(|_| panic!("no error: {reply}"))
}

async fn client_as(
    server: &TestServer,
    user: &str,
    password: &str,
    mechanism: Option<AuthMechanism>,
) -> mongodb::Client {
    let credential = Credential::builder()
        .username(user.to_owned())
        .password(password.to_owned())
        .source("admin".to_owned())
        .mechanism(mechanism)
        .build();
    server
        .client_with(|o| o.credential = Some(credential))
        .await
}

/// `authInfo.authenticatedUsers` as seen by `client`.
async fn authenticated_users(client: &mongodb::Client) -> mongodb::error::Result<Vec<Document>> {
    let reply = client
        .database("admin")
        .run_command(doc! {"connectionStatus": 1})
        .await?;
    Ok(reply
        .get_document("authInfo")
        .unwrap()
        .get_array("authenticatedUsers")
        .unwrap()
        .iter()
        .map(|u| u.as_document().unwrap().clone())
        .collect())
}

fn assert_auth_error(err: &mongodb::error::Error) {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Authentication { message, .. } => {
            assert!(message.contains("Authentication failed."), "{message}")
        }
        other => panic!("expected an authentication error, got {other:?}"),
    }
}

#[tokio::test]
async fn drivers_authenticate_with_each_mechanism_named_explicitly() {
    let server = TestServer::start().await;
    add_user(
        &server,
        "admin",
        "alice",
        "pencil",
        &[("root", "admin")],
        BOTH,
    )
    .await;
    for mechanism in [AuthMechanism::ScramSha1, AuthMechanism::ScramSha256] {
        let client = client_as(&server, "alice", "pencil", Some(mechanism.clone())).await;
        let users = authenticated_users(&client).await.unwrap();
        assert_eq!(
            users,
            vec![doc! {"user": "alice", "db": "admin"}],
            "{mechanism:?}"
        );
    }
}

#[tokio::test]
async fn drivers_negotiate_the_mechanism_through_sasl_supported_mechs() {
    let server = TestServer::start().await;
    // A driver that is not told which mechanism to use picks SCRAM-SHA-1 unless the handshake
    // lists SCRAM-SHA-256: a user with SHA-256 keys only authenticates only if it is listed.
    add_user(
        &server,
        "admin",
        "bob",
        "secret",
        &[],
        &[Mechanism::ScramSha256],
    )
    .await;
    add_user(
        &server,
        "admin",
        "old",
        "secret",
        &[],
        &[Mechanism::ScramSha1],
    )
    .await;
    add_user(&server, "admin", "both", "secret", &[], BOTH).await;
    for user in ["bob", "old", "both"] {
        let client = client_as(&server, user, "secret", None).await;
        let users = authenticated_users(&client).await.unwrap();
        assert_eq!(users, vec![doc! {"user": user, "db": "admin"}]);
    }

    let mut conn = server.raw().await;
    for (principal, expected) in [
        ("admin.both", Some(vec!["SCRAM-SHA-1", "SCRAM-SHA-256"])),
        ("admin.bob", Some(vec!["SCRAM-SHA-256"])),
        ("admin.old", Some(vec!["SCRAM-SHA-1"])),
        ("admin.nobody", None),
        ("test.both", None),
        ("admin.", None),
    ] {
        let reply = hello(&mut conn, doc! {"saslSupportedMechs": principal}).await;
        assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
        let listed = reply.get_array("saslSupportedMechs").ok().map(|a| {
            a.iter()
                .map(|m| m.as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        });
        assert_eq!(
            listed,
            expected.map(|e| e.iter().map(|s| s.to_string()).collect()),
            "{principal}"
        );
    }
    let reply = hello(&mut conn, doc! {"saslSupportedMechs": "nodot"}).await;
    assert_eq!(code_of(&reply), 2);
    assert_eq!(
        reply.get_str("errmsg").unwrap(),
        "UserName must contain a '.' separated database.user pair"
    );
}

#[tokio::test]
async fn a_wrong_password_is_an_authentication_error() {
    let server = TestServer::start().await;
    add_user(&server, "admin", "alice", "pencil", &[], BOTH).await;
    for mechanism in [
        None,
        Some(AuthMechanism::ScramSha1),
        Some(AuthMechanism::ScramSha256),
    ] {
        let client = client_as(&server, "alice", "pencils", mechanism).await;
        let err = authenticated_users(&client).await.unwrap_err();
        assert_auth_error(&err);
    }
    // On the wire: the proof is refused with 18 and nothing else.
    let mut conn = server.raw().await;
    let mut scram = ScramClient::new(Mechanism::ScramSha256, "alice", "pencils");
    let first = sasl_start(&mut conn, &scram, true).await;
    let reply = sasl_continue(&mut conn, &scram.client_final(&payload_of(&first))).await;
    assert_eq!(code_of(&reply), 18);
    assert_eq!(reply.get_str("errmsg").unwrap(), "Authentication failed.");
    assert_eq!(reply.get_str("codeName").unwrap(), "AuthenticationFailed");
    // The failed conversation is over.
    let reply = sasl_continue(&mut conn, b"").await;
    assert_eq!(code_of(&reply), 17);
    assert_eq!(
        reply.get_str("errmsg").unwrap(),
        "No SASL session state found"
    );
}

#[tokio::test]
async fn an_unknown_user_fails_at_the_first_step_like_a_wrong_password() {
    let server = TestServer::start().await;
    add_user(&server, "admin", "alice", "pencil", &[], BOTH).await;
    let client = client_as(&server, "mallory", "pencil", None).await;
    assert_auth_error(&authenticated_users(&client).await.unwrap_err());

    let mut conn = server.raw().await;
    for (user, db) in [("mallory", "admin"), ("alice", "test")] {
        let scram = ScramClient::new(Mechanism::ScramSha256, user, "pencil");
        let reply = command(
            &mut conn,
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(&scram.client_first()), "$db": db},
        )
        .await;
        assert_eq!(code_of(&reply), 18, "{user} on {db}");
        assert_eq!(reply.get_str("errmsg").unwrap(), "Authentication failed.");
    }
}

#[tokio::test]
async fn a_user_without_sha256_keys_cannot_use_sha256() {
    let server = TestServer::start().await;
    add_user(
        &server,
        "admin",
        "old",
        "secret",
        &[],
        &[Mechanism::ScramSha1],
    )
    .await;
    let client = client_as(&server, "old", "secret", Some(AuthMechanism::ScramSha256)).await;
    assert_auth_error(&authenticated_users(&client).await.unwrap_err());
    let mut conn = server.raw().await;
    let scram = ScramClient::new(Mechanism::ScramSha256, "old", "secret");
    let reply = sasl_start(&mut conn, &scram, true).await;
    assert_eq!(code_of(&reply), 18);
}

#[tokio::test]
async fn speculative_authentication_runs_the_first_step_in_hello() {
    let server = TestServer::start().await;
    add_user(
        &server,
        "admin",
        "alice",
        "pencil",
        &[("readWrite", "test")],
        BOTH,
    )
    .await;
    let mut conn = server.raw().await;
    let mut scram = ScramClient::new(Mechanism::ScramSha256, "alice", "pencil");
    let reply = hello(
        &mut conn,
        doc! {"speculativeAuthenticate": {
            "saslStart": 1,
            "mechanism": "SCRAM-SHA-256",
            "payload": bin(&scram.client_first()),
            "options": {"skipEmptyExchange": true},
            "db": "admin",
        }},
    )
    .await;
    let first = reply.get_document("speculativeAuthenticate").unwrap();
    assert_eq!(first.get_i32("conversationId").unwrap(), 1);
    assert!(!first.get_bool("done").unwrap());
    assert!(first.get("ok").is_none());
    let last = sasl_continue(&mut conn, &scram.client_final(&payload_of(first))).await;
    assert!(last.get_bool("done").unwrap(), "{last}");
    assert!(scram.verifies(&payload_of(&last)));
    assert_eq!(
        connection_status(&mut conn)
            .await
            .get_array("authenticatedUsers")
            .unwrap(),
        &vec![Bson::Document(doc! {"user": "alice", "db": "admin"})]
    );

    // Whatever fails, hello still answers, without the field.
    for spec in [
        doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(&ScramClient::new(Mechanism::ScramSha256, "nobody", "x").client_first()), "db": "admin"},
        doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(&scram.client_first())},
        doc! {"saslStart": 1, "mechanism": "PLAIN", "payload": bin(b"\0alice\0pencil"), "db": "admin"},
        doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(b"garbage"), "db": "admin"},
        doc! {"authenticate": 1, "mechanism": "MONGODB-X509", "db": "$external"},
    ] {
        let mut conn = server.raw().await;
        let reply = hello(&mut conn, doc! {"speculativeAuthenticate": spec.clone()}).await;
        assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{spec}");
        assert!(reply.get("speculativeAuthenticate").is_none(), "{spec}");
    }
}

#[tokio::test]
async fn without_skip_empty_exchange_the_empty_third_step_completes_it() {
    let server = TestServer::start().await;
    add_user(&server, "admin", "alice", "pencil", &[], BOTH).await;
    for mechanism in [Mechanism::ScramSha1, Mechanism::ScramSha256] {
        let mut conn = server.raw().await;
        let mut scram = ScramClient::new(mechanism, "alice", "pencil");
        let first = sasl_start(&mut conn, &scram, false).await;
        assert!(!first.get_bool("done").unwrap());
        let second = sasl_continue(&mut conn, &scram.client_final(&payload_of(&first))).await;
        assert!(!second.get_bool("done").unwrap(), "{second}");
        assert!(scram.verifies(&payload_of(&second)));
        let users = connection_status(&mut conn).await;
        assert!(
            users.get_array("authenticatedUsers").unwrap().is_empty(),
            "not authenticated before the last step"
        );
        let third = sasl_continue(&mut conn, b"").await;
        assert!(third.get_bool("done").unwrap(), "{third}");
        assert_eq!(third.get_i32("conversationId").unwrap(), 1);
        assert!(payload_of(&third).is_empty());
        let users = connection_status(&mut conn).await;
        assert_eq!(users.get_array("authenticatedUsers").unwrap().len(), 1);
    }
}

#[tokio::test]
async fn passwords_are_saslprepped_for_sha256() {
    let server = TestServer::start().await;
    // U+00AD (soft hyphen) maps to nothing: "I\u{AD}X" and "IX" are one password.
    add_user(
        &server,
        "admin",
        "ix",
        "I\u{AD}X",
        &[],
        &[Mechanism::ScramSha256],
    )
    .await;
    add_user(
        &server,
        "admin",
        "nine",
        "IX",
        &[],
        &[Mechanism::ScramSha256],
    )
    .await;
    for (user, password) in [("ix", "IX"), ("ix", "I\u{AD}X"), ("nine", "\u{2168}")] {
        let client = client_as(&server, user, password, Some(AuthMechanism::ScramSha256)).await;
        authenticated_users(&client)
            .await
            .unwrap_or_else(|e| panic!("{user} with {password:?}: {e}"));
    }
}

#[tokio::test]
async fn percent_encoded_keys_in_the_connection_string_authenticate() {
    let server = TestServer::start().await;
    // The Cosmos DB emulator's well-known key: base64 with '/', '+' and '='. Cosmos connection
    // strings name no database, so the driver authenticates against `admin`.
    let key =
        "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
    add_user(
        &server,
        "admin",
        "localhost",
        key,
        &[("root", "admin")],
        BOTH,
    )
    .await;
    let encoded = key
        .replace('/', "%2F")
        .replace('+', "%2B")
        .replace('=', "%3D");
    let uri = format!(
        "mongodb://localhost:{encoded}@{}/?directConnection=true&retrywrites=false&maxIdleTimeMS=120000&appName=@localhost@",
        server.addr
    );
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let users = authenticated_users(&client).await.unwrap();
    assert_eq!(users, vec![doc! {"user": "localhost", "db": "admin"}]);
}

#[tokio::test]
async fn connection_status_shows_the_user_and_its_roles() {
    let server = TestServer::start().await;
    add_user(
        &server,
        "admin",
        "alice",
        "pencil",
        &[("readWrite", "test"), ("read", "admin")],
        BOTH,
    )
    .await;
    let client = client_as(&server, "alice", "pencil", None).await;
    let reply = client
        .database("test")
        .run_command(doc! {"connectionStatus": 1, "showPrivileges": true})
        .await
        .unwrap();
    let info = reply.get_document("authInfo").unwrap();
    assert_eq!(
        info.get_array("authenticatedUsers").unwrap(),
        &vec![Bson::Document(doc! {"user": "alice", "db": "admin"})]
    );
    assert_eq!(
        info.get_array("authenticatedUserRoles").unwrap(),
        &vec![
            Bson::Document(doc! {"role": "read", "db": "admin"}),
            Bson::Document(doc! {"role": "readWrite", "db": "test"}),
        ]
    );
    assert!(info.get_array("authenticatedUserPrivileges").is_ok());
}

#[tokio::test]
async fn logout_ends_the_authentication_on_its_database() {
    let server = TestServer::start().await;
    add_user(
        &server,
        "admin",
        "alice",
        "pencil",
        &[("root", "admin")],
        BOTH,
    )
    .await;
    let mut conn = server.raw().await;
    authenticate(&mut conn, Mechanism::ScramSha256, "alice", "pencil").await;
    let reply = command(&mut conn, doc! {"logout": 1, "$db": "test"}).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    let status = connection_status(&mut conn).await;
    assert_eq!(
        status.get_array("authenticatedUsers").unwrap().len(),
        1,
        "another database"
    );
    let reply = command(&mut conn, doc! {"logout": 1, "$db": "admin"}).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    let status = connection_status(&mut conn).await;
    assert!(status.get_array("authenticatedUsers").unwrap().is_empty());
    assert!(status
        .get_array("authenticatedUserRoles")
        .unwrap()
        .is_empty());
    let reply = command(&mut conn, doc! {"logout": 1, "extra": 1, "$db": "admin"}).await;
    assert_eq!(code_of(&reply), 40415);
}

#[tokio::test]
async fn sasl_over_op_query_authenticates() {
    let server = TestServer::start().await;
    add_user(&server, "admin", "alice", "pencil", &[], BOTH).await;
    let mut conn = server.raw().await;
    let mut scram = ScramClient::new(Mechanism::ScramSha1, "alice", "pencil");
    let first = op_query(
        &mut conn,
        doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-1", "payload": bin(&scram.client_first()), "autoAuthorize": 1, "options": {"skipEmptyExchange": true}},
    )
    .await;
    assert_eq!(first.get_i32("conversationId").unwrap(), 1, "{first}");
    let last = op_query(
        &mut conn,
        doc! {"saslContinue": 1, "conversationId": 1, "payload": bin(&scram.client_final(&payload_of(&first)))},
    )
    .await;
    assert!(last.get_bool("done").unwrap(), "{last}");
    assert!(scram.verifies(&payload_of(&last)));
    let status = connection_status(&mut conn).await;
    assert_eq!(status.get_array("authenticatedUsers").unwrap().len(), 1);
}

#[tokio::test]
async fn a_new_sasl_start_replaces_the_unfinished_conversation() {
    let server = TestServer::start().await;
    add_user(&server, "admin", "alice", "pencil", &[], BOTH).await;
    add_user(&server, "admin", "bob", "secret", &[], BOTH).await;
    let mut conn = server.raw().await;
    let mut abandoned = ScramClient::new(Mechanism::ScramSha256, "alice", "pencil");
    let first = sasl_start(&mut conn, &abandoned, true).await;
    let stale_final = abandoned.client_final(&payload_of(&first));
    let mut current = ScramClient::new(Mechanism::ScramSha1, "bob", "secret");
    let first = sasl_start(&mut conn, &current, true).await;
    // The first conversation's last message answers a nonce the server no longer holds.
    let reply = sasl_continue(&mut conn, &stale_final).await;
    assert_eq!(code_of(&reply), 18, "{reply}");
    // That failure ended the second conversation too; a fresh one completes.
    let reply = sasl_continue(&mut conn, &current.client_final(&payload_of(&first))).await;
    assert_eq!(code_of(&reply), 17, "{reply}");
    authenticate(&mut conn, Mechanism::ScramSha1, "bob", "secret").await;
    let status = connection_status(&mut conn).await;
    assert_eq!(
        status.get_array("authenticatedUsers").unwrap(),
        &vec![Bson::Document(doc! {"user": "bob", "db": "admin"})]
    );
}

#[tokio::test]
async fn protocol_errors_get_mongods_codes() {
    let server = TestServer::start().await;
    add_user(&server, "admin", "alice", "pencil", &[], BOTH).await;
    add_user(&server, "admin", "bob", "pencil", &[], BOTH).await;
    add_user(&server, "test", "carol", "pencil", &[], BOTH).await;
    let mut conn = server.raw().await;
    let scram = ScramClient::new(Mechanism::ScramSha256, "alice", "pencil");
    let first = bin(&scram.client_first());
    for (cmd, code, message) in [
        (
            doc! {"saslContinue": 1, "conversationId": 1, "payload": bin(b"")},
            17,
            "No SASL session state found",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "PLAIN", "payload": bin(b"\0alice\0pencil")},
            334,
            "Received authentication for mechanism PLAIN which is not enabled",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "GSSAPI", "payload": bin(b"")},
            334,
            "Received authentication for mechanism GSSAPI which is not enabled",
        ),
        (
            doc! {"saslStart": 1, "payload": first.clone()},
            40414,
            "BSON field 'saslStart.mechanism' is missing but a required field",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256"},
            40414,
            "BSON field 'saslStart.payload' is missing but a required field",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": first.clone(), "bogus": 1},
            40415,
            "BSON field 'saslStart.bogus' is an unknown field.",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": 5},
            2,
            "Invalid SASLPayload type. Expected Base64 or BinData, got: int",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": "abc"},
            10270,
            "Failed decoding SASL payload: invalid base64",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": first.clone(), "options": {"skipEmptyExchange": 1}},
            2,
            "skipEmptyExchange must be boolean",
        ),
        (
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(b"p=tls-server-end-point,,n=alice,r=abcdefgh")},
            18,
            "Authentication failed.",
        ),
        (
            // RFC 5802 §5.1: a reserved m= attribute fails the authentication.
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(b"n,,n=alice,r=abcdefgh,m=ext")},
            18,
            "Authentication failed.",
        ),
        (
            doc! {"authenticate": 1, "mechanism": "MONGODB-X509"},
            18,
            "Authentication failed.",
        ),
        (
            doc! {"authenticate": 1, "mechanism": "MONGODB-CR", "user": "alice"},
            18,
            "Authentication failed.",
        ),
        (
            doc! {"authenticate": 1},
            40414,
            "BSON field 'authenticate.mechanism' is missing but a required field",
        ),
    ] {
        let mut cmd = cmd;
        cmd.insert("$db", "admin");
        let reply = command(&mut conn, cmd.clone()).await;
        assert_eq!(
            (code_of(&reply), reply.get_str("errmsg").unwrap()),
            (code, message),
            "{cmd}"
        );
    }

    // A wrong conversation id, then the conversation goes on.
    let scram = ScramClient::new(Mechanism::ScramSha256, "alice", "pencil");
    sasl_start(&mut conn, &scram, true).await;
    let reply = command(
        &mut conn,
        doc! {"saslContinue": 1, "conversationId": 2, "payload": bin(b""), "$db": "admin"},
    )
    .await;
    assert_eq!(
        (code_of(&reply), reply.get_str("errmsg").unwrap()),
        (17, "sasl: Mismatched conversation id")
    );

    // A base64 string payload is answered in base64.
    let mut scram2 = ScramClient::new(Mechanism::ScramSha256, "alice", "pencil");
    let reply = command(
        &mut conn,
        doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": base64(&scram2.client_first()), "$db": "admin"},
    )
    .await;
    let server_first = decode64(reply.get_str("payload").unwrap());
    let reply = command(
        &mut conn,
        doc! {"saslContinue": 1, "conversationId": 1, "payload": base64(&scram2.client_final(&server_first)), "$db": "admin"},
    )
    .await;
    assert!(
        scram2.verifies(&decode64(reply.get_str("payload").unwrap())),
        "{reply}"
    );

    // One user per connection: the same user again is fine, another one is refused.
    authenticate(&mut conn, Mechanism::ScramSha1, "alice", "pencil").await;
    for (user, db, code) in [("bob", "admin", 5626702), ("carol", "test", 5626701)] {
        let mut scram = ScramClient::new(Mechanism::ScramSha256, user, "pencil");
        let first = command(
            &mut conn,
            doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(&scram.client_first()), "options": {"skipEmptyExchange": true}, "$db": db},
        )
        .await;
        let reply = command(
            &mut conn,
            doc! {"saslContinue": 1, "conversationId": 1, "payload": bin(&scram.client_final(&payload_of(&first))), "$db": db},
        )
        .await;
        assert_eq!(code_of(&reply), code, "{user}: {reply}");
        assert!(
            reply.get_str("errmsg").unwrap().ends_with("alice@admin"),
            "{reply}"
        );
    }
    let status = connection_status(&mut conn).await;
    assert_eq!(
        status.get_array("authenticatedUsers").unwrap(),
        &vec![Bson::Document(doc! {"user": "alice", "db": "admin"})]
    );
}

#[tokio::test]
async fn failures_are_logged_with_who_and_how_but_never_the_proof() {
    let logs = captured_logs();
    let server = TestServer::start().await;
    add_user(&server, "admin", "logged", "right-pw-9Zk", &[], BOTH).await;
    let mut conn = server.raw().await;
    let mut scram = ScramClient::new(Mechanism::ScramSha256, "logged", "wrong-pw-7Qx");
    let first = sasl_start(&mut conn, &scram, true).await;
    let last = scram.client_final(&payload_of(&first));
    let reply = sasl_continue(&mut conn, &last).await;
    assert_eq!(code_of(&reply), 18);
    let proof = std::str::from_utf8(&last)
        .unwrap()
        .rsplit_once(",p=")
        .unwrap()
        .1
        .to_owned();
    authenticate(&mut conn, Mechanism::ScramSha1, "logged", "right-pw-9Zk").await;

    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let failure = text
        .lines()
        .find(|l| l.contains("Authentication failed") && l.contains("principalName=\"logged\""))
        .unwrap_or_else(|| panic!("no failure logged:\n{text}"));
    assert!(failure.contains(" WARN "), "a warning: {failure}");
    for part in [
        "log_id=20249",
        "authenticationDatabase=\"admin\"",
        "mechanism=\"SCRAM-SHA-256\"",
        "speculative=false",
        "remote=127.0.0.1:",
        "AuthenticationFailed: SCRAM authentication failed, storedKey mismatch",
    ] {
        assert!(failure.contains(part), "{part} missing from {failure}");
    }
    let success = text
        .lines()
        .find(|l| l.contains("Authentication succeeded") && l.contains("principalName=\"logged\""))
        .unwrap_or_else(|| panic!("no success logged:\n{text}"));
    assert!(success.contains("mechanism=\"SCRAM-SHA-1\""), "{success}");
    assert!(success.contains("log_id=20250"), "{success}");
    assert!(!text.contains(&proof), "the proof is never logged");
    assert!(
        !text.contains("wrong-pw-7Qx") && !text.contains("right-pw-9Zk"),
        "nor a password"
    );
}

/// Past `--auth-failures-before-delay` failures from one address, each further failure's reply
/// is delayed; `serverStatus` counts them (`security.authentication`) and one warning says the
/// address is backed off. The right password still authenticates at once: only failures wait.
#[tokio::test]
async fn repeated_failures_from_one_address_are_delayed_and_the_right_password_still_works() {
    let logs = captured_logs();
    let server = TestServer::start_with(|c| {
        c.auth_failures_before_delay = 2;
        c.auth_failure_delay = std::time::Duration::from_millis(20);
    })
    .await;
    add_user(&server, "admin", "backoff-user", "pencil", &[], BOTH).await;
    let attempts: i64 = 5;
    for _ in 0..attempts {
        let client = client_as(&server, "backoff-user", "not-pencil", None).await;
        assert_auth_error(&authenticated_users(&client).await.unwrap_err());
    }
    let status = server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    let authentication = status
        .get_document("security")
        .and_then(|s| s.get_document("authentication"))
        .unwrap()
        .clone();
    assert_eq!(
        authentication,
        doc! {
            "failed": attempts,
            "failedDelayed": attempts - 2,
            "addressesDelayed": 1_i64,
            "failuresBeforeDelay": 2_i64,
            "delayMillis": 20_i64,
        }
    );
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let backed_off: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("Delaying further failed authentications from this client address"))
        .collect();
    assert_eq!(backed_off.len(), 1, "once per address: {backed_off:#?}");
    assert!(
        backed_off[0].contains("remote=127.0.0.1"),
        "{}",
        backed_off[0]
    );
    assert!(backed_off[0].contains("failures=3"), "{}", backed_off[0]);

    let client = client_as(&server, "backoff-user", "pencil", None).await;
    let users = authenticated_users(&client).await.unwrap();
    assert_eq!(
        users,
        vec![doc! {"user": "backoff-user", "db": "admin"}],
        "the right password authenticates while the address is backed off"
    );
}

// ---- raw-wire helpers ----

async fn command(conn: &mut RawConnection, body: Document) -> Document {
    conn.command(1, &body).await.document
}

async fn hello(conn: &mut RawConnection, extra: Document) -> Document {
    let mut body = doc! {"hello": 1};
    body.extend(extra);
    body.insert("$db", "admin");
    command(conn, body).await
}

async fn op_query(conn: &mut RawConnection, body: Document) -> Document {
    conn.send(&client::op_query(1, "admin.$cmd", &body).unwrap())
        .await;
    conn.read().await.unwrap().document
}

async fn sasl_start(conn: &mut RawConnection, scram: &ScramClient, skip: bool) -> Document {
    let mut body = doc! {
        "saslStart": 1,
        "mechanism": scram.mechanism().name(),
        "payload": bin(&scram.client_first()),
        "autoAuthorize": 1,
        "$db": "admin",
    };
    if skip {
        body.insert("options", doc! {"skipEmptyExchange": true});
    }
    command(conn, body).await
}

async fn sasl_continue(conn: &mut RawConnection, payload: &[u8]) -> Document {
    command(
        conn,
        doc! {"saslContinue": 1, "conversationId": 1, "payload": bin(payload), "$db": "admin"},
    )
    .await
}

async fn connection_status(conn: &mut RawConnection) -> Document {
    command(conn, doc! {"connectionStatus": 1, "$db": "admin"})
        .await
        .get_document("authInfo")
        .unwrap()
        .clone()
}

/// A complete conversation that must succeed.
async fn authenticate(conn: &mut RawConnection, mechanism: Mechanism, user: &str, password: &str) {
    let mut scram = ScramClient::new(mechanism, user, password);
    let first = sasl_start(conn, &scram, true).await;
    let last = sasl_continue(conn, &scram.client_final(&payload_of(&first))).await;
    assert!(last.get_bool("done").unwrap(), "{last}");
    assert!(scram.verifies(&payload_of(&last)));
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode64(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}
