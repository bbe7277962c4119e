//! Write commands that change or remove stored documents: `update`, `delete` and
//! `findAndModify`. Each parses its arguments once — a structural mistake (unknown field, missing
//! or mistyped field) fails the whole command, as mongod's IDL parser does, while a statement
//! whose filter or update is invalid becomes a write error at its index — then runs every
//! statement in one writer job, so a batch applies in statement order and sees its own earlier
//! statements. Outside a transaction and a retryable write, a multi-document statement
//! (`update` with `multi: true`, `delete` with `limit: 0`) runs instead in bounded batches, each
//! its own writer job (`multi`), as mongod yields between the documents of such a statement.
//!
//! Each command's fields are read in one pass into its spec (`update_spec`, `delete_spec`,
//! `find_and_modify_spec`, over `base_spec`), which the command and its explain both compile.
//!
//! Owns: argument parsing, statement execution on top of `engine::plan` and
//! `engine::collection`, and the reply shapes. Does not own: filter and update semantics
//! (`query`) or visibility (`engine`: only visible documents are matched, TTL-18/TTL-19).

pub(super) mod base_spec;
mod batch_size;
mod delete;
mod delete_spec;
mod find_and_modify;
mod find_and_modify_spec;
mod multi;
mod update;
mod update_spec;

pub use delete::delete;
pub use delete_spec::DeleteSpec;
pub use find_and_modify::find_and_modify;
pub use find_and_modify_spec::FindAndModifySpec;
pub use update::update;
pub use update_spec::UpdateSpec;

use super::explain::plan::Root;
use crate::command::ParsedCommand;
use crate::engine::catalog::CollectionMeta;
use crate::engine::exec::{self, Hint, ReadRequest};
use crate::engine::{documents::collection, Interrupt, StoredDoc, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::DocumentLimit;
use crate::query::collation::Collation;
use crate::query::expr::Variables;
use crate::query::filter::{equality_fields, Filter};
use crate::query::update::{upsert_seed, ArrayFilters, Update, UpdateContext};
use bson::{Bson, DateTime, Document};
use std::sync::Arc;

/// What an explained write selects: its collection, the read request and the stage above it;
/// `None` when `parsed` is no write this module runs.
pub fn explained_selection(
    parsed: &ParsedCommand<'_>,
    db: &str,
    now: DateTime,
) -> Option<Result<(String, ReadRequest, Root)>> {
    Some(match parsed {
        ParsedCommand::Update(spec) => {
            update::explained(db, spec, now).map(|(coll, read)| (coll, read, Root::Update))
        }
        ParsedCommand::Delete(spec) => {
            delete::explained(db, spec, now).map(|(coll, read)| (coll, read, Root::Delete))
        }
        ParsedCommand::FindAndModify(spec) => {
            find_and_modify::explained(db, spec, now).map(|(coll, read, removes)| {
                let root = if removes { Root::Delete } else { Root::Update };
                (coll, read, root)
            })
        }
        _ => return None,
    })
}

/// Waits for a command's writer job unless the operation is interrupted first (`maxTimeMS`,
/// `killOp`, a closed connection); a job already queued may still commit, as a write mongod
/// started may. A multi-document statement in batches does not race its jobs: it checks the
/// interrupt between them, so that it stops after a whole batch.
async fn awaiting_job<T>(
    interrupt: &Interrupt,
    job: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    interrupt.check()?;
    tokio::select! {
        outcome = job => outcome,
        err = interrupt.interrupted() => Err(err),
    }
}

/// mongod explains one write statement at a time.
fn single_statement<T>(stmts: Vec<T>) -> Result<T> {
    let mut stmts = stmts.into_iter();
    match (stmts.next(), stmts.next()) {
        (Some(one), None) => Ok(one),
        _ => Err(Error::new(
            ErrorCode::InvalidLength,
            "explained write batches must be of size 1",
        )),
    }
}

/// A statement's `collation`: `None` when absent or empty (the collection's default applies),
/// else the parsed collation (`Some(None)`: simple).
fn collation_of(collation: Option<&Document>) -> Result<Option<Option<Collation>>> {
    match collation {
        Some(c) if !c.is_empty() => Collation::parse(c).map(Some),
        _ => Ok(None),
    }
}

/// Whether an update compares strings outside its query, where mongod applies the collation
/// too: array filters, pipelines, `$pull`, `$pullAll`, `$addToSet`, `$min`, `$max`, and
/// `$push` with `$sort`. Those compare by bytes here.
fn update_compares_strings(u: &Bson, array_filters: Option<&[Document]>) -> bool {
    if array_filters.is_some_and(|f| !f.is_empty()) {
        return true;
    }
    match u {
        Bson::Document(ops) => ops.iter().any(|(op, arg)| match op.as_str() {
            "$pull" | "$pullAll" | "$addToSet" | "$min" | "$max" => true,
            "$push" => matches!(arg, Bson::Document(fields) if fields.values().any(
                |v| matches!(v, Bson::Document(m) if m.contains_key("$sort"))
            )),
            _ => false,
        }),
        _ => true,
    }
}

/// Refuses, rather than half applies, an update that compares strings outside its query (see
/// [`update_compares_strings`]) under a collation other than simple (its own, else the
/// collection's).
fn refuse_collated_update(meta: &CollectionMeta, query: &ReadRequest) -> Result<()> {
    if query.for_collection(meta)?.collation.is_some() {
        return Err(Error::new(
            ErrorCode::NotImplemented,
            "under a collation other than simple, updates with arrayFilters, pipelines, $pull, \
             $pullAll, $addToSet, $min, $max or $push with $sort are not supported by this \
             server",
        ));
    }
    Ok(())
}

/// The `u` of an update statement or the `update` of findAndModify: a document (replacement or
/// operators) or a pipeline.
fn parse_update(value: &Bson, vars: &Variables) -> Result<Update> {
    match value {
        Bson::Document(d) => Update::parse(d),
        Bson::Array(stages) => {
            let stages: Vec<Document> = stages
                .iter()
                .map(|s| match s {
                    Bson::Document(d) => Ok(d.clone()),
                    _ => Err(Error::type_mismatch(
                        "Each element of the 'pipeline' array must be an object",
                    )),
                })
                .collect::<Result<_>>()?;
            Update::parse_pipeline(&stages, vars)
        }
        _ => Err(Error::failed_to_parse(
            "Update argument must be either an object or an array",
        )),
    }
}

/// A batch write (`update`, `delete`) read once by the envelope and its statements compiled:
/// what the command runs and what its explain plans.
struct Compiled<'a, S> {
    coll: &'a str,
    base: &'a base_spec::WriteBase,
    /// The outer `Result` (structure) was the command's; each of these is its statement's.
    statements: Vec<Result<S>>,
}

