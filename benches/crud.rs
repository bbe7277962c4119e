//! CRUD throughput and latency through the Rust driver, against an in-process mayfly server (a
//! fresh data directory) or any server given with `--uri`.
//!
//! `cargo bench --bench crud -- [--connections 32] [--seconds 5] [--docs 100000] [--uri URI]
//! [--cosmos] [--repl-set NAME]`
//!
//! Phases, each run by `--connections` concurrent tasks sharing one driver client whose pool
//! holds that many connections: durable `insert_one`, `insert_many` in batches of 1,000,
//! `find_one` by `_id`, `update_one` `$inc` by `_id`, and a full scan of a `--docs` collection.
//! A phase whose command fails (say, not implemented yet) prints `skipped: <error>`.
//! Measures only: nothing here asserts on time.

mod common;

use clap::Parser;
use common::{
    full_scan, load, millis, per_op, percentile, pick, writer_counters, BoxError, Outcome,
    PhaseResult, Target, BATCH,
};
use mongodb::bson::{doc, Document};
use mongodb::Client;
use std::time::Duration;

const DB: &str = "mayfly_bench";

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
    /// Run the in-process server as `--compat cosmos` does (replica set `globaldb`, the Cosmos
    /// rules, request units charged per command).
    #[arg(long)]
    cosmos: bool,
    /// Run the in-process server as the one member of this replica set (`--replSet`), to
    /// compare with `--cosmos`, which implies one.
    #[arg(long)]
    repl_set: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let (cosmos, repl_set) = (args.cosmos, args.repl_set.clone());
    let target = Target::start_configured(args.uri.as_deref(), args.connections, move |config| {
        if cosmos {
            config.profile = mayfly::profile::Profile::cosmos(mayfly::profile::CosmosVersion::V7_0);
            config.replication.set_name = Some("globaldb".to_owned());
        }
        if let Some(name) = repl_set {
            config.replication.set_name = Some(name);
        }
    })
    .await?;
    let client = target.client.clone();
    let db = client.database(DB);
    db.drop().await?;
    let phase = Duration::from_secs_f64(args.seconds);
    println!(
        "mayfly crud bench: {} connections, {:.1} s per phase, {} documents to scan, {}",
        args.connections,
        args.seconds,
        args.docs,
        target.describe()
    );

    let mut results: Vec<Measured> = Vec::new();
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
        let seconds = load(&scan, args.docs, scan_doc).await?;
        println!(
            "loaded {} documents for the read phases in {seconds:.1} s",
            args.docs
        );
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
        results.push(measured(&client, full_scan("full scan (docs)", &scan, phase)).await);
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

/// A document of the read, update and scan collection.
fn scan_doc(id: i64) -> Document {
    doc! {"_id": id, "n": 0, "s": format!("scan-document-{id:012}")}
}

/// A phase's outcome with the server's group-commit counters over it (`serverStatus.writer`
/// deltas: groups, jobs, syncs), `None` when the server does not report them.
type Measured = Result<(Outcome, Option<[i64; 3]>), (&'static str, String)>;

/// Runs a phase and attaches the server's group-commit counters over it.
async fn measured(
    client: &Client,
    phase: impl std::future::Future<Output = PhaseResult>,
) -> Measured {
    let before = writer_counters(client).await;
    let outcome = phase.await?;
    let writer = match (before, writer_counters(client).await) {
        (Some(b), Some(a)) => Some([a[0] - b[0], a[1] - b[1], a[2] - b[2]]),
        _ => None,
    };
    Ok((outcome, writer))
}

fn print_table(results: &[Measured]) {
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
            Ok((o, writer)) => {
                let rate = o.rate();
                let (syncs, per_group) = match *writer {
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
