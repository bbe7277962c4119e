//! No secret is stored: a password a client sends (`createUser`/`updateUser` `pwd`, refused
//! commands included) and a SASL payload (`saslStart`/`saslContinue`, a handshake's
//! `speculativeAuthenticate`) never reach `system.profile`, the slow-query log, `getLog` or an
//! error message — a `dbAdmin` who turns the profiler on reads `"xxx"` where mongod shows it.

use crate::common;

use crate::profiler::profile_entries;
use common::bson::spec::BinarySubtype;
use common::bson::{doc, Binary, Bson, Document};
use common::{error_code, TestServer};
use mongodb::options::Credential;
use mongodb::Client;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// The client nonce of a hand-made `saslStart`: a marker to look for.
const NONCE_MARKER: &str = "NonceMarker7b2f";

async fn client_as(server_uri: &str, user: &str, password: &str, source: &str) -> Client {
    let mut options = mongodb::options::ClientOptions::parse(server_uri)
        .await
        .unwrap();
    options.server_selection_timeout = Some(std::time::Duration::from_secs(5));
    options.credential = Some(
        Credential::builder()
            .username(user.to_owned())
            .password(password.to_owned())
            .source(source.to_owned())
            .build(),
    );
    Client::with_options(options).unwrap()
}

/// Fails if any secret is anywhere in `doc`: its extended JSON and its raw BSON, so a secret in
/// a string, a binary or a field name is found alike.
fn assert_holds_none(doc: &Document, secrets: &[&str]) {
    let json = Bson::Document(doc.clone())
        .into_relaxed_extjson()
        .to_string();
    let bytes = bson::to_vec(doc).unwrap();
    for secret in secrets {
        assert!(!json.contains(secret), "{secret} stored in {json}");
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} stored in the BSON of {json}"
        );
    }
}

/// The command of each entry of `name`, as stored.
fn commands_named<'a>(entries: &'a [Document], name: &str) -> Vec<&'a Document> {
    entries
        .iter()
        .filter_map(|e| e.get_document("command").ok())
        .filter(|c| c.keys().next().map(String::as_str) == Some(name))
        .collect()
}

/// A hand-made first SCRAM message, sent as a command (as a driver never would, but a client
/// may), carrying [`NONCE_MARKER`].
fn sasl_start(user: &str) -> Document {
    let first = format!("n,,n={user},r={NONCE_MARKER}");
    doc! {
        "saslStart": 1,
        "mechanism": "SCRAM-SHA-256",
        "payload": Binary { subtype: BinarySubtype::Generic, bytes: first.into_bytes() },
    }
}

