//! `delete`: a batch of `{q, limit: 0 | 1, hint, collation}` statements, ordered or not,
//! replying `{n, [writeErrors], ok}`.

use super::command_variables;
use super::{
    check_statement_fields, collation_of, hint_arg, missing, required_doc, selection, statements,
    targets,
};
use crate::command::args::{check_fields, durable, optional_bool, optional_doc, wrong_type};
use crate::command::batch;
use crate::command::retryable::{self, History, RetryableWrite};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name};
use crate::engine::exec::ReadRequest;
use crate::engine::{documents::collection, Interrupt, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::query::expr::Variables;
use crate::status::OpKind;
use bson::{doc, Bson, DateTime, Document};
use std::sync::Arc;

const FIELDS: &[&str] = &[
    "deletes",
    "ordered",
    "bypassDocumentValidation",
    "let",
    "stmtId",
    "stmtIds",
];
const PREFIX: &str = "delete.deletes";
const STATEMENT_FIELDS: &[&str] = &["q", "limit", "hint", "collation", "sampleId"];

/// One delete statement, parsed.
struct Statement {
    /// With a limit of one when only the first match is deleted (`limit: 1`).
    query: ReadRequest,
    /// The Cosmos profile's shard-key rules.
    shard_keys: ShardKeys,
}

/// The collection and selection of a delete's one statement, for explain.
pub(super) fn explained(db: &str, cmd: &Document, now: DateTime) -> Result<(String, ReadRequest)> {
    check_fields(cmd, "delete", FIELDS)?;
    let coll = collection_arg(cmd.get("delete"), "delete")?.to_owned();
    validate_collection_name(db, &coll)?;
    let vars = command_variables(cmd, "delete", now)?;
    let stmt = super::single_statement(statements(cmd, "delete", "deletes")?)?;
    Ok((coll, Statement::parse(stmt, &vars)??.query))
}

pub async fn delete(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "delete", FIELDS)?;
    let coll = collection_arg(cmd.get("delete"), "delete")?.to_owned();
    validate_collection_name(req.db, &coll)?;
    let ordered = optional_bool(cmd, "delete", "ordered")?.unwrap_or(true);
    optional_bool(cmd, "delete", "bypassDocumentValidation")?;
    let vars = command_variables(cmd, "delete", shared.clock.now_datetime())?;
    let raw = statements(cmd, "delete", "deletes")?;
    let shard_keys = ShardKeys::of(&shared.config.profile);
    let parsed: Vec<Result<Statement>> = raw
        .into_iter()
        .map(|stmt| Statement::parse(stmt, &vars))
        .map(|stmt| stmt.map(|s| s.map(|s| Statement { shard_keys, ..s })))
        .collect::<Result<_>>()?;
    shared.counters.count(OpKind::Delete, parsed.len() as u64);

    let retryable = RetryableWrite::of(req);
    let stmt_ids = retryable::statement_ids(cmd, "delete", parsed.len())?;

    let db = req.db.to_owned();
    let interrupt = Arc::clone(&req.interrupt);
    let clock = Arc::clone(shared.engine.clock());
    let (n, retried, errors) =
        crate::command::transactions::write(shared, req, durable(cmd), move |txn, now| {
            let mut history = History::load(txn, retryable, now)?;
            let mut n = 0usize;
            let mut retried = Vec::new();
            let errors = batch::run_interruptible(parsed, ordered, &interrupt, |i, s| {
                let stmt_id = stmt_ids.get(i).copied().unwrap_or_default();
                let Some(history) = history.as_mut() else {
                    n += s.run(txn, (&db, &coll), now, &interrupt)?;
                    return Ok(());
                };
                if s.query.limit != Some(1) {
                    return Err(Error::new(
                        ErrorCode::InvalidOptions,
                        "Cannot use (or request) retryable writes with limit=0",
                    ));
                }
                if let Some(result) = history.executed(stmt_id)? {
                    retried.push(stmt_id);
                    n += usize::try_from(result.get_i32("n").unwrap_or(0)).unwrap_or(0);
                    return Ok(());
                }
                let deleted = s.run(txn, (&db, &coll), now, &interrupt)?;
                history.record(stmt_id, doc! {"n": batch::count(deleted)});
                n += deleted;
                Ok(())
            });
            if let Some(history) = history {
                history.save(txn, now, clock.now_datetime())?;
            }
            Ok::<_, Error>((n, retried, errors))
        })
        .await??;

    let mut reply = doc! {"n": batch::count(n)};
    retryable::note_retried(&mut reply, &retried);
    Ok(batch::reply(reply, &errors?))
}

impl Statement {
    /// The outer `Result` is the command's (structure); the inner one the statement's.
    fn parse(stmt: &Document, vars: &Variables) -> Result<Result<Statement>> {
        check_statement_fields(stmt, PREFIX, STATEMENT_FIELDS)?;
        let q = required_doc(stmt, PREFIX, "q")?;
        let just_one = match stmt.get("limit") {
            None => return Err(missing(PREFIX, "limit")),
            Some(Bson::Int32(0)) | Some(Bson::Int64(0)) => false,
            Some(Bson::Int32(1)) | Some(Bson::Int64(1)) => true,
            Some(Bson::Double(l)) if *l == 0.0 || *l == 1.0 => *l == 1.0,
            Some(l @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_))) => {
                return Err(Error::failed_to_parse(format!(
                    "The limit field in delete objects must be 0 or 1. Got {}",
                    crate::query::path::render(l)
                )))
            }
            Some(other) => {
                return Err(wrong_type(
                    PREFIX,
                    "limit",
                    other,
                    "[long, int, decimal, double]",
                ))
            }
        };
        let hint = hint_arg(stmt)?;
        let collation = optional_doc(stmt, PREFIX, "collation")?;
        Ok(collation_of(collation).and_then(|collation| {
            Ok(Statement {
                query: selection(q, Document::new(), hint.as_ref(), just_one, collation, vars)?,
                shard_keys: ShardKeys::default(),
            })
        }))
    }

    /// Deletes the statement's matches; returns how many. A missing collection has none.
    fn run(
        &self,
        txn: &mut Txn<'_>,
        target: (&str, &str),
        now: i64,
        interrupt: &Arc<Interrupt>,
    ) -> Result<usize> {
        let Some(meta) = collection::existing_collection(txn, target.0, target.1) else {
            return Ok(0);
        };
        if let Some(key) = self.shard_keys.key(meta.shard_key()) {
            if self.query.limit == Some(1) {
                key.check_target(&self.query.filter_doc)?;
            }
        }
        let doomed = targets(txn, &meta, &self.query, now, interrupt)?;
        for doc in &doomed {
            collection::delete(txn, &meta, doc)?;
        }
        Ok(doomed.len())
    }
}
