//! Find projections: compiled once into a field tree, then applied per document.
//!
//! Owns: inclusion/exclusion (`1/0/true/false`, any number), nested and dotted paths (through
//! arrays), `_id` defaulting to included, `$slice` (`n` or `[skip, limit]`), `$elemMatch`, and
//! literal values as computed fields. Does not own: the positional `a.$` projection, `$meta`
//! and aggregation expressions (`"$field"`, `{$add: ...}`), which are refused with 238
//! NotImplemented.

use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::is_number;
use crate::query::depth::MAX_STORED_DEPTH;
use crate::query::filter::Filter;
use bson::{doc, Bson, Document};

/// A compiled projection.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    /// `None`: the empty projection, which returns whole documents.
    tree: Option<Tree>,
    inclusion: bool,
}

#[derive(Debug, Clone, Default)]
struct Tree {
    fields: Vec<(String, Node)>,
}

#[derive(Debug, Clone)]
enum Node {
    Include,
    Exclude,
    Slice(SliceSpec),
    ElemMatch(Box<Filter>, String),
    Literal(Bson),
    Children(Tree),
}

/// `$slice: n` (first n, or last -n) or `$slice: [skip, limit]` (negative skip counts from the
/// end).
#[derive(Debug, Clone, Copy)]
enum SliceSpec {
    Count(i64),
    SkipLimit(i64, i64),
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Include,
    Exclude,
    Neutral,
}

impl Tree {
    fn get(&self, name: &str) -> Option<&Node> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, n)| n)
    }

    fn insert(&mut self, path: &[&str], full: &str, node: Node) -> Result<()> {
        let Some((first, rest)) = path.split_first() else {
            return Ok(());
        };
        let position = self.fields.iter().position(|(k, _)| k == first);
        if rest.is_empty() {
            if position.is_some() {
                return Err(collision(full, ""));
            }
            self.fields.push(((*first).to_owned(), node));
            return Ok(());
        }
        let index = match position {
            Some(i) => i,
            None => {
                self.fields
                    .push(((*first).to_owned(), Node::Children(Tree::default())));
                self.fields.len() - 1
            }
        };
        match self.fields.get_mut(index) {
            Some((_, Node::Children(sub))) => sub.insert(rest, full, node),
            _ => Err(collision(full, &rest.join("."))),
        }
    }
}

fn collision(full: &str, remaining: &str) -> Error {
    if remaining.is_empty() {
        Error::new(
            ErrorCode::Location31250,
            format!("Path collision at {full}"),
        )
    } else {
        Error::new(
            ErrorCode::Location31249,
            format!("Path collision at {full} remaining portion {remaining}"),
        )
    }
}

fn truthy_number(value: &Bson) -> bool {
    !crate::query::compare::values_equal(value, &Bson::Int32(0))
}

impl Projection {
    /// Compiles a projection document; `{}` returns documents whole.
    pub fn compile(spec: &Document) -> Result<Projection> {
        if spec.is_empty() {
            return Ok(Projection::default());
        }
        let mut entries: Vec<(String, Node, Kind)> = Vec::new();
        flatten(spec, "", &mut entries)?;
        let mut mode: Option<Kind> = None;
        let mut id_node: Option<Node> = None;
        for (field, _, kind) in &entries {
            if field == "_id" || *kind == Kind::Neutral {
                continue;
            }
            match (mode, *kind) {
                (None, k) => mode = Some(k),
                (Some(Kind::Include), Kind::Exclude) => {
                    return Err(Error::new(
                        ErrorCode::Location31254,
                        format!("Cannot do exclusion on field {field} in inclusion projection"),
                    ))
                }
                (Some(Kind::Exclude), Kind::Include) => {
                    return Err(Error::new(
                        ErrorCode::Location31253,
                        format!("Cannot do inclusion on field {field} in exclusion projection"),
                    ))
                }
                _ => {}
            }
        }
        let inclusion = match mode {
            Some(kind) => kind == Kind::Include,
            // Only `_id` and neutral ($slice) entries: `{_id: 1}` includes, the rest exclude.
            None => entries
                .iter()
                .any(|(f, _, k)| f == "_id" && *k == Kind::Include),
        };
        let mut tree = Tree::default();
        for (field, node, _) in entries {
            if field == "_id" {
                id_node = Some(node);
                continue;
            }
            let parts: Vec<&str> = field.split('.').collect();
            tree.insert(&parts, &field, node)?;
        }
        let id_node = match id_node {
            Some(node) => node,
            None if inclusion => Node::Include,
            None => Node::Children(Tree::default()),
        };
        // `_id` first so it keeps its place; an empty subtree in exclusion mode means "keep".
        if !matches!(&id_node, Node::Children(t) if t.fields.is_empty()) {
            tree.fields.insert(0, ("_id".to_owned(), id_node));
        }
        Ok(Projection {
            tree: Some(tree),
            inclusion,
        })
    }

