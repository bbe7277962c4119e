//! `find`: compile the filter, sort and projection once, reach documents through the engine's
//! access plan, and open a cursor over the result.

use super::args::{check_fields, optional_bool, optional_doc, optional_i64};
use super::cursor::{first_batch_reply, SizedDocs};
use super::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name, CollectionMeta};
use crate::engine::cursor::{Cursor, Item, DEFAULT_FIRST_BATCH};
use crate::engine::read::{still_visible, NowCell};
use crate::engine::{plan, StoredDoc};
use crate::error::{Error, ErrorCode, Result};
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::SortSpec;
use crate::status::OpKind;
use bson::{Bson, Document};

/// Matching documents, lazily.
pub type StoredDocs = Box<dyn Iterator<Item = Result<StoredDoc>> + Send>;

const FIELDS: &[&str] = &[
    "filter",
    "sort",
    "projection",
    "hint",
    "skip",
    "limit",
    "batchSize",
    "singleBatch",
    "max",
    "min",
    "returnKey",
    "showRecordId",
    "tailable",
    "awaitData",
    "noCursorTimeout",
    "allowPartialResults",
    "collation",
    "allowDiskUse",
    "let",
    "oplogReplay",
    "readOnce",
    "term",
];

pub fn find(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "find", FIELDS)?;
    let coll = collection_arg(cmd.get("find"), "find")?;
    validate_collection_name(req.db, coll)?;
    shared.counters.count(OpKind::Query, 1);
    let filter_doc = optional_doc(cmd, "find", "filter")?
        .cloned()
        .unwrap_or_default();
    let filter = Filter::compile(&filter_doc)?;
    let sort = SortSpec::compile(
        &optional_doc(cmd, "find", "sort")?
            .cloned()
            .unwrap_or_default(),
    )?;
    let projection = match optional_doc(cmd, "find", "projection")? {
        Some(p) if !p.is_empty() => Some(Projection::compile(p)?),
        _ => None,
    };
    let skip = non_negative(cmd, "skip")?.unwrap_or(0);
    let mut limit = optional_i64(cmd, "find", "limit")?;
    let mut single_batch = optional_bool(cmd, "find", "singleBatch")?.unwrap_or(false);
    if let Some(l) = limit.filter(|l| *l < 0) {
        // A negative limit means "this many, in one batch".
        limit = Some(-l);
        single_batch = true;
    }
    let limit = limit.filter(|l| *l != 0).map(|l| l.unsigned_abs());
    let batch_size = non_negative(cmd, "batchSize")?;
    let no_timeout = optional_bool(cmd, "find", "noCursorTimeout")?.unwrap_or(false);
    let ns = format!("{}.{coll}", req.db);

    let view = shared.engine.read();
    // One clock cell for the scan and the cursor: each batch judges expiry at its own time.
    let now = view.now_cell();
    let docs: StoredDocs = match view.collection(req.db, coll) {
        None => Box::new(std::iter::empty()),
        Some(meta) => {
            check_hint(&meta, cmd.get("hint"))?;
            let matched = plan::matching(&view, &meta, filter, &filter_doc, now.clone());
            ordered(&meta, matched, &sort, skip, now.clone())?
        }
    };
    let ttl = view.collection(req.db, coll).and_then(|m| m.ttl());
    let docs = project(docs, projection, ttl);
    let mut cursor = Cursor::new(ns, docs, now, limit);
    cursor.no_timeout = no_timeout;
    let first = batch_size
        .map(|b| usize::try_from(b).unwrap_or(usize::MAX))
        .or(Some(DEFAULT_FIRST_BATCH));
    first_batch_reply(shared, cursor, view.now, first, single_batch)
}

/// Applies sort, then skip. Sorting materializes the matches (each re-checked for expiry when
/// returned); without a sort the result streams from the snapshot.
pub fn ordered(
    meta: &CollectionMeta,
    matched: StoredDocs,
    sort: &SortSpec,
    skip: u64,
    now: NowCell,
) -> Result<StoredDocs> {
    let skip = usize::try_from(skip).unwrap_or(usize::MAX);
    if sort.is_empty() {
        return Ok(Box::new(matched.skip(skip)));
    }
    let mut keyed = Vec::new();
    for d in matched {
        let d = d?;
        keyed.push((sort.keys_of(&d.doc), d));
    }
    keyed.sort_by(|a, b| sort.compare_keys(&a.0, &b.0));
    let sorted = keyed.into_iter().map(|(_, d)| d).skip(skip);
    Ok(Box::new(still_visible(sorted, meta.ttl(), now).map(Ok)))
}

/// Projects each document; sizes are the stored sizes (never smaller than the projection), and
/// each item keeps its document's expiry time under the collection TTL `ttl`.
pub fn project(docs: StoredDocs, projection: Option<Projection>, ttl: Option<i32>) -> SizedDocs {
    Box::new(docs.map(move |r| {
        r.map(|d| {
            let size = d.record.body.len();
            let expires_at = d.record.expires_at(ttl);
            let doc = match &projection {
                Some(p) => p.apply(&d.doc),
                None => d.doc,
            };
            Item {
                doc,
                size,
                expires_at,
            }
        })
    }))
}

fn non_negative(cmd: &Document, field: &str) -> Result<Option<u64>> {
    match optional_i64(cmd, "find", field)? {
        None => Ok(None),
        Some(n) if n < 0 => Err(Error::bad_value(format!(
            "{} value must be non-negative, but received: {n}",
            if field == "skip" { "Skip" } else { "BatchSize" }
        ))),
        Some(n) => Ok(Some(n.unsigned_abs())),
    }
}

/// A hint must name an index that exists (by name or key pattern), as mongod requires.
pub fn check_hint(meta: &CollectionMeta, hint: Option<&Bson>) -> Result<()> {
    let exists = match hint {
        None => true,
        Some(Bson::String(name)) => name == "_id_" || meta.index(name).is_some(),
        Some(Bson::Document(key)) if key.is_empty() => true,
        Some(Bson::Document(key)) => {
            key == &bson::doc! {"_id": 1} || meta.indexes.iter().any(|i| &i.key == key)
        }
        Some(_) => false,
    };
    if exists {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::BadValue,
            "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index",
        ))
    }
}
