//! `mayfly ping`, the container image's health check: exit 0 and `ok` when a server answers
//! `{ping: 1}`, exit 1 with the reason otherwise — whatever the server requires of clients
//! that run other commands (authentication), and without ever claiming a TLS-only check.

use crate::common::TestServer;
use std::io::Write;
use std::process::{Command, Output};

/// Runs `mayfly ping ARGS` off the async workers (the server under test shares them).
async fn ping(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_mayfly"))
            .arg("ping")
            .args(args)
            .env_remove("MAYFLY_PORT")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_answers_ok_for_every_kind_of_server() {
    // (server, adjustment): ping needs no authentication, as in MongoDB.
    type Adjust = fn(&mut mayfly::config::Config);
    let table: [(&str, Adjust); 3] = [
        ("on disk", |_| {}),
        ("--storage memory", |c| {
            c.storage = mayfly::config::StorageKind::Memory
        }),
        ("--auth", |c| c.auth = true),
    ];
    for (name, adjust) in table {
        let server = TestServer::start_with(adjust).await;
        let port = server.addr.port();
        for args in [
            vec!["--port".to_owned(), port.to_string()],
            vec![
                "--uri".to_owned(),
                format!("mongodb://user:pw@127.0.0.1:{port},other:1/admin?replicaSet=rs0"),
            ],
        ] {
            let out = ping(args.clone()).await;
            assert!(
                out.status.success(),
                "{name} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                "ok\n",
                "{name} {args:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ping_fails_with_the_reason_when_nothing_answers_ok() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    // Something that is not a MongoDB server: it answers with an HTTP status line, whose first
    // four bytes, read as a message length, are far past the 48 MB limit.
    let http = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http_port = http.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = http.accept() {
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    // (arguments, part of the reason on standard error)
    let table = [
        (
            vec!["--port".to_owned(), closed_port.to_string()],
            format!("127.0.0.1:{closed_port}: "),
        ),
        (
            vec!["--port".to_owned(), http_port.to_string()],
            "not a MongoDB reply".to_owned(),
        ),
        (
            vec![
                "--uri".to_owned(),
                "mongodb://localhost/?ssl=true".to_owned(),
            ],
            "ping does not speak TLS".to_owned(),
        ),
    ];
    for (args, reason) in table {
        let out = ping(args.clone()).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(&reason), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
