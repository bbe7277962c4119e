//! Per-command counts and latency histograms, for the metrics endpoint. The session records
//! each command it ran; names outside the command table count as `unknown`, so a client
//! sending made-up command names cannot grow the label set without bound.
//! Does not own: `serverStatus`'s opcounters (`status::Counters`), or exposing the figures
//! (`metrics`).

use super::super::table::CommandName;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use std::time::Duration;

/// The label of commands mayfly does not know.
const UNKNOWN: &str = "unknown";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CommandLabel {
    pub command: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub command: &'static str,
    /// `ok`, or `error` for a reply with `ok: 0`.
    pub outcome: &'static str,
}

type HistogramFamily = Family<CommandLabel, Histogram, fn() -> Histogram>;

#[derive(Debug, Clone)]
pub struct CommandLatencies {
    /// Commands run, by name and outcome.
    pub counts: Family<OutcomeLabels, Counter>,
    /// How long they took, by name. Awaitable `hello`s wait by design and are left out, as
    /// mongod leaves them out of its latency statistics.
    pub durations: HistogramFamily,
}

impl Default for CommandLatencies {
    fn default() -> Self {
        CommandLatencies {
            counts: Family::default(),
            durations: Family::new_with_constructor(crate::latency::histogram),
        }
    }
}

impl CommandLatencies {
    /// Records one command: `elapsed` is `None` for a command whose time says nothing about
    /// the server (an awaitable `hello`).
    pub fn record(&self, name: &str, failed: bool, elapsed: Option<Duration>) {
        let command = CommandName::from_name(name).map_or(UNKNOWN, CommandName::name);
        let outcome = if failed { "error" } else { "ok" };
        self.counts
            .get_or_create(&OutcomeLabels { command, outcome })
            .inc();
        if let Some(elapsed) = elapsed {
            self.durations
                .get_or_create(&CommandLabel { command })
                .observe(elapsed.as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_share_one_label() {
        let latencies = CommandLatencies::default();
        latencies.record("find", false, Some(Duration::from_millis(3)));
        latencies.record("noSuchCommand1", true, None);
        latencies.record("noSuchCommand2", true, None);
        let ok_find = OutcomeLabels {
            command: "find",
            outcome: "ok",
        };
        let unknown = OutcomeLabels {
            command: UNKNOWN,
            outcome: "error",
        };
        assert_eq!(latencies.counts.get_or_create(&ok_find).get(), 1);
        assert_eq!(latencies.counts.get_or_create(&unknown).get(), 2);
    }
}
