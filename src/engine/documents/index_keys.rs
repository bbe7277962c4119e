//! Which entries a document has in a secondary index: one per element of the (at most one)
//! array field of the key pattern, as MongoDB's multikey indexes do, and whether the document
//! makes the index multikey. An index with a collation keys strings by their sort keys
//! (`Collation::key_value`), so strings equal under it share an entry's key. A hashed index's
//! entries are `hashed`'s.

use crate::engine::catalog::IndexMeta;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use crate::query::path;
use crate::storage::keys::Direction;
use bson::{Bson, Document};

/// One key tuple: a value and its direction per field of the key pattern.
pub type KeyTuple = Vec<(Bson, Direction)>;

/// A document's entries in one index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexKeys {
    /// Empty when a sparse or partial index skips the document.
    pub tuples: Vec<KeyTuple>,
    /// Some path of the key pattern met an array in the document (an empty one included), so
    /// the index is multikey from now on (`IndexMeta::multikey`).
    pub multikey: bool,
}

/// The key tuples of `doc` in `index`; empty when a sparse or partial index skips the document.
pub fn entries(index: &IndexMeta, doc: &Document) -> Result<Vec<KeyTuple>> {
    keys(index, doc).map(|k| k.tuples)
}

/// The key tuples of `doc` in `index`, and whether they make the index multikey.
pub fn keys(index: &IndexMeta, doc: &Document) -> Result<IndexKeys> {
    // A document outside a partial index's filter has no entries, and makes it multikey no
    // more than mongod's (which never sees its keys).
    if !super::partial::admits(index, doc)? {
        return Ok(IndexKeys {
            tuples: Vec::new(),
            multikey: false,
        });
    }
    if super::hashed::is_hashed(&index.key) {
        // One entry (none when sparse skips the document), never multikey: `hashed`.
        let tuples = super::hashed::entry(index, doc)?
            .map(|values| {
                values
                    .into_iter()
                    .zip(index.key.values().map(direction_of))
                    .collect()
            })
            .into_iter()
            .collect();
        return Ok(IndexKeys {
            tuples,
            multikey: false,
        });
    }
    let mut multikey = false;
    let mut per_field: Vec<(Vec<Bson>, Direction)> = Vec::with_capacity(index.key.len());
    let mut all_missing = true;
    let mut array_field: Option<&str> = None;
    for (field, spec) in &index.key {
        let direction = direction_of(spec);
        let components = path::split(field);
        multikey |= crosses_array(doc, &components);
        let found = path::lookup(doc, &components);
        let whole: Vec<&Bson> = found.whole().collect();
        let values: Vec<Bson> = if whole.is_empty() {
            vec![Bson::Null]
        } else {
            all_missing = false;
            let mut out = Vec::new();
            for value in &whole {
                match value {
                    Bson::Array(items) if items.is_empty() => out.push(Bson::Undefined),
                    Bson::Array(items) => out.extend(items.iter().cloned()),
                    other => out.push((*other).clone()),
                }
            }
            out.dedup_by(|a, b| crate::query::compare::values_equal(a, b));
            out
        };
        let is_array = whole.len() > 1 || whole.iter().any(|v| matches!(v, Bson::Array(_)));
        if is_array {
            if let Some(other) = array_field {
                return Err(Error::new(
                    ErrorCode::CannotIndexParallelArrays,
                    format!("cannot index parallel arrays [{field}] [{other}]"),
                ));
            }
            array_field = Some(field.as_str());
        }
        per_field.push((values, direction));
    }
    if index.sparse && all_missing {
        return Ok(IndexKeys {
            tuples: Vec::new(),
            multikey,
        });
    }
    let mut per_field = per_field;
    if let Some(collation) = index.collator()? {
        for (values, _) in &mut per_field {
            for value in values.iter_mut() {
                *value = collation.key_value(value);
            }
            values.dedup_by(|a, b| crate::query::compare::values_equal(a, b));
        }
    }
    let mut tuples: Vec<KeyTuple> = vec![Vec::new()];
    for (values, direction) in per_field {
        let mut next = Vec::with_capacity(tuples.len() * values.len());
        for tuple in &tuples {
            for value in &values {
                let mut t = tuple.clone();
                t.push((value.clone(), direction));
                next.push(t);
            }
        }
        tuples = next;
    }
    Ok(IndexKeys { tuples, multikey })
}

