//! The `mayfly` command: reads the configuration, sets up logging, runs the server until SIGINT
//! or SIGTERM, then shuts down gracefully and exits 0. With a subcommand (`dump`, `restore`,
//! `check`, `repair`, `ca-path`, `ping`) it runs that tool instead (`mayfly::tools`) and exits with its status.

use clap::Parser;
use mayfly::clock::{Clock, ManualClock, SystemClock};
use mayfly::config::{Cli, ClockKind, Config, LogFormat};
use mayfly::server::Server;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// mimalloc, counted: what the process holds is what `--memoryLimitMB` is checked against
/// (`mayfly::allocation`).
#[global_allocator]
static ALLOCATOR: mayfly::allocation::Metered<mimalloc::MiMalloc> =
    mayfly::allocation::Metered(mimalloc::MiMalloc);

/// mayfly: a MongoDB wire-protocol compatible server with Azure Cosmos DB TTL semantics.
///
/// Without a subcommand, runs the server with the options below.
// `-V` prints the version; `--version` also the git commit and date of the build and the data
// directory format this binary writes (`mayfly::version`).
#[derive(Parser)]
#[command(
    name = "mayfly",
    version,
    long_version = mayfly::version::long_version(),
    about,
    args_conflicts_with_subcommands = true
)]
struct Command {
    #[command(flatten)]
    server: Cli,
    #[command(subcommand)]
    tool: Option<mayfly::tools::Tool>,
}

fn main() -> ExitCode {
    mayfly::allocation::enable();
    let argv: Vec<String> = std::env::args().collect();
    let command = Command::parse();
    if let Some(tool) = command.tool {
        return mayfly::tools::run(tool);
    }
    let config = match Config::load(command.server, argv) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mayfly: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = init_logging(&config) {
        eprintln!("mayfly: {e}");
        return ExitCode::from(2);
    }
    if let Err(e) = mayfly::host::disable_transparent_huge_pages() {
        tracing::warn!(error = %e, "cannot turn transparent huge pages off for this process");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(blocking_threads())
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(config))
}

/// Threads of the blocking pool, where commands that read storage run: four per core, at least
/// 16. Reads mostly wait on the disk, so a few per core keep it busy; the bound keeps a burst of
/// heavy queries from starting hundreds of threads (they queue instead), while pings and other
/// protocol work stay on the async workers and are never queued behind them.
fn blocking_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_mul(4).max(16)
}

async fn run(config: Config) -> ExitCode {
    let dbpath = config.dbpath.clone();
    let storage = config.storage;
    let clock: Arc<dyn Clock> = match config.clock {
        ClockKind::System => Arc::new(SystemClock::new()),
        ClockKind::Manual => Arc::new(ManualClock::starting_at_secs(SystemClock::new().now_secs())),
    };
    let server = match Server::bind(config, clock).await {
        Ok(server) => server,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(
        version = mayfly::version::VERSION,
        commit = mayfly::version::GIT_COMMIT,
        pid = std::process::id(),
        dbpath = %dbpath.display(),
        storage = ?storage,
        "mayfly starting"
    );
    let shared = server.shared();
    let has_users = match shared.engine.catalog() {
        Ok(catalog) => catalog.has_users(),
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::FAILURE;
        }
    };
    for warning in mayfly::command::startup_warnings(&shared.config, has_users) {
        tracing::warn!(tags = "startupWarnings", "{warning}");
    }
    log_profile(&shared.config.profile);
    drop(shared);
    log_tls(&server);
    let shutdown = shutdown_signal();
    let ca_file = server
        .tls()
        .and_then(|tls| tls.dev.as_ref())
        .map(|dev| dev.ca_file.clone());
    for addr in server.local_addrs() {
        tracing::info!(
            log_id = 23016,
            address = %addr,
            port = addr.port(),
            "waiting for connections"
        );
        let uri =
            mayfly::connection_string::suggest(addr, &server.shared().config, ca_file.as_deref());
        tracing::info!(uri = %uri, "connect with");
    }
    if let Some(addr) = server.metrics_addr() {
        tracing::info!(address = %addr, "serving metrics at http://{addr}/metrics");
    }
    server.run(shutdown).await;
    ExitCode::SUCCESS
}

