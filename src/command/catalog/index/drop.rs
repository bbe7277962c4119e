//! `dropIndexes`: by name, names, key pattern or `*`, all or nothing; never `_id_`.

use super::spec::{count, is_id_key, ID_INDEX_NAME};
use crate::command::args::{check_fields, durable, wrong_type};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, CollectionMeta};
use crate::engine::ddl;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::compare_documents;
use crate::query::path::render_document;
use bson::{doc, Bson, Document};
use std::cmp::Ordering;

pub async fn drop_indexes(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "dropIndexes", &["index"])?;
    let coll = collection_arg(cmd.get("dropIndexes"), "dropIndexes")?.to_owned();
    let target = match cmd.get("index") {
        None => {
            return Err(Error::new(
                ErrorCode::Location40414,
                "BSON field 'dropIndexes.index' is missing but a required field",
            ))
        }
        Some(Bson::String(s)) if s == "*" => Target::All,
        Some(Bson::String(s)) => Target::Names(vec![s.clone()]),
        Some(Bson::Document(key)) => Target::Key(key.clone()),
        Some(Bson::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Bson::String(s) => names.push(s.clone()),
                    other => {
                        return Err(wrong_type(
                            "dropIndexes",
                            &format!("index.{i}"),
                            other,
                            "string",
                        ))
                    }
                }
            }
            Target::Names(names)
        }
        Some(other) => {
            return Err(wrong_type(
                "dropIndexes",
                "index",
                other,
                "[string, object, array]",
            ));
        }
    };
    let db = req.db.to_owned();
    let all = target == Target::All;
    let was = shared
        .engine
        .write(durable(cmd), move |txn, _now| -> Result<usize> {
            let Some(meta) = ddl::collection(txn, &db, &coll) else {
                return Err(Error::new(
                    ErrorCode::NamespaceNotFound,
                    format!("ns not found {db}.{coll}"),
                ));
            };
            let was = 1 + meta.indexes.len();
            // Every name is resolved before anything is dropped: all or nothing. An index
            // still being built is dropped too, which ends its build (IndexBuildAborted).
            let ids: Vec<u64> = doomed(&meta, &target)?
                .iter()
                .filter_map(|name| meta.index(name).map(|i| i.id))
                .collect();
            for id in ids {
                // TTL-9: dropping the `_ts` TTL index turns the collection TTL off.
                if let Some(index) = ddl::remove_index(txn, meta.id, id)? {
                    ddl::log_index_dropped(txn, &meta, &index.name)?;
                    if index.is_stored() {
                        // Deleted by the sweeper, so a big index holds up no one.
                        ddl::forget_index_entries(txn, meta.id, index.id);
                    }
                }
            }
            Ok(was)
        })
        .await??;
    let mut reply = doc! {"nIndexesWas": count(was)};
    if all {
        reply.insert("msg", "non-_id indexes dropped for collection");
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

#[derive(Debug, PartialEq)]
enum Target {
    All,
    Names(Vec<String>),
    Key(Document),
}

fn doomed(meta: &CollectionMeta, target: &Target) -> Result<Vec<String>> {
    let cannot_drop_id = || Error::new(ErrorCode::InvalidOptions, "cannot drop _id index");
    match target {
        Target::All => Ok(meta.indexes.iter().map(|i| i.name.clone()).collect()),
        Target::Names(names) => {
            for name in names {
                if name == ID_INDEX_NAME {
                    return Err(cannot_drop_id());
                }
                if meta.index(name).is_none() {
                    return Err(Error::new(
                        ErrorCode::IndexNotFound,
                        format!("index not found with name [{name}]"),
                    ));
                }
            }
            Ok(names.clone())
        }
        Target::Key(key) => {
            if is_id_key(key) {
                return Err(cannot_drop_id());
            }
            meta.indexes
                .iter()
                .find(|i| compare_documents(&i.key, key) == Ordering::Equal)
                .map(|i| vec![i.name.clone()])
                .ok_or_else(|| {
                    Error::new(
                        ErrorCode::IndexNotFound,
                        format!("can't find index with key: {}", render_document(key)),
                    )
                })
        }
    }
}
