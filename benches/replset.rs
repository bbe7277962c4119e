//! What replica-set mode costs and how fast change streams deliver, through the Rust driver,
//! against in-process servers on fresh data directories (fjall, durable writes).
//!
//! `cargo bench --bench replset -- [--mode all|insert|latency|txn] [--connections 32]
//!  [--seconds 5] [--runs 3] [--docs 10000] [--rate 1000] [--setups standalone,oplog,retryable]`
//!
//! - `insert`: durable `insert_one` from `--connections` tasks for `--seconds`, on three
//!   servers started afresh for each of `--runs` rounds (order reversed every other round):
//!   a standalone (no operation log); the primary of replica set `rs0` with a client whose
//!   retryable writes are off (the operation log only); the same with the driver's default,
//!   retryable writes on (each insert also rewrites its session's `config.transactions`
//!   record). Prints each run, then the medians and their ratios to the standalone, both of
//!   the rate and of the process's CPU time per insert (driver and server share the process
//!   and the cores, so on a machine shared with other work the CPU cost is the steadier).
//! - `latency`: one task watches a collection (`watch()`) while writers insert `--docs`
//!   documents, each carrying its sequence number: first at a steady `--rate` (an insert
//!   started every 1/rate s, whatever the earlier ones are doing), then flat out from
//!   `--connections` tasks. For every document it takes three instants on one monotonic clock:
//!   just before `insert_one` is called (send), when `insert_one` returned (ack), and when
//!   the watcher's stream yielded its event (delivery). The commit happens between send and
//!   ack, so send→delivery bounds commit→delivery from above and ack→delivery from below (it
//!   is negative when the event arrives before the insert's own reply).
//! - `txn`: transactions of 10 `insert_one`s from `--connections` tasks, each a driver session
//!   with `start_transaction`, the inserts with the session, and `commit_transaction`.
//!
//! `all` (the default) runs `insert` and `latency`; `txn` runs only when asked. A failing
//! phase prints its error; `txn` exits non-zero when the server refuses. Measures only:
//! nothing here asserts on time.

mod common;

use clap::Parser;
use common::replset::{process_cpu, Member, SET_NAME};
use common::writer_counters;
use common::{millis, per_op, percentile, BoxError, Outcome};
use futures::StreamExt;
use mongodb::bson::{doc, Document};
use mongodb::Client;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DB: &str = "mayfly_bench";

#[derive(Debug, Parser)]
struct Args {
    /// `all` (insert and latency), `insert`, `latency`, or `txn`.
    #[arg(long, default_value = "all")]
    mode: String,
    /// Concurrent connections (one task each) for inserts, flat-out writers and transactions.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Seconds per insert (and transaction) run.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Rounds of the three insert configurations.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Documents inserted (and events awaited) per latency phase.
    #[arg(long, default_value_t = 10_000)]
    docs: u64,
    /// Inserts per second in the steady latency phase.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Run the insert mode on only these servers (comma-separated: standalone, oplog,
    /// retryable); all three by default. Handy for profiling one.
    #[arg(long, value_delimiter = ',')]
    setups: Vec<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    println!(
        "mayfly replset bench: mode {}, {} connections, {:.1} s per insert run, {} runs, {} \
         documents per latency phase at {} /s then flat out; in-process servers, fjall, durable",
        args.mode, args.connections, args.seconds, args.runs, args.docs, args.rate
    );
    match args.mode.as_str() {
        "all" => {
            inserts(&args).await?;
            latencies(&args).await
        }
        "insert" => inserts(&args).await,
        "latency" => latencies(&args).await,
        "txn" => transactions(&args).await,
        other => Err(format!("unknown --mode {other}: all, insert, latency or txn").into()),
    }
}

/// The three servers-and-clients the insert runs compare.
#[derive(Clone, Copy)]
enum Setup {
    Standalone,
    OplogOnly,
    OplogAndRetryableWrites,
}

impl Setup {
    const ALL: [Setup; 3] = [
        Setup::Standalone,
        Setup::OplogOnly,
        Setup::OplogAndRetryableWrites,
    ];

