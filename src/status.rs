//! Server-wide counters reported by `serverStatus`: connections, operation counts, network.
//!
//! Owns only numbers; who increments them is the session and command layers' business.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Counters {
    pub connections_current: AtomicU64,
    pub connections_total_created: AtomicU64,
    pub connections_rejected: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub requests: AtomicU64,
    pub op_insert: AtomicU64,
    pub op_query: AtomicU64,
    pub op_update: AtomicU64,
    pub op_delete: AtomicU64,
    pub op_getmore: AtomicU64,
    pub op_command: AtomicU64,
    /// Per compressor (snappy, zlib, zstd), as in mongod's `network.compression`.
    pub compression: [CompressionCounters; 3],
}

/// Bytes through one compressor: `compressor` for replies, `decompressor` for requests.
#[derive(Debug, Default)]
pub struct CompressionCounters {
    pub compressor_bytes_in: AtomicU64,
    pub compressor_bytes_out: AtomicU64,
    pub decompressor_bytes_in: AtomicU64,
    pub decompressor_bytes_out: AtomicU64,
}

/// The operation family a command is counted under in `opcounters`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Insert,
    Query,
    Update,
    Delete,
    GetMore,
    Command,
}

impl Counters {
    pub fn count(&self, kind: OpKind, n: u64) {
        let counter = match kind {
            OpKind::Insert => &self.op_insert,
            OpKind::Query => &self.op_query,
            OpKind::Update => &self.op_update,
            OpKind::Delete => &self.op_delete,
            OpKind::GetMore => &self.op_getmore,
            OpKind::Command => &self.op_command,
        };
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> i64 {
        i64::try_from(counter.load(Ordering::Relaxed)).unwrap_or(i64::MAX)
    }
}
