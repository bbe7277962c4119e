//! `$out`: the pipeline's output replaces a collection, atomically. As mongod does, the
//! documents go into a temporary collection (`tmp.agg_out.<n>`) created with the target's
//! options and indexes, in batches through the writer; one final writer job renames it over the
//! target. A failure (a duplicate `_id`, an interrupted operation) drops the temporary
//! collection and leaves the target as it was. Documents written get `_ts` = the time of their
//! batch, like any insert.

use super::{Env, Rows};
use crate::engine::catalog::validate_collection_name;
use crate::engine::{ddl, documents::collection};
use crate::error::{Error, ErrorCode, Result};
use crate::query::path;
use crate::query::size::document_size;
use bson::{Bson, Document};
use std::sync::atomic::{AtomicU64, Ordering};

/// Documents per writer job.
const BATCH_DOCS: usize = 1_000;
/// Bytes per writer job.
const BATCH_BYTES: usize = 8 * 1024 * 1024;

/// Distinguishes concurrent `$out`s' temporary collections within this process.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(1);

pub struct Out {
    /// `None`: the pipeline's own database.
    db: Option<String>,
    coll: String,
}

impl Out {
    pub fn parse(arg: &Bson) -> Result<Out> {
        match arg {
            Bson::String(coll) => Ok(Out {
                db: None,
                coll: coll.clone(),
            }),
            Bson::Document(spec) => {
                let mut db = None;
                let mut coll = None;
                for (k, v) in spec {
                    match (k.as_str(), v) {
                        ("db", Bson::String(s)) => db = Some(s.clone()),
                        ("coll", Bson::String(s)) => coll = Some(s.clone()),
                        ("db" | "coll", other) => {
                            return Err(Error::type_mismatch(format!(
                                "BSON field '$out.{k}' is the wrong type '{}', expected type \
                                 'string'",
                                path::type_name(other)
                            )))
                        }
                        ("timeseries", _) => {
                            return Err(Error::new(
                                ErrorCode::NotImplemented,
                                "$out to a time-series collection is not supported by this server",
                            ))
                        }
                        _ => {
                            return Err(Error::new(
                                ErrorCode::IDLUnknownField,
                                format!("BSON field '$out.{k}' is an unknown field."),
                            ))
                        }
                    }
                }
                let (Some(db), Some(coll)) = (db, coll) else {
                    return Err(Error::new(
                        ErrorCode::Location40414,
                        "BSON field '$out.coll' is missing but a required field",
                    ));
                };
                Ok(Out { db: Some(db), coll })
            }
            other => Err(Error::new(
                ErrorCode::Location16990,
                format!(
                    "$out only supports a string or object argument, not {}",
                    path::type_name(other)
                ),
            )),
        }
    }

    /// Writes every row, then swaps the result in; the pipeline's output is empty.
    pub fn run(self, rows: Rows, env: &Env) -> Result<Rows> {
        let db = self.db.clone().unwrap_or_else(|| env.db.clone());
        validate_collection_name(&db, &self.coll)?;
        if self.coll.starts_with("system.") {
            return Err(Error::new(
                ErrorCode::Location17385,
                format!("Can't $out to special collection: {}", self.coll),
            ));
        }
        let temp = format!("tmp.agg_out.{}", NEXT_TEMP.fetch_add(1, Ordering::Relaxed));
        create_like_target(env, &db, &temp, &self.coll)?;
        let written = write_all(rows, env, &db, &temp).and_then(|()| {
            let (db, temp, coll) = (db.clone(), temp.clone(), self.coll.clone());
            env.writes.write_blocking(env.durable, move |txn, _| {
                ddl::rename_collection(txn, (&db, &temp), (&db, &coll), true)
            })?
        });
        if let Err(e) = written {
            let (db, temp) = (db.clone(), temp.clone());
            // Best effort: the temporary collection is dropped whether or not this succeeds.
            let _ = env.writes.write_blocking(env.durable, move |txn, _| {
                ddl::drop_collection(txn, &db, &temp).map(|_| ())
            });
            return Err(e);
        }
        Ok(Box::new(std::iter::empty()))
    }
}

/// Creates `temp` with the options and indexes `target` has now (none when it is missing).
fn create_like_target(env: &Env, db: &str, temp: &str, target: &str) -> Result<()> {
    let (db, temp, target) = (db.to_owned(), temp.to_owned(), target.to_owned());
    env.writes.write_blocking(env.durable, move |txn, now| {
        let existing = ddl::collection(txn, &db, &target);
        let options = existing
            .as_ref()
            .map(|m| m.options.clone())
            .unwrap_or_default();
        let mut meta = ddl::create_collection(txn, &db, &temp, options)?;
        for index in existing.iter().flat_map(|m| m.indexes.iter()) {
            if index.name == "_id_" {
                continue;
            }
            let mut copy = index.clone();
            copy.multikey = false;
            copy.building = false;
            meta = ddl::create_index(txn, &meta, copy, now)?;
        }
        Ok(())
    })?
}

/// Inserts the rows into `db.coll` in batches.
fn write_all(rows: Rows, env: &Env, db: &str, coll: &str) -> Result<()> {
    let mut batch: Vec<Document> = Vec::new();
    let mut bytes = 0usize;
    for row in rows {
        let doc = collection::prepare_for_insert(row?.doc)?;
        bytes += document_size(&doc);
        batch.push(doc);
        if batch.len() >= BATCH_DOCS || bytes >= BATCH_BYTES {
            env.interrupt.check()?;
            insert_batch(env, db, coll, std::mem::take(&mut batch))?;
            bytes = 0;
        }
    }
    if !batch.is_empty() {
        insert_batch(env, db, coll, batch)?;
    }
    Ok(())
}

fn insert_batch(env: &Env, db: &str, coll: &str, docs: Vec<Document>) -> Result<()> {
    let (db, coll) = (db.to_owned(), coll.to_owned());
    env.writes.write_blocking(env.durable, move |txn, now| {
        let meta = ddl::collection(txn, &db, &coll).ok_or_else(|| {
            Error::new(
                ErrorCode::NamespaceNotFound,
                format!("$out's temporary collection {db}.{coll} was dropped"),
            )
        })?;
        for doc in &docs {
            collection::insert(txn, &meta, doc, now)?;
        }
        Ok(())
    })?
}
