//! Document diffs in mongod's `$v: 2` form, the way the operation log records an update, and
//! the change-stream `updateDescription` read back from one.
//!
//! A document diff holds `d` (removed fields, each `false`), `u` (changed fields and their new
//! values), `i` (added fields and their values) and `s<field>` (the diff of an embedded document
//! or array). An array diff holds `a: true`, `l` (the new length, when the array shrank),
//! `u<index>` (a new element value) and `s<index>` (the diff of an embedded element).
//!
//! Owns: computing a diff between two versions of a document, and flattening one into
//! `updatedFields`/`removedFields`/`truncatedArrays`. Does not own: applying a diff (updates are
//! applied by `query::update`, the diff is only ever read back for change streams).

use bson::{doc, Bson, Document};

/// How deep diffs descend; below it a changed value is recorded whole (stored documents are
/// far shallower than this, but a diff must never recurse without bound).
const MAX_DIFF_DEPTH: usize = 200;

/// The `$v: 2` diff turning `old` into `new`.
pub fn diff(old: &Document, new: &Document) -> Document {
    diff_documents(old, new, 0)
}

fn diff_documents(old: &Document, new: &Document, depth: usize) -> Document {
    let mut removed = Document::new();
    let mut updated = Document::new();
    let mut inserted = Document::new();
    let mut nested = Document::new();
    for name in old.keys() {
        if !new.contains_key(name) {
            removed.insert(name.clone(), false);
        }
    }
    for (name, after) in new {
        match old.get(name) {
            None => {
                inserted.insert(name.clone(), after.clone());
            }
            Some(before) if exactly_equal(before, after) => {}
            Some(before) => match sub_diff(before, after, depth) {
                Some(sub) => {
                    nested.insert(format!("s{name}"), sub);
                }
                None => {
                    updated.insert(name.clone(), after.clone());
                }
            },
        }
    }
    let mut out = Document::new();
    if !removed.is_empty() {
        out.insert("d", removed);
    }
    if !updated.is_empty() {
        out.insert("u", updated);
    }
    if !inserted.is_empty() {
        out.insert("i", inserted);
    }
    out.extend(nested);
    out
}

/// The diff of two embedded values of the same container kind, or `None` when the new value is
/// better recorded whole.
fn sub_diff(before: &Bson, after: &Bson, depth: usize) -> Option<Document> {
    if depth >= MAX_DIFF_DEPTH {
        return None;
    }
    match (before, after) {
        (Bson::Document(b), Bson::Document(a)) => Some(diff_documents(b, a, depth + 1)),
        (Bson::Array(b), Bson::Array(a)) => diff_arrays(b, a, depth + 1),
        _ => None,
    }
}

fn diff_arrays(old: &[Bson], new: &[Bson], depth: usize) -> Option<Document> {
    let mut out = doc! {"a": true};
    if new.len() < old.len() {
        out.insert("l", i32::try_from(new.len()).unwrap_or(i32::MAX));
    }
    let mut changed = 0usize;
    for (index, after) in new.iter().enumerate() {
        match old.get(index) {
            Some(before) if exactly_equal(before, after) => {}
            Some(before) => {
                changed += 1;
                match sub_diff(before, after, depth) {
                    Some(sub) => out.insert(format!("s{index}"), sub),
                    None => out.insert(format!("u{index}"), after.clone()),
                };
            }
            None => {
                changed += 1;
                out.insert(format!("u{index}"), after.clone());
            }
        }
    }
    // An array rewritten from end to end is recorded whole, as mongod does.
    if !new.is_empty() && changed == new.len() && new.len() > 1 {
        return None;
    }
    Some(out)
}

/// Equal including the BSON type (an int32 1 and a double 1.0 differ: the change is recorded).
fn exactly_equal(a: &Bson, b: &Bson) -> bool {
    a == b
}

/// A change stream's `updateDescription` for a diff: `updatedFields` (dotted paths and their new
/// values), `removedFields` and `truncatedArrays`.
pub fn update_description(diff: &Document) -> Document {
    let mut flat = Flat::default();
    flatten_document(diff, "", &mut flat, 0);
    doc! {
        "updatedFields": flat.updated,
        "removedFields": flat.removed,
        "truncatedArrays": flat.truncated,
    }
}

#[derive(Default)]
struct Flat {
    updated: Document,
    removed: Vec<Bson>,
    truncated: Vec<Bson>,
}

