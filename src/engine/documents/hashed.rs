//! Hashed indexes (`{a: "hashed"}`, or compound with exactly one hashed field): which key
//! pattern is one, mongod's rules for creating one, and a document's entry in one.
//!
//! A hashed index stores, for its hashed field, mongod's hash of the value
//! (`query::hash::hash64`, missing as `null`) and, for its other fields, the value itself, as
//! mongod's `ExpressionKeysPrivate::getHashKeys` does. No field of a hashed index may meet an
//! array anywhere along its path (16766), so a document has exactly one entry (none when a
//! sparse index skips it) and the index is never multikey.
//!
//! Owns: the key pattern test, the creation rules, the entry's values. Does not own: the hash
//! itself (`query::hash`), the entry's directions and its place among every index kind's entries
//! (`index_keys`, which asks this module), the bounds a query gives a hashed field
//! (`engine::exec::hashed`).

use crate::engine::catalog::IndexMeta;
use crate::error::{Error, ErrorCode, Result};
use crate::query::hash::hash64;
use crate::query::path::render_document;
use bson::{Bson, Document};

/// The key pattern value that makes a field hashed.
pub const HASHED: &str = "hashed";

/// Whether a key pattern value is `"hashed"`.
pub fn is_hashed_spec(spec: &Bson) -> bool {
    matches!(spec, Bson::String(kind) if kind == HASHED)
}

/// Whether the key pattern has a hashed field.
pub fn is_hashed(key: &Document) -> bool {
    key.values().any(is_hashed_spec)
}

/// Whether `field` is the key pattern's hashed field.
pub fn is_hashed_field(key: &Document, field: &str) -> bool {
    key.get(field).is_some_and(is_hashed_spec)
}

/// mongod's rules for a hashed index, checked when it is created (after the spec's own
/// validation, as mongod's hashed access method checks them): not unique (16764), one hashed
/// field at most (31303). A TTL on a hashed key is refused: expiry reads dates from index
/// entries, and a hashed entry holds no date.
pub fn validate(index: &IndexMeta) -> Result<()> {
    let hashed = index.key.values().filter(|v| is_hashed_spec(v)).count();
    if hashed == 0 {
        return Ok(());
    }
    if index.unique {
        return Err(Error::new(
            ErrorCode::Location16764,
            "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.",
        ));
    }
    if hashed > 1 {
        return Err(Error::new(
            ErrorCode::Location31303,
            format!(
                "A maximum of one index field is allowed to be hashed but found {hashed} for 'key' {}",
                render_document(&index.key)
            ),
        ));
    }
    if index.expire_after_seconds.is_some() {
        return Err(Error::new(
            ErrorCode::CommandNotSupported,
            "a TTL index on a hashed key is not supported by mayfly",
        ));
    }
    Ok(())
}

/// The values of `doc`'s entry in the hashed index `index`, one per key pattern field in order
/// (`index_keys` pairs them with their directions); `None` when a sparse index skips a document
/// that has none of its fields.
pub fn entry(index: &IndexMeta, doc: &Document) -> Result<Option<Vec<Bson>>> {
    let collation = index.collator()?;
    let mut values = Vec::with_capacity(index.key.len());
    let mut has_value = false;
    for (field, spec) in &index.key {
        let value = match value_at(doc, field)? {
            Some(v) => {
                has_value = true;
                match &collation {
                    Some(c) => c.key_value(v),
                    None => v.clone(),
                }
            }
            None => Bson::Null,
        };
        values.push(if is_hashed_spec(spec) {
            Bson::Int64(hash64(&value)?)
        } else {
            value
        });
    }
    Ok((has_value || !index.sparse).then_some(values))
}

