//! What a command runs against: the server-wide [`Shared`] state and the [`Connection`] it
//! arrived on. Owns no sockets: the session layer fills in the addresses.

pub use super::state::identity::{app_name, AuthenticatedUser};
use crate::clock::{Clock, Stopwatch};
use crate::config::{Config, StorageKind};
use crate::engine::Engine;
use crate::error::Result;
use crate::protocol::Compressor;
use crate::status::Counters;
use bson::Document;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

/// Server-wide state shared by every connection.
pub struct Shared {
    pub config: Config,
    pub engine: Engine,
    pub clock: Arc<dyn Clock>,
    pub counters: Counters,
    /// Per-command counts and latencies (the metrics endpoint).
    pub latencies: super::latencies::CommandLatencies,
    /// The profiler's settings (`profile`), which also set what is logged as slow.
    pub profiler: super::state::profiler::Profiler,
    /// Operations per collection (`top`).
    pub top: super::state::top::Top,
    pub started: Stopwatch,
    pub start_millis: i64,
    /// The operations running now (`currentOp`, `killOp`).
    pub ops: super::operations::OpRegistry,
    /// The fail points `configureFailPoint` sets (test commands).
    pub fail_points: super::failpoint::FailPoints,
    /// The replica set this server is the one member of (`--replSet`); `None`: standalone.
    pub replica_set: Option<super::state::replica_set::ReplicaSet>,
    /// The logical sessions (`lsid`s) in use.
    pub sessions: super::session_registry::SessionRegistry,
    /// The sessions' multi-document transactions.
    pub transactions: super::transactions::TransactionTable,
    /// Request units charged and budgets (the Cosmos profile).
    pub request_units: super::state::request_units::RequestUnits,
    /// Failed authentications: their count and each client address's back-off.
    pub auth_failures: super::auth_failures::AuthFailures,
    next_connection_id: AtomicI32,
}

impl Shared {
    /// Opens the storage engine: in the configured data directory, or in memory.
    pub fn open(config: Config, clock: Arc<dyn Clock>) -> Result<Self> {
        let start_millis = clock.now_millis();
        let engine = match config.storage {
            StorageKind::Disk => Engine::open_with(
                &config.dbpath,
                Arc::clone(&clock),
                &crate::storage::FjallConfig::for_budget(config.cache_bytes),
            )?,
            StorageKind::Memory => {
                Engine::open_memory_with(Arc::clone(&clock), config.in_memory_bytes)?
            }
        };
        if config.replication.enabled() {
            engine.enable_oplog(config.replication.oplog_size_bytes)?;
        }
        let profiler = super::state::profiler::Profiler::new(config.slow_ms, config.profile_level);
        let auth_failures = super::auth_failures::AuthFailures::new(
            config.auth_failures_before_delay,
            config.auth_failure_delay,
        );
        Ok(Shared {
            engine,
            config,
            clock,
            counters: Counters::default(),
            latencies: Default::default(),
            profiler,
            top: Default::default(),
            started: Stopwatch::start(),
            start_millis,
            ops: Default::default(),
            fail_points: Default::default(),
            replica_set: None,
            sessions: Default::default(),
            transactions: Default::default(),
            request_units: Default::default(),
            auth_failures,
            next_connection_id: AtomicI32::new(1),
        })
    }

    /// A fresh, server-unique `connectionId`.
    pub fn next_connection_id(&self) -> i32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// Per-connection state.
#[derive(Debug)]
pub struct Connection {
    pub id: i32,
    pub peer: SocketAddr,
    pub local: SocketAddr,
    /// The `client` document of the handshake, once received.
    pub client_metadata: Option<Document>,
    /// Compressors agreed in the handshake, in the client's order of preference.
    pub compressors: Vec<Compressor>,
    /// The users this connection authenticated as, with their roles as of authentication.
    pub authenticated: Vec<AuthenticatedUser>,
    /// The SASL conversation in progress, between `saslStart` and its last `saslContinue`.
    pub(crate) sasl: Option<super::state::sasl_conversation::SaslSession>,
    /// Whether the connection is TLS (set by the session after the handshake).
    pub tls: bool,
    /// The charge of the connection's previous command (the Cosmos profile's
    /// `getLastRequestStatistics`).
    pub last_request: Option<super::state::request_units::LastRequest>,
}

impl Connection {
    pub fn new(id: i32, peer: SocketAddr, local: SocketAddr) -> Self {
        Connection {
            id,
            peer,
            local,
            client_metadata: None,
            compressors: Vec::new(),
            authenticated: Vec::new(),
            sasl: None,
            tls: false,
            last_request: None,
        }
    }

    /// The application name the client gave in its handshake (`appName` in the connection
    /// string).
    pub fn app_name(&self) -> Option<&str> {
        self.client_metadata.as_ref().and_then(app_name)
    }

    /// "driver/version app" from the handshake metadata, for logs.
    pub fn client_summary(&self) -> String {
        let Some(meta) = &self.client_metadata else {
            return String::new();
        };
        let driver = meta.get_document("driver").ok();
        let name = driver.and_then(|d| d.get_str("name").ok()).unwrap_or("?");
        let version = driver
            .and_then(|d| d.get_str("version").ok())
            .unwrap_or("?");
        match app_name(meta) {
            Some(app) => format!("{name}/{version} app={app}"),
            None => format!("{name}/{version}"),
        }
    }
}
