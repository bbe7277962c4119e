//! `update`: a batch of `{q, u, upsert, multi, arrayFilters, hint, collation}` statements,
//! ordered or not, replying `{n, nModified, [upserted], [writeErrors], ok}`.

use super::command_variables;
use super::{
    apply_update, array_filter_docs, check_statement_fields, collation_of, hint_arg, missing,
    parse_update, refuse_collated_update, required_doc, selection, statements, store_change,
    targets, update_compares_strings, upsert_document,
};
use crate::command::args::{check_fields, durable, optional_bool, optional_doc};
use crate::command::batch;
use crate::command::retryable::{self, History, RetryableWrite};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name};
use crate::engine::exec::ReadRequest;
use crate::engine::{ddl, documents::collection, Interrupt, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::shard_keys::{ShardKey, ShardKeys};
use crate::profile::DocumentLimit;
use crate::query::expr::Variables;
use crate::query::update::{ArrayFilters, Update};
use crate::status::OpKind;
use bson::{doc, Bson, DateTime, Document};
use std::sync::Arc;

const FIELDS: &[&str] = &[
    "updates",
    "ordered",
    "bypassDocumentValidation",
    "let",
    "stmtId",
    "stmtIds",
];
const PREFIX: &str = "update.updates";
const STATEMENT_FIELDS: &[&str] = &[
    "q",
    "u",
    "c",
    "upsert",
    "multi",
    "arrayFilters",
    "hint",
    "collation",
    // No `sort`: mongod 7.0 refuses it as an unknown field (it came in 8.0).
    "upsertSupplied",
    "sampleId",
    // Only a router sets it, for sharded collections; mayfly has none, so it changes nothing.
    "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery",
];

/// One update statement, parsed.
struct Statement {
    query: ReadRequest,
    update: Update,
    array_filters: ArrayFilters,
    upsert: bool,
    /// Updates every match (`multi: true`), which a retryable write may not.
    multi: bool,
    /// The update compares strings outside its query (`update_compares_strings`).
    compares_strings: bool,
    /// The profile's largest document (Cosmos's 2 MB).
    limit: DocumentLimit,
    /// The Cosmos profile's shard-key rules.
    shard_keys: ShardKeys,
}

/// What one statement did.
#[derive(Default)]
struct Done {
    matched: usize,
    modified: usize,
    upserted: Option<Bson>,
}

/// The collection and selection of an update's one statement, for explain.
pub(super) fn explained(db: &str, cmd: &Document, now: DateTime) -> Result<(String, ReadRequest)> {
    check_fields(cmd, "update", FIELDS)?;
    let coll = collection_arg(cmd.get("update"), "update")?.to_owned();
    validate_collection_name(db, &coll)?;
    let vars = command_variables(cmd, "update", now)?;
    let stmt = super::single_statement(statements(cmd, "update", "updates")?)?;
    Ok((coll, Statement::parse(stmt, &vars)??.query))
}

pub async fn update(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "update", FIELDS)?;
    let coll = collection_arg(cmd.get("update"), "update")?.to_owned();
    validate_collection_name(req.db, &coll)?;
    let ordered = optional_bool(cmd, "update", "ordered")?.unwrap_or(true);
    optional_bool(cmd, "update", "bypassDocumentValidation")?;
    let vars = command_variables(cmd, "update", shared.clock.now_datetime())?;
    let raw = statements(cmd, "update", "updates")?;
    // Structural errors fail the command; invalid filters and updates are write errors.
    let limit = shared.config.profile.document_limit();
    let shard_keys = ShardKeys::of(&shared.config.profile);
    let parsed: Vec<Result<Statement>> = raw
        .into_iter()
        .map(|stmt| Statement::parse(stmt, &vars))
        .map(|stmt| {
            stmt.map(|s| {
                s.map(|s| Statement {
                    limit,
                    shard_keys,
                    ..s
                })
            })
        })
        .collect::<Result<_>>()?;
    shared.counters.count(OpKind::Update, parsed.len() as u64);

    let retryable = RetryableWrite::of(req);
    let stmt_ids = retryable::statement_ids(cmd, "update", parsed.len())?;

    let db = req.db.to_owned();
    let clock = Arc::clone(shared.engine.clock());
    let interrupt = Arc::clone(&req.interrupt);
    let (matched, modified, upserted, retried, errors) =
        crate::command::transactions::write(shared, req, durable(cmd), move |txn, now| {
            let at = clock.now_datetime();
            let mut history = History::load(txn, retryable, now)?;
            let (mut matched, mut modified) = (0usize, 0usize);
            let mut upserted: Vec<(usize, Bson)> = Vec::new();
            let mut retried = Vec::new();
            let errors = batch::run_interruptible(parsed, ordered, &interrupt, |i, s| {
                let stmt_id = stmt_ids.get(i).copied().unwrap_or_default();
                let done = match history.as_mut() {
                    None => s.run(txn, (&db, &coll), now, at, &interrupt)?,
                    Some(history) => {
                        if s.multi {
                            return Err(Error::new(
                                ErrorCode::InvalidOptions,
                                "Cannot use (or request) retryable writes with multi=true",
                            ));
                        }
                        match history.executed(stmt_id)? {
                            Some(result) => {
                                retried.push(stmt_id);
                                Done::from_record(result)
                            }
                            None => {
                                let done = s.run(txn, (&db, &coll), now, at, &interrupt)?;
                                history.record(stmt_id, done.to_record());
                                done
                            }
                        }
                    }
                };
                matched += done.matched;
                modified += done.modified;
                if let Some(id) = done.upserted {
                    upserted.push((i, id));
                }
                Ok(())
            });
            if let Some(history) = history {
                history.save(txn, now, at)?;
            }
            Ok::<_, Error>((
                matched + upserted.len(),
                modified,
                upserted,
                retried,
                errors,
            ))
        })
        .await??;

    let mut reply = doc! {"n": batch::count(matched), "nModified": batch::count(modified)};
    if !upserted.is_empty() {
        let entries: Vec<Bson> = upserted
            .into_iter()
            .map(|(i, id)| Bson::Document(doc! {"index": batch::count(i), "_id": id}))
            .collect();
        reply.insert("upserted", entries);
    }
    retryable::note_retried(&mut reply, &retried);
    Ok(batch::reply(reply, &errors?))
}

