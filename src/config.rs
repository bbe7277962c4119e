//! The server's configuration: command-line flags (mongod's names where mongod has one), each also
//! settable from a `MAYFLY_*` environment variable and from an optional TOML config file.
//!
//! Precedence: flag, then environment variable, then config file, then the default.

use crate::engine::cursor::{DEFAULT_CURSOR_MEMORY_BYTES, DEFAULT_MAX_NO_TIMEOUT_CURSORS};
use crate::profile::{Compat, CosmosVersion, Profile, Rule};
use clap::{Parser, ValueEnum};
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub const DEFAULT_PORT: u16 = 27017;
pub const DEFAULT_BIND_IP: &str = "127.0.0.1";
pub const DEFAULT_DBPATH: &str = "./mayfly-data";
/// mongod's default `net.maxIncomingConnections`.
pub const DEFAULT_MAX_CONNS: u32 = 1_000_000;
pub const DEFAULT_SLOW_MS: u64 = 100;
/// The operation log's default largest size (mongod: 5% of the disk, at least 990 MB).
pub const DEFAULT_OPLOG_SIZE_MB: u64 = 1024;
/// The range mongod allows for `--wiredTigerCacheSizeGB`.
pub const CACHE_SIZE_GB_RANGE: std::ops::RangeInclusive<f64> = 0.25..=10_000.0;
/// Failed authentications a source address is allowed before its failures are delayed.
pub const DEFAULT_AUTH_FAILURES_BEFORE_DELAY: u32 = 5;
/// How long each failure past the allowance waits before its reply, in milliseconds.
pub const DEFAULT_AUTH_FAILURE_DELAY_MS: u64 = 1000;
/// The longest `--auth-failure-delay-ms` (mongod's `authFailedDelayMs` allows the same).
pub const MAX_AUTH_FAILURE_DELAY_MS: u64 = 5000;
/// mongod's default `transactionLifetimeLimitSeconds`.
pub const DEFAULT_TRANSACTION_LIFETIME_LIMIT_SECS: u64 = 60;
/// The Azure Cosmos DB emulator's account name.
pub const DEFAULT_COSMOS_ACCOUNT: &str = "localhost";
/// The Azure Cosmos DB emulator's published, well-known primary key.
pub const EMULATOR_COSMOS_KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// Which clock the server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    /// Wall time (moved forward by `advanceClock` when test commands are enabled).
    #[default]
    System,
    /// Starts at wall time and moves only through `advanceClock`: exact expiry tests.
    Manual,
}

/// Where the server keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StorageKind {
    /// Durable, on disk under `--dbpath` (fjall).
    #[default]
    Disk,
    /// In memory: nothing written to disk, nothing kept after exit (`--dbpath` is not used).
    Memory,
}

/// Whether clients connect with TLS (mongod's `--tlsMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize, Default)]
pub enum TlsMode {
    /// No TLS: a client that starts a TLS handshake is logged and disconnected.
    #[default]
    #[value(name = "disabled")]
    #[serde(rename = "disabled")]
    Disabled,
    /// TLS and plain clients on the same port.
    #[value(name = "allowTLS")]
    #[serde(rename = "allowTLS")]
    AllowTls,
    /// TLS and plain clients on the same port; each plain connection is logged.
    #[value(name = "preferTLS")]
    #[serde(rename = "preferTLS")]
    PreferTls,
    /// TLS only: a plain connection is logged and closed.
    #[value(name = "requireTLS")]
    #[serde(rename = "requireTLS")]
    RequireTls,
}

impl TlsMode {
    /// mongod's spelling, for logs and `getCmdLineOpts`.
    pub fn name(self) -> &'static str {
        match self {
            TlsMode::Disabled => "disabled",
            TlsMode::AllowTls => "allowTLS",
            TlsMode::PreferTls => "preferTLS",
            TlsMode::RequireTls => "requireTLS",
        }
    }
}

/// The TLS settings (mongod's `net.tls`), checked together by [`TlsConfig::validate`].
#[derive(Clone, PartialEq, Default)]
pub struct TlsConfig {
    pub mode: TlsMode,
    /// PEM with the certificate chain and the private key; none: development certificates
    /// are generated.
    pub certificate_key_file: Option<PathBuf>,
    /// Decrypts an `ENCRYPTED PRIVATE KEY` (PKCS#8) in `certificate_key_file`.
    pub certificate_key_file_password: Option<String>,
    /// CA certificates that verify client certificates; clients must present one unless
    /// `allow_connections_without_certificates`.
    pub ca_file: Option<PathBuf>,
    pub allow_connections_without_certificates: bool,
    /// Where the development CA lives (`--tls-ca-dir`, `MAYFLY_CAROOT`); `None`: the per-user
    /// default (`tls::ca_root`).
    pub ca_dir: Option<PathBuf>,
}

/// A configured secret (the Cosmos account key): `Debug` shows `<password>`, never the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<password>")
    }
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("mode", &self.mode)
            .field("certificate_key_file", &self.certificate_key_file)
            .field(
                "certificate_key_file_password",
                &self
                    .certificate_key_file_password
                    .as_ref()
                    .map(|_| "<password>"),
            )
            .field("ca_file", &self.ca_file)
            .field(
                "allow_connections_without_certificates",
                &self.allow_connections_without_certificates,
            )
            .field("ca_dir", &self.ca_dir)
            .finish()
    }
}

impl TlsConfig {
    /// Refuses the combinations mongod refuses at start (and one it would accept without
    /// effect: allowing connections without certificates when none are requested).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |message: &str| Err(ConfigError::Tls(message.to_owned()));
        if self.mode == TlsMode::Disabled {
            if self.certificate_key_file.is_some()
                || self.certificate_key_file_password.is_some()
                || self.ca_file.is_some()
                || self.allow_connections_without_certificates
            {
                return bad("need to enable TLS via the tlsMode flag when using TLS configuration parameters");
            }
            return Ok(());
        }
        if self.certificate_key_file_password.is_some() && self.certificate_key_file.is_none() {
            return bad("--tlsCertificateKeyFilePassword needs --tlsCertificateKeyFile");
        }
        if self.allow_connections_without_certificates && self.ca_file.is_none() {
            return bad("--tlsAllowConnectionsWithoutCertificates needs --tlsCAFile: without a CA file client certificates are not requested");
        }
        Ok(())
    }
}

/// Flags whose value is a secret: `getCmdLineOpts` and the logs show `<password>` instead.
const SECRET_FLAGS: &[&str] = &["--tlsCertificateKeyFilePassword", "--cosmos-key"];

/// The command line with secret values replaced, as mongod redacts `getCmdLineOpts`.
pub fn redact_argv(argv: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for arg in argv {
        if hide_next {
            out.push("<password>".to_owned());
            hide_next = false;
            continue;
        }
        match SECRET_FLAGS.iter().find(|f| arg.starts_with(**f)) {
            Some(flag) if arg.len() == flag.len() => {
                hide_next = true;
                out.push(arg);
            }
            Some(flag) if arg.get(flag.len()..flag.len() + 1) == Some("=") => {
                out.push(format!("{flag}=<password>"));
            }
            _ => out.push(arg),
        }
    }
    out
}

