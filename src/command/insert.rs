//! `insert`: documents from the body or a kind-1 sequence, ordered or not, each acknowledged
//! once durable (unless the write concern opts out).

use super::args::{check_fields, documents_of, durable, optional_bool};
use super::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name};
use crate::engine::{collection, ddl};
use crate::error::{Error, Result};
use crate::status::OpKind;
use bson::{doc, Bson, Document};

const FIELDS: &[&str] = &["documents", "ordered", "bypassDocumentValidation", "let"];

pub async fn insert(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "insert", FIELDS)?;
    let coll = collection_arg(cmd.get("insert"), "insert")?.to_owned();
    validate_collection_name(req.db, &coll)?;
    let ordered = optional_bool(cmd, "insert", "ordered")?.unwrap_or(true);
    let docs = documents_of(cmd, "insert", "documents")?;
    shared.counters.count(OpKind::Insert, docs.len() as u64);
    // Preparing (adding `_id`) happens before the writer so errors keep their index.
    let prepared: Vec<Result<Document>> = docs
        .into_iter()
        .map(|d| collection::prepare_for_insert(d.clone()))
        .collect();
    let db = req.db.to_owned();
    let (n, errors) = shared
        .engine
        .write(durable(cmd), move |txn, now| {
            let mut n = 0i32;
            let mut errors: Vec<(usize, Error)> = Vec::new();
            let meta = match ddl::ensure_collection(txn, &db, &coll) {
                Ok((meta, _)) => meta,
                Err(e) => return (0, vec![(0, e)]),
            };
            for (i, doc) in prepared.into_iter().enumerate() {
                let result = doc.and_then(|d| collection::insert(txn, &meta, &d, now));
                match result {
                    Ok(()) => n += 1,
                    Err(e) => {
                        errors.push((i, e));
                        if ordered {
                            break;
                        }
                    }
                }
            }
            (n, errors)
        })
        .await?;
    Ok(write_reply(n, &errors, None))
}

/// `{n, [nModified], [writeErrors], ok: 1}`.
pub fn write_reply(n: i32, errors: &[(usize, Error)], n_modified: Option<i32>) -> Document {
    let mut reply = doc! {"n": n};
    if let Some(m) = n_modified {
        reply.insert("nModified", m);
    }
    if !errors.is_empty() {
        let entries: Vec<Bson> = errors
            .iter()
            .map(|(i, e)| Bson::Document(e.to_write_error(*i)))
            .collect();
        reply.insert("writeErrors", entries);
    }
    reply.insert("ok", 1.0);
    reply
}
