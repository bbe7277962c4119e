//! `insert`: documents from the body or a kind-1 sequence (kept as bytes), ordered or not, each acknowledged
//! once durable (unless the write concern opts out). In a retryable write, a statement the
//! session already executed is counted, not inserted again. In the Cosmos profile a document
//! without its sharded collection's shard key is a write error (`profile::shard_keys`).

use super::batch;
use super::write::base_spec::{check_batch_size, WriteBase};
use crate::command::args::durable;
use crate::command::retryable::{self, History, RetryableWrite};
use crate::command::spec::Spec;
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name, CollectionMeta};
use crate::engine::documents::new_document::NewDocument;
use crate::engine::{ddl, documents::collection};
use crate::error::{Error, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::protocol::RawDocuments;
use crate::status::OpKind;
use bson::{doc, Bson, Document};
use std::sync::Arc;

/// Batches up to this many documents are prepared on the connection's own task; larger ones on
/// the blocking pool, so that a 100,000-document batch does not hold up an async worker.
const PREPARED_INLINE: usize = 8;

/// `insert`'s own fields, read in one pass by [`Spec`]: `documents` and the base fields, as
/// mongod 7.0's IDL knows them (no `let`: its `insert` has none). Owned, so that it is read
/// once, before the command runs, and shared by every step after (`ParsedCommand::Insert`).
///
/// The documents themselves are not copied into it: they stay in the shared body (or the
/// document sequence's bytes), which the preparation takes to the blocking pool as they are,
/// since a copy of a 48 MB batch would double the memory an insert holds.
#[derive(Debug)]
pub struct InsertSpec {
    /// The first field, judged before any other (`collection_arg`).
    collection: String,
    base: WriteBase,
    /// How many documents the body's `documents` holds, each checked to be a document;
    /// `None` when they came as a document sequence.
    documents: Option<usize>,
}

impl InsertSpec {
    /// Reads `cmd`: the first field's error first, then every other field, the first bad one
    /// in the document's order being the error. `documents` is required unless the documents
    /// came as a document sequence (`in_sequence`).
    pub fn read(cmd: &Document, in_sequence: bool) -> Result<InsertSpec> {
        let collection = collection_arg(cmd.get("insert"), "insert")?.to_owned();
        let mut spec = Spec::new("insert", cmd);
        let base = WriteBase::read(&mut spec);
        let documents = spec.documents("documents").map(|documents| documents.len());
        if documents.is_none() && !in_sequence {
            spec.required("documents");
        }
        spec.finish()?;
        Ok(InsertSpec {
            collection,
            base,
            documents,
        })
    }
}

pub async fn insert(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let spec = req.parsed.insert()?;
    let coll = spec.collection.clone();
    validate_collection_name(req.db, &coll)?;
    let ordered = spec.base.ordered;
    // The documents of a document sequence come as bytes; those of the body decoded.
    let count = match (req.documents, spec.documents) {
        (Some(raw), _) => raw.len(),
        (None, Some(documents)) => documents,
        (None, None) => 0,
    };
    check_batch_size(count)?;
    let retryable = RetryableWrite::of(req);
    let stmt_ids = spec.base.statement_ids("insert", count)?;
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
    let run = move |body: &Document, raw: Option<&RawDocuments>| -> Vec<Result<NewDocument>> {
        match raw {
            Some(raw) => raw
                .iter()
                .map(|d| sized(NewDocument::prepare_raw(d, keep)))
                .collect(),
            None => body_documents(body)
                .map(|d| sized(NewDocument::prepare(d, keep)))
                .collect(),
        }
    };
    if count <= PREPARED_INLINE {
        return Ok(run(req.body, req.documents.map(|raw| &**raw)));
    }
    let body = Arc::clone(req.body);
    let raw = req.documents.cloned();
    tokio::task::spawn_blocking(move || run(&body, raw.as_deref()))
        .await
        .map_err(|e| Error::internal(format!("preparing an insert failed: {e}")))
}

/// The body's `documents`, each of which [`InsertSpec::read`] found to be a document: taken
/// from the shared body, which the spec does not copy.
fn body_documents(body: &Document) -> impl Iterator<Item = &Document> {
    body.get_array("documents")
        .into_iter()
        .flatten()
        .filter_map(Bson::as_document)
}

/// Whether the writer will need the inserted documents decoded: for the operation log, or for
/// a secondary index's keys. Should the collection get a secondary index meanwhile, the writer
/// decodes them again from their bodies.
fn keeps_documents(shared: &Shared, existing: Option<&CollectionMeta>) -> bool {
    shared.engine.oplog().is_enabled()
        || existing.is_some_and(|meta| meta.stored_indexes().next().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn the_fields_are_read_typed() {
        let body = doc! {"insert": "c", "documents": [{"_id": 1}, {}], "ordered": false,
        "bypassDocumentValidation": true, "stmtIds": [4, 5], "$db": "d"};
        let spec = InsertSpec::read(&body, false).unwrap();
        assert_eq!(spec.collection, "c");
        assert!(!spec.base.ordered);
        assert_eq!(spec.documents, Some(2));
        assert_eq!(spec.base.statement_ids("insert", 2).unwrap(), [4, 5]);
        // A document sequence carries the documents: the body has none.
        let bare = doc! {"insert": "c"};
        let sequence = InsertSpec::read(&bare, true).unwrap();
        assert!(sequence.base.ordered && sequence.documents.is_none());
        let docs: Vec<&Document> = body_documents(&body).collect();
        assert_eq!(docs, [&doc! {"_id": 1}, &doc! {}]);
    }

    #[test]
    fn the_first_bad_field_is_the_error() {
        let cases = [
            (
                doc! {"insert": 1, "bogus": 1},
                ErrorCode::InvalidNamespace,
                "collection name has invalid type int",
            ),
            (
                doc! {"insert": "c"},
                ErrorCode::Location40414,
                "BSON field 'insert.documents' is missing but a required field",
            ),
            (
                doc! {"insert": "c", "documents": [{}], "let": {}},
                ErrorCode::IDLUnknownField,
                "BSON field 'insert.let' is an unknown field.",
            ),
            (
                doc! {"insert": "c", "documents": {}},
                ErrorCode::TypeMismatch,
                "BSON field 'insert.documents' is the wrong type 'object', expected type 'array'",
            ),
            (
                doc! {"insert": "c", "documents": [{}, 1], "bogus": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'insert.documents.1' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"insert": "c", "ordered": "yes", "documents": [1]},
                ErrorCode::TypeMismatch,
                "BSON field 'insert.ordered' is the wrong type 'string', expected type 'bool'",
            ),
            (
                doc! {"insert": "c", "bogus": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'insert.bogus' is an unknown field.",
            ),
            (
                doc! {"insert": "c", "documents": [{}], "stmtId": 1.5},
                ErrorCode::TypeMismatch,
                "BSON field 'insert.stmtId' is the wrong type 'double', expected type 'int'",
            ),
        ];
        for (body, code, message) in cases {
            let err = InsertSpec::read(&body, false).err().unwrap();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }
}
