//! Sort specifications: `{a: 1, "b.c": -1}` compiled once, then a document comparator with
//! MongoDB's semantics (missing and null sort together before numbers; an array sorts by its
//! smallest element ascending and its largest descending; an empty array sorts before null).
//!
//! Owns: sort spec parsing and comparison (strings through the spec's collation, if any). Does
//! not own: `$meta` sorts (refused), parsing collations, or choosing an index.

use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::compare::{compare_values_with, values_equal};
use crate::query::path;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// A compiled sort specification.
#[derive(Debug, Clone, Default)]
pub struct SortSpec {
    keys: Vec<SortKey>,
    /// Strings order through this; `None` is the simple collation (bytes).
    collation: Option<Collation>,
}

#[derive(Debug, Clone)]
struct SortKey {
    path: Vec<String>,
    ascending: bool,
}

impl SortSpec {
    /// Compiles `{field: 1 | -1, ...}`; any numeric type equal to 1 or -1 is accepted.
    pub fn compile(spec: &Document) -> Result<SortSpec> {
        let mut keys = Vec::new();
        for (field, value) in spec {
            if field.is_empty() || field.split('.').any(str::is_empty) {
                return Err(Error::bad_value(format!(
                    "Sort key path is invalid: '{field}'"
                )));
            }
            crate::query::depth::check_path(field)?;
            let ascending = if values_equal(value, &Bson::Int32(1)) && is_number(value) {
                true
            } else if values_equal(value, &Bson::Int32(-1)) && is_number(value) {
                false
            } else if let Bson::Document(d) = value {
                if d.contains_key("$meta") {
                    return Err(Error::new(
                        ErrorCode::NotImplemented,
                        "$meta sort is not supported by this server",
                    ));
                }
                return Err(bad_order());
            } else {
                return Err(bad_order());
            };
            keys.push(SortKey {
                path: path::split(field),
                ascending,
            });
        }
        Ok(SortSpec {
            keys,
            collation: None,
        })
    }

    /// Compiles a spec whose strings order under `collation` (`None`: simple).
    pub fn compile_with(spec: &Document, collation: Option<&Collation>) -> Result<SortSpec> {
        Ok(SortSpec::compile(spec)?.with_collation(collation))
    }

    /// The same spec ordering strings under `collation` (`None`: simple).
    pub fn with_collation(mut self, collation: Option<&Collation>) -> SortSpec {
        self.collation = collation.cloned();
        self
    }

    /// The collation strings order under (`None`: simple).
    pub fn collation(&self) -> Option<&Collation> {
        self.collation.as_ref()
    }

