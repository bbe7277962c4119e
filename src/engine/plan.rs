//! How a filter reaches documents: point lookups by `_id` when the filter pins `_id` to
//! values, otherwise a scan of the collection in `_id` order. Either way the full filter is still
//! applied to every document reached, and only visible documents are reached.

use super::catalog::CollectionMeta;
use super::collection::{self, StoredDoc};
use super::read::{NowCell, ReadView};
use super::txn::Txn;
use crate::error::Result;
use crate::query::compare::compare_values;
use crate::query::filter::Filter;
use crate::storage::keys;
use bson::{Bson, Document};

/// The access path for a filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Exactly these `_id`s, in `_id` order, no duplicates.
    Ids(Vec<Bson>),
    Scan,
}

/// `{_id: v}`, `{_id: {$eq: v}}` and `{_id: {$in: [...]}}` (v not an array, regex or operator
/// document) become point lookups.
pub fn access_for(filter: &Document) -> Access {
    let Some(id) = filter.get("_id") else {
        return Access::Scan;
    };
    let mut ids = match id {
        Bson::Document(d) if d.keys().any(|k| k.starts_with('$')) => {
            if d.len() != 1 {
                return Access::Scan;
            }
            match (d.get("$eq"), d.get("$in")) {
                (Some(v), _) if pinnable(v) => vec![v.clone()],
                (_, Some(Bson::Array(values))) if values.iter().all(pinnable) => values.clone(),
                _ => return Access::Scan,
            }
        }
        v if pinnable(v) => vec![v.clone()],
        _ => return Access::Scan,
    };
    ids.sort_by(compare_values);
    ids.dedup_by(|a, b| compare_values(a, b).is_eq());
    Access::Ids(ids)
}

fn pinnable(v: &Bson) -> bool {
    match v {
        Bson::Array(_) | Bson::RegularExpression(_) | Bson::Null | Bson::Undefined => false,
        Bson::Document(d) => !d.keys().any(|k| k.starts_with('$')),
        _ => true,
    }
}

type DocIter = Box<dyn Iterator<Item = Result<StoredDoc>> + Send>;

/// Visible documents of `meta` matching `filter`, lazily, judged at `now`'s time when pulled.
pub fn matching(
    view: &ReadView,
    meta: &CollectionMeta,
    filter: Filter,
    filter_doc: &Document,
    now: NowCell,
) -> DocIter {
    match access_for(filter_doc) {
        Access::Ids(ids) => {
            let found: Vec<Result<StoredDoc>> = ids
                .iter()
                .filter_map(|id| view.get_by_id(meta, id).transpose())
                .collect();
            Box::new(found.into_iter().filter(move |r| match r {
                Ok(d) => filter.matches(&d.doc),
                Err(_) => true,
            }))
        }
        Access::Scan => Box::new(view.scan(meta, now).filter(move |r| match r {
            Ok(d) => filter.matches(&d.doc),
            Err(_) => true,
        })),
    }
}

/// Inside a write: the visible documents matching `filter` as of this point in the group, at
/// most `limit` of them.
pub fn matching_in_txn(
    txn: &Txn<'_>,
    meta: &CollectionMeta,
    filter: &Filter,
    filter_doc: &Document,
    now: i64,
    limit: Option<usize>,
) -> Result<Vec<StoredDoc>> {
    let limit = limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    match access_for(filter_doc) {
        Access::Ids(ids) => {
            for id in ids {
                if out.len() >= limit {
                    break;
                }
                if let Some(d) = collection::get_by_id(txn, meta, &id, now)? {
                    if filter.matches(&d.doc) {
                        out.push(d);
                    }
                }
            }
        }
        Access::Scan => {
            let prefix = keys::collection_prefix(meta.id);
            for d in collection::scan(txn, meta, &prefix, now) {
                if out.len() >= limit {
                    break;
                }
                let d = d?;
                if filter.matches(&d.doc) {
                    out.push(d);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn id_equality_and_in_are_point_lookups() {
        assert_eq!(
            access_for(&doc! {"_id": 5}),
            Access::Ids(vec![Bson::Int32(5)])
        );
        assert_eq!(
            access_for(&doc! {"_id": {"$eq": "a"}, "x": 1}),
            Access::Ids(vec![Bson::from("a")])
        );
        assert_eq!(
            access_for(&doc! {"_id": {"$in": [3, 1, 3]}}),
            Access::Ids(vec![Bson::Int32(1), Bson::Int32(3)])
        );
        assert_eq!(
            access_for(&doc! {"_id": {"a": 1}}),
            Access::Ids(vec![Bson::Document(doc! {"a": 1})])
        );
    }

    #[test]
    fn everything_else_scans() {
        for f in [
            doc! {},
            doc! {"x": 1},
            doc! {"_id": {"$gt": 1}},
            doc! {"_id": [1, 2]},
            doc! {"_id": null},
            doc! {"_id": {"$in": [1, [2]]}},
            doc! {"_id": {"$eq": 1, "$ne": 2}},
        ] {
            assert_eq!(access_for(&f), Access::Scan, "{f}");
        }
    }
}
