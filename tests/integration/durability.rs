//! An acknowledged write survives a crash. The real `mayfly` binary runs as a child process;
//! eight clients write (`insert_one` and `insert_many`) while the process is killed with SIGKILL;
//! after a restart on the same data directory every acknowledged document is present and intact,
//! and no document is partial. Five kill/restart cycles accumulate data in one directory. The
//! same holds for multi-document transactions (in replica-set mode): a transaction killed
//! anywhere, between its commit and its acknowledgement included, is there whole or not at all.

use mongodb::bson::{doc, Document};
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

const CLIENTS: u32 = 8;
const CYCLES: u64 = 5;
/// Sequence numbers of cycle `k` start at `k * CYCLE_STRIDE`, so a write that landed without an
/// acknowledgement in one cycle never collides with the next cycle's writes.
const CYCLE_STRIDE: u64 = 1_000_000;

/// A running server process; killed (and reaped) when dropped, so a failing test leaves none.
struct ServerProcess {
    child: Child,
    port: u16,
}

impl ServerProcess {
    fn start(dbpath: &Path) -> ServerProcess {
        ServerProcess::start_with(dbpath, &[])
    }

    fn start_with(dbpath: &Path, extra: &[&str]) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
            .args(["--port", "0", "--log-format", "json"])
            .args(extra)
            .arg("--dbpath")
            .arg(dbpath)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mayfly starts");
        let (tx, rx) = mpsc::channel();
        // Both streams are drained until the process ends, so a full pipe never blocks it.
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    let _ = tx.send(line);
                }
            });
        }
        drop(tx);
        let mut server = ServerProcess { child, port: 0 };
        let mut seen = Vec::new();
        loop {
            let line = match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => line,
                Err(e) => panic!("mayfly did not report its port ({e}); output:\n{seen:#?}"),
            };
            if let Some(port) = listening_port(&line) {
                server.port = port;
                break;
            }
            seen.push(line);
        }
        // Keep draining the channel so the reader threads never block on send.
        std::thread::spawn(move || while rx.recv().is_ok() {});
        server
    }

    fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port)
    }

    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap the killed server");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port of the JSON start-up line, mongod's "Waiting for connections" (id 23016):
/// `{..., "id":23016, ..., "attr":{"address":...,"port":N}}`.
fn listening_port(line: &str) -> Option<u16> {
    let event: serde_json::Value = serde_json::from_str(line).ok()?;
    if event["id"] != 23016 {
        return None;
    }
    u16::try_from(event["attr"]["port"].as_u64()?).ok()
}

fn id_of(client: u32, seq: u64) -> String {
    format!("c{client}-{seq:08}")
}

/// A payload that can be recomputed from (client, seq): 40 to 1,000 bytes, content derived from
/// both numbers so a torn or misplaced document cannot match.
fn payload_of(client: u32, seq: u64) -> String {
    let len = 40 + (seq.wrapping_mul(2_654_435_761) % 960) as usize;
    let unit = format!("{client}:{seq};");
    unit.repeat(len / unit.len() + 1)[..len].to_owned()
}

fn document_of(client: u32, seq: u64) -> Document {
    doc! {
        "_id": id_of(client, seq),
        "client": client as i64,
        "seq": seq as i64,
        "payload": payload_of(client, seq),
    }
}

/// Checks a stored document has exactly the expected shape; returns its `_id`.
fn check_document(found: &Document) -> String {
    let client = found.get_i64("client").expect("client field") as u32;
    let seq = found.get_i64("seq").expect("seq field") as u64;
    let expected = document_of(client, seq);
    assert_eq!(found, &expected, "document is partial or corrupt");
    expected.get_str("_id").unwrap().to_owned()
}

async fn connect(uri: &str) -> Client {
    let mut options = ClientOptions::parse(uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(2));
    options.connect_timeout = Some(Duration::from_secs(2));
    options.retry_writes = Some(false);
    options.max_pool_size = Some(4);
    Client::with_options(options).unwrap()
}

/// One client's writing until `stop`: single inserts and batches of 2 to 64 documents, in a
/// deterministic mix. Every `_id` whose write was acknowledged goes into `acked`.
async fn write_until_stopped(
    coll: Collection<Document>,
    client: u32,
    first_seq: u64,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<BTreeSet<String>>>,
) {
    let mut seq = first_seq;
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let batch = if round.is_multiple_of(4) {
            2 + (round * 7 + client as u64) % 63
        } else {
            1
        };
        let docs: Vec<Document> = (seq..seq + batch).map(|s| document_of(client, s)).collect();
        let result = if batch == 1 {
            coll.insert_one(&docs[0]).await.map(|_| ())
        } else {
            coll.insert_many(&docs).await.map(|_| ())
        };
        match result {
            Ok(()) => {
                let mut acked = acked.lock().unwrap();
                for s in seq..seq + batch {
                    acked.insert(id_of(client, s));
                }
            }
            // The server was killed; nothing after this point is acknowledged.
            Err(_) => return,
        }
        seq += batch;
    }
}

/// Reads the whole collection after a restart and checks it against what was acknowledged.
async fn verify(uri: &str, acked: &BTreeSet<String>) -> usize {
    let client = connect(uri).await;
    let coll = client.database("durability").collection::<Document>("docs");
    let mut cursor = coll.find(doc! {}).batch_size(1000).await.unwrap();
    let mut found = BTreeSet::new();
    while cursor.advance().await.unwrap() {
        let document = cursor.deserialize_current().unwrap();
        let id = check_document(&document);
        assert!(found.insert(id.clone()), "{id} returned twice");
    }
    let missing: Vec<&String> = acked.difference(&found).take(10).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged documents are lost after the crash, e.g. {missing:?}",
        acked.difference(&found).count()
    );
    // Point reads too: the `_id` path must agree with the scan.
    for id in acked.iter().step_by(97) {
        let document = coll.find_one(doc! {"_id": id}).await.unwrap();
        let document = document.unwrap_or_else(|| panic!("{id} missing by _id"));
        assert_eq!(&check_document(&document), id);
    }
    found.len()
}

