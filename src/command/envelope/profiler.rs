//! The database profiler, as mongod's: the `profile` command sets a database's level (0 off,
//! 1 slow operations, 2 every operation), the server-wide `slowms` and `sampleRate`, and a
//! per-database `filter`; each profiled operation becomes a document of `<db>.system.profile`.
//!
//! The same settings decide which operations are logged as slow (`session::slow_op`): at or
//! over `slowms`, sampled at `sampleRate`; with a filter on the database, exactly the
//! operations it matches (mongod: "When a filter expression is set, slowms and sampleRate are
//! not used for profiling and slow-query log lines").
//!
//! `system.profile` is a real collection, read with `find` and `aggregate` like any other, and
//! bounded as mongod's capped one is: past 1 MiB the oldest entries are deleted in the same
//! commit as the new one. Clients cannot write to it (73, as any `system.` name).
//!
//! Owns those steps (deciding is a method of the settings, so the session calls it on
//! `shared.profiler`), the entry's shape and the `profile` command. Does not own: the settings
//! (`state::profiler`), the slow-operation line (`session::slow_op`), the plan counters
//! (`engine::exec::plan_log`).

use super::super::args::{check_fields, optional_i64};
use super::super::state::profiler::Profiler;
use super::super::{CommandName, Connection, Outcome, ParsedCommand, Request, Shared};
use crate::engine::{ddl, documents::collection, Interrupt};
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::Reply;
use crate::query::filter::Filter;
use bson::{doc, Bson, Document};
use std::sync::Arc;
use std::time::Duration;

/// The collection profiled operations go to.
pub const PROFILE_COLLECTION: &str = "system.profile";
/// mongod's default size of `system.profile`.
const PROFILE_MAX_BYTES: u64 = 1024 * 1024;
/// A command larger than this is kept in its entry only as a truncated summary, as mongod does.
const MAX_COMMAND_BYTES: usize = 50 * 1024;
/// Characters of a truncated command's summary.
const TRUNCATED_SUMMARY_CHARS: usize = 1000;
const FIELDS: &[&str] = &["slowms", "sampleRate", "filter"];

impl Profiler {
    /// What to do with a finished operation: whether it is logged as slow and whether it is
    /// written to the profile. `entry` is built only when a filter must judge it.
    pub fn decide(&self, op: &Operation<'_>, conn: &Connection, shared: &Shared) -> Decision {
        let settings = self.settings(op.db);
        if let Some((_, filter)) = &settings.filter {
            let entry = entry(op, conn, shared);
            let matched = filter.matches(&entry).unwrap_or(false);
            return Decision {
                log_slow: matched,
                profile: (matched && settings.level >= 1).then_some(entry),
            };
        }
        let millis = i64::try_from(op.elapsed.as_millis()).unwrap_or(i64::MAX);
        let slow = millis >= self.slow_ms() && sampled(self.sample_rate());
        let profile = settings.level == 2 || (settings.level == 1 && slow);
        Decision {
            log_slow: slow,
            profile: profile.then(|| entry(op, conn, shared)),
        }
    }
}

/// `rate` of the time, at random.
fn sampled(rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return true;
    }
    // 53 random bits as a fraction in [0, 1).
    let fraction = (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64;
    fraction < rate
}

/// What becomes of one finished operation.
#[derive(Debug)]
pub struct Decision {
    pub log_slow: bool,
    /// The profile entry to write, if it is profiled.
    pub profile: Option<Document>,
}

/// One finished command, as the slow-operation log and the profiler see it.
pub struct Operation<'a> {
    /// The database it ran against (`$db`, or an OP_QUERY namespace's).
    pub db: &'a str,
    pub body: &'a Document,
    /// The command as its parse read it; `None` when it was refused before its parse (or has
    /// no spec, `ParsedCommand::detached`).
    pub parsed: Option<&'a ParsedCommand<'a>>,
    pub outcome: &'a Outcome,
    pub interrupt: &'a Interrupt,
    pub elapsed: Duration,
    /// `op_msg` or `op_query`.
    pub protocol: &'static str,
    /// The request units it was charged (the Cosmos profile).
    pub request_charge: Option<f64>,
}

