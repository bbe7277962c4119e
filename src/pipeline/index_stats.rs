//! `$indexStats`: one document per index of the collection, as mongod 7.0's
//! `getIndexStats` writes it: `{name, key, host, accesses: {ops, since}, spec}`, with
//! `building: true` while the index is being built. A missing collection has none.
//!
//! Owns: the stage's argument and its documents. Does not own: the counters
//! (`engine::index_usage`) or the server's address (the command passes `host`).

use crate::engine::index_usage::{Usage, ID_INDEX};
use crate::engine::{CollectionMeta, ReadView};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, DateTime, Document};

/// Checks `$indexStats`' argument (an empty object) and its place (the first stage).
pub fn parse(arg: &Bson, first: bool) -> Result<()> {
    if !matches!(arg, Bson::Document(d) if d.is_empty()) {
        return Err(Error::new(
            ErrorCode::Location28803,
            "The $indexStats stage specification must be an empty object",
        ));
    }
    if !first {
        return Err(Error::new(
            ErrorCode::Location40602,
            "$indexStats is only valid as the first stage in a pipeline",
        ));
    }
    Ok(())
}

/// The stage's documents for `meta`'s collection in `view` (none: it does not exist): the
/// `_id` index first, then the others in creation order.
pub fn documents(view: &ReadView, meta: Option<&CollectionMeta>, host: &str) -> Vec<Document> {
    let Some(meta) = meta else {
        return Vec::new();
    };
    let usage = view.index_usage();
    usage.ensure(meta);
    let usage_of = |id: u64| {
        usage.get(meta, id).unwrap_or(Usage {
            ops: 0,
            since_millis: 0,
        })
    };
    let id_spec = doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"};
    let mut out = vec![document(&id_spec, host, usage_of(ID_INDEX), false)];
    for index in &meta.indexes {
        out.push(document(
            &index.to_list_entry(),
            host,
            usage_of(index.id),
            index.building,
        ));
    }
    out
}

fn document(spec: &Document, host: &str, usage: Usage, building: bool) -> Document {
    let mut out = doc! {
        "name": spec.get("name").cloned().unwrap_or(Bson::Null),
        "key": spec.get("key").cloned().unwrap_or(Bson::Null),
        "host": host,
        "accesses": {
            "ops": i64::try_from(usage.ops).unwrap_or(i64::MAX),
            "since": DateTime::from_millis(usage.since_millis),
        },
        "spec": spec.clone(),
    };
    if building {
        out.insert("building", true);
    }
    out
}
