//! `aggregate`: parse the command and its pipeline, read the collection through the engine's
//! access plan (the pipeline's leading stages pick it) or produce a source stage's documents
//! (`$collStats`, `$currentOp`), run the pipeline, and open a cursor over the result.
//!
//! Owns: the command's arguments, the pipeline's source and the cursor reply. Does not own:
//! stage semantics (`pipeline`) or expressions (`query::expr`). Every stage or expression mayfly
//! does not run is refused with an error naming it; none is skipped. A missing collection is an
//! empty one (mongosh aggregates `admin.atlascli` on connect), except for `$collStats`, which
//! fails with 26 as mongod's does.
//!
//! The operation's collation is the command's `collation`, else the aggregated collection's
//! default; it is resolved before the pipeline is compiled, so every stage (and every
//! sub-pipeline, whatever collection it reads) compares strings under it.

mod sources;
mod spec;

use super::cursor::first_batch_reply;
use super::explain::plan::{explain_read, Root, Verbosity};
use super::read::{collation_of, validate_read_namespace};
use crate::command::{Reply, Request, Shared};
use crate::engine::cursor::Item;
use crate::engine::cursor::{Cursor, Held, DEFAULT_FIRST_BATCH};
use crate::engine::exec::Hint;
use crate::engine::Interrupt;
use crate::engine::ReadView;
use crate::error::{Error, ErrorCode, Result};
use crate::pipeline::{Env, Pipeline, Row, Rows, Stage, StageLimits};
use crate::query::collation::Collation;
use crate::query::expr::value::Comparator;
use crate::query::expr::Variables;
use bson::{doc, Bson, Document};
pub use spec::AggregateSpec;
use std::sync::Arc;

/// A parsed aggregate command.
struct AggregateArgs<'s> {
    collection: String,
    /// The pipeline as sent, for explain.
    specs: &'s [Document],
    pipeline: Pipeline,
    /// The `let` variables and `$$NOW` the pipeline was compiled with.
    vars: Variables,
    explain: bool,
    batch_size: Option<usize>,
    hint: Option<Hint>,
    allow_disk_use: bool,
}

/// The default collation of the named collection of the command's database (`None`: simple
/// or no such collection).
type DefaultCollation<'a> = dyn Fn(&str) -> Result<Option<Collation>> + 'a;

impl<'s> AggregateArgs<'s> {
    /// Compiles `spec`; `now` is `$$NOW`; `default_collation` gives a collection's default,
    /// which applies when the command names no collation.
    fn parse(
        db: &str,
        spec: &'s AggregateSpec,
        now: bson::DateTime,
        default_collation: &DefaultCollation<'_>,
    ) -> Result<AggregateArgs<'s>> {
        let coll = spec.collection.as_deref();
        let specs = spec.pipeline.as_slice();
        let explain = spec.explain;
        let batch_size = spec
            .batch_size
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let allow_disk_use = spec.allow_disk_use;
        let collation = match (collation_of(spec.collation.as_ref())?, coll) {
            (Some(given), _) => given,
            (None, Some(coll)) => default_collation(coll)?,
            (None, None) => None,
        };
        let vars = Variables::new(now)
            .with_comparator(Comparator::with_collation(collation))
            .with_let(spec.let_vars.as_ref())?;
        let pipeline = Pipeline::parse(specs, &vars)?;
        // Source stages that read no collection run on the database: `{aggregate: 1}`.
        let on_database = match pipeline.first() {
            Some(Stage::CurrentOp(_)) => {
                if db != "admin" || coll.is_some() {
                    return Err(Error::new(
                        ErrorCode::InvalidNamespace,
                        "$currentOp must be run against the 'admin' database with {aggregate: 1}",
                    ));
                }
                true
            }
            Some(Stage::ListLocalSessions(_)) => {
                if coll.is_some() {
                    return Err(Error::new(
                        ErrorCode::InvalidNamespace,
                        "$listLocalSessions must be run against the database with {aggregate: 1}, \
                         not a collection",
                    ));
                }
                true
            }
            Some(Stage::Documents(_)) => coll.is_none(),
            _ => false,
        };
        if on_database {
            return Ok(AggregateArgs {
                collection: "$cmd.aggregate".into(),
                specs,
                pipeline,
                vars,
                explain,
                batch_size,
                hint: None,
                allow_disk_use,
            });
        }
        let Some(coll) = coll else {
            let what = specs
                .first()
                .and_then(|s| s.keys().next())
                .map_or("an empty pipeline".to_owned(), |name| format!("'{name}'"));
            return Err(Error::new(
                ErrorCode::InvalidNamespace,
                format!("{{aggregate: 1}} is not valid for {what}; a collection is required."),
            ));
        };
        validate_read_namespace(db, coll)?;
        Ok(AggregateArgs {
            collection: coll.to_owned(),
            specs,
            pipeline,
            vars,
            explain,
            batch_size,
            hint: Hint::parse(spec.hint.as_ref())?,
            allow_disk_use,
        })
    }
}

