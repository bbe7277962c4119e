//! What the server says about itself: `buildInfo`, `hostInfo`, `serverStatus`,
//! `getCmdLineOpts`, `listCommands`.

use crate::command::{args, CommandName, Scope, Shared};
use crate::host;
use crate::protocol::{Compressor, MAX_BSON_OBJECT_SIZE};
use crate::status::Counters;
use bson::{doc, Bson, Document};
use std::sync::atomic::Ordering;

/// The MongoDB version mayfly answers as; its wire versions are those of 7.0.
pub const MONGODB_VERSION: &str = "7.0.0";
const VERSION_ARRAY: [i32; 4] = [7, 0, 0, 0];

/// `buildInfo`: mongod 7.0's, or in the Cosmos profile the account's server version.
pub fn build_info(profile: &crate::profile::Profile) -> Document {
    let (version, version_array) = if profile.is_cosmos() {
        (profile.version.version(), profile.version.version_array())
    } else {
        (MONGODB_VERSION.to_owned(), VERSION_ARRAY)
    };
    doc! {
        "version": version,
        "gitVersion": crate::version::GIT_COMMIT,
        "modules": Bson::Array(Vec::new()),
        "allocator": "system",
        "javascriptEngine": "none",
        "sysInfo": "deprecated",
        "versionArray": version_array.to_vec(),
        "openssl": {"running": "disabled", "compiled": "disabled"},
        "buildEnvironment": {
            "distmod": "",
            "distarch": std::env::consts::ARCH,
            "cc": "rustc",
            "ccflags": "",
            "cxx": "",
            "cxxflags": "",
            "linkflags": "",
            "target_arch": std::env::consts::ARCH,
            "target_os": std::env::consts::OS,
        },
        "bits": 64,
        "debug": cfg!(debug_assertions),
        "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE as i32,
        "storageEngines": ["mayfly"],
        "ok": 1.0,
    }
}

pub fn cmd_line_opts(shared: &Shared) -> Document {
    let c = &shared.config;
    // mongod's `net.tls` section; the key password appears only as `<password>`.
    let mut tls = doc! {"mode": c.tls.mode.name()};
    if let Some(file) = &c.tls.certificate_key_file {
        tls.insert("certificateKeyFile", file.display().to_string());
    }
    if c.tls.certificate_key_file_password.is_some() {
        tls.insert("certificateKeyFilePassword", "<password>");
    }
    if let Some(file) = &c.tls.ca_file {
        tls.insert("CAFile", file.display().to_string());
    }
    if c.tls.allow_connections_without_certificates {
        tls.insert("allowConnectionsWithoutCertificates", true);
    }
    let authorization = if c.auth { "enabled" } else { "disabled" };
    let mut replication = doc! {"oplogSizeMB": i64::try_from(c.replication.oplog_size_bytes / (1024 * 1024)).unwrap_or(i64::MAX)};
    if let Some(name) = &c.replication.set_name {
        replication.insert("replSetName", name.clone());
    }
    doc! {
        "argv": c.argv.clone(),
        "parsed": {
            "net": {
                "bindIp": c.bind_ips.join(","),
                "port": i32::from(c.port),
                "maxIncomingConnections": i64::from(c.max_conns),
                "tls": tls,
            },
            "security": {"authorization": authorization},
            "storage": {
                "dbPath": c.dbpath.display().to_string(),
                "cacheSizeGB": c.cache_bytes as f64 / (1u64 << 30) as f64,
            },
            "systemLog": {"format": format!("{:?}", c.log_format).to_lowercase(), "level": c.log_level.clone()},
            "operationProfiling": {
                "mode": match c.profile_level { 0 => "off", 1 => "slowOp", _ => "all" },
                "slowOpThresholdMs": i64::try_from(c.slow_ms).unwrap_or(i64::MAX),
            },
            "replication": replication,
            "setParameter": {"enableTestCommands": c.enable_test_commands},
        },
        "ok": 1.0,
    }
}

pub fn host_info(shared: &Shared) -> Document {
    let (os_name, os_version) = host::os_name_and_version();
    let mem = host::mem_size_mb();
    doc! {
        "system": {
            "currentTime": shared.clock.now_datetime(),
            "hostname": host::hostname(),
            "cpuAddrSize": 64,
            "memSizeMB": mem,
            "memLimitMB": mem,
            "numCores": host::num_cores(),
            "numCoresAvailableToProcess": host::num_cores(),
            "cpuArch": std::env::consts::ARCH,
            "numaEnabled": false,
        },
        "os": {"type": "Linux", "name": os_name, "version": os_version},
        "extra": {},
        "ok": 1.0,
    }
}

