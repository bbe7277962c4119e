//! What TTL costs, through the Rust driver, against an in-process mayfly server (a fresh data
//! directory) or any server given with `--uri` (started with `--enable-test-commands` for the
//! reaping part).
//!
//! `cargo bench --bench ttl -- [--part reads|engine|reaping] [--seconds 3] [--rounds 3] [--docs 100000]
//! [--reap-docs 1000000] [--reap-model ts|date] [--clients 16] [--connections 32] [--uri URI]`
//!
//! - **reads**: two collections holding the same `--docs` documents (every other one with its
//!   own `ttl`), one with a TTL index on `_ts` (a day, so nothing expires) and one without.
//!   `find_one` by `_id` from `--connections` tasks, then a full scan from one task, each run
//!   four times per round in the order off-on-on-off (on-off-off-on the next round), for
//!   `--rounds` rounds. Prints every run and each side's rate over all its runs, with the
//!   TTL-on/TTL-off difference.
//! - **engine**: the same two collections read straight through the storage engine in this
//!   process (no driver, no network): full scans and `get_by_id` at pseudo-random `_id`s,
//!   alternating off and on for `--rounds` × 10 passes. It isolates what TTL adds on the
//!   server (the visibility check) from the driver and scheduling noise of the two above.
//! - **reaping**: `--reap-docs` documents in a collection with a one-hour TTL, and `--clients`
//!   tasks each alternating a `find_one` and a durable `update_one` by `_id` on another
//!   collection. After `--seconds` of that (the baseline), `advanceClock` moves the server's
//!   clock an hour on, so every document expires at once, and the background reaper (running
//!   throughout) deletes them while the clients go on. Prints the reaping rate from the moment
//!   of expiry to the last deletion (polled from `serverStatus.metrics.ttl`) and the clients'
//!   latencies before and during reaping. `--reap-model date` does the same with MongoDB's model:
//!   a TTL index of an hour on the date field `createdAt`, which every document sets to the
//!   server's time at load, instead of the `_ts` index.
//!
//! Measures only: nothing here asserts on time.

mod common;

use clap::Parser;
use common::{
    full_scan, load, millis, per_op, percentile, pick, BoxError, PhaseResult, Target, BATCH,
};
use mayfly::clock::SystemClock;
use mayfly::engine::catalog::IndexMeta;
use mayfly::engine::{ddl, documents::collection, Engine};
use mongodb::bson::{doc, Bson, Document};
use mongodb::{Client, Collection};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DB: &str = "mayfly_bench_ttl";
/// The reaping part's collection TTL; the clock is moved just past it.
const REAP_TTL_SECS: i32 = 3600;

#[derive(Debug, Parser)]
struct Args {
    /// `reads`, `engine` or `reaping`; all three by default.
    #[arg(long)]
    part: Option<String>,
    /// Seconds per read phase, and of the reaping part's baseline.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Rounds of the read phases (each runs TTL off and on).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Documents in each read collection.
    #[arg(long, default_value_t = 100_000)]
    docs: i64,
    /// Documents that expire at once in the reaping part.
    #[arg(long, default_value_t = 1_000_000)]
    reap_docs: i64,
    /// The reaping part's TTL model: `ts` (a TTL index on `_ts`) or `date` (a TTL index on the
    /// date field `createdAt`).
    #[arg(long, default_value = "ts")]
    reap_model: String,
    /// Client tasks reading and writing during the reaping part.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Concurrent tasks (and pooled connections) of the find_one phases.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Benchmark this server instead of starting one in-process.
    #[arg(long)]
    uri: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let wants = |part: &str| args.part.as_deref().is_none_or(|p| p == part);
    let target = Target::start(
        args.uri.as_deref(),
        true,
        args.connections.max(args.clients + 2),
    )
    .await?;
    let db = target.client.database(DB);
    db.drop().await?;
    println!("mayfly ttl bench: {}", target.describe());
    if wants("reads") {
        reads(&target.client, &args).await?;
    }
    if wants("engine") {
        engine_reads(&args).await?;
    }
    if wants("reaping") {
        reaping(&target.client, &args).await?;
    }
    Ok(())
}

/// A read-part document; every other one carries its own `ttl` (two hours).
fn read_doc(id: i64) -> Document {
    let mut d = doc! {"_id": id, "n": 0, "s": format!("ttl-read-document-{id:012}")};
    if id % 2 == 1 {
        d.insert("ttl", 7200);
    }
    d
}