/// Explains the pipeline: the executor's plan for its leading stages, under `$cursor`, then the
/// stages that run on its output (mongod's shape when a pipeline is not pushed down whole).
pub fn explain(
    shared: &Shared,
    db: &str,
    spec: &AggregateSpec,
    verbosity: Verbosity,
    interrupt: Arc<Interrupt>,
) -> Result<Document> {
    let view = shared.engine.read()?;
    let mut args = AggregateArgs::parse(db, spec, shared.clock.now_datetime(), &|coll| {
        default_collation(&view, db, coll)
    })?;
    if matches!(
        args.pipeline.first(),
        Some(
            Stage::CollStats(_)
                | Stage::CurrentOp(_)
                | Stage::IndexStats
                | Stage::ListLocalSessions(_)
        )
    ) {
        return Err(Error::new(
            ErrorCode::NotImplemented,
            "explain of a $collStats, $currentOp, $indexStats or $listLocalSessions pipeline is \
             not supported by this server",
        ));
    }
    let (mut read, taken) = args.pipeline.take_leading_read(args.hint)?;
    read.allow_disk_use = args.allow_disk_use;
    let coll = args.collection.as_str();
    let mut cursor = explain_read(
        shared,
        (db, coll),
        &read,
        verbosity,
        Root::Documents,
        interrupt,
    )?;
    let rest: Vec<&Document> = args.specs.iter().skip(taken).collect();
    if rest.is_empty() {
        return Ok(cursor);
    }
    let version = cursor.remove("explainVersion").unwrap_or(Bson::from("1"));
    let mut out = vec![Bson::Document(doc! {"$cursor": cursor})];
    out.extend(rest.into_iter().map(|s| Bson::Document(s.clone())));
    Ok(doc! {"explainVersion": version, "stages": out})
}

pub fn aggregate(shared: &Shared, req: &Request<'_>, spec: &AggregateSpec) -> Result<Reply> {
    let view = crate::command::transactions::read_view(shared, req)?;
    let args = AggregateArgs::parse(req.db, spec, shared.clock.now_datetime(), &|coll| {
        default_collation(&view, req.db, coll)
    })?;
    if args.explain {
        let mut reply = explain(
            shared,
            req.db,
            spec,
            Verbosity::QueryPlanner,
            Arc::clone(&req.interrupt),
        )?;
        reply.insert("ok", 1.0);
        return Ok(reply.into());
    }
    let coll = args.collection.as_str();
    let ns = format!("{}.{coll}", req.db);
    let limits = StageLimits {
        allow_disk_use: args.allow_disk_use,
        held: Held::default(),
    };
    let mut pipeline = args.pipeline;
    let now = view.now_cell();
    let env = Env {
        view: view.clone(),
        db: req.db.to_owned(),
        now: now.clone(),
        interrupt: Arc::clone(&req.interrupt),
        limits: limits.clone(),
        vars: args.vars,
        writes: shared.engine.write_handle(),
        durable: crate::command::args::durable(req.body),
    };
    let meta = view.collection(req.db, coll);
    let rows: Rows = match (pipeline.first(), &meta) {
        (Some(Stage::CollStats(spec)), _) => {
            let row = sources::coll_stats(shared, &view, meta.as_deref(), &ns, spec)?;
            pipeline.take_first();
            Box::new(std::iter::once(Ok(Row::computed(row))))
        }
        (Some(Stage::IndexStats), _) => {
            let host = format!("{}:{}", crate::host::hostname(), shared.config.port);
            let docs = crate::pipeline::index_stats::documents(&view, meta.as_deref(), &host);
            pipeline.take_first();
            Box::new(docs.into_iter().map(|doc| Ok(Row::computed(doc))))
        }
        (Some(Stage::CurrentOp(spec)), _) => {
            sources::check_current_op(spec)?;
            pipeline.take_first();
            Box::new(
                crate::command::state::operations::all_entries(shared)
                    .into_iter()
                    .map(|doc| Ok(Row::computed(doc))),
            )
        }
        (Some(Stage::ListLocalSessions(spec)), _) => {
            let sessions = crate::command::session_registry::list_local(shared, req, spec)?;
            pipeline.take_first();
            Box::new(sessions.into_iter().map(|doc| Ok(Row::computed(doc))))
        }
        (_, None) if super::oplog_reads::is_oplog(shared, req.db, coll) => Box::new(
            view.oplog_after(None)
                .map(|entry| entry.map(|(_, doc)| Row::computed(doc))),
        ),
        (Some(Stage::Documents(_)), _) | (_, None) => Box::new(std::iter::empty()),
        (_, Some(_)) => {
            let (read, _) = pipeline.take_leading_read(args.hint)?;
            env.read_collection(coll, read.under(&shared.config.profile))?
        }
    };
    let rows = pipeline.run(rows, &env)?;
    let cursor = Cursor::new(ns, sized(rows), now, None)
        .with_interrupt(Arc::clone(&req.interrupt))
        .with_held(limits.held);
    first_batch_reply(
        shared,
        cursor,
        view.now,
        Some(args.batch_size.unwrap_or(DEFAULT_FIRST_BATCH)),
        false,
    )
    .map(Reply::from)
}

fn default_collation(view: &ReadView, db: &str, coll: &str) -> Result<Option<Collation>> {
    match view.collection(db, coll) {
        Some(meta) => meta.default_collation(),
        None => Ok(None),
    }
}

/// The pipeline's output for a cursor. Each row keeps when its source document expires, so the
/// cursor drops rows whose document has expired by the time a batch takes them (TTL-18).
fn sized(rows: Rows) -> super::cursor::SizedDocs {
    Box::new(rows.map(|r| r.and_then(|row| Item::new(&row.doc, row.expires_at))))
}
