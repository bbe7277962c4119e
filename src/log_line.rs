//! One log event as mongod's structured log line, `{t, s, c, id, ctx, msg, attr}`: what
//! `--log-format json` writes and what `getLog` returns, so tools that read mongod's logs
//! read mayfly's.
//!
//! - `t`: `{"$date": "2026-11-23T22:05:42.123+00:00"}`, wall time in milliseconds.
//! - `s`: `F`, `E`, `W`, `I`, `D1`, `D2` (mongod's severities).
//! - `c`: mongod's component, from the module that logged (`NETWORK`, `COMMAND`, `REPL`,
//!   `ACCESS`, `INDEX`, `STORAGE`, `CONTROL`).
//! - `id`: the event's `log_id` field where it has one — the events tools look for carry
//!   mongod's own ids (51803 "Slow query", 22943 "Connection accepted", 22944 "Connection
//!   ended", 23016 "Waiting for connections", 20249 "Authentication failed", 20250
//!   "Authentication succeeded"); otherwise a number derived from where the
//!   event is logged, stable within one version of mayfly.
//! - `ctx`: `conn<N>` inside a connection, otherwise the thread's name (`mayfly-reaper`, …) or
//!   `main`.
//! - `attr`: every other field. Fields that hold a document (`command`) are written as JSON
//!   objects, not as strings.
//!
//! Does not own: where lines go (`main`'s subscriber, `recent_log`).

use crate::clock::{Clock, SystemClock};
use bson::{doc, Bson, Document};
use std::fmt;
use std::sync::OnceLock;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// Fields whose value is a document's relaxed extended JSON, embedded as an object.
const DOCUMENT_FIELDS: &[&str] = &["command", "extraInfo"];

/// The connection a span belongs to, kept in the span's extensions by [`ContextLayer`].
#[derive(Debug, Clone, Copy)]
struct ConnectionId(i64);

/// Remembers the connection id of each `conn` span, for `ctx`.
pub struct ContextLayer;

impl<S> tracing_subscriber::Layer<S> for ContextLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "conn" {
            return;
        }
        let mut visitor = IdField(None);
        attrs.record(&mut visitor);
        if let (Some(conn), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().insert(ConnectionId(conn));
        }
    }
}

struct IdField(Option<i64>);

impl Visit for IdField {
    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "id" {
            self.0 = Some(value);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.record_i64(field, i64::try_from(value).unwrap_or(i64::MAX));
    }

    fn record_debug(&mut self, _: &Field, _: &dyn fmt::Debug) {}
}

/// The `ctx` of an event: its connection, if it happened in one, else the thread's name.
pub fn context<'a, R>(scope: Option<tracing_subscriber::registry::Scope<'a, R>>) -> String
where
    R: LookupSpan<'a>,
{
    let connection = scope.and_then(|scope| {
        scope
            .from_root()
            .find_map(|span| span.extensions().get::<ConnectionId>().copied())
    });
    match connection {
        Some(ConnectionId(id)) => format!("conn{id}"),
        None => std::thread::current()
            .name()
            .filter(|name| !name.starts_with("tokio-runtime"))
            .unwrap_or("main")
            .to_owned(),
    }
}

/// `--log-format json`: each event as [`render`] writes it, one per line.
pub struct JsonFormat;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for JsonFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let context = context(ctx.event_scope());
        writeln!(writer, "{}", render(event, &context))
    }
}

/// The event as one line of JSON.
pub fn render(event: &Event<'_>, ctx: &str) -> String {
    static CLOCK: OnceLock<SystemClock> = OnceLock::new();
    let now = CLOCK.get_or_init(SystemClock::new).now_millis();
    let mut fields = Fields::default();
    event.record(&mut fields);
    let meta = event.metadata();
    let id = fields
        .log_id
        .unwrap_or_else(|| callsite_id(meta.target(), meta.name()));
    let mut line = doc! {
        "t": {"$date": timestamp(now)},
        "s": severity(*meta.level()),
        "c": component(meta.target()),
        "id": id,
        "ctx": ctx,
        "msg": fields.message,
    };
    if !fields.attr.is_empty() {
        line.insert("attr", fields.attr);
    }
    Bson::Document(line).into_relaxed_extjson().to_string()
}

