//! `$addFields` / `$set`: computed fields set into the document, `{"a.b": x}` and `{a: {b: x}}`
//! alike, each evaluated against the unchanged input.

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{field_path, Expression, Variables};
use crate::query::path::type_name;
use bson::{Bson, Document};

/// `$addFields` as a tree: `{"a.b": x}` and `{a: {b: x}}` both set `b` inside `a`.
#[derive(Debug, Clone)]
pub enum AddNode {
    Value(Expression),
    Tree(Vec<(String, AddNode)>),
}

pub fn add_fields_tree(
    arg: &Bson,
    stage: &str,
    vars: &Variables,
) -> Result<Vec<(String, AddNode)>> {
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
    vars: &Variables,
) -> Result<()> {
    for (k, v) in spec {
        let full = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let path = field_path(k)?;
        // Every `$` key is an expression here (`$slice` too: there is no find-style `$slice`
        // in `$addFields`).
        let nested = matches!(v, Bson::Document(d) if !d.is_empty()
            && !d.keys().next().is_some_and(|k| k.starts_with('$')));
        let leaf = if nested {
            None
        } else {
            Some(Expression::compile(v, vars)?)
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
pub fn apply_tree(
    root: &Document,
    target: &mut Document,
    tree: &[(String, AddNode)],
) -> Result<()> {
    for (name, node) in tree {
        match node {
            AddNode::Value(e) => match e.eval(root)? {
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
                    *slot = apply_tree_to_value(root, value, sub)?;
                }
                None => {
                    let value = apply_tree_to_value(root, Bson::Null, sub)?;
                    target.insert(name.clone(), value);
                }
            },
        }
    }
    Ok(())
}

fn apply_tree_to_value(root: &Document, value: Bson, tree: &[(String, AddNode)]) -> Result<Bson> {
    Ok(match value {
        Bson::Document(mut d) => {
            apply_tree(root, &mut d, tree)?;
            Bson::Document(d)
        }
        Bson::Array(items) => Bson::Array(
            items
                .into_iter()
                .map(|v| apply_tree_to_value(root, v, tree))
                .collect::<Result<_>>()?,
        ),
        // A scalar or missing value is replaced by a document of the computed fields.
        _ => {
            let mut d = Document::new();
            apply_tree(root, &mut d, tree)?;
            Bson::Document(d)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, DateTime};

    #[test]
    fn every_dollar_key_is_an_expression_slice_included() {
        let vars = Variables::new(DateTime::from_millis(0));
        let cases = [
            (
                doc! {"o": {"$slice": [[1, 2, 3], 1]}},
                doc! {"_id": 1, "list": [4, 5], "o": [1]},
            ),
            (
                doc! {"list": {"$slice": ["$list", -1]}},
                doc! {"_id": 1, "list": [5]},
            ),
            (
                doc! {"s": {"t": 1}},
                doc! {"_id": 1, "list": [4, 5], "s": {"t": 1}},
            ),
        ];
        for (spec, expected) in cases {
            let tree = add_fields_tree(&Bson::Document(spec.clone()), "$set", &vars).unwrap();
            let input = doc! {"_id": 1, "list": [4, 5]};
            let mut out = input.clone();
            apply_tree(&input, &mut out, &tree).unwrap();
            assert_eq!(out, expected, "{spec}");
        }
    }
}
