//! The server's figures in Prometheus's format, for `--metrics-addr`: each scrape reads the
//! same counters `serverStatus` reports (one source for both) plus the latency histograms, and
//! renders them as OpenMetrics text with the `prometheus-client` crate, which owns the format
//! (names, escaping, histogram series, `# EOF`).
//!
//! Every name starts with `mayfly_`. A scrape reads storage (per-collection counts and the TTL
//! backlog), so the endpoint renders it on a blocking thread.
//! Does not own: the HTTP side (`endpoint`), recording (`latency`, `command::latencies`,
//! `status::Counters`, the writer's and reaper's stats).

pub mod endpoint;
pub mod ttl_namespaces;

use crate::command::Shared;
use crate::status::Counters;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::{AtomicU64, Ordering};

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: &'static str,
    mongodb_version: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TypeLabel {
    r#type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CollectionLabels {
    database: String,
    collection: String,
}

/// Everything the endpoint serves, rendered now.
pub fn render(shared: &Shared) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::with_prefix("mayfly");
    process(&mut registry, shared);
    connections(&mut registry, &shared.counters);
    commands(&mut registry, shared);
    cursors(&mut registry, shared);
    writer(&mut registry, shared);
    storage(&mut registry, shared);
    ttl(&mut registry, shared);
    ttl_namespaces::register(&mut registry, shared);
    dropped_space(&mut registry, shared);
    registry.register(
        "locks_poisoned",
        "Times a lock was found poisoned (a thread panicked while holding it)",
        ConstCounter::new(crate::sync::poisoned_total()),
    );
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)?;
    Ok(text)
}

fn counter(value: &AtomicU64) -> ConstCounter<u64> {
    ConstCounter::new(value.load(Ordering::Relaxed))
}

fn gauge(value: u64) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX))
}

fn process(registry: &mut Registry, shared: &Shared) {
    registry.register(
        "build",
        "The running mayfly version and the MongoDB version it answers as",
        Info::new(VersionLabels {
            version: env!("CARGO_PKG_VERSION"),
            mongodb_version: crate::command::MONGODB_VERSION,
        }),
    );
    registry.register_with_unit(
        "uptime",
        "Time since the server started",
        Unit::Seconds,
        ConstGauge::new(shared.started.elapsed().as_secs_f64()),
    );
    let (resident_mb, _) = crate::host::process_mem_mb();
    registry.register_with_unit(
        "resident_memory",
        "The process's resident memory",
        Unit::Bytes,
        ConstGauge::new(resident_mb.saturating_mul(1024 * 1024)),
    );
}

