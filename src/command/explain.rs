//! `explain`: how the executor would run (`queryPlanner`) or ran (`executionStats`,
//! `allPlansExecution`) a find, count, distinct, aggregate, update, delete or findAndModify, in
//! mongod 7.0's reply shape. Explaining a write selects its documents from a snapshot and changes
//! nothing, as mongod's explain does.
//!
//! Owns: the explain envelope and verbosities. Does not own: the stage trees (`engine::exec::
//! explain`) or parsing each command's arguments (their own modules).

use super::args::check_fields;
use super::find::FindArgs;
use super::introspection::MONGODB_VERSION;
use super::read::{CountArgs, DistinctArgs};
use super::{aggregate, write, Request, Shared};
use crate::clock::Stopwatch;
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

pub fn explain(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "explain", &["verbosity"])?;
    let inner = match cmd.get("explain") {
        Some(Bson::Document(d)) => d,
        _ => {
            return Err(Error::failed_to_parse(
                "explain command requires a nested object",
            ))
        }
    };
    let verbosity = Verbosity::parse(cmd.get("verbosity"))?;
    let name = inner.keys().next().map(String::as_str).unwrap_or_default();
    let db = req.db;
    let interrupt = Arc::clone(&req.interrupt);
    let mut reply = match name {
        "find" => {
            let args = FindArgs::parse(db, inner, shared.clock.now_datetime())?;
            let root = match inner.get("projection") {
                Some(Bson::Document(p)) if !p.is_empty() && args.projection.is_some() => {
                    Root::Projected(p.clone())
                }
                _ => Root::Documents,
            };
            explain_read(
                shared,
                (db, &args.collection),
                &args.read,
                verbosity,
                root,
                interrupt,
            )?
        }
        "count" if fast_count(inner) => {
            let args = CountArgs::parse(db, inner, shared.clock.now_datetime())?;
            fast_count_explain(shared, (db, &args.collection), verbosity)?
        }
        "count" => {
            let args = CountArgs::parse(db, inner, shared.clock.now_datetime())?;
            explain_read(
                shared,
                (db, &args.collection),
                &args.read,
                verbosity,
                Root::Count,
                interrupt,
            )?
        }
        "distinct" => {
            let args = DistinctArgs::parse(db, inner, shared.clock.now_datetime())?;
            explain_read(
                shared,
                (db, &args.collection),
                &args.read,
                verbosity,
                Root::Documents,
                interrupt,
            )?
        }
        "aggregate" => aggregate::explain(shared, db, inner, verbosity, interrupt)?,
        "update" | "delete" | "findAndModify" | "findandmodify" => {
            let (coll, read, root) =
                write::explained_selection(name, db, inner, shared.clock.now_datetime())?;
            explain_read(shared, (db, &coll), &read, verbosity, root, interrupt)?
        }
        _ => {
            return Err(Error::new(
                ErrorCode::CommandNotFound,
                format!("Explain failed due to unknown command: {name}"),
            ))
        }
    };
    let mut command = inner.clone();
    command.insert("$db", db);
    reply.insert("command", command);
    reply.insert("serverInfo", server_info(shared));
    reply.insert(
        "serverParameters",
        doc! {
            "internalQueryFacetBufferSizeBytes": 104_857_600,
            "internalQueryFacetMaxOutputDocSizeBytes": 104_857_600,
            "internalLookupStageIntermediateDocumentMaxSizeBytes": 104_857_600,
            "internalDocumentSourceGroupMaxMemoryBytes": 104_857_600,
            "internalQueryMaxBlockingSortMemoryUsageBytes": 104_857_600,
            "internalQueryProhibitBlockingMergeOnMongoS": 0,
            "internalQueryMaxAddToSetBytes": 104_857_600,
            "internalDocumentSourceSetWindowFieldsMaxMemoryBytes": 104_857_600,
        },
    );
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// Whether `count` answers from the collection's stored counter: an empty query and no hint.
fn fast_count(cmd: &Document) -> bool {
    let empty_query = match cmd.get("query") {
        None | Some(Bson::Null) => true,
        Some(Bson::Document(q)) => q.is_empty(),
        Some(_) => false,
    };
    empty_query && cmd.get("hint").is_none()
}

/// mongod's plan for a count from the record store: one stage, no document read.
fn fast_count_explain(
    shared: &Shared,
    (db, coll): (&str, &str),
    verbosity: Verbosity,
) -> Result<Document> {
    let stage = doc! {"stage": "RECORD_STORE_FAST_COUNT"};
    let mut reply = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": format!("{db}.{coll}"),
            "indexFilterSet": false,
            "parsedQuery": {},
            "winningPlan": stage.clone(),
            "rejectedPlans": [],
        },
    };
    if verbosity > Verbosity::QueryPlanner {
        let view = shared.engine.read()?;
        let counted = match view.collection(db, coll) {
            Some(meta) => view.visible_count(&meta)?,
            None => 0,
        };
        let mut executed = stage;
        executed.insert("nReturned", 0i64);
        executed.insert("nCounted", count(counted));
        reply.insert(
            "executionStats",
            doc! {
                "executionSuccess": true,
                "nReturned": 0i64,
                "executionTimeMillis": 0i64,
                "totalKeysExamined": 0i64,
                "totalDocsExamined": 0i64,
                "executionStages": executed,
            },
        );
    }
    Ok(reply)
}

fn server_info(shared: &Shared) -> Document {
    doc! {
        "host": crate::host::hostname(),
        "port": i32::from(shared.config.port),
        "version": MONGODB_VERSION,
        "gitVersion": concat!("mayfly-", env!("CARGO_PKG_VERSION")),
    }
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

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
