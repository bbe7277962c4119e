//! The listener: binds the configured addresses, sets up TLS (`tls::setup`), enforces the
//! connection limit, spawns one session task per connection, and shuts down gracefully (stop
//! accepting, let every command in flight finish and its reply go out, then return). The TLS
//! handshake happens in the session task, never in the accept loop.

use crate::clock::Clock;
use crate::command::replset::{advertised_host, ReplicaSet};
use crate::command::Shared;
use crate::config::{Config, StorageKind};
use crate::session;
use crate::tls::accept::Transport;
use crate::tls::{self, ServerTls};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub struct Server {
    listeners: Vec<TcpListener>,
    /// The Prometheus endpoint's listener (`--metrics-addr`).
    metrics: Option<TcpListener>,
    shared: Arc<Shared>,
    transport: Arc<Transport>,
}

impl Server {
    /// Prepares the data directory (none with `--storage memory`) and binds every configured
    /// address.
    pub async fn bind(config: Config, clock: Arc<dyn Clock>) -> io::Result<Server> {
        if config.storage == StorageKind::Disk {
            std::fs::create_dir_all(&config.dbpath).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot create data directory {}: {e}",
                        config.dbpath.display()
                    ),
                )
            })?;
        }
        let tls =
            tls::setup(&config).map_err(|e| io::Error::other(format!("cannot set up TLS: {e}")))?;
        if let Some(dev) = tls.as_ref().and_then(|t| t.dev.as_ref()) {
            if dev.generated_ca || dev.generated_server {
                tracing::info!(
                    dir = %dev.dir.display(),
                    ca_dir = %dev.ca_dir.display(),
                    ca = dev.generated_ca,
                    server = dev.generated_server,
                    "generated development TLS certificates"
                );
            }
        }
        let mut listeners = Vec::new();
        for ip in &config.bind_ips {
            let addr = format!("{}:{}", bracket_ipv6(ip), config.port);
            let listener = TcpListener::bind(&addr)
                .await
                .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
            listeners.push(listener);
        }
        let metrics = match &config.metrics_addr {
            Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot listen for metrics on {addr}: {e}"),
                )
            })?),
            None => None,
        };
        let (held_bytes, no_timeout) = (
            config.cursor_memory_limit_bytes,
            config.max_no_timeout_cursors,
        );
        // Process-wide: the heap counted by `allocation::Metered`, where the binary installs it,
        // and the resident size, sampled while the process lives.
        crate::allocation::set_limit(config.memory_limit_bytes);
        if crate::allocation::is_metered() {
            sample_resident_memory();
        }
        let mut shared = Shared::open(config, clock)
            .map_err(|e| io::Error::other(format!("cannot open the data directory: {e}")))?;
        shared.replica_set = replica_set(&shared, &listeners);
        let limits = &shared.engine.cursors.limits;
        limits.held_bytes.store(held_bytes, Ordering::Relaxed);
        limits.no_timeout.store(no_timeout, Ordering::Relaxed);
        crate::command::ensure_account(&shared).await.map_err(|e| {
            io::Error::other(format!("cannot create the Cosmos DB account user: {e}"))
        })?;
        Ok(Server {
            listeners,
            metrics,
            shared: Arc::new(shared),
            transport: Arc::new(Transport {
                tls,
                reported: Default::default(),
            }),
        })
    }

    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// Where the Prometheus endpoint listens, if it was asked for.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.shared)
    }

    /// The TLS side (`None` with `--tlsMode disabled`): the certificate served, and where
    /// generated development certificates are.
    pub fn tls(&self) -> Option<&ServerTls> {
        self.transport.tls.as_ref()
    }

    /// Serves until `shutdown` completes, then drains the connections and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let token = CancellationToken::new();
        let tracker = TaskTracker::new();
        for listener in self.listeners {
            let shared = Arc::clone(&self.shared);
            let transport = Arc::clone(&self.transport);
            let token = token.clone();
            let sessions = tracker.clone();
            tracker.spawn(accept_loop(listener, shared, transport, token, sessions));
        }
        if let Some(limit) = self.shared.config.profile.request_time_limit() {
            tracker.spawn(crate::command::watch_request_time(
                Arc::clone(&self.shared),
                limit,
                token.clone(),
            ));
        }
        if let Some(listener) = self.metrics {
            let shared = Arc::clone(&self.shared);
            tracker.spawn(crate::metrics::endpoint::serve(
                listener,
                shared,
                token.clone(),
            ));
        }
        shutdown.await;
        tracing::info!("shutting down: no new connections; finishing commands in flight");
        token.cancel();
        if let Some(rs) = &self.shared.replica_set {
            rs.shutting_down();
        }
        tracker.close();
        tracker.wait().await;
        // Dropping the TLS side removes a memory server's temporary certificates.
        drop(self.transport);
        tracing::info!("shutdown complete");
    }

    /// Runs the server on the current runtime; the handle stops it.
    pub fn spawn(self) -> RunningServer {
        let token = CancellationToken::new();
        let addrs = self.local_addrs();
        let metrics_addr = self.metrics_addr();
        let stop = token.clone();
        let join = tokio::spawn(self.run(async move { stop.cancelled().await }));
        RunningServer {
            addrs,
            metrics_addr,
            token,
            join,
        }
    }
}

