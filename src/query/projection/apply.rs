//! Applying a parsed projection to one document, in mongod's three passes: the kept fields
//! (inclusion) or the remaining ones (exclusion), in the document's order; then the computed
//! fields, in the projection's order, at their paths in the output; then find's `$slice` and
//! positional `$` on the arrays the first pass kept.
//!
//! Recursion follows the projection tree (at most a stored document's depth of levels) and the
//! document's own arrays nested in arrays, which the decoder already bounds.

use super::ast::{Node, Tree};
use super::{Policy, Post, Projection, Source};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};

pub(super) fn apply(p: &Projection, doc: &Document, source: Source<'_>) -> Result<Document> {
    let mut out = if p.inclusion {
        include(doc, &p.tree, p.policy)
    } else {
        exclude(doc, &p.tree, p.policy)
    };
    if p.tree.computes {
        computed(&mut out, &p.tree, doc, p.policy, source)?;
    }
    for (path, post) in &p.post {
        match post {
            Post::Slice { skip, limit } => slice_at(&mut out, path, *skip, *limit),
            Post::Positional => positional(&mut out, doc, path, source)?,
        }
    }
    Ok(out)
}

fn include(doc: &Document, tree: &Tree, policy: Policy) -> Document {
    let mut out = Document::new();
    for (key, value) in doc {
        match tree.get(key) {
            Some(Node::Include | Node::KeepForPost) => {
                out.insert(key.clone(), value.clone());
            }
            Some(Node::Children(sub)) => {
                if let Some(kept) = include_value(value, sub, policy) {
                    out.insert(key.clone(), kept);
                }
            }
            _ => {}
        }
    }
    out
}

/// The part of `value` a sub-projection keeps: documents projected, arrays element by element
/// (scalars dropped; arrays in arrays walked in find, dropped in aggregation).
fn include_value(value: &Bson, sub: &Tree, policy: Policy) -> Option<Bson> {
    match value {
        Bson::Document(d) => Some(Bson::Document(include(d, sub, policy))),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter(|item| policy == Policy::Find || !matches!(item, Bson::Array(_)))
                .filter_map(|item| include_value(item, sub, policy))
                .collect(),
        )),
        _ => None,
    }
}

