//! Connection set-up and per-request cost, plain against TLS, through the Rust driver, against
//! an in-process mayfly server in `allowTLS` mode (both kinds of client on one port, with its
//! generated development certificates) or any server given with `--uri`.
//!
//! `cargo bench --bench connect -- [--seconds 5] [--tasks 4] [--params '&...'] [--uri URI]`
//!
//! Phases, for each variant (plain; TLS with the generated CA; and each again authenticated with
//! SCRAM-SHA-256 as the in-process server's account user, or as `--userinfo` with `--uri`):
//! - `connect`: a fresh driver client (`maxPoolSize=1`) per iteration connects, handshakes and
//!   runs `ping`, then shuts down; `--tasks` tasks at once. The driver opens two connections
//!   per client (its monitor and the pooled one), so this is the cost a short-lived process
//!   pays.
//! - `find_one by _id`: one client, one connection, sequential point reads: the latency TLS
//!   adds to every request.
//!
//! `--params` is appended to every variant's connection string. With `--uri`, `--userinfo`
//! (`user:password@`, percent-encoded) adds the authenticated variants. A fresh authenticated
//! client pays the driver's PBKDF2 (15,000 iterations for SCRAM-SHA-256) on the client side;
//! the server only checks HMACs. Measures only: nothing here asserts on time.

mod common;

use clap::Parser;
use common::{millis, percentile, BoxError};
use mayfly::clock::SystemClock;
use mayfly::config::{Config, Secret, TlsMode};
use mayfly::server::Server;
use mongodb::bson::{doc, Document};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::sync::Arc;
use std::time::{Duration, Instant};

const DB: &str = "mayfly_bench";
const BENCH_USER: &str = "bench";
const BENCH_KEY: &str = "bench/key+with=signs";
const DOCS: i64 = 1000;

