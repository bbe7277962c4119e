//! mayfly: a MongoDB wire-protocol compatible server whose storage engine applies Azure Cosmos DB
//! for MongoDB's time-to-live rules.
//!
//! # Layout
//!
//! ```text
//! socket bytes
//!   -> wire      frame, decode OP_MSG / OP_QUERY / OP_COMPRESSED (and tell the removed legacy
//!                opcodes apart), encode replies
//!   -> session   one task per connection: TLS (tls: sniff, handshake, certificates), request
//!                loop, compression, tracing span, mongod 7.0's answers to removed opcodes
//!   -> command   one `match` on the command name -> a module per family
//!   -> pipeline  aggregation: stages parsed once, the leading $match/$sort/$skip/$limit handed
//!                to the executor, the rest run over document streams
//!   -> engine    catalog, executor (planner, plan stages, explain), documents, indexes, cursors,
//!                TTL visibility, group-commit writer, index builds, reaper
//!   -> storage   ordered keyspaces with snapshots and atomic write batches: fjall on disk, or
//!                in memory (`--storage memory`)
//!   side roads:  query (filter, update, projection, sort, expressions, reshaping stages, BSON
//!                order, Decimal128 numbers, collation, regex, depth and size: pure)
//!                ttl (TTL rules, Cosmos `_ts` and date indexes: pure)
//!                auth (SCRAM credentials and conversations, users, built-in roles: pure)
//!                calendar (civil dates, time zones, date units, ISO text: pure)
//!                clock (the only place that reads wall time), host (facts about the machine),
//!                allocation (the counting global allocator and the process's memory limit),
//!                protocol (limits and compressor names every layer shares), status (counters),
//!                latency (the histograms commands and syncs are timed into), sync (taking a
//!                lock a panicking thread may have poisoned: refuse or recover, count, log)
//! ```
//!
//! A module imports only from layers below it. `server` owns the listener, the connection limit
//! and shutdown; `config` is the parsed command line, environment and config file;
//! `connection_string` is the URI the start-up log suggests; `log_line` renders an event as
//! mongod's structured log line; `recent_log` keeps the last log lines for `getLog`; `version` is what the binary is (version, commit, build date, the data directory format it writes); `metrics` serves the counters in Prometheus's format (`--metrics-addr`);
//! `tools` are the offline subcommands (`dump`, `restore`, `check`) that work on a stopped data
//! directory through the engine.

// Two modules need `unsafe`, each for one reason and allowed where it is declared: the
// counting global allocator (`allocation`) and the PCRE2 binding (`query::regex::pcre`).
#![deny(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

#[allow(unsafe_code)]
pub mod allocation;
pub mod auth;
pub mod calendar;
pub mod clock;
pub mod command;
pub mod config;
pub mod connection_string;
pub mod engine;
pub mod error;
pub mod host;
pub mod latency;
pub mod log_line;
pub mod metrics;
pub mod pipeline;
pub mod profile;
pub mod protocol;
pub mod query;
pub mod recent_log;
pub mod server;
pub mod session;
pub mod status;
pub mod storage;
pub mod sync;
pub mod tls;
pub mod tools;
pub mod ttl;
pub mod version;
pub mod wire;
