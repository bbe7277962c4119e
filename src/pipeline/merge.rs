//! `$merge`: each output document is merged into a collection, matched on the `on` fields
//! (default `_id`; other fields need a unique index on exactly them, as mongod requires), then
//! acted on by `whenMatched` (`merge`, `replace`, `keepExisting`, `fail`, or an update pipeline
//! with `$$new` and the stage's `let` variables) and `whenNotMatched` (`insert`, `discard`,
//! `fail`). Documents are written in batches, one writer job each; as on mongod, a failure
//! leaves the batches before it written.

use super::{Env, Rows};
use crate::engine::catalog::validate_collection_name;
use crate::engine::exec::{self, ReadRequest};
use crate::engine::{ddl, documents::collection, CollectionMeta, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{Expression, Variables};
use crate::query::path;
use crate::query::size::document_size;
use crate::query::update::{Update, UpdateContext};
use bson::{doc, Bson, Document};
use std::sync::Arc;

const BATCH_DOCS: usize = 1_000;
const BATCH_BYTES: usize = 8 * 1024 * 1024;

#[derive(Clone)]
enum WhenMatched {
    Merge,
    Replace,
    KeepExisting,
    Fail,
    Pipeline(Vec<Document>),
}

#[derive(Clone, Copy, PartialEq)]
enum WhenNotMatched {
    Insert,
    Discard,
    Fail,
}

pub struct Merge {
    db: Option<String>,
    coll: String,
    on: Vec<String>,
    lets: Vec<(String, Expression)>,
    when_matched: WhenMatched,
    when_not_matched: WhenNotMatched,
    vars: Variables,
}

fn namespace(arg: &Bson) -> Result<(Option<String>, String)> {
    match arg {
        Bson::String(c) => Ok((None, c.clone())),
        Bson::Document(d) => {
            let coll = match d.get("coll") {
                Some(Bson::String(c)) => c.clone(),
                _ => {
                    return Err(Error::new(
                        ErrorCode::Location40414,
                        "BSON field 'into.coll' is missing but a required field",
                    ))
                }
            };
            let db = match d.get("db") {
                Some(Bson::String(s)) => Some(s.clone()),
                None => None,
                Some(other) => {
                    return Err(Error::type_mismatch(format!(
                        "BSON field 'into.db' is the wrong type '{}', expected type 'string'",
                        path::type_name(other)
                    )))
                }
            };
            Ok((db, coll))
        }
        other => Err(Error::new(
            ErrorCode::Location51178,
            format!(
                "$merge 'into' field  must be either a string or an object, but found {}",
                path::type_name(other)
            ),
        )),
    }
}

impl Merge {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<Merge> {
        let spec = match arg {
            Bson::String(_) => doc! {"into": arg.clone()},
            Bson::Document(d) => d.clone(),
            other => {
                return Err(Error::new(
                    ErrorCode::Location51182,
                    format!(
                        "$merge only supports a string or object argument, not {}",
                        path::type_name(other)
                    ),
                ))
            }
        };
        let mut into = None;
        let mut on = vec!["_id".to_owned()];
        let mut lets = None;
        let mut when_matched = WhenMatched::Merge;
        let mut when_not_matched = WhenNotMatched::Insert;
        for (k, v) in &spec {
            match k.as_str() {
                "into" => into = Some(namespace(v)?),
                "on" => {
                    on = match v {
                        Bson::String(s) => vec![s.clone()],
                        Bson::Array(items) if !items.is_empty() => items
                            .iter()
                            .map(|i| match i {
                                Bson::String(s) => Ok(s.clone()),
                                _ => Err(Error::new(
                                    ErrorCode::Location51134,
                                    "$merge 'on' array elements must be strings",
                                )),
                            })
                            .collect::<Result<_>>()?,
                        _ => {
                            return Err(Error::new(
                                ErrorCode::Location51186,
                                "$merge 'on' field  must be either a string or an array of \
                                 strings",
                            ))
                        }
                    }
                }
                "let" => {
                    let Bson::Document(d) = v else {
                        return Err(Error::type_mismatch(
                            "BSON field '$merge.let' is the wrong type, expected type 'object'",
                        ));
                    };
                    let mut compiled = Vec::new();
                    for (name, spec) in d {
                        crate::query::expr::validate_user_write(name)?;
                        compiled.push((name.clone(), Expression::compile(spec, vars)?));
                    }
                    lets = Some(compiled);
                }
                "whenMatched" => {
                    when_matched = match v {
                        Bson::String(s) => match s.as_str() {
                            "merge" => WhenMatched::Merge,
                            "replace" => WhenMatched::Replace,
                            "keepExisting" => WhenMatched::KeepExisting,
                            "fail" => WhenMatched::Fail,
                            other => {
                                return Err(Error::bad_value(format!(
                                    "Enumeration value '{other}' for field 'whenMatched' is not \
                                     a valid value."
                                )))
                            }
                        },
                        Bson::Array(stages) => WhenMatched::Pipeline(
                            stages
                                .iter()
                                .map(|s| match s {
                                    Bson::Document(d) => Ok(d.clone()),
                                    _ => Err(Error::type_mismatch(
                                        "Each element of the 'whenMatched' pipeline must be an \
                                         object",
                                    )),
                                })
                                .collect::<Result<_>>()?,
                        ),
                        other => {
                            return Err(Error::type_mismatch(format!(
                                "BSON field '$merge.whenMatched' is the wrong type '{}', \
                                 expected types '[string, array]'",
                                path::type_name(other)
                            )))
                        }
                    }
                }
                "whenNotMatched" => {
                    when_not_matched = match v {
                        Bson::String(s) if s == "insert" => WhenNotMatched::Insert,
                        Bson::String(s) if s == "discard" => WhenNotMatched::Discard,
                        Bson::String(s) if s == "fail" => WhenNotMatched::Fail,
                        other => {
                            return Err(Error::bad_value(format!(
                                "Enumeration value '{}' for field 'whenNotMatched' is not a \
                                 valid value.",
                                path::render(other)
                            )))
                        }
                    }
                }
                "targetCollectionVersion" => {}
                _ => {
                    return Err(Error::new(
                        ErrorCode::IDLUnknownField,
                        format!("BSON field '$merge.{k}' is an unknown field."),
                    ))
                }
            }
        }
        let Some((db, coll)) = into else {
            return Err(Error::new(
                ErrorCode::Location40414,
                "BSON field '$merge.into' is missing but a required field",
            ));
        };
        let lets = match (lets, &when_matched) {
            (Some(lets), WhenMatched::Pipeline(_)) => lets,
            (None, _) => Vec::new(),
            (Some(_), _) => {
                return Err(Error::new(
                    ErrorCode::Location51199,
                    "Cannot use 'let' variables with 'whenMatched: merge' mode",
                ))
            }
        };
        let merge = Merge {
            db,
            coll,
            on,
            lets,
            when_matched,
            when_not_matched,
            vars: vars.clone(),
        };
        // A bad whenMatched pipeline fails the command before anything is written.
        merge.update_for(&Document::new())?;
        Ok(merge)
    }

    /// The update a matched document gets from the whenMatched pipeline, with `$$new` = `new`
    /// and the stage's `let` variables evaluated against it (the default `let` is `{new:
    /// "$$ROOT"}`).
    fn update_for(&self, new: &Document) -> Result<Option<Update>> {
        let WhenMatched::Pipeline(stages) = &self.when_matched else {
            return Ok(None);
        };
        let mut vars = self.vars.clone();
        if self.lets.is_empty() {
            vars = vars.with_value("new", Bson::Document(new.clone()));
        }
        for (name, expr) in &self.lets {
            vars = vars.with_value(name, expr.eval(new)?.unwrap_or(Bson::Null));
        }
        Update::parse_pipeline(stages, &vars).map(Some)
    }

    pub fn run(self, rows: Rows, env: &Env) -> Result<Rows> {
        let db = self.db.clone().unwrap_or_else(|| env.db.clone());
        validate_collection_name(&db, &self.coll)?;
        check_unique_index(env, &db, &self.coll, &self.on)?;
        let merge = Arc::new(self);
        let mut batch = Vec::new();
        let mut bytes = 0usize;
        for row in rows {
            let doc = row?.doc;
            bytes += document_size(&doc);
            let update = merge.update_for(&doc)?;
            batch.push((doc, update));
            if batch.len() >= BATCH_DOCS || bytes >= BATCH_BYTES {
                env.interrupt.check()?;
                write_batch(&merge, env, &db, std::mem::take(&mut batch))?;
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            write_batch(&merge, env, &db, batch)?;
        }
        Ok(Box::new(std::iter::empty()))
    }

    /// The `on` fields' values of `doc` as an equality filter; mongod refuses a missing, null
    /// or array value.
    fn match_filter(&self, doc: &Document) -> Result<Document> {
        let mut filter = Document::new();
        for field in &self.on {
            let parts = path::split(field);
            match path::get(doc, &parts) {
                None | Some(Bson::Null | Bson::Undefined) if field != "_id" => {
                    return Err(Error::new(
                        ErrorCode::Location51132,
                        format!(
                            "$merge write error: 'on' field '{field}' cannot be missing, null, \
                             undefined or an array"
                        ),
                    ))
                }
                Some(Bson::Array(_)) => {
                    return Err(Error::new(
                        ErrorCode::Location51185,
                        format!(
                            "$merge write error: 'on' field '{field}' cannot be missing, null, \
                             undefined or an array"
                        ),
                    ))
                }
                Some(v) => {
                    filter.insert(field.clone(), doc! {"$eq": v.clone()});
                }
                None => {}
            }
        }
        Ok(filter)
    }
}

/// `on` fields other than `_id` need a unique index on exactly those fields whose collation is
/// the operation's (mongod's collator-compatible index: uniqueness under another collation
/// would not make the match unique).
fn check_unique_index(env: &Env, db: &str, coll: &str, on: &[String]) -> Result<()> {
    if on == ["_id"] {
        return Ok(());
    }
    let meta = env.view.collection(db, coll);
    let covered = meta.iter().flat_map(|m| m.indexes.iter()).any(|index| {
        // A partial index makes its keys unique among the documents it holds only.
        index.unique
            && index.partial_filter.is_none()
            && index.key.len() == on.len()
            && on.iter().all(|f| index.key.contains_key(f))
            && index.collator().ok().flatten().as_ref() == env.collation()
    });
    if covered {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::Location51183,
            "Cannot find index to verify that join fields will be unique",
        ))
    }
}