impl Operation<'_> {
    /// `db.collection` as mongod logs it: the command's first value when it names a
    /// collection (a parsed `getMore`'s `collection`), otherwise `db.$cmd`.
    pub fn namespace(&self) -> String {
        match self.collection() {
            Some(collection) => format!("{}.{collection}", self.db),
            None => format!("{}.$cmd", self.db),
        }
    }

    /// The collection the command names: its first value when that is a string, `getMore`'s
    /// `collection` field; `None` for commands on the database or the server.
    pub fn collection(&self) -> Option<&str> {
        collection_of(self.body, self.parsed)
    }

    /// The command's name.
    pub fn command(&self) -> &str {
        self.body.keys().next().map_or("", String::as_str)
    }

    /// mongod's `op` of a profile entry (and `top`'s category).
    pub fn kind(&self) -> &'static str {
        CommandName::from_name(self.command()).map_or("command", CommandName::op_type)
    }

    /// The reply, if there is one. Read it in place: a cursor batch can hold 16 MB of
    /// documents, which a copy or a decode would hold again for every slow operation.
    pub fn reply(&self) -> Option<&Reply> {
        match self.outcome {
            Outcome::Reply(reply) => Some(reply),
            Outcome::Close => None,
        }
    }
}

/// The collection a command names: its first value when that is a string, a `getMore`'s
/// `collection` as its parse read it; `None` for commands on the database or the server, and
/// for a `getMore` refused before its parse (mongod names it `db.$cmd` then too: a command's
/// namespace comes from its parsed invocation).
pub fn collection_of<'a>(
    body: &'a Document,
    parsed: Option<&'a ParsedCommand<'_>>,
) -> Option<&'a str> {
    match body.iter().next() {
        Some((name, _)) if name == "getMore" => parsed?.cursor_collection(),
        Some((_, Bson::String(collection))) => Some(collection.as_str()),
        _ => None,
    }
}