/// The root fields that `indexes`' entries are computed from (the first component of each
/// key path, and of each path a partial index's filter tests), each once: a document holding
/// only these fields has the same entries in every one of them as the whole document, since
/// an entry depends on those paths' values alone.
pub fn root_fields<'i>(indexes: impl IntoIterator<Item = &'i IndexMeta>) -> Vec<String> {
    let mut roots: Vec<String> = Vec::new();
    let mut add = |field: &str| {
        let root = field.split('.').next().unwrap_or(field);
        if !roots.iter().any(|r| r == root) {
            roots.push(root.to_owned());
        }
    };
    for index in indexes {
        for field in index.key.keys() {
            add(field);
        }
        // The filter's paths: its field names, under `$and`/`$or` at any depth (iterative;
        // the filter was validated when the index was created).
        let mut filters: Vec<&Document> = index.partial_filter.iter().collect();
        while let Some(filter) = filters.pop() {
            for (key, value) in filter {
                if !key.starts_with('$') {
                    add(key);
                } else if let Bson::Array(items) = value {
                    filters.extend(items.iter().filter_map(Bson::as_document));
                }
            }
        }
    }
    roots
}

/// Whether `path` meets an array anywhere in `doc`: at its end, or on the way through (`a.b`
/// over an array of documents), as mongod's multikey tracking counts it.
fn crosses_array(doc: &Document, path: &[String]) -> bool {
    let mut current = doc;
    for component in path {
        match current.get(component) {
            Some(Bson::Array(_)) => return true,
            Some(Bson::Document(inner)) => current = inner,
            _ => return false,
        }
    }
    false
}

/// `{a: -1}` is descending; any other numeric or string spec orders ascending.
pub fn direction_of(spec: &Bson) -> Direction {
    let negative = match spec {
        Bson::Int32(n) => *n < 0,
        Bson::Int64(n) => *n < 0,
        Bson::Double(n) => *n < 0.0,
        _ => false,
    };
    if negative && is_number(spec) {
        Direction::Descending
    } else {
        Direction::Ascending
    }
}