async fn reads(client: &Client, args: &Args) -> Result<(), BoxError> {
    let db = client.database(DB);
    let off = db.collection::<Document>("ttl_off");
    let on = db.collection::<Document>("ttl_on");
    db.run_command(doc! {
        "createIndexes": "ttl_on",
        "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 86_400}],
    })
    .await?;
    for coll in [&off, &on] {
        let seconds = load(coll, args.docs, read_doc).await?;
        println!(
            "loaded {} documents into {} in {seconds:.1} s",
            args.docs,
            coll.name()
        );
    }
    let phase = Duration::from_secs_f64(args.seconds);
    // [phase][0 = off, 1 = on]: units done and seconds taken, over every run.
    let mut totals = [[(0u64, 0f64); 2]; 2];
    let mut spread = [[(f64::MAX, 0f64); 2]; 2];
    println!();
    println!(
        "| {:<5} | {:<16} | {:<7} | {:>14} | {:>10} | {:>10} |",
        "round", "phase", "TTL", "rate", "p50", "p99"
    );
    println!(
        "|{:-<7}|{:-<18}|{:-<9}|{:->16}|{:->12}|{:->12}|",
        "", "", "", "", "", ""
    );
    for round in 0..args.rounds {
        // ABBA, flipped every round: a drift in the machine's speed weighs on both alike.
        let order = if round % 2 == 0 {
            [0, 1, 1, 0]
        } else {
            [1, 0, 0, 1]
        };
        for (p, total) in totals.iter_mut().enumerate() {
            for which in order {
                let coll = if which == 0 { &off } else { &on };
                let outcome = if p == 0 {
                    find_by_id(coll, args.connections, phase, args.docs).await
                } else {
                    full_scan("full scan (docs)", coll, phase).await
                }
                .map_err(|(_, e)| e)?;
                println!(
                    "| {:<5} | {:<16} | {:<7} | {:>14} | {:>10} | {:>10} |",
                    round + 1,
                    outcome.name,
                    if which == 0 { "off" } else { "on" },
                    format!("{:.0} {}", outcome.rate(), outcome.unit),
                    millis(percentile(&outcome.latencies, 0.50)),
                    millis(percentile(&outcome.latencies, 0.99)),
                );
                if let (Some(t), Some(s)) = (
                    total.get_mut(which),
                    spread.get_mut(p).and_then(|s| s.get_mut(which)),
                ) {
                    t.0 += outcome.count;
                    t.1 += outcome.elapsed.as_secs_f64();
                    *s = (s.0.min(outcome.rate()), s.1.max(outcome.rate()));
                }
            }
        }
    }
    println!();
    println!(
        "| {:<16} | {:>24} | {:>24} | {:>9} |",
        "all rounds", "TTL off (min..max)", "TTL on (min..max)", "on vs off"
    );
    println!("|{:-<18}|{:->26}|{:->26}|{:->11}|", "", "", "", "");
    for (p, name) in ["find_one by _id", "full scan (docs)"]
        .into_iter()
        .enumerate()
    {
        let [(off_n, off_s), (on_n, on_s)] = totals[p];
        let [(off_min, off_max), (on_min, on_max)] = spread[p];
        let (off, on) = (off_n as f64 / off_s, on_n as f64 / on_s);
        println!(
            "| {:<16} | {:>24} | {:>24} | {:>8.1}% |",
            name,
            format!("{off:.0} ({off_min:.0}..{off_max:.0})"),
            format!("{on:.0} ({on_min:.0}..{on_max:.0})"),
            (on / off - 1.0) * 100.0
        );
    }
    Ok(())
}

async fn find_by_id(
    coll: &Collection<Document>,
    tasks: usize,
    phase: Duration,
    docs: i64,
) -> PhaseResult {
    let coll = coll.clone();
    let docs = docs.max(1) as u64;
    per_op("find_one by _id", tasks, phase, move |task, i| {
        let coll = coll.clone();
        let id = pick(task, i, docs);
        async move {
            match coll.find_one(doc! {"_id": id}).await? {
                Some(_) => Ok(1),
                None => Err(mongodb::error::Error::custom(format!("_id {id} not found"))),
            }
        }
    })
    .await
}

