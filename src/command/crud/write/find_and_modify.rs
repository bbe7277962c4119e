//! `findAndModify` (and `findandmodify`): update, replace, upsert or remove the first matching
//! document and return it, `{lastErrorObject: {n, [updatedExisting], [upserted]}, value, ok}`.
//! Unlike the batch commands, every failure — a duplicate key included — is a command error.

use super::command_variables;
use super::{
    apply_update, array_filter_docs, collation_of, hint_arg, parse_update, refuse_collated_update,
    selection, store_change, targets, update_compares_strings, upsert_document,
};
use crate::command::args::{check_fields, durable, optional_bool, optional_doc};
use crate::command::retryable::{self, History, RetryableWrite};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name};
use crate::engine::exec::ReadRequest;
use crate::engine::{ddl, documents::collection, Interrupt, Txn};
use crate::error::{Error, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::profile::DocumentLimit;
use crate::query::projection::{Projection, Source};
use crate::query::update::{ArrayFilters, Update};
use bson::{doc, Bson, DateTime, Document};
use std::sync::Arc;

const COMMAND: &str = "findAndModify";
const FIELDS: &[&str] = &[
    "query",
    "sort",
    "remove",
    "update",
    "new",
    "fields",
    "upsert",
    "arrayFilters",
    "hint",
    "collation",
    "let",
    "bypassDocumentValidation",
    "stmtId",
];

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

/// The collection and selection of a findAndModify, and whether it removes, for explain.
pub(super) fn explained(
    db: &str,
    cmd: &Document,
    now: DateTime,
) -> Result<(String, ReadRequest, bool)> {
    check_fields(cmd, COMMAND, FIELDS)?;
    let name = cmd.keys().next().map(String::as_str).unwrap_or(COMMAND);
    let coll = collection_arg(cmd.get(name), COMMAND)?.to_owned();
    validate_collection_name(db, &coll)?;
    let op = FindAndModify::parse(cmd, now)?;
    let removes = matches!(op.action, Action::Remove);
    Ok((coll, op.query, removes))
}

pub async fn find_and_modify(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, COMMAND, FIELDS)?;
    let coll = collection_arg(cmd.get(req.name.name()), COMMAND)?.to_owned();
    validate_collection_name(req.db, &coll)?;
    let mut op = FindAndModify::parse(cmd, shared.clock.now_datetime())?;
    op.query = op.query.under(&shared.config.profile);
    op.limit = shared.config.profile.document_limit();
    op.shard_keys = ShardKeys::of(&shared.config.profile);
    let projection = op.projection.take();
    // A positional projection finds its element with the command's query.
    let query = op.query.filter.clone();

    let retryable = RetryableWrite::of(req);
    let stmt_id = retryable::statement_ids(cmd, COMMAND, 1)?
        .first()
        .copied()
        .unwrap_or_default();

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
    fn parse(cmd: &Document, now: DateTime) -> Result<FindAndModify> {
        let query = optional_doc(cmd, COMMAND, "query")?
            .cloned()
            .unwrap_or_default();
        let sort = optional_doc(cmd, COMMAND, "sort")?
            .cloned()
            .unwrap_or_default();
        let remove = optional_bool(cmd, COMMAND, "remove")?.unwrap_or(false);
        let return_new = optional_bool(cmd, COMMAND, "new")?.unwrap_or(false);
        let upsert = optional_bool(cmd, COMMAND, "upsert")?.unwrap_or(false);
        let filters = array_filter_docs(cmd, COMMAND)?;
        let hint = hint_arg(cmd)?;
        optional_bool(cmd, COMMAND, "bypassDocumentValidation")?;
        let vars = command_variables(cmd, COMMAND, now)?;
        let collation = collation_of(optional_doc(cmd, COMMAND, "collation")?)?;
        let update = cmd.get("update");
        let compares_strings =
            !remove && update.is_some_and(|u| update_compares_strings(u, filters.as_deref()));
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
            let array_filters =
                ArrayFilters::compile(filters.as_deref().unwrap_or_default(), &update)?;
            Action::Update {
                update,
                array_filters,
                upsert,
                return_new,
            }
        };
        let query = selection(&query, sort, hint.as_ref(), true, collation, &vars)?;
        let projection = match optional_doc(cmd, COMMAND, "fields")? {
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
