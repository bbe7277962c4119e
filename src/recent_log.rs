//! The last lines the server logged, kept in memory for `getLog: "global"` (mongod keeps the
//! same 1024-line ring), which mongosh's `show log` reads. The binary installs [`RecentLayer`]
//! beside its log output; each event then becomes one line in mongod's structured shape
//! (`t`, `s`, `c`, `ctx`, `msg`, `attr`). A server embedded without the layer (tests) keeps
//! none and says so by an empty log.

use crate::clock::{Clock, SystemClock};
use bson::{doc, Bson, Document};
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Mutex, OnceLock};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;

/// Lines kept, as mongod's `global` RamLog.
pub const CAPACITY: usize = 1024;

/// The ring of recent lines and how many were ever written.
#[derive(Default)]
pub struct RecentLog {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    lines: VecDeque<String>,
    total: u64,
}

/// The process's recent log: there is one log output per process.
pub fn global() -> &'static RecentLog {
    static LOG: OnceLock<RecentLog> = OnceLock::new();
    LOG.get_or_init(RecentLog::default)
}

impl RecentLog {
    pub fn push(&self, line: String) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.lines.len() == CAPACITY {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
        state.total += 1;
    }

    /// Lines written in all, and the ones still kept, oldest first.
    pub fn snapshot(&self) -> (u64, Vec<String>) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.total, state.lines.iter().cloned().collect())
    }
}

/// The `tracing` layer that feeds [`global`].
pub struct RecentLayer;

impl<S: Subscriber> tracing_subscriber::Layer<S> for RecentLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        global().push(line(event));
    }
}

/// One event as mongod's structured log line.
fn line(event: &Event<'_>) -> String {
    static CLOCK: OnceLock<SystemClock> = OnceLock::new();
    let now = CLOCK.get_or_init(SystemClock::new).now_datetime();
    let mut fields = Fields::default();
    event.record(&mut fields);
    let meta = event.metadata();
    let mut line = doc! {
        "t": {"$date": now.try_to_rfc3339_string().unwrap_or_default()},
        "s": severity(*meta.level()),
        "c": meta.target(),
        "ctx": "mayfly",
        "msg": fields.message,
    };
    if !fields.attr.is_empty() {
        line.insert("attr", fields.attr);
    }
    Bson::Document(line).into_relaxed_extjson().to_string()
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

#[derive(Default)]
struct Fields {
    message: String,
    attr: Document,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.attr.insert(field.name(), text);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.attr.insert(field.name(), value);
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.attr.insert(field.name(), value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.attr
            .insert(field.name(), i64::try_from(value).unwrap_or(i64::MAX));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.attr.insert(field.name(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_lines_and_counts_them_all() {
        let log = RecentLog::default();
        for i in 0..CAPACITY + 5 {
            log.push(format!("line {i}"));
        }
        let (total, lines) = log.snapshot();
        assert_eq!(total, (CAPACITY + 5) as u64);
        assert_eq!(lines.len(), CAPACITY);
        assert_eq!(lines.first().map(String::as_str), Some("line 5"));
        assert_eq!(
            lines.last().cloned(),
            Some(format!("line {}", CAPACITY + 4))
        );
    }

    #[test]
    fn an_event_becomes_a_mongod_shaped_line() {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(RecentLayer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(port = 27017_u64, remote = "127.0.0.1:5", "recent log probe");
        });
        let (_, lines) = global().snapshot();
        let line = lines
            .iter()
            .find(|l| l.contains("recent log probe"))
            .expect("the event was kept");
        for part in [
            r#""s":"W""#,
            r#""msg":"recent log probe""#,
            r#""attr":{"port":27017,"remote":"127.0.0.1:5"}"#,
            r#""t":{"$date":""#,
        ] {
            assert!(line.contains(part), "{part} not in {line}");
        }
    }
}
