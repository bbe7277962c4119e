//! What the benchmarks share: an in-process server on a fresh data directory (or any server
//! given by URI), bulk loading, concurrent per-operation runs, a full-scan loop, percentiles.
//! Measures only: nothing here asserts on time.
// Each benchmark uses only some of these helpers.
#![allow(dead_code)]

pub mod replset;

use futures::TryStreamExt;
use mayfly::clock::SystemClock;
use mayfly::config::Config;
use mayfly::server::{RunningServer, Server};
use mongodb::bson::{doc, Document};
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The server binary's allocator, so an in-process server measures what `mayfly` runs.
#[global_allocator]
static ALLOCATOR: mayfly::allocation::Metered<mimalloc::MiMalloc> =
    mayfly::allocation::Metered(mimalloc::MiMalloc);

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Documents per `insert_many` when loading.
pub const BATCH: usize = 1000;

/// The server a benchmark drives; an in-process one lives (with its directory) as long as this.
pub struct Target {
    pub uri: String,
    pub client: Client,
    _server: Option<RunningServer>,
    _dir: Option<tempfile::TempDir>,
}

impl Target {
    /// Connects to `uri`, or starts a server in-process on the system clock (with the test
    /// commands when `test_commands`). The client's pool holds `connections` connections.
    pub async fn start(
        uri: Option<&str>,
        test_commands: bool,
        connections: usize,
    ) -> Result<Target, BoxError> {
        Target::start_configured(uri, connections, |config| {
            config.enable_test_commands = test_commands;
        })
        .await
    }

    /// [`Target::start`] with the in-process server's configuration adjusted. Retryable writes
    /// are off, as in Cosmos DB's connection strings (a replica-set member would otherwise get
    /// a `txnNumber` with every write).
    pub async fn start_configured(
        uri: Option<&str>,
        connections: usize,
        adjust: impl FnOnce(&mut Config),
    ) -> Result<Target, BoxError> {
        let (server, dir, uri) = match uri {
            Some(uri) => (None, None, uri.to_owned()),
            None => {
                // As the server binary does at start.
                mayfly::host::disable_transparent_huge_pages()?;
                let dir = tempfile::tempdir()?;
                let mut config = Config::for_tests(dir.path());
                adjust(&mut config);
                let server = Server::bind(config, Arc::new(SystemClock::new()))
                    .await?
                    .spawn();
                let addr = server.addr().ok_or("the server has no address")?;
                let uri = format!("mongodb://{addr}/?directConnection=true");
                (Some(server), Some(dir), uri)
            }
        };
        let mut options = ClientOptions::parse(&uri).await?;
        options.max_pool_size = Some(connections as u32);
        options.min_pool_size = Some(connections as u32);
        options.retry_writes = Some(false);
        let client = Client::with_options(options)?;
        Ok(Target {
            uri,
            client,
            _server: server,
            _dir: dir,
        })
    }

    /// How the server is named in a report's first line.
    pub fn describe(&self) -> &str {
        if self._server.is_some() {
            "in-process server"
        } else {
            &self.uri
        }
    }
}

/// A pseudo-random integer in `0..n` (xorshift on the task and step; no RNG crate needed).
pub fn pick(task: usize, i: u64, n: u64) -> i64 {
    let mut x = (task as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_add(1);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    (x % n.max(1)) as i64
}

/// Fills `coll` with `make(_id)` for `_id` in `0..docs`, in batches of [`BATCH`] from up to 8
/// tasks; returns the seconds it took.
pub async fn load(
    coll: &Collection<Document>,
    docs: i64,
    make: impl Fn(i64) -> Document + Copy + Send + 'static,
) -> Result<f64, BoxError> {
    const TASKS: i64 = 8;
    let started = Instant::now();
    let batches = (docs + BATCH as i64 - 1) / BATCH as i64;
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let coll = coll.clone();
        handles.push(tokio::spawn(async move {
            let mut b = t;
            while b < batches {
                let start = b * BATCH as i64;
                let end = (start + BATCH as i64).min(docs);
                coll.insert_many((start..end).map(make)).await?;
                b += TASKS;
            }
            Ok::<(), mongodb::error::Error>(())
        }));
    }
    for h in handles {
        h.await??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// One phase's result: units (operations or documents) done, the time taken, per-operation
/// latencies (sorted).
pub struct Outcome {
    pub name: &'static str,
    pub unit: &'static str,
    pub count: u64,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
}

impl Outcome {
    pub fn rate(&self) -> f64 {
        self.count as f64 / self.elapsed.as_secs_f64()
    }
}

pub type PhaseResult = Result<Outcome, (&'static str, String)>;

/// Runs `op(task, i)` from `tasks` concurrent tasks until `phase` has passed; each operation
/// returns how many units (operations or documents) it did. The first error skips the phase.
pub async fn per_op<F, Fut>(name: &'static str, tasks: usize, phase: Duration, op: F) -> PhaseResult
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = mongodb::error::Result<u64>> + Send + 'static,
{
    let op = Arc::new(op);
    let started = Instant::now();
    let deadline = started + phase;
    let mut handles = Vec::new();
    for task in 0..tasks {
        let op = op.clone();
        handles.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut units = 0u64;
            let mut i = 0u64;
            while Instant::now() < deadline {
                let t = Instant::now();
                units += op(task, i).await.map_err(|e| e.to_string())?;
                latencies.push(t.elapsed());
                i += 1;
            }
            Ok::<_, String>((units, latencies))
        }));
    }
    let mut count = 0;
    let mut latencies = Vec::new();
    let mut failure = None;
    for h in handles {
        match h.await {
            Ok(Ok((units, lat))) => {
                count += units;
                latencies.extend(lat);
            }
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(e) => failure = failure.or(Some(e.to_string())),
        }
    }
    let elapsed = started.elapsed();
    if let Some(e) = failure {
        return Err((name, e));
    }
    latencies.sort_unstable();
    Ok(Outcome {
        name,
        unit: if name.contains("docs") {
            "docs/s"
        } else {
            "ops/s"
        },
        count,
        elapsed,
        latencies,
    })
}

/// Reads all of `coll` with one cursor, again and again until `phase` has passed; the rate
/// counts documents and the latencies are per full pass.
pub async fn full_scan(
    name: &'static str,
    coll: &Collection<Document>,
    phase: Duration,
) -> PhaseResult {
    let started = Instant::now();
    let mut count = 0u64;
    let mut latencies = Vec::new();
    loop {
        let t = Instant::now();
        let docs: Vec<Document> = async { coll.find(doc! {}).await?.try_collect().await }
            .await
            .map_err(|e: mongodb::error::Error| (name, e.to_string()))?;
        count += docs.len() as u64;
        latencies.push(t.elapsed());
        if started.elapsed() >= phase {
            break;
        }
    }
    latencies.sort_unstable();
    Ok(Outcome {
        name,
        unit: "docs/s",
        count,
        elapsed: started.elapsed(),
        latencies,
    })
}

/// The `p` quantile (0..=1) of sorted latencies.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

pub fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// `serverStatus.writer` {groups, jobs, syncs}, if the server reports it.
pub async fn writer_counters(client: &Client) -> Option<[i64; 3]> {
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .ok()?;
    let w = status.get_document("writer").ok()?;
    Some([
        w.get_i64("groups").ok()?,
        w.get_i64("jobs").ok()?,
        w.get_i64("syncs").ok()?,
    ])
}
