//! The per-namespace TTL metrics, with a bounded label set: `ttl_namespace_deleted_documents`
//! (documents the reaper deleted from each collection since start) and
//! `ttl_namespace_expired_not_reaped` (documents expired now and not yet deleted), for the
//! [`NAMESPACE_LIMIT`] collections with the most deletions; every other collection's figures
//! are summed under `namespace="other"` (no namespace is called that: every one has a dot).
//!
//! Owns: choosing the labelled namespaces and the two families. Does not own: the figures
//! (`engine::ttl_view`, `engine::ttl_activity`).

use crate::command::Shared;
use crate::engine::ttl_view;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Namespaces labelled by name; the rest are summed under [`OTHER`].
pub const NAMESPACE_LIMIT: usize = 50;
/// The label of every collection past the limit.
pub const OTHER: &str = "other";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceLabel {
    namespace: String,
}

/// One collection's TTL figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceTtl {
    pub namespace: String,
    pub deleted: u64,
    pub expired_not_reaped: u64,
}

/// The rows to render: the `limit` collections with the most deletions (then the largest
/// backlog, then by name, so the choice is stable between scrapes), and one [`OTHER`] row
/// summing the rest when there is a rest.
pub fn bounded(mut rows: Vec<NamespaceTtl>, limit: usize) -> Vec<NamespaceTtl> {
    rows.sort_by(|a, b| {
        b.deleted
            .cmp(&a.deleted)
            .then(b.expired_not_reaped.cmp(&a.expired_not_reaped))
            .then_with(|| a.namespace.cmp(&b.namespace))
    });
    if rows.len() <= limit {
        return rows;
    }
    let rest = rows.split_off(limit);
    rows.push(NamespaceTtl {
        namespace: OTHER.to_owned(),
        deleted: rest.iter().map(|r| r.deleted).fold(0, u64::saturating_add),
        expired_not_reaped: rest
            .iter()
            .map(|r| r.expired_not_reaped)
            .fold(0, u64::saturating_add),
    });
    rows
}

/// Every collection with a TTL index, with its figures. On a poisoned catalog nothing (the
/// server-wide TTL metrics and `locks_poisoned` still say what happened); a collection whose
/// expiry keys cannot be read is left out.
fn collect(shared: &Shared) -> Vec<NamespaceTtl> {
    let engine = &shared.engine;
    let Ok(view) = engine.read() else {
        return Vec::new();
    };
    let activity = engine.ttl_activity();
    view.catalog
        .all()
        .filter_map(|meta| {
            let ttl = ttl_view::of(&view, meta, activity).ok()??;
            Some(NamespaceTtl {
                namespace: meta.namespace(),
                deleted: ttl.deleted,
                expired_not_reaped: ttl.expired_not_reaped,
            })
        })
        .collect()
}

/// Registers the two families.
pub fn register(registry: &mut Registry, shared: &Shared) {
    let deleted = Family::<NamespaceLabel, Counter>::default();
    let expired = Family::<NamespaceLabel, Gauge<i64>>::default();
    for row in bounded(collect(shared), NAMESPACE_LIMIT) {
        let label = NamespaceLabel {
            namespace: row.namespace,
        };
        deleted.get_or_create(&label).inc_by(row.deleted);
        expired
            .get_or_create(&label)
            .set(i64::try_from(row.expired_not_reaped).unwrap_or(i64::MAX));
    }
    registry.register(
        "ttl_namespace_deleted_documents",
        format!(
            "Expired documents the TTL reaper deleted since start, per collection with a TTL \
             index (the top {NAMESPACE_LIMIT} by deletions; the rest summed as namespace=\"other\")"
        ),
        deleted,
    );
    registry.register(
        "ttl_namespace_expired_not_reaped",
        "Documents expired now and not yet deleted, per collection with a TTL index (the same \
         namespaces)",
        expired,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(namespace: &str, deleted: u64, expired_not_reaped: u64) -> NamespaceTtl {
        NamespaceTtl {
            namespace: namespace.to_owned(),
            deleted,
            expired_not_reaped,
        }
    }

    #[test]
    fn the_label_set_is_the_top_by_deletions_plus_other() {
        // (rows, limit, expected namespaces with (deleted, expired) in order)
        type Case = (Vec<NamespaceTtl>, usize, Vec<(&'static str, u64, u64)>);
        let cases: Vec<Case> = vec![
            (vec![], 2, vec![]),
            (
                vec![row("d.a", 1, 0), row("d.b", 5, 2)],
                2,
                vec![("d.b", 5, 2), ("d.a", 1, 0)],
            ),
            (
                vec![
                    row("d.a", 1, 9),
                    row("d.b", 5, 2),
                    row("d.c", 3, 1),
                    row("d.d", 0, 4),
                ],
                2,
                vec![("d.b", 5, 2), ("d.c", 3, 1), ("other", 1, 13)],
            ),
            // Ties: the larger backlog first, then the name.
            (
                vec![row("d.z", 0, 0), row("d.y", 0, 0), row("d.x", 0, 3)],
                2,
                vec![("d.x", 0, 3), ("d.y", 0, 0), ("other", 0, 0)],
            ),
            (
                vec![
                    row("d.a", u64::MAX, 1),
                    row("d.b", 1, 1),
                    row("d.c", u64::MAX, 1),
                ],
                1,
                vec![("d.a", u64::MAX, 1), ("other", u64::MAX, 2)],
            ),
        ];
        for (rows, limit, expected) in cases {
            let got: Vec<(String, u64, u64)> = bounded(rows.clone(), limit)
                .into_iter()
                .map(|r| (r.namespace, r.deleted, r.expired_not_reaped))
                .collect();
            let expected: Vec<(String, u64, u64)> = expected
                .into_iter()
                .map(|(n, d, e)| (n.to_owned(), d, e))
                .collect();
            assert_eq!(got, expected, "{rows:?} limit {limit}");
        }
    }
}
