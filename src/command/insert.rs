//! `insert`: documents from the body or a kind-1 sequence, ordered or not, each acknowledged
//! once durable (unless the write concern opts out). In a retryable write, a statement the
//! session already executed is counted, not inserted again.

use super::args::{check_fields, documents_of, durable, optional_bool};
use super::retryable::{self, History, RetryableWrite};
use super::{batch, Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name};
use crate::engine::new_document::NewDocument;
use crate::engine::{collection, ddl};
use crate::error::{Error, Result};
use crate::status::OpKind;
use bson::{doc, Document};
use std::sync::Arc;

/// Batches up to this many documents are prepared on the connection's own task; larger ones on
/// the blocking pool, so that a 100,000-document batch does not hold up an async worker.
const PREPARED_INLINE: usize = 8;

const FIELDS: &[&str] = &[
    "documents",
    "ordered",
    "bypassDocumentValidation",
    "let",
    "stmtId",
    "stmtIds",
];

pub async fn insert(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "insert", FIELDS)?;
    let coll = collection_arg(cmd.get("insert"), "insert")?.to_owned();
    validate_collection_name(req.db, &coll)?;
    let ordered = optional_bool(cmd, "insert", "ordered")?.unwrap_or(true);
    let docs = documents_of(cmd, "insert", "documents")?;
    if docs.is_empty() || docs.len() > crate::protocol::MAX_WRITE_BATCH_SIZE as usize {
        return Err(Error::write_batch_size(docs.len()));
    }
    let retryable = RetryableWrite::of(req);
    let stmt_ids = retryable::statement_ids(cmd, "insert", docs.len())?;
    shared.counters.count(OpKind::Insert, docs.len() as u64);
    // Preparing happens before the writer's job, so that the writer thread only checks
    // uniqueness and applies; errors keep their index.
    let prepared = prepare(shared, req, &coll, docs.len()).await?;
    let db = req.db.to_owned();
    let interrupt = Arc::clone(&req.interrupt);
    let clock = Arc::clone(shared.engine.clock());
    let (n, retried, errors) =
        super::transactions::write(shared, req, durable(cmd), move |txn, now| {
            let mut history = History::load(txn, retryable, now)?;
            let meta = match ddl::ensure_collection(txn, &db, &coll) {
                Ok((meta, _)) => meta,
                Err(e) => return Ok((0, Vec::new(), Ok(vec![(0, e)]))),
            };
            let mut n = 0usize;
            let mut retried = Vec::new();
            let errors = batch::run_interruptible(prepared, ordered, &interrupt, |i, d| {
                let stmt_id = stmt_ids.get(i).copied().unwrap_or_default();
                if let Some(history) = &mut history {
                    if history.executed(stmt_id)?.is_some() {
                        retried.push(stmt_id);
                        n += 1;
                        return Ok(());
                    }
                    collection::insert_new(txn, &meta, d, now)?;
                    history.record(stmt_id, Document::new());
                } else {
                    collection::insert_new(txn, &meta, d, now)?;
                }
                n += 1;
                Ok(())
            });
            if let Some(history) = history {
                history.save(txn, now, clock.now_datetime())?;
            }
            Ok::<_, Error>((n, retried, errors))
        })
        .await??;
    let mut counts = doc! {"n": batch::count(n)};
    retryable::note_retried(&mut counts, &retried);
    Ok(batch::reply(counts, &errors?))
}

/// Prepares the command's documents for the writer ([`NewDocument::prepare`]), each with its
/// own outcome.
async fn prepare(
    shared: &Shared,
    req: &Request<'_>,
    coll: &str,
    count: usize,
) -> Result<Vec<Result<NewDocument>>> {
    let keep = keeps_documents(shared, req.db, coll);
    let run = move |body: &Document| -> Result<Vec<Result<NewDocument>>> {
        Ok(documents_of(body, "insert", "documents")?
            .into_iter()
            .map(|d| NewDocument::prepare(d, keep))
            .collect())
    };
    if count <= PREPARED_INLINE {
        return run(req.body);
    }
    let body = Arc::clone(req.body);
    tokio::task::spawn_blocking(move || run(&body))
        .await
        .map_err(|e| Error::internal(format!("preparing an insert failed: {e}")))?
}

/// Whether the writer will need the inserted documents decoded: for the operation log, or for
/// a secondary index's keys. Should the collection get a secondary index meanwhile, the writer
/// decodes them again from their bodies.
fn keeps_documents(shared: &Shared, db: &str, coll: &str) -> bool {
    shared.engine.oplog().is_enabled()
        || shared
            .engine
            .catalog()
            .get(db, coll)
            .is_some_and(|meta| meta.stored_indexes().next().is_some())
}
