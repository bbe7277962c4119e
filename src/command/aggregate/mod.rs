//! `aggregate`: parse the pipeline once into stages, read the collection through the engine's
//! access plan (a leading `$match` picks it) or produce `$collStats`' document, run the stages,
//! and open a cursor over the result.
//!
//! Owns: the command's arguments, the pipeline's source and the cursor reply. Does not own:
//! stage semantics (`stages`, `group`, `expr`). Every stage or expression mayfly does not run is
//! refused with an error naming it; none is skipped. A missing collection is an empty one
//! (mongosh aggregates `admin.atlascli` on connect), except for `$collStats`, which fails with 26
//! as mongod's does.

mod expr;
mod group;
mod memory;
mod reshape;
mod stages;
mod unwind;

use super::args::{
    check_fields, documents_of, optional_bool, optional_doc, optional_i64, wrong_type,
};
use super::cursor::first_batch_reply;
use super::explain::{explain_read, Root, Verbosity};
use super::read::{collation_arg, validate_read_namespace};
use super::{stats, Reply, Request, Shared};
use crate::engine::cursor::Item;
use crate::engine::cursor::{Cursor, Held, DEFAULT_FIRST_BATCH};
use crate::engine::exec::{Hint, ReadRequest};
use crate::engine::{CollectionMeta, Interrupt, ReadView};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};
use stages::{Row, Rows, Stage};
use std::sync::Arc;

/// mongod's `internalPipelineLengthLimit`.
const MAX_PIPELINE_LENGTH: usize = 1_000;

const FIELDS: &[&str] = &[
    "pipeline",
    "cursor",
    "explain",
    "allowDiskUse",
    "bypassDocumentValidation",
    "hint",
    "collation",
    "let",
    "fromMongos",
    "needsMerge",
    "isMapReduceCommand",
];

/// A parsed aggregate command.
struct AggregateArgs {
    collection: String,
    /// The pipeline as sent, for explain.
    pipeline: Vec<Document>,
    stages: Vec<Stage>,
    explain: bool,
    batch_size: Option<usize>,
    hint: Option<Hint>,
    allow_disk_use: bool,
    /// The `collation` argument (`None`: the collection's default applies).
    collation: Option<Option<crate::query::collation::Collation>>,
}

impl AggregateArgs {
    fn parse(db: &str, cmd: &Document) -> Result<AggregateArgs> {
        check_fields(cmd, "aggregate", FIELDS)?;
        let coll = match cmd.get("aggregate") {
            Some(Bson::String(name)) => Some(name.as_str()),
            Some(v)
                if crate::query::compare::values_equal(v, &Bson::Int32(1))
                    && crate::query::compare::is_number(v) =>
            {
                None
            }
            _ => return Err(Error::new(
                ErrorCode::InvalidNamespace,
                "Invalid command format: the 'aggregate' field must specify a collection name or 1",
            )),
        };
        if !cmd.contains_key("pipeline") {
            return Err(Error::new(
                ErrorCode::Location40414,
                "BSON field 'aggregate.pipeline' is missing but a required field",
            ));
        }
        let pipeline = documents_of(cmd, "aggregate", "pipeline")?;
        let explain = optional_bool(cmd, "aggregate", "explain")?.unwrap_or(false);
        let batch_size = cursor_batch_size(cmd, explain)?;
        optional_bool(cmd, "aggregate", "bypassDocumentValidation")?;
        let allow_disk_use = optional_bool(cmd, "aggregate", "allowDiskUse")?.unwrap_or(false);
        let collation = collation_arg(cmd, "aggregate")?;
        let vars = expr::let_variables(optional_doc(cmd, "aggregate", "let")?)?;
        if pipeline.len() > MAX_PIPELINE_LENGTH {
            return Err(Error::new(
                ErrorCode::Location7749501,
                format!("Pipeline length must be no longer than {MAX_PIPELINE_LENGTH} stages."),
            ));
        }
        let mut stages = Vec::new();
        for (i, spec) in pipeline.iter().enumerate() {
            stages.extend(Stage::parse(spec, i == 0, &vars)?);
        }
        if matches!(stages.first(), Some(Stage::CurrentOp)) {
            if db != "admin" || coll.is_some() {
                return Err(Error::new(
                    ErrorCode::InvalidNamespace,
                    "$currentOp must be run against the 'admin' database with {aggregate: 1}",
                ));
            }
            return Ok(AggregateArgs {
                collection: "$cmd.aggregate".into(),
                pipeline: pipeline.into_iter().cloned().collect(),
                stages,
                explain,
                batch_size,
                hint: None,
                allow_disk_use,
                collation,
            });
        }
        let Some(coll) = coll else {
            let what = pipeline
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
            pipeline: pipeline.into_iter().cloned().collect(),
            stages,
            explain,
            batch_size,
            hint: Hint::parse(cmd.get("hint"))?,
            allow_disk_use,
            collation,
        })
    }
}

