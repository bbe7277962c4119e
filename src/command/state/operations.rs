//! The operations running right now, and the commands that show and stop them: `currentOp` and
//! `killOp`.
//!
//! Owns: the registry every command is entered in for as long as it runs (an [`OpGuard`] removes
//! it), op ids, and the `inprog` entries mongod reports. Does not own how an operation stops
//! (`engine::interrupt`): `killOp` only sets the kill flag the operation checks.

use super::super::args::{is_generic, type_name};
use super::super::{Connection, Fact, Request, Shared, Target};
use crate::clock::Stopwatch;
use crate::engine::{Interrupt, KillReason};
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::RawDocuments;
use crate::query::filter::Filter;
use bson::{doc, Bson, Document};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Stops the requests that run past the profile's time limit (Cosmos: 60 seconds) until
/// `stop`: every tenth of the limit (at most every second) it kills the overdue ones as
/// `killOp` does, and each answers the profile's error once it has stopped; what one wrote
/// before stays written, as on Cosmos. One watch for the server, rather than a timer per
/// request, keeps the limit's cost off every command.
pub async fn watch_request_time(shared: Arc<Shared>, limit: Duration, stop: CancellationToken) {
    let every = (limit / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let stopped = shared.ops.stop_overdue(limit);
        if stopped > 0 {
            tracing::info!(stopped, "stopped requests past the profile's time limit");
        }
    }
}

/// A `command` larger than this (encoded) is reported as `{$truncated: ...}`, as mongod does.
const MAX_REPORTED_COMMAND_BYTES: usize = 1000;

/// One running operation.
struct RunningOp {
    connection_id: i32,
    client: String,
    host: String,
    client_metadata: Option<Document>,
    op: &'static str,
    ns: String,
    /// The command, rendered only when `currentOp` asks ([`Sent::report`]).
    command: Sent,
    started: Stopwatch,
    started_at: bson::DateTime,
    interrupt: Arc<Interrupt>,
    /// Whether the profile's request time limit applies (not to [`Fact::NoRequestTimeLimit`]).
    time_limited: bool,
}

/// The registry of running operations, keyed by op id.
#[derive(Default)]
pub struct OpRegistry {
    next_id: AtomicI32,
    ops: Mutex<BTreeMap<i32, RunningOp>>,
}

/// Keeps an operation listed until dropped.
pub struct OpGuard<'a> {
    registry: &'a OpRegistry,
    pub opid: i32,
}

impl Drop for OpGuard<'_> {
    fn drop(&mut self) {
        self.registry.ops().remove(&self.opid);
    }
}

impl OpRegistry {
    /// The running operations. Every holder inserts or removes one whole entry, or only reads
    /// (a panic building a report changes nothing), so a poisoned lock cannot mean a half-made
    /// change: it is recovered (and counted), and `currentOp` and `killOp` stay exact rather
    /// than every command failing.
    fn ops(&self) -> MutexGuard<'_, BTreeMap<i32, RunningOp>> {
        crate::sync::lock_recovering(&self.ops, "operation registry")
    }

    /// Lists `req` as running on `conn` until the guard is dropped.
    pub fn register<'a>(
        &'a self,
        shared: &Shared,
        conn: &Connection,
        req: &Request<'_>,
    ) -> OpGuard<'a> {
        // Op ids are positive 32-bit integers (killOp refuses wider ones); they wrap after 2^31.
        let opid = self
            .next_id
            .fetch_add(1, Ordering::Relaxed)
            .checked_add(1)
            .filter(|id| *id > 0)
            .unwrap_or_else(|| {
                self.next_id.store(1, Ordering::Relaxed);
                1
            });
        let op = RunningOp {
            connection_id: conn.id,
            client: conn.peer.to_string(),
            host: format!("{}:{}", crate::host::hostname(), conn.local.port()),
            client_metadata: conn.client_metadata.clone(),
            op: req.name.op_type(),
            ns: namespace(req),
            command: Sent {
                body: Arc::clone(req.body),
                documents: req.documents.cloned(),
            },
            started: Stopwatch::start(),
            started_at: shared.clock.now_datetime(),
            interrupt: Arc::clone(&req.interrupt),
            time_limited: !req.name.has(Fact::NoRequestTimeLimit),
        };
        self.ops().insert(opid, op);
        OpGuard {
            registry: self,
            opid,
        }
    }

    /// Kills operation `opid`; whether it was running.
    pub fn kill(&self, opid: i32) -> bool {
        let interrupt = self.ops().get(&opid).map(|op| Arc::clone(&op.interrupt));
        match interrupt {
            Some(interrupt) => {
                interrupt.kill(KillReason::Killed);
                true
            }
            None => false,
        }
    }

    /// Stops, as `killOp` does, every time-limited operation that has run for `limit` or
    /// longer; returns how many.
    pub fn stop_overdue(&self, limit: Duration) -> usize {
        let overdue: Vec<Arc<Interrupt>> = self
            .ops()
            .values()
            .filter(|op| op.time_limited && op.started.elapsed() >= limit)
            .filter(|op| !op.interrupt.is_killed())
            .map(|op| Arc::clone(&op.interrupt))
            .collect();
        for interrupt in &overdue {
            interrupt.kill(KillReason::RequestTimeLimit);
        }
        overdue.len()
    }

    /// The `inprog` entries of every running operation, oldest first (also what a
    /// `$currentOp` stage would produce).
    pub fn report(&self) -> Vec<Document> {
        self.ops().iter().map(|(id, op)| op.report(*id)).collect()
    }
}

