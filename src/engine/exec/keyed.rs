//! What ties a returned document to the index that found it: the explicit key range of
//! `min`/`max`, the index key `returnKey` returns, and the record id `showRecordId` shows.
//!
//! Documents are clustered by `_id` (the documents keyspace is the `_id` index), so a record id
//! is the document's encoded `_id` key, shown as binary data as mongod shows the record ids of
//! clustered collections.

use super::bounds::{value_endpoint, Interval};
use super::plan::{IndexScan, KeyRanges, Node, ScannedIndex};
use crate::engine::catalog::{CollectionMeta, IndexMeta};
use crate::engine::documents::index_keys;
use crate::engine::documents::record::StoredDoc;
use crate::engine::documents::record_key;
use crate::error::{Error, ErrorCode, Result};
use crate::storage::keys;
use bson::{doc, spec::BinarySubtype, Binary, Bson, Document};

/// The scan `min` (inclusive) to `max` (exclusive) of the hinted `index`, in the index's own
/// key order, as mongod plans `find().min().max()`.
pub fn min_max_scan(
    meta: &CollectionMeta,
    index: ScannedIndex,
    min: Option<&Document>,
    max: Option<&Document>,
    query: Option<&crate::query::collation::Collation>,
) -> Result<IndexScan> {
    let fields = index.fields();
    // The bounds are keys of the index: under another collation they would mean other strings.
    if !index.key_strings(query).agree() {
        return Err(Error::new(
            ErrorCode::Location51174,
            "The index chosen is not compatible with min/max: its collation is not the query's",
        ));
    }
    let compatible = |bound: &Document| {
        bound.len() == fields.len() && bound.keys().zip(&fields).all(|(k, (f, _))| k == f)
    };
    if !min.is_none_or(compatible) || !max.is_none_or(compatible) {
        return Err(Error::new(
            ErrorCode::Location51174,
            "The index chosen is not compatible with min/max",
        ));
    }
    let prefix = match index.id {
        Some(id) => keys::index_prefix(meta.id, id),
        None => keys::collection_prefix(meta.id).to_vec(),
    };
    let encode = |bound: &Document| {
        let mut key = prefix.clone();
        for (value, (_, direction)) in bound.values().zip(&fields) {
            match &index.collation {
                Some(c) => keys::encode_value_directed(&c.key_value(value), *direction, &mut key),
                None => keys::encode_value_directed(value, *direction, &mut key),
            }
        }
        key
    };
    let start = min.map_or_else(|| prefix.clone(), encode);
    let end = match max {
        Some(max) => encode(max),
        None => keys::prefix_end(&prefix).unwrap_or_else(|| vec![0xFF; prefix.len() + 1]),
    };
    if min.is_some() && max.is_some() && start >= end {
        return Err(Error::new(
            ErrorCode::Location51175,
            "The value provided for min() does not come before the value provided for max() in the hinted index",
        ));
    }
    let shown = fields
        .iter()
        .enumerate()
        .map(|(i, (field, _))| {
            let low = min.and_then(|m| m.values().nth(i)).unwrap_or(&Bson::MinKey);
            let high = max.and_then(|m| m.values().nth(i)).unwrap_or(&Bson::MaxKey);
            let interval = Interval {
                low: value_endpoint(low, true),
                high: value_endpoint(high, max.is_none()),
            };
            (field.clone(), vec![interval])
        })
        .collect();
    let ranges: KeyRanges = vec![(start, end)];
    Ok(IndexScan {
        index,
        bounds: shown,
        ranges,
        reverse: false,
    })
}

/// `returnKey`: the key of the index entry by which `leaf` found `doc` (`{}` for a collection
/// scan, which uses no index), as mongod returns it.
pub fn index_key(leaf: &Node, collection_id: u64, doc: &StoredDoc) -> Result<Document> {
    match leaf {
        Node::IdHack { .. } => Ok(doc! {"_id": doc.doc.get("_id").cloned().unwrap_or(Bson::Null)}),
        Node::IxScan(scan) => Ok(scan_key(scan, collection_id, doc)?.unwrap_or_default()),
        Node::Or { inputs, .. } => {
            for input in inputs {
                if let Node::IxScan(scan) = input {
                    if let Some(key) = scan_key(scan, collection_id, doc)? {
                        return Ok(key);
                    }
                }
            }
            Ok(Document::new())
        }
        _ => Ok(Document::new()),
    }
}

/// The first key of `doc` in `scan`'s ranges, in scan order.
fn scan_key(scan: &IndexScan, collection_id: u64, doc: &StoredDoc) -> Result<Option<Document>> {
    let id = doc.doc.get("_id").cloned().unwrap_or(Bson::Null);
    let Some(index_id) = scan.index.id else {
        return Ok(Some(doc! {"_id": id}));
    };
    let mut meta = IndexMeta::new(scan.index.name.clone(), scan.index.key.clone());
    meta.sparse = scan.index.sparse;
    let mut found: Option<(Vec<u8>, Document)> = None;
    for tuple in index_keys::entries(&meta, &doc.doc)? {
        let key = keys::index_key(
            collection_id,
            index_id,
            &tuple,
            record_key::record(&doc.key),
        );
        let scanned = scan
            .ranges
            .iter()
            .any(|(start, end)| *start <= key && key < *end);
        let first = found.as_ref().is_none_or(|(best, _)| {
            if scan.reverse {
                key > *best
            } else {
                key < *best
            }
        });
        if scanned && first {
            found = Some((key, index_keys::key_value(&meta, &tuple)));
        }
    }
    Ok(found.map(|(_, key)| key))
}

/// `showRecordId`: the document's record id, its encoded `_id` key.
pub fn record_id(collection_id: u64, doc: &StoredDoc) -> Bson {
    let bytes = doc
        .key
        .get(keys::collection_prefix(collection_id).len()..)
        .unwrap_or_default()
        .to_vec();
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}