impl Done {
    /// What a retryable write records for the statement.
    fn to_record(&self) -> Document {
        let mut record = doc! {
            "n": batch::count(self.matched),
            "nModified": batch::count(self.modified),
        };
        if let Some(id) = &self.upserted {
            record.insert("upserted", id.clone());
        }
        record
    }

    /// The statement's outcome as recorded when it first ran.
    fn from_record(record: &Document) -> Done {
        let count = |field: &str| match record.get(field) {
            Some(Bson::Int32(n)) => usize::try_from(*n).unwrap_or(0),
            Some(Bson::Int64(n)) => usize::try_from(*n).unwrap_or(0),
            _ => 0,
        };
        Done {
            matched: count("n"),
            modified: count("nModified"),
            upserted: record.get("upserted").cloned(),
        }
    }
}

/// A statement's fields, type-checked but not yet compiled.
struct RawStatement<'a> {
    q: &'a Document,
    u: &'a Bson,
    upsert: bool,
    multi: bool,
    filters: Option<Vec<Document>>,
    hint: Option<Bson>,
    collation: Option<&'a Document>,
}

impl RawStatement<'_> {
    fn compile(self, vars: &Variables) -> Result<Statement> {
        let collation = collation_of(self.collation)?;
        let compares_strings = update_compares_strings(self.u, self.filters.as_deref());
        let update = parse_update(self.u, vars)?;
        if self.multi && update.is_replacement() {
            return Err(Error::failed_to_parse(
                "multi update is not supported for replacement-style update",
            ));
        }
        let query = selection(
            self.q,
            Document::new(),
            self.hint.as_ref(),
            !self.multi,
            collation,
            vars,
        )?;
        let array_filters =
            ArrayFilters::compile(self.filters.as_deref().unwrap_or_default(), &update)?;
        Ok(Statement {
            query,
            update,
            array_filters,
            upsert: self.upsert,
            multi: self.multi,
            compares_strings,
            limit: DocumentLimit::default(),
            shard_keys: ShardKeys::default(),
        })
    }
}