impl RunningOp {
    fn report(&self, opid: i32) -> Document {
        let elapsed = self.started.elapsed();
        let mut entry = doc! {
            "type": "op",
            "host": self.host.as_str(),
            "desc": format!("conn{}", self.connection_id),
            "connectionId": self.connection_id,
            "client": self.client.as_str(),
        };
        if let Some(meta) = &self.client_metadata {
            if let Some(app) = super::identity::app_name(meta) {
                entry.insert("appName", app);
            }
            entry.insert("clientMetadata", meta.clone());
        }
        entry.insert("active", true);
        entry.insert(
            "currentOpTime",
            self.started_at.try_to_rfc3339_string().unwrap_or_default(),
        );
        entry.insert("threaded", true);
        entry.insert("opid", opid);
        entry.insert(
            "secs_running",
            i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
        );
        entry.insert(
            "microsecs_running",
            i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX),
        );
        entry.insert("op", self.op);
        entry.insert("ns", self.ns.as_str());
        entry.insert("redacted", false);
        entry.insert("command", self.command.report());
        if self.interrupt.is_killed() {
            entry.insert("killPending", true);
        }
        entry.insert("numYields", 0);
        entry.insert("locks", Document::new());
        entry.insert("waitingForLock", false);
        entry.insert("lockStats", Document::new());
        entry
    }
}

/// `db.collection` for commands on a collection, `db.$cmd` for the others.
fn namespace(req: &Request<'_>) -> String {
    let collection = match req.name.target() {
        Target::Cursor => req.body.get_str("collection").ok(),
        Target::Collection => req.body.get_str(req.name.name()).ok(),
        Target::Database => None,
    };
    format!("{}.{}", req.db, collection.unwrap_or("$cmd"))
}

/// A running command as it came: registering it for `currentOp` shares its body (every command
/// is registered); only a `currentOp` renders it.
struct Sent {
    body: Arc<Document>,
    documents: Option<Arc<RawDocuments>>,
}

impl Sent {
    /// The `command` field of the operation's `currentOp` entry.
    fn report(&self) -> Document {
        reported_command(&with_documents(&self.body, self.documents.as_deref()))
    }
}

/// The command as the client sent it: an `insert`'s document sequence, kept as bytes, is put
/// back as the `documents` field the body would have had, as far as a report can show.
fn with_documents<'r>(
    body: &'r Document,
    documents: Option<&RawDocuments>,
) -> std::borrow::Cow<'r, Document> {
    let Some(raw) = documents else {
        return std::borrow::Cow::Borrowed(body);
    };
    // Enough documents for the report's first kilobyte of JSON: a value's JSON is never shorter
    // than a sixth of its BSON (an Int64 array element: 11 bytes, 2 characters), so eight
    // kilobytes of BSON fill it.
    let mut budget = 8 * MAX_REPORTED_COMMAND_BYTES;
    let mut documents = Vec::new();
    for bytes in raw.iter() {
        let Ok(doc) = bson::RawDocument::from_bytes(bytes).and_then(Document::try_from) else {
            break;
        };
        documents.push(Bson::Document(doc));
        budget = budget.saturating_sub(bytes.len());
        if budget == 0 {
            break;
        }
    }
    let mut body = body.clone();
    body.insert("documents", documents);
    std::borrow::Cow::Owned(body)
}

/// The `command` of a `currentOp` entry: secrets replaced (`secrets`), past a kilobyte a
/// summary.
fn reported_command(body: &Document) -> Document {
    let body = super::super::secrets::for_logging(body);
    let body = body.as_ref();
    if crate::query::size::document_size(body) <= MAX_REPORTED_COMMAND_BYTES {
        return body.clone();
    }
    let text = json_prefix(body, MAX_REPORTED_COMMAND_BYTES);
    let mut truncated = doc! {"$truncated": format!("{text}...")};
    if let Some(comment) = body.get("comment") {
        truncated.insert("comment", comment.clone());
    }
    truncated
}