/// The replica set this server is the member of, with `--replSet`: advertised as
/// `--advertise-host`, or the first bind address and the port its first listener has.
fn replica_set(shared: &Shared, listeners: &[TcpListener]) -> Option<ReplicaSet> {
    let replication = &shared.config.replication;
    let name = replication.set_name.clone()?;
    let listening = listeners.first()?.local_addr().ok()?;
    let first_bind = shared
        .config
        .bind_ips
        .first()
        .map_or("localhost", String::as_str);
    let host = advertised_host(replication.advertise_host.as_deref(), first_bind, listening);
    tracing::info!(set = %name, host = %host, "replica set member, primary");
    let tags = match shared.config.profile.region() {
        Some(region) => bson::doc! {"region": region},
        None => bson::Document::new(),
    };
    Some(
        ReplicaSet::new(
            name,
            host,
            shared.clock.now_datetime(),
            shared.engine.optimes(),
        )
        .with_tags(tags),
    )
}

/// A server running in the background (tests, embedding).
pub struct RunningServer {
    pub addrs: Vec<SocketAddr>,
    /// Where the Prometheus endpoint listens (`--metrics-addr`).
    pub metrics_addr: Option<SocketAddr>,
    token: CancellationToken,
    join: JoinHandle<()>,
}

impl RunningServer {
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addrs.first().copied()
    }

    /// Starts a graceful shutdown and waits for it to finish.
    pub async fn shutdown(self) {
        self.token.cancel();
        let _ = self.join.await;
    }

    /// Starts a graceful shutdown without waiting.
    pub fn begin_shutdown(&self) {
        self.token.cancel();
    }

    pub async fn wait(self) {
        let _ = self.join.await;
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    transport: Arc<Transport>,
    token: CancellationToken,
    sessions: TaskTracker,
) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = token.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => admit(stream, peer, &shared, &transport, &token, &sessions),
            Err(e) => {
                // Usually EMFILE: back off instead of spinning.
                tracing::error!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

fn admit(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    transport: &Arc<Transport>,
    token: &CancellationToken,
    sessions: &TaskTracker,
) {
    let counters = &shared.counters;
    let limit = u64::from(shared.config.max_conns);
    // Reserve a slot first so two simultaneous accepts cannot both take the last one.
    let current = counters.connections_current.fetch_add(1, Ordering::AcqRel);
    if current >= limit {
        counters.connections_current.fetch_sub(1, Ordering::AcqRel);
        counters
            .connections_rejected
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            remote = %peer,
            limit,
            "connection refused because too many open connections"
        );
        drop(stream);
        return;
    }
    counters
        .connections_total_created
        .fetch_add(1, Ordering::Relaxed);
    let shared = Arc::clone(shared);
    let transport = Arc::clone(transport);
    let token = token.clone();
    sessions.spawn(async move {
        let guard = ConnectionSlot(Arc::clone(&shared));
        session::serve(stream, shared, transport, token).await;
        drop(guard);
    });
}

/// Releases a connection slot however the session ends.
struct ConnectionSlot(Arc<Shared>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0
            .counters
            .connections_current
            .fetch_sub(1, Ordering::AcqRel);
    }
}

fn bracket_ipv6(ip: &str) -> String {
    if ip.contains(':') && !ip.starts_with('[') {
        format!("[{ip}]")
    } else {
        ip.to_owned()
    }
}

/// How often the resident size is read for [`crate::allocation::over_limit`]: often enough that
/// a burst of allocations is seen before it can take the process past its container's limit.
const RESIDENT_SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// Starts, once per process, the thread that samples the process's resident size. It belongs
/// to the process, as the counted heap it stands beside does: it holds nothing and sleeps
/// between two reads of `/proc/self/status`; it ends with the process.
fn sample_resident_memory() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let Some(first) = crate::host::resident_bytes() else {
            return;
        };
        crate::allocation::set_resident(first);
        let spawned = std::thread::Builder::new()
            .name("mayfly-resident".into())
            .spawn(|| loop {
                std::thread::sleep(RESIDENT_SAMPLE_EVERY);
                if let Some(bytes) = crate::host::resident_bytes() {
                    crate::allocation::set_resident(bytes);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the resident memory sampler");
        }
    });
}
