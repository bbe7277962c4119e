//! Retryable writes: a write command sent with `lsid` and `txnNumber` (on a replica set member)
//! applies each of its statements at most once. What a session executed under its latest
//! `txnNumber` is kept in a document of the real collection `config.transactions`, keyed as on
//! mongod by the session id `{id, uid}`:
//!
//! `{_id: {id, uid}, txnNum, lastWriteDate, statements: {"<stmtId>": <result>, ...}}`
//!
//! The document is written by the command's own writer job, in the same commit as the
//! statements it records, so a write and its record are durable together and a retry finds the
//! record after a restart too. mongod keeps the per-statement results in its oplog; here they
//! sit in the record itself (users can read it as on mongod, with that extra field) because the
//! oplog is not required for retryable writes to work. A record holds what a retry must return:
//! nothing for an insert, `n` for a delete, `{n, nModified, upserted}` for an update, and
//! `{lastErrorObject, value}` for a findAndModify. A failed statement is not recorded, so a retry
//! runs it again. The record of a session that is no longer in use is removed 30 minutes after
//! its last write ([`reap_records`], called by the session reaper), as mongod's transaction
//! reaper does.
//!
//! Owns: statement ids, the record's format, and the `txnNumber` rules (225 for an older one).
//! Does not own which commands are retryable (`operation_session`) nor the statements
//! themselves (`insert`, `write/`).

use super::super::Request;
use super::session_id::SessionId;
use crate::engine::{ddl, documents::collection, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::MAX_BSON_OBJECT_SIZE;
use bson::{doc, Bson, DateTime, Document};

const DB: &str = "config";
const COLLECTION: &str = "transactions";
/// Room left under the document size limit for the record's own fields.
const RECORD_OVERHEAD: usize = 16 * 1024;

/// A retryable write's identity: its session and transaction number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryableWrite {
    pub session: SessionId,
    pub txn_number: i64,
}

impl RetryableWrite {
    /// The retryable write `req` is, if it is one (`operation_session` accepted its fields);
    /// a transaction's statement is not one (the transaction commits or not as a whole).
    pub fn of(req: &Request<'_>) -> Option<RetryableWrite> {
        if req.session.transaction.is_some() {
            return None;
        }
        Some(RetryableWrite {
            session: req.session.session?,
            txn_number: req.session.txn_number?,
        })
    }
}

/// The statement ids of a batch of `n`: `stmtIds` when given (one each), else `stmtId` plus
/// the statement's index, else the index (mongod's `getStmtIdForWriteAt`). The command's spec
/// has read both fields' types.
pub fn statement_ids(
    stmt_id: Option<i32>,
    stmt_ids: Option<&[Bson]>,
    command: &str,
    n: usize,
) -> Result<Vec<i32>> {
    if let Some(ids) = stmt_ids {
        if ids.len() != n {
            return Err(Error::new(
                ErrorCode::InvalidLength,
                "Number of statement ids must match the number of batch entries",
            ));
        }
        return ids
            .iter()
            .map(|id| match id {
                Bson::Int32(id) => Ok(*id),
                other => Err(super::super::args::wrong_type(
                    command, "stmtIds", other, "int",
                )),
            })
            .collect();
    }
    let first = stmt_id.unwrap_or(0);
    Ok((0..n)
        .map(|i| first.saturating_add(i32::try_from(i).unwrap_or(i32::MAX)))
        .collect())
}

/// What a session executed under a retryable write's `txnNumber`, read inside the writer job
/// and written back, with this command's new statements, by [`History::save`].
pub struct History {
    write: RetryableWrite,
    statements: Document,
    changed: bool,
}

impl History {
    /// The session's history as of this point in the group; `None` when `write` is `None`.
    /// A record of a newer `txnNumber` refuses the write (225 TransactionTooOld); an older one
    /// is forgotten, the new number starting fresh.
    pub fn load(txn: &Txn<'_>, write: Option<RetryableWrite>, now: i64) -> Result<Option<History>> {
        let Some(write) = write else {
            return Ok(None);
        };
        let mut statements = Document::new();
        if let Some(record) = stored(txn, &write.session, now)? {
            let stored_txn = record.doc.get_i64("txnNum").unwrap_or(i64::MIN);
            if stored_txn > write.txn_number {
                return Err(Error::new(
                    ErrorCode::TransactionTooOld,
                    format!(
                        "Retryable write with txnNumber {} is prohibited on session {} because \
                         a newer retryable write with txnNumber {stored_txn} has already started \
                         on this session.",
                        write.txn_number, write.session
                    ),
                ));
            }
            if stored_txn == write.txn_number {
                statements = record
                    .doc
                    .get_document("statements")
                    .cloned()
                    .unwrap_or_default();
            }
        }
        Ok(Some(History {
            write,
            statements,
            changed: false,
        }))
    }

    /// The recorded result of statement `stmt_id`, if it was executed. A result whose
    /// document could not be kept (it would have passed the size limit) cannot be returned
    /// again: 217 IncompleteTransactionHistory, as mongod when an image is gone.
    pub fn executed(&self, stmt_id: i32) -> Result<Option<&Document>> {
        match self.statements.get_document(stmt_id.to_string()) {
            Ok(result) if result.get_bool("incomplete").unwrap_or(false) => Err(Error::new(
                ErrorCode::IncompleteTransactionHistory,
                format!(
                    "Incomplete history detected for transaction {} on session {}: the \
                     document statement {stmt_id} returned is not kept",
                    self.write.txn_number, self.write.session
                ),
            )),
            Ok(result) => Ok(Some(result)),
            Err(_) => Ok(None),
        }
    }

