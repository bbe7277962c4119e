//! Reads of `local.oplog.rs`, the operation log as a collection (replica-set mode only): an
//! `aggregate` on it reads the log's entries, oldest first, and a `find` runs as the equivalent
//! aggregation (`filter` → `$match`, `sort` → `$sort`, `skip`, `limit`, `projection` →
//! `$project`, `singleBatch` → a `$limit` of one batch). The log is read-only to clients, and its cursors are not tailable: a `find`
//! with options beyond those is refused rather than half honoured.
//!
//! Owns: the translation. Does not own the entries (`engine::oplog`).

use crate::command::args::check_fields;
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

pub const DB: &str = "local";
pub const COLLECTION: &str = "oplog.rs";

/// Whether `db.coll` is the operation log and the log is kept.
pub fn is_oplog(shared: &crate::command::Shared, db: &str, coll: &str) -> bool {
    db == DB && coll == COLLECTION && shared.engine.oplog().is_enabled()
}

const FIND_FIELDS: &[&str] = &[
    "filter",
    "sort",
    "projection",
    "skip",
    "limit",
    "batchSize",
    "singleBatch",
];

/// The `aggregate` command a `find` on the log runs as.
pub fn find_as_aggregate(find: &Document) -> Result<Document> {
    let options: Document = find
        .iter()
        .skip(1)
        .filter(|(k, _)| !crate::command::args::is_generic(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut named = doc! {"find": COLLECTION};
    named.extend(options.clone());
    check_fields(&named, "find", FIND_FIELDS).map_err(|_| {
        Error::new(
            ErrorCode::NotImplemented,
            format!(
                "a find on {DB}.{COLLECTION} takes only {}; tailable cursors on the log are not \
                 supported (use a change stream)",
                FIND_FIELDS.join(", ")
            ),
        )
    })?;
    let mut pipeline: Vec<Bson> = Vec::new();
    if let Some(filter) = options.get("filter") {
        pipeline.push(Bson::Document(doc! {"$match": filter.clone()}));
    }
    if let Some(sort) = options.get("sort") {
        // Natural order is time order: `{$natural: 1}` is the order entries come in.
        match natural(sort) {
            Some(true) => {}
            Some(false) => pipeline.push(Bson::Document(doc! {"$sort": {"ts": -1}})),
            None => pipeline.push(Bson::Document(doc! {"$sort": sort.clone()})),
        }
    }
    if let Some(skip) = options.get("skip") {
        pipeline.push(Bson::Document(doc! {"$skip": skip.clone()}));
    }
    match options.get("limit") {
        Some(Bson::Int32(0) | Bson::Int64(0)) | None => {}
        Some(limit) => pipeline.push(Bson::Document(doc! {"$limit": limit.clone()})),
    }
    // One batch and no cursor: at most a batch's worth, which then fits the first batch.
    if options
        .get("singleBatch")
        .is_some_and(crate::command::args::is_truthy)
    {
        let batch = options
            .get("batchSize")
            .cloned()
            .unwrap_or(Bson::Int32(101));
        if !matches!(batch, Bson::Int32(0) | Bson::Int64(0)) {
            pipeline.push(Bson::Document(doc! {"$limit": batch}));
        }
    }
    if let Some(projection) = options.get("projection") {
        pipeline.push(Bson::Document(doc! {"$project": projection.clone()}));
    }
    let mut cursor = Document::new();
    if let Some(batch) = options.get("batchSize") {
        cursor.insert("batchSize", batch.clone());
    }
    let mut aggregate = doc! {"aggregate": COLLECTION, "pipeline": pipeline, "cursor": cursor};
    for (k, v) in find.iter().skip(1) {
        if crate::command::args::is_generic(k) {
            aggregate.insert(k.clone(), v.clone());
        }
    }
    Ok(aggregate)
}

/// `Some(forward)` for a sort of `{$natural: 1}` or `{$natural: -1}`.
fn natural(sort: &Bson) -> Option<bool> {
    let Bson::Document(sort) = sort else {
        return None;
    };
    let (field, direction) = sort.iter().next()?;
    if sort.len() != 1 || field != "$natural" {
        return None;
    }
    match direction {
        Bson::Int32(1) | Bson::Int64(1) => Some(true),
        Bson::Int32(-1) | Bson::Int64(-1) => Some(false),
        Bson::Double(d) if *d == 1.0 => Some(true),
        Bson::Double(d) if *d == -1.0 => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_find_becomes_its_aggregation() {
        let find = doc! {
            "find": "oplog.rs", "filter": {"op": "i"}, "sort": {"$natural": -1}, "limit": 2,
            "projection": {"o": 1}, "batchSize": 5, "$db": "local",
        };
        let agg = find_as_aggregate(&find).unwrap();
        assert_eq!(
            agg,
            doc! {
                "aggregate": "oplog.rs",
                "pipeline": [
                    {"$match": {"op": "i"}}, {"$sort": {"ts": -1}}, {"$limit": 2},
                    {"$project": {"o": 1}},
                ],
                "cursor": {"batchSize": 5},
                "$db": "local",
            }
        );
        let err = find_as_aggregate(&doc! {"find": "oplog.rs", "tailable": true}).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotImplemented);
    }
}