/// The value at the dotted `path` (`None`: missing, or a component is not a document), refusing
/// an array met anywhere along it, as mongod's `extractElementAtPathOrArrayAlongPath` with
/// getHashKeys's check (16766, naming the path up to the array).
fn value_at<'d>(doc: &'d Document, path: &str) -> Result<Option<&'d Bson>> {
    let mut current = doc;
    let mut walked = 0usize;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        walked += part.len();
        let found = current.get(part);
        if let Some(Bson::Array(_)) = found {
            return Err(Error::new(
                ErrorCode::Location16766,
                format!(
                    "Error: hashed indexes do not currently support array values. Found array at path: {}",
                    path.get(..walked).unwrap_or(path)
                ),
            ));
        }
        if parts.peek().is_none() {
            return Ok(found);
        }
        match found {
            Some(Bson::Document(inner)) => current = inner,
            _ => return Ok(None),
        }
        // The dot before the next component.
        walked += 1;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn index(key: Document) -> IndexMeta {
        IndexMeta::new("i", key)
    }

    fn hash(v: Bson) -> Bson {
        Bson::Int64(hash64(&v).unwrap())
    }

    #[test]
    fn entries_hash_the_hashed_field_and_keep_the_others() {
        let cases: Vec<(Document, Document, Vec<Bson>)> = vec![
            (
                doc! {"a": "hashed"},
                doc! {"a": 5},
                vec![hash(Bson::Int32(5))],
            ),
            (
                doc! {"a": "hashed"},
                doc! {"a": 5.7},
                vec![hash(Bson::Int32(5))],
            ),
            (doc! {"a": "hashed"}, doc! {"b": 1}, vec![hash(Bson::Null)]),
            (
                doc! {"a": "hashed"},
                doc! {"a": 3},
                vec![hash(Bson::Int64(3))],
            ),
            (
                doc! {"a.b": "hashed"},
                doc! {"a": {"b": "x"}},
                vec![hash(Bson::String("x".into()))],
            ),
            // A scalar along the path is a missing value.
            (
                doc! {"a.b": "hashed"},
                doc! {"a": 1},
                vec![hash(Bson::Null)],
            ),
            (
                doc! {"a": "hashed"},
                doc! {"a": {"x": 1}},
                vec![hash(Bson::Document(doc! {"x": 1}))],
            ),
            (
                doc! {"a": "hashed", "b": -1},
                doc! {"a": 1, "b": "q"},
                vec![hash(Bson::Int32(1)), Bson::String("q".into())],
            ),
            (
                doc! {"b": 1, "a": "hashed"},
                doc! {"a": 1},
                vec![Bson::Null, hash(Bson::Int32(1))],
            ),
        ];
        for (key, d, expected) in cases {
            let values = entry(&index(key.clone()), &d).unwrap();
            assert_eq!(values, Some(expected), "{key} {d}");
        }
    }

    #[test]
    fn arrays_anywhere_along_any_path_are_refused() {
        for (key, d, path) in [
            (doc! {"a": "hashed"}, doc! {"a": [1, 2]}, "a"),
            (doc! {"a": "hashed"}, doc! {"a": []}, "a"),
            (doc! {"a.b": "hashed"}, doc! {"a": [{"b": 1}]}, "a"),
            (doc! {"a.b.c": "hashed"}, doc! {"a": {"b": [1]}}, "a.b"),
            // The non-hashed fields of a compound hashed index too.
            (doc! {"a": "hashed", "b": 1}, doc! {"a": 1, "b": [1]}, "b"),
        ] {
            let err = entry(&index(key.clone()), &d).unwrap_err();
            assert_eq!(err.code, ErrorCode::Location16766, "{key} {d}");
            assert_eq!(
                err.message,
                format!("Error: hashed indexes do not currently support array values. Found array at path: {path}")
            );
        }
    }

    #[test]
    fn sparse_skips_documents_without_any_field() {
        let mut i = index(doc! {"a": "hashed", "b": 1});
        i.sparse = true;
        assert_eq!(entry(&i, &doc! {"c": 1}).unwrap(), None);
        assert!(entry(&i, &doc! {"b": 1}).unwrap().is_some());
        assert!(entry(&i, &doc! {"a": null}).unwrap().is_some());
    }

    #[test]
    fn a_collated_hashed_index_hashes_sort_keys() {
        let mut i = index(doc! {"a": "hashed"});
        i.collation = Some(doc! {"locale": "en", "strength": 2});
        assert_eq!(
            entry(&i, &doc! {"a": "ABC"}).unwrap(),
            entry(&i, &doc! {"a": "abc"}).unwrap()
        );
        assert_ne!(
            entry(&i, &doc! {"a": "abc"}).unwrap(),
            entry(&i, &doc! {"a": "abd"}).unwrap()
        );
    }

    #[test]
    fn creation_rules_follow_mongod() {
        assert!(validate(&index(doc! {"a": "hashed", "b": 1})).is_ok());
        assert!(validate(&index(doc! {"a": 1, "b": "hashed"})).is_ok());
        let mut unique = index(doc! {"a": "hashed"});
        unique.unique = true;
        assert_eq!(
            validate(&unique).unwrap_err().code,
            ErrorCode::Location16764
        );
        let two = validate(&index(doc! {"a": "hashed", "b": "hashed"})).unwrap_err();
        assert_eq!(two.code, ErrorCode::Location31303);
        assert_eq!(
            two.message,
            "A maximum of one index field is allowed to be hashed but found 2 for 'key' { a: \"hashed\", b: \"hashed\" }"
        );
        let mut ttl = index(doc! {"a": "hashed"});
        ttl.expire_after_seconds = Some(10);
        assert_eq!(
            validate(&ttl).unwrap_err().code,
            ErrorCode::CommandNotSupported
        );
    }
}