fn exclude(doc: &Document, tree: &Tree, policy: Policy) -> Document {
    let mut out = Document::new();
    for (key, value) in doc {
        match tree.get(key) {
            Some(Node::Exclude) => {}
            Some(Node::Children(sub)) => {
                out.insert(key.clone(), exclude_value(value, sub, policy));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// `value` without what a sub-projection excludes (arrays in arrays are walked in find and
/// kept whole in aggregation).
fn exclude_value(value: &Bson, sub: &Tree, policy: Policy) -> Bson {
    match value {
        Bson::Document(d) => Bson::Document(exclude(d, sub, policy)),
        Bson::Array(items) => Bson::Array(
            items
                .iter()
                .map(|item| match item {
                    Bson::Array(_) if policy == Policy::Aggregation => item.clone(),
                    _ => exclude_value(item, sub, policy),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Sets the computed fields of `tree` into `out`, each evaluated against the input document
/// `root`; a value that is missing removes the field.
fn computed(
    out: &mut Document,
    tree: &Tree,
    root: &Document,
    policy: Policy,
    source: Source<'_>,
) -> Result<()> {
    for (key, node) in &tree.fields {
        let value = match node {
            Node::Computed(expr) => expr.eval(root)?,
            Node::RecordId => source.record_id.cloned(),
            Node::ElemMatch(filter) => first_elem_match(root.get(key), filter, key),
            Node::Children(sub) if sub.computes => Some(computed_value(
                out.get(key).cloned(),
                sub,
                root,
                policy,
                source,
            )?),
            _ => continue,
        };
        match value {
            Some(v) => {
                out.insert(key.clone(), v);
            }
            None => {
                out.remove(key);
            }
        }
    }
    Ok(())
}

/// A level with computed fields, set into what the first pass left at its path: into a
/// document, into each element of an array, or into a new document replacing anything else
/// (`{"a.b": {$literal: 1}}` on `{a: 1}` gives `{a: {b: 1}}`).
fn computed_value(
    current: Option<Bson>,
    sub: &Tree,
    root: &Document,
    policy: Policy,
    source: Source<'_>,
) -> Result<Bson> {
    match current {
        Some(Bson::Document(mut d)) => {
            computed(&mut d, sub, root, policy, source)?;
            Ok(Bson::Document(d))
        }
        Some(Bson::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(match item {
                    Bson::Array(_) if policy == Policy::Aggregation => item,
                    other => computed_value(Some(other), sub, root, policy, source)?,
                });
            }
            Ok(Bson::Array(out))
        }
        _ => {
            let mut d = Document::new();
            computed(&mut d, sub, root, policy, source)?;
            Ok(Bson::Document(d))
        }
    }
}

fn first_elem_match(
    value: Option<&Bson>,
    filter: &crate::query::filter::Filter,
    field: &str,
) -> Option<Bson> {
    let Some(Bson::Array(items)) = value else {
        return None;
    };
    items
        .iter()
        .find(|item| filter.matches_within(&doc! {field: [(*item).clone()]}))
        .map(|item| Bson::Array(vec![item.clone()]))
}

/// find's `$slice` at `path`: the array at its end is cut; arrays on the way are walked, each
/// document element sliced below.
fn slice_at(doc: &mut Document, path: &[String], skip: Option<i32>, limit: i32) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match doc.get_mut(first) {
        Some(Bson::Array(items)) if rest.is_empty() => {
            let kept = slice(items, skip, limit);
            *items = kept;
        }
        Some(Bson::Array(items)) => {
            for item in items.iter_mut() {
                if let Bson::Document(d) = item {
                    slice_at(d, rest, skip, limit);
                }
            }
        }
        Some(Bson::Document(d)) if !rest.is_empty() => slice_at(d, rest, skip, limit),
        _ => {}
    }
}

/// mongod's `sliceArray`: `limit` alone takes the first (or, negative, the last) elements;
/// with `skip`, `limit` elements from `skip` (negative: counted from the end).
fn slice(items: &[Bson], skip: Option<i32>, limit: i32) -> Vec<Bson> {
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let limit = i64::from(limit);
    let (start, count) = match skip.map(i64::from) {
        None if limit < 0 => {
            let start = (len + limit).max(0);
            (start, len - start)
        }
        None => (0, limit.min(len)),
        Some(skip) => {
            let start = if skip < 0 {
                (len + skip).max(0)
            } else {
                skip.min(len)
            };
            (start, (len - start).min(limit))
        }
    };
    items
        .iter()
        .skip(usize::try_from(start).unwrap_or(0))
        .take(usize::try_from(count).unwrap_or(0))
        .cloned()
        .collect()
}

/// The positional `a.$`: the first array on `path` in the projected document becomes the
/// one element the query matched, found by matching the input document `root`. A path with
/// no array is left as the first pass made it.
fn positional(
    out: &mut Document,
    root: &Document,
    path: &[String],
    source: Source<'_>,
) -> Result<()> {
    let index = source.query.and_then(|q| q.positional_match(root));
    let mut level = out;
    for (at, part) in path.iter().enumerate() {
        let last_level = at + 1 == path.len();
        match level.get_mut(part) {
            Some(Bson::Array(items)) => {
                let Some(index) = index else {
                    return Err(Error::new(
                        ErrorCode::Location51246,
                        "positional operator '.$' couldn't find a matching element in the array",
                    ));
                };
                let Some(element) = items.get(index).cloned() else {
                    return Err(Error::new(
                        ErrorCode::Location51247,
                        "positional operator '.$' element mismatch",
                    ));
                };
                *items = vec![element];
                return Ok(());
            }
            Some(Bson::Document(d)) if !last_level => level = d,
            _ => return Ok(()),
        }
    }
    Ok(())
}
