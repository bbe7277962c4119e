//! What TTL is doing in one collection, for `collStats`/`$collStats` (`storageStats.ttl`) and
//! the per-namespace TTL metrics: its TTL indexes, the documents expired and not yet reaped,
//! and the documents the reaper deleted since start.
//!
//! The expired count comes from the expiry-ordered keys (`counts::expired`, the same range
//! count as `serverStatus.ttl.backlog`), never from reading the collection; the deleted count
//! from [`TtlActivity`]. Each TTL index is one entry whatever its model, so another kind of
//! TTL index is one more entry.
//!
//! Owns: which indexes a collection's TTL view lists and the figures beside them. Does not own:
//! the reply shape (`command::catalog::stats`), the metric names (`metrics`), counting
//! deletions (`ttl_activity`).

use crate::engine::catalog::{CollectionMeta, IndexMeta};
use crate::engine::read::ReadView;
use crate::engine::ttl_activity::TtlActivity;
use crate::error::Result;

/// The TTL model an index follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlModel {
    /// Cosmos DB's: the `_ts` index sets the collection TTL, a document's `ttl` overrides it.
    Cosmos,
    /// MongoDB's: a TTL index on a date field (TTL-25…TTL-29).
    Date,
    /// Cosmos DB's custom TTL path: one field holding a date or Unix milliseconds (TTL-30).
    CustomPath,
}

impl TtlModel {
    /// The stable name replies show.
    pub fn name(self) -> &'static str {
        match self {
            TtlModel::Cosmos => "cosmos",
            TtlModel::Date => "date",
            TtlModel::CustomPath => "customPath",
        }
    }
}

/// One TTL index of a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TtlIndex {
    pub name: String,
    pub model: TtlModel,
    /// The field whose time the lifetime counts from.
    pub field: String,
    pub expire_after_seconds: i32,
}

/// A collection's TTL view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TtlView {
    /// Never empty: a collection without a TTL index has no view.
    pub indexes: Vec<TtlIndex>,
    /// Documents expired at the view's time (invisible already) and not yet deleted.
    pub expired_not_reaped: u64,
    /// Documents the reaper deleted from the collection since the server started.
    pub deleted: u64,
}

/// The TTL indexes of `meta`, in catalog order.
pub fn ttl_indexes(meta: &CollectionMeta) -> Vec<TtlIndex> {
    meta.indexes.iter().filter_map(ttl_index).collect()
}

/// The TTL index `index` is, if any: the `_ts` index with a value, a date TTL index or a custom
/// TTL path (listed
/// while it is still being built too, though it expires nothing until it is ready).
fn ttl_index(index: &IndexMeta) -> Option<TtlIndex> {
    let expire_after_seconds = index.expire_after_seconds?;
    let (model, field) = if index.is_ttl() {
        (TtlModel::Cosmos, crate::ttl::TS_FIELD.to_owned())
    } else {
        let mut fields = index.key.keys();
        match (fields.next(), fields.next()) {
            (Some(field), None) if index.custom_ttl => (TtlModel::CustomPath, field.clone()),
            (Some(field), None) => (TtlModel::Date, field.clone()),
            _ => return None,
        }
    };
    Some(TtlIndex {
        name: index.name.clone(),
        model,
        field,
        expire_after_seconds,
    })
}

/// The TTL view of `meta` as `view` sees it; `None` when the collection has no TTL index.
pub fn of(
    view: &ReadView,
    meta: &CollectionMeta,
    activity: &TtlActivity,
) -> Result<Option<TtlView>> {
    let indexes = ttl_indexes(meta);
    if indexes.is_empty() {
        return Ok(None);
    }
    Ok(Some(TtlView {
        indexes,
        expired_not_reaped: view.expired_totals(meta)?.count,
        deleted: activity.deleted(meta.id),
    }))
}
