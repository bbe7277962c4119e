//! CRUD throughput and latency through the Rust driver, against an in-process mayfly server (a
//! fresh data directory) or any server given with `--uri`.
//!
//! `cargo bench --bench crud -- [--connections 32] [--seconds 5] [--docs 100000] [--uri URI]`
//!
//! Phases, each run by `--connections` concurrent tasks sharing one driver client whose pool
//! holds that many connections: durable `insert_one`, `insert_many` in batches of 1,000,
//! `find_one` by `_id`, `update_one` `$inc` by `_id`, and a full scan of a `--docs` collection.
//! A phase whose command fails (say, not implemented yet) prints `skipped: <error>`.
//! Measures only: nothing here asserts on time.

use clap::Parser;
use futures::TryStreamExt;
use mayfly::clock::SystemClock;
use mayfly::config::Config;
use mayfly::server::Server;
use mongodb::bson::{doc, Document};
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DB: &str = "mayfly_bench";
const BATCH: usize = 1000;

#[derive(Debug, Parser)]
struct Args {
    /// Concurrent connections (one task each).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds per phase.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Documents in the collection the read, update and scan phases use.
    #[arg(long, default_value_t = 100_000)]
    docs: i64,
    /// Benchmark this server instead of starting one in-process.
    #[arg(long)]
    uri: Option<String>,
    /// Run only these phases (comma-separated: insert_one, insert_many, find_one, update_one,
    /// scan); all by default. Handy for profiling one phase.
    #[arg(long, value_delimiter = ',')]
    phases: Vec<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One phase's result: operations (or documents) done, the time taken, per-operation latencies.
struct Outcome {
    name: &'static str,
    unit: &'static str,
    count: u64,
    elapsed: Duration,
    latencies: Vec<Duration>,
    /// The server's group-commit counters over the phase (`serverStatus.writer` deltas):
    /// groups, jobs, syncs. `None` when the server does not report them.
    writer: Option<[i64; 3]>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let (_server, _dir, uri) = match &args.uri {
        Some(uri) => (None, None, uri.clone()),
        None => {
            let dir = tempfile::tempdir()?;
            let mut config = Config::for_tests(dir.path());
            config.enable_test_commands = false;
            let server = Server::bind(config, Arc::new(SystemClock::new()))
                .await?
                .spawn();
            let addr = server.addr().ok_or("the server has no address")?;
            let uri = format!("mongodb://{addr}/?directConnection=true");
            (Some(server), Some(dir), uri)
        }
    };
    let mut options = ClientOptions::parse(&uri).await?;
    options.max_pool_size = Some(args.connections as u32);
    options.min_pool_size = Some(args.connections as u32);
    let client = Client::with_options(options)?;
    let db = client.database(DB);
    db.drop().await?;
    let phase = Duration::from_secs_f64(args.seconds);
    println!(
        "mayfly crud bench: {} connections, {:.1} s per phase, {} documents to scan, {}",
        args.connections,
        args.seconds,
        args.docs,
        if args.uri.is_some() {
            uri.as_str()
        } else {
            "in-process server"
        }
    );