/// The read collections loaded straight into an engine; times full scans and point reads of
/// each, alternating (ABBA) so a drift in the machine's speed weighs on both alike.
async fn engine_reads(args: &Args) -> Result<(), BoxError> {
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path(), Arc::new(SystemClock::new()))?;
    let mut metas = Vec::new();
    for (name, ttl) in [("ttl_off", None), ("ttl_on", Some(86_400))] {
        let meta = engine
            .write(true, move |txn, now| {
                let (meta, _) = ddl::ensure_collection(txn, DB, name)?;
                match ttl {
                    Some(seconds) => {
                        let index = IndexMeta {
                            expire_after_seconds: Some(seconds),
                            ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
                        };
                        ddl::create_index(txn, &meta, index, now)
                    }
                    None => Ok(meta),
                }
            })
            .await??;
        metas.push(meta);
    }
    // Loaded batch by batch in turn, so both collections share the same memtables and tables.
    for start in (0..args.docs).step_by(BATCH) {
        for meta in &metas {
            let meta = meta.clone();
            let end = (start + BATCH as i64).min(args.docs);
            engine
                .write(false, move |txn, now| {
                    (start..end)
                        .try_for_each(|id| collection::insert(txn, &meta, &read_doc(id), now))
                })
                .await??;
        }
    }
    // Each document's `documentKey`, as a lookup names it.
    let ids: Vec<Document> = (0..args.docs as u64)
        .map(|i| doc! {"_id": Bson::Int64(pick(0, i, args.docs as u64))})
        .collect();
    // [scan, get][0 = off, 1 = on]: seconds per pass.
    let mut times: [[Vec<f64>; 2]; 2] = Default::default();
    for pass in 0..args.rounds * 10 {
        let order = if pass % 2 == 0 {
            [0, 1, 1, 0]
        } else {
            [1, 0, 0, 1]
        };
        for which in order {
            let meta = &metas[which];
            let view = engine.read().unwrap();
            let t = Instant::now();
            let mut seen = 0usize;
            for stored in view.scan(meta, view.now_cell()) {
                seen += stored?.doc.len();
            }
            times[0][which].push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for id in &ids {
                seen += view.get(meta, id)?.map_or(0, |d| d.doc.len());
            }
            times[1][which].push(t.elapsed().as_secs_f64());
            std::hint::black_box(seen);
        }
    }
    println!(
        "\nengine reads ({} passes of each, {} documents per pass; ns per document):\n",
        args.rounds * 20,
        args.docs
    );
    println!(
        "| {:<22} | {:>16} | {:>16} | {:>10} |",
        "median (min)", "TTL off", "TTL on", "on vs off"
    );
    println!("|{:-<24}|{:->18}|{:->18}|{:->12}|", "", "", "", "");
    for (p, name) in ["full scan", "get_by_id"].into_iter().enumerate() {
        let per_doc = |t: f64| t * 1e9 / args.docs as f64;
        let off = median(&mut times[p][0]);
        let on = median(&mut times[p][1]);
        println!(
            "| {:<22} | {:>16} | {:>16} | {:>9.1}% |",
            name,
            format!("{:.0} ({:.0})", per_doc(off), per_doc(times[p][0][0])),
            format!("{:.0} ({:.0})", per_doc(on), per_doc(times[p][1][0])),
            (on / off - 1.0) * 100.0
        );
    }
    Ok(())
}

/// Sorts `values` and returns their median.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A document of the reaping part's collections.
fn reap_doc(id: i64) -> Document {
    doc! {"_id": id, "n": 0, "s": format!("ttl-reap-document-{id:012}")}
}

/// Documents in the collection the clients read and write during the reaping part.
const LIVE_DOCS: i64 = 10_000;

/// One client operation: when it started (since the clients started), how long it took, and
/// whether it was a write.
type Sample = (Duration, Duration, bool);