/// mongod's timestamp: milliseconds and an explicit UTC offset. A wall clock outside the
/// years -9999..=9999 is written as the epoch.
fn timestamp(millis: i64) -> String {
    crate::calendar::iso::log_timestamp(millis)
        .unwrap_or_else(|| String::from("1970-01-01T00:00:00.000+00:00"))
}

/// mongod's one-letter severities.
fn severity(level: Level) -> &'static str {
    match level {
        Level::ERROR => "E",
        Level::WARN => "W",
        Level::INFO => "I",
        Level::DEBUG => "D1",
        Level::TRACE => "D2",
    }
}

/// mongod's log component for an event logged by `target` (a module path).
fn component(target: &str) -> &'static str {
    const BY_PREFIX: &[(&str, &str)] = &[
        ("mayfly::command::replset", "REPL"),
        ("mayfly::command::users", "ACCESS"),
        ("mayfly::command::auth", "ACCESS"),
        ("mayfly::command::sasl", "ACCESS"),
        ("mayfly::auth", "ACCESS"),
        ("mayfly::session::slow_op", "COMMAND"),
        ("mayfly::session", "NETWORK"),
        ("mayfly::server", "NETWORK"),
        ("mayfly::tls", "NETWORK"),
        ("mayfly::metrics", "NETWORK"),
        ("mayfly::command", "COMMAND"),
        ("mayfly::engine::background::reaper", "INDEX"),
        ("mayfly::engine::background::index_build", "INDEX"),
        ("mayfly::engine", "STORAGE"),
        ("mayfly::storage", "STORAGE"),
        ("fjall", "STORAGE"),
        ("lsm_tree", "STORAGE"),
    ];
    BY_PREFIX
        .iter()
        .find(|(prefix, _)| target.starts_with(prefix))
        .map_or("CONTROL", |(_, component)| component)
}

/// A number for events without a `log_id`: FNV-1a of where they are logged, folded into
/// mongod's range of ids (below 10,000,000), so it stays the same from run to run.
fn callsite_id(target: &str, name: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in target.bytes().chain([0]).chain(name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::try_from(hash % 9_000_000).unwrap_or(0) + 1_000_000
}

#[derive(Default)]
struct Fields {
    message: String,
    log_id: Option<i64>,
    attr: Document,
}

impl Fields {
    fn insert(&mut self, field: &Field, value: Bson) {
        match field.name() {
            "message" => self.message = value.as_str().unwrap_or_default().to_owned(),
            "log_id" => self.log_id = value.as_i64(),
            name => {
                self.attr
                    .insert(name.strip_prefix("r#").unwrap_or(name), value);
            }
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        self.record_str(field, &text);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let document = DOCUMENT_FIELDS
            .contains(&field.name())
            .then(|| serde_json::from_str::<serde_json::Value>(value).ok())
            .flatten()
            .and_then(|json| Bson::try_from(json).ok());
        self.insert(
            field,
            document.unwrap_or_else(|| Bson::String(value.to_owned())),
        );
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, Bson::Int64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, Bson::Int64(i64::try_from(value).unwrap_or(i64::MAX)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, Bson::Boolean(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.insert(field, Bson::Double(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_follow_the_module_that_logged() {
        for (target, expected) in [
            ("mayfly::session", "NETWORK"),
            ("mayfly::session::slow_op", "COMMAND"),
            ("mayfly::command::replset::hello", "REPL"),
            ("mayfly::command::find", "COMMAND"),
            ("mayfly::engine::background::reaper", "INDEX"),
            ("mayfly::engine::writer", "STORAGE"),
            ("fjall::keyspace", "STORAGE"),
            ("mayfly", "CONTROL"),
        ] {
            assert_eq!(component(target), expected, "{target}");
        }
    }

    #[test]
    fn timestamps_have_milliseconds_and_an_offset() {
        assert_eq!(
            timestamp(1_700_000_000_123),
            "2023-11-14T22:13:20.123+00:00"
        );
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000+00:00");
    }

    #[test]
    fn callsite_ids_are_stable_and_in_range() {
        let id = callsite_id("mayfly::server", "event src/server.rs:10");
        assert_eq!(id, callsite_id("mayfly::server", "event src/server.rs:10"));
        assert_ne!(id, callsite_id("mayfly::server", "event src/server.rs:11"));
        assert!((1_000_000..10_000_000).contains(&id));
    }
}
