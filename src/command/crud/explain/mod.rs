//! `explain`: how the executor would run (`queryPlanner`) or ran (`executionStats`,
//! `allPlansExecution`) a find, count, distinct, aggregate, update, delete or findAndModify, in
//! mongod 7.0's reply shape. Explaining a write selects its documents from a snapshot and changes
//! nothing, as mongod's explain does.
//!
//! Owns: the explain envelope (which command is explained, `serverInfo`, `serverParameters`)
//! and the fast count's plan. Does not own: one read's plan and the verbosities ([`plan`]), the
//! stage trees (`engine::exec::explain`) or parsing each command's arguments (their own
//! modules).

pub(super) mod plan;

use self::plan::{count, explain_read, Root, Verbosity};
use super::find::{FindArgs, FindSpec};
use super::read::{CountArgs, CountSpec, DistinctArgs, DistinctSpec};
use super::{aggregate, write};
use crate::command::admin::introspection::MONGODB_VERSION;
use crate::command::args::check_fields;
use crate::command::{Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};
use std::sync::Arc;

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
            let args = FindArgs::parse(db, &FindSpec::read(inner)?, shared.clock.now_datetime())?;
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
            let args = CountArgs::parse(db, &CountSpec::read(inner)?, shared.clock.now_datetime())?;
            fast_count_explain(shared, (db, &args.collection), verbosity)?
        }
        "count" => {
            let args = CountArgs::parse(db, &CountSpec::read(inner)?, shared.clock.now_datetime())?;
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
            let spec = DistinctSpec::read(inner)?;
            let args = DistinctArgs::parse(db, &spec, shared.clock.now_datetime())?;
            explain_read(
                shared,
                (db, &args.collection),
                &args.read,
                verbosity,
                Root::Documents,
                interrupt,
            )?
        }
        "aggregate" => {
            let spec = aggregate::AggregateSpec::read(inner)?;
            aggregate::explain(shared, db, &spec, verbosity, interrupt)?
        }
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
