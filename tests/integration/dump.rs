//! The offline tools as an operator runs them: `mayfly dump` of a stopped server's directory,
//! `mayfly restore` into a new one, and a server started on it serves the same documents,
//! indexes and users, each document expiring exactly when it would have on the original
//! (TTL-15: its `_ts` is kept). `mayfly check` passes a sound directory and names a planted
//! fault; dump refuses a directory a server holds.

use crate::common::bson::{doc, Bson, Document};
use crate::common::ttl::{advance, now, set_collection_ttl};
use futures::TryStreamExt;
use mongodb::Client;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `mayfly` binary serving `dbpath` on a free port with the manual clock.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dbpath: &Path) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
            .args(["--port", "0", "--clock", "manual", "--enable-test-commands"])
            .arg("--dbpath")
            .arg(dbpath)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mayfly starts");
        // Owned at once, so a failed start below is still killed and waited for (`Drop`).
        let mut server = Server { child, port: 0 };
        let stderr = server.child.stderr.take().expect("stderr is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        // Drains the log for as long as the server runs, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).expect("the server says it listens");
            if let Some((_, rest)) = line.split_once("port=") {
                if line.contains("waiting for connections") {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    server.port = digits.parse().unwrap();
                    return server;
                }
            }
        }
    }

    async fn client(&self) -> Client {
        let uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port);
        Client::with_uri_str(uri).await.unwrap()
    }

    /// SIGTERM, then waits for a clean exit.
    fn stop(mut self) {
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
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mayfly(args: &[&str], dirs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mayfly"));
    command.args(args).stdin(Stdio::null());
    for (flag, path) in dirs {
        command.arg(flag).arg(path);
    }
    command.output().expect("mayfly runs")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// What a client sees of a database: each collection's documents by `_id` and its indexes.
async fn contents(client: &Client, db: &str) -> BTreeMap<String, (Vec<Document>, Vec<Document>)> {
    let db = client.database(db);
    let mut out = BTreeMap::new();
    for name in db.list_collection_names().await.unwrap() {
        let coll = db.collection::<Document>(&name);
        let docs = coll
            .find(doc! {})
            .sort(doc! {"_id": 1})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let mut indexes: Vec<Document> = db
            .run_command(doc! {"listIndexes": &name})
            .await
            .unwrap()
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .iter()
            .map(|i| i.as_document().unwrap().clone())
            .collect();
        indexes.sort_by_key(|i| i.get_str("name").unwrap().to_owned());
        out.insert(name, (docs, indexes));
    }
    out
}

async fn users(client: &Client) -> Document {
    let mut reply = client
        .database("shop")
        .run_command(doc! {"usersInfo": 1})
        .await
        .unwrap();
    reply.remove("$clusterTime");
    reply.remove("operationTime");
    reply
}

/// The `_id`s of `shop.carts` and `shop.events` a client can read now.
async fn visible(client: &Client) -> Vec<String> {
    let mut ids = Vec::new();
    for name in ["carts", "events"] {
        let coll = client.database("shop").collection::<Document>(name);
        let docs: Vec<Document> = coll
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        ids.extend(docs.iter().map(|d| match d.get("_id").unwrap() {
            Bson::String(s) => s.clone(),
            other => other.to_string(),
        }));
    }
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dump_and_restore_round_trip_a_database_and_keep_each_documents_expiry() {
    let original = tempfile::tempdir().unwrap();
    let restored = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let archive = scratch.path().join("shop.archive");
    let archive_tmp = scratch.path().join("shop.archive.tmp");

    // The original, written at T0 and T0 + 200.
    let server = Server::start(original.path());
    let client = server.client().await;
    let t0 = now(&client).await;
    let shop = client.database("shop");
    set_collection_ttl(&shop, "carts", 1000).await;
    shop.run_command(doc! {"createIndexes": "carts", "indexes": [
        {"key": {"user": 1}, "name": "user_1"},
        {"key": {"code": 1}, "name": "code_1", "unique": true, "sparse": true},
    ]})
    .await
    .unwrap();
    set_collection_ttl(&shop, "events", -1).await;
    let carts = shop.collection::<Document>("carts");
    let events = shop.collection::<Document>("events");
    carts
        .insert_many([
            doc! {"_id": 1, "user": "ann"},
            doc! {"_id": 2, "user": "bob", "ttl": 300},
            doc! {"_id": 3, "user": "cy", "ttl": -1},
            doc! {"_id": 4, "ttl": 100},
        ])
        .await
        .unwrap();
    advance(&client, 200).await;
    carts
        .insert_one(doc! {"_id": 5, "user": "dee", "code": "x"})
        .await
        .unwrap();
    events
        .insert_many([
            doc! {"_id": "f", "ttl": 500},
            doc! {"_id": "g"},
            doc! {"_id": "h", "ttl": -1},
        ])
        .await
        .unwrap();
    client
        .database("other")
        .collection::<Document>("plain")
        .insert_many((0..2_500).map(|i| doc! {"_id": i, "n": i % 7}))
        .await
        .unwrap();
    client
        .database("other")
        .run_command(doc! {"createIndexes": "plain", "indexes": [{"key": {"n": 1}, "name": "n_1"}]})
        .await
        .unwrap();
    shop.run_command(doc! {"createUser": "ann", "pwd": "pw", "roles": ["readWrite"]})
        .await
        .unwrap();
    let before = (
        contents(&client, "shop").await,
        contents(&client, "other").await,
        users(&client).await,
    );
    assert_eq!(visible(&client).await, ["1", "2", "3", "5", "f", "g", "h"]);

    // A running server's directory is refused, and no archive is left behind.
    let out = mayfly(
        &["dump", "--out", archive.to_str().unwrap()],
        &[("--dbpath", original.path())],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let expected = format!("is in use by process {}", server.child.id());
    assert!(
        text(&out.stderr).contains(&expected),
        "{}",
        text(&out.stderr)
    );
    assert!(!archive.exists() && !archive_tmp.exists());
    drop(client);
    server.stop();

    let out = mayfly(&["check"], &[("--dbpath", original.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("shop.carts: valid (5 records)"));
    let out = mayfly(
        &["dump", "--out", archive.to_str().unwrap()],
        &[("--dbpath", original.path())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(archive.exists() && !archive_tmp.exists());
    let restore = |extra: &[&str]| {
        let mut args = vec!["restore", "--in", archive.to_str().unwrap()];
        args.extend(extra);
        mayfly(&args, &[("--dbpath", restored.path())])
    };
    let out = restore(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Over what is there: refused, then replaced with --drop.
    let out = restore(&[]);
    assert_eq!(out.status.code(), Some(1));
    let refusal = text(&out.stderr);
    assert!(refusal.contains("collection shop.carts"), "{refusal}");
    assert!(refusal.contains("--drop"), "{refusal}");
    assert_eq!(restore(&["--drop"]).status.code(), Some(0));
    let out = mayfly(&["check"], &[("--dbpath", restored.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    // The restored server, its clock moved to where the original's stopped.
    let server = Server::start(restored.path());
    let client = server.client().await;
    let started = now(&client).await;
    assert!(started <= t0 + 200, "the test took over 200 s");
    advance(&client, t0 + 200 - started).await;
    let after = (
        contents(&client, "shop").await,
        contents(&client, "other").await,
        users(&client).await,
    );
    assert_eq!(after, before, "same documents, indexes and users");
    // Each document disappears exactly when its original `_ts` says: carts 2 at T0 + 300
    // (own ttl), f at T0 + 700 (own ttl, written at T0 + 200), carts 1 at T0 + 1000 (the
    // collection's), carts 5 at T0 + 1200; 3, g and h never.
    let walk = [
        (299, vec!["1", "2", "3", "5", "f", "g", "h"]),
        (300, vec!["1", "3", "5", "f", "g", "h"]),
        (699, vec!["1", "3", "5", "f", "g", "h"]),
        (700, vec!["1", "3", "5", "g", "h"]),
        (999, vec!["1", "3", "5", "g", "h"]),
        (1000, vec!["3", "5", "g", "h"]),
        (1199, vec!["3", "5", "g", "h"]),
        (1200, vec!["3", "g", "h"]),
        (1_000_000, vec!["3", "g", "h"]),
    ];
    let mut at = t0 + 200;
    for (offset, expected) in walk {
        at = advance(&client, t0 + offset - at).await;
        assert_eq!(visible(&client).await, expected, "at T0 + {offset}");
    }
    let count = client
        .database("other")
        .collection::<Document>("plain")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(count, 2_500);
    drop(client);
    server.stop();
}

#[tokio::test]
async fn check_names_a_planted_index_entry_and_exits_1() {
    use mayfly::clock::{Clock, ManualClock, SystemClock};
    use mayfly::engine::{ddl, documents::collection, documents::record_key, Engine, IndexMeta};
    use mayfly::storage::keys::{self, Direction};
    use mayfly::storage::Keyspace;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    {
        let clock = Arc::new(ManualClock::starting_at_secs(SystemClock::new().now_secs()));
        let engine = Engine::open(dir.path(), clock).unwrap();
        engine
            .write(true, |txn, now| {
                let (meta, _) = ddl::ensure_collection(txn, "v", "items").unwrap();
                let meta = ddl::create_index(txn, &meta, IndexMeta::new("n_1", doc! {"n": 1}), now)
                    .unwrap();
                for i in 0..10 {
                    collection::insert(txn, &meta, &doc! {"_id": i, "n": i}, now).unwrap();
                }
                ddl::ensure_collection(txn, "v", "sound").unwrap();
            })
            .await
            .unwrap();
        // Behind the engine's back, as the validate test plants it: an entry of n_1 for a
        // document that does not exist.
        let meta = engine
            .catalog()
            .unwrap()
            .get("v", "items")
            .cloned()
            .unwrap();
        let n_index = meta.index("n_1").unwrap();
        let tuple = vec![(Bson::Int32(999), Direction::Ascending)];
        let dangling = keys::index_key(
            meta.id,
            n_index.id,
            &tuple,
            record_key::record(&keys::document_key(meta.id, &Bson::Int32(999))),
        );
        engine
            .write(true, move |txn, _| {
                txn.put(Keyspace::Indexes, dangling, Vec::new())
            })
            .await
            .unwrap();
    }
    let out = mayfly(&["check"], &[("--dbpath", dir.path())]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "v.items: NOT VALID (10 records): index n_1 has 1 entries no document gives it"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("v.sound: valid (0 records)"), "{stdout}");
    assert!(
        stdout.contains("2 collections checked, 1 not valid"),
        "{stdout}"
    );

    // No data directory there: a failure, not an empty one created; no --dbpath: bad arguments.
    let missing = dir.path().join("missing");
    let out = mayfly(&["check"], &[("--dbpath", &missing)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is not a mayfly data directory"));
    assert!(!missing.exists());
    assert_eq!(mayfly(&["check"], &[]).status.code(), Some(2));
}
