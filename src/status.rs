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
    /// Requests with the opcodes removed in MongoDB 6.0 (mongod's `opcounters.deprecated`).
    pub deprecated: DeprecatedOpCounters,
    /// Per compressor (snappy, zlib, zstd), as in mongod's `network.compression`.
    pub compression: [CompressionCounters; 3],
    /// TLS connections by negotiated version: 1.0, 1.1, 1.2, 1.3, unknown (mongod's
    /// `transportSecurity`).
    pub transport_security: [AtomicU64; 5],
}

/// Bytes through one compressor: `compressor` for replies, `decompressor` for requests.
#[derive(Debug, Default)]
pub struct CompressionCounters {
    pub compressor_bytes_in: AtomicU64,
    pub compressor_bytes_out: AtomicU64,
    pub decompressor_bytes_in: AtomicU64,
    pub decompressor_bytes_out: AtomicU64,
}

/// Removed legacy requests, by opcode. `insert` counts the documents an OP_INSERT carried;
/// `query` counts OP_QUERY on a namespace that is not `<db>.$cmd`.
#[derive(Debug, Default)]
pub struct DeprecatedOpCounters {
    pub insert: AtomicU64,
    pub query: AtomicU64,
    pub update: AtomicU64,
    pub delete: AtomicU64,
    pub getmore: AtomicU64,
    pub killcursors: AtomicU64,
}

impl DeprecatedOpCounters {
    /// `{total, insert, query, update, delete, getmore, killcursors}`, or `None` before the
    /// first removed request (mongod leaves `opcounters.deprecated` out until then).
    pub fn status(&self) -> Option<bson::Document> {
        let fields = [
            ("insert", Counters::get(&self.insert)),
            ("query", Counters::get(&self.query)),
            ("update", Counters::get(&self.update)),
            ("delete", Counters::get(&self.delete)),
            ("getmore", Counters::get(&self.getmore)),
            ("killcursors", Counters::get(&self.killcursors)),
        ];
        let total = fields
            .iter()
            .fold(0i64, |sum, (_, n)| sum.saturating_add(*n));
        if total == 0 {
            return None;
        }
        let mut doc = bson::doc! {"total": total};
        for (name, n) in fields {
            doc.insert(name, n);
        }
        Some(doc)
    }
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

/// A negotiated TLS version, as `serverStatus.transportSecurity` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    V1_0,
    V1_1,
    V1_2,
    V1_3,
    Unknown,
}

impl TlsVersion {
    pub const ALL: [TlsVersion; 5] = [
        TlsVersion::V1_0,
        TlsVersion::V1_1,
        TlsVersion::V1_2,
        TlsVersion::V1_3,
        TlsVersion::Unknown,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::V1_0 => "1.0",
            TlsVersion::V1_1 => "1.1",
            TlsVersion::V1_2 => "1.2",
            TlsVersion::V1_3 => "1.3",
            TlsVersion::Unknown => "unknown",
        }
    }

    /// Its slot in [`Counters::transport_security`].
    pub fn index(self) -> usize {
        self as usize
    }
}
