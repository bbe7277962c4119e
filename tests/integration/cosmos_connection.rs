//! The Cosmos profile's connection out of the box, through the binary as users start it: the
//! printed connection string works pasted as is (TLS with the per-user CA, the account's
//! credentials, `replicaSet=globaldb`, `retrywrites=false`), the CA stays the same across
//! `--storage memory` restarts, a client speaking the wrong transport is explained once per
//! address, and the emulator's published key beyond localhost is a start-up warning.

use crate::common::bson::{doc, Document};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// The first 16 bytes of a TLS ClientHello, as a driver with `tls=true` sends them.
const CLIENT_HELLO: [u8; 16] = [
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x5a, 0x11, 0x22, 0x33, 0x44,
];

/// A `ping` as OP_MSG (a plain client's first message).
fn plain_ping() -> Vec<u8> {
    let body = bson::to_vec(&doc! {"ping": 1, "$db": "admin"}).unwrap();
    let length = 16 + 4 + 1 + body.len();
    let mut msg = Vec::new();
    msg.extend_from_slice(&(length as i32).to_le_bytes());
    msg.extend_from_slice(&1i32.to_le_bytes());
    msg.extend_from_slice(&0i32.to_le_bytes());
    msg.extend_from_slice(&2013i32.to_le_bytes());
    msg.extend_from_slice(&0u32.to_le_bytes());
    msg.push(0);
    msg.extend_from_slice(&body);
    msg
}

/// A running `mayfly` binary with its JSON log lines.
struct Running {
    child: Child,
    lines: Receiver<serde_json::Value>,
    seen: Vec<serde_json::Value>,
    port: u16,
}

impl Running {
    fn start(args: &[&str], ca_dir: &Path) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
            .args(["--port", "0", "--log-format", "json"])
            .args(args)
            .env("MAYFLY_CAROOT", ca_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mayfly starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(event) = serde_json::from_str(&line) {
                    let _ = tx.send(event);
                }
            }
        });
        let mut running = Running {
            child,
            lines,
            seen: Vec::new(),
            port: 0,
        };
        let ready = running.wait_for(|e| e["id"] == 23016);
        running.port = ready["attr"]["port"].as_u64().unwrap() as u16;
        running
    }

    /// Waits up to 30 s for a line `matches` accepts, keeping every line read.
    fn wait_for(&mut self, matches: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        if let Some(found) = self.seen.iter().find(|e| matches(e)) {
            return found.clone();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(event) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push(event.clone());
                if matches(&event) {
                    return event;
                }
            }
        }
        panic!("no such log line in {:#?}", self.seen);
    }

    fn message(&mut self, msg: &str) -> serde_json::Value {
        self.wait_for(|e| e["msg"].as_str().is_some_and(|m| m.starts_with(msg)))
    }

    /// Stops the server with SIGTERM and returns every log line.
    fn stop(mut self) -> Vec<serde_json::Value> {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        assert!(
            self.child.wait().unwrap().success(),
            "clean exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
        self.seen.extend(self.lines.try_iter());
        self.seen
    }
}

/// Sends `first` on a fresh connection and waits for the server to close it.
fn refused(port: u16, first: &[u8]) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(first).unwrap();
    let mut buf = [0u8; 64];
    let n = stream.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the server closed the connection without a reply");
}

#[test]
fn a_client_on_the_wrong_transport_is_explained_once_per_address_at_warn() {
    // (server flags, what the client opens with, mongod's words for it)
    let table: [(&[&str], Vec<u8>, &str); 2] = [
        (
            &["--tlsMode", "disabled"],
            CLIENT_HELLO.to_vec(),
            "SSL handshake received but server is started without SSL support",
        ),
        (
            &["--compat", "cosmos", "--tlsMode", "requireTLS"],
            plain_ping(),
            "The server is configured to only allow SSL connections",
        ),
    ];
    for (args, first, message) in table {
        let dir = tempfile::tempdir().unwrap();
        let mut args = args.to_vec();
        args.extend(["--storage", "memory"]);
        let server = Running::start(&args, &dir.path().join("ca"));
        for _ in 0..6 {
            refused(server.port, &first);
        }
        let lines = server.stop();
        let accepted = lines.iter().filter(|e| e["id"] == 22943).count();
        assert_eq!(accepted, 6, "{args:?}: every retry reached the server");
        let explained: Vec<_> = lines
            .iter()
            .filter(|e| e["msg"].as_str().is_some_and(|m| m.starts_with(message)))
            .collect();
        assert_eq!(explained.len(), 1, "{args:?}: {explained:#?}");
        assert_eq!(explained[0]["s"], "W", "{args:?}");
        assert_eq!(
            explained[0]["attr"]["remote"]
                .as_str()
                .map(|r| r.starts_with("127.0.0.1:")),
            Some(true)
        );
    }
}

