//! One in-process mayfly per fuzzing process, for the targets that send whole commands: the
//! command layer's `execute` (argument parsing, envelope rules, planning, execution) on a real
//! engine, without sockets.
//!
//! The engine lives under `$TMPDIR` (scripts/fuzz points it at a tmpfs and removes it after),
//! runs on a manual clock so nothing expires by itself, and keeps what earlier inputs wrote:
//! a crash found here replays from its input alone in almost every case, and the few that need
//! earlier state show it in the fuzzer's log. With `MAYFLY_FUZZ_TRACE` set, every command and
//! its reply is printed (to see what the seeds reach).

use bson::{doc, Bson, Document};
use bytes::BytesMut;
use mayfly::clock::ManualClock;
use mayfly::command::{execute, Connection, Outcome, Reply, Shared};
use mayfly::config::Config;
use mayfly::engine::Interrupt;
use mayfly::wire::{client, Incoming, MessageCodec, Request};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use tokio::runtime::Runtime;
use tokio_util::codec::Decoder;

/// Commands a fuzz input may run. Left out: those that wait on purpose (`sleep`), stop the
/// server, move the clock, or manage users.
pub const COMMANDS: &[&str] = &[
    "find",
    "aggregate",
    "count",
    "distinct",
    "insert",
    "update",
    "delete",
    "findAndModify",
    "createIndexes",
    "dropIndexes",
    "listIndexes",
    "listCollections",
    "create",
    "drop",
    "explain",
    "getMore",
    "killCursors",
    "collStats",
    "dbStats",
    "hello",
    "ping",
];

/// The database every input runs in.
pub const DB: &str = "fuzz";
/// A collection filled once at start, for pipelines and queries to find documents in.
pub const SEEDED: &str = "seeded";

struct Instance {
    runtime: Runtime,
    shared: Arc<Shared>,
    // Kept so the directory outlives the engine; the process exits without dropping it.
    _dir: tempfile::TempDir,
}

fn instance() -> &'static Instance {
    static INSTANCE: OnceLock<Instance> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap_or_else(|e| fatal("temporary directory", e));
        let config = Config::for_tests(dir.path());
        let clock = Arc::new(ManualClock::starting_at_secs(1_700_000_000));
        let shared = Arc::new(Shared::open(config, clock).unwrap_or_else(|e| fatal("engine", e)));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| fatal("runtime", e));
        let instance = Instance {
            runtime,
            shared,
            _dir: dir,
        };
        seed(&instance);
        instance
    })
}

fn fatal(what: &str, err: impl std::fmt::Display) -> ! {
    eprintln!("cannot start the fuzzing server ({what}): {err}");
    std::process::exit(2)
}

fn seed(instance: &Instance) {
    let documents: Vec<Bson> = vec![
        Bson::Document(doc! {"_id": 1, "a": 1, "b": "x", "tags": ["red", "blue"], "qty": 5}),
        Bson::Document(doc! {"_id": 2, "a": {"b": [1, 2, {"c": 3}]}, "b": null, "qty": 2.5}),
        Bson::Document(doc! {"_id": "s", "a": [[1], {"b": 2}], "x": {"y": true}, "ttl": 10}),
        Bson::Document(doc! {"_id": 4, "a": "str", "b": [], "name": "Ann", "qty": -3_i64}),
        Bson::Document(doc! {"_id": {"k": 1}, "a": null, "c": bson::DateTime::from_millis(0)}),
    ];
    let commands = [
        doc! {"insert": SEEDED, "documents": documents},
        doc! {"createIndexes": SEEDED, "indexes": [
            {"key": {"a": 1}, "name": "a_1"},
            {"key": {"b": -1, "qty": 1}, "name": "b_-1_qty_1"},
        ]},
    ];
    for command in commands {
        if run_in(instance, command).is_error() {
            fatal("seed", "a seeding command failed");
        }
    }
}

/// Runs one command document (its first key is the command name) in [`DB`], as a client's
/// OP_MSG would reach it: encoded, then decoded by the wire codec, so the wire's limits (size,
/// nesting) apply exactly as they do for a connection. `None` when the wire refuses it.
pub fn run(mut body: Document) -> Option<Reply> {
    body.insert("$db", DB);
    let body = through_wire(&body)?;
    Some(run_in(instance(), body))
}

fn through_wire(body: &Document) -> Option<Document> {
    let bytes = client::op_msg(1, body, &client::MsgOptions::default()).ok()?;
    let mut buf = BytesMut::from(&bytes[..]);
    match MessageCodec::default().decode(&mut buf) {
        Ok(Some(Incoming {
            request: Request::Msg(msg),
            ..
        })) => msg.body.ok(),
        _ => None,
    }
}

fn run_in(instance: &Instance, mut body: Document) -> Reply {
    if !body.contains_key("$db") {
        body.insert("$db", DB);
    }
    let local = SocketAddr::from((Ipv4Addr::LOCALHOST, 27017));
    let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, 50000));
    let mut conn = Connection::new(instance.shared.next_connection_id(), peer, local);
    let trace = std::env::var_os("MAYFLY_FUZZ_TRACE").is_some();
    let shown = trace.then(|| format!("{body}"));
    let (_, outcome, _) = instance.runtime.block_on(execute(
        &instance.shared,
        &mut conn,
        std::sync::Arc::new(body),
        None,
        None,
        Interrupt::none(),
    ));
    // Only the `failCommand` fail point closes a connection, and no input may set one: a
    // close here is a finding.
    let reply = match outcome {
        Outcome::Reply(reply) => reply,
        Outcome::Close => panic!("the connection was closed with no fail point set"),
    };
    if let Some(command) = shown {
        let reply = match &reply {
            Reply::Document(d) => format!("{d}"),
            Reply::Raw(r) => format!("{:?}", r.to_document()),
        };
        eprintln!("command: {command}\nreply:   {reply}");
    }
    reply
}

/// Whether `name` is a command inputs may run.
pub fn allowed(name: &str) -> bool {
    COMMANDS.contains(&name)
}
