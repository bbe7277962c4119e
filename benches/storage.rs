//! The storage engine alone: the entries a durable `insert_many` writes, committed through the
//! storage trait ([`Backend::commit`]) with no server, no driver and no BSON parsing — the
//! ceiling the server's bulk-insert path is measured against.
//!
//! `cargo bench --bench storage -- [--seconds 5] [--group 1000,5000] [--builders 1]
//! [--ranges 1] [--cache-size-gb G] [--sync-thread]`
//!
//! The storage is configured as the server configures it (`FjallConfig::for_budget`), with the
//! server's default budget unless `--cache-size-gb` gives one (as `--cacheSizeGB` does): the
//! memtable size follows the budget, and changes the rate.
//!
//! For each `--group` size (documents per commit), `--builders` threads build batches and one
//! thread commits them with `Durability::SyncData`, as the server's writer thread commits a
//! group. With `--sync-thread` it commits them without a sync (`Durability::Buffered`) and
//! hands each to a sync thread, which syncs the journal once for every batch committed since
//! its last sync (`Backend::persist`) and counts them durable then: the ceiling of a writer
//! that goes on with the next group while the last one syncs. A document's entries are
//! exactly what the server writes for the crud bench's `insert_many` document in a collection
//! without secondary indexes: the record (`_ts`, no own `ttl`, the ~100-byte BSON body) under
//! its document key, its expiry entry (ordered by `_ts`, valued with the body size), and one
//! counter entry per commit. The crud bench's connections each number their `_id`s in a range
//! of their own; with `--ranges N` a builder's batches take turns in N such ranges, so that
//! `--ranges 8` writes keys in the order the server gets them from 8 connections. Measures
//! only: nothing here asserts on time.

use clap::Parser;
use mayfly::engine::documents::record::Record;
use mayfly::engine::{documents::counts, documents::expiry};
use mayfly::storage::{keys, Backend, Durability, FjallBackend, FjallConfig, Keyspace, WriteBatch};
use mongodb::bson::{doc, Bson};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The crud bench's allocator, so both measure the same code.
#[global_allocator]
static ALLOCATOR: mayfly::allocation::Metered<mimalloc::MiMalloc> =
    mayfly::allocation::Metered(mimalloc::MiMalloc);

/// The collection id the entries are written under (any id works: nothing reads them).
const COLLECTION: u64 = 7;

#[derive(Debug, Parser)]
struct Args {
    /// Seconds per group size.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Documents per commit; one run for each.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1000, 5000])]
    group: Vec<usize>,
    /// Threads building batches while one thread commits.
    #[arg(long, default_value_t = 1)]
    builders: usize,
    /// Key ranges each builder's batches take turns in, as the crud bench's connections each
    /// number their `_id`s in a range of their own.
    #[arg(long, default_value_t = 1)]
    ranges: usize,
    /// The storage cache budget in GiB, as the server's `--cacheSizeGB` (default: the server's).
    #[arg(long)]
    cache_size_gb: Option<f64>,
    /// Sync on a thread of its own, not within each commit.
    #[arg(long)]
    sync_thread: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    // As the server binary does at start, so that both measure the same memory.
    mayfly::host::disable_transparent_huge_pages()?;
    let budget = args.cache_size_gb.map_or_else(
        mayfly::config::default_cache_bytes,
        mayfly::config::gigabytes,
    );
    let config = FjallConfig::for_budget(budget);
    println!(
        "mayfly storage bench: fjall, durable commits (fdatasync {}), {} builder thread(s) \
         taking turns in {} key range(s), {:.1} s per group size, cache budget {} MiB \
         (memtables {} MiB)",
        if args.sync_thread {
            "on a sync thread"
        } else {
            "within each commit"
        },
        args.builders,
        args.ranges,
        args.seconds,
        budget >> 20,
        config.memtable_bytes >> 20
    );
    println!();
    println!("| documents per commit |          rate |   commits | p50 durable | p99 durable |");
    println!("|----------------------|---------------|-----------|-------------|-------------|");
    for &group in &args.group {
        let dir = tempfile::tempdir()?;
        let backend = FjallBackend::open_with(dir.path(), &config)?;
        let shape = Shape {
            group: group.max(1),
            builders: args.builders.max(1),
            ranges: args.ranges.max(1),
            sync_thread: args.sync_thread,
        };
        let run = measure(&backend, &shape, args.seconds)?;
        let mut commits = run.commit_times;
        commits.sort();
        println!(
            "| {:>20} | {:>8.0} docs/s | {:>9} | {:>8.2} ms | {:>8.2} ms |",
            group,
            run.documents as f64 / run.elapsed.as_secs_f64(),
            commits.len(),
            millis(percentile(&commits, 0.50)),
            millis(percentile(&commits, 0.99)),
        );
    }
    Ok(())
}

