//! The query engine's figures: indexed equality against a forced scan, range + sort + limit
//! through an index, the full scan through the executor (in the engine and through the driver),
//! `ping` latency while other connections scan, and another client's inserts while an index
//! builds.
//!
//! `cargo bench --bench query -- [--part engine|eq|range|count|ping|build] [--docs 1000000]
//!   [--connections 32] [--seconds 5] [--uri URI]`
//!
//! Documents are about 200 bytes: `{_id, k: _id % (docs / 10), r: _id, g, name, city, pad}`,
//! so an equality on `k` returns about 10 documents. Measures only: nothing here asserts on time.

mod common;

use clap::Parser;
use common::{load, millis, per_op, percentile, pick, BoxError, Target, BATCH};
use futures::TryStreamExt;
use mayfly::clock::SystemClock;
use mayfly::engine::exec::{Hint, ReadRequest};
use mayfly::engine::{ddl, documents::collection, Engine, Interrupt};
use mongodb::bson::{doc, Document};
use mongodb::options::Hint as DriverHint;
use mongodb::{Collection, IndexModel};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DB: &str = "mayfly_bench_query";

#[derive(Debug, Parser)]
struct Args {
    /// Run only this part: engine, eq, range, count, ping or build.
    #[arg(long)]
    part: Option<String>,
    /// Documents in the collection.
    #[arg(long, default_value_t = 1_000_000)]
    docs: i64,
    /// Concurrent connections of the throughput phases.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds per phase.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Benchmark this server instead of starting one in-process.
    #[arg(long)]
    uri: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

const CITIES: [&str; 8] = [
    "Lisbon", "Osaka", "Lagos", "Quito", "Oslo", "Perth", "Dakar", "Hanoi",
];

fn make_doc(docs: i64) -> impl Fn(i64) -> Document {
    let keys = (docs / 10).max(1);
    move |i| {
        doc! {
            "_id": i,
            "k": i % keys,
            "r": i,
            "g": i % 1000,
            "name": format!("user-{i:07}"),
            "city": CITIES[(i % 8) as usize],
            "pad": "x".repeat(100),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let wants = |part: &str| args.part.as_deref().is_none_or(|p| p == part);
    println!(
        "mayfly query bench: {} documents, {} connections, {:.1} s per phase",
        args.docs, args.connections, args.seconds
    );
    if wants("engine") {
        engine_scan(&args).await?;
    }
    let driver_parts = ["eq", "range", "count", "ping", "build"];
    if !driver_parts.iter().any(|p| wants(p)) {
        return Ok(());
    }
    let target = Target::start(args.uri.as_deref(), false, args.connections + 8).await?;
    println!("server: {}", target.describe());
    let db = target.client.database(DB);
    db.drop().await?;
    let coll = db.collection::<Document>("c");
    let seconds = load_docs(&coll, args.docs).await?;
    println!(
        "loaded {} documents in {:.1} s ({:.0} docs/s)",
        args.docs,
        seconds,
        args.docs as f64 / seconds
    );
    let t = Instant::now();
    coll.create_indexes([
        IndexModel::builder().keys(doc! {"k": 1}).build(),
        IndexModel::builder().keys(doc! {"r": 1}).build(),
    ])
    .await?;
    println!("indexed k and r in {:.1} s", t.elapsed().as_secs_f64());
    let phase = Duration::from_secs_f64(args.seconds);
    if wants("eq") {
        equality(&coll, &args, phase).await?;
    }
    if wants("range") {
        range(&coll, &args, phase).await?;
    }
    if wants("count") {
        count_scan(&coll, &args).await?;
    }
    if wants("ping") {
        ping_during_scans(&target, &coll, phase).await?;
    }
    if wants("build") {
        insert_during_build(&target, &coll, &args).await?;
    }
    Ok(())
}

async fn load_docs(coll: &Collection<Document>, docs: i64) -> Result<f64, BoxError> {
    // `load` takes a plain fn: the key space is derived from the global count instead.
    static DOCS: AtomicU64 = AtomicU64::new(0);
    DOCS.store(docs as u64, Ordering::Relaxed);
    fn make(i: i64) -> Document {
        make_doc(DOCS.load(Ordering::Relaxed) as i64)(i)
    }
    load(coll, docs, make).await
}

/// An equality on `k` (about 10 documents) through the index, then forced to scan.
async fn equality(
    coll: &Collection<Document>,
    args: &Args,
    phase: Duration,
) -> Result<(), BoxError> {
    let keys = (args.docs / 10).max(1) as u64;
    let fetch = |coll: Collection<Document>, k: i64, hint: Option<DriverHint>| async move {
        let mut find = coll.find(doc! {"k": k});
        if let Some(h) = hint {
            find = find.hint(h);
        }
        let docs: Vec<Document> = find.await?.try_collect().await?;
        Ok::<u64, mongodb::error::Error>(docs.len() as u64)
    };
    // One client, one query at a time: indexed versus forced collection scan.
    let mut indexed = Vec::new();
    let mut returned = 0;
    for i in 0..200u64 {
        let t = Instant::now();
        returned += fetch(coll.clone(), pick(0, i, keys), None).await?;
        indexed.push(t.elapsed());
    }
    let mut scanned = Vec::new();
    for i in 0..3u64 {
        let t = Instant::now();
        fetch(
            coll.clone(),
            pick(1, i, keys),
            Some(DriverHint::Keys(doc! {"$natural": 1})),
        )
        .await?;
        scanned.push(t.elapsed());
    }
    indexed.sort_unstable();
    scanned.sort_unstable();
    let (ix, scan) = (percentile(&indexed, 0.5), percentile(&scanned, 0.5));
    println!(
        "\nequality on k ({:.1} documents each), one client: indexed median {}, forced scan median {}: {:.0}x",
        returned as f64 / 200.0,
        millis(ix),
        millis(scan),
        scan.as_secs_f64() / ix.as_secs_f64()
    );
    let c = coll.clone();
    let outcome = per_op(
        "find {k: v} (index)",
        args.connections,
        phase,
        move |task, i| {
            let coll = c.clone();
            let k = pick(task, i, keys);
            async move {
                let docs: Vec<Document> = coll.find(doc! {"k": k}).await?.try_collect().await?;
                std::hint::black_box(docs.len());
                Ok(1)
            }
        },
    )
    .await
    .map_err(|(n, e)| format!("{n}: {e}"))?;
    report(&outcome, args.connections);
    Ok(())
}

/// `r >= x`, sorted by `r`, limit 10: served in order by the index on `r`.
async fn range(coll: &Collection<Document>, args: &Args, phase: Duration) -> Result<(), BoxError> {
    let docs = args.docs as u64;
    let c = coll.clone();
    let outcome = per_op(
        "find {r: {$gte: x}} sort r limit 10",
        args.connections,
        phase,
        move |task, i| {
            let coll = c.clone();
            let from = pick(task, i, docs);
            async move {
                let found: Vec<Document> = coll
                    .find(doc! {"r": {"$gte": from}})
                    .sort(doc! {"r": 1})
                    .limit(10)
                    .await?
                    .try_collect()
                    .await?;
                std::hint::black_box(found.len());
                Ok(1)
            }
        },
    )
    .await
    .map_err(|(n, e)| format!("{n}: {e}"))?;
    report(&outcome, args.connections);
    Ok(())
}

/// `count` with a filter that matches nothing: every document is examined.
async fn count_scan(coll: &Collection<Document>, args: &Args) -> Result<(), BoxError> {
    let mut times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let n = coll.count_documents(doc! {"city": "Atlantis"}).await?;
        assert_eq!(n, 0);
        times.push(t.elapsed());
    }
    times.sort_unstable();
    let median = percentile(&times, 0.5);
    println!(
        "\ncount with a filter matching nothing, through the driver: median {} for {} documents ({:.0} docs/s examined)",
        millis(median),
        args.docs,
        args.docs as f64 / median.as_secs_f64()
    );
    let db = coll.client().database(DB);
    let mut estimated = Vec::new();
    let mut stats = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let n = coll.estimated_document_count().await?;
        assert_eq!(n, args.docs as u64);
        estimated.push(t.elapsed());
        let t = Instant::now();
        db.run_command(doc! {"collStats": coll.name()}).await?;
        stats.push(t.elapsed());
    }
    estimated.sort_unstable();
    stats.sort_unstable();
    println!(
        "estimatedDocumentCount (count with an empty query): median {}; collStats: median {}",
        millis(percentile(&estimated, 0.5)),
        millis(percentile(&stats, 0.5))
    );
    Ok(())
}

/// `ping` latencies from one client while 4 other connections run full-scan counts.
async fn ping_during_scans(
    target: &Target,
    coll: &Collection<Document>,
    phase: Duration,
) -> Result<(), BoxError> {
    let stop = Arc::new(AtomicBool::new(false));
    let scans = Arc::new(AtomicU64::new(0));
    let mut scanners = Vec::new();
    for _ in 0..4 {
        let (coll, stop, scans) = (coll.clone(), stop.clone(), scans.clone());
        scanners.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if coll
                    .count_documents(doc! {"city": "Atlantis"})
                    .await
                    .is_ok()
                {
                    scans.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let admin = target.client.database("admin");
    let mut latencies = Vec::new();
    let deadline = Instant::now() + phase;
    while Instant::now() < deadline {
        let t = Instant::now();
        admin.run_command(doc! {"ping": 1}).await?;
        latencies.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for s in scanners {
        let _ = s.await;
    }
    latencies.sort_unstable();
    println!(
        "\nping while 4 connections scan ({} full scans done): {} pings, p50 {}, p99 {}, max {}",
        scans.load(Ordering::Relaxed),
        latencies.len(),
        millis(percentile(&latencies, 0.5)),
        millis(percentile(&latencies, 0.99)),
        millis(percentile(&latencies, 1.0))
    );
    Ok(())
}

/// Another client's durable `insert_one` latencies while an index is built on the collection.
async fn insert_during_build(
    target: &Target,
    coll: &Collection<Document>,
    args: &Args,
) -> Result<(), BoxError> {
    let other = target.client.database(DB).collection::<Document>("other");
    // Before the build: the baseline.
    let baseline = timed_inserts(&other, Duration::from_secs(2), 0).await?;
    let building = Arc::new(AtomicBool::new(true));
    let inserter = {
        let (other, building) = (other.clone(), building.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 1_000_000_000i64;
            while building.load(Ordering::Relaxed) {
                let t = Instant::now();
                other.insert_one(doc! {"_id": i}).await?;
                latencies.push(t.elapsed());
                i += 1;
            }
            Ok::<_, mongodb::error::Error>(latencies)
        })
    };
    let t = Instant::now();
    coll.create_index(IndexModel::builder().keys(doc! {"g": 1, "name": 1}).build())
        .await?;
    let build = t.elapsed();
    building.store(false, Ordering::Relaxed);
    let mut during = inserter.await??;
    during.sort_unstable();
    println!(
        "\nindex build on {} documents: {:.1} s; another client's insert_one: baseline p99 {}, during the build p50 {}, p99 {}, max {} ({} inserts)",
        args.docs,
        build.as_secs_f64(),
        millis(percentile(&baseline, 0.99)),
        millis(percentile(&during, 0.5)),
        millis(percentile(&during, 0.99)),
        millis(percentile(&during, 1.0)),
        during.len()
    );
    Ok(())
}

async fn timed_inserts(
    coll: &Collection<Document>,
    phase: Duration,
    first: i64,
) -> Result<Vec<Duration>, BoxError> {
    let mut latencies = Vec::new();
    let deadline = Instant::now() + phase;
    let mut i = first;
    while Instant::now() < deadline {
        let t = Instant::now();
        coll.insert_one(doc! {"_id": i}).await?;
        latencies.push(t.elapsed());
        i += 1;
    }
    latencies.sort_unstable();
    Ok(latencies)
}

fn report(outcome: &common::Outcome, connections: usize) {
    println!(
        "{} from {} connections: {:.0} {}, p50 {}, p99 {}",
        outcome.name,
        connections,
        outcome.rate(),
        outcome.unit,
        millis(percentile(&outcome.latencies, 0.5)),
        millis(percentile(&outcome.latencies, 0.99))
    );
}

/// The executor's full scan without driver or network: documents per second through the plan
/// (a collection scan returning every document), and a count whose filter matches nothing.
async fn engine_scan(args: &Args) -> Result<(), BoxError> {
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path(), Arc::new(SystemClock::new()))?;
    let meta = engine
        .write(true, |txn, _| ddl::ensure_collection(txn, DB, "scan"))
        .await??
        .0;
    let make = make_doc(args.docs);
    for start in (0..args.docs).step_by(BATCH * 10) {
        let end = (start + BATCH as i64 * 10).min(args.docs);
        let docs: Vec<Document> = (start..end).map(&make).collect();
        let meta = meta.clone();
        engine
            .write(false, move |txn, now| {
                docs.iter()
                    .try_for_each(|d| collection::insert(txn, &meta, d, now))
            })
            .await??;
    }
    let run = |filter: Document, decode: bool| -> Result<(u64, f64), BoxError> {
        let view = engine.read().unwrap();
        let meta = view.collection(DB, "scan");
        let mut req = ReadRequest::new(filter)?;
        req.hint = Some(Hint::Natural { reverse: false });
        req.decode = decode;
        let t = Instant::now();
        let execution = view.execute(meta.as_deref(), &req, view.now_cell(), Interrupt::none())?;
        let mut n = 0u64;
        for d in execution.docs {
            std::hint::black_box(d?);
            n += 1;
        }
        Ok((n, t.elapsed().as_secs_f64()))
    };
    // Every document decoded (find), every document counted (count), and a filter that
    // matches none (each document examined).
    let mut times: [Vec<f64>; 3] = Default::default();
    for _ in 0..5 {
        times[0].push(run(doc! {}, true)?.1);
        times[1].push(run(doc! {}, false)?.1);
        times[2].push(run(doc! {"city": "Atlantis"}, false)?.1);
    }
    for t in &mut times {
        t.sort_by(f64::total_cmp);
    }
    let rate = |t: &[f64]| args.docs as f64 / t[2];
    println!(
        "\nin-engine full scan through the executor ({} documents, median of 5): every document decoded {:.0} docs/s, counted {:.0} docs/s, a filter matching none {:.0} docs/s examined",
        args.docs,
        rate(&times[0]),
        rate(&times[1]),
        rate(&times[2])
    );
    Ok(())
}
