//! The last lines the server logged, kept in memory for `getLog: "global"` (mongod keeps the
//! same 1024-line ring), which mongosh's `show log` reads. The binary installs [`RecentLayer`]
//! beside its log output; each event then becomes one line in mongod's structured shape
//! (`log_line`: `t`, `s`, `c`, `id`, `ctx`, `msg`, `attr`). A server embedded without the layer (tests) keeps
//! none and says so by an empty log.

use crate::log_line;
use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

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
    /// The ring: one line pushed (and one popped) at a time, so a poisoned lock is recovered.
    /// Counted, but not logged: logging from inside the log's own layer would recurse.
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| {
            crate::sync::count_unlogged("recent log");
            e.into_inner()
        })
    }

    pub fn push(&self, line: String) {
        let mut state = self.state();
        if state.lines.len() == CAPACITY {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
        state.total += 1;
    }

    /// Lines written in all, and the ones still kept, oldest first.
    pub fn snapshot(&self) -> (u64, Vec<String>) {
        let state = self.state();
        (state.total, state.lines.iter().cloned().collect())
    }
}

/// The `tracing` layer that feeds [`global`].
pub struct RecentLayer;

impl<S> tracing_subscriber::Layer<S> for RecentLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let context = log_line::context(ctx.event_scope(event));
        global().push(log_line::render(event, &context));
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