    let mut results: Vec<Result<Outcome, (&'static str, String)>> = Vec::new();
    let wants = |phase: &str| args.phases.is_empty() || args.phases.iter().any(|p| p == phase);
    if wants("insert_one") {
        let small = db.collection::<Document>("insert_one");
        results.push(
            measured(
                &client,
                per_op(
                    "insert_one (durable)",
                    args.connections,
                    phase,
                    move |task, i| {
                        let coll = small.clone();
                        async move { coll.insert_one(small_doc(task, i)).await.map(|_| 1) }
                    },
                ),
            )
            .await,
        );
    }
    if wants("insert_many") {
        let many = db.collection::<Document>("insert_many");
        results.push(
            measured(
                &client,
                per_op(
                    "insert_many x1000 (docs)",
                    args.connections,
                    phase,
                    move |task, i| {
                        let coll = many.clone();
                        let docs: Vec<Document> = (0..BATCH as u64)
                            .map(|k| small_doc(task, i * BATCH as u64 + k))
                            .collect();
                        async move { coll.insert_many(docs).await.map(|_| BATCH as u64) }
                    },
                ),
            )
            .await,
        );
    }
    let scan = db.collection::<Document>("scan");
    if ["find_one", "update_one", "scan"].iter().any(|p| wants(p)) {
        load(&scan, args.docs, args.connections).await?;
    }
    let docs = args.docs.max(1) as u64;
    if wants("find_one") {
        results.push(
            measured(
                &client,
                per_op("find_one by _id", args.connections, phase, {
                    let scan = scan.clone();
                    move |task, i| {
                        let coll = scan.clone();
                        let id = pick(task, i, docs);
                        async move {
                            match coll.find_one(doc! {"_id": id}).await? {
                                Some(_) => Ok(1),
                                None => Err(mongodb::error::Error::custom(format!(
                                    "_id {id} not found"
                                ))),
                            }
                        }
                    }
                }),
            )
            .await,
        );
    }
    if wants("update_one") {
        results.push(
            measured(
                &client,
                per_op("update_one $inc by _id", args.connections, phase, {
                    let scan = scan.clone();
                    move |task, i| {
                        let coll = scan.clone();
                        let id = pick(task, i, docs);
                        async move {
                            let r = coll
                                .update_one(doc! {"_id": id}, doc! {"$inc": {"n": 1}})
                                .await?;
                            Ok(r.matched_count)
                        }
                    }
                }),
            )
            .await,
        );
    }
    if wants("scan") {
        results.push(measured(&client, full_scan(&scan, phase)).await);
    }

    print_table(&results);
    Ok(())
}

/// A small document (about 100 bytes of BSON), unique per (task, i).
fn small_doc(task: usize, i: u64) -> Document {
    doc! {
        "_id": (task as i64) << 40 | i as i64,
        "task": task as i32,
        "i": i as i64,
        "s": "mayfly-bench-payload-0123456789abcdefghijklmnopqrstuvwxyz",
    }
}

/// A pseudo-random `_id` in `0..docs` (xorshift on the task and step; no RNG crate needed).
fn pick(task: usize, i: u64, docs: u64) -> i64 {
    let mut x = (task as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_add(1);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    (x % docs) as i64
}

/// Fills the scan collection with `_id` 0..docs in batches of 1,000 from several tasks.
async fn load(coll: &Collection<Document>, docs: i64, tasks: usize) -> Result<(), BoxError> {
    let started = Instant::now();
    let batches = (docs + BATCH as i64 - 1) / BATCH as i64;
    let mut handles = Vec::new();
    for t in 0..tasks.clamp(1, 8) as i64 {
        let coll = coll.clone();
        handles.push(tokio::spawn(async move {
            let mut b = t;
            while b < batches {
                let start = b * BATCH as i64;
                let end = (start + BATCH as i64).min(docs);
                let batch: Vec<Document> = (start..end)
                    .map(|id| doc! {"_id": id, "n": 0, "s": format!("scan-document-{id:012}")})
                    .collect();
                coll.insert_many(batch).await?;
                b += tasks.clamp(1, 8) as i64;
            }
            Ok::<(), mongodb::error::Error>(())
        }));
    }
    for h in handles {
        h.await??;
    }
    println!(
        "loaded {docs} documents for the read phases in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs `op(task, i)` from `tasks` concurrent tasks until `phase` has passed; each operation
/// returns how many units (operations or documents) it did. The first error skips the phase.
async fn per_op<F, Fut>(
    name: &'static str,
    tasks: usize,
    phase: Duration,
    op: F,
) -> Result<Outcome, (&'static str, String)>
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
        writer: None,
    })
}

/// Reads the whole scan collection with one cursor, again and again until `phase` has passed.
async fn full_scan(
    coll: &Collection<Document>,
    phase: Duration,
) -> Result<Outcome, (&'static str, String)> {
    let name = "full scan (docs)";
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
        writer: None,
    })
}

/// `serverStatus.writer` {groups, jobs, syncs}, if the server reports it.
async fn writer_counters(client: &Client) -> Option<[i64; 3]> {
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

/// Runs a phase and attaches the server's group-commit counters over it.
async fn measured(
    client: &Client,
    phase: impl std::future::Future<Output = Result<Outcome, (&'static str, String)>>,
) -> Result<Outcome, (&'static str, String)> {
    let before = writer_counters(client).await;
    let mut outcome = phase.await?;
    if let (Some(b), Some(a)) = (before, writer_counters(client).await) {
        outcome.writer = Some([a[0] - b[0], a[1] - b[1], a[2] - b[2]]);
    }
    Ok(outcome)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn print_table(results: &[Result<Outcome, (&'static str, String)>]) {
    println!();
    println!(
        "| {:<26} | {:>14} | {:>10} | {:>10} | {:>10} | {:>8} | {:>10} |",
        "phase", "rate", "count", "p50", "p99", "syncs", "jobs/group"
    );
    println!(
        "|{:-<28}|{:->16}|{:->12}|{:->12}|{:->12}|{:->10}|{:->12}|",
        "", "", "", "", "", "", ""
    );
    for result in results {
        match result {
            Ok(o) => {
                let rate = o.count as f64 / o.elapsed.as_secs_f64();
                let (syncs, per_group) = match o.writer {
                    Some([groups, jobs, syncs]) if groups > 0 => (
                        syncs.to_string(),
                        format!("{:.1}", jobs as f64 / groups as f64),
                    ),
                    Some(_) => ("0".to_owned(), "-".to_owned()),
                    None => ("?".to_owned(), "?".to_owned()),
                };
                println!(
                    "| {:<26} | {:>14} | {:>10} | {:>10} | {:>10} | {:>8} | {:>10} |",
                    o.name,
                    format!("{rate:.0} {}", o.unit),
                    o.count,
                    millis(percentile(&o.latencies, 0.50)),
                    millis(percentile(&o.latencies, 0.99)),
                    syncs,
                    per_group,
                );
            }
            Err((name, e)) => {
                let e: String = e.chars().take(120).collect();
                println!("| {name:<26} | skipped: {e} |");
            }
        }
    }
}
