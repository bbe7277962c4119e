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
