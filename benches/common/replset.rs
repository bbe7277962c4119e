//! Servers for the replica-set benchmark: a standalone, or the one member (the primary) of
//! replica set `rs0` with its operation log, each in-process on a fresh data directory (fjall,
//! durable writes, the system clock), and driver clients that reach them as applications do.
//! Also the server's group-commit counters (`serverStatus.writer`). Measures only.

use super::BoxError;
use mayfly::clock::SystemClock;
use mayfly::config::{Config, StorageKind};
use mayfly::server::{RunningServer, Server};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::net::SocketAddr;
use std::sync::Arc;

/// The replica set's name when a member runs as one.
pub const SET_NAME: &str = "rs0";

/// One in-process server and its data directory (removed when dropped, after [`stop`]).
///
/// [`stop`]: Member::stop
pub struct Member {
    pub addr: SocketAddr,
    /// `Some(SET_NAME)` for a replica-set member; `None` for a standalone.
    pub set_name: Option<&'static str>,
    server: RunningServer,
    _dir: tempfile::TempDir,
}

impl Member {
    /// Starts a standalone (`set_name: None`) or the primary of `set_name` (`--replSet`).
    pub async fn start(set_name: Option<&'static str>) -> Result<Member, BoxError> {
        let dir = tempfile::tempdir()?;
        let mut config = Config::for_tests(dir.path());
        config.enable_test_commands = false;
        config.storage = StorageKind::Disk;
        config.replication.set_name = set_name.map(str::to_owned);
        let server = Server::bind(config, Arc::new(SystemClock::new()))
            .await?
            .spawn();
        let addr = server.addr().ok_or("the server has no address")?;
        Ok(Member {
            addr,
            set_name,
            server,
            _dir: dir,
        })
    }

    /// A client whose pool holds `connections` connections: `directConnection=true` to a
    /// standalone, `replicaSet=rs0` (server discovery) to a member. `retry_writes: None` keeps
    /// the driver's default (on: every write to a member carries `lsid` and `txnNumber`).
    pub async fn client(
        &self,
        connections: usize,
        retry_writes: Option<bool>,
    ) -> Result<Client, BoxError> {
        let uri = match self.set_name {
            Some(name) => format!("mongodb://{}/?replicaSet={name}", self.addr),
            None => format!("mongodb://{}/?directConnection=true", self.addr),
        };
        let mut options = ClientOptions::parse(&uri).await?;
        options.max_pool_size = Some(connections as u32);
        options.min_pool_size = Some(connections as u32);
        options.retry_writes = retry_writes;
        Ok(Client::with_options(options)?)
    }

    /// Shuts the server down gracefully (the engine closes, so the directory can go).
    pub async fn stop(self) {
        self.server.shutdown().await;
    }
}

/// CPU time (user + system) this process has used, from `/proc/self/stat` (Linux; `None`
/// elsewhere). The driver and an in-process server share it, so a difference over a run
/// divided by the operations is what one operation costs both ends: steadier than a rate on a
/// machine shared with other work.
pub fn process_cpu() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses: state is the
    // first, utime the 12th and stime the 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(ticks * 10))
}