/// `serverStatus`. As in mongod, `{<section>: 0}` (any falsy value) leaves a top-level section
/// out; leaving out `ttl` also skips counting the reaper's backlog, which reads the due expiry
/// ranges.
pub fn server_status(shared: &Shared, cmd: &Document) -> Document {
    let mut status = all_sections(shared, cmd);
    if shared.config.profile.charges() {
        // Before `ok`, with the other sections.
        let ok = status.remove("ok");
        status.insert("requestUnits", shared.request_units.server_status());
        if let Some(ok) = ok {
            status.insert("ok", ok);
        }
    }
    let excluded: Vec<String> = cmd
        .iter()
        .skip(1)
        .filter(|(name, value)| status.contains_key(name.as_str()) && !args::is_truthy(value))
        .map(|(name, _)| name.clone())
        .collect();
    for name in excluded {
        if name != "ok" {
            status.remove(&name);
        }
    }
    status
}

fn all_sections(shared: &Shared, cmd: &Document) -> Document {
    let c = &shared.counters;
    let uptime = shared.started.elapsed();
    let current = Counters::get(&c.connections_current);
    let (resident, virt) = host::process_mem_mb();
    doc! {
        "host": host::hostname(),
        "version": MONGODB_VERSION,
        "process": "mayfly",
        "mayflyVersion": env!("CARGO_PKG_VERSION"),
        "pid": i64::from(std::process::id()),
        "uptime": uptime.as_secs_f64().floor(),
        "uptimeMillis": i64::try_from(uptime.as_millis()).unwrap_or(i64::MAX),
        "uptimeEstimate": i64::try_from(uptime.as_secs()).unwrap_or(i64::MAX),
        "localTime": shared.clock.now_datetime(),
        "connections": {
            "current": current,
            "available": i64::from(shared.config.max_conns).saturating_sub(current).max(0),
            "totalCreated": Counters::get(&c.connections_total_created),
            "rejected": Counters::get(&c.connections_rejected),
        },
        "opcounters": opcounters_status(c),
        "network": {
            "bytesIn": Counters::get(&c.bytes_in),
            "bytesOut": Counters::get(&c.bytes_out),
            "numRequests": Counters::get(&c.requests),
            "compression": compression_status(c),
        },
        "transportSecurity": transport_security_status(c),
        "security": {"authentication": shared.auth_failures.server_status()},
        "mem": {"bits": 64, "resident": resident, "virtual": virt, "supported": true},
        "storageEngine": storage_engine_status(shared),
        "ttl": if cmd.get("ttl").is_none_or(args::is_truthy) {
            Bson::Document(ttl_status(shared))
        } else {
            Bson::Null
        },
        "metrics": {
            "ttl": {
                "deletedDocuments": Counters::get(&shared.engine.reaper.stats.deleted),
                "passes": Counters::get(&shared.engine.reaper.stats.passes),
            },
            "cursor": {
                "open": {
                    "total": shared.engine.cursors.open_count() as i64,
                    "noTimeout": shared.engine.cursors.no_timeout_count() as i64,
                },
                // What open cursors hold of blocking stages' results (cursorMemoryLimitMB).
                "heldBytes": shared.engine.cursors.held_bytes() as i64,
            },
        },
        "writer": writer_status(shared),
        "locks": {"poisoned": poisoned_locks_status()},
        "ok": 1.0,
    }
}

/// Locks found poisoned since the process started: in all, and by lock name (`sync`).
fn poisoned_locks_status() -> Document {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let mut by_lock = Document::new();
    for (name, n) in crate::sync::poisoned_by_lock() {
        by_lock.insert(name, count(n));
    }
    doc! {"total": count(crate::sync::poisoned_total()), "byLock": by_lock}
}

/// TLS connections accepted since start, by negotiated version.
fn transport_security_status(c: &Counters) -> Document {
    let mut d = Document::new();
    for version in crate::status::TlsVersion::ALL {
        let count = c
            .transport_security
            .get(version.index())
            .map_or(0, Counters::get);
        d.insert(version.name(), count);
    }
    d
}

/// TTL-24: what the reaper has done and how far behind it is.
fn ttl_status(shared: &Shared) -> Document {
    let stats = &shared.engine.reaper.stats;
    let last_error = stats.last_error().clone().map_or(Bson::Null, Bson::String);
    // Null when the catalog lock is poisoned: no count is known (`locks.poisoned` says why).
    let backlog = shared.engine.reaper.backlog().map_or(Bson::Null, |n| {
        Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX))
    });
    doc! {
        "deletedDocuments": Counters::get(&stats.deleted),
        "passes": Counters::get(&stats.passes),
        "backlog": backlog,
        "lastPassMillis": stats.last_pass_micros.load(Ordering::Relaxed) as f64 / 1000.0,
        "paused": stats.paused.load(Ordering::Relaxed),
        "errors": Counters::get(&stats.errors),
        "lastError": last_error,
    }
}