/// A kill delay between 300 and 1,000 ms that differs per cycle and per run.
fn kill_delay(cycle: u64) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    Duration::from_millis(300 + (nanos / 1000 + cycle * 241) % 700)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let dbpath = dir.path().join("data");
    let acked = Arc::new(Mutex::new(BTreeSet::new()));

    for cycle in 0..CYCLES {
        let server = ServerProcess::start(&dbpath);
        let uri = server.uri();
        let before = acked.lock().unwrap().clone();
        let found = verify(&uri, &before).await;
        assert!(found >= before.len());

        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for client in 0..CLIENTS {
            let driver = connect(&uri).await;
            let coll = driver.database("durability").collection::<Document>("docs");
            writers.push(tokio::spawn(write_until_stopped(
                coll,
                client,
                (cycle + 1) * CYCLE_STRIDE,
                stop.clone(),
                acked.clone(),
            )));
        }
        tokio::time::sleep(kill_delay(cycle)).await;
        // Writes are in flight when the process dies: some are acknowledged, some not.
        server.kill();
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            writer.await.unwrap();
        }
        let now = acked.lock().unwrap().len();
        assert!(
            now > before.len(),
            "cycle {cycle}: no write was acknowledged before the kill"
        );
        eprintln!(
            "cycle {cycle}: {found} documents after restart, {} acknowledged before, {} now",
            before.len(),
            now
        );
    }

    let server = ServerProcess::start(&dbpath);
    let acked = acked.lock().unwrap().clone();
    let found = verify(&server.uri(), &acked).await;
    assert!(found >= acked.len());
    server.kill();
}

/// One client committing transactions until `stop`: each inserts the same `_id` into two
/// collections. Every `_id` whose commit was acknowledged goes into `acked`.
async fn commit_until_stopped(
    client: Client,
    id: u32,
    first_seq: u64,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<BTreeSet<String>>>,
) {
    let db = client.database("durability");
    let (a, b) = (
        db.collection::<Document>("a"),
        db.collection::<Document>("b"),
    );
    let Ok(mut session) = client.start_session().await else {
        return;
    };
    let mut seq = first_seq;
    while !stop.load(Ordering::Relaxed) {
        let doc = document_of(id, seq);
        let result = async {
            session.start_transaction().await?;
            a.insert_one(&doc).session(&mut session).await?;
            b.insert_one(&doc).session(&mut session).await?;
            session.commit_transaction().await
        }
        .await;
        match result {
            Ok(()) => {
                acked.lock().unwrap().insert(id_of(id, seq));
            }
            Err(_) => return,
        }
        seq += 1;
    }
}

async fn ids_in(coll: &Collection<Document>) -> BTreeSet<String> {
    let mut cursor = coll.find(doc! {}).batch_size(1000).await.unwrap();
    let mut found = BTreeSet::new();
    while cursor.advance().await.unwrap() {
        let document = cursor.deserialize_current().unwrap();
        assert!(found.insert(check_document(&document)));
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transactions_are_all_or_nothing_across_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let dbpath = dir.path().join("data");
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let args = ["--replSet", "rs0"];
    for cycle in 0..3u64 {
        let server = ServerProcess::start_with(&dbpath, &args);
        let uri = server.uri();
        let check = connect(&uri).await;
        let db = check.database("durability");
        let in_a = ids_in(&db.collection("a")).await;
        let in_b = ids_in(&db.collection("b")).await;
        assert_eq!(
            in_a, in_b,
            "a transaction is visible in part after the crash"
        );
        let before = acked.lock().unwrap().clone();
        let lost: Vec<&String> = before.difference(&in_a).take(10).collect();
        assert!(lost.is_empty(), "acknowledged commits lost: {lost:?}");
        if cycle == 0 {
            // The collections exist before transactions write to them.
            db.collection::<Document>("a")
                .insert_one(doc! {"_id": "seed"})
                .await
                .unwrap();
            db.collection::<Document>("b")
                .insert_one(doc! {"_id": "seed"})
                .await
                .unwrap();
            db.collection::<Document>("a")
                .delete_one(doc! {"_id": "seed"})
                .await
                .unwrap();
            db.collection::<Document>("b")
                .delete_one(doc! {"_id": "seed"})
                .await
                .unwrap();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for client in 0..CLIENTS {
            writers.push(tokio::spawn(commit_until_stopped(
                connect(&uri).await,
                client,
                (cycle + 1) * CYCLE_STRIDE,
                stop.clone(),
                acked.clone(),
            )));
        }
        tokio::time::sleep(kill_delay(cycle)).await;
        server.kill();
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            writer.await.unwrap();
        }
        let now = acked.lock().unwrap().len();
        assert!(
            now > before.len(),
            "cycle {cycle}: no transaction committed"
        );
        eprintln!(
            "cycle {cycle}: {} transactions found after restart, {now} acknowledged now",
            in_a.len()
        );
    }
    let server = ServerProcess::start_with(&dbpath, &args);
    let check = connect(&server.uri()).await;
    let db = check.database("durability");
    let in_a = ids_in(&db.collection("a")).await;
    assert_eq!(in_a, ids_in(&db.collection("b")).await);
    let acked = acked.lock().unwrap().clone();
    assert!(acked.is_subset(&in_a), "acknowledged commits lost");
    server.kill();
}
