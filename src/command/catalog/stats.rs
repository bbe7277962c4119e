//! `dbStats`, `collStats` and the storage statistics `$collStats` reports, from the visible
//! documents of a snapshot (TTL-18: an expired document counts nowhere, reaped or not).
//!
//! Owns: measuring a collection (count, data size, estimated index sizes), scaling, and the reply
//! shapes mongod 7.0 gives. Count and data size come from the collection's counter less its
//! expired, unreaped documents (`engine::counts`), without reading documents; index sizes are
//! estimated from at most [`INDEX_SAMPLE`] visible documents. Does not own: the size of the data
//! directory (`Engine::disk_space`).
//!
//! A collection with a TTL index also gets `ttl` ([`ttl_stats`]), mayfly's addition: mongod has
//! no such field.

use crate::command::args::{check_fields, optional_bool, optional_i64};
use crate::command::reply_number::number;
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_db_name, CollectionMeta};
use crate::engine::ttl_view::{self, TtlView};
use crate::engine::ReadView;
use crate::error::{Error, ErrorCode, Result};
use crate::query::path;
use crate::query::size::value_size;
use bson::{doc, Bson, Document};

/// Bytes an index entry costs beyond its key values: the collection/index id prefix, the
/// encoded `_id` it points to is counted separately, and the storage framing.
const INDEX_ENTRY_OVERHEAD: u64 = 16;

/// Visible documents (the first in `_id` order) whose index entries are sized for the index
/// estimates; a larger collection's estimates are scaled up from them.
const INDEX_SAMPLE: u64 = 1000;

/// What one collection holds, unscaled.
#[derive(Debug, Default, Clone)]
pub struct CollectionSizes {
    pub count: u64,
    /// Sum of the BSON sizes of the visible documents.
    pub data_size: u64,
    /// Estimated bytes per index, `_id_` first, then the catalog's order.
    pub index_sizes: Vec<(String, u64)>,
}

impl CollectionSizes {
    /// Data is stored uncompressed as one value per document, so the storage a collection takes
    /// is reported as its data size (the LSM tree's compaction and compression make any finer
    /// per-collection share of `disk_space()` a guess).
    pub fn storage_size(&self) -> u64 {
        self.data_size
    }

    pub fn total_index_size(&self) -> u64 {
        self.index_sizes.iter().map(|(_, s)| s).sum()
    }

    pub fn avg_obj_size(&self) -> u64 {
        self.data_size.checked_div(self.count).unwrap_or(0)
    }
}

/// Counts and sizes the visible documents of `meta` (exact, from its counter). Index sizes are
/// estimates: each visible document adds, per index, the BSON size of its indexed values (null
/// when missing), the size of its `_id` and [`INDEX_ENTRY_OVERHEAD`]; the `_id_` index adds its
/// `_id` and the overhead. Only the first [`INDEX_SAMPLE`] visible documents are read, and the
/// sums scaled to the whole count (exact for collections no larger than that).
pub fn measure(view: &ReadView, meta: &CollectionMeta) -> Result<CollectionSizes> {
    let totals = view.visible_totals(meta)?;
    let key_paths: Vec<Vec<Vec<String>>> = meta
        .indexes
        .iter()
        .map(|i| i.key.keys().map(|k| path::split(k)).collect())
        .collect();
    let mut sizes = CollectionSizes {
        count: totals.count,
        data_size: totals.size,
        index_sizes: Vec::new(),
    };
    let mut sampled = 0u64;
    let mut id_index = 0u64;
    let mut secondary = vec![0u64; meta.indexes.len()];
    let sample = view
        .scan(meta, view.now_cell())
        .take(usize::try_from(INDEX_SAMPLE.min(totals.count)).unwrap_or(usize::MAX));
    for stored in sample {
        let stored = stored?;
        sampled += 1;
        let id_size = stored.doc.get("_id").map_or(0, value_size) as u64;
        id_index += id_size + INDEX_ENTRY_OVERHEAD;
        for (total, paths) in secondary.iter_mut().zip(&key_paths) {
            let keys: usize = paths
                .iter()
                .map(|p| path::get(&stored.doc, p).map_or(0, value_size))
                .sum();
            *total += keys as u64 + id_size + INDEX_ENTRY_OVERHEAD;
        }
    }
    let scale_up = |sum: u64| -> u64 {
        if sampled == 0 || sampled >= sizes.count {
            return sum;
        }
        let scaled = u128::from(sum) * u128::from(sizes.count) / u128::from(sampled);
        u64::try_from(scaled).unwrap_or(u64::MAX)
    };
    sizes
        .index_sizes
        .push(("_id_".to_owned(), scale_up(id_index)));
    for (index, size) in meta.indexes.iter().zip(secondary) {
        sizes.index_sizes.push((index.name.clone(), scale_up(size)));
    }
    Ok(sizes)
}

/// The `scale` argument: a whole number >= 1 (51024 otherwise, as mongod's IDL validator says).
pub fn parse_scale(cmd: &Document, command: &str) -> Result<u64> {
    match optional_i64(cmd, command, "scale")? {
        None => Ok(1),
        Some(n) if n >= 1 => Ok(n.unsigned_abs()),
        Some(n) => Err(Error::new(
            ErrorCode::Location51024,
            format!("BSON field 'scale' value must be >= 1, actual value '{n}'"),
        )),
    }
}