    /// Applies the projection to one document; an error when an `$elemMatch` `$regex` could
    /// not decide.
    pub fn apply(&self, doc: &Document) -> Result<Document> {
        crate::query::filter::watch_regex(|| match &self.tree {
            None => doc.clone(),
            Some(tree) if self.inclusion => include(doc, tree),
            Some(tree) => exclude(doc, tree),
        })
    }
}

fn flatten(spec: &Document, prefix: &str, out: &mut Vec<(String, Node, Kind)>) -> Result<()> {
    for (key, value) in spec {
        let field = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if key.starts_with('$') && prefix.is_empty() {
            return Err(Error::bad_value(format!(
                "FieldPath field names may not start with '$'. Consider using $getField or \
                 $setField. (field: {field})"
            )));
        }
        if field.ends_with(".$") || field.contains(".$.") {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                "the positional projection operator '$' is not supported by this server",
            ));
        }
        if field.split('.').any(str::is_empty) {
            return Err(Error::bad_value(format!(
                "FieldPath must not contain empty field names: {field}"
            )));
        }
        if field.split('.').nth(MAX_STORED_DEPTH).is_some() {
            return Err(Error::new(
                ErrorCode::Location5729100,
                "FieldPath is too long",
            ));
        }
        match value {
            Bson::Boolean(b) => out.push(include_or_exclude(field, *b)),
            v if is_number(v) => out.push(include_or_exclude(field, truthy_number(v))),
            Bson::Document(d) => {
                match d.keys().next().map(String::as_str) {
                    Some("$slice") => out.push((field, slice(d)?, Kind::Neutral)),
                    Some("$elemMatch") => {
                        if !prefix.is_empty() || field.contains('.') {
                            return Err(Error::bad_value(
                                "Cannot use $elemMatch projection on a nested field.",
                            ));
                        }
                        let Some(Bson::Document(cond)) = d.get("$elemMatch") else {
                            return Err(Error::bad_value(
                                "elemMatch: Invalid argument, object required.",
                            ));
                        };
                        let filter =
                            Filter::compile(&doc! {field.clone(): {"$elemMatch": cond.clone()}})?;
                        out.push((
                            field.clone(),
                            Node::ElemMatch(Box::new(filter), field),
                            Kind::Include,
                        ));
                    }
                    Some(op) if op.starts_with('$') => {
                        return Err(Error::new(
                            ErrorCode::NotImplemented,
                            format!("projection operator {op} is not supported by this server"),
                        ))
                    }
                    Some(_) => flatten(d, &field, out)?,
                    None => return Err(Error::new(
                        ErrorCode::Location51270,
                        "An empty sub-projection is not a valid value. Found empty object at path",
                    )),
                }
            }
            Bson::String(s) if s.starts_with('$') => {
                return Err(Error::new(
                    ErrorCode::NotImplemented,
                    "aggregation expressions in find projections are not supported by this server",
                ))
            }
            other => out.push((field, Node::Literal(other.clone()), Kind::Include)),
        }
    }
    Ok(())
}

fn include_or_exclude(field: String, include: bool) -> (String, Node, Kind) {
    if include {
        (field, Node::Include, Kind::Include)
    } else {
        (field, Node::Exclude, Kind::Exclude)
    }
}

fn slice(spec: &Document) -> Result<Node> {
    let arg = spec.get("$slice").unwrap_or(&Bson::Null);
    let as_int = |v: &Bson| crate::query::filter::integral_value(v);
    let invalid = || Error::bad_value("$slice only supports numbers and [skip, limit] arrays");
    match arg {
        v if is_number(v) => Ok(Node::Slice(SliceSpec::Count(
            as_int(v).ok_or_else(invalid)?,
        ))),
        Bson::Array(items) if items.len() == 2 => {
            let skip = items.first().and_then(as_int).ok_or_else(invalid)?;
            let limit = items.get(1).and_then(as_int).ok_or_else(invalid)?;
            if limit <= 0 {
                return Err(Error::bad_value("$slice limit must be positive"));
            }
            Ok(Node::Slice(SliceSpec::SkipLimit(skip, limit)))
        }
        _ => Err(invalid()),
    }
}

