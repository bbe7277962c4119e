//! `insert`: documents from the body or a kind-1 sequence (kept as bytes), ordered or not, each acknowledged
//! once durable (unless the write concern opts out). In a retryable write, a statement the
//! session already executed is counted, not inserted again. In the Cosmos profile a document
//! without its sharded collection's shard key is a write error (`profile::shard_keys`).

use super::batch;
use crate::command::args::{check_fields, documents_of, durable, optional_bool};
use crate::command::retryable::{self, History, RetryableWrite};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name, CollectionMeta};
use crate::engine::documents::new_document::NewDocument;
use crate::engine::{ddl, documents::collection};
use crate::error::{Error, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::protocol::RawDocuments;
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
    // The documents of a document sequence come as bytes; those of the body decoded.
    let count = match req.documents {
        Some(raw) => raw.len(),
        None => documents_of(cmd, "insert", "documents")?.len(),
    };
    if count == 0 || count > crate::protocol::MAX_WRITE_BATCH_SIZE as usize {
        return Err(Error::write_batch_size(count));
    }
    let retryable = RetryableWrite::of(req);
    let stmt_ids = retryable::statement_ids(cmd, "insert", count)?;
    shared.counters.count(OpKind::Insert, count as u64);
    // Preparing happens before the writer's job, so that the writer thread only checks
    // uniqueness and applies; errors keep their index.
    let mut prepared = prepare(shared, req, &coll, count).await?;
    let db = req.db.to_owned();
    let interrupt = Arc::clone(&req.interrupt);
    let clock = Arc::clone(shared.engine.clock());
    let shard_keys = ShardKeys::of(&shared.config.profile);
    let (n, retried, errors) =
        crate::command::transactions::write(shared, req, durable(cmd), move |txn, now| {
            let mut history = History::load(txn, retryable, now)?;
            let meta = match ddl::ensure_collection(txn, &db, &coll) {
                Ok((meta, _)) => meta,
                Err(e) => return Ok((0, Vec::new(), Ok(vec![(0, e)]))),
            };
            let mut n = 0usize;
            let mut retried = Vec::new();
            let shard_key = shard_keys.key(meta.shard_key());
            collection::expect_inserts(txn, prepared.len());
            collection::probe_ids(txn, &meta, prepared.iter_mut().flatten())?;
            let errors = batch::run_interruptible(prepared, ordered, &interrupt, |i, d| {
                if let Some(key) = &shard_key {
                    key.check_document(d.document()?.as_ref())?;
                }
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
    let existing = shared.engine.catalog()?.get(req.db, coll).cloned();
    let keep = keeps_documents(shared, existing.as_deref());
    let limit = shared.config.profile.document_limit();
    // Each document's key is computed here, off the writer's thread, for the collection as it
    // is now; the writer's group uses it if the collection is the same then.
    let sized = move |new: Result<NewDocument>| {
        new.and_then(|mut new| {
            limit.check(new.body_len())?;
            if let Some(meta) = &existing {
                new.key_ahead(meta);
            }
            Ok(new)
        })
    };
    let run =
        move |body: &Document, raw: Option<&RawDocuments>| -> Result<Vec<Result<NewDocument>>> {
            Ok(match raw {
                Some(raw) => raw
                    .iter()
                    .map(|d| sized(NewDocument::prepare_raw(d, keep)))
                    .collect(),
                None => documents_of(body, "insert", "documents")?
                    .into_iter()
                    .map(|d| sized(NewDocument::prepare(d, keep)))
                    .collect(),
            })
        };
    if count <= PREPARED_INLINE {
        return run(req.body, req.documents.map(|raw| &**raw));
    }
    let body = Arc::clone(req.body);
    let raw = req.documents.cloned();
    tokio::task::spawn_blocking(move || run(&body, raw.as_deref()))
        .await
        .map_err(|e| Error::internal(format!("preparing an insert failed: {e}")))?
}

/// Whether the writer will need the inserted documents decoded: for the operation log, or for
/// a secondary index's keys. Should the collection get a secondary index meanwhile, the writer
/// decodes them again from their bodies.
fn keeps_documents(shared: &Shared, existing: Option<&CollectionMeta>) -> bool {
    shared.engine.oplog().is_enabled()
        || existing.is_some_and(|meta| meta.stored_indexes().next().is_some())
}
