//! One read explained: the verbosities, the stage the explained command puts above its read
//! plan, and `explainVersion`, `queryPlanner` and `executionStats` of a read run (or only
//! planned) through the executor. Shared by `explain` and by the commands that explain
//! themselves (`aggregate` with `explain: true`) or are explained (the writes).
//!
//! Does not own: the stage trees (`engine::exec::explain`) or the explain command's envelope
//! (`explain`).

use crate::clock::Stopwatch;
use crate::command::Shared;
use crate::engine::exec::stages::Counters;
use crate::engine::exec::summary::totals;
use crate::engine::exec::ReadRequest;
use crate::engine::explain::describe;
use crate::engine::Interrupt;
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};
use std::sync::Arc;

/// How much explain tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    QueryPlanner,
    ExecutionStats,
    AllPlansExecution,
}

impl Verbosity {
    /// The `verbosity` argument; the explain command's default is `allPlansExecution`.
    pub fn parse(value: Option<&Bson>) -> Result<Verbosity> {
        match value {
            None => Ok(Verbosity::AllPlansExecution),
            Some(Bson::String(s)) => match s.as_str() {
                "queryPlanner" => Ok(Verbosity::QueryPlanner),
                "executionStats" => Ok(Verbosity::ExecutionStats),
                "allPlansExecution" => Ok(Verbosity::AllPlansExecution),
                _ => Err(Error::new(
                    ErrorCode::BadValue,
                    "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}",
                )),
            },
            Some(_) => Err(Error::failed_to_parse(
                "explain verbosity must be a string",
            )),
        }
    }
}

/// What sits above the read plan in the stage tree of the explained command.
#[derive(Debug, Clone, PartialEq)]
pub enum Root {
    /// The documents are the result (find, aggregate's leading stages, distinct).
    Documents,
    /// A find's projection (`transformBy`) shapes the documents.
    Projected(Document),
    Count,
    Update,
    Delete,
}

/// `explainVersion`, `queryPlanner` and, with the verbosity for it, `executionStats` of one
/// read of `db.coll` through the executor.
pub fn explain_read(
    shared: &Shared,
    (db, coll): (&str, &str),
    read: &ReadRequest,
    verbosity: Verbosity,
    root: Root,
    interrupt: Arc<Interrupt>,
) -> Result<Document> {
    let view = shared.engine.read()?;
    let meta = view.collection(db, coll);
    let read = &read.clone().under(&shared.config.profile);
    let timer = Stopwatch::start();
    // As mongod's, explain races the candidates afresh rather than using the plan cache.
    let execution = crate::engine::exec::execute(
        view.snapshot.clone(),
        meta.as_deref(),
        read,
        view.now_cell(),
        interrupt,
        None,
        view.spill(),
    )?;
    let filter = &read.filter_doc;
    let choice = execution.choice.clone();
    let rejected: Vec<Bson> = choice
        .rejected
        .iter()
        .map(|(node, _)| Bson::Document(wrap(&root, describe(node, None, filter), None)))
        .collect();
    let mut reply = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": format!("{db}.{coll}"),
            "indexFilterSet": false,
            "parsedQuery": filter.clone(),
            "maxIndexedOrSolutionsReached": false,
            "maxIndexedAndSolutionsReached": false,
            "maxScansToExplodeReached": false,
            "winningPlan": wrap(&root, describe(&choice.winner, None, filter), None),
            "rejectedPlans": rejected,
        },
    };
    if verbosity == Verbosity::QueryPlanner {
        return Ok(reply);
    }
    let mut returned = 0u64;
    for doc in execution.docs {
        doc?;
        returned += 1;
    }
    let millis = i64::try_from(timer.elapsed().as_millis()).unwrap_or(i64::MAX);
    let total = totals(&choice.winner, &execution.stats);
    let shown_returned = match root {
        Root::Documents | Root::Projected(_) => returned,
        _ => 0,
    };
    let stages = describe(&choice.winner, Some(&execution.stats), filter);
    let mut stats = doc! {
        "executionSuccess": true,
        "nReturned": count(shown_returned),
        "executionTimeMillis": millis,
        "totalKeysExamined": count(total.keys_examined),
        "totalDocsExamined": count(total.docs_examined),
        "executionStages": wrap(&root, stages, Some(returned)),
    };
    if verbosity == Verbosity::AllPlansExecution {
        let mut all = Vec::new();
        let trials = choice
            .winner_trial
            .iter()
            .map(|s| (&choice.winner, s))
            .chain(choice.rejected.iter().map(|(n, s)| (n, s)));
        for (node, trial) in trials {
            let t = totals(node, trial);
            let stages = describe(node, Some(trial), filter);
            all.push(Bson::Document(doc! {
                "nReturned": count(Counters::get(&trial.counters.advanced)),
                "executionTimeMillisEstimate": 0i64,
                "totalKeysExamined": count(t.keys_examined),
                "totalDocsExamined": count(t.docs_examined),
                "executionStages": wrap(&root, stages, None),
            }));
        }
        stats.insert("allPlansExecution", all);
    }
    reply.insert("executionStats", stats);
    Ok(reply)
}

/// Puts the command's own stage (PROJECTION, COUNT, UPDATE, DELETE) above the read plan.
fn wrap(root: &Root, plan: Document, selected: Option<u64>) -> Document {
    let (stage, counter) = match root {
        Root::Documents => return plan,
        Root::Projected(spec) => {
            // mongod's PROJECTION_SIMPLE handles top-level inclusions and exclusions only.
            let simple = spec.iter().all(|(k, v)| {
                !k.contains('.')
                    && matches!(
                        v,
                        Bson::Int32(0 | 1)
                            | Bson::Int64(0 | 1)
                            | Bson::Boolean(_)
                            | Bson::Double(_)
                    )
            });
            let mut out = doc! {
                "stage": if simple { "PROJECTION_SIMPLE" } else { "PROJECTION_DEFAULT" },
                "transformBy": spec.clone(),
            };
            if let Some(n) = selected {
                out.insert("nReturned", count(n));
            }
            out.insert("inputStage", plan);
            return out;
        }
        Root::Count => ("COUNT", "nCounted"),
        Root::Update => ("UPDATE", "nMatched"),
        Root::Delete => ("DELETE", "nWouldDelete"),
    };
    let mut out = doc! {"stage": stage};
    if let Some(n) = selected {
        out.insert("nReturned", 0i64);
        out.insert(counter, count(n));
    }
    out.insert("inputStage", plan);
    out
}

pub(super) fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