fn path(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

fn flatten_document(diff: &Document, prefix: &str, flat: &mut Flat, depth: usize) {
    for (key, value) in diff {
        match (key.as_str(), value) {
            ("d", Bson::Document(fields)) => {
                for name in fields.keys() {
                    flat.removed.push(Bson::String(path(prefix, name)));
                }
            }
            ("u" | "i", Bson::Document(fields)) => {
                for (name, value) in fields {
                    flat.updated.insert(path(prefix, name), value.clone());
                }
            }
            (sub, Bson::Document(inner)) if sub.starts_with('s') && depth < MAX_DIFF_DEPTH => {
                flatten_sub(inner, &path(prefix, &sub[1..]), flat, depth + 1);
            }
            _ => {}
        }
    }
}

fn flatten_sub(diff: &Document, at: &str, flat: &mut Flat, depth: usize) {
    if diff.get("a") == Some(&Bson::Boolean(true)) {
        flatten_array(diff, at, flat, depth);
    } else {
        flatten_document(diff, at, flat, depth);
    }
}

fn flatten_array(diff: &Document, at: &str, flat: &mut Flat, depth: usize) {
    for (key, value) in diff {
        if key == "a" {
            continue;
        }
        if key == "l" {
            flat.truncated.push(Bson::Document(doc! {
                "field": at,
                "newSize": value.clone(),
            }));
            continue;
        }
        let (kind, index) = key.split_at(1);
        match (kind, value) {
            ("u", value) => {
                flat.updated.insert(path(at, index), value.clone());
            }
            ("s", Bson::Document(inner)) if depth < MAX_DIFF_DEPTH => {
                flatten_sub(inner, &path(at, index), flat, depth + 1);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (old, new, the diff mongod logs, the updateDescription a change stream shows).
    #[test]
    fn diffs_and_their_update_descriptions() {
        let cases: Vec<(Document, Document, Document, Document)> = vec![
            (
                doc! {"_id": 1, "a": 1, "b": 2},
                doc! {"_id": 1, "a": 5, "c": 3},
                doc! {"d": {"b": false}, "u": {"a": 5}, "i": {"c": 3}},
                doc! {"updatedFields": {"a": 5, "c": 3}, "removedFields": ["b"], "truncatedArrays": []},
            ),
            (
                doc! {"_id": 1, "x": {"y": 1, "z": 2}},
                doc! {"_id": 1, "x": {"y": 2, "z": 2}},
                doc! {"sx": {"u": {"y": 2}}},
                doc! {"updatedFields": {"x.y": 2}, "removedFields": [], "truncatedArrays": []},
            ),
            (
                doc! {"_id": 1, "arr": [1, 2, 3, 4]},
                doc! {"_id": 1, "arr": [1, 2]},
                doc! {"sarr": {"a": true, "l": 2}},
                doc! {"updatedFields": {}, "removedFields": [], "truncatedArrays": [{"field": "arr", "newSize": 2}]},
            ),
            (
                doc! {"_id": 1, "arr": [1, 2]},
                doc! {"_id": 1, "arr": [1, 2, 3]},
                doc! {"sarr": {"a": true, "u2": 3}},
                doc! {"updatedFields": {"arr.2": 3}, "removedFields": [], "truncatedArrays": []},
            ),
            (
                doc! {"_id": 1, "arr": [{"n": 1}, {"n": 2}]},
                doc! {"_id": 1, "arr": [{"n": 1}, {"n": 3}]},
                doc! {"sarr": {"a": true, "s1": {"u": {"n": 3}}}},
                doc! {"updatedFields": {"arr.1.n": 3}, "removedFields": [], "truncatedArrays": []},
            ),
            (
                // Every element changed: the array is recorded whole.
                doc! {"_id": 1, "arr": [1, 2]},
                doc! {"_id": 1, "arr": [3, 4]},
                doc! {"u": {"arr": [3, 4]}},
                doc! {"updatedFields": {"arr": [3, 4]}, "removedFields": [], "truncatedArrays": []},
            ),
            (
                // A change of type alone is a change.
                doc! {"_id": 1, "a": 1},
                doc! {"_id": 1, "a": 1.0},
                doc! {"u": {"a": 1.0}},
                doc! {"updatedFields": {"a": 1.0}, "removedFields": [], "truncatedArrays": []},
            ),
            (
                doc! {"_id": 1, "a": {"b": 1}},
                doc! {"_id": 1, "a": "text"},
                doc! {"u": {"a": "text"}},
                doc! {"updatedFields": {"a": "text"}, "removedFields": [], "truncatedArrays": []},
            ),
            (
                doc! {"_id": 1, "a": 1},
                doc! {"_id": 1, "a": 1},
                doc! {},
                doc! {"updatedFields": {}, "removedFields": [], "truncatedArrays": []},
            ),
        ];
        for (old, new, want_diff, want_description) in cases {
            let got = diff(&old, &new);
            assert_eq!(got, want_diff, "diff of {old} -> {new}");
            assert_eq!(
                update_description(&got),
                want_description,
                "description of {got}"
            );
        }
    }

    #[test]
    fn a_diff_of_deeply_nested_documents_stops_descending() {
        let mut old = Bson::Int32(1);
        let mut new = Bson::Int32(2);
        for _ in 0..(MAX_DIFF_DEPTH + 50) {
            old = Bson::Document(doc! {"x": old});
            new = Bson::Document(doc! {"x": new});
        }
        let (Bson::Document(old), Bson::Document(new)) = (old, new) else {
            unreachable!()
        };
        let got = diff(&old, &new);
        let description = update_description(&got);
        let updated = description.get_document("updatedFields").unwrap();
        assert_eq!(updated.len(), 1);
    }
}