    /// The name `--setups` knows it by.
    fn key(self) -> &'static str {
        match self {
            Setup::Standalone => "standalone",
            Setup::OplogOnly => "oplog",
            Setup::OplogAndRetryableWrites => "retryable",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Setup::Standalone => "standalone",
            Setup::OplogOnly => "--replSet rs0, retryWrites=false",
            Setup::OplogAndRetryableWrites => "--replSet rs0, retryWrites=true",
        }
    }

    async fn start(self, connections: usize) -> Result<(Member, Client), BoxError> {
        let (set, retry) = match self {
            Setup::Standalone => (None, None),
            Setup::OplogOnly => (Some(SET_NAME), Some(false)),
            Setup::OplogAndRetryableWrites => (Some(SET_NAME), None),
        };
        let member = Member::start(set).await?;
        let client = member.client(connections, retry).await?;
        Ok((member, client))
    }
}

/// One insert run: the outcome, the group-commit counters' deltas {groups, jobs, syncs}, and
/// the process's CPU time per insert (driver and server together).
struct InsertRun {
    outcome: Outcome,
    writer: Option<[i64; 3]>,
    cpu_per_insert: Option<Duration>,
}

/// Microseconds, or `?` when unknown.
fn micros(d: Option<Duration>) -> String {
    d.map_or("?".to_owned(), |d| {
        format!("{:.1} us", d.as_secs_f64() * 1e6)
    })
}

async fn inserts(args: &Args) -> Result<(), BoxError> {
    println!("\n== durable insert_one/s, operation log off and on ==");
    let phase = Duration::from_secs_f64(args.seconds);
    let mut runs: Vec<Vec<InsertRun>> = Setup::ALL.iter().map(|_| Vec::new()).collect();
    for round in 0..args.runs {
        let mut order: Vec<usize> = (0..Setup::ALL.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let Some(setup) = Setup::ALL.get(i).copied() else {
                continue;
            };
            if !args.setups.is_empty() && !args.setups.iter().any(|s| s == setup.key()) {
                continue;
            }
            let run = insert_run(setup, args.connections, phase).await?;
            let [groups, jobs, syncs] = run.writer.unwrap_or([0, 0, 0]);
            println!(
                "run {} {:<34} {:>8.0} inserts/s  p50 {}  p99 {}  syncs {}  jobs/group {:.1}  \
                 CPU/insert {}",
                round + 1,
                setup.name(),
                run.outcome.rate(),
                millis(percentile(&run.outcome.latencies, 0.5)),
                millis(percentile(&run.outcome.latencies, 0.99)),
                syncs,
                jobs as f64 / groups.max(1) as f64,
                micros(run.cpu_per_insert),
            );
            if let Some(list) = runs.get_mut(i) {
                list.push(run);
            }
        }
    }
    println!();
    println!(
        "| {:<34} | {:>14} | {:>16} | {:>9} | {:>9} | {:>10} | {:>13} | {:>16} | {:>13} |",
        "server, client",
        "median rate",
        "min-max",
        "p50",
        "p99",
        "jobs/group",
        "vs standalone",
        "median CPU/insert",
        "vs standalone"
    );
    println!(
        "|{:-<36}|{:->16}|{:->18}|{:->11}|{:->11}|{:->12}|{:->15}|{:->18}|{:->15}|",
        "", "", "", "", "", "", "", "", ""
    );
    let mut baseline = None;
    let mut cpu_baseline = None;
    for (setup, list) in Setup::ALL.iter().zip(&runs) {
        let mut rates: Vec<f64> = list.iter().map(|r| r.outcome.rate()).collect();
        rates.sort_by(f64::total_cmp);
        let Some(median) = rates.get(rates.len() / 2).copied() else {
            continue;
        };
        let mut cpus: Vec<Duration> = list.iter().filter_map(|r| r.cpu_per_insert).collect();
        cpus.sort_unstable();
        let cpu = cpus.get(cpus.len() / 2).copied();
        if matches!(setup, Setup::Standalone) {
            baseline = Some(median);
            cpu_baseline = cpu;
        }
        // The run whose rate is the median gives the latencies and counters shown.
        let Some(mid) = list.iter().find(|r| r.outcome.rate() == median) else {
            continue;
        };
        let [groups, jobs, _] = mid.writer.unwrap_or([0, 0, 0]);
        println!(
            "| {:<34} | {:>14} | {:>16} | {:>9} | {:>9} | {:>10.1} | {:>13} | {:>16} | {:>13} |",
            setup.name(),
            format!("{median:.0} ops/s"),
            format!(
                "{:.0}-{:.0}",
                rates.first().unwrap_or(&0.0),
                rates.last().unwrap_or(&0.0)
            ),
            millis(percentile(&mid.outcome.latencies, 0.5)),
            millis(percentile(&mid.outcome.latencies, 0.99)),
            jobs as f64 / groups.max(1) as f64,
            baseline.map_or("-".to_owned(), |base| format!("{:.3}", median / base)),
            micros(cpu),
            match (cpu, cpu_baseline) {
                (Some(c), Some(b)) if !b.is_zero() => {
                    format!("{:.3}", c.as_secs_f64() / b.as_secs_f64())
                }
                _ => "-".to_owned(),
            },
        );
    }
    Ok(())
}