/// The first `limit` characters of `body` as compact relaxed extended JSON. Only the fields,
/// and the elements of array fields, that the cut keeps are rendered: a `currentOp` while an
/// `insert` of 100,000 documents runs must not render them all to show a kilobyte of them.
fn json_prefix(body: &Document, limit: usize) -> String {
    let json = |value: &Bson| value.clone().into_relaxed_extjson().to_string();
    let full = |out: &String| out.chars().count() >= limit;
    let mut out = String::from("{");
    for (i, (name, value)) in body.iter().enumerate() {
        if full(&out) {
            break;
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(&json(&Bson::String(name.clone())));
        out.push(':');
        match value {
            Bson::Array(items) => {
                out.push('[');
                for (j, item) in items.iter().enumerate() {
                    if full(&out) {
                        break;
                    }
                    if j > 0 {
                        out.push(',');
                    }
                    out.push_str(&json(item));
                }
                out.push(']');
            }
            other => out.push_str(&json(other)),
        }
    }
    out.push('}');
    out.chars().take(limit).collect()
}

/// Fields drivers add to every command; not conditions on operations.
const ENVELOPE_FIELDS: &[&str] = &["$db", "$readPreference", "$clusterTime", "lsid"];

/// `{currentOp: 1, $all: <bool>, $ownOps: <bool>, <field>: <condition>...}` on admin: the
/// running operations that match the conditions (a query filter on each `inprog` entry): the
/// clients' commands, then the index builds in progress (`index_build_ops`). mayfly has no idle or system operations to add for `$all`, nor users for `$ownOps`.
pub fn current_op(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let mut conditions = Document::new();
    for (field, value) in req.body.iter().skip(1) {
        match field.as_str() {
            // Accepted and read for their truth value, which changes nothing here.
            "$all" | "$ownOps" => {}
            f if is_generic(f) || ENVELOPE_FIELDS.contains(&f) => {}
            _ => {
                conditions.insert(field.clone(), value.clone());
            }
        }
    }
    let filter = Filter::compile(&conditions)?;
    let mut inprog: Vec<Bson> = Vec::new();
    for entry in all_entries(shared) {
        if filter.matches(&entry)? {
            inprog.push(Bson::Document(entry));
        }
    }
    Ok(doc! {"inprog": inprog, "ok": 1.0})
}

/// Every `inprog` entry: the clients' commands, then the index builds in progress (what
/// `currentOp` filters and the `$currentOp` stage lists).
pub fn all_entries(shared: &Shared) -> Vec<Document> {
    let mut entries = shared.ops.report();
    // The `currentOp` asking is itself listed, with the server's `host:port` as its connection
    // sees it.
    let host = entries
        .first()
        .and_then(|entry| entry.get_str("host").ok())
        .map_or_else(crate::host::hostname, str::to_owned);
    let builds = shared.engine.index_build_progress();
    entries.extend(
        builds
            .iter()
            .map(|report| super::index_build_ops::entry(report, &host)),
    );
    entries
}

/// `{killOp: 1, op: <opid>}` on admin. Like mongod, it succeeds whether or not the op exists.
pub fn kill_op(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let opid = parse_op_id(req.body)?;
    let found = shared.ops.kill(opid);
    tracing::info!(opid, found, "killOp");
    Ok(doc! {"info": "attempting to kill op", "ok": 1.0})
}

/// `op` as mongod's `bsonExtractIntegerField` reads it, then limited to 32 bits.
fn parse_op_id(cmd: &Document) -> Result<i32> {
    let value = cmd
        .get("op")
        .ok_or_else(|| Error::new(ErrorCode::NoSuchKey, "Missing expected field \"op\""))?;
    let op = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) => {
            let n = *d as i64;
            if n as f64 != *d {
                return Err(Error::bad_value(format!(
                    "Expected field \"op\" to have a value exactly representable as a 64-bit integer, but found op: {d}"
                )));
            }
            n
        }
        other => {
            return Err(Error::type_mismatch(format!(
                "Expected field \"op\" to have numeric type, but found {}",
                type_name(other)
            )))
        }
    };
    i32::try_from(op).map_err(|_| {
        Error::new(
            ErrorCode::Location26823,
            format!("invalid op : {op}. Op ID cannot be represented with 32 bits"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::CommandName;

    #[test]
    fn an_inserts_document_sequence_is_reported_as_its_documents_field() {
        let body = Arc::new(doc! {"insert": "c", "ordered": true, "$db": "d"});
        let docs: Vec<Document> = (0..3).map(|i| doc! {"_id": i, "s": "x"}).collect();
        let mut raw = crate::protocol::RawDocuments::default();
        for d in &docs {
            raw.push(&bson::to_vec(d).unwrap());
        }
        let raw = Arc::new(raw);
        let req = Request {
            name: CommandName::Insert,
            db: "d",
            body: &body,
            documents: Some(&raw),
            parsed: crate::command::ParsedCommand::Other(&body),
            interrupt: Interrupt::none(),
            session: Default::default(),
            transaction: None,
        };
        let mut expected = (*body).clone();
        expected.insert(
            "documents",
            docs.into_iter().map(Bson::Document).collect::<Vec<_>>(),
        );
        let sent = Sent {
            body: Arc::clone(req.body),
            documents: req.documents.cloned(),
        };
        assert_eq!(sent.report(), expected);
        // A long sequence is decoded only as far as the report shows.
        let mut long = crate::protocol::RawDocuments::default();
        for i in 0..100_000 {
            long.push(&bson::to_vec(&doc! {"_id": i}).unwrap());
        }
        let long = Arc::new(long);
        let req = Request {
            documents: Some(&long),
            ..req
        };
        let reported = with_documents(req.body, req.documents.map(|d| &**d));
        let shown = reported.get_array("documents").unwrap().len();
        assert!((500..2000).contains(&shown), "{shown}");
        let text = reported_command(&reported);
        assert!(text
            .get_str("$truncated")
            .unwrap()
            .starts_with("{\"insert\":\"c\""));
    }

    #[test]
    fn a_large_command_is_reported_as_the_start_of_its_whole_rendering() {
        let documents: Vec<Bson> = (0..2000)
            .map(|i| Bson::Document(doc! {"_id": i, "s": "é-payload", "n": 1.5}))
            .collect();
        let big = doc! {"insert": "c", "documents": documents, "ordered": true, "$db": "d"};
        let whole: String = Bson::Document(big.clone())
            .into_relaxed_extjson()
            .to_string()
            .chars()
            .take(MAX_REPORTED_COMMAND_BYTES)
            .collect();
        assert_eq!(json_prefix(&big, MAX_REPORTED_COMMAND_BYTES), whole);
        let reported = reported_command(
            &doc! {"comment": "x", "documents": big.get("documents").unwrap().clone()},
        );
        assert_eq!(reported.get_str("comment").unwrap(), "x");
        assert!(reported.get_str("$truncated").unwrap().ends_with("..."));
        // A command that ends before the limit is rendered whole.
        let small = doc! {"a": [1, 2], "b": "x"};
        assert_eq!(
            json_prefix(&small, 1000),
            Bson::Document(small.clone())
                .into_relaxed_extjson()
                .to_string()
        );
    }

    #[test]
    fn op_ids_are_read_as_mongod_reads_them() {
        assert_eq!(parse_op_id(&doc! {"killOp": 1, "op": 7}).unwrap(), 7);
        assert_eq!(parse_op_id(&doc! {"killOp": 1, "op": 7_i64}).unwrap(), 7);
        assert_eq!(parse_op_id(&doc! {"killOp": 1, "op": 7.0}).unwrap(), 7);
        let code = |d: Document| parse_op_id(&d).unwrap_err().code;
        assert_eq!(code(doc! {"killOp": 1}), ErrorCode::NoSuchKey);
        assert_eq!(code(doc! {"killOp": 1, "op": "7"}), ErrorCode::TypeMismatch);
        assert_eq!(code(doc! {"killOp": 1, "op": 1.5}), ErrorCode::BadValue);
        assert_eq!(
            code(doc! {"killOp": 1, "op": i64::MAX}),
            ErrorCode::Location26823
        );
    }

    #[test]
    fn secrets_are_never_reported() {
        for body in [
            doc! {"saslContinue": 1, "conversationId": 1, "payload": "Yz1iaXdzLHI9"},
            doc! {"createUser": "u", "pwd": "secret", "roles": []},
            doc! {"hello": 1, "speculativeAuthenticate": {"saslStart": 1}},
        ] {
            let reported = reported_command(&body);
            let text = reported.to_string();
            assert!(text.contains("\"xxx\""), "{text}");
            for secret in ["Yz1iaXdzLHI9", "secret", "saslStart"] {
                assert!(!text.contains(secret), "{text}");
            }
            assert_eq!(reported.keys().next(), body.keys().next());
        }
    }

    #[test]
    fn large_commands_are_reported_truncated() {
        let big = doc! {"find": "c", "filter": {"x": "y".repeat(5000)}, "comment": "mine"};
        let reported = reported_command(&big);
        assert!(reported.get_str("$truncated").unwrap().len() < 1100);
        assert_eq!(reported.get_str("comment").unwrap(), "mine");
        let small = doc! {"find": "c"};
        assert_eq!(reported_command(&small), small);
    }
}