/// mayfly: a MongoDB wire-protocol compatible server with Azure Cosmos DB TTL semantics.
#[derive(Debug, Parser, Default)]
#[command(name = "mayfly", version, about, long_about = None)]
pub struct Cli {
    /// TOML file with any of the settings below (keys: port, bind_ip, dbpath, max_conns,
    /// log_format, log_level, slow_ms, profile, enable_test_commands, clock, storage,
    /// cursor_memory_limit_mb, memory_limit_mb, max_no_timeout_cursors, auth,
    /// auth_failures_before_delay, auth_failure_delay_ms, cosmos_account, cosmos_key,
    /// tls_mode, tls_certificate_key_file, tls_certificate_key_file_password, tls_ca_file,
    /// tls_allow_connections_without_certificates, tls_ca_dir, repl_set, advertise_host, oplog_size_mb,
    /// transaction_lifetime_limit_seconds, cache_size_gb, in_memory_size_gb, metrics_addr, compat, cosmos_version,
    /// cosmos_allow, cosmos_16mb, cosmos_retryable_writes, cosmos_throughput,
    /// cosmos_server_side_retry, cosmos_ttl_custom_path, cosmos_region).
    #[arg(long, short = 'f', env = "MAYFLY_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// TCP port to listen on; 0 picks a free port (the start-up log says which). [default: 27017]
    #[arg(long, env = "MAYFLY_PORT")]
    pub port: Option<u16>,