#[tokio::test]
async fn profiled_user_commands_and_sasl_conversations_keep_no_secret() {
    let server = TestServer::start_with(|c| c.auth = true).await;
    let uri = server.uri();
    // The localhost exception creates the first user.
    server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"createUser": "root", "pwd": "root-pw-Q1", "roles": ["root"]})
        .await
        .unwrap();
    let root = client_as(&uri, "root", "root-pw-Q1", "admin").await;
    let app = root.database("app");
    app.run_command(doc! {"createUser": "dba", "pwd": "dba-pw-W2", "roles": ["dbAdmin"]})
        .await
        .unwrap();
    let dba = client_as(&uri, "dba", "dba-pw-W2", "app").await;
    let dba_app = dba.database("app");
    dba_app.run_command(doc! {"profile": 2}).await.unwrap();
    root.database("admin")
        .run_command(doc! {"profile": 2})
        .await
        .unwrap();

    let secrets = [
        "alice-pw-E3",
        "dup-pw-R4",
        "alice-pw-T5",
        "unauth-pw-Y6",
        "unauth-pw-U7",
        "wrong-pw-I8",
        NONCE_MARKER,
    ];
    app.run_command(doc! {"createUser": "alice", "pwd": "alice-pw-E3", "roles": []})
        .await
        .unwrap();
    let duplicate = app
        .run_command(doc! {"createUser": "alice", "pwd": "dup-pw-R4", "roles": []})
        .await
        .unwrap_err();
    assert_eq!(error_code(&duplicate), Some(51003));
    app.run_command(doc! {"updateUser": "alice", "pwd": "alice-pw-T5"})
        .await
        .unwrap();
    // A dbAdmin may not manage users: refused, and profiled all the same.
    for refused in [
        doc! {"createUser": "eve", "pwd": "unauth-pw-Y6", "roles": []},
        doc! {"updateUser": "alice", "pwd": "unauth-pw-U7"},
    ] {
        let err = dba_app.run_command(refused).await.unwrap_err();
        assert_eq!(error_code(&err), Some(13));
        let message = err.to_string();
        assert!(message.contains("pwd: \"xxx\""), "{message}");
        assert!(!message.contains("unauth-pw"), "{message}");
    }
    // SASL conversations: the driver's (speculative in `hello`, then `saslContinue`), a wrong
    // password, and a hand-made `saslStart`.
    let alice = client_as(&uri, "alice", "alice-pw-T5", "app").await;
    alice
        .database("app")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    let wrong = client_as(&uri, "alice", "wrong-pw-I8", "app").await;
    assert!(wrong
        .database("app")
        .run_command(doc! {"ping": 1})
        .await
        .is_err());
    server
        .client()
        .await
        .database("app")
        .run_command(sasl_start("alice"))
        .await
        .unwrap();

    // The dbAdmin reads the profile.
    let app_entries = profile_entries(&dba_app).await;
    let admin_entries = profile_entries(&root.database("admin")).await;
    for entry in app_entries.iter().chain(&admin_entries) {
        assert_holds_none(entry, &secrets);
    }
    let create_users = commands_named(&app_entries, "createUser");
    let update_users = commands_named(&app_entries, "updateUser");
    assert_eq!(
        (create_users.len(), update_users.len()),
        (3, 2),
        "the created, the duplicate and the unauthorized createUser; both updateUsers"
    );
    for command in create_users.iter().chain(&update_users) {
        assert_eq!(command.get_str("pwd"), Ok("xxx"), "{command}");
    }
    let refused = app_entries
        .iter()
        .filter(|e| e.get_f64("ok") == Ok(0.0))
        .filter(|e| commands_named(std::slice::from_ref(*e), "createUser").len() == 1)
        .count();
    assert_eq!(refused, 2, "the duplicate and the unauthorized createUser");
    let sasl: Vec<&Document> = ["saslStart", "saslContinue"]
        .iter()
        .flat_map(|name| commands_named(&app_entries, name))
        .collect();
    assert!(
        !commands_named(&app_entries, "saslStart").is_empty()
            && commands_named(&app_entries, "saslContinue").len() >= 2,
        "{sasl:#?}"
    );
    for command in sasl {
        assert_eq!(command.get_str("payload"), Ok("xxx"), "{command}");
    }
    // The driver's handshake is `isMaster` until it knows the server speaks `hello`.
    let speculative: Vec<&Document> = ["hello", "isMaster"]
        .iter()
        .flat_map(|name| commands_named(&admin_entries, name))
        .filter(|c| c.contains_key("speculativeAuthenticate"))
        .collect();
    assert!(
        !speculative.is_empty(),
        "the driver authenticates in the handshake"
    );
    for command in speculative {
        assert_eq!(
            command.get_str("speculativeAuthenticate"),
            Ok("xxx"),
            "{command}"
        );
    }
}