async fn reaping(client: &Client, args: &Args) -> Result<(), BoxError> {
    let db = client.database(DB);
    let admin = client.database("admin");
    let expiring = db.collection::<Document>("expiring");
    let live = db.collection::<Document>("live");
    let field = match args.reap_model.as_str() {
        "ts" => "_ts",
        "date" => "createdAt",
        other => return Err(format!("--reap-model takes ts or date, not {other}").into()),
    };
    db.run_command(doc! {
        "createIndexes": "expiring",
        "indexes": [{"key": {field: 1}, "name": format!("{field}_1"), "expireAfterSeconds": REAP_TTL_SECS}],
    })
    .await?;
    // The server's time, in milliseconds, for the date model's `createdAt`.
    let server_now = admin.run_command(doc! {"advanceClock": 0}).await?;
    let created_at = mongodb::bson::DateTime::from_millis(server_now.get_i64("now")? * 1000);
    let seconds = if field == "_ts" {
        load(&expiring, args.reap_docs, reap_doc).await?
    } else {
        load(&expiring, args.reap_docs, move |id| {
            let mut doc = reap_doc(id);
            doc.insert("createdAt", created_at);
            doc
        })
        .await?
    };
    println!(
        "\nloaded {} documents to expire by a TTL index on {field} in {seconds:.1} s \
         ({:.0} docs/s, batches of {BATCH})",
        args.reap_docs,
        args.reap_docs as f64 / seconds
    );
    load(&live, LIVE_DOCS, reap_doc).await?;
    let reaped_before = reaped(&admin).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let origin = Instant::now();
    let mut handles = Vec::new();
    for task in 0..args.clients {
        let live = live.clone();
        let stop = stop.clone();
        handles.push(tokio::spawn(async move {
            let mut samples: Vec<Sample> = Vec::new();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let id = pick(task, i, LIVE_DOCS as u64);
                let write = i % 2 == 1;
                let t = Instant::now();
                if write {
                    live.update_one(doc! {"_id": id}, doc! {"$inc": {"n": 1}})
                        .await?;
                } else {
                    live.find_one(doc! {"_id": id}).await?;
                }
                samples.push((t - origin, t.elapsed(), write));
                i += 1;
            }
            Ok::<_, mongodb::error::Error>(samples)
        }));
    }
    // One second of warm-up, then the baseline.
    const WARM_UP: Duration = Duration::from_secs(1);
    tokio::time::sleep(WARM_UP + Duration::from_secs_f64(args.seconds)).await;
    let expired_at = origin.elapsed();
    let now = admin
        .run_command(doc! {"advanceClock": REAP_TTL_SECS + 1})
        .await?;
    println!(
        "advanced the server clock by {} s (now {}): {} documents expired",
        REAP_TTL_SECS + 1,
        now.get("now").map(ToString::to_string).unwrap_or_default(),
        args.reap_docs
    );
    let mut first_deletion = None;
    let done_at = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = reaped(&admin).await? - reaped_before;
        if n > 0 && first_deletion.is_none() {
            first_deletion = Some(origin.elapsed());
        }
        if n >= args.reap_docs {
            break Some(origin.elapsed());
        }
        if origin.elapsed() - expired_at > Duration::from_secs(600) {
            println!("gave up after 600 s with {n} documents reaped");
            break None;
        }
    };
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    for h in handles {
        samples.extend(h.await??);
    }
    let status = admin.run_command(doc! {"serverStatus": 1}).await?;
    let ttl = status.get_document("ttl")?;
    println!(
        "after reaping: serverStatus.ttl backlog {}, passes {}, errors {}",
        ttl.get("backlog")
            .map(ToString::to_string)
            .unwrap_or_default(),
        ttl.get("passes")
            .map(ToString::to_string)
            .unwrap_or_default(),
        ttl.get("errors")
            .map(ToString::to_string)
            .unwrap_or_default(),
    );
    let Some(done_at) = done_at else {
        return Ok(());
    };
    let reap_secs = (done_at - expired_at).as_secs_f64();
    println!(
        "reaped {} documents in {reap_secs:.2} s from expiry: {:.0} docs/s \
         (first deletion after {:.2} s; {:.0} docs/s from it)",
        args.reap_docs,
        args.reap_docs as f64 / reap_secs,
        first_deletion.map_or(f64::NAN, |f| (f - expired_at).as_secs_f64()),
        first_deletion.map_or(f64::NAN, |f| args.reap_docs as f64
            / (done_at - f).as_secs_f64()),
    );
    println!();
    println!(
        "| {:<8} | {:<17} | {:>9} | {:>10} | {:>10} | {:>10} |",
        "ops", "window", "ops/s", "p50", "p99", "p99 ratio"
    );
    println!(
        "|{:-<10}|{:-<19}|{:->11}|{:->12}|{:->12}|{:->12}|",
        "", "", "", "", "", ""
    );
    for (label, kind) in [
        ("all", None),
        ("find_one", Some(false)),
        ("update", Some(true)),
    ] {
        let window = |from: Duration, to: Duration| {
            let mut l: Vec<Duration> = samples
                .iter()
                .filter(|(at, _, w)| *at >= from && *at < to && kind.is_none_or(|k| k == *w))
                .map(|(_, lat, _)| *lat)
                .collect();
            l.sort_unstable();
            (l, (to - from).as_secs_f64())
        };
        let (before, before_secs) = window(WARM_UP, expired_at);
        let (during, during_secs) = window(expired_at, done_at);
        let p99_before = percentile(&before, 0.99);
        for (name, l, secs) in [
            ("before", &before, before_secs),
            ("during reaping", &during, during_secs),
        ] {
            let p99 = percentile(l, 0.99);
            println!(
                "| {:<8} | {:<17} | {:>9.0} | {:>10} | {:>10} | {:>10} |",
                label,
                name,
                l.len() as f64 / secs,
                millis(percentile(l, 0.50)),
                millis(p99),
                format!("{:.2}x", p99.as_secs_f64() / p99_before.as_secs_f64()),
            );
        }
    }
    Ok(())
}

/// `serverStatus.metrics.ttl.deletedDocuments`, asked for without the `ttl` section, whose
/// backlog count reads the due expiry ranges.
async fn reaped(admin: &mongodb::Database) -> Result<i64, BoxError> {
    let status = admin
        .run_command(doc! {"serverStatus": 1, "ttl": 0})
        .await?;
    Ok(status
        .get_document("metrics")?
        .get_document("ttl")?
        .get_i64("deletedDocuments")?)
}
