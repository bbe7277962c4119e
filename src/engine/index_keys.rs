//! Which entries a document has in a secondary index: one per element of the (at most one)
//! array field of the key pattern, as MongoDB's multikey indexes do.

use super::catalog::IndexMeta;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use crate::query::path;
use crate::storage::keys::Direction;
use bson::{Bson, Document};

/// The key tuples of `doc` in `index`; empty when a sparse index skips the document.
pub fn entries(index: &IndexMeta, doc: &Document) -> Result<Vec<Vec<(Bson, Direction)>>> {
    let mut per_field: Vec<(Vec<Bson>, Direction)> = Vec::with_capacity(index.key.len());
    let mut all_missing = true;
    let mut array_field: Option<&str> = None;
    for (field, spec) in &index.key {
        let direction = direction_of(spec);
        let components = path::split(field);
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
        return Ok(Vec::new());
    }
    let mut tuples: Vec<Vec<(Bson, Direction)>> = vec![Vec::new()];
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
    Ok(tuples)
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
            expire_after_seconds: None,
            multikey: false,
            building: false,
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
}
