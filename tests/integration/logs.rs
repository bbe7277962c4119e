//! The server's log as an operator reads it from a file or a pipe: no terminal colour codes,
//! and none of the storage library's routine lines, at creation or at a restart.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts the binary on `dbpath` with standard error to a pipe, waits until it listens, stops
/// it with SIGTERM and returns everything it wrote.
fn run_once(dbpath: &std::path::Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--dbpath"])
        .arg(dbpath)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mayfly starts");
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        let ready = line.contains("waiting for connections");
        lines.push(line);
        if ready {
            break;
        }
    }
    assert!(
        lines.iter().any(|l| l.contains("waiting for connections")),
        "the server did not start: {lines:#?}"
    );
    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success(), "clean exit on SIGTERM");
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    lines.join("\n")
}

#[test]
fn a_piped_log_has_no_colour_codes_and_no_storage_library_chatter() {
    let dir = tempfile::tempdir().unwrap();
    for start in ["first start (creates the data)", "restart (recovers it)"] {
        let log = run_once(dir.path());
        assert!(!log.contains('\u{1b}'), "{start}: ANSI escape in\n{log}");
        for library in ["fjall", "lsm_tree"] {
            assert!(
                !log.contains(library),
                "{start}: a {library} line at info\n{log}"
            );
        }
        assert!(log.contains("mayfly starting"), "{start}: {log}");
    }
}

#[test]
fn a_second_server_on_the_same_directory_names_the_process_that_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--dbpath"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mayfly starts");
    let stderr = first.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    while let Some(Ok(line)) = lines.next() {
        if line.contains("waiting for connections") {
            break;
        }
    }
    let second = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--dbpath"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("the second server runs");
    let _ = first.kill();
    let _ = first.wait();
    let text = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "is in use by process {}: is another mayfly already running on it?",
            first.id()
        )),
        "{text}"
    );
}