/// `{email: "a@b.c"}`: the values of one entry under the key pattern's field names.
pub fn key_value(index: &IndexMeta, tuple: &[(Bson, Direction)]) -> Document {
    index
        .key
        .keys()
        .zip(tuple)
        .map(|(field, (value, _))| (field.clone(), value.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn index(key: Document, sparse: bool) -> IndexMeta {
        IndexMeta {
            id: 1,
            name: "i".into(),
            key,
            unique: false,
            sparse,
            partial_filter: None,
            hidden: false,
            expire_after_seconds: None,
            multikey: false,
            building: false,
            collation: None,
            custom_ttl: false,
        }
    }

    #[test]
    fn a_collated_index_keys_strings_by_sort_key() {
        let spec = doc! {"locale": "en", "strength": 2};
        let i = IndexMeta {
            collation: Some(spec.clone()),
            ..index(doc! {"a": 1}, false)
        };
        let key = |d: Document| entries(&i, &d).unwrap();
        assert_eq!(key(doc! {"a": "ABC"}), key(doc! {"a": "abc"}));
        assert_ne!(key(doc! {"a": "abc"}), key(doc! {"a": "abd"}));
        // Collation-equal elements of an array are one entry; numbers are as without one.
        assert_eq!(key(doc! {"a": ["x", "X", 1]}).len(), 2);
        assert_eq!(key(doc! {"a": 1.0})[0][0].0, Bson::Double(1.0));
        assert_eq!(
            key(doc! {"a": {"b": "Q"}}),
            key(doc! {"a": {"b": "q"}}),
            "strings inside documents too"
        );
    }

    mod collated_key_order {
        use crate::query::collation::Collation;
        use crate::query::compare::compare_values_with;
        use crate::storage::keys::encode_value;
        use bson::{doc, Bson};
        use proptest::prelude::*;

        fn value() -> impl Strategy<Value = Bson> {
            let leaf = prop_oneof![
                "[aAbBéÉ -]{0,4}".prop_map(Bson::String),
                (-2i32..2).prop_map(Bson::Int32),
                Just(Bson::Null),
            ];
            leaf.prop_recursive(2, 6, 3, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..3).prop_map(Bson::Array),
                    proptest::collection::vec(("[ab]", inner), 0..3)
                        .prop_map(|kv| Bson::Document(kv.into_iter().collect())),
                ]
            })
        }

        proptest! {
            /// Two encodings of one order: the keys of a collated index (sort keys through the
            /// ordinary key encoding) order as `compare_values_with` under that collation.
            #[test]
            fn collated_keys_order_as_the_collation(a in value(), b in value(), strength in 1i32..=5, shifted in any::<bool>()) {
                let mut spec = doc! {"locale": "en", "strength": strength};
                if shifted {
                    spec.insert("alternate", "shifted");
                }
                let c = Collation::parse(&spec).unwrap().unwrap();
                let (mut ka, mut kb) = (Vec::new(), Vec::new());
                encode_value(&c.key_value(&a), &mut ka);
                encode_value(&c.key_value(&b), &mut kb);
                prop_assert_eq!(ka.cmp(&kb), compare_values_with(&a, &b, Some(&c)), "{:?} vs {:?}", a, b);
            }
        }
    }

    #[test]
    fn scalar_missing_array_and_sparse() {
        let i = index(doc! {"a": 1}, false);
        assert_eq!(entries(&i, &doc! {"a": 5}).unwrap().len(), 1);
        assert_eq!(entries(&i, &doc! {"b": 5}).unwrap()[0][0].0, Bson::Null);
        assert_eq!(entries(&i, &doc! {"a": [1, 2, 2]}).unwrap().len(), 2);
        assert!(entries(&index(doc! {"a": 1}, true), &doc! {"b": 1})
            .unwrap()
            .is_empty());
    }

    #[test]
    fn compound_with_one_array_and_parallel_arrays_refused() {
        let i = index(doc! {"a": 1, "b": -1}, false);
        let e = entries(&i, &doc! {"a": [1, 2], "b": 3}).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0][1].1, Direction::Descending);
        let err = entries(&i, &doc! {"a": [1, 2], "b": [3, 4]}).unwrap_err();
        assert_eq!(err.code, ErrorCode::CannotIndexParallelArrays);
    }

    #[test]
    fn dotted_paths_through_arrays_of_documents() {
        let i = index(doc! {"a.b": 1}, false);
        assert_eq!(
            entries(&i, &doc! {"a": [{"b": 1}, {"b": 2}]})
                .unwrap()
                .len(),
            2
        );
    }

    /// A document cut down to the root fields of the key paths has the same entries as the
    /// whole document in each index, arrays, dotted paths, sparse and compound keys included.
    #[test]
    fn root_fields_are_enough_for_every_entry() {
        let indexes = [
            index(doc! {"a.b": 1}, false),
            index(doc! {"c": -1, "a.d": 1}, false),
            index(doc! {"e": 1}, true),
            index(doc! {"at": 1}, false),
            IndexMeta {
                partial_filter: Some(
                    doc! {"$and": [{"active": true}, {"$or": [{"z": {"$gt": 0}}, {"a.b": 1}]}]},
                ),
                ..index(doc! {"c": 1}, false)
            },
        ];
        let roots = root_fields(&indexes);
        assert_eq!(roots, ["a", "c", "e", "at", "z", "active"]);
        let at = bson::DateTime::from_millis(5);
        for d in [
            doc! {"_id": 1, "a": {"b": 1, "d": [1, 2]}, "c": "x", "z": 1, "at": at},
            doc! {"_id": 2, "a": [{"b": 1}, {"b": 2}], "other": {"a": 1}},
            doc! {"_id": 3, "e": [at, at], "at": [at]},
            doc! {"_id": 4},
            doc! {"_id": 5, "c": 1, "active": true, "z": 1, "y": 2},
            doc! {"_id": 6, "c": 1, "active": true, "a": {"b": 1}},
        ] {
            let cut: Document = d
                .iter()
                .filter(|(k, _)| roots.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for i in &indexes {
                assert_eq!(
                    keys(i, &cut).unwrap(),
                    keys(i, &d).unwrap(),
                    "{d} in {:?}",
                    i.key
                );
            }
        }
    }

    #[test]
    fn a_hashed_index_has_one_entry_with_the_patterns_directions() {
        let i = index(doc! {"a": "hashed", "b": -1}, false);
        let k = keys(&i, &doc! {"a": 1, "b": 2}).unwrap();
        assert!(!k.multikey);
        assert_eq!(k.tuples.len(), 1);
        assert!(matches!(
            k.tuples[0][0],
            (Bson::Int64(_), Direction::Ascending)
        ));
        assert_eq!(k.tuples[0][1], (Bson::Int32(2), Direction::Descending));
        let sparse = index(doc! {"a": "hashed"}, true);
        assert!(entries(&sparse, &doc! {"b": 1}).unwrap().is_empty());
    }

    #[test]
    fn multikey_when_a_path_meets_an_array() {
        let a = index(doc! {"a": 1, "c": 1}, false);
        let ab = index(doc! {"a.b": 1}, false);
        for (i, d, multikey) in [
            (&a, doc! {"a": 1, "c": "x"}, false),
            (&a, doc! {"a": {"b": [1]}}, false),
            (&a, doc! {"c": [1]}, true),
            (&a, doc! {"a": []}, true),
            (&ab, doc! {"a": {"b": 1}}, false),
            (&ab, doc! {"a": [{"b": 1}]}, true),
            (&ab, doc! {"a": {"b": [1, 2]}}, true),
            (&ab, doc! {"a": []}, true),
        ] {
            assert_eq!(keys(i, &d).unwrap().multikey, multikey, "{d}");
        }
    }
}