/// `connections` tasks inserting ~100-byte documents for `phase` into a fresh server.
async fn insert_run(
    setup: Setup,
    connections: usize,
    phase: Duration,
) -> Result<InsertRun, BoxError> {
    let (member, client) = setup.start(connections).await?;
    let coll = client.database(DB).collection::<Document>("insert_one");
    // The collection exists before timing starts (its creation is a catalog write).
    coll.insert_one(doc! {"_id": -1}).await?;
    let before = writer_counters(&client).await;
    let cpu_before = process_cpu();
    let outcome = per_op(
        "insert_one (durable)",
        connections,
        phase,
        move |task, i| {
            let coll = coll.clone();
            async move { coll.insert_one(small_doc(task, i)).await.map(|_| 1) }
        },
    )
    .await
    .map_err(|(name, e)| format!("{}: {name}: {e}", setup.name()))?;
    let cpu_per_insert = match (cpu_before, process_cpu()) {
        (Some(b), Some(a)) => a.checked_sub(b).map(|d| d / outcome.count.max(1) as u32),
        _ => None,
    };
    let writer = match (before, writer_counters(&client).await) {
        (Some(b), Some(a)) => Some([a[0] - b[0], a[1] - b[1], a[2] - b[2]]),
        _ => None,
    };
    client.shutdown().await;
    member.stop().await;
    Ok(InsertRun {
        outcome,
        writer,
        cpu_per_insert,
    })
}

/// A small document (about 100 bytes of BSON), unique per (task, i); as `benches/crud.rs`.
fn small_doc(task: usize, i: u64) -> Document {
    doc! {
        "_id": (task as i64) << 40 | i as i64,
        "task": task as i32,
        "i": i as i64,
        "s": "mayfly-bench-payload-0123456789abcdefghijklmnopqrstuvwxyz",
    }
}

/// How the latency phase's writers pace their inserts.
#[derive(Clone, Copy)]
enum Pace {
    /// One insert started every 1/rate seconds, each on its own task (open loop).
    Steady(f64),
    /// `n` tasks, each inserting as soon as its previous insert returned.
    FlatOut(usize),
}

async fn latencies(args: &Args) -> Result<(), BoxError> {
    println!("\n== change-stream event latency, one watcher, --replSet rs0 ==");
    let member = Member::start(Some(SET_NAME)).await?;
    // The driver's defaults (retryable writes on), as applications run.
    let client = member.client(args.connections + 1, None).await?;
    for (i, pace) in [Pace::Steady(args.rate), Pace::FlatOut(args.connections)]
        .into_iter()
        .enumerate()
    {
        let coll = format!("events_{i}");
        match latency_phase(&client, &coll, pace, args.docs).await {
            Ok(report) => println!("{report}"),
            Err(e) => println!("{}: failed: {e}", pace_name(pace)),
        }
    }
    client.shutdown().await;
    member.stop().await;
    Ok(())
}

fn pace_name(pace: Pace) -> String {
    match pace {
        Pace::Steady(rate) => format!("steady {rate:.0} inserts/s"),
        Pace::FlatOut(n) => format!("flat out, {n} writers"),
    }
}

