//! Which documents a partial index holds: those its `partialFilterExpression` matches, under the
//! index's collation (as mongod parses an index's filter with the index's collator).
//!
//! Owns: membership and the compiled filters it uses. Does not own: which filters are allowed
//! (`createIndexes` validated the filter before the index existed) nor whether a query may use
//! the index (`exec::partial`).
//!
//! Membership decides which entries a document gets and which are deleted with it, so it is the
//! same answer every time for the same document: matching here never consults the operation's
//! interrupt (a removal cut short would leave entries behind) and the allowed operators have no
//! failure of their own (no `$regex`, no `$expr`).

use crate::engine::catalog::IndexMeta;
use crate::error::Result;
use crate::query::filter::Filter;
use crate::query::path::render_document;
use bson::Document;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Compiled filters kept at most: a collection has at most 64 indexes, and a process rarely has
/// more than a few thousand partial ones; past this the cache starts again empty.
const CACHE_LIMIT: usize = 4096;
const CACHE_NAME: &str = "partial filter cache";

/// Whether `doc` belongs in `index`: always for an index without a filter.
pub fn admits(index: &IndexMeta, doc: &Document) -> Result<bool> {
    let Some(spec) = &index.partial_filter else {
        return Ok(true);
    };
    Ok(compiled(index, spec)?.matches_within(doc))
}

/// The compiled filter of a partial index (`None` for any other), for the planner to compare
/// a query with.
pub fn filter_of(index: &IndexMeta) -> Result<Option<Filter>> {
    match &index.partial_filter {
        Some(spec) => compiled(index, spec).map(Some),
        None => Ok(None),
    }
}

/// The compiled filter of `index`, shared by every write and plan that asks.
fn compiled(index: &IndexMeta, spec: &Document) -> Result<Filter> {
    static CACHE: OnceLock<Mutex<HashMap<String, Filter>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let collation = index.collation.as_ref().map(render_document);
    let key = format!(
        "{}\u{0}{}",
        render_document(spec),
        collation.unwrap_or_default()
    );
    if let Some(found) = crate::sync::lock_recovering(cache, CACHE_NAME).get(&key) {
        return Ok(found.clone());
    }
    let filter = Filter::compile_with(spec, index.collator()?.as_ref())?;
    let mut cache = crate::sync::lock_recovering(cache, CACHE_NAME);
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(key, filter.clone());
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn index(filter: Document, collation: Option<Document>) -> IndexMeta {
        IndexMeta {
            partial_filter: Some(filter),
            collation,
            ..IndexMeta::new("a_1", doc! {"a": 1})
        }
    }

    #[test]
    fn membership_follows_the_filter() {
        let cases = [
            (doc! {"active": true}, doc! {"active": true}, true),
            (doc! {"active": true}, doc! {"active": false}, false),
            (doc! {"active": true}, doc! {}, false),
            (doc! {"n": {"$gt": 5}}, doc! {"n": 6}, true),
            (doc! {"n": {"$gt": 5}}, doc! {"n": [1, 7]}, true),
            (doc! {"n": {"$gt": 5}}, doc! {"n": "9"}, false),
            (doc! {"a": {"$exists": true}}, doc! {"a": null}, true),
            (doc! {"a": {"$exists": true}}, doc! {"b": 1}, false),
            (doc! {"a": {"$type": "string"}}, doc! {"a": 1}, false),
            (doc! {"$or": [{"a": 1}, {"b": 2}]}, doc! {"b": 2}, true),
            (doc! {"a": {"$in": [1, 2]}}, doc! {"a": 3}, false),
            (doc! {"deleted": null}, doc! {"x": 1}, true),
        ];
        for (filter, document, expected) in cases {
            let i = index(filter.clone(), None);
            assert_eq!(
                admits(&i, &document).unwrap(),
                expected,
                "{filter} {document}"
            );
        }
        assert!(admits(&IndexMeta::new("a_1", doc! {"a": 1}), &doc! {}).unwrap());
    }

    #[test]
    fn the_index_collation_decides_string_equality() {
        let ci = doc! {"locale": "en", "strength": 2};
        let i = index(doc! {"s": "abc"}, Some(ci));
        assert!(admits(&i, &doc! {"s": "ABC"}).unwrap());
        let simple = index(doc! {"s": "abc"}, None);
        assert!(!admits(&simple, &doc! {"s": "ABC"}).unwrap());
    }
}