/// Explains the pipeline: the executor's plan for its leading stages, under `$cursor`, then the
/// stages that run on its output (mongod's shape when a pipeline is not pushed down whole).
pub fn explain(
    shared: &Shared,
    db: &str,
    cmd: &Document,
    verbosity: Verbosity,
    interrupt: Arc<Interrupt>,
) -> Result<Document> {
    let args = AggregateArgs::parse(db, cmd)?;
    let mut stages = args.stages.into_iter().peekable();
    if matches!(
        stages.peek(),
        Some(Stage::CollStats { .. } | Stage::CurrentOp)
    ) {
        return Err(Error::new(
            ErrorCode::NotImplemented,
            "explain of a $collStats or $currentOp pipeline is not supported by this server",
        ));
    }
    let (read, taken) = leading_read(&mut stages, args.hint)?;
    let mut read = read.requested_collation(args.collation)?;
    read.allow_disk_use = args.allow_disk_use;
    let coll = args.collection.as_str();
    if let Some(meta) = shared.engine.read().collection(db, coll) {
        super::read::refuse_collated_stages(&read, &meta, args.pipeline.get(taken..))?;
    }
    let mut cursor = explain_read(
        shared,
        (db, coll),
        &read,
        verbosity,
        Root::Documents,
        interrupt,
    )?;
    let rest: Vec<&Document> = args.pipeline.iter().skip(taken).collect();
    if rest.is_empty() {
        return Ok(cursor);
    }
    let version = cursor.remove("explainVersion").unwrap_or(Bson::from("1"));
    let mut out = vec![Bson::Document(doc! {"$cursor": cursor})];
    out.extend(rest.into_iter().map(|s| Bson::Document(s.clone())));
    Ok(doc! {"explainVersion": version, "stages": out})
}

pub fn aggregate(shared: &Shared, req: &Request<'_>) -> Result<Reply> {
    let args = AggregateArgs::parse(req.db, req.body)?;
    if args.explain {
        let mut reply = explain(
            shared,
            req.db,
            req.body,
            Verbosity::QueryPlanner,
            Arc::clone(&req.interrupt),
        )?;
        reply.insert("ok", 1.0);
        return Ok(reply.into());
    }
    let coll = args.collection.as_str();
    let batch_size = args.batch_size;
    let hint = args.hint;
    let allow_disk_use = args.allow_disk_use;
    let collation = args.collation;
    let pipeline = args.pipeline;
    let parsed = args.stages;
    let ns = format!("{}.{coll}", req.db);
    let limits = memory::StageLimits {
        allow_disk_use,
        held: Held::default(),
    };

    let view = shared.engine.read();
    let now = view.now_cell();
    let meta = view.collection(req.db, coll);
    let mut stages = parsed.into_iter().peekable();
    let rows: Rows = match (stages.peek(), &meta) {
        (
            Some(Stage::CollStats {
                storage_scale,
                count,
            }),
            _,
        ) => {
            let row = coll_stats_row(shared, &view, meta.as_deref(), &ns, *storage_scale, *count)?;
            stages.next();
            Box::new(std::iter::once(Ok(Row {
                doc: row,
                size: None,
                expires_at: None,
            })))
        }
        (Some(Stage::CurrentOp), _) => {
            stages.next();
            Box::new(shared.ops.report().into_iter().map(|doc| {
                Ok(Row {
                    doc,
                    size: None,
                    expires_at: None,
                })
            }))
        }
        (_, None) => Box::new(std::iter::empty()),
        (_, Some(meta)) => {
            let (read, taken) = leading_read(&mut stages, hint)?;
            let mut read = read.requested_collation(collation.clone())?;
            super::read::refuse_collated_stages(&read, meta, pipeline.get(taken..))?;
            read.allow_disk_use = allow_disk_use;
            read.held = limits.held.clone();
            let execution =
                view.execute(Some(meta), &read, now.clone(), Arc::clone(&req.interrupt))?;
            source(execution.docs, meta)
        }
    };
    let mut rows = rows;
    for stage in stages {
        rows = stage.apply(rows, &limits)?;
    }
    let cursor = Cursor::new(ns, sized(rows), now, None)
        .with_interrupt(Arc::clone(&req.interrupt))
        .with_held(limits.held);
    first_batch_reply(
        shared,
        cursor,
        view.now,
        Some(batch_size.unwrap_or(DEFAULT_FIRST_BATCH)),
        false,
    )
    .map(Reply::from)
}