/// Per sequence number, nanoseconds since the phase began: send, ack, delivery.
struct Instants {
    epoch: Instant,
    sent: Vec<AtomicI64>,
    acked: Vec<AtomicI64>,
}

impl Instants {
    fn new(n: u64) -> Instants {
        let make = || (0..n).map(|_| AtomicI64::new(-1)).collect();
        Instants {
            epoch: Instant::now(),
            sent: make(),
            acked: make(),
        }
    }

    fn now(&self) -> i64 {
        self.epoch.elapsed().as_nanos() as i64
    }

    fn mark(list: &[AtomicI64], seq: u64, at: i64) {
        if let Some(slot) = list.get(seq as usize) {
            slot.store(at, Ordering::Relaxed);
        }
    }
}

/// Inserts `docs` documents into `coll` at `pace` while one stream watches it; reports the
/// latencies of the events.
async fn latency_phase(
    client: &Client,
    coll: &str,
    pace: Pace,
    docs: u64,
) -> Result<String, BoxError> {
    let coll = client.database(DB).collection::<Document>(coll);
    client.database(DB).create_collection(coll.name()).await?;
    // The stream is open (its resume point taken) before the first insert.
    let mut stream = coll.watch().await?;
    let instants = Arc::new(Instants::new(docs));
    let watcher = {
        let instants = instants.clone();
        tokio::spawn(async move {
            let mut delivered = vec![-1i64; docs as usize];
            let mut seen = 0u64;
            while seen < docs {
                let event = match stream.next().await {
                    Some(event) => event?,
                    None => return Err::<_, BoxError>("the change stream ended".into()),
                };
                let at = instants.now();
                let seq = event
                    .full_document
                    .as_ref()
                    .and_then(|d| d.get_i64("seq").ok())
                    .ok_or("an insert event without its document's seq")?;
                if let Some(slot) = delivered.get_mut(seq as usize) {
                    *slot = at;
                }
                seen += 1;
            }
            Ok(delivered)
        })
    };
    let started = Instant::now();
    write(&coll, pace, docs, &instants).await?;
    let writing = started.elapsed();
    let delivered = tokio::time::timeout(Duration::from_secs(60), watcher)
        .await
        .map_err(|_| "the watcher did not see every insert within 60 s of the last")???;
    let mut send_to_event = Vec::with_capacity(docs as usize);
    let mut ack_to_event = Vec::with_capacity(docs as usize);
    for (seq, at) in delivered.iter().enumerate() {
        let sent = instants
            .sent
            .get(seq)
            .map_or(-1, |a| a.load(Ordering::Relaxed));
        let acked = instants
            .acked
            .get(seq)
            .map_or(-1, |a| a.load(Ordering::Relaxed));
        if *at < 0 || sent < 0 || acked < 0 {
            return Err(format!("document {seq} was not both inserted and delivered").into());
        }
        send_to_event.push(at - sent);
        ack_to_event.push(at - acked);
    }
    send_to_event.sort_unstable();
    ack_to_event.sort_unstable();
    let last = delivered.iter().copied().max().unwrap_or(0);
    Ok(format!(
        "{}: {docs} inserts in {:.2} s ({:.0}/s), last event {:.2} s after the start\n  \
         send->event  min {}  p50 {}  p99 {}  max {}\n  \
         ack->event   min {}  p50 {}  p99 {}  max {}  \
         (negative: the event arrived before the insert's reply)",
        pace_name(pace),
        writing.as_secs_f64(),
        docs as f64 / writing.as_secs_f64(),
        last as f64 / 1e9,
        ms(send_to_event.first().copied().unwrap_or(0)),
        ms(quantile(&send_to_event, 0.5)),
        ms(quantile(&send_to_event, 0.99)),
        ms(send_to_event.last().copied().unwrap_or(0)),
        ms(ack_to_event.first().copied().unwrap_or(0)),
        ms(quantile(&ack_to_event, 0.5)),
        ms(quantile(&ack_to_event, 0.99)),
        ms(ack_to_event.last().copied().unwrap_or(0)),
    ))
}