#[derive(Debug, Parser)]
struct Args {
    /// Seconds per phase.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Concurrent tasks in the connect phase.
    #[arg(long, default_value_t = 4)]
    tasks: usize,
    /// Appended to every connection string's options (start it with `&`).
    #[arg(long, default_value = "")]
    params: String,
    /// `user:password@` (or any userinfo) put before the host.
    #[arg(long, default_value = "")]
    userinfo: String,
    /// Benchmark this `host:port` (a server in allowTLS or preferTLS mode) instead of starting
    /// one; `--ca-file` then names the CA that signed its certificate.
    #[arg(long)]
    uri: Option<String>,
    #[arg(long)]
    ca_file: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

struct Variant {
    name: &'static str,
    uri: String,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let dir = tempfile::tempdir()?;
    let (server, host, ca_file) = match &args.uri {
        Some(host) => (None, host.clone(), args.ca_file.clone().unwrap_or_default()),
        None => {
            let mut config = Config::for_tests(dir.path());
            config.enable_test_commands = false;
            config.tls.mode = TlsMode::AllowTls;
            // The account user the authenticated variants log in as (authentication is not
            // required, so the other variants connect without credentials).
            config.cosmos_account = Some(BENCH_USER.to_owned());
            config.cosmos_key = Secret::new(BENCH_KEY);
            let bound = Server::bind(config, Arc::new(SystemClock::new())).await?;
            let ca = bound
                .tls()
                .and_then(|t| t.dev.as_ref())
                .map(|d| d.ca_file.display().to_string())
                .ok_or("no development certificates")?;
            let server = bound.spawn();
            let addr = server.addr().ok_or("the server has no address")?;
            (Some(server), addr.to_string(), ca)
        }
    };
    let base = format!("mongodb://{host}/?directConnection=true");
    let tls = format!("&tls=true&tlsCAFile={ca_file}");
    let mut variants = vec![
        Variant {
            name: "plain",
            uri: format!("{base}{}", args.params),
        },
        Variant {
            name: "TLS",
            uri: format!("{base}{tls}{}", args.params),
        },
    ];
    let userinfo = match (&server, args.userinfo.as_str()) {
        (Some(_), "") => format!(
            "{BENCH_USER}:{}@",
            BENCH_KEY
                .replace('/', "%2F")
                .replace('+', "%2B")
                .replace('=', "%3D")
        ),
        (_, given) => given.to_owned(),
    };
    if !userinfo.is_empty() {
        let authed = format!(
            "mongodb://{userinfo}{host}/?directConnection=true&authMechanism=SCRAM-SHA-256"
        );
        variants.push(Variant {
            name: "SCRAM",
            uri: format!("{authed}{}", args.params),
        });
        variants.push(Variant {
            name: "TLS+SCRAM",
            uri: format!("{authed}{tls}{}", args.params),
        });
    }
    let phase = Duration::from_secs_f64(args.seconds);
    println!(
        "mayfly connect bench: {:.1} s per phase, {} connect tasks, {}",
        args.seconds,
        args.tasks,
        if server.is_some() {
            "in-process server (allowTLS, generated certificates)"
        } else {
            &host
        }
    );
    load(&variants[0].uri).await?;
    for variant in &variants {
        let (clients, elapsed, latencies) = connect_phase(&variant.uri, args.tasks, phase).await?;
        println!(
            "{:<9} connect+ping      {:>8.1} clients/s   p50 {:>9}  p99 {:>9}   ({clients} fresh clients)",
            variant.name,
            clients as f64 / elapsed.as_secs_f64(),
            millis(percentile(&latencies, 0.50)),
            millis(percentile(&latencies, 0.99)),
        );
    }
    for variant in &variants {
        let (ops, elapsed, latencies) = find_phase(&variant.uri, phase).await?;
        println!(
            "{:<9} find_one by _id   {:>8.1} ops/s       p50 {:>9}  p99 {:>9}   (1 connection, sequential)",
            variant.name,
            ops as f64 / elapsed.as_secs_f64(),
            millis(percentile(&latencies, 0.50)),
            millis(percentile(&latencies, 0.99)),
        );
    }
    Ok(())
}

async fn client(uri: &str) -> Result<Client, BoxError> {
    let mut options = ClientOptions::parse(uri).await?;
    options.max_pool_size = Some(1);
    options.server_selection_timeout = Some(Duration::from_secs(5));
    Ok(Client::with_options(options)?)
}

async fn load(uri: &str) -> Result<(), BoxError> {
    let client = client(uri).await?;
    let coll = client.database(DB).collection::<Document>("point");
    coll.drop().await?;
    coll.insert_many((0..DOCS).map(|i| doc! {"_id": i, "v": format!("value {i}")}))
        .await?;
    client.shutdown().await;
    Ok(())
}

/// Fresh clients from `tasks` tasks until `phase` has passed; each connects and pings.
async fn connect_phase(
    uri: &str,
    tasks: usize,
    phase: Duration,
) -> Result<(u64, Duration, Vec<Duration>), BoxError> {
    let started = Instant::now();
    let deadline = started + phase;
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let uri = uri.to_owned();
        handles.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                let client = client(&uri).await.map_err(|e| e.to_string())?;
                client
                    .database("admin")
                    .run_command(doc! {"ping": 1})
                    .await
                    .map_err(|e| e.to_string())?;
                latencies.push(t.elapsed());
                client.shutdown().await;
            }
            Ok::<_, String>(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for h in handles {
        latencies.extend(h.await??);
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Ok((latencies.len() as u64, elapsed, latencies))
}

/// Sequential `find_one({_id})` on one connection until `phase` has passed.
async fn find_phase(
    uri: &str,
    phase: Duration,
) -> Result<(u64, Duration, Vec<Duration>), BoxError> {
    let client = client(uri).await?;
    let coll = client.database(DB).collection::<Document>("point");
    coll.find_one(doc! {"_id": 0}).await?;
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut i = 0i64;
    while started.elapsed() < phase {
        let t = Instant::now();
        let found = coll.find_one(doc! {"_id": i % DOCS}).await?;
        latencies.push(t.elapsed());
        if found.is_none() {
            return Err(format!("document {} is missing", i % DOCS).into());
        }
        i += 1;
    }
    let elapsed = started.elapsed();
    client.shutdown().await;
    latencies.sort_unstable();
    Ok((latencies.len() as u64, elapsed, latencies))
}
