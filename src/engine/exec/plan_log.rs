//! What the executor ran for one operation: the plans it chose and the counters they fill, read
//! when the operation ends for the slow-operation log (`planSummary`, `keysExamined`,
//! `docsExamined`, as mongod logs them). The executor records every plan it starts into the
//! operation's log, as its summary and a reading of its counters (`summary`); a `$lookup` that
//! plans once per input document fills the first [`MAX_PLANS`] and then only counts, so the log
//! stays small.
//!
//! The log holds no plan types: the operation's [`Interrupt`](crate::engine::interrupt::Interrupt)
//! carries it to whoever reads it, and the executor checks that interrupt.
//! Does not own: the plans themselves (`planner`), what they amount to (`summary`), their explain
//! output (`engine::explain`).

use std::sync::{Mutex, MutexGuard};

/// Plans kept per operation.
const MAX_PLANS: usize = 8;

/// Keys and documents a run examined, for `executionStats` and the slow-operation log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub keys_examined: u64,
    pub docs_examined: u64,
}

impl Totals {
    fn plus(self, other: Totals) -> Totals {
        Totals {
            keys_examined: self.keys_examined.saturating_add(other.keys_examined),
            docs_examined: self.docs_examined.saturating_add(other.docs_examined),
        }
    }
}

/// Reads a running plan's counters: they keep filling as the operation pulls documents.
pub type ReadTotals = Box<dyn Fn() -> Totals + Send + Sync>;

/// One plan the operation started.
struct Logged {
    /// mongod's `planSummary` of the plan.
    summary: String,
    totals: ReadTotals,
}

#[derive(Default)]
pub struct PlanLog {
    plans: Mutex<Kept>,
}

impl std::fmt::Debug for PlanLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanLog").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Kept {
    kept: Vec<Logged>,
    /// Plans started beyond those kept.
    more: u64,
}

impl PlanLog {
    /// What was recorded: for the slow-operation log and the profiler only, never an answer,
    /// and changed by one push or one addition at a time, so a poisoned lock is recovered (and
    /// counted).
    fn logged(&self) -> MutexGuard<'_, Kept> {
        crate::sync::lock_recovering(&self.plans, "plan log")
    }

    /// Records a plan the operation started: its `summary`, and `totals`, which reads its
    /// counters as they are when asked.
    pub fn record(&self, summary: String, totals: ReadTotals) {
        let mut logged = self.logged();
        if logged.kept.len() < MAX_PLANS {
            logged.kept.push(Logged { summary, totals });
        } else {
            logged.more = logged.more.saturating_add(1);
        }
    }

    /// mongod's `planSummary` of the first plan (`COLLSCAN`, `IXSCAN { a: 1 }`, `IDHACK`, …),
    /// or `None` when the operation planned nothing.
    pub fn summary(&self) -> Option<String> {
        self.logged().kept.first().map(|plan| plan.summary.clone())
    }

    /// Keys and documents examined by the kept plans so far.
    pub fn totals(&self) -> Totals {
        self.logged()
            .kept
            .iter()
            .map(|plan| (plan.totals)())
            .fold(Totals::default(), Totals::plus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_plan_names_the_summary_and_all_kept_plans_add_up() {
        let log = PlanLog::default();
        assert_eq!(log.summary(), None);
        assert_eq!(log.totals(), Totals::default());
        let read = |keys, docs| -> ReadTotals {
            Box::new(move || Totals {
                keys_examined: keys,
                docs_examined: docs,
            })
        };
        log.record("IDHACK".to_owned(), read(1, 1));
        log.record("COLLSCAN".to_owned(), read(0, 10));
        assert_eq!(log.summary().as_deref(), Some("IDHACK"));
        assert_eq!(
            log.totals(),
            Totals {
                keys_examined: 1,
                docs_examined: 11
            }
        );
    }

    #[test]
    fn plans_beyond_the_kept_ones_are_only_counted() {
        let log = PlanLog::default();
        for _ in 0..MAX_PLANS + 3 {
            log.record(
                "COLLSCAN".to_owned(),
                Box::new(|| Totals {
                    keys_examined: 0,
                    docs_examined: 1,
                }),
            );
        }
        assert_eq!(log.totals().docs_examined, MAX_PLANS as u64);
        assert_eq!(log.logged().more, 3);
    }
}