    /// Records that statement `stmt_id` executed with `result`.
    pub fn record(&mut self, stmt_id: i32, result: Document) {
        self.statements.insert(stmt_id.to_string(), result);
        self.changed = true;
    }

    /// Writes the session's record when this command executed anything, in the job's
    /// transaction (so in the commit of the statements themselves).
    pub fn save(self, txn: &mut Txn<'_>, now: i64, at: DateTime) -> Result<()> {
        if !self.changed {
            return Ok(());
        }
        let id = Bson::Document(self.write.session.to_document());
        let mut record = doc! {
            "_id": id.clone(),
            "txnNum": self.write.txn_number,
            "lastWriteDate": at,
            "statements": self.statements,
        };
        if encoded_len(&record)? > MAX_BSON_OBJECT_SIZE - RECORD_OVERHEAD {
            shrink(&mut record);
        }
        let (meta, _) = ddl::ensure_collection(txn, DB, COLLECTION)?;
        match collection::get_by_id(txn, &meta, &id, now)? {
            Some(old) => collection::replace(txn, &meta, &old, &record, now),
            None => collection::insert(txn, &meta, &record, now),
        }
    }
}

/// How long a session's record outlives its last write when the session is not in use
/// (mongod's `TransactionRecordMinimumLifetimeMinutes`).
pub const RECORD_LIFETIME_MILLIS: i64 = 30 * 60 * 1000;
/// Records removed at most per reaper pass.
const REAP_BATCH: usize = 10_000;

/// Removes the records of sessions not in use (`live` says which are) whose last write is
/// older than [`RECORD_LIFETIME_MILLIS`]: the session expired, and so did its retryable
/// writes, as mongod's transaction reaper does. Runs inside a writer job; returns how many.
pub fn reap_records(
    txn: &mut Txn<'_>,
    now: i64,
    now_millis: i64,
    live: &dyn Fn(&Document) -> bool,
) -> Result<usize> {
    let Some(meta) = ddl::collection(txn, DB, COLLECTION) else {
        return Ok(0);
    };
    let prefix = crate::storage::keys::collection_prefix(meta.id);
    let mut doomed = Vec::new();
    for record in collection::scan(txn, &meta, &prefix, now) {
        let record = record?;
        let last_write = record
            .doc
            .get_datetime("lastWriteDate")
            .map(|d| d.timestamp_millis())
            .unwrap_or(i64::MIN);
        let in_use = record.doc.get_document("_id").is_ok_and(live);
        if !in_use && now_millis - last_write >= RECORD_LIFETIME_MILLIS {
            doomed.push(record);
            if doomed.len() >= REAP_BATCH {
                break;
            }
        }
    }
    for record in &doomed {
        collection::delete(txn, &meta, record)?;
    }
    Ok(doomed.len())
}

/// Adds `retriedStmtIds` to a batch reply when some statements had already been executed.
pub fn note_retried(reply: &mut Document, retried: &[i32]) {
    if !retried.is_empty() {
        reply.insert("retriedStmtIds", retried.to_vec());
    }
}

fn stored(
    txn: &Txn<'_>,
    session: &SessionId,
    now: i64,
) -> Result<Option<crate::engine::StoredDoc>> {
    let Some(meta) = ddl::collection(txn, DB, COLLECTION) else {
        return Ok(None);
    };
    collection::get_by_id(txn, &meta, &Bson::Document(session.to_document()), now)
}

fn encoded_len(doc: &Document) -> Result<usize> {
    let mut bytes = Vec::new();
    doc.to_writer(&mut bytes)
        .map_err(|e| Error::internal(format!("cannot encode a retryable write record: {e}")))?;
    Ok(bytes.len())
}

/// Drops the returned documents (findAndModify's `value`) from a record too large to store,
/// marking those statements incomplete.
fn shrink(record: &mut Document) {
    if let Ok(statements) = record.get_document_mut("statements") {
        for (_, result) in statements.iter_mut() {
            if let Bson::Document(result) = result {
                if result.contains_key("value") {
                    result.insert("value", Bson::Null);
                    result.insert("incomplete", true);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_ids_come_from_stmt_ids_or_count_from_stmt_id() {
        let ids = [Bson::Int32(7), Bson::Int32(3)];
        type Case<'a> = (Option<i32>, Option<&'a [Bson]>, usize, Vec<i32>);
        let cases: Vec<Case<'_>> = vec![
            (None, None, 3, vec![0, 1, 2]),
            (Some(5), None, 2, vec![5, 6]),
            (None, Some(&ids), 2, vec![7, 3]),
            (Some(5), Some(&ids), 2, vec![7, 3]),
        ];
        for (stmt_id, stmt_ids, n, expected) in cases {
            let got = statement_ids(stmt_id, stmt_ids, "insert", n).unwrap();
            assert_eq!(got, expected, "{stmt_id:?} {stmt_ids:?}");
        }
        let err = statement_ids(None, Some(&ids), "insert", 3).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidLength);
        let err = statement_ids(None, Some(&[Bson::String("x".into())]), "insert", 1).unwrap_err();
        assert_eq!(err.code, ErrorCode::TypeMismatch);
    }

    #[test]
    fn an_oversized_record_keeps_its_statements_but_not_their_documents() {
        let mut record =
            doc! {"statements": {"0": {"lastErrorObject": {"n": 1}, "value": {"a": 1}}}};
        shrink(&mut record);
        let result = record
            .get_document("statements")
            .and_then(|s| s.get_document("0"))
            .unwrap();
        assert_eq!(result.get("value"), Some(&Bson::Null));
        assert_eq!(result.get_bool("incomplete"), Ok(true));
    }
}
