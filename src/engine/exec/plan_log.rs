//! What the executor ran for one operation: the plans it chose and the counters they fill, read
//! when the operation ends for the slow-operation log (`planSummary`, `keysExamined`,
//! `docsExamined`, as mongod logs them). The executor records every plan it starts into the
//! operation's log; a `$lookup` that plans once per input document fills the first
//! [`MAX_PLANS`] and then only counts, so the log stays small.
//! Does not own: the plans themselves (`planner`), their explain output (`explain`).

use super::explain::{self, Totals};
use super::plan::Node;
use super::stages::StageStats;
use bson::Bson;
use std::sync::{Mutex, MutexGuard};

/// Plans kept per operation.
const MAX_PLANS: usize = 8;

#[derive(Debug, Default)]
pub struct PlanLog {
    plans: Mutex<Logged>,
}

#[derive(Debug, Default)]
struct Logged {
    kept: Vec<(Node, StageStats)>,
    /// Plans started beyond those kept.
    more: u64,
}

impl PlanLog {
    /// What was recorded: for the slow-operation log and the profiler only, never an answer,
    /// and changed by one push or one addition at a time, so a poisoned lock is recovered (and
    /// counted).
    fn logged(&self) -> MutexGuard<'_, Logged> {
        crate::sync::lock_recovering(&self.plans, "plan log")
    }

    /// Records a plan the operation started; its counters keep filling as it runs.
    pub fn record(&self, node: &Node, stats: &StageStats) {
        let mut logged = self.logged();
        if logged.kept.len() < MAX_PLANS {
            logged.kept.push((node.clone(), stats.clone()));
        } else {
            logged.more = logged.more.saturating_add(1);
        }
    }

    /// mongod's `planSummary` of the first plan (`COLLSCAN`, `IXSCAN { a: 1 }`, `IDHACK`, …),
    /// or `None` when the operation planned nothing.
    pub fn summary(&self) -> Option<String> {
        let logged = self.logged();
        logged.kept.first().map(|(node, _)| summary(node))
    }

    /// Keys and documents examined by the kept plans so far.
    pub fn totals(&self) -> Totals {
        self.logged()
            .kept
            .iter()
            .map(|(node, stats)| explain::totals(node, stats))
            .fold(Totals::default(), |a, b| Totals {
                keys_examined: a.keys_examined.saturating_add(b.keys_examined),
                docs_examined: a.docs_examined.saturating_add(b.docs_examined),
            })
    }
}

/// The leaves of `node` as mongod names them in `planSummary`, comma-separated.
pub fn summary(node: &Node) -> String {
    match node.leaf() {
        Node::Eof => "EOF".to_owned(),
        Node::IdHack { .. } => "IDHACK".to_owned(),
        Node::CollScan { .. } => "COLLSCAN".to_owned(),
        Node::IxScan(scan) => format!("IXSCAN {}", key_pattern(&scan.index.key)),
        Node::CountScan(scan) => format!("COUNT_SCAN {}", key_pattern(&scan.index.key)),
        Node::Or { inputs } => inputs.iter().map(summary).collect::<Vec<_>>().join(", "),
        // `leaf` never stops at these.
        Node::Sort { .. } | Node::Skip { .. } | Node::Limit { .. } => String::new(),
    }
}

/// A key pattern as mongod prints one: `{ a: 1, b.c: -1 }`.
fn key_pattern(key: &bson::Document) -> String {
    let fields: Vec<String> = key
        .iter()
        .map(|(field, direction)| {
            let direction = match direction {
                Bson::String(s) => format!("\"{s}\""),
                Bson::Double(d) if d.fract() == 0.0 => format!("{}", *d as i64),
                other => other.to_string(),
            };
            format!("{field}: {direction}")
        })
        .collect();
    format!("{{ {} }}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn key_patterns_print_as_mongod_prints_them() {
        assert_eq!(key_pattern(&doc! {"a": 1}), "{ a: 1 }");
        assert_eq!(key_pattern(&doc! {"a": 1, "b.c": -1}), "{ a: 1, b.c: -1 }");
        assert_eq!(key_pattern(&doc! {"t": "text"}), "{ t: \"text\" }");
        assert_eq!(key_pattern(&doc! {"a": 1.0}), "{ a: 1 }");
    }

    #[test]
    fn leaves_name_the_summary() {
        assert_eq!(summary(&Node::CollScan { reverse: false }), "COLLSCAN");
        assert_eq!(summary(&Node::Eof), "EOF");
        let limited = Node::Limit {
            input: Box::new(Node::IdHack { ids: vec![] }),
            n: 1,
        };
        assert_eq!(summary(&limited), "IDHACK");
        let log = PlanLog::default();
        assert_eq!(log.summary(), None);
        log.record(&limited, &StageStats::default());
        assert_eq!(log.summary().as_deref(), Some("IDHACK"));
    }
}