    /// Comma-separated addresses to listen on. [default: 127.0.0.1]
    #[arg(
        long = "bind-ip",
        visible_alias = "bind_ip",
        env = "MAYFLY_BIND_IP",
        value_name = "ADDRS"
    )]
    pub bind_ip: Option<String>,

    /// Directory holding the data files; created if missing. [default: ./mayfly-data]
    #[arg(long, env = "MAYFLY_DBPATH", value_name = "DIR")]
    pub dbpath: Option<PathBuf>,

    /// Maximum simultaneous client connections; further ones are closed at once. [default: 1000000]
    #[arg(long = "maxConns", env = "MAYFLY_MAX_CONNS", value_name = "N")]
    pub max_conns: Option<u32>,

    /// Log line format. [default: human]
    #[arg(long = "log-format", env = "MAYFLY_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,

    /// Log filter: a level (error, warn, info, debug, trace) or tracing directives
    /// such as "mayfly=debug". [default: info]
    #[arg(long = "log-level", env = "MAYFLY_LOG_LEVEL", value_name = "FILTER")]
    pub log_level: Option<String>,

    /// Commands slower than this many milliseconds are logged (and profiled at level 1).
    /// [default: 100]
    #[arg(
        long = "slow-ms",
        visible_alias = "slowms",
        env = "MAYFLY_SLOW_MS",
        value_name = "MS"
    )]
    pub slow_ms: Option<u64>,

    /// The profiler's level for every database until `profile` sets one: 0 off, 1 slow
    /// operations, 2 all (mongod's `--profile`). [default: 0]
    #[arg(long = "profile", env = "MAYFLY_PROFILE", value_name = "LEVEL",
          value_parser = clap::value_parser!(u8).range(0..=2))]
    pub profile: Option<u8>,

    /// Enable test-only commands (`advanceClock`, `reaper`, `sleep`, `configureFailPoint`,
    /// `waitForFailPoint`). Never in production.
    #[arg(long = "enable-test-commands", env = "MAYFLY_ENABLE_TEST_COMMANDS")]
    pub enable_test_commands: bool,

    /// The server clock: `system`, or `manual` (frozen at start, moved only by the
    /// `advanceClock` test command). [default: system]
    #[arg(long, env = "MAYFLY_CLOCK", value_enum)]
    pub clock: Option<ClockKind>,

    /// Storage backend: `disk` (durable, under --dbpath), or `memory` (nothing is written to
    /// disk and everything is lost at exit: for tests and CI). [default: disk]
    #[arg(long, env = "MAYFLY_STORAGE", value_enum)]
    pub storage: Option<StorageKind>,
    /// Megabytes of sorted or grouped results that open cursors may hold together; a cursor
    /// that would pass it is closed with error 146. [default: 512]
    #[arg(
        long = "cursorMemoryLimitMB",
        env = "MAYFLY_CURSOR_MEMORY_LIMIT_MB",
        value_name = "MB"
    )]
    pub cursor_memory_limit_mb: Option<u64>,

    /// Megabytes of heap the server may hold; past it, the operations that are growing it are
    /// stopped with error 146 instead of the process being killed for memory. [default: 90% of
    /// the machine's memory, or of the container's limit when lower]
    #[arg(
        long = "memoryLimitMB",
        env = "MAYFLY_MEMORY_LIMIT_MB",
        value_name = "MB"
    )]
    pub memory_limit_mb: Option<u64>,

    /// Most open `noCursorTimeout` cursors; opening one more fails with error 96. [default: 1000]
    #[arg(
        long = "maxNoTimeoutCursors",
        env = "MAYFLY_MAX_NO_TIMEOUT_CURSORS",
        value_name = "N"
    )]
    pub max_no_timeout_cursors: Option<u64>,

    /// Require authentication and enforce users' roles (mongod's `--auth`). Off by default:
    /// every client may run every command.
    #[arg(long, env = "MAYFLY_AUTH")]
    pub auth: bool,

    /// Failed authentications one client address is allowed before each further failure's
    /// reply is delayed by --auth-failure-delay-ms. A quiet minute forgets the count.
    /// [default: 5]
    #[arg(
        long = "auth-failures-before-delay",
        env = "MAYFLY_AUTH_FAILURES_BEFORE_DELAY",
        value_name = "N"
    )]
    pub auth_failures_before_delay: Option<u32>,

    /// Milliseconds a failed authentication past the allowance waits before its reply (only
    /// that connection waits); 0 turns the delay off. At most 5000. [default: 1000]
    #[arg(
        long = "auth-failure-delay-ms",
        env = "MAYFLY_AUTH_FAILURE_DELAY_MS",
        value_name = "MS",
        value_parser = clap::value_parser!(u64).range(0..=5000)
    )]
    pub auth_failure_delay_ms: Option<u64>,

    /// The Cosmos DB account: at start a user of this name in `admin` with role `root` and the
    /// account key as password is created or updated, as Cosmos DB's connection strings
    /// expect. An empty name creates no account. [default: localhost]
    #[arg(
        long = "cosmos-account",
        env = "MAYFLY_COSMOS_ACCOUNT",
        value_name = "NAME"
    )]
    pub cosmos_account: Option<String>,

    /// The Cosmos DB account key: the account user's password. [default: the emulator's
    /// well-known key]
    #[arg(
        long = "cosmos-key",
        env = "MAYFLY_COSMOS_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub cosmos_key: Option<String>,
    // TLS (mongod's net.tls): keep these together.
    /// TLS for client connections: disabled, allowTLS, preferTLS or requireTLS. [default:
    /// disabled; preferTLS with --compat cosmos]
    #[arg(
        long = "tlsMode",
        env = "MAYFLY_TLS_MODE",
        value_enum,
        value_name = "MODE"
    )]
    pub tls_mode: Option<TlsMode>,

    /// PEM file with the server's certificate chain and private key. Without it, a TLS mode
    /// generates development certificates under <dbpath>/tls/.
    #[arg(
        long = "tlsCertificateKeyFile",
        env = "MAYFLY_TLS_CERTIFICATE_KEY_FILE",
        value_name = "FILE"
    )]
    pub tls_certificate_key_file: Option<PathBuf>,

    /// Password of an encrypted PKCS#8 private key ("ENCRYPTED PRIVATE KEY") in
    /// --tlsCertificateKeyFile.
    #[arg(
        long = "tlsCertificateKeyFilePassword",
        env = "MAYFLY_TLS_CERTIFICATE_KEY_FILE_PASSWORD",
        value_name = "PASSWORD",
        hide_env_values = true
    )]
    pub tls_certificate_key_file_password: Option<String>,

    /// PEM file of CA certificates that verify client certificates; with it, clients must
    /// present a certificate (unless --tlsAllowConnectionsWithoutCertificates).
    #[arg(long = "tlsCAFile", env = "MAYFLY_TLS_CA_FILE", value_name = "FILE")]
    pub tls_ca_file: Option<PathBuf>,

    /// With --tlsCAFile: accept clients that present no certificate (one they do present is
    /// still verified).
    #[arg(
        long = "tlsAllowConnectionsWithoutCertificates",
        env = "MAYFLY_TLS_ALLOW_CONNECTIONS_WITHOUT_CERTIFICATES"
    )]
    pub tls_allow_connections_without_certificates: bool,

    /// The directory of the development CA (`ca.pem`, which clients trust once, and its key),
    /// shared by every server of this user; `mayfly ca-path` prints the CA file. [default:
    /// $XDG_DATA_HOME/mayfly/ca or ~/.local/share/mayfly/ca; macOS ~/Library/Application
    /// Support/mayfly/ca]
    #[arg(long = "tls-ca-dir", env = "MAYFLY_CAROOT", value_name = "DIR")]
    pub tls_ca_dir: Option<PathBuf>,

    // Replication (mongod's `replication`): keep these together.
    /// Run as a one-member replica set of this name (mongod's `--replSet`), the primary:
    /// drivers connect with `replicaSet=NAME`; sessions, retryable writes and the operation log
    /// are on. Cosmos DB's connection strings name `globaldb`.
    #[arg(long = "replSet", env = "MAYFLY_REPL_SET", value_name = "NAME")]
    pub repl_set: Option<String>,

    /// The `host:port` the replica set advertises in `hello` (`hosts`, `me`, `primary`), for
    /// containers and port mappings. [default: the first --bind-ip and the listening port]
    #[arg(
        long = "advertise-host",
        env = "MAYFLY_ADVERTISE_HOST",
        value_name = "HOST:PORT"
    )]
    pub advertise_host: Option<String>,

    /// Largest size of the operation log, in megabytes; the oldest entries are removed past
    /// it. [default: 1024]
    #[arg(long = "oplogSizeMB", env = "MAYFLY_OPLOG_SIZE_MB", value_name = "MB")]
    pub oplog_size_mb: Option<u64>,

    /// A multi-document transaction open longer than this many seconds is aborted (mongod's
    /// `transactionLifetimeLimitSeconds`). [default: 60]
    #[arg(
        long = "transactionLifetimeLimitSeconds",
        env = "MAYFLY_TRANSACTION_LIFETIME_LIMIT_SECONDS",
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub transaction_lifetime_limit_seconds: Option<u64>,

    /// Memory for the storage engine's block cache and write buffers (memtables), in gigabytes,
    /// as mongod's `--wiredTigerCacheSizeGB`: 0.25 to 10000. [default: half of the memory less
    /// 1 GB (the container's limit when lower), at least 0.25]
    #[arg(
        long = "cacheSizeGB",
        alias = "wiredTigerCacheSizeGB",
        env = "MAYFLY_CACHE_SIZE_GB",
        value_name = "GB"
    )]
    pub cache_size_gb: Option<f64>,

    /// With `--storage memory`: the most the stored data (documents, index entries, the
    /// catalog, every version a snapshot still reads) may take, in gigabytes, as mongod's
    /// in-memory engine's `--inMemorySizeGB`: 0.25 to 10000. Writes past it fail with 14031
    /// OutOfDiskSpace; reads and deletes go on. [default: half of the memory less 1 GB (the
    /// container's limit when lower), at least 0.25]
    #[arg(
        long = "inMemorySizeGB",
        env = "MAYFLY_IN_MEMORY_SIZE_GB",
        value_name = "GB"
    )]
    pub in_memory_size_gb: Option<f64>,

    /// Serve Prometheus metrics over HTTP at `http://HOST:PORT/metrics` (OpenMetrics text).
    /// Off unless given; port 0 picks a free port (the start-up log says which).
    #[arg(
        long = "metrics-addr",
        env = "MAYFLY_METRICS_ADDR",
        value_name = "HOST:PORT"
    )]
    pub metrics_addr: Option<String>,

    // The behaviour profile: keep these together.
    /// Behave as MongoDB 7.0 (`mongodb`, the default) or as Azure Cosmos DB for MongoDB (RU)
    /// (`cosmos`): Cosmos's handshake (replica set `globaldb` unless --replSet names another),
    /// limits and refusals, each rule named in docs/cosmos.md. The Cosmos TTL rules apply in
    /// both.
    #[arg(long = "compat", env = "MAYFLY_COMPAT", value_name = "PROFILE")]
    pub compat: Option<Compat>,

    /// The Cosmos account's server version, with --compat cosmos: its wire version and feature
    /// set. [default: 7.0]
    #[arg(
        long = "cosmos-version",
        env = "MAYFLY_COSMOS_VERSION",
        value_name = "VERSION"
    )]
    pub cosmos_version: Option<CosmosVersion>,

    /// Cosmos rules to turn off, comma-separated (docs/cosmos.md names them), to adopt the
    /// profile gradually: e.g. `sort-without-index,document-size`.
    #[arg(
        long = "cosmos-allow",
        env = "MAYFLY_COSMOS_ALLOW",
        value_name = "RULES"
    )]
    pub cosmos_allow: Option<String>,

    /// The account capability `EnableMongo16MBDocumentSupport`: documents up to 16 MB.
    #[arg(long = "cosmos-16mb", env = "MAYFLY_COSMOS_16MB")]
    pub cosmos_16mb: bool,

    /// The account capability `EnableMongoRetryableWrites`: retryable writes are accepted.
    #[arg(
        long = "cosmos-retryable-writes",
        env = "MAYFLY_COSMOS_RETRYABLE_WRITES"
    )]
    pub cosmos_retryable_writes: bool,

    /// Throttle requests, with --compat cosmos, to this many request units a second per
    /// collection (a collection or database provisioned with `customAction` has its own):
    /// requests over it get 16500 `RequestRateTooLarge` with `RetryAfterMs`. Off unless given.
    #[arg(
        long = "cosmos-throughput",
        env = "MAYFLY_COSMOS_THROUGHPUT",
        value_name = "RU_PER_SECOND",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub cosmos_throughput: Option<u32>,

    /// The account capability `DisableRateLimitingResponses` (server-side retry): a throttled
    /// request waits in the server, up to 60 seconds, then fails with 50.
    #[arg(
        long = "cosmos-server-side-retry",
        env = "MAYFLY_COSMOS_SERVER_SIDE_RETRY"
    )]
    pub cosmos_server_side_retry: bool,

    /// The account capability `EnableTtlOnCustomPath`: `expireAfterSeconds` on one single
    /// field other than `_ts` makes the collection's TTL index; documents expire that many
    /// seconds after the date, or the Unix milliseconds, the field holds.
    #[arg(long = "cosmos-ttl-custom-path", env = "MAYFLY_COSMOS_TTL_CUSTOM_PATH")]
    pub cosmos_ttl_custom_path: bool,

    /// The account's region, with --compat cosmos: the `tags: {region}` its `hello` shows, so
    /// that a read preference with your production region's tag finds this server.
    #[arg(
        long = "cosmos-region",
        env = "MAYFLY_COSMOS_REGION",
        value_name = "NAME"
    )]
    pub cosmos_region: Option<String>,
}