/// The storage engine: which backend, and whether it takes writes (`readOnly`, as mongod
/// reports it; here it turns true after a storage failure that left a commit's fate unknown).
fn storage_engine_status(shared: &Shared) -> Document {
    let engine = &shared.engine;
    let reason = engine.writer_stats.read_only_reason();
    let mut status = doc! {
        "name": "mayfly",
        "backend": engine.storage_name(),
        "persistent": engine.is_persistent(),
        "supportsCommittedReads": true,
        "readOnly": reason.is_some(),
        "readOnlyReason": reason.map_or(Bson::Null, Bson::String),
    };
    if let Some(format) = engine.format_version() {
        // mayfly's own field: the on-disk format of the data directory (`mayfly --version`
        // names the one this binary writes).
        status.insert("formatVersion", i32::try_from(format).unwrap_or(i32::MAX));
    }
    if let Some(background) = engine.storage_background() {
        // A failed memtable flush or compaction stops the engine until the next write reopens
        // it from its journal (`halted` meanwhile).
        status.insert(
            "background",
            doc! {
                "halted": background.halted,
                "failures": i64::try_from(background.failures).unwrap_or(i64::MAX),
                "reopens": i64::try_from(background.reopens).unwrap_or(i64::MAX),
            },
        );
    }
    let sweep = &engine.sweeper.stats;
    status.insert(
        "droppedSpace",
        doc! {
            "pendingRanges": engine
                .sweeper
                .pending_ranges()
                .map_or(Bson::Null, |n| Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX))),
            "entriesDeleted": Counters::get(&sweep.swept),
            "errors": Counters::get(&sweep.errors),
        },
    );
    if let Some(memory) = engine.memory_use() {
        let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        status.insert(
            "cache",
            doc! {
                "maximumBytesConfigured": bytes(memory.budget_bytes),
                "blockCacheMaximumBytes": bytes(memory.block_cache_capacity_bytes),
                "blockCacheBytes": bytes(memory.block_cache_bytes),
                "memtableBytes": bytes(memory.write_buffer_bytes),
                "memtableLimitBytes": bytes(memory.memtable_limit_bytes),
            },
        );
    }
    status
}

/// The group-commit writer: commit groups, jobs in them, journal syncs, and failed commits.
fn writer_status(shared: &Shared) -> Document {
    let w = &shared.engine.writer_stats;
    doc! {
        "groups": Counters::get(&w.groups),
        "jobs": Counters::get(&w.jobs),
        "syncs": Counters::get(&w.syncs),
        "failedCommits": Counters::get(&w.failed_commits),
        "outOfDiskSpace": Counters::get(&w.out_of_space),
        "lastError": w.last_error().map_or(Bson::Null, Bson::String),
    }
}

fn opcounters_status(c: &Counters) -> Document {
    let mut doc = doc! {
        "insert": Counters::get(&c.op_insert),
        "query": Counters::get(&c.op_query),
        "update": Counters::get(&c.op_update),
        "delete": Counters::get(&c.op_delete),
        "getmore": Counters::get(&c.op_getmore),
        "command": Counters::get(&c.op_command),
    };
    if let Some(deprecated) = c.deprecated.status() {
        doc.insert("deprecated", deprecated);
    }
    doc
}

fn compression_status(c: &Counters) -> Document {
    let mut out = Document::new();
    for (compressor, counters) in Compressor::ALL.iter().zip(&c.compression) {
        out.insert(
            compressor.name(),
            doc! {
                "compressor": {
                    "bytesIn": Counters::get(&counters.compressor_bytes_in),
                    "bytesOut": Counters::get(&counters.compressor_bytes_out),
                },
                "decompressor": {
                    "bytesIn": Counters::get(&counters.decompressor_bytes_in),
                    "bytesOut": Counters::get(&counters.decompressor_bytes_out),
                },
            },
        );
    }
    out
}

pub fn list_commands(shared: &Shared) -> Document {
    let mut commands = Document::new();
    for &name in CommandName::ALL {
        // Test commands without --enable-test-commands, Cosmos's outside its profile.
        if crate::command::lookup(shared, name.name()).is_err() {
            continue;
        }
        commands.insert(
            name.name(),
            doc! {
                "help": name.help(),
                "adminOnly": matches!(name.scope(), Scope::Admin | Scope::TestAdmin),
                "secondaryOk": true,
                "requiresAuth": false,
                "apiVersions": Bson::Array(Vec::new()),
                "deprecatedApiVersions": Bson::Array(Vec::new()),
            },
        );
    }
    doc! {"commands": commands, "ok": 1.0}
}