    /// The fields sorted by (`a.b` joined) and whether each is ascending, in order.
    pub fn fields(&self) -> impl Iterator<Item = (String, bool)> + '_ {
        self.keys.iter().map(|k| (k.path.join("."), k.ascending))
    }

    /// Whether there is nothing to sort by.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Orders two documents by the spec (ties stay `Equal`; callers keep a stable order).
    pub fn compare(&self, a: &Document, b: &Document) -> Ordering {
        for key in &self.keys {
            let c = self.collation();
            let ka = sort_key(a, &key.path, key.ascending, c);
            let kb = sort_key(b, &key.path, key.ascending, c);
            let ord = compare_values_with(&ka, &kb, c);
            let ord = if key.ascending { ord } else { ord.reverse() };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }

    /// The value a document sorts by for each key (useful for sorting many documents: compute
    /// once, compare many times).
    pub fn keys_of(&self, doc: &Document) -> Vec<Bson> {
        self.keys
            .iter()
            .map(|k| sort_key(doc, &k.path, k.ascending, self.collation()))
            .collect()
    }

    /// Compares two results of [`SortSpec::keys_of`].
    pub fn compare_keys(&self, a: &[Bson], b: &[Bson]) -> Ordering {
        for ((ka, kb), key) in a.iter().zip(b.iter()).zip(self.keys.iter()) {
            let ord = compare_values_with(ka, kb, self.collation());
            let ord = if key.ascending { ord } else { ord.reverse() };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }
}

fn is_number(value: &Bson) -> bool {
    crate::query::compare::is_number(value)
}

fn bad_order() -> Error {
    Error::bad_value("$sort key ordering must be 1 (for ascending) or -1 (for descending)")
}

/// The value `doc` sorts by at `path`: the smallest (ascending) or largest (descending) of the
/// values reached, arrays contributing their elements; missing is null; `[]` is undefined.
fn sort_key(doc: &Document, path: &[String], ascending: bool, c: Option<&Collation>) -> Bson {
    let found = path::lookup(doc, path);
    let mut candidates: Vec<&Bson> = Vec::new();
    for value in found.whole() {
        match value {
            Bson::Array(items) if items.is_empty() => candidates.push(&Bson::Undefined),
            Bson::Array(items) => candidates.extend(items.iter()),
            other => candidates.push(other),
        }
    }
    if found.missing || candidates.is_empty() {
        candidates.push(&Bson::Null);
    }
    let best = if ascending {
        candidates
            .into_iter()
            .min_by(|x, y| compare_values_with(x, y, c))
    } else {
        candidates
            .into_iter()
            .max_by(|x, y| compare_values_with(x, y, c))
    };
    best.cloned().unwrap_or(Bson::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn sorted(spec: Document, docs: Vec<Document>) -> Vec<i32> {
        let spec = SortSpec::compile(&spec).unwrap();
        let mut docs = docs;
        docs.sort_by(|a, b| spec.compare(a, b));
        docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
    }

    #[test]
    fn a_collation_orders_strings_also_inside_arrays() {
        let ci = crate::query::collation::Collation::parse(&doc! {"locale": "en", "strength": 2})
            .unwrap()
            .unwrap();
        let spec = SortSpec::compile_with(&doc! {"a": 1, "_id": 1}, Some(&ci)).unwrap();
        let mut docs = vec![
            doc! {"_id": 1, "a": "b"},
            doc! {"_id": 2, "a": "B"},
            doc! {"_id": 3, "a": "a"},
            doc! {"_id": 4, "a": ["C", "A2"]},
            doc! {"_id": 5, "a": "Ä"},
        ];
        docs.sort_by(|a, b| spec.compare(a, b));
        let ids: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        // At strength 2 accents count and case does not; "A2" sorts the array, and "Ä" sorts
        // before it at the primary level (it is shorter).
        assert_eq!(ids, vec![3, 5, 4, 1, 2]);
        assert_eq!(sorted(doc! {"a": 1, "_id": 1}, docs), vec![4, 2, 3, 1, 5]);
    }

    #[test]
    fn sorts_across_types_with_missing_as_null() {
        let docs = vec![
            doc! {"_id": 1, "a": "x"},
            doc! {"_id": 2, "a": 5},
            doc! {"_id": 3},
            doc! {"_id": 4, "a": null},
            doc! {"_id": 5, "a": 2.5},
            doc! {"_id": 6, "a": {"b": 1}},
        ];
        assert_eq!(sorted(doc! {"a": 1}, docs.clone()), vec![3, 4, 5, 2, 1, 6]);
        assert_eq!(sorted(doc! {"a": -1}, docs), vec![6, 1, 2, 5, 3, 4]);
    }

    #[test]
    fn arrays_sort_by_min_ascending_and_max_descending() {
        let docs = vec![
            doc! {"_id": 1, "a": [1, 10]},
            doc! {"_id": 2, "a": 5},
            doc! {"_id": 3, "a": []},
            doc! {"_id": 4, "a": null},
        ];
        assert_eq!(sorted(doc! {"a": 1}, docs.clone()), vec![3, 4, 1, 2]);
        assert_eq!(sorted(doc! {"a": -1}, docs), vec![1, 2, 4, 3]);
    }

    #[test]
    fn compound_and_dotted_keys() {
        let docs = vec![
            doc! {"_id": 1, "a": {"b": 2}, "c": 1},
            doc! {"_id": 2, "a": {"b": 1}, "c": 2},
            doc! {"_id": 3, "a": {"b": 1}, "c": 3},
            doc! {"_id": 4, "a": [{"b": 0}, {"b": 9}], "c": 0},
        ];
        assert_eq!(
            sorted(doc! {"a.b": 1, "c": -1}, docs.clone()),
            vec![4, 3, 2, 1]
        );
        assert_eq!(
            sorted(doc! {"a.b": -1_i64, "c": 1.0}, docs),
            vec![4, 1, 2, 3]
        );
    }

    #[test]
    fn invalid_orders_are_rejected() {
        for bad in [
            doc! {"a": 0},
            doc! {"a": 2},
            doc! {"a": "asc"},
            doc! {"a": true},
        ] {
            let err = SortSpec::compile(&bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadValue);
            assert_eq!(
                err.message,
                "$sort key ordering must be 1 (for ascending) or -1 (for descending)"
            );
        }
        let err = SortSpec::compile(&doc! {"a": {"$meta": "textScore"}}).unwrap_err();
        assert_eq!(err.code, ErrorCode::NotImplemented);
    }
}