fn apply_slice(items: &[Bson], spec: SliceSpec) -> Vec<Bson> {
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let (start, count) = match spec {
        SliceSpec::Count(n) if n >= 0 => (0, n),
        SliceSpec::Count(n) => ((len.saturating_add(n)).max(0), n.saturating_neg()),
        SliceSpec::SkipLimit(skip, limit) if skip < 0 => ((len.saturating_add(skip)).max(0), limit),
        SliceSpec::SkipLimit(skip, limit) => (skip.min(len), limit),
    };
    items
        .iter()
        .skip(usize::try_from(start).unwrap_or(0))
        .take(usize::try_from(count).unwrap_or(0))
        .cloned()
        .collect()
}

fn include(doc: &Document, tree: &Tree) -> Document {
    let mut out = Document::new();
    for (key, value) in doc {
        let Some(node) = tree.get(key) else {
            continue;
        };
        match node {
            Node::Include => {
                out.insert(key.clone(), value.clone());
            }
            Node::Children(sub) => {
                if let Some(projected) = include_value(value, sub) {
                    out.insert(key.clone(), projected);
                }
            }
            Node::Slice(spec) => {
                out.insert(key.clone(), sliced(value, *spec));
            }
            Node::ElemMatch(filter, field) => {
                if let Some(first) = first_elem_match(value, filter, field) {
                    out.insert(key.clone(), Bson::Array(vec![first]));
                }
            }
            Node::Exclude | Node::Literal(_) => {}
        }
    }
    add_literals(&mut out, tree);
    out
}

fn include_value(value: &Bson, sub: &Tree) -> Option<Bson> {
    match value {
        Bson::Document(d) => Some(Bson::Document(include(d, sub))),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter_map(|item| include_value(item, sub))
                .collect(),
        )),
        _ => None,
    }
}

fn add_literals(out: &mut Document, tree: &Tree) {
    for (key, node) in &tree.fields {
        match node {
            Node::Literal(v) => {
                out.insert(key.clone(), v.clone());
            }
            Node::Children(sub) if has_literal(sub) => match out.get_mut(key) {
                Some(Bson::Document(inner)) => add_literals(inner, sub),
                Some(_) => {}
                None => {
                    let mut inner = Document::new();
                    add_literals(&mut inner, sub);
                    out.insert(key.clone(), inner);
                }
            },
            _ => {}
        }
    }
}

fn has_literal(tree: &Tree) -> bool {
    tree.fields.iter().any(|(_, n)| match n {
        Node::Literal(_) => true,
        Node::Children(sub) => has_literal(sub),
        _ => false,
    })
}

fn exclude(doc: &Document, tree: &Tree) -> Document {
    let mut out = Document::new();
    for (key, value) in doc {
        match tree.get(key) {
            None | Some(Node::Include) | Some(Node::Literal(_)) => {
                out.insert(key.clone(), value.clone());
            }
            Some(Node::Exclude) => {}
            Some(Node::Children(sub)) => {
                out.insert(key.clone(), exclude_value(value, sub));
            }
            Some(Node::Slice(spec)) => {
                out.insert(key.clone(), sliced(value, *spec));
            }
            Some(Node::ElemMatch(filter, field)) => {
                if let Some(first) = first_elem_match(value, filter, field) {
                    out.insert(key.clone(), Bson::Array(vec![first]));
                }
            }
        }
    }
    out
}

fn exclude_value(value: &Bson, sub: &Tree) -> Bson {
    match value {
        Bson::Document(d) => Bson::Document(exclude(d, sub)),
        Bson::Array(items) => Bson::Array(items.iter().map(|i| exclude_value(i, sub)).collect()),
        other => other.clone(),
    }
}

fn sliced(value: &Bson, spec: SliceSpec) -> Bson {
    match value {
        Bson::Array(items) => Bson::Array(apply_slice(items, spec)),
        other => other.clone(),
    }
}