/// The settings a config file may hold (all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub port: Option<u16>,
    pub bind_ip: Option<String>,
    pub dbpath: Option<PathBuf>,
    pub max_conns: Option<u32>,
    pub log_format: Option<LogFormat>,
    pub log_level: Option<String>,
    pub slow_ms: Option<u64>,
    pub profile: Option<u8>,
    pub enable_test_commands: Option<bool>,
    pub clock: Option<ClockKind>,
    pub storage: Option<StorageKind>,
    pub cursor_memory_limit_mb: Option<u64>,
    pub memory_limit_mb: Option<u64>,
    pub max_no_timeout_cursors: Option<u64>,
    pub auth: Option<bool>,
    pub auth_failures_before_delay: Option<u32>,
    pub auth_failure_delay_ms: Option<u64>,
    pub cosmos_account: Option<String>,
    pub cosmos_key: Option<String>,
    // TLS: keep these together.
    pub tls_mode: Option<TlsMode>,
    pub tls_certificate_key_file: Option<PathBuf>,
    pub tls_certificate_key_file_password: Option<String>,
    pub tls_ca_file: Option<PathBuf>,
    pub tls_allow_connections_without_certificates: Option<bool>,
    pub tls_ca_dir: Option<PathBuf>,
    // Replication: keep these together.
    pub repl_set: Option<String>,
    pub advertise_host: Option<String>,
    pub oplog_size_mb: Option<u64>,
    pub transaction_lifetime_limit_seconds: Option<u64>,
    pub cache_size_gb: Option<f64>,
    pub in_memory_size_gb: Option<f64>,
    pub metrics_addr: Option<String>,
    pub compat: Option<Compat>,
    pub cosmos_version: Option<CosmosVersion>,
    pub cosmos_allow: Option<String>,
    pub cosmos_16mb: Option<bool>,
    pub cosmos_retryable_writes: Option<bool>,
    pub cosmos_throughput: Option<u32>,
    pub cosmos_server_side_retry: Option<bool>,
    pub cosmos_ttl_custom_path: Option<bool>,
    pub cosmos_region: Option<String>,
}

/// The resolved configuration the server runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub port: u16,
    pub bind_ips: Vec<String>,
    pub dbpath: PathBuf,
    pub max_conns: u32,
    pub log_format: LogFormat,
    pub log_level: String,
    pub slow_ms: u64,
    /// The profiler's level for databases `profile` has not set (0, 1 or 2).
    pub profile_level: u8,
    pub enable_test_commands: bool,
    pub clock: ClockKind,
    pub storage: StorageKind,
    /// Bytes of memory for the storage engine's block cache and write buffers.
    pub cache_bytes: u64,
    /// With `--storage memory`: the bytes stored data may take (0: no limit).
    pub in_memory_bytes: u64,
    /// The command line as given, for `getCmdLineOpts`.
    pub argv: Vec<String>,
    /// Bytes of sorted or grouped results open cursors may hold together.
    pub cursor_memory_limit_bytes: usize,
    /// Bytes of heap the server may hold before growing operations are stopped (146).
    pub memory_limit_bytes: u64,
    /// Most open `noCursorTimeout` cursors.
    pub max_no_timeout_cursors: usize,
    /// Authentication required and roles enforced.
    pub auth: bool,
    /// Failed authentications a source address is allowed before they are delayed.
    pub auth_failures_before_delay: u32,
    /// How long each failed authentication past the allowance waits; zero: no delay.
    pub auth_failure_delay: std::time::Duration,
    /// The Cosmos DB account user in `admin`; `None` when disabled with an empty name.
    pub cosmos_account: Option<String>,
    /// The account user's password.
    pub cosmos_key: Secret,
    /// TLS for client connections.
    pub tls: TlsConfig,
    /// Replica-set mode and the operation log.
    pub replication: ReplicationConfig,
    /// Where the Prometheus endpoint listens (`HOST:PORT`); `None`: no endpoint.
    pub metrics_addr: Option<String>,
    /// MongoDB 7.0 or a Cosmos DB account, and the Cosmos rules turned off.
    pub profile: Profile,
}

/// The replication settings (mongod's `replication`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicationConfig {
    /// The replica set's name; `None`: a standalone server.
    pub set_name: Option<String>,
    /// The `host:port` advertised in `hello`; `None`: the first bind address and the port.
    pub advertise_host: Option<String>,
    /// The operation log's largest size in bytes.
    pub oplog_size_bytes: u64,
    /// How long a multi-document transaction may stay open, in seconds.
    pub transaction_lifetime_limit_secs: u64,
}

impl ReplicationConfig {
    /// Whether the server runs as a replica set (the operation log is kept only then).
    pub fn enabled(&self) -> bool {
        self.set_name.is_some()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::resolve(Cli::default(), FileConfig::default(), Vec::new())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {source}")]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("--bind-ip must name at least one address")]
    NoBindIp,
    #[error("{0}")]
    Tls(String),
    #[error("--cacheSizeGB must be between 0.25 and 10000, not {0}")]
    CacheSize(f64),
    #[error("--inMemorySizeGB must be between 0.25 and 10000, not {0}")]
    InMemorySize(f64),
    #[error("--auth-failure-delay-ms must be at most 5000, not {0}")]
    AuthFailureDelay(u64),
    #[error("--profile must be 0, 1 or 2, not {0}")]
    ProfileLevel(u8),
    #[error("cosmos_throughput must be at least 1 request unit a second")]
    Throughput,
    #[error("--cosmos-allow: no Cosmos rule is named '{0}' (the rules: {rules})", rules = Rule::ALL.map(|r| r.name()).join(", "))]
    UnknownRule(String),
    #[error("{0} applies only with --compat cosmos (the default profile is MongoDB 7.0's)")]
    CosmosOnly(&'static str),
}

/// The first setting of the Cosmos profile given without `--compat cosmos`, where it would do
/// nothing: named as its flag.
fn cosmos_only_setting(cli: &Cli, file: &FileConfig) -> Option<&'static str> {
    let given = [
        (
            "--cosmos-version",
            cli.cosmos_version.is_some() || file.cosmos_version.is_some(),
        ),
        (
            "--cosmos-allow",
            cli.cosmos_allow.is_some() || file.cosmos_allow.is_some(),
        ),
        (
            "--cosmos-16mb",
            cli.cosmos_16mb || file.cosmos_16mb.is_some(),
        ),
        (
            "--cosmos-retryable-writes",
            cli.cosmos_retryable_writes || file.cosmos_retryable_writes.is_some(),
        ),
        (
            "--cosmos-throughput",
            cli.cosmos_throughput.is_some() || file.cosmos_throughput.is_some(),
        ),
        (
            "--cosmos-server-side-retry",
            cli.cosmos_server_side_retry || file.cosmos_server_side_retry.is_some(),
        ),
        (
            "--cosmos-ttl-custom-path",
            cli.cosmos_ttl_custom_path || file.cosmos_ttl_custom_path.is_some(),
        ),
        (
            "--cosmos-region",
            cli.cosmos_region.is_some() || file.cosmos_region.is_some(),
        ),
    ];
    given
        .into_iter()
        .find(|(_, given)| *given)
        .map(|(flag, _)| flag)
}

impl Config {
    /// Loads the config file the command line names (if any) and merges everything.
    pub fn load(cli: Cli, argv: Vec<String>) -> Result<Config, ConfigError> {
        let file = match &cli.config {
            Some(path) => read_file(path)?,
            None => FileConfig::default(),
        };
        let cli_cache_size = cli.cache_size_gb.or(file.cache_size_gb);
        let in_memory_size = cli.in_memory_size_gb.or(file.in_memory_size_gb);
        if let Some(unknown) = cli
            .cosmos_allow
            .as_deref()
            .or(file.cosmos_allow.as_deref())
            .and_then(|list| rule_names(list).find(|name| Rule::from_name(name).is_none()))
        {
            return Err(ConfigError::UnknownRule(unknown.to_owned()));
        }
        if cli.compat.or(file.compat).unwrap_or_default() != Compat::Cosmos {
            if let Some(flag) = cosmos_only_setting(&cli, &file) {
                return Err(ConfigError::CosmosOnly(flag));
            }
        }
        let config = Config::resolve(cli, file, argv);
        if config.bind_ips.is_empty() {
            return Err(ConfigError::NoBindIp);
        }
        config.tls.validate()?;
        if let Some(gb) = cli_cache_size {
            if !CACHE_SIZE_GB_RANGE.contains(&gb) {
                return Err(ConfigError::CacheSize(gb));
            }
        }
        if let Some(gb) = in_memory_size {
            if !CACHE_SIZE_GB_RANGE.contains(&gb) {
                return Err(ConfigError::InMemorySize(gb));
            }
        }
        // The command line's values are checked by clap; the config file's here.
        if config.profile.throughput == Some(0) {
            return Err(ConfigError::Throughput);
        }
        let delay = config.auth_failure_delay.as_millis();
        if delay > u128::from(MAX_AUTH_FAILURE_DELAY_MS) {
            return Err(ConfigError::AuthFailureDelay(
                u64::try_from(delay).unwrap_or(u64::MAX),
            ));
        }
        if config.profile_level > 2 {
            return Err(ConfigError::ProfileLevel(config.profile_level));
        }
        Ok(config)
    }