/// Starts the binary (which keeps `getLog`'s recent lines) with authentication on and every
/// command logged as slow; returns it and its port.
fn start_binary() -> (std::process::Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--storage", "memory", "--log-format", "json"])
        .args(["--slow-ms", "0", "--auth"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mayfly starts");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let port = loop {
        let line = lines.next().expect("the server logs until it listens");
        let value: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if value["id"] == 23016 {
            break u16::try_from(value["attr"]["port"].as_u64().unwrap()).unwrap();
        }
    };
    // Keep draining standard error so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, port)
}

/// The slow-query lines (`--slow-ms 0`: every command) and the "command failed" lines that
/// `getLog: "global"` returns hold no password and no SASL payload; the failed authentication
/// is mongod's line 20249 with who and how.
#[tokio::test]
async fn slow_query_lines_and_get_log_keep_no_secret() {
    let (mut child, port) = start_binary();
    let uri = format!("mongodb://127.0.0.1:{port}/?directConnection=true");
    // The Cosmos DB account user the binary creates at start: root in admin.
    let root = client_as(
        &uri,
        "localhost",
        mayfly::config::EMULATOR_COSMOS_KEY,
        "admin",
    )
    .await;
    let admin = root.database("admin");
    admin
        .run_command(doc! {"createUser": "bob", "pwd": "bob-pw-slow-1", "roles": []})
        .await
        .unwrap();
    let duplicate = admin
        .run_command(doc! {"createUser": "bob", "pwd": "bob-pw-slow-2", "roles": []})
        .await
        .unwrap_err();
    assert_eq!(error_code(&duplicate), Some(51003));
    admin
        .run_command(doc! {"updateUser": "bob", "pwd": "bob-pw-slow-3"})
        .await
        .unwrap();
    // bob has no role: refused with the command shown in the message, which is logged.
    let bob = client_as(&uri, "bob", "bob-pw-slow-3", "admin").await;
    let unauthorized = bob
        .database("admin")
        .run_command(doc! {"createUser": "x", "pwd": "bob-pw-slow-4", "roles": []})
        .await
        .unwrap_err();
    assert_eq!(error_code(&unauthorized), Some(13));
    let anonymous = Client::with_uri_str(&uri).await.unwrap();
    anonymous
        .database("admin")
        .run_command(sasl_start("bob"))
        .await
        .unwrap();
    let wrong = client_as(&uri, "bob", "bob-pw-wrong-5", "admin").await;
    assert!(wrong
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .is_err());

    let reply = admin.run_command(doc! {"getLog": "global"}).await.unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let lines: Vec<serde_json::Value> = reply
        .get_array("log")
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str(l.as_str().unwrap()).unwrap())
        .collect();
    let text: String = lines.iter().map(|l| l.to_string()).collect();
    for secret in [
        "bob-pw-slow-1",
        "bob-pw-slow-2",
        "bob-pw-slow-3",
        "bob-pw-slow-4",
        "bob-pw-wrong-5",
        NONCE_MARKER,
    ] {
        assert!(!text.contains(secret), "{secret} in the log");
    }
    let slow = |name: &str| {
        lines
            .iter()
            .filter(|l| l["id"] == 51803 && l["attr"]["command"].get(name).is_some())
            .count()
    };
    assert!(slow("createUser") >= 2 && slow("updateUser") >= 1 && slow("saslStart") >= 1);
    assert!(
        text.contains(
            "not authorized on admin to execute command { createUser: \\\"x\\\", pwd: \\\"xxx\\\""
        ),
        "the Unauthorized message is logged with the password hidden"
    );
    let failed = lines
        .iter()
        .find(|l| l["id"] == 20249 && l["attr"]["principalName"] == "bob")
        .expect("the failed authentication is logged");
    assert_eq!(failed["msg"], "Authentication failed");
    assert_eq!(failed["s"], "W");
    assert_eq!(failed["c"], "ACCESS");
    let attr = &failed["attr"];
    assert_eq!(attr["authenticationDatabase"], "admin");
    assert_eq!(attr["mechanism"], "SCRAM-SHA-256");
    assert!(attr["remote"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(attr["extraInfo"], serde_json::json!({}));
    assert_eq!(
        attr["error"],
        "AuthenticationFailed: SCRAM authentication failed, storedKey mismatch"
    );
}
