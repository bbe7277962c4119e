//! Stages that reshape each document: `$project` / `$unset` (inclusion and exclusion through
//! the find projection, plus top-level computed fields) and `$addFields` / `$set`.

use super::expr::{field_path, Expr};
use crate::command::args::{is_truthy, type_name};
use crate::error::{Error, ErrorCode, Result};
use crate::query::projection::Projection;
use bson::{doc, Bson, Document};

/// `$project`: inclusion/exclusion through the find projection, plus top-level computed fields.
pub struct Project {
    base: Base,
    computed: Vec<(String, Expr)>,
}

enum Base {
    Projection(Projection),
    /// Only computed fields: the output starts from `_id` alone (or nothing).
    IdOnly(bool),
}

impl Project {
    pub fn compile(arg: &Bson, vars: &Document) -> Result<Project> {
        let Bson::Document(spec) = arg else {
            return Err(Error::new(
                ErrorCode::Location15969,
                "$project specification must be an object",
            ));
        };
        if spec.is_empty() {
            return Err(Error::new(
                ErrorCode::Location51272,
                "Invalid $project :: caused by :: projection specification must have at least one field",
            ));
        }
        let mut plain = Document::new();
        let mut computed = Vec::new();
        for (k, v) in spec {
            if is_expression(v) {
                if k.contains('.') {
                    return Err(Error::new(ErrorCode::NotImplemented, format!("computed dotted fields in $project ('{k}') are not supported by this server")));
                }
                computed.push((k.clone(), Expr::compile(v, vars)?));
            } else {
                if let Bson::Document(d) = v {
                    if contains_expression(d) {
                        return Err(Error::new(ErrorCode::NotImplemented, format!("computed fields inside sub-documents of $project ('{k}') are not supported by this server")));
                    }
                }
                plain.insert(k.clone(), v.clone());
            }
        }
        if computed.is_empty() {
            return Ok(Project {
                base: Base::Projection(Projection::compile(&plain)?),
                computed,
            });
        }
        if has_exclusion(&plain, true) {
            return Err(Error::new(
                ErrorCode::Location31252,
                "Invalid $project :: caused by :: Cannot use expression other than $meta in exclusion projection",
            ));
        }
        let include_id = plain.get("_id").is_none_or(is_truthy);
        let base = if plain.keys().any(|k| k != "_id") {
            Base::Projection(Projection::compile(&plain)?)
        } else {
            Base::IdOnly(include_id)
        };
        Ok(Project { base, computed })
    }

    /// `$unset: "a"` or `["a", "b.c"]`: an exclusion projection.
    pub fn unset(arg: &Bson) -> Result<Project> {
        let fields: Vec<&Bson> = match arg {
            Bson::Array(items) if !items.is_empty() => items.iter().collect(),
            Bson::String(_) => vec![arg],
            _ => {
                return Err(Error::new(
                    ErrorCode::Location31120,
                    "$unset specification must be a string or an array",
                ))
            }
        };
        let mut spec = Document::new();
        for f in fields {
            let Bson::String(name) = f else {
                return Err(Error::new(ErrorCode::Location31120, "$unset specification must be a string or an array containing only string values"));
            };
            spec.insert(name.clone(), 0);
        }
        Ok(Project {
            base: Base::Projection(Projection::compile(&spec)?),
            computed: Vec::new(),
        })
    }

    pub fn apply(&self, doc: &Document) -> Result<Document> {
        let mut out = match &self.base {
            Base::Projection(p) => p.apply(doc)?,
            Base::IdOnly(true) => doc
                .get("_id")
                .map(|id| doc! {"_id": id.clone()})
                .unwrap_or_default(),
            Base::IdOnly(false) => Document::new(),
        };
        for (k, e) in &self.computed {
            match e.eval(doc) {
                Some(v) if k == "_id" && !out.contains_key("_id") => {
                    let mut front = doc! {"_id": v};
                    front.extend(out);
                    out = front;
                }
                Some(v) => {
                    out.insert(k.clone(), v);
                }
                None => {
                    out.remove(k);
                }
            }
        }
        Ok(out)
    }
}

/// A value `$project` computes rather than includes or excludes.
fn is_expression(v: &Bson) -> bool {
    match v {
        Bson::String(s) => s.starts_with('$'),
        Bson::Document(d) => d
            .keys()
            .next()
            .is_some_and(|k| k.starts_with('$') && k != "$slice" && k != "$elemMatch"),
        _ => false,
    }
}