    pub fn resolve(cli: Cli, file: FileConfig, argv: Vec<String>) -> Config {
        let profile = resolve_profile(&cli, &file);
        let bind = cli
            .bind_ip
            .or(file.bind_ip)
            .unwrap_or_else(|| DEFAULT_BIND_IP.to_owned());
        // Cosmos DB answers as the primary of replica set `globaldb`.
        let set_name = cli
            .repl_set
            .or(file.repl_set)
            .filter(|name| !name.is_empty())
            .or_else(|| profile.is_cosmos().then(|| COSMOS_SET_NAME.to_owned()));
        Config {
            port: cli.port.or(file.port).unwrap_or(DEFAULT_PORT),
            bind_ips: bind
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            dbpath: cli
                .dbpath
                .or(file.dbpath)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_DBPATH)),
            max_conns: cli
                .max_conns
                .or(file.max_conns)
                .unwrap_or(DEFAULT_MAX_CONNS),
            log_format: cli.log_format.or(file.log_format).unwrap_or_default(),
            log_level: cli
                .log_level
                .or(file.log_level)
                .unwrap_or_else(|| "info".to_owned()),
            slow_ms: cli.slow_ms.or(file.slow_ms).unwrap_or(DEFAULT_SLOW_MS),
            profile_level: cli.profile.or(file.profile).unwrap_or(0),
            enable_test_commands: cli.enable_test_commands
                || file.enable_test_commands.unwrap_or(false),
            clock: cli.clock.or(file.clock).unwrap_or_default(),
            storage: cli.storage.or(file.storage).unwrap_or_default(),
            cache_bytes: cli
                .cache_size_gb
                .or(file.cache_size_gb)
                .map_or_else(default_cache_bytes, gigabytes),
            // mongod's in-memory engine defaults its size as WiredTiger does its cache.
            in_memory_bytes: cli
                .in_memory_size_gb
                .or(file.in_memory_size_gb)
                .map_or_else(default_cache_bytes, gigabytes),
            argv: redact_argv(argv),
            metrics_addr: cli.metrics_addr.or(file.metrics_addr),
            memory_limit_bytes: cli
                .memory_limit_mb
                .or(file.memory_limit_mb)
                .map_or_else(default_memory_limit_bytes, |mb| {
                    mb.saturating_mul(1024 * 1024)
                }),
            cursor_memory_limit_bytes: cli
                .cursor_memory_limit_mb
                .or(file.cursor_memory_limit_mb)
                .map_or(DEFAULT_CURSOR_MEMORY_BYTES, |mb| {
                    usize::try_from(mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX)
                }),
            max_no_timeout_cursors: cli
                .max_no_timeout_cursors
                .or(file.max_no_timeout_cursors)
                .map_or(DEFAULT_MAX_NO_TIMEOUT_CURSORS, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
            auth: cli.auth || file.auth.unwrap_or(false),
            auth_failures_before_delay: cli
                .auth_failures_before_delay
                .or(file.auth_failures_before_delay)
                .unwrap_or(DEFAULT_AUTH_FAILURES_BEFORE_DELAY),
            auth_failure_delay: std::time::Duration::from_millis(
                cli.auth_failure_delay_ms
                    .or(file.auth_failure_delay_ms)
                    .unwrap_or(DEFAULT_AUTH_FAILURE_DELAY_MS),
            ),
            cosmos_account: Some(
                cli.cosmos_account
                    .or(file.cosmos_account)
                    .unwrap_or_else(|| DEFAULT_COSMOS_ACCOUNT.to_owned()),
            )
            .filter(|name| !name.is_empty()),
            cosmos_key: Secret::new(
                cli.cosmos_key
                    .or(file.cosmos_key)
                    .unwrap_or_else(|| EMULATOR_COSMOS_KEY.to_owned()),
            ),
            tls: TlsConfig {
                // Every Cosmos DB connection string says `ssl=true`; plain clients are served
                // too, on the same port.
                mode: cli
                    .tls_mode
                    .or(file.tls_mode)
                    .unwrap_or(if profile.is_cosmos() {
                        TlsMode::PreferTls
                    } else {
                        TlsMode::Disabled
                    }),
                certificate_key_file: cli
                    .tls_certificate_key_file
                    .or(file.tls_certificate_key_file),
                certificate_key_file_password: cli
                    .tls_certificate_key_file_password
                    .or(file.tls_certificate_key_file_password),
                ca_file: cli.tls_ca_file.or(file.tls_ca_file),
                allow_connections_without_certificates: cli
                    .tls_allow_connections_without_certificates
                    || file
                        .tls_allow_connections_without_certificates
                        .unwrap_or(false),
                ca_dir: cli.tls_ca_dir.or(file.tls_ca_dir),
            },
            profile,
            replication: ReplicationConfig {
                set_name,
                advertise_host: cli.advertise_host.or(file.advertise_host),
                oplog_size_bytes: cli
                    .oplog_size_mb
                    .or(file.oplog_size_mb)
                    .unwrap_or(DEFAULT_OPLOG_SIZE_MB)
                    .saturating_mul(1024 * 1024),
                transaction_lifetime_limit_secs: cli
                    .transaction_lifetime_limit_seconds
                    .or(file.transaction_lifetime_limit_seconds)
                    .unwrap_or(DEFAULT_TRANSACTION_LIFETIME_LIMIT_SECS)
                    .max(1),
            },
        }
    }

