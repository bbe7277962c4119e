//! Aggregation figures through the Rust driver: `$group` by a field over a large collection
//! (documents grouped per second), a `$lookup` of orders to customers through an index on
//! `foreignField`, and a `$sort` + `$limit` pipeline the planner serves from an index.
//!
//! `cargo bench --bench aggregate -- [--part group|lookup|topn] [--docs 1000000]
//!   [--orders 10000] [--customers 1000] [--runs 3] [--uri URI]`
//!
//! Each part prints the best and median of `--runs` runs. Measures only: nothing here asserts
//! on time.

mod common;

use clap::Parser;
use common::{load, BoxError, Target};
use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::{Collection, IndexModel};
use std::time::{Duration, Instant};

const DB: &str = "mayfly_bench_aggregate";

#[derive(Debug, Parser)]
struct Args {
    /// Run only this part: group, lookup or topn.
    #[arg(long)]
    part: Option<String>,
    /// Documents the `$group` and `$sort` + `$limit` parts read.
    #[arg(long, default_value_t = 1_000_000)]
    docs: i64,
    /// Orders of the `$lookup` part.
    #[arg(long, default_value_t = 10_000)]
    orders: i64,
    /// Customers of the `$lookup` part.
    #[arg(long, default_value_t = 1_000)]
    customers: i64,
    /// Runs per part.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Benchmark this server instead of starting one in-process.
    #[arg(long)]
    uri: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn event(i: i64) -> Document {
    doc! {"_id": i, "g": i % 1000, "v": i % 97, "r": i, "pad": "x".repeat(60)}
}

fn order(i: i64) -> Document {
    doc! {"_id": i, "customer": i % 1000, "amount": i % 250}
}

fn customer(i: i64) -> Document {
    doc! {"_id": i, "cid": i, "name": format!("customer-{i:05}")}
}

async fn collect(coll: &Collection<Document>, pipeline: Vec<Document>) -> Result<usize, BoxError> {
    let docs: Vec<Document> = coll
        .aggregate(pipeline)
        .allow_disk_use(true)
        .await?
        .try_collect()
        .await?;
    Ok(docs.len())
}

/// Runs `f` `runs` times; returns (best, median) durations and the last result.
async fn timed<F, Fut>(runs: usize, mut f: F) -> Result<(Duration, Duration, usize), BoxError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, BoxError>>,
{
    let mut times = Vec::with_capacity(runs);
    let mut last = 0;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        last = f().await?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok((times[0], times[times.len() / 2], last))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let wants = |part: &str| args.part.as_deref().is_none_or(|p| p == part);
    let target = Target::start(args.uri.as_deref(), false, 8).await?;
    println!(
        "mayfly aggregate bench: {} documents, {} orders, {} customers, {} runs; {}",
        args.docs,
        args.orders,
        args.customers,
        args.runs,
        target.describe()
    );
    let db = target.client.database(DB);
    db.drop().await?;

    if wants("group") || wants("topn") {
        let events = db.collection::<Document>("events");
        let seconds = load(&events, args.docs, event).await?;
        println!("loaded {} events in {seconds:.1} s", args.docs);
        if wants("group") {
            let pipeline =
                vec![doc! {"$group": {"_id": "$g", "n": {"$sum": 1}, "total": {"$sum": "$v"}}}];
            let (best, median, groups) =
                timed(args.runs, || collect(&events, pipeline.clone())).await?;
            println!(
                "$group by a field: {groups} groups; best {:.2} s ({:.0} docs/s), median {:.2} s",
                best.as_secs_f64(),
                args.docs as f64 / best.as_secs_f64(),
                median.as_secs_f64()
            );
        }
        if wants("topn") {
            events
                .create_index(IndexModel::builder().keys(doc! {"r": -1}).build())
                .await?;
            let pipeline = vec![doc! {"$sort": {"r": -1}}, doc! {"$limit": 10}];
            let (best, median, n) =
                timed(args.runs.max(20), || collect(&events, pipeline.clone())).await?;
            println!(
                "$sort + $limit 10 through the index on r: {n} documents; best {:.2} ms, median \
                 {:.2} ms",
                best.as_secs_f64() * 1e3,
                median.as_secs_f64() * 1e3
            );
        }
    }

    if wants("lookup") {
        let orders = db.collection::<Document>("orders");
        let customers = db.collection::<Document>("customers");
        load(&orders, args.orders, order).await?;
        load(&customers, args.customers, customer).await?;
        customers
            .create_index(IndexModel::builder().keys(doc! {"cid": 1}).build())
            .await?;
        let pipeline = vec![
            doc! {"$lookup": {"from": "customers", "localField": "customer", "foreignField": "cid", "as": "c"}},
            doc! {"$unwind": "$c"},
        ];
        let (best, median, n) = timed(args.runs, || collect(&orders, pipeline.clone())).await?;
        println!(
            "$lookup of {} orders to {} customers on an indexed foreignField: {n} joined; best \
             {:.2} s ({:.0} orders/s), median {:.2} s",
            args.orders,
            args.customers,
            best.as_secs_f64(),
            args.orders as f64 / best.as_secs_f64(),
            median.as_secs_f64()
        );
    }
    Ok(())
}