#[derive(Default)]
struct Run {
    /// Documents durable by the end of the run.
    documents: u64,
    elapsed: Duration,
    /// For each batch, from the start of its commit until it was durable.
    commit_times: Vec<Duration>,
}

/// How a run builds and commits its batches.
struct Shape {
    /// Documents a batch.
    group: usize,
    /// Threads building batches.
    builders: usize,
    /// Key ranges a builder's batches take turns in.
    ranges: usize,
    /// Whether a sync thread syncs the batches, rather than each commit.
    sync_thread: bool,
}

/// Commits batches of `shape.group` documents, built by `shape.builders` threads, for
/// `seconds`, and counts the documents made durable.
fn measure(
    backend: &FjallBackend,
    shape: &Shape,
    seconds: f64,
) -> Result<Run, Box<dyn std::error::Error>> {
    let group = shape.group;
    let (send, receive) = mpsc::sync_channel::<WriteBatch>(4);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut threads = Vec::new();
    let ranges = shape.ranges;
    for builder in 0..shape.builders {
        let send = send.clone();
        let stop = std::sync::Arc::clone(&stop);
        // Named, so that a profiler tells the builders' CPU from the committing (main) thread's.
        let thread = std::thread::Builder::new()
            .name(format!("builder-{builder}"))
            .spawn(move || {
                let mut next = vec![0u64; ranges];
                for turn in 0usize.. {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let range = turn % ranges;
                    let first = next.get(range).copied().unwrap_or_default();
                    let batch = build(builder * ranges + range, first, group);
                    if let Some(next) = next.get_mut(range) {
                        *next += group as u64;
                    }
                    if send.send(batch).is_err() {
                        break;
                    }
                }
            })?;
        threads.push(thread);
    }
    drop(send);
    let deadline = Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let run = std::thread::scope(|scope| -> Result<Run, Box<dyn std::error::Error>> {
        let (to_sync, committed) = mpsc::channel::<Instant>();
        let syncer = shape
            .sync_thread
            .then(|| scope.spawn(move || sync_committed(backend, &committed, group)));
        let mut serial = Run::default();
        while started.elapsed() < deadline {
            let batch = receive.recv()?;
            let commit = Instant::now();
            if shape.sync_thread {
                backend.commit(batch, Durability::Buffered)?;
                to_sync.send(commit)?;
            } else {
                backend.commit(batch, Durability::SyncData)?;
                serial.commit_times.push(commit.elapsed());
                serial.documents += group as u64;
            }
        }
        drop(to_sync);
        let mut run = match syncer {
            Some(syncer) => syncer.join().map_err(|_| "the sync thread panicked")??,
            None => serial,
        };
        run.elapsed = started.elapsed();
        Ok(run)
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(receive);
    for thread in threads {
        let _ = thread.join();
    }
    run
}

/// The sync thread: syncs the journal once for every batch committed since its last sync (each
/// known by when its commit began), until the committing thread stops, and counts the
/// documents made durable.
fn sync_committed(
    backend: &FjallBackend,
    committed: &mpsc::Receiver<Instant>,
    group: usize,
) -> Result<Run, mayfly::storage::StorageError> {
    let mut run = Run::default();
    while let Ok(first) = committed.recv() {
        let batches: Vec<Instant> = std::iter::once(first).chain(committed.try_iter()).collect();
        backend.persist(Durability::SyncData)?;
        for began in batches {
            run.commit_times.push(began.elapsed());
            run.documents += group as u64;
        }
    }
    Ok(run)
}

/// The entries of `group` documents from builder `task`, numbered from `first`, and the
/// collection's counter entry.
fn build(task: usize, first: u64, group: usize) -> WriteBatch {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    // In the order a group's batch has: keyspace by keyspace, each in key order.
    let mut records = Vec::with_capacity(group);
    let mut expiries = Vec::with_capacity(group);
    let mut bytes = 0u64;
    for i in first..first + group as u64 {
        let id = (task as i64) << 40 | i as i64;
        let document = doc! {
            "_id": id,
            "task": task as i32,
            "i": i as i64,
            "s": "mayfly-bench-payload-0123456789abcdefghijklmnopqrstuvwxyz",
        };
        let Ok(record) = Record::new(now, &document) else {
            continue;
        };
        let key = keys::document_key(COLLECTION, &Bson::Int64(id));
        if let Some(expiry_key) = expiry::key_for(&key, &record) {
            expiries.push((expiry_key, Some(expiry::value_for(&record))));
        }
        bytes += record.body.len() as u64;
        records.push((key, Some(record.encode())));
    }
    let mut batch = WriteBatch::new();
    let totals = counts::Totals {
        count: first + group as u64,
        size: bytes,
    };
    batch.put(
        Keyspace::Catalog,
        counts::counter_key(COLLECTION),
        totals.encode(),
    );
    batch.add_run(Keyspace::Documents, records);
    batch.add_run(Keyspace::Expiry, expiries);
    batch
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
