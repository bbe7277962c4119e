//! `explain`: how the executor would run (`queryPlanner`) or ran (`executionStats`,
//! `allPlansExecution`) a find, count, distinct, aggregate, update, delete or findAndModify, in
//! mongod 7.0's reply shape. Explaining a write selects its documents from a snapshot and changes
//! nothing, as mongod's explain does.
//!
//! Owns: the explain envelope (which command is explained, `serverInfo`, `serverParameters`)
//! and the fast count's plan. Does not own: explain's own fields and the inner command's parse
//! ([`spec`], read once by the envelope), one read's plan and the verbosities ([`plan`]), the
//! stage trees (`engine::exec::explain`) or each command's arguments (their own modules).

pub(super) mod plan;
pub(in crate::command) mod spec;

use self::plan::{count, explain_read, Root, Verbosity};
use super::find::FindArgs;
use super::read::{CountArgs, DistinctArgs};
use super::{aggregate, write};
use crate::command::admin::introspection::MONGODB_VERSION;
use crate::command::{ParsedCommand, Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Document};
use std::sync::Arc;

pub fn explain(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let spec = req.parsed.explain()?;
    let verbosity = spec.verbosity;
    let db = req.db;
    let interrupt = Arc::clone(&req.interrupt);
    let now = shared.clock.now_datetime();
    let mut reply = match &spec.inner {
        Some(ParsedCommand::Find(find)) => {
            let args = FindArgs::parse(db, find, now)?;
            let root = match find.projection() {
                Some(p) if !p.is_empty() && args.projection.is_some() => Root::Projected(p.clone()),
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
        Some(ParsedCommand::Count(count)) if count.is_fast() => {
            let args = CountArgs::parse(db, count, now)?;
            fast_count_explain(shared, (db, &args.collection), verbosity)?
        }
        Some(ParsedCommand::Count(count)) => {
            let args = CountArgs::parse(db, count, now)?;
            explain_read(
                shared,
                (db, &args.collection),
                &args.read,
                verbosity,
                Root::Count,
                interrupt,
            )?
        }
        Some(ParsedCommand::Distinct(distinct)) => {
            let args = DistinctArgs::parse(db, distinct, now)?;
            explain_read(
                shared,
                (db, &args.collection),
                &args.read,
                verbosity,
                Root::Documents,
                interrupt,
            )?
        }
        Some(ParsedCommand::Aggregate(aggregate)) => {
            aggregate::explain(shared, db, aggregate, verbosity, interrupt)?
        }
        inner => match inner
            .as_ref()
            .and_then(|w| write::explained_selection(w, db, now))
        {
            Some(selection) => {
                let (coll, read, root) = selection?;
                explain_read(shared, (db, &coll), &read, verbosity, root, interrupt)?
            }
            None => {
                return Err(Error::new(
                    ErrorCode::CommandNotFound,
                    format!("Explain failed due to unknown command: {}", spec.name()),
                ))
            }
        },
    };
    let mut command = spec.command.clone();
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
        "gitVersion": crate::version::GIT_COMMIT,
    }
}