impl Statement {
    /// The outer `Result` is the command's (structure); the inner one the statement's.
    fn parse(stmt: &Document, vars: &Variables) -> Result<Result<Statement>> {
        check_statement_fields(stmt, PREFIX, STATEMENT_FIELDS)?;
        let collation = optional_doc(stmt, PREFIX, "collation")?;
        // `c` (a pipeline update's constants) and `upsertSupplied` (the upserted document given
        // in `c.new`, which only a router sends) would change what the statement does.
        if optional_doc(stmt, PREFIX, "c")?.is_some_and(|c| !c.is_empty()) {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                "an update statement's constants ('c') are not supported by mayfly",
            ));
        }
        if optional_bool(stmt, PREFIX, "upsertSupplied")? == Some(true) {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                "an update statement's 'upsertSupplied' is not supported by mayfly",
            ));
        }
        let raw = RawStatement {
            q: required_doc(stmt, PREFIX, "q")?,
            u: stmt.get("u").ok_or_else(|| missing(PREFIX, "u"))?,
            upsert: optional_bool(stmt, PREFIX, "upsert")?.unwrap_or(false),
            multi: optional_bool(stmt, PREFIX, "multi")?.unwrap_or(false),
            filters: array_filter_docs(stmt, PREFIX)?,
            hint: hint_arg(stmt)?,
            collation,
        };
        Ok(raw.compile(vars))
    }

    /// Runs the statement inside the batch's writer job. Every matched document is updated in
    /// memory first, so an update error (14, 66, ...) leaves all of them untouched; only a
    /// storage-level refusal (a duplicate key) can stop a multi-update part way, as in mongod.
    fn run(
        &self,
        txn: &mut Txn<'_>,
        target: (&str, &str),
        now: i64,
        at: DateTime,
        interrupt: &Arc<Interrupt>,
    ) -> Result<Done> {
        let (db, coll) = target;
        let meta = collection::existing_collection(txn, db, coll);
        if let (Some(meta), true) = (&meta, self.compares_strings) {
            refuse_collated_update(meta, &self.query)?;
        }
        let shard_key = meta
            .as_ref()
            .and_then(|m| self.shard_keys.key(m.shard_key()));
        if let Some(key) = shard_key.as_ref().filter(|_| !self.multi || self.upsert) {
            key.check_target(&self.query.filter_doc)?;
        }
        let matched = match &meta {
            Some(meta) => targets(txn, meta, &self.query, now, interrupt)?,
            None => Vec::new(),
        };
        let Some(meta) = meta.filter(|_| !matched.is_empty()) else {
            return self.upsert_if_asked(txn, db, coll, now, at, shard_key.as_ref());
        };
        let mut changes = Vec::new();
        for old in &matched {
            if let Some(new) = apply_update(
                old,
                &self.update,
                &self.array_filters,
                &self.query.filter,
                (at, self.limit),
            )? {
                if let Some(key) = &shard_key {
                    key.check_unchanged(&old.doc, &new)?;
                }
                changes.push((old, new));
            }
        }
        for (old, new) in &changes {
            store_change(txn, &meta, old, new, &self.update, now)?;
        }
        Ok(Done {
            matched: matched.len(),
            modified: changes.len(),
            upserted: None,
        })
    }

    fn upsert_if_asked(
        &self,
        txn: &mut Txn<'_>,
        db: &str,
        coll: &str,
        now: i64,
        at: DateTime,
        shard_key: Option<&ShardKey>,
    ) -> Result<Done> {
        if !self.upsert {
            return Ok(Done::default());
        }
        let doc = upsert_document(&self.query, &self.update, &self.array_filters, at)?;
        self.limit.check_document(&doc)?;
        if let Some(key) = shard_key {
            key.check_document(&doc)?;
        }
        let (meta, _) = ddl::ensure_collection(txn, db, coll)?;
        collection::insert(txn, &meta, &doc, now)?;
        Ok(Done {
            matched: 0,
            modified: 0,
            upserted: Some(doc.get("_id").cloned().unwrap_or(Bson::Null)),
        })
    }
}