/// With `--compat cosmos`, one line naming the profile, its version, the account capabilities
/// on and the rules turned off: what a test run against this server checks.
fn log_profile(profile: &mayfly::profile::Profile) {
    if !profile.is_cosmos() {
        return;
    }
    let capabilities = profile.capabilities();
    let rules_off: Vec<&str> = profile.allowed.iter().map(|r| r.name()).collect();
    let list = |items: &[&str]| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(",")
        }
    };
    tracing::info!(
        version = %profile.version.version(),
        max_wire_version = profile.max_wire_version(),
        capabilities = %list(&capabilities),
        rules_off = %list(&rules_off),
        throughput_ru_s = profile.throughput,
        region = profile.region().unwrap_or_default(),
        "Cosmos DB profile on (--compat cosmos): Azure Cosmos DB for MongoDB (RU) {}; capabilities: {}; rules off (--cosmos-allow): {}",
        profile.version.version(),
        list(&capabilities),
        list(&rules_off),
    );
}

/// Says how clients reach the server over TLS; with development certificates, the CA file to
/// trust and what to put in a connection string.
fn log_tls(server: &Server) {
    let Some(tls) = server.tls() else {
        tracing::info!("TLS disabled (--tlsMode disabled)");
        return;
    };
    tracing::info!(
        mode = tls.mode.name(),
        certificate = %tls.certificate_file.display(),
        client_certificates = if tls.client_certificates_required { "required" } else { "optional" },
        "TLS enabled"
    );
    if let Some(dev) = &tls.dev {
        tracing::info!(
            ca_file = %dev.ca_file.display(),
            "development TLS certificates: clients add tls=true&tlsCAFile={} (or, for a quick test, tls=true&tlsAllowInvalidCertificates=true) to the connection string; the CA is this user's, the same for every data directory and restart (`mayfly ca-path` prints it)",
            dev.ca_file.display()
        );
        if server.shared().config.storage == mayfly::config::StorageKind::Memory {
            tracing::info!(
                dir = %dev.dir.display(),
                "the server certificate is in a temporary directory, removed at exit"
            );
        }
    }
}

/// The storage library's crates: their routine lines (creating, recovering, flushing) are
/// not the operator's business; warnings and errors still show.
const QUIET_LIBRARIES: &[&str] = &["fjall", "lsm_tree"];

/// The log filter: the configured level or directives, plus the storage library's crates at
/// `warn` unless the directives name them or ask for `debug`/`trace` everywhere.
fn log_filter(level: &str) -> String {
    let mut filter = level.to_owned();
    let verbose = level
        .split(',')
        .any(|d| matches!(d.trim(), "debug" | "trace"));
    for library in QUIET_LIBRARIES {
        if !verbose && !level.contains(library) {
            filter.push_str(&format!(",{library}=warn"));
        }
    }
    filter
}

fn init_logging(config: &Config) -> Result<(), String> {
    let filter = EnvFilter::try_new(log_filter(&config.log_level))
        .map_err(|e| format!("invalid --log-level {:?}: {e}", config.log_level))?;
    // Colour only for a person at a terminal: never escape codes in files and pipes. Every
    // event also goes to the recent-lines ring `getLog: "global"` reads.
    let output = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(mayfly::log_line::ContextLayer)
        .with(mayfly::recent_log::RecentLayer);
    let result = match config.log_format {
        LogFormat::Human => registry.with(output).try_init(),
        LogFormat::Json => registry
            .with(output.event_format(mayfly::log_line::JsonFormat))
            .try_init(),
    };
    result.map_err(|e| format!("cannot set up logging: {e}"))
}

/// Installs the SIGINT and SIGTERM handlers now, and returns a future that completes on
/// either. Installed before the server says it is listening: a supervisor that stops the
/// server as soon as it reads "waiting for connections" must get a graceful shutdown, not the
/// default action of a signal nobody handles yet.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            let (mut interrupt, mut terminate) = match (interrupt, terminate) {
                (Ok(i), Ok(t)) => (i, t),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::error!(error = %e, "cannot listen for SIGINT and SIGTERM");
                    return std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                _ = interrupt.recv() => tracing::info!("received SIGINT"),
                _ = terminate.recv() => tracing::info!("received SIGTERM"),
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            return std::future::pending::<()>().await;
        }
        tracing::info!("received Ctrl-C");
    }
}

#[cfg(test)]
mod tests {
    use super::log_filter;

    #[test]
    fn the_storage_library_is_quiet_unless_asked_for() {
        assert_eq!(log_filter("info"), "info,fjall=warn,lsm_tree=warn");
        assert_eq!(log_filter("warn"), "warn,fjall=warn,lsm_tree=warn");
        assert_eq!(log_filter("debug"), "debug", "debug shows everything");
        assert_eq!(
            log_filter("info,mayfly=trace"),
            "info,mayfly=trace,fjall=warn,lsm_tree=warn"
        );
        assert_eq!(
            log_filter("info,fjall=debug"),
            "info,fjall=debug,lsm_tree=warn"
        );
    }
}