    /// A configuration for tests: an ephemeral port on loopback, test commands on, no Cosmos
    /// account user (tests that want it set `cosmos_account`), and the development CA under
    /// `dbpath` rather than in the user's home.
    pub fn for_tests(dbpath: &Path) -> Config {
        let mut config = Config {
            port: 0,
            dbpath: dbpath.to_path_buf(),
            enable_test_commands: true,
            cosmos_account: None,
            ..Config::default()
        };
        config.tls.ca_dir = Some(dbpath.join("ca"));
        config
    }
}

/// The replica set a Cosmos DB account answers as.
pub const COSMOS_SET_NAME: &str = "globaldb";

/// The profile the command line and the config file choose (unknown rule names are refused
/// by [`Config::load`] before this).
fn resolve_profile(cli: &Cli, file: &FileConfig) -> Profile {
    let compat = cli.compat.or(file.compat).unwrap_or_default();
    let version = cli
        .cosmos_version
        .or(file.cosmos_version)
        .unwrap_or_default();
    let mut profile = match compat {
        Compat::MongoDb => Profile::mongodb(),
        Compat::Cosmos => Profile::cosmos(version),
    };
    profile.version = version;
    let allow = cli.cosmos_allow.as_deref().or(file.cosmos_allow.as_deref());
    for rule in allow
        .into_iter()
        .flat_map(rule_names)
        .filter_map(Rule::from_name)
    {
        profile = profile.allowing(rule);
    }
    // The account capabilities lift their rules.
    if cli.cosmos_16mb || file.cosmos_16mb.unwrap_or(false) {
        profile = profile.allowing(Rule::DocumentSize);
    }
    if cli.cosmos_retryable_writes || file.cosmos_retryable_writes.unwrap_or(false) {
        profile = profile.allowing(Rule::RetryableWrites);
    }
    profile.throughput = cli.cosmos_throughput.or(file.cosmos_throughput);
    profile.server_side_retry =
        cli.cosmos_server_side_retry || file.cosmos_server_side_retry.unwrap_or(false);
    profile.ttl_custom_path =
        cli.cosmos_ttl_custom_path || file.cosmos_ttl_custom_path.unwrap_or(false);
    profile.region = cli
        .cosmos_region
        .clone()
        .or_else(|| file.cosmos_region.clone());
    profile
}

fn rule_names(list: &str) -> impl Iterator<Item = &str> {
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
}

fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    toml::from_str(&text).map_err(|source| ConfigError::Parse {
        path: path.to_path_buf(),
        source: Box::new(source),
    })
}

/// mongod's default WiredTiger cache: half of (memory - 1 GB), at least 256 MB, where memory is
/// the container's limit when it is below the machine's.
pub fn default_cache_bytes() -> u64 {
    const GIB: u64 = 1 << 30;
    let memory = crate::host::memory_limit_bytes().unwrap_or(2 * GIB);
    (memory.saturating_sub(GIB) / 2).max(GIB / 4)
}

/// The heap the server may hold by default: 90% of the memory the process may use (the
/// machine's, or the container's limit when lower), leaving the rest to the kernel's page
/// cache, stacks and the allocator's own overhead; 2 GiB when the OS does not say.
pub fn default_memory_limit_bytes() -> u64 {
    crate::host::memory_limit_bytes().map_or(2 << 30, |bytes| bytes / 10 * 9)
}

