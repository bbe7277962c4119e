//! Shared set-up for integration tests: a mayfly server in-process on 127.0.0.1:0 with its own
//! data directory, and clients that reach it through the `mongodb` crate or raw wire messages.
#![allow(dead_code)]

use bson::Document;
use mayfly::clock::{Clock, ManualClock, SystemClock};
use mayfly::command::Shared;
use mayfly::config::Config;
use mayfly::server::{RunningServer, Server};
use mayfly::wire::client::{self, Reply};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub use mongodb::bson;
pub mod auth;
pub mod cosmos;
pub mod logs;
pub mod pipelines;
pub mod replset;
pub mod ttl;

pub struct TestServer {
    pub server: RunningServer,
    pub addr: SocketAddr,
    /// The server's one clock: it moves only through `advanceClock` (or `clock.advance`), so
    /// expiry tests are exact.
    pub clock: Arc<ManualClock>,
    dir: tempfile::TempDir,
    config: Config,
    /// The server's state, not kept alive by the test (a restart must close the engine).
    shared: std::sync::Weak<Shared>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::start_with(|_| {}).await
    }

    /// A server on the storage `MAYFLY_TEST_STORAGE` names (`memory`; otherwise on disk), so
    /// any test file can run against the in-memory backend.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::for_tests(dir.path());
        if std::env::var("MAYFLY_TEST_STORAGE").as_deref() == Ok("memory") {
            config.storage = mayfly::config::StorageKind::Memory;
        }
        adjust(&mut config);
        let clock = Arc::new(ManualClock::starting_at_secs(SystemClock::new().now_secs()));
        TestServer::launch(config, clock, dir).await
    }

    /// A server that keeps everything in memory (`--storage memory`).
    pub async fn start_memory() -> TestServer {
        TestServer::start_with(|c| c.storage = mayfly::config::StorageKind::Memory).await
    }

    /// The data directory (unused by a memory server).
    pub fn dbpath(&self) -> &std::path::Path {
        self.dir.path()
    }

    async fn launch(config: Config, clock: Arc<ManualClock>, dir: tempfile::TempDir) -> TestServer {
        let bound = Server::bind(config.clone(), clock.clone()).await.unwrap();
        let shared = Arc::downgrade(&bound.shared());
        let server = bound.spawn();
        let addr = server.addr().unwrap();
        TestServer {
            server,
            addr,
            clock,
            dir,
            config,
            shared,
        }
    }

    /// Shuts the server down gracefully and starts it again on the same data directory and
    /// clock (a new port).
    pub async fn restart(self) -> TestServer {
        let TestServer {
            server,
            clock,
            dir,
            config,
            shared,
            ..
        } = self;
        server.shutdown().await;
        // A background task (a session or cursor reaper) may hold the server's state for the
        // moment of its current pass after shutdown returns; the data directory is released
        // when that ends.
        for _ in 0..1000 {
            if shared.upgrade().is_none() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        TestServer::launch(config, clock, dir).await
    }

    /// The running server's state, to look at its engine directly (index consistency checks).
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.upgrade().expect("the server is running")
    }

    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.addr)
    }

    pub async fn client(&self) -> Client {
        self.client_with(|_| {}).await
    }

    pub async fn client_with(&self, adjust: impl FnOnce(&mut ClientOptions)) -> Client {
        let mut options = ClientOptions::parse(self.uri()).await.unwrap();
        options.server_selection_timeout = Some(std::time::Duration::from_secs(5));
        adjust(&mut options);
        Client::with_options(options).unwrap()
    }

    /// A raw connection for wire-level tests.
    pub async fn raw(&self) -> RawConnection {
        RawConnection {
            stream: TcpStream::connect(self.addr).await.unwrap(),
        }
    }
}

pub struct RawConnection {
    pub stream: TcpStream,
}

impl RawConnection {
    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Reads one reply, or `None` if the server closed the connection.
    pub async fn read(&mut self) -> Option<Reply> {
        let mut len = [0u8; 4];
        if self.stream.read_exact(&mut len).await.is_err() {
            return None;
        }
        let n = i32::from_le_bytes(len) as usize;
        let mut frame = len.to_vec();
        frame.resize(n, 0);
        self.stream.read_exact(&mut frame[4..]).await.ok()?;
        Some(client::read_reply(&frame).unwrap())
    }

    /// True when the server has closed the connection (EOF or reset), within five seconds.
    pub async fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        match tokio::time::timeout(
            std::time::Duration::from_secs(5),
            self.stream.read(&mut buf),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) | Err(_) => false,
        }
    }

    pub async fn command(&mut self, request_id: i32, body: &Document) -> Reply {
        let bytes = client::op_msg(request_id, body, &Default::default()).unwrap();
        self.send(&bytes).await;
        self.read().await.expect("a reply")
    }
}

/// The `code` of an error reply from the driver.
pub fn error_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => Some(c.code),
        _ => None,
    }
}

/// The running operations `currentOp` lists that match `filter` (its extra fields).
pub async fn current_ops(client: &Client, filter: Document) -> Vec<Document> {
    let mut command = bson::doc! {"currentOp": 1};
    command.extend(filter);
    let reply = client.database("admin").run_command(command).await.unwrap();
    reply
        .get_array("inprog")
        .unwrap()
        .iter()
        .filter_map(|op| op.as_document().cloned())
        .collect()
}

/// Polls [`current_ops`] (up to five seconds) until `pred` holds of them; returns them.
pub async fn wait_for_ops(
    client: &Client,
    filter: Document,
    pred: impl Fn(&[Document]) -> bool,
) -> Vec<Document> {
    let start = std::time::Instant::now();
    loop {
        let ops = current_ops(client, filter.clone()).await;
        if pred(&ops) {
            return ops;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "operations matching {filter} never reached the expected state: {ops:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
