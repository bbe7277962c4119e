//! What a binary and a data directory say about themselves: `mayfly --version` names the
//! version, the commit, the build date and the data directory format it writes; a directory
//! records its format when created, `serverStatus` and `mayfly check` report it, a directory
//! whose marker predates format versions is read as format 1 and recorded so, and one of a
//! newer format is refused at start-up (and by the tools) with nothing changed.

use crate::common::bson::{doc, Document};
use crate::common::TestServer;
use mayfly::clock::{Clock, ManualClock, SystemClock};
use mayfly::config::StorageKind;
use mayfly::storage::format::CURRENT;
use mayfly::storage::integrity::MARKER;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn mayfly(args: &[&str], dbpath: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mayfly"));
    command.args(args).stdin(Stdio::null());
    if let Some(dir) = dbpath {
        command.arg("--dbpath").arg(dir);
    }
    command.output().expect("mayfly runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A data directory created by the engine, holding one collection, closed again.
fn created_directory() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_at_secs(SystemClock::new().now_secs()));
    let engine = mayfly::engine::Engine::open(dir.path(), clock).unwrap();
    futures::executor::block_on(engine.write(true, |txn, _| {
        mayfly::engine::ddl::ensure_collection(txn, "shop", "carts").map(|_| ())
    }))
    .unwrap()
    .unwrap();
    drop(engine);
    dir
}

/// Every file of `dir` with its bytes, to see that a refusal changed nothing.
fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn version_flag_prints_the_version_commit_build_date_and_data_directory_format() {
    let out = mayfly(&["--version"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let expected = [
        format!("mayfly {}", env!("CARGO_PKG_VERSION")),
        format!("commit: {}", mayfly::version::GIT_COMMIT),
        format!("built: {}", mayfly::version::BUILD_DATE),
        format!("data directory format: {CURRENT}"),
    ];
    assert_eq!(
        lines,
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );
    // Built from a git checkout without an override: the commit is the one checked out.
    if std::env::var_os("MAYFLY_GIT_COMMIT").is_none() {
        if let Ok(head) = Command::new("git").args(["rev-parse", "HEAD"]).output() {
            if head.status.success() {
                let head = text(&head.stdout);
                assert_eq!(
                    lines.get(1),
                    Some(&format!("commit: {}", head.trim()).as_str())
                );
            }
        }
    }
    // `-V` is the short form: the version alone.
    let out = mayfly(&["-V"], None);
    assert_eq!(
        text(&out.stdout),
        format!("mayfly {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[tokio::test]
async fn build_info_carries_the_commit_and_server_status_the_directory_format() {
    let server = TestServer::start_with(|c| c.storage = StorageKind::Disk).await;
    let client = server.client().await;
    let admin = client.database("admin");
    let info = admin.run_command(doc! {"buildInfo": 1}).await.unwrap();
    assert_eq!(
        info.get_str("gitVersion").unwrap(),
        mayfly::version::GIT_COMMIT
    );
    let status = admin.run_command(doc! {"serverStatus": 1}).await.unwrap();
    let engine = status.get_document("storageEngine").unwrap();
    assert_eq!(engine.get_i32("formatVersion").unwrap(), CURRENT as i32);
    let marker = std::fs::read_to_string(server.dbpath().join(MARKER)).unwrap();
    assert!(
        marker.lines().any(|l| l == format!("format {CURRENT}")),
        "{marker}"
    );

    // In memory there is no data directory, so no format.
    let memory = TestServer::start_memory().await;
    let status = memory
        .client()
        .await
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    let engine: &Document = status.get_document("storageEngine").unwrap();
    assert_eq!(engine.get("formatVersion"), None, "{engine}");
}

#[test]
fn check_reports_the_format_and_a_marker_from_before_format_versions_is_recorded_as_format_1() {
    let dir = created_directory();
    let out = mayfly(&["check"], Some(dir.path()));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(
        stdout.lines().next(),
        Some(format!("data directory format: {CURRENT}").as_str()),
        "{stdout}"
    );

    // The marker as mayfly wrote it before format versions: read as format 1 by `check`
    // (which changes nothing), and recorded as format 1 by the next start.
    let marker = dir.path().join(MARKER);
    let before_versions = "mayfly data directory: fjall 3 database with mayfly's keyspaces\n";
    std::fs::write(&marker, before_versions).unwrap();
    let out = mayfly(&["check"], Some(dir.path()));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with("data directory format: 1 (its marker predates format versions"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), before_versions);
    let clock = Arc::new(ManualClock::starting_at_secs(SystemClock::new().now_secs()));
    let engine = mayfly::engine::Engine::open(dir.path(), clock).unwrap();
    assert_eq!(engine.format_version(), Some(1));
    let names = engine.catalog().unwrap().all().count();
    assert_eq!(names, 1, "the collection is still there");
    drop(engine);
    let recorded = std::fs::read_to_string(&marker).unwrap();
    assert!(recorded.starts_with(before_versions), "{recorded}");
    assert!(recorded.ends_with("\nformat 1\n"), "{recorded}");
}

#[test]
fn a_directory_of_a_newer_format_is_refused_at_start_up_and_by_the_tools_changing_nothing() {
    let dir = created_directory();
    let newer = CURRENT + 1;
    std::fs::write(
        dir.path().join(MARKER),
        format!("mayfly data directory: a format from the future\nformat {newer}\n"),
    )
    .unwrap();
    let before = files(dir.path());
    let refusal = format!(
        "is in format {newer}, written by a newer mayfly; this mayfly ({}) reads data \
         directory format {CURRENT} and earlier",
        env!("CARGO_PKG_VERSION")
    );

    // The server: a non-zero exit with the reason in its log, never a server listening.
    let mut child = Command::new(env!("CARGO_BIN_EXE_mayfly"))
        .args(["--port", "0", "--dbpath"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server started on a directory of a newer format");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let log = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert!(log.contains(&refusal), "{log}");
    assert!(!log.contains("waiting for connections"), "{log}");

    // The tools that read or rewrite the directory refuse it the same way.
    let archive = dir.path().join("never.archive");
    let runs: [&[&str]; 3] = [
        &["check"],
        &["repair"],
        &["dump", "--out", archive.to_str().unwrap()],
    ];
    for args in runs {
        let out = mayfly(args, Some(dir.path()));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(&refusal), "{args:?}: {stderr}");
    }
    assert!(!archive.exists());
    // The lock file's holder is emptied on every release; nothing else was touched.
    let lock = mayfly::storage::lock::LOCK_FILE;
    let unchanged = |files: Vec<(std::path::PathBuf, Vec<u8>)>| {
        files
            .into_iter()
            .filter(|(path, _)| !path.ends_with(lock))
            .collect::<Vec<_>>()
    };
    assert_eq!(unchanged(files(dir.path())), unchanged(before));
}