/// Compiles a batch write whose structural errors were already the command's: the collection's
/// name judged, the batch's size, then each statement with the command's variables.
fn compile_batch<'a, T, S>(
    db: &str,
    (coll, base): (&'a str, &'a base_spec::WriteBase),
    let_vars: Option<&Document>,
    statements: &[T],
    now: DateTime,
    compile: impl Fn(&T, &Variables) -> Result<S>,
) -> Result<Compiled<'a, S>> {
    crate::engine::catalog::validate_collection_name(db, coll)?;
    let vars = command_variables(let_vars, now)?;
    base_spec::check_batch_size(statements.len())?;
    Ok(Compiled {
        coll,
        base,
        statements: statements.iter().map(|stmt| compile(stmt, &vars)).collect(),
    })
}

/// The variables a write's expressions see: its `let` option and `$$NOW`.
fn command_variables(let_vars: Option<&Document>, now: DateTime) -> Result<Variables> {
    Variables::new(now).with_let(let_vars)
}

/// What a statement selects: its filter, and for a single-document statement its sort, hint and
/// limit of one. The filter's source is kept for upsert seeds.
fn selection(
    filter: &Document,
    sort: Document,
    hint: Option<&Bson>,
    just_one: bool,
    collation: Option<Option<Collation>>,
    vars: &Variables,
) -> Result<ReadRequest> {
    let mut query = ReadRequest::with_variables(filter.clone(), vars.clone())?
        .requested_collation(collation)?
        .sorted(sort)?;
    query.hint = Hint::parse(hint)?;
    if just_one {
        query.limit = Some(1);
    }
    Ok(query)
}

/// The documents a statement acts on, selected by the executor as of this point in the group.
fn targets(
    txn: &Txn<'_>,
    meta: &CollectionMeta,
    query: &ReadRequest,
    now: i64,
    interrupt: &Arc<Interrupt>,
) -> Result<Vec<StoredDoc>> {
    exec::select_in_txn(txn, meta, query, now, Arc::clone(interrupt))
}

/// Applies `update` to a matched document. `Some(new)` only when the result differs byte for
/// byte from what is stored: a document the update leaves as it was is not rewritten, so its
/// `_ts` stays (TTL-15) and it does not count in `nModified`.
fn apply_update(
    stored: &StoredDoc,
    update: &Update,
    filters: &ArrayFilters,
    filter: &Filter,
    (at, limit): (DateTime, DocumentLimit),
) -> Result<Option<Document>> {
    let mut doc = stored.doc.clone();
    let ctx = UpdateContext {
        now: at,
        is_upsert_insert: false,
        array_filters: filters,
        positional_match: filter.positional_match(&stored.doc),
    };
    update.apply(&mut doc, &ctx)?;
    // Compare bytes, not `Document`s: `Document` equality ignores field order, and a
    // replacement that only reorders fields is a change.
    let mut bytes = Vec::with_capacity(stored.record.body.len());
    doc.to_writer(&mut bytes)
        .map_err(|e| Error::internal(format!("cannot encode document: {e}")))?;
    if bytes == stored.record.body {
        return Ok(None);
    }
    limit.check(bytes.len())?;
    Ok(Some(doc))
}

/// Stores `new` in place of `old`: the operation log records a replacement as the whole new
/// document and any other update as its difference, as mongod's does.
fn store_change(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    old: &StoredDoc,
    new: &Document,
    update: &Update,
    now: i64,
) -> Result<()> {
    if update.is_replacement() {
        collection::replace(txn, meta, old, new, now)
    } else {
        collection::update(txn, meta, old, new, now)
    }
}

/// The document an upsert inserts when nothing matched: the query's equality fields with the
/// update applied as an insert (`$setOnInsert` fires), `_id` first and generated when absent.
fn upsert_document(
    query: &ReadRequest,
    update: &Update,
    filters: &ArrayFilters,
    at: DateTime,
) -> Result<Document> {
    let ctx = UpdateContext {
        now: at,
        is_upsert_insert: true,
        array_filters: filters,
        positional_match: None,
    };
    let seed = match update {
        // A replacement takes only `_id` from the query, and may not change it (66, as mongod).
        Update::Replacement(_) => {
            let mut seed = Document::new();
            if let Ok(equalities) = equality_fields(&query.filter_doc) {
                if let Some(id) = equalities.get("_id") {
                    seed.insert("_id", id.clone());
                }
            }
            update.apply(&mut seed, &ctx)?;
            seed
        }
        _ => upsert_seed(&equality_fields(&query.filter_doc)?, update, &ctx)?,
    };
    collection::prepare_for_insert(seed)
}