/// `--log-format json` writes mongod's structured lines (`t`, `s`, `c`, `id`, `ctx`, `msg`,
/// `attr`), and a slow operation is mongod's "Slow query" line (id 51803) with the namespace,
/// the command's shape without the client's values, the plan and what it examined.
#[tokio::test]
async fn json_logs_have_mongods_shape_and_slow_queries_their_fields() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--storage", "memory", "--log-format", "json"])
        .args(["--slow-ms", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mayfly starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log: Vec<serde_json::Value> = Vec::new();
    let port = loop {
        let line = lines
            .next()
            .expect("the server logs until it listens")
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
        log.push(value.clone());
        if value["id"] == 23016 {
            break value["attr"]["port"].as_u64().unwrap();
        }
    };
    let client = mongodb::Client::with_uri_str(format!("mongodb://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let coll = client
        .database("shop")
        .collection::<mongodb::bson::Document>("c");
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(mongodb::bson::doc! {"a": 1})
            .build(),
    )
    .await
    .unwrap();
    coll.insert_many([
        mongodb::bson::doc! {"a": 5, "owner": "s3cr3t-owner"},
        mongodb::bson::doc! {"a": 7, "owner": "s3cr3t-owner"},
    ])
    .await
    .unwrap();
    let mut cursor = coll
        .find(mongodb::bson::doc! {"a": {"$gt": 1}, "owner": "s3cr3t-owner"})
        .await
        .unwrap();
    let mut found = 0;
    while cursor.advance().await.unwrap() {
        found += 1;
    }
    assert_eq!(found, 2);
    drop(client);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for line in lines {
        log.push(serde_json::from_str(&line.unwrap()).expect("one JSON object"));
    }
    assert!(child.wait().unwrap().success());

    for line in &log {
        let date = line["t"]["$date"].as_str().expect("t.$date");
        assert!(
            date.len() == 29 && date.ends_with("+00:00") && date.as_bytes()[19] == b'.',
            "{date}"
        );
        assert!(
            ["F", "E", "W", "I", "D1", "D2"].contains(&line["s"].as_str().unwrap()),
            "{line}"
        );
        assert!(line["c"].as_str().is_some_and(|c| !c.is_empty()), "{line}");
        assert!(line["id"].is_u64(), "{line}");
        assert!(line["ctx"].is_string() && line["msg"].is_string(), "{line}");
        assert!(line.get("attr").is_none_or(|a| a.is_object()), "{line}");
        assert_eq!(
            line.as_object().unwrap().len(),
            6 + usize::from(line.get("attr").is_some())
        );
    }
    let text: String = log.iter().map(|l| l.to_string()).collect();
    assert!(!text.contains("s3cr3t"), "a client's value in the log");
    let find = log
        .iter()
        .find(|l| l["id"] == 51803 && l["attr"]["command"]["find"] == "c")
        .expect("the find is logged as slow");
    assert_eq!(find["msg"], "Slow query");
    assert_eq!(find["c"], "COMMAND");
    assert!(find["ctx"].as_str().unwrap().starts_with("conn"), "{find}");
    let attr = &find["attr"];
    assert_eq!(attr["ns"], "shop.c");
    assert_eq!(
        attr["command"]["filter"],
        serde_json::json!({"a": {"$gt": "?number"}, "owner": "?string"})
    );
    assert_eq!(attr["planSummary"], "IXSCAN { a: 1 }");
    assert_eq!(attr["keysExamined"], 2);
    assert_eq!(attr["docsExamined"], 2);
    assert_eq!(attr["nreturned"], 2);
    assert!(attr["durationMillis"].is_u64());
    assert!(attr["remote"].as_str().unwrap().starts_with("127.0.0.1:"));
    let accepted = log.iter().filter(|l| l["id"] == 22943).count();
    let ended = log.iter().filter(|l| l["id"] == 22944).count();
    assert!(
        accepted >= 1 && ended >= 1,
        "connection lines: {accepted}, {ended}"
    );
}

/// A reaper pass that deletes documents logs one INFO line per collection, with the namespace,
/// how many it deleted and how long it took; a pass that deletes nothing logs nothing.
#[tokio::test]
async fn a_reaper_pass_logs_what_it_deleted_per_collection() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--storage", "memory", "--log-format", "json"])
        .args(["--clock", "manual", "--enable-test-commands"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mayfly starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log: Vec<serde_json::Value> = Vec::new();
    let port = loop {
        let line = lines
            .next()
            .expect("the server logs until it listens")
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
        log.push(value.clone());
        if value["id"] == 23016 {
            break value["attr"]["port"].as_u64().unwrap();
        }
    };
    let client = mongodb::Client::with_uri_str(format!("mongodb://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let admin = client.database("admin");
    admin
        .run_command(mongodb::bson::doc! {"reaper": "pause"})
        .await
        .unwrap();
    let db = client.database("ttl");
    for (name, docs) in [("a", 3), ("b", 2), ("quiet", 1)] {
        db.run_command(mongodb::bson::doc! {
            "createIndexes": name,
            "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 10}],
        })
        .await
        .unwrap();
        let coll = db.collection::<mongodb::bson::Document>(name);
        let ttl = if name == "quiet" { -1 } else { 10 };
        let docs = (0..docs).map(|i| mongodb::bson::doc! {"_id": i, "ttl": ttl});
        coll.insert_many(docs).await.unwrap();
    }
    let reap = mongodb::bson::doc! {"reaper": "runOnce"};
    assert_eq!(
        admin
            .run_command(reap.clone())
            .await
            .unwrap()
            .get_i64("reaped"),
        Ok(0)
    );
    admin
        .run_command(mongodb::bson::doc! {"advanceClock": 10})
        .await
        .unwrap();
    assert_eq!(
        admin.run_command(reap).await.unwrap().get_i64("reaped"),
        Ok(5)
    );
    drop(client);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for line in lines {
        log.push(serde_json::from_str(&line.unwrap()).expect("one JSON object"));
    }
    assert!(child.wait().unwrap().success());

    let reaped: Vec<&serde_json::Value> = log
        .iter()
        .filter(|l| l["msg"] == "TTL reaper deleted expired documents")
        .collect();
    let mut seen: Vec<(&str, u64)> = reaped
        .iter()
        .map(|l| {
            assert_eq!(l["s"], "I", "{l}");
            assert!(l["attr"]["durationMillis"].is_u64(), "{l}");
            (
                l["attr"]["namespace"].as_str().unwrap(),
                l["attr"]["deleted"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![("ttl.a", 3), ("ttl.b", 2)],
        "one line per collection that had deletions"
    );
}

/// TTL-10: a root `ttl` field does nothing in a collection without a TTL index on `_ts`. The
/// first write of one into such a collection logs one info line with its namespace; later
/// writes, collections with the index, and documents without `ttl` log nothing.
#[tokio::test]
async fn ignored_ttl_fields_are_logged_once_per_collection_ttl_10() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--storage", "memory", "--log-format", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mayfly starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log: Vec<serde_json::Value> = Vec::new();
    let port = loop {
        let line = lines
            .next()
            .expect("the server logs until it listens")
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
        log.push(value.clone());
        if value["id"] == 23016 {
            break value["attr"]["port"].as_u64().unwrap();
        }
    };
    let client = mongodb::Client::with_uri_str(format!("mongodb://127.0.0.1:{port}/"))
        .await
        .unwrap();
    use mongodb::bson::{doc, Document};
    let db = client.database("logs");
    let inserted = db.collection::<Document>("inserted");
    for i in 0..3 {
        inserted
            .insert_one(doc! {"_id": i, "ttl": 5})
            .await
            .unwrap();
    }
    // An update that adds `ttl` is a write of one too.
    let updated = db.collection::<Document>("updated");
    updated.insert_one(doc! {"_id": 1}).await.unwrap();
    updated
        .update_one(doc! {"_id": 1}, doc! {"$set": {"ttl": 5}})
        .await
        .unwrap();
    // Neither of these is told anything.
    db.collection::<Document>("no_ttl_fields")
        .insert_one(doc! {"_id": 1, "meta": {"ttl": 5}})
        .await
        .unwrap();
    db.run_command(doc! {
        "createIndexes": "with_index",
        "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 10}],
    })
    .await
    .unwrap();
    db.collection::<Document>("with_index")
        .insert_one(doc! {"_id": 1, "ttl": 5})
        .await
        .unwrap();
    drop(client);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for line in lines {
        log.push(serde_json::from_str(&line.unwrap()).expect("one JSON object"));
    }
    assert!(child.wait().unwrap().success());

    let mut told: Vec<&str> = log
        .iter()
        .filter(|l| l["msg"] == "`ttl` fields are ignored without a TTL index on `_ts`")
        .map(|l| {
            assert_eq!(l["s"], "I", "{l}");
            l["attr"]["namespace"].as_str().unwrap()
        })
        .collect();
    told.sort();
    assert_eq!(told, vec!["logs.inserted", "logs.updated"]);
}