/// The pipeline's leading `$match`, `$sort`, `$skip` and `$limit` (each optional, in that
/// order) as the executor's read request, so that an index can serve them; returns it and how
/// many stages it took from the pipeline.
fn leading_read(
    stages: &mut std::iter::Peekable<impl Iterator<Item = Stage>>,
    hint: Option<Hint>,
) -> Result<(ReadRequest, usize)> {
    let mut taken = 0;
    let mut read = match stages.next_if(|s| matches!(s, Stage::Match { .. })) {
        Some(Stage::Match { spec, .. }) => {
            taken += 1;
            ReadRequest::new(spec)?
        }
        _ => ReadRequest::new(Document::new())?,
    };
    if let Some(Stage::Sort { spec, pattern }) = stages.next_if(|s| matches!(s, Stage::Sort { .. }))
    {
        taken += 1;
        read.sort = spec;
        read.sort_pattern = pattern;
    }
    if let Some(Stage::Skip(n)) = stages.next_if(|s| matches!(s, Stage::Skip(_))) {
        taken += 1;
        read.skip = n;
    }
    if let Some(Stage::Limit(n)) = stages.next_if(|s| matches!(s, Stage::Limit(_))) {
        taken += 1;
        read.limit = Some(n);
    }
    read.hint = hint;
    Ok((read, taken))
}

/// `cursor: {batchSize}`: required unless explaining.
fn cursor_batch_size(cmd: &Document, explain: bool) -> Result<Option<usize>> {
    let cursor =
        match cmd.get("cursor") {
            None if explain => return Ok(None),
            None => return Err(Error::failed_to_parse(
                "The 'cursor' option is required, except for aggregate with the explain argument",
            )),
            Some(Bson::Document(c)) => c,
            Some(other) => return Err(wrong_type("aggregate", "cursor", other, "object")),
        };
    let mut named = doc! {"cursor": 1};
    named.extend(cursor.clone());
    check_fields(&named, "aggregate.cursor", &["batchSize"])?;
    match optional_i64(cursor, "aggregate.cursor", "batchSize")? {
        Some(n) if n < 0 => Err(Error::bad_value(format!(
            "BatchSize value must be non-negative, but received: {n}"
        ))),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        None => Ok(None),
    }
}

type StoredDocs = Box<dyn Iterator<Item = Result<crate::engine::StoredDoc>> + Send>;

/// Stored documents as pipeline rows, remembering each one's expiry.
fn source(docs: StoredDocs, meta: &CollectionMeta) -> Rows {
    let ttl = meta.ttl();
    Box::new(docs.map(move |d| {
        d.map(|d| Row {
            expires_at: d.record.expires_at(ttl),
            size: Some(d.record.body.len()),
            doc: d.doc,
        })
    }))
}

/// The pipeline's output for a cursor. Each row keeps when its source document expires, so the
/// cursor drops rows whose document has expired by the time a batch takes them (TTL-18).
fn sized(rows: Rows) -> super::cursor::SizedDocs {
    Box::new(rows.map(|r| r.and_then(|row| Item::new(&row.doc, row.expires_at))))
}

/// The one document `$collStats` produces.
fn coll_stats_row(
    shared: &Shared,
    view: &ReadView,
    meta: Option<&CollectionMeta>,
    ns: &str,
    storage_scale: Option<u64>,
    count: bool,
) -> Result<Document> {
    let mut row = doc! {
        "ns": ns,
        "host": format!("{}:{}", crate::host::hostname(), shared.config.port),
        "localTime": shared.clock.now_datetime(),
    };
    if storage_scale.is_none() && !count {
        return Ok(row);
    }
    let Some(meta) = meta else {
        let what = if storage_scale.is_some() {
            "storageStats"
        } else {
            "count"
        };
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            format!("Unable to retrieve {what} in $collStats stage :: caused by :: Collection [{ns}] not found."),
        ));
    };
    let sizes = stats::measure(view, meta)?;
    if let Some(scale) = storage_scale {
        row.insert("storageStats", stats::storage_stats(&sizes, scale));
    }
    if count {
        row.insert("count", stats::number(sizes.count));
    }
    Ok(row)
}