/// The profile entry of `op`, in mongod's shape.
fn entry(op: &Operation<'_>, conn: &Connection, shared: &Shared) -> Document {
    let command = command_of(&super::super::secrets::for_logging(op.body));
    let mut entry = doc! {"op": op.kind(), "ns": op.namespace(), "command": command};
    if let Some(plan) = op.interrupt.plans.summary() {
        let totals = op.interrupt.plans.totals();
        entry.insert("keysExamined", count(totals.keys_examined));
        entry.insert("docsExamined", count(totals.docs_examined));
        entry.insert("planSummary", plan);
    }
    if let Some(reply) = op.reply() {
        if let Some(n) = reply.batch_len() {
            entry.insert("nreturned", count(n as u64));
        }
        entry.insert("responseLength", count(reply.byte_len() as u64));
    }
    if let Some(charge) = op.request_charge {
        entry.insert("requestCharge", charge);
    }
    entry.insert("protocol", op.protocol);
    entry.insert("millis", count(op.elapsed.as_millis() as u64));
    entry.insert("ts", shared.clock.now_datetime());
    entry.insert("client", conn.peer.ip().to_string());
    if let Some(app) = conn.app_name() {
        entry.insert("appName", app);
    }
    let users: Vec<Bson> = conn
        .authenticated
        .iter()
        .map(|u| Bson::Document(doc! {"user": u.name.as_str(), "db": u.db.as_str()}))
        .collect();
    let user = conn
        .authenticated
        .first()
        .map_or(String::new(), |u| format!("{}@{}", u.name, u.db));
    entry.insert("allUsers", users);
    entry.insert("user", user);
    // An error reply is small: decoding it costs nothing worth saving.
    let error = op
        .reply()
        .filter(|r| r.is_error())
        .map(|r| r.clone().into_document());
    if let Some(reply) = error {
        entry.insert("ok", 0.0);
        entry.insert("errMsg", reply.get_str("errmsg").unwrap_or_default());
        entry.insert("errName", reply.get_str("codeName").unwrap_or_default());
        entry.insert("errCode", reply.get_i32("code").unwrap_or_default());
    }
    entry
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The command as the entry keeps it (its secrets already replaced): whole, or past 50 KB a
/// summary, as mongod truncates it.
fn command_of(body: &Document) -> Document {
    let size = bson::to_vec(body).map_or(0, |b| b.len());
    if size <= MAX_COMMAND_BYTES {
        return body.clone();
    }
    let text = Bson::Document(body.clone())
        .into_relaxed_extjson()
        .to_string();
    let summary: String = text.chars().take(TRUNCATED_SUMMARY_CHARS).collect();
    doc! {"$truncated": format!("{summary} ...")}
}

/// Writes a profile entry to `db.system.profile`, deleting the oldest entries past its size.
pub async fn record(shared: &Shared, db: &str, entry: Document) -> Result<()> {
    let db = db.to_owned();
    shared
        .engine
        .write(false, move |txn, now| -> Result<()> {
            let meta = ddl::ensure_system_collection(txn, &db, PROFILE_COLLECTION)?;
            let mut entry = entry;
            // ObjectIds rise with time: the smallest `_id` is the oldest entry.
            let mut with_id = doc! {"_id": bson::oid::ObjectId::new()};
            with_id.extend(std::mem::take(&mut entry));
            collection::insert(txn, &meta, &with_id, now)?;
            let mut size = txn.totals(meta.id)?.size;
            if size <= PROFILE_MAX_BYTES {
                return Ok(());
            }
            let prefix = crate::storage::keys::collection_prefix(meta.id);
            let mut oldest = Vec::new();
            for stored in collection::scan(txn, &meta, &prefix, now) {
                let stored = stored?;
                size = size.saturating_sub(stored.record.body.len() as u64);
                oldest.push(stored);
                if size <= PROFILE_MAX_BYTES {
                    break;
                }
            }
            for stored in &oldest {
                collection::delete(txn, &meta, stored)?;
            }
            Ok(())
        })
        .await?
}

/// `profile`: reports the settings as they were and applies the new ones.
pub fn profile(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "profile", FIELDS)?;
    let level = optional_i64(cmd, "profile", "profile")?.ok_or_else(|| {
        Error::new(
            ErrorCode::TypeMismatch,
            "BSON field 'profile.profile' is missing but a required field",
        )
    })?;
    let sample_rate = match cmd.get("sampleRate") {
        None => None,
        Some(Bson::Double(r)) => Some(*r),
        Some(Bson::Int32(r)) => Some(f64::from(*r)),
        Some(Bson::Int64(r)) => Some(*r as f64),
        Some(other) => {
            return Err(super::super::args::wrong_type(
                "profile",
                "sampleRate",
                other,
                "double",
            ))
        }
    };
    if let Some(rate) = sample_rate {
        if !(0.0..=1.0).contains(&rate) {
            return Err(Error::bad_value(
                "'sampleRate' must be between 0.0 and 1.0 inclusive",
            ));
        }
    }
    let slow_ms = optional_i64(cmd, "profile", "slowms")?;
    // `filter: "unset"` removes it; a document sets it.
    let filter = match cmd.get("filter") {
        None => None,
        Some(Bson::String(s)) if s == "unset" => Some(None),
        Some(Bson::Document(f)) => Some(Some((f.clone(), Arc::new(Filter::compile(f)?)))),
        Some(other) => {
            return Err(super::super::args::wrong_type(
                "profile",
                "filter",
                other,
                "object or 'unset'",
            ))
        }
    };
    let profiler = &shared.profiler;
    let old = profiler.settings(req.db);
    // mongod keeps slowms as an int and answers it as one.
    let slow_ms_now = i32::try_from(profiler.slow_ms()).unwrap_or(i32::MAX);
    let mut reply = doc! {
        "was": old.level,
        "slowms": slow_ms_now,
        "sampleRate": profiler.sample_rate(),
    };
    if let Some((spec, _)) = &old.filter {
        reply.insert("filter", spec.clone());
    }
    if old.filter.is_some() || matches!(filter, Some(Some(_))) {
        reply.insert(
            "note",
            "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines.",
        );
    }
    // Outside 0, 1 and 2 (mongod: -1 by convention) the command only reads.
    if (0..=2).contains(&level) {
        let mut new = old.clone();
        new.level = i32::try_from(level).unwrap_or(0);
        if let Some(filter) = filter {
            new.filter = filter;
        }
        let to = new.level;
        profiler.set_database(req.db, new);
        if let Some(slow_ms) = slow_ms {
            profiler.set_slow_ms(slow_ms);
        }
        if let Some(rate) = sample_rate {
            profiler.set_sample_rate(rate);
        }
        tracing::info!(
            db = req.db,
            from = old.level,
            to,
            slowms = profiler.slow_ms(),
            "Profiler settings changed"
        );
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operation<'a>(
        db: &'a str,
        (body, parsed): (&'a Document, Option<&'a ParsedCommand<'a>>),
        outcome: &'a Outcome,
    ) -> Operation<'a> {
        static INTERRUPT: std::sync::OnceLock<Interrupt> = std::sync::OnceLock::new();
        Operation {
            db,
            body,
            parsed,
            outcome,
            interrupt: INTERRUPT.get_or_init(Interrupt::default),
            elapsed: Duration::ZERO,
            protocol: "op_msg",
            request_charge: None,
        }
    }

    #[test]
    fn namespaces_and_kinds_as_mongod_names_them() {
        let outcome = Outcome::Close;
        for (db, body, ns, kind) in [
            ("shop", doc! {"find": "orders"}, "shop.orders", "query"),
            ("admin", doc! {"ping": 1}, "admin.$cmd", "command"),
            (
                "d",
                doc! {"getMore": 7_i64, "collection": "c"},
                "d.c",
                "getmore",
            ),
            ("d", doc! {"delete": "c"}, "d.c", "remove"),
            ("d", doc! {"aggregate": 1}, "d.$cmd", "command"),
        ] {
            let name = CommandName::from_name(body.keys().next().unwrap()).unwrap();
            let parsed = ParsedCommand::parse(name, &body, false).ok();
            let op = operation(db, (&body, parsed.as_ref()), &outcome);
            assert_eq!(op.namespace(), ns, "{body}");
            assert_eq!(op.kind(), kind, "{body}");
        }
        // A getMore refused before its parse names no collection, as on mongod.
        let body = doc! {"getMore": 7_i64, "collection": "c"};
        assert_eq!(
            operation("d", (&body, None), &outcome).namespace(),
            "d.$cmd"
        );
    }

    #[test]
    fn sampling_follows_the_rate() {
        assert!(sampled(1.0));
        assert!(!(0..1000).any(|_| sampled(0.0)));
        let hits = (0..10_000).filter(|_| sampled(0.5)).count();
        assert!((4_000..6_000).contains(&hits), "{hits}");
    }

    #[test]
    fn a_large_command_is_kept_as_a_summary() {
        let small = doc! {"find": "c", "filter": {"a": 1}};
        assert_eq!(command_of(&small), small);
        let large = doc! {"find": "c", "filter": {"a": "x".repeat(60 * 1024)}};
        let kept = command_of(&large);
        let summary = kept.get_str("$truncated").unwrap();
        assert!(summary.starts_with(r#"{"find":"c""#), "{summary}");
        assert!(summary.len() < 1100);
    }
}