/// Inserts documents `{_id: seq, seq, s}` for `seq` in `0..docs` at `pace`, marking each
/// one's send and ack instants.
async fn write(
    coll: &mongodb::Collection<Document>,
    pace: Pace,
    docs: u64,
    instants: &Arc<Instants>,
) -> Result<(), BoxError> {
    let (coll, instants) = (coll.clone(), instants.clone());
    let insert = move |seq: u64| {
        let coll = coll.clone();
        let instants = instants.clone();
        async move {
            let document = doc! {"_id": seq as i64, "seq": seq as i64, "s": "mayfly-bench-event"};
            Instants::mark(&instants.sent, seq, instants.now());
            coll.insert_one(document).await?;
            Instants::mark(&instants.acked, seq, instants.now());
            Ok::<_, mongodb::error::Error>(())
        }
    };
    let mut tasks = Vec::new();
    match pace {
        Pace::Steady(rate) => {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate.max(1e-3)));
            // A late tick fires at once and the schedule stays: the rate is kept on average.
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            for seq in 0..docs {
                tick.tick().await;
                tasks.push(tokio::spawn(insert(seq)));
            }
        }
        Pace::FlatOut(writers) => {
            let next = Arc::new(AtomicU64::new(0));
            for _ in 0..writers {
                let next = next.clone();
                let insert = insert.clone();
                tasks.push(tokio::spawn(async move {
                    loop {
                        let seq = next.fetch_add(1, Ordering::Relaxed);
                        if seq >= docs {
                            return Ok(());
                        }
                        insert(seq).await?;
                    }
                }));
            }
        }
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// The `p` quantile (0..=1) of sorted nanoseconds.
fn quantile(sorted: &[i64], p: f64) -> i64 {
    let rank = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
    sorted.get(rank).copied().unwrap_or(0)
}

fn ms(nanos: i64) -> String {
    format!("{:.2} ms", nanos as f64 / 1e6)
}

/// Transactions of 10 inserts from `--connections` tasks against the primary of `rs0`.
async fn transactions(args: &Args) -> Result<(), BoxError> {
    const INSERTS: u64 = 10;
    println!("\n== transactions of {INSERTS} insert_one, --replSet rs0 ==");
    let member = Member::start(Some(SET_NAME)).await?;
    let client = member.client(args.connections, None).await?;
    let coll = client.database(DB).collection::<Document>("txn");
    // Created outside the transactions, as mongod before 4.4 required and drivers still advise.
    client.database(DB).create_collection(coll.name()).await?;
    let phase = Duration::from_secs_f64(args.seconds);
    // The first failure, as the server (or the driver) described it.
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let first_failure = failure.clone();
    let result = per_op(
        "transaction x10 insert_one",
        args.connections,
        phase,
        move |task, i| {
            let client = client.clone();
            let coll = coll.clone();
            let failure = first_failure.clone();
            async move {
                let run = async {
                    let mut session = client.start_session().await?;
                    session.start_transaction().await?;
                    for k in 0..INSERTS {
                        coll.insert_one(small_doc(task, i * INSERTS + k))
                            .session(&mut session)
                            .await?;
                    }
                    session.commit_transaction().await?;
                    Ok(1)
                };
                let result = run.await;
                if let Err(e) = &result {
                    let mut first = failure.lock().unwrap_or_else(|e| e.into_inner());
                    first.get_or_insert_with(|| describe(e));
                }
                result
            }
        },
    )
    .await;
    member.stop().await;
    match result {
        Ok(o) => {
            println!(
                "{}: {:.0} transactions/s ({:.0} inserts/s), {} committed, p50 {} p99 {}",
                o.name,
                o.rate(),
                o.rate() * INSERTS as f64,
                o.count,
                millis(percentile(&o.latencies, 0.5)),
                millis(percentile(&o.latencies, 0.99)),
            );
            Ok(())
        }
        Err((name, e)) => {
            let e = failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or(e);
            println!("{name}: FAILED: {e}");
            Err(format!("transactions failed: {e}").into())
        }
    }
}

/// A server's error as `code N (CodeName): message`; anything else as the driver prints it.
fn describe(e: &mongodb::error::Error) -> String {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => {
            format!("code {} ({}): {}", c.code, c.code_name, c.message)
        }
        _ => e.to_string(),
    }
}