fn write_batch(
    merge: &Arc<Merge>,
    env: &Env,
    db: &str,
    batch: Vec<(Document, Option<Update>)>,
) -> Result<()> {
    let merge = Arc::clone(merge);
    let db = db.to_owned();
    let interrupt = Arc::clone(&env.interrupt);
    let at = env.vars.now().unwrap_or(bson::DateTime::from_millis(0));
    env.writes.write_blocking(env.durable, move |txn, now| {
        let (meta, _) = ddl::ensure_collection(txn, &db, &merge.coll)?;
        for (doc, update) in batch {
            merge_one(txn, &meta, &merge, doc, update, now, at, &interrupt)?;
        }
        Ok(())
    })?
}

#[allow(clippy::too_many_arguments)]
fn merge_one(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    merge: &Merge,
    doc: Document,
    update: Option<Update>,
    now: i64,
    at: bson::DateTime,
    interrupt: &Arc<crate::engine::Interrupt>,
) -> Result<()> {
    let filter = merge.match_filter(&doc)?;
    // Matched under the operation's collation, as mongod's $merge updates are.
    let mut read =
        ReadRequest::new(filter)?.requested_collation(Some(merge.vars.collation().cloned()))?;
    read.limit = Some(1);
    let existing = if read.filter_doc.is_empty() {
        None
    } else {
        exec::select_in_txn(txn, meta, &read, now, Arc::clone(interrupt))?
            .into_iter()
            .next()
    };
    match existing {
        None => match merge.when_not_matched {
            WhenNotMatched::Insert => {
                let doc = collection::prepare_for_insert(doc)?;
                collection::insert(txn, meta, &doc, now)
            }
            WhenNotMatched::Discard => Ok(()),
            WhenNotMatched::Fail => Err(Error::new(
                ErrorCode::Location13113,
                "$merge could not find a matching document in the target collection for at \
                 least one document in the source collection",
            )),
        },
        Some(old) => {
            let replaces = matches!(merge.when_matched, WhenMatched::Replace);
            let new = match &merge.when_matched {
                WhenMatched::KeepExisting => return Ok(()),
                WhenMatched::Fail => {
                    let mut key_pattern = Document::new();
                    let mut key_value = Document::new();
                    for field in &merge.on {
                        key_pattern.insert(field.clone(), 1);
                        let value = path::get(&old.doc, &path::split(field)).cloned();
                        key_value.insert(field.clone(), value.unwrap_or(Bson::Null));
                    }
                    return Err(Error::new(
                        ErrorCode::DuplicateKey,
                        format!(
                            "E11000 duplicate key error collection: {}.{} dup key: {}",
                            meta.db,
                            meta.name,
                            path::render_document(&key_value)
                        ),
                    )
                    .with_extra(doc! {"keyPattern": key_pattern, "keyValue": key_value}));
                }
                WhenMatched::Replace => with_id(doc, &old.doc)?,
                WhenMatched::Merge => {
                    let mut merged = old.doc.clone();
                    for (k, v) in doc {
                        merged.insert(k, v);
                    }
                    with_id(merged, &old.doc)?
                }
                WhenMatched::Pipeline(_) => {
                    let mut updated = old.doc.clone();
                    if let Some(update) = update {
                        let filters = crate::query::update::ArrayFilters::default();
                        let ctx = UpdateContext {
                            now: at,
                            is_upsert_insert: false,
                            array_filters: &filters,
                            positional_match: None,
                        };
                        update.apply(&mut updated, &ctx)?;
                    }
                    updated
                }
            };
            if replaces {
                collection::replace(txn, meta, &old, &new, now)
            } else {
                collection::update(txn, meta, &old, &new, now)
            }
        }
    }
}

/// `new` keeping the stored document's `_id`; a different `_id` is mongod's 66.
fn with_id(mut new: Document, old: &Document) -> Result<Document> {
    let old_id = old.get("_id").cloned().unwrap_or(Bson::Null);
    match new.get("_id") {
        Some(id) if !crate::query::compare::values_equal(id, &old_id) => Err(Error::new(
            ErrorCode::ImmutableField,
            "$merge failed to update the matching document, did you attempt to modify the _id \
             or the shard key?",
        )),
        _ => {
            new.remove("_id");
            let mut out = doc! {"_id": old_id};
            out.extend(new);
            Ok(out)
        }
    }
}