async fn pasted(uri: &str) -> Client {
    let mut options = ClientOptions::parse(uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(10));
    Client::with_options(options).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_printed_uri_connects_and_writes_pasted_as_is_across_memory_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let ca_dir = dir.path().join("ca");
    let mut ca_contents = Vec::new();
    for start in 0..2 {
        let mut server = Running::start(&["--compat", "cosmos", "--storage", "memory"], &ca_dir);
        let profile = server.message("Cosmos DB profile on (--compat cosmos)");
        assert_eq!(profile["attr"]["version"], "7.0.0", "{profile}");
        let uri = server.message("connect with")["attr"]["uri"]
            .as_str()
            .unwrap()
            .to_owned();
        let ca_file = ca_dir.join("ca.pem");
        for part in [
            "mongodb://localhost:C2y6yDjf5%2FR%2Bob0N8A7Cgv30VRDJIWEHLM%2B4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw%2FJw%3D%3D@localhost:".to_owned(),
            "replicaSet=globaldb".to_owned(),
            "tls=true".to_owned(),
            format!("tlsCAFile={}", ca_file.display()),
            "retrywrites=false".to_owned(),
        ] {
            assert!(uri.contains(&part), "start {start}: {part} missing in {uri}");
        }
        let client = pasted(&uri).await;
        let coll = client.database("app").collection::<Document>("orders");
        coll.insert_one(doc! {"_id": start, "sku": "a"})
            .await
            .unwrap();
        // The write went through the TLS connection the string asked for.
        let tls = client
            .database("admin")
            .run_command(doc! {"serverStatus": 1})
            .await
            .unwrap();
        let counts = tls.get_document("transportSecurity").unwrap();
        assert!(
            counts.get_i64("1.3").unwrap() >= 1,
            "start {start}: {counts}"
        );
        assert_eq!(
            coll.count_documents(doc! {}).await.unwrap(),
            1,
            "memory storage starts empty"
        );
        drop(client);
        server.stop();
        ca_contents.push(std::fs::read(&ca_file).unwrap());
        // `mayfly ca-path` names the same file, for scripts.
        let printed = Command::new(env!("CARGO_BIN_EXE_mayfly"))
            .arg("ca-path")
            .env("MAYFLY_CAROOT", &ca_dir)
            .output()
            .unwrap();
        assert!(printed.status.success());
        assert_eq!(
            String::from_utf8(printed.stdout).unwrap().trim(),
            ca_file.display().to_string()
        );
    }
    assert_eq!(
        ca_contents[0], ca_contents[1],
        "the same CA after a restart: trusted once"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_published_key_beyond_localhost_is_a_startup_warning() {
    let warning = "Access control is enabled, but the Cosmos DB account user 'localhost'";
    // (extra flags, warned)
    let table: [(&[&str], bool); 3] = [
        (&["--bind-ip", "0.0.0.0"], true),
        (&["--bind-ip", "127.0.0.1"], false),
        (
            &["--bind-ip", "0.0.0.0", "--cosmos-key", "an own key"],
            false,
        ),
    ];
    for (extra, warned) in table {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--compat",
            "cosmos",
            "--storage",
            "memory",
            "--auth",
            "--tlsMode",
            "disabled",
        ];
        args.extend_from_slice(extra);
        let mut server = Running::start(&args, &dir.path().join("ca"));
        let key = if extra.contains(&"an own key") {
            "an%20own%20key"
        } else {
            "C2y6yDjf5%2FR%2Bob0N8A7Cgv30VRDJIWEHLM%2B4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw%2FJw%3D%3D"
        };
        let uri = format!(
            "mongodb://localhost:{key}@127.0.0.1:{}/?directConnection=true&retrywrites=false",
            server.port
        );
        let client = pasted(&uri).await;
        let log = client
            .database("admin")
            .run_command(doc! {"getLog": "startupWarnings"})
            .await
            .unwrap();
        let lines = log.get_array("log").unwrap();
        let in_get_log = lines
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.contains(warning)));
        assert_eq!(in_get_log, warned, "{extra:?}: {lines:?}");
        drop(client);
        server.message("mayfly starting");
        let logged = server.stop().into_iter().any(|e| {
            e["s"] == "W"
                && e["attr"]["tags"] == "startupWarnings"
                && e["msg"].as_str().is_some_and(|m| m.starts_with(warning))
        });
        assert_eq!(logged, warned, "{extra:?}: the start-up log");
    }
}
