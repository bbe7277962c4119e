//! `findAndModify` (and `findandmodify`): update, replace, upsert or remove the first matching
//! document and return it, `{lastErrorObject: {n, [updatedExisting], [upserted]}, value, ok}`.
//! Unlike the batch commands, every failure — a duplicate key included — is a command error.

use super::find_and_modify_spec::FindAndModifySpec;
use super::{
    apply_update, collation_of, command_variables, parse_update, refuse_collated_update, selection,
    store_change, targets, update_compares_strings, upsert_document,
};
use crate::command::args::durable;
use crate::command::retryable::{History, RetryableWrite};
use crate::command::{Request, Shared};
use crate::engine::catalog::validate_collection_name;
use crate::engine::exec::ReadRequest;
use crate::engine::{ddl, documents::collection, Interrupt, Txn};
use crate::error::{Error, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::profile::DocumentLimit;
use crate::query::projection::{Projection, Source};
use crate::query::update::{ArrayFilters, Update};
use bson::{doc, Bson, DateTime, Document};
use std::sync::Arc;

/// What to do with the document found.
enum Action {
    Remove,
    Update {
        update: Update,
        array_filters: ArrayFilters,
        upsert: bool,
        /// Return the document as it is after the update (`new: true`).
        return_new: bool,
    },
}

/// A parsed findAndModify.
struct FindAndModify {
    /// The first match in `sort` order: a limit of one.
    query: ReadRequest,
    action: Action,
    /// The update compares strings outside its query (`update_compares_strings`).
    compares_strings: bool,
    /// The profile's largest document (Cosmos's 2 MB).
    limit: DocumentLimit,
    /// The Cosmos profile's shard-key rules.
    shard_keys: ShardKeys,
    /// `fields`: a find projection of the returned document.
    projection: Option<Projection>,
}

/// Compiles `spec` (read by the envelope, its structural errors already the command's): the
/// collection's name judged, then the command; with its statement id.
fn parse(db: &str, spec: &FindAndModifySpec, now: DateTime) -> Result<(FindAndModify, i32)> {
    validate_collection_name(db, &spec.collection)?;
    let stmt_id = spec.statement_id()?;
    Ok((FindAndModify::compile(spec, now)?, stmt_id))
}

/// The collection and selection of a findAndModify, and whether it removes, for explain.
pub(super) fn explained(
    db: &str,
    spec: &FindAndModifySpec,
    now: DateTime,
) -> Result<(String, ReadRequest, bool)> {
    let (op, _) = parse(db, spec, now)?;
    let removes = matches!(op.action, Action::Remove);
    Ok((spec.collection.clone(), op.query, removes))
}

pub async fn find_and_modify(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let spec = req.parsed.find_and_modify()?;
    let coll = spec.collection.clone();
    let (mut op, stmt_id) = parse(req.db, spec, shared.clock.now_datetime())?;
    op.query = op.query.under(&shared.config.profile);
    if op.query.sort_needs_index {
        crate::profile::sort::check_find_and_modify(&op.query.sort_pattern)?;
    }
    op.limit = shared.config.profile.document_limit();
    op.shard_keys = ShardKeys::of(&shared.config.profile);
    let projection = op.projection.take();
    // A positional projection finds its element with the command's query.
    let query = op.query.filter.clone();

    let retryable = RetryableWrite::of(req);

    let db = req.db.to_owned();
    let clock = Arc::clone(shared.engine.clock());
    let interrupt = Arc::clone(&req.interrupt);
    let (last_error, value, retried) =
        crate::command::transactions::write(shared, req, durable(cmd), move |txn, now| {
            let at = clock.now_datetime();
            let Some(mut history) = History::load(txn, retryable, now)? else {
                let (last_error, value) = op.run(txn, (&db, &coll), now, at, &interrupt)?;
                return Ok((last_error, value, false));
            };
            if let Some(result) = history.executed(stmt_id)? {
                let last_error = result.get_document("lastErrorObject").cloned();
                let value = result.get_document("value").ok().cloned();
                return Ok((last_error.unwrap_or_default(), value, true));
            }
            let (last_error, value) = op.run(txn, (&db, &coll), now, at, &interrupt)?;
            let stored = value.clone().map_or(Bson::Null, Bson::Document);
            history.record(
                stmt_id,
                doc! {"lastErrorObject": last_error.clone(), "value": stored},
            );
            history.save(txn, now, at)?;
            Ok::<_, Error>((last_error, value, false))
        })
        .await??;
    let value = match (value, &projection) {
        (Some(doc), Some(p)) => {
            let source = Source {
                query: Some(&query),
                record_id: None,
            };
            Bson::Document(p.apply_from(&doc, source)?)
        }
        (Some(doc), None) => Bson::Document(doc),
        (None, _) => Bson::Null,
    };
    let mut reply = doc! {"lastErrorObject": last_error, "value": value};
    if retried {
        reply.insert("retriedStmtId", stmt_id);
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

impl FindAndModify {
    /// Compiles a read findAndModify: how its fields combine, then its filter, sort, update,
    /// array filters and projection.
    fn compile(spec: &FindAndModifySpec, now: DateTime) -> Result<FindAndModify> {
        let remove = spec.remove;
        let (return_new, upsert) = (spec.return_new, spec.upsert);
        let filters = spec.array_filters.as_deref();
        let vars = command_variables(spec.let_vars.as_ref(), now)?;
        let collation = collation_of(spec.collation.as_ref())?;
        let update = spec.update.as_ref();
        let compares_strings =
            !remove && update.is_some_and(|u| update_compares_strings(u, filters));
        let action = if remove {
            let conflict = if update.is_some() {
                Some("Cannot specify both an update and remove=true")
            } else if upsert {
                Some("Cannot specify both upsert=true and remove=true ")
            } else if return_new {
                Some("Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
            } else if filters.is_some() {
                Some("Cannot specify arrayFilters and remove=true")
            } else {
                None
            };
            if let Some(message) = conflict {
                return Err(Error::failed_to_parse(message));
            }
            Action::Remove
        } else {
            let Some(update) = update else {
                return Err(Error::failed_to_parse(
                    "Either an update or remove=true must be specified",
                ));
            };
            let update = parse_update(update, &vars)?;
            let array_filters = ArrayFilters::compile(filters.unwrap_or_default(), &update)?;
            Action::Update {
                update,
                array_filters,
                upsert,
                return_new,
            }
        };
        let query = spec.query.clone().unwrap_or_default();
        let sort = spec.sort.clone().unwrap_or_default();
        let query = selection(&query, sort, spec.hint.as_ref(), true, collation, &vars)?;
        let projection = match &spec.fields {
            Some(p) if !p.is_empty() => Some(Projection::find(p, &query.filter, &vars)?),
            _ => None,
        };
        Ok(FindAndModify {
            query,
            projection,
            action,
            compares_strings,
            limit: DocumentLimit::default(),
            shard_keys: ShardKeys::default(),
        })
    }

    /// Runs inside the writer job: `(lastErrorObject, the document to return)`.
    fn run(
        &self,
        txn: &mut Txn<'_>,
        target: (&str, &str),
        now: i64,
        at: DateTime,
        interrupt: &Arc<Interrupt>,
    ) -> Result<(Document, Option<Document>)> {
        let (db, coll) = target;
        let meta = collection::existing_collection(txn, db, coll);
        if let (Some(meta), true) = (&meta, self.compares_strings) {
            refuse_collated_update(meta, &self.query)?;
        }
        let shard_key = meta
            .as_ref()
            .and_then(|m| self.shard_keys.key(m.shard_key()));
        if let Some(key) = &shard_key {
            key.check_target(&self.query.filter_doc)?;
        }
        let found = match &meta {
            Some(meta) => targets(txn, meta, &self.query, now, interrupt)?
                .into_iter()
                .next(),
            None => None,
        };
        let found = found.and_then(|d| meta.map(|m| (m, d)));
        match (&self.action, found) {
            (Action::Remove, Some((meta, old))) => {
                collection::delete(txn, &meta, &old)?;
                Ok((doc! {"n": 1}, Some(old.doc)))
            }
            (Action::Remove, None) => Ok((doc! {"n": 0}, None)),
            (
                Action::Update {
                    update,
                    array_filters,
                    return_new,
                    ..
                },
                Some((meta, old)),
            ) => {
                let new = match apply_update(
                    &old,
                    update,
                    array_filters,
                    &self.query.filter,
                    (at, self.limit),
                )? {
                    Some(new) => {
                        if let Some(key) = &shard_key {
                            key.check_unchanged(&old.doc, &new)?;
                        }
                        store_change(txn, &meta, &old, &new, update, now)?;
                        new
                    }
                    None => old.doc.clone(),
                };
                let value = if *return_new { new } else { old.doc };
                Ok((doc! {"n": 1, "updatedExisting": true}, Some(value)))
            }
            (Action::Update { upsert: false, .. }, None) => {
                Ok((doc! {"n": 0, "updatedExisting": false}, None))
            }
            (
                Action::Update {
                    update,
                    array_filters,
                    return_new,
                    upsert: true,
                },
                None,
            ) => {
                let doc = upsert_document(&self.query, update, array_filters, at)?;
                self.limit.check_document(&doc)?;
                if let Some(key) = &shard_key {
                    key.check_document(&doc)?;
                }
                let (meta, _) = ddl::ensure_collection(txn, db, coll)?;
                collection::insert(txn, &meta, &doc, now)?;
                let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
                let last_error = doc! {"n": 1, "updatedExisting": false, "upserted": id};
                Ok((last_error, return_new.then_some(doc)))
            }
        }
    }
}