/// The storage statistics of one collection (`collStats`, `$collStats.storageStats`).
pub fn storage_stats(sizes: &CollectionSizes, scale: u64) -> Document {
    let storage = sizes.storage_size();
    let total_index = sizes.total_index_size();
    let mut out = doc! {
        "size": number(sizes.data_size / scale),
        "count": number(sizes.count),
    };
    if sizes.count > 0 {
        out.insert("avgObjSize", number(sizes.avg_obj_size()));
    }
    let mut index_sizes = Document::new();
    for (name, size) in &sizes.index_sizes {
        index_sizes.insert(name.clone(), number(size / scale));
    }
    out.extend(doc! {
        "numOrphanDocs": 0,
        "storageSize": number(storage / scale),
        "freeStorageSize": 0,
        "capped": false,
        "nindexes": number(sizes.index_sizes.len() as u64),
        "indexDetails": {},
        "indexBuilds": [],
        "totalIndexSize": number(total_index / scale),
        "totalSize": number((storage + total_index) / scale),
        "indexSizes": index_sizes,
        "scaleFactor": number(scale),
    });
    out
}

/// The `ttl` sub-document of a collection's storage statistics, when it has a TTL index:
/// `{indexes: [{name, model, field, expireAfterSeconds}], expiredNotReaped, deleted}`. Counts
/// are not scaled (they count documents).
pub fn ttl_stats(
    shared: &Shared,
    view: &ReadView,
    meta: &CollectionMeta,
) -> Result<Option<Document>> {
    let activity = shared.engine.ttl_activity();
    Ok(ttl_view::of(view, meta, activity)?.map(|ttl| ttl_document(&ttl)))
}

fn ttl_document(ttl: &TtlView) -> Document {
    let indexes: Vec<Bson> = ttl
        .indexes
        .iter()
        .map(|index| {
            Bson::Document(doc! {
                "name": index.name.as_str(),
                "model": index.model.name(),
                "field": index.field.as_str(),
                "expireAfterSeconds": index.expire_after_seconds,
            })
        })
        .collect();
    doc! {
        "indexes": indexes,
        "expiredNotReaped": number(ttl.expired_not_reaped),
        "deleted": number(ttl.deleted),
    }
}

const COLL_STATS_FIELDS: &[&str] = &["scale", "verbose", "waitForLock", "numericOnly"];

/// `collStats`. On a missing collection mongod 7.0 answers ok with zeros (its `CmdCollStats`
/// swallows NamespaceNotFound), and so does mayfly; `$collStats` is the one that fails.
pub fn coll_stats(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "collStats", COLL_STATS_FIELDS)?;
    let coll = collection_arg(cmd.get("collStats"), "collStats")?;
    crate::command::crud::read::validate_read_namespace(req.db, coll)?;
    let scale = parse_scale(cmd, "collStats")?;
    for flag in ["verbose", "waitForLock", "numericOnly"] {
        optional_bool(cmd, "collStats", flag)?;
    }
    let view = shared.engine.read()?;
    let mut reply = doc! {"ns": format!("{}.{coll}", req.db)};
    match view.collection(req.db, coll) {
        Some(meta) => {
            reply.extend(storage_stats(&measure(&view, &meta)?, scale));
            if let Some(ttl) = ttl_stats(shared, &view, &meta)? {
                reply.insert("ttl", ttl);
            }
        }
        None => reply.extend(doc! {
            "size": 0, "count": 0, "numOrphanDocs": 0, "storageSize": 0, "totalSize": 0,
            "nindexes": 0, "totalIndexSize": 0, "indexDetails": {}, "indexSizes": {},
            "scaleFactor": number(scale),
        }),
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// `dbStats` / `dbstats`. Counts are int64 and sizes doubles, as mongod 7.0's reply types are.
/// `fsUsedSize`/`fsTotalSize` are left out: reading the file system's totals needs `statvfs`,
/// which the standard library does not offer, and a made-up number would be a wrong one.
pub fn db_stats(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let command = req.name.name();
    check_fields(cmd, command, &["scale", "freeStorage"])?;
    validate_db_name(req.db)?;
    let scale = parse_scale(cmd, command)?;
    let free_storage = optional_bool(cmd, command, "freeStorage")?.unwrap_or(false);
    let view = shared.engine.read()?;
    let (mut collections, mut objects, mut data, mut storage, mut indexes, mut index_size) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    for meta in view.catalog.collections_in(req.db) {
        let sizes = measure(&view, meta)?;
        collections += 1;
        objects += sizes.count;
        data += sizes.data_size;
        storage += sizes.storage_size();
        indexes += sizes.index_sizes.len() as u64;
        index_size += sizes.total_index_size();
    }
    let long = |n: u64| Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX));
    let scaled = |n: u64| Bson::Double(n as f64 / scale as f64);
    let avg = if objects == 0 {
        0.0
    } else {
        data as f64 / objects as f64
    };
    let mut reply = doc! {
        "db": req.db,
        "collections": long(collections),
        "views": long(0),
        "objects": long(objects),
        "avgObjSize": avg,
        "dataSize": scaled(data),
        "storageSize": scaled(storage),
        "indexes": long(indexes),
        "indexSize": scaled(index_size),
        "totalSize": scaled(storage + index_size),
        "scaleFactor": long(scale),
    };
    if free_storage {
        reply.extend(doc! {
            "freeStorageSize": 0.0, "indexFreeStorageSize": 0.0, "totalFreeStorageSize": 0.0,
        });
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}