fn contains_expression(d: &Document) -> bool {
    d.values().any(|v| match v {
        Bson::Document(sub) => is_expression(v) || contains_expression(sub),
        other => is_expression(other),
    })
}

fn has_exclusion(spec: &Document, top: bool) -> bool {
    spec.iter().any(|(k, v)| match v {
        _ if top && k == "_id" => false,
        Bson::Boolean(false) => true,
        v if crate::query::compare::is_number(v) => !is_truthy(v),
        Bson::Document(d) if !is_expression(v) => has_exclusion(d, false),
        _ => false,
    })
}

/// `$addFields` as a tree: `{"a.b": x}` and `{a: {b: x}}` both set `b` inside `a`.
pub enum AddNode {
    Value(Expr),
    Tree(Vec<(String, AddNode)>),
}

pub fn add_fields_tree(arg: &Bson, stage: &str, vars: &Document) -> Result<Vec<(String, AddNode)>> {
    let Bson::Document(spec) = arg else {
        return Err(Error::new(
            ErrorCode::Location40272,
            format!(
                "{stage} specification stage must be an object, got {}",
                type_name(arg)
            ),
        ));
    };
    let mut tree = Vec::new();
    add_entries(&mut tree, spec, "", vars)?;
    Ok(tree)
}

fn add_entries(
    tree: &mut Vec<(String, AddNode)>,
    spec: &Document,
    prefix: &str,
    vars: &Document,
) -> Result<()> {
    for (k, v) in spec {
        let full = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let path = field_path(k)?;
        let nested = matches!(v, Bson::Document(d) if !d.is_empty() && !is_expression(v));
        let leaf = if nested {
            None
        } else {
            Some(Expr::compile(v, vars)?)
        };
        let mut level = &mut *tree;
        let Some((last, parents)) = path.split_last() else {
            continue;
        };
        for part in parents {
            level = subtree(level, part, &full)?;
        }
        match (leaf, v) {
            (Some(expr), _) => {
                if level.iter().any(|(name, _)| name == last) {
                    return Err(collision(&full));
                }
                level.push((last.clone(), AddNode::Value(expr)));
            }
            (None, Bson::Document(d)) => {
                let sub = subtree(level, last, &full)?;
                add_entries(sub, d, &full, vars)?;
            }
            (None, _) => {}
        }
    }
    Ok(())
}

fn subtree<'a>(
    level: &'a mut Vec<(String, AddNode)>,
    name: &str,
    full: &str,
) -> Result<&'a mut Vec<(String, AddNode)>> {
    let pos = match level.iter().position(|(n, _)| n == name) {
        Some(pos) => pos,
        None => {
            level.push((name.to_owned(), AddNode::Tree(Vec::new())));
            level.len() - 1
        }
    };
    match level.get_mut(pos) {
        Some((_, AddNode::Tree(t))) => Ok(t),
        _ => Err(collision(full)),
    }
}

fn collision(path: &str) -> Error {
    Error::new(
        ErrorCode::Location31250,
        format!("Invalid $addFields :: caused by :: Path collision at {path}"),
    )
}

/// Sets each field of `tree` in `target`, evaluating against the unchanged input `root`.
pub fn apply_tree(root: &Document, target: &mut Document, tree: &[(String, AddNode)]) {
    for (name, node) in tree {
        match node {
            AddNode::Value(e) => match e.eval(root) {
                Some(v) => {
                    target.insert(name.clone(), v);
                }
                None => {
                    target.remove(name);
                }
            },
            AddNode::Tree(sub) => match target.get_mut(name) {
                // Updated in place, so the field keeps its position.
                Some(slot) => {
                    let value = std::mem::replace(slot, Bson::Null);
                    *slot = apply_tree_to_value(root, value, sub);
                }
                None => {
                    target.insert(name.clone(), apply_tree_to_value(root, Bson::Null, sub));
                }
            },
        }
    }
}

fn apply_tree_to_value(root: &Document, value: Bson, tree: &[(String, AddNode)]) -> Bson {
    match value {
        Bson::Document(mut d) => {
            apply_tree(root, &mut d, tree);
            Bson::Document(d)
        }
        Bson::Array(items) => Bson::Array(
            items
                .into_iter()
                .map(|v| apply_tree_to_value(root, v, tree))
                .collect(),
        ),
        // A scalar or missing value is replaced by a document of the computed fields.
        _ => {
            let mut d = Document::new();
            apply_tree(root, &mut d, tree);
            Bson::Document(d)
        }
    }
}