fn connections(registry: &mut Registry, c: &Counters) {
    registry.register(
        "connections_current",
        "Client connections open now",
        ConstGauge::new(Counters::get(&c.connections_current)),
    );
    registry.register(
        "connections_created",
        "Client connections accepted since start",
        counter(&c.connections_total_created),
    );
    registry.register(
        "connections_rejected",
        "Client connections refused at the connection limit (--maxConns)",
        counter(&c.connections_rejected),
    );
    registry.register_with_unit(
        "network_received",
        "Bytes read from clients",
        Unit::Bytes,
        counter(&c.bytes_in),
    );
    registry.register_with_unit(
        "network_sent",
        "Bytes written to clients",
        Unit::Bytes,
        counter(&c.bytes_out),
    );
    registry.register(
        "requests",
        "Requests read from clients",
        counter(&c.requests),
    );
    // A family built at each scrape, each counter set once from serverStatus's atomics.
    let opcounters = Family::<TypeLabel, Counter>::default();
    for (kind, value) in [
        ("insert", &c.op_insert),
        ("query", &c.op_query),
        ("update", &c.op_update),
        ("delete", &c.op_delete),
        ("getmore", &c.op_getmore),
        ("command", &c.op_command),
    ] {
        opcounters
            .get_or_create(&TypeLabel { r#type: kind })
            .inc_by(value.load(Ordering::Relaxed));
    }
    registry.register(
        "opcounters",
        "Operations by type, as serverStatus's opcounters counts them",
        opcounters,
    );
}

fn commands(registry: &mut Registry, shared: &Shared) {
    registry.register(
        "commands",
        "Commands run, by name and outcome (error: the reply had ok: 0); unknown names count as unknown",
        shared.latencies.counts.clone(),
    );
    registry.register_with_unit(
        "command_duration",
        "Time to run each command, by name (awaitable hellos left out)",
        Unit::Seconds,
        shared.latencies.durations.clone(),
    );
}

fn cursors(registry: &mut Registry, shared: &Shared) {
    let cursors = &shared.engine.cursors;
    registry.register(
        "cursors_open",
        "Client cursors open now",
        gauge(cursors.open_count() as u64),
    );
    registry.register(
        "cursors_no_timeout",
        "Open cursors created with noCursorTimeout",
        gauge(cursors.no_timeout_count() as u64),
    );
    registry.register_with_unit(
        "cursors_held",
        "What open cursors hold of blocking stages' results",
        Unit::Bytes,
        gauge(cursors.held_bytes() as u64),
    );
}

fn writer(registry: &mut Registry, shared: &Shared) {
    let w = &shared.engine.writer_stats;
    registry.register(
        "writer_groups",
        "Commit groups the writer committed or tried to",
        counter(&w.groups),
    );
    registry.register(
        "writer_jobs",
        "Write jobs in those groups (a group commits many)",
        counter(&w.jobs),
    );
    registry.register(
        "writer_syncs",
        "Groups synced to disk because a write in them asked for durability",
        counter(&w.syncs),
    );
    registry.register(
        "writer_failed_commits",
        "Groups whose commit failed",
        counter(&w.failed_commits),
    );
    registry.register(
        "writer_out_of_disk_space",
        "Groups refused because the disk was full",
        counter(&w.out_of_space),
    );
    registry.register(
        "writer_read_only",
        "1 while the server refuses writes after a storage failure",
        gauge(u64::from(w.read_only_reason().is_some())),
    );
    registry.register_with_unit(
        "writer_sync_duration",
        "Time to commit and sync each durable group",
        Unit::Seconds,
        w.sync_latency.histogram(),
    );
}

fn storage(registry: &mut Registry, shared: &Shared) {
    let engine = &shared.engine;
    registry.register_with_unit(
        "storage_size",
        "What the data takes: the data directory on disk, or memory with --storage memory",
        Unit::Bytes,
        gauge(engine.disk_space()),
    );
    if let Some(memory) = engine.memory_use() {
        registry.register_with_unit(
            "storage_block_cache",
            "The storage engine's block cache in use",
            Unit::Bytes,
            gauge(memory.block_cache_bytes),
        );
        registry.register_with_unit(
            "storage_memtables",
            "The storage engine's memtables, every keyspace",
            Unit::Bytes,
            gauge(memory.write_buffer_bytes),
        );
    }
    let documents = Family::<CollectionLabels, Gauge<i64>>::default();
    let bytes = Family::<CollectionLabels, Gauge<i64>>::default();
    // On a poisoned catalog (counted and logged; `locks_poisoned` below) the per-collection
    // figures are left out rather than shown as none.
    let Ok(view) = engine.read() else {
        return;
    };
    for meta in view.catalog.all() {
        let Ok(totals) = view.visible_totals(meta) else {
            continue;
        };
        let labels = CollectionLabels {
            database: meta.db.clone(),
            collection: meta.name.clone(),
        };
        documents
            .get_or_create(&labels)
            .set(i64::try_from(totals.count).unwrap_or(i64::MAX));
        bytes
            .get_or_create(&labels)
            .set(i64::try_from(totals.size).unwrap_or(i64::MAX));
    }
    registry.register(
        "collection_documents",
        "Documents a client can read in each collection (expired ones left out)",
        documents,
    );
    registry.register_with_unit(
        "collection_data",
        "Total BSON size of those documents",
        Unit::Bytes,
        bytes,
    );
}

/// The sweep of dropped collections' and indexes' entries
/// (`serverStatus.storageEngine.droppedSpace`).
fn dropped_space(registry: &mut Registry, shared: &Shared) {
    let sweeper = &shared.engine.sweeper;
    registry.register(
        "dropped_space_deleted_entries",
        "Entries of dropped collections and indexes the sweeper deleted",
        counter(&sweeper.stats.swept),
    );
    registry.register(
        "dropped_space_errors",
        "Sweeper passes that failed",
        counter(&sweeper.stats.errors),
    );
    if let Ok(pending) = sweeper.pending_ranges() {
        registry.register(
            "dropped_space_pending_ranges",
            "Key ranges of dropped collections and indexes not yet deleted",
            gauge(pending as u64),
        );
    }
}

fn ttl(registry: &mut Registry, shared: &Shared) {
    let reaper = &shared.engine.reaper;
    let stats = &reaper.stats;
    registry.register(
        "ttl_deleted_documents",
        "Expired documents the TTL reaper deleted",
        counter(&stats.deleted),
    );
    registry.register("ttl_passes", "TTL reaper passes", counter(&stats.passes));
    registry.register(
        "ttl_errors",
        "TTL reaper passes that failed",
        counter(&stats.errors),
    );
    if let Ok(backlog) = reaper.backlog() {
        registry.register(
            "ttl_backlog",
            "Documents expired now and not yet deleted",
            gauge(backlog),
        );
    }
    registry.register_with_unit(
        "ttl_last_pass_duration",
        "How long the last reaper pass took",
        Unit::Seconds,
        ConstGauge::new(stats.last_pass_micros.load(Ordering::Relaxed) as f64 / 1e6),
    );
    registry.register(
        "ttl_paused",
        "1 while the reaper is paused (the reaper test command)",
        gauge(u64::from(stats.paused.load(Ordering::Relaxed))),
    );
}