/// `gb` GiB in bytes (a `--cacheSizeGB` value).
pub fn gigabytes(gb: f64) -> u64 {
    // Bounded by `CACHE_SIZE_GB_RANGE` when loaded; a value outside it is refused there.
    (gb.clamp(0.0, 1e6) * (1u64 << 30) as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("mayfly").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn defaults_are_mongods() {
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert_eq!(c.port, 27017);
        assert_eq!(c.bind_ips, vec!["127.0.0.1"]);
        assert_eq!(c.dbpath, PathBuf::from("./mayfly-data"));
        assert_eq!(c.max_conns, DEFAULT_MAX_CONNS);
        assert_eq!(c.slow_ms, 100);
        assert!(!c.enable_test_commands);
    }

    #[test]
    fn flags_override_the_file() {
        let file: FileConfig = toml::from_str(
            "port = 1234\nbind_ip = \"0.0.0.0\"\nslow_ms = 5\nlog_format = \"json\"",
        )
        .unwrap();
        let c = Config::resolve(
            parse(&["--port", "0", "--bind_ip", "127.0.0.1,::1"]),
            file,
            vec![],
        );
        assert_eq!(c.port, 0);
        assert_eq!(c.bind_ips, vec!["127.0.0.1", "::1"]);
        assert_eq!(c.slow_ms, 5);
        assert_eq!(c.profile_level, 0);
        assert_eq!(c.log_format, LogFormat::Json);
    }

    #[test]
    fn the_cache_size_comes_from_either_flag_the_file_or_the_memory() {
        const MIB: u64 = 1 << 20;
        let table = [
            (&["--cacheSizeGB", "0.5"][..], "", Some(512 * MIB)),
            (&["--wiredTigerCacheSizeGB", "2"][..], "", Some(2048 * MIB)),
            (&[][..], "cache_size_gb = 0.25", Some(256 * MIB)),
            (
                &["--cacheSizeGB", "1"][..],
                "cache_size_gb = 3",
                Some(1024 * MIB),
            ),
            (&[][..], "", None),
        ];
        for (args, file, expected) in table {
            let file: FileConfig = toml::from_str(file).unwrap();
            let c = Config::resolve(parse(args), file, vec![]);
            match expected {
                Some(bytes) => assert_eq!(c.cache_bytes, bytes, "{args:?}"),
                // mongod's rule on this machine's memory: never below 256 MiB.
                None => assert!(c.cache_bytes >= 256 * MIB, "{}", c.cache_bytes),
            }
        }
    }

    #[test]
    fn a_cache_size_outside_mongods_range_is_refused() {
        for value in ["0.1", "20000", "NaN", "-1"] {
            let flag = format!("--cacheSizeGB={value}");
            let error = Config::load(parse(&[&flag]), vec![]).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("--cacheSizeGB must be between 0.25 and 10000"),
                "{error}"
            );
        }
        assert!(Config::load(parse(&["--cacheSizeGB", "0.25"]), vec![]).is_ok());
    }

    #[test]
    fn the_profile_level_is_0_1_or_2_from_any_source() {
        let c = Config::load(parse(&["--profile", "1", "--slowms", "50"]), vec![]).unwrap();
        assert_eq!((c.profile_level, c.slow_ms), (1, 50));
        assert!(Cli::try_parse_from(["mayfly", "--profile", "3"]).is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mayfly.toml");
        std::fs::write(&path, "profile = 3").unwrap();
        let flag = format!("--config={}", path.display());
        let error = Config::load(parse(&[&flag]), vec![]).unwrap_err();
        assert_eq!(error.to_string(), "--profile must be 0, 1 or 2, not 3");
        std::fs::write(&path, "profile = 2").unwrap();
        assert_eq!(
            Config::load(parse(&[&flag]), vec![]).unwrap().profile_level,
            2
        );
    }

    #[test]
    fn mongod_flag_spellings_parse() {
        let cli = parse(&[
            "--maxConns",
            "7",
            "--bind-ip",
            "::1",
            "--enable-test-commands",
        ]);
        assert_eq!(cli.max_conns, Some(7));
        assert!(cli.enable_test_commands);
    }

    #[test]
    fn storage_comes_from_the_flag_the_file_or_the_default() {
        let table = [
            (&[][..], "", StorageKind::Disk),
            (&["--storage", "memory"][..], "", StorageKind::Memory),
            (&[][..], "storage = \"memory\"", StorageKind::Memory),
            (
                &["--storage", "disk"][..],
                "storage = \"memory\"",
                StorageKind::Disk,
            ),
        ];
        for (args, file, expected) in table {
            let parsed: FileConfig = toml::from_str(file).unwrap();
            let c = Config::resolve(parse(args), parsed, vec![]);
            assert_eq!(c.storage, expected, "{args:?} {file:?}");
        }
        assert!(Cli::try_parse_from(["mayfly", "--storage", "tape"]).is_err());
    }

    #[test]
    fn cursor_caps_come_from_flags_or_the_file() {
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert_eq!(c.cursor_memory_limit_bytes, 512 * 1024 * 1024);
        assert_eq!(c.max_no_timeout_cursors, 1000);
        let file: FileConfig =
            toml::from_str("cursor_memory_limit_mb = 8\nmax_no_timeout_cursors = 3").unwrap();
        let c = Config::resolve(parse(&["--maxNoTimeoutCursors", "5"]), file, vec![]);
        assert_eq!(c.cursor_memory_limit_bytes, 8 * 1024 * 1024);
        assert_eq!(c.max_no_timeout_cursors, 5);
    }

    #[test]
    fn the_authentication_back_off_comes_from_flags_or_the_file() {
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert_eq!(c.auth_failures_before_delay, 5);
        assert_eq!(c.auth_failure_delay, std::time::Duration::from_secs(1));
        let file = || -> FileConfig {
            toml::from_str("auth_failures_before_delay = 2\nauth_failure_delay_ms = 250").unwrap()
        };
        let c = Config::resolve(parse(&[]), file(), vec![]);
        assert_eq!(c.auth_failures_before_delay, 2);
        assert_eq!(c.auth_failure_delay, std::time::Duration::from_millis(250));
        let flags = parse(&[
            "--auth-failures-before-delay",
            "0",
            "--auth-failure-delay-ms",
            "0",
        ]);
        let c = Config::resolve(flags, file(), vec![]);
        assert_eq!(c.auth_failures_before_delay, 0);
        assert!(c.auth_failure_delay.is_zero(), "0 turns the delay off");
        assert!(Cli::try_parse_from(["mayfly", "--auth-failure-delay-ms", "5001"]).is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mayfly.toml");
        std::fs::write(&path, "auth_failure_delay_ms = 60000").unwrap();
        let path = path.to_str().unwrap();
        let err = Config::load(parse(&["--config", path]), vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--auth-failure-delay-ms must be at most 5000, not 60000"
        );
    }

    #[test]
    fn the_cosmos_region_comes_from_the_flag_or_the_file() {
        let cosmos = || parse(&["--compat", "cosmos"]);
        let c = Config::resolve(cosmos(), FileConfig::default(), vec![]);
        assert_eq!(c.profile.region(), Some("local"));
        let file = || -> FileConfig { toml::from_str("cosmos_region = \"East US\"").unwrap() };
        let c = Config::resolve(cosmos(), file(), vec![]);
        assert_eq!(c.profile.region(), Some("East US"));
        let flag = parse(&["--compat", "cosmos", "--cosmos-region", "West Europe"]);
        let c = Config::resolve(flag, file(), vec![]);
        assert_eq!(c.profile.region(), Some("West Europe"));
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert_eq!(c.profile.region(), None, "MongoDB has no region");
    }

    #[test]
    fn auth_and_the_cosmos_account_come_from_flags_or_the_file() {
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert!(!c.auth, "off by default, as mongod");
        assert_eq!(c.cosmos_account.as_deref(), Some("localhost"));
        assert_eq!(c.cosmos_key.expose(), EMULATOR_COSMOS_KEY);
        assert_eq!(format!("{:?}", c.cosmos_key), "<password>");
        let file: FileConfig =
            toml::from_str("auth = true\ncosmos_account = \"acct\"\ncosmos_key = \"k\"").unwrap();
        let c = Config::resolve(parse(&[]), file, vec![]);
        assert!(c.auth);
        assert_eq!(c.cosmos_account.as_deref(), Some("acct"));
        assert_eq!(c.cosmos_key.expose(), "k");
        let c = Config::resolve(
            parse(&["--auth", "--cosmos-account", "", "--cosmos-key", "x"]),
            FileConfig::default(),
            vec![],
        );
        assert!(c.auth);
        assert_eq!(c.cosmos_account, None, "an empty name disables the account");
        assert_eq!(c.cosmos_key.expose(), "x");
        let argv = [
            "mayfly",
            "--cosmos-key",
            "k1",
            "--cosmos-key=k2",
            "--port",
            "1",
        ];
        let c = Config::resolve(
            parse(&["--cosmos-key", "k1"]),
            FileConfig::default(),
            argv.iter().map(|a| a.to_string()).collect(),
        );
        assert_eq!(
            c.argv,
            [
                "mayfly",
                "--cosmos-key",
                "<password>",
                "--cosmos-key=<password>",
                "--port",
                "1"
            ]
        );
    }

    #[test]
    fn tls_settings_come_from_flags_or_the_file() {
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert_eq!(c.tls, TlsConfig::default());
        assert_eq!(c.tls.mode, TlsMode::Disabled);
        let file: FileConfig = toml::from_str(
            "tls_mode = \"preferTLS\"\ntls_ca_file = \"/ca.pem\"\ntls_allow_connections_without_certificates = true",
        )
        .unwrap();
        let c = Config::resolve(
            parse(&[
                "--tlsMode",
                "requireTLS",
                "--tlsCertificateKeyFile",
                "/s.pem",
            ]),
            file,
            vec![],
        );
        assert_eq!(c.tls.mode, TlsMode::RequireTls);
        assert_eq!(c.tls.certificate_key_file, Some(PathBuf::from("/s.pem")));
        assert_eq!(c.tls.ca_file, Some(PathBuf::from("/ca.pem")));
        assert!(c.tls.allow_connections_without_certificates);
        assert!(Cli::try_parse_from(["mayfly", "--tlsMode", "requireSSL"]).is_err());
    }

    #[test]
    fn the_cosmos_profile_serves_tls_and_plain_by_default_and_an_explicit_mode_wins() {
        // (flags, config file, TLS mode)
        let table: [(&[&str], &str, TlsMode); 6] = [
            (&[], "", TlsMode::Disabled),
            (&["--compat", "cosmos"], "", TlsMode::PreferTls),
            (&[], "compat = \"cosmos\"", TlsMode::PreferTls),
            (
                &["--compat", "cosmos", "--tlsMode", "disabled"],
                "",
                TlsMode::Disabled,
            ),
            (
                &["--compat", "cosmos"],
                "tls_mode = \"requireTLS\"",
                TlsMode::RequireTls,
            ),
            (&["--compat", "mongodb"], "", TlsMode::Disabled),
        ];
        for (args, file, want) in table {
            let parsed: FileConfig = toml::from_str(file).unwrap();
            let c = Config::resolve(parse(args), parsed, vec![]);
            assert_eq!(c.tls.mode, want, "{args:?} {file:?}");
            assert!(c.tls.validate().is_ok(), "{args:?} {file:?}");
        }
    }

    #[test]
    fn the_ca_directory_comes_from_the_flag_or_the_file() {
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert_eq!(c.tls.ca_dir, None, "the per-user default, chosen at start");
        let file = || -> FileConfig { toml::from_str("tls_ca_dir = \"/file/ca\"").unwrap() };
        let c = Config::resolve(parse(&[]), file(), vec![]);
        assert_eq!(c.tls.ca_dir, Some(PathBuf::from("/file/ca")));
        let c = Config::resolve(parse(&["--tls-ca-dir", "/flag/ca"]), file(), vec![]);
        assert_eq!(c.tls.ca_dir, Some(PathBuf::from("/flag/ca")));
        let dir = tempfile::tempdir().unwrap();
        let c = Config::for_tests(dir.path());
        assert_eq!(
            c.tls.ca_dir,
            Some(dir.path().join("ca")),
            "tests never use the home"
        );
    }

    #[test]
    fn bad_tls_combinations_are_refused_at_start() {
        let table: [(&[&str], Option<&str>); 7] = [
            (&[], None),
            (&["--tlsMode", "allowTLS"], None),
            (
                &["--tlsCAFile", "/ca.pem"],
                Some("need to enable TLS via the tlsMode flag"),
            ),
            (
                &["--tlsCertificateKeyFile", "/s.pem"],
                Some("need to enable TLS via the tlsMode flag"),
            ),
            (
                &[
                    "--tlsMode",
                    "requireTLS",
                    "--tlsCertificateKeyFilePassword",
                    "x",
                ],
                Some("needs --tlsCertificateKeyFile"),
            ),
            (
                &[
                    "--tlsMode",
                    "requireTLS",
                    "--tlsAllowConnectionsWithoutCertificates",
                ],
                Some("needs --tlsCAFile"),
            ),
            (
                &[
                    "--tlsMode",
                    "requireTLS",
                    "--tlsCAFile",
                    "/ca.pem",
                    "--tlsAllowConnectionsWithoutCertificates",
                ],
                None,
            ),
        ];
        for (args, refused) in table {
            let c = Config::resolve(parse(args), FileConfig::default(), vec![]);
            match (c.tls.validate(), refused) {
                (Ok(()), None) => {}
                (Err(e), Some(text)) => assert!(e.to_string().contains(text), "{args:?}: {e}"),
                (got, want) => panic!("{args:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_key_password_never_shows() {
        let argv: Vec<String> = [
            "mayfly",
            "--tlsCertificateKeyFilePassword",
            "s3cret",
            "--tlsCertificateKeyFilePassword=s3cret",
            "--port",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let c = Config::resolve(
            parse(&["--tlsCertificateKeyFilePassword", "s3cret"]),
            FileConfig::default(),
            argv,
        );
        assert!(!c.argv.iter().any(|a| a.contains("s3cret")), "{:?}", c.argv);
        assert_eq!(c.argv.len(), 6);
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn unknown_config_keys_are_refused() {
        assert!(toml::from_str::<FileConfig>("prot = 1").is_err());
    }

    #[test]
    fn compat_cosmos_answers_as_globaldb_at_the_chosen_version() {
        let c = Config::resolve(
            parse(&["--compat", "cosmos", "--cosmos-version", "4.2"]),
            FileConfig::default(),
            vec![],
        );
        assert!(c.profile.is_cosmos());
        assert_eq!(c.profile.version, crate::profile::CosmosVersion::V4_2);
        assert_eq!(c.replication.set_name.as_deref(), Some("globaldb"));
        // A set named on the command line stays; the default profile is a standalone.
        let c = Config::resolve(
            parse(&["--compat", "cosmos", "--replSet", "rs0"]),
            FileConfig::default(),
            vec![],
        );
        assert_eq!(c.replication.set_name.as_deref(), Some("rs0"));
        let c = Config::resolve(parse(&[]), FileConfig::default(), vec![]);
        assert!(!c.profile.is_cosmos());
        assert_eq!(c.replication.set_name, None);
    }

    #[test]
    fn cosmos_rules_are_allowed_by_name_or_by_capability() {
        let file: FileConfig =
            toml::from_str("compat = \"cosmos\"\ncosmos_allow = \"sort-without-index\"").unwrap();
        let c = Config::resolve(parse(&["--cosmos-16mb"]), file, vec![]);
        assert_eq!(
            c.profile.allowed,
            vec![Rule::SortWithoutIndex, Rule::DocumentSize]
        );
        let c = Config::resolve(
            parse(&[
                "--compat",
                "cosmos",
                "--cosmos-retryable-writes",
                "--cosmos-allow",
                " index-kinds , nested-index-paths",
            ]),
            FileConfig::default(),
            vec![],
        );
        assert_eq!(
            c.profile.allowed,
            vec![
                Rule::NestedIndexPaths,
                Rule::IndexKinds,
                Rule::RetryableWrites
            ]
        );
        let err = Config::load(parse(&["--cosmos-allow", "sort-anything"]), vec![]).unwrap_err();
        assert!(
            err.to_string()
                .contains("no Cosmos rule is named 'sort-anything'"),
            "{err}"
        );
    }

    #[test]
    fn cosmos_settings_without_the_cosmos_profile_are_refused_not_ignored() {
        for args in [
            &["--cosmos-region", "East US"][..],
            &["--cosmos-version", "4.2"],
            &["--cosmos-allow", "sort-without-index"],
            &["--cosmos-throughput", "400"],
            &["--cosmos-16mb"],
            &["--compat", "mongodb", "--cosmos-server-side-retry"],
            &["--cosmos-ttl-custom-path"],
        ] {
            let err = Config::load(parse(args), vec![]).unwrap_err();
            assert!(
                err.to_string().ends_with(
                    "applies only with --compat cosmos (the default profile is MongoDB 7.0's)"
                ),
                "{args:?}: {err}"
            );
        }
        let mut cosmos = vec!["--compat", "cosmos"];
        cosmos.extend(["--cosmos-region", "East US", "--cosmos-16mb"]);
        assert!(Config::load(parse(&cosmos), vec![]).is_ok());
    }

    #[test]
    fn the_custom_ttl_path_capability_is_a_flag_or_a_file_key_ttl_30() {
        let cosmos = || FileConfig {
            compat: Some(Compat::Cosmos),
            ..FileConfig::default()
        };
        let off = Config::resolve(parse(&[]), cosmos(), vec![]);
        assert!(!off.profile.ttl_custom_path);
        assert!(!off
            .profile
            .capabilities()
            .contains(&"EnableTtlOnCustomPath"));
        let flag = Config::resolve(parse(&["--cosmos-ttl-custom-path"]), cosmos(), vec![]);
        assert!(flag.profile.ttl_custom_path);
        assert!(flag
            .profile
            .capabilities()
            .contains(&"EnableTtlOnCustomPath"));
        let file: FileConfig =
            toml::from_str("compat = \"cosmos\"\ncosmos_ttl_custom_path = true").unwrap();
        let keyed = Config::resolve(parse(&[]), file, vec![]);
        assert!(keyed.profile.ttl_custom_path);
        // No Cosmos rule is lifted: the capability adds a model, it does not relax one.
        assert!(keyed.profile.allowed.is_empty());
    }
}