fn first_elem_match(value: &Bson, filter: &Filter, field: &str) -> Option<Bson> {
    let Bson::Array(items) = value else {
        return None;
    };
    items
        .iter()
        .find(|item| filter.matches_within(&doc! {field: [(*item).clone()]}))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(spec: Document, d: Document) -> Document {
        Projection::compile(&spec).unwrap().apply(&d).unwrap()
    }

    #[test]
    fn inclusion_and_exclusion() {
        let d =
            doc! {"_id": 1, "a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 4, "x": 1}, 5, {"x": 2}]};
        let cases: Vec<(Document, Document)> = vec![
            (doc! {}, d.clone()),
            (doc! {"a": 1}, doc! {"_id": 1, "a": 1}),
            (doc! {"a": true, "_id": 0}, doc! {"a": 1}),
            (
                doc! {"a": 0},
                doc! {"_id": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 4, "x": 1}, 5, {"x": 2}]},
            ),
            (
                doc! {"_id": 0},
                doc! {"a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 4, "x": 1}, 5, {"x": 2}]},
            ),
            (doc! {"_id": 1}, doc! {"_id": 1}),
            (doc! {"b.c": 1}, doc! {"_id": 1, "b": {"c": 2}}),
            (doc! {"b": {"c": 1}}, doc! {"_id": 1, "b": {"c": 2}}),
            (doc! {"e.c": 1}, doc! {"_id": 1, "e": [{"c": 4}, {}]}),
            (
                doc! {"b.c": 0, "e.x": 0},
                doc! {"_id": 1, "a": 1, "b": {"d": 3}, "e": [{"c": 4}, 5, {}]},
            ),
            (doc! {"missing": 1}, doc! {"_id": 1}),
            (doc! {"a": 1.5, "z": 2_i64}, doc! {"_id": 1, "a": 1}),
            (
                doc! {"a": 1, "lit": "x"},
                doc! {"_id": 1, "a": 1, "lit": "x"},
            ),
        ];
        for (spec, expected) in cases {
            let got = project(spec.clone(), d.clone());
            assert_eq!(got, expected, "{spec}");
        }
    }

    #[test]
    fn slice_and_elem_match() {
        let d = doc! {"_id": 1, "a": [1, 2, 3, 4, 5], "b": [{"x": 1}, {"x": 2}, {"x": 3}], "c": 1};
        let cases: Vec<(Document, Document)> = vec![
            (
                doc! {"a": {"$slice": 2}},
                doc! {"_id": 1, "a": [1, 2], "b": [{"x": 1}, {"x": 2}, {"x": 3}], "c": 1},
            ),
            (
                doc! {"a": {"$slice": -2}, "b": 0, "c": 0},
                doc! {"_id": 1, "a": [4, 5]},
            ),
            (
                doc! {"a": {"$slice": [1, 2]}, "c": 1},
                doc! {"_id": 1, "a": [2, 3], "c": 1},
            ),
            (
                doc! {"a": {"$slice": [-2, 5]}, "_id": 0, "c": 1},
                doc! {"a": [4, 5], "c": 1},
            ),
            (
                doc! {"a": {"$slice": [10, 1]}, "c": 1},
                doc! {"_id": 1, "a": [], "c": 1},
            ),
            (
                doc! {"b": {"$elemMatch": {"x": {"$gte": 2}}}},
                doc! {"_id": 1, "b": [{"x": 2}]},
            ),
            (
                doc! {"b": {"$elemMatch": {"x": 9}}, "c": 1},
                doc! {"_id": 1, "c": 1},
            ),
            (
                doc! {"a": {"$elemMatch": {"$gt": 3}}},
                doc! {"_id": 1, "a": [4]},
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(project(spec.clone(), d.clone()), expected, "{spec}");
        }
    }

    #[test]
    fn errors() {
        let cases: Vec<(Document, ErrorCode, &str)> = vec![
            (
                doc! {"a": 1, "b": 0},
                ErrorCode::Location31254,
                "Cannot do exclusion on field b in inclusion projection",
            ),
            (
                doc! {"a": 0, "b": 1},
                ErrorCode::Location31253,
                "Cannot do inclusion on field b in exclusion projection",
            ),
            (
                doc! {"a": 1, "a.b": 1},
                ErrorCode::Location31249,
                "Path collision at a.b remaining portion b",
            ),
            (
                doc! {"a.$": 1},
                ErrorCode::NotImplemented,
                "the positional projection operator '$' is not supported by this server",
            ),
            (
                doc! {"a": {"$slice": "x"}},
                ErrorCode::BadValue,
                "$slice only supports numbers and [skip, limit] arrays",
            ),
            (
                doc! {"a": {"$slice": [1, 0]}},
                ErrorCode::BadValue,
                "$slice limit must be positive",
            ),
        ];
        for (spec, code, message) in cases {
            let err = Projection::compile(&spec).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{spec}");
        }
    }
}
