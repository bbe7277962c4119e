//! The projection tree: one node per path component, built by `parse.rs` and walked by
//! `apply.rs`. Owns path insertion and mongod's path-collision errors (31249, 31250); does not
//! own which forms a projection may use (the parser's policy).

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::Expression;
use crate::query::filter::Filter;

/// What one path of a projection does.
#[derive(Debug, Clone)]
pub(super) enum Node {
    /// `1`/`true`/any non-zero number: keep the field.
    Include,
    /// `0`/`false`: drop the field.
    Exclude,
    /// An aggregation expression or a literal, evaluated against the whole input document.
    Computed(Expression),
    /// find's `{$meta: "recordId"}`: the record id of the document, when the reader has one.
    RecordId,
    /// find's `$elemMatch` (top-level fields only): the first element of the array that
    /// matches, as a one-element array; the field is left out when none does.
    ElemMatch(Box<Filter>),
    /// find's `$slice` or positional `a.$`: the path is kept, and the array at its end is
    /// reduced after the rest of the projection ran (`Projection::post`).
    KeepForPost,
    /// A level below: `{a: {b: 1}}` or `{"a.b": 1}`.
    Children(Tree),
}

/// The children of one level, in the order the projection named them (computed fields are
/// added in this order; included fields keep the document's order).
#[derive(Debug, Clone, Default)]
pub(super) struct Tree {
    pub(super) fields: Vec<(String, Node)>,
    /// Some node at or below this level computes a value (an expression, a `$meta`, an
    /// `$elemMatch`): only such levels are walked a second time.
    pub(super) computes: bool,
}

impl Node {
    fn computes(&self) -> bool {
        match self {
            Node::Computed(_) | Node::RecordId | Node::ElemMatch(_) => true,
            Node::Children(tree) => tree.computes,
            Node::Include | Node::Exclude | Node::KeepForPost => false,
        }
    }
}

impl Tree {
    pub(super) fn get(&self, name: &str) -> Option<&Node> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, n)| n)
    }

    pub(super) fn remove(&mut self, name: &str) {
        self.fields.retain(|(k, _)| k != name);
    }

    /// Adds `node` at `path` (a key's components, relative to this level), creating the levels
    /// between. A path that reaches an existing leaf, or a leaf that lands on an existing path,
    /// is mongod's collision: 31250 at the end of the path, 31249 on the way (its "remaining
    /// portion" is the key without its first component, as mongod prints it).
    pub(super) fn insert(&mut self, path: &[String], node: Node) -> Result<()> {
        let full = path.join(".");
        let tail = path.get(1..).unwrap_or_default().join(".");
        self.insert_at(path, node, &full, &tail)
    }

    fn insert_at(&mut self, path: &[String], node: Node, full: &str, tail: &str) -> Result<()> {
        let Some((first, rest)) = path.split_first() else {
            return Ok(());
        };
        self.computes |= node.computes();
        let position = self.fields.iter().position(|(k, _)| k == first);
        if rest.is_empty() {
            if position.is_some() {
                return Err(Error::new(
                    ErrorCode::Location31250,
                    format!("Path collision at {full}"),
                ));
            }
            self.fields.push((first.clone(), node));
            return Ok(());
        }
        let index = match position {
            Some(i) => i,
            None => {
                self.fields
                    .push((first.clone(), Node::Children(Tree::default())));
                self.fields.len().saturating_sub(1)
            }
        };
        match self.fields.get_mut(index) {
            Some((_, Node::Children(sub))) => sub.insert_at(rest, node, full, tail),
            _ => Err(Error::new(
                ErrorCode::Location31249,
                format!("Path collision at {full} remaining portion {tail}"),
            )),
        }
    }

    /// The level at `path` for a sub-projection `{a: {...}}`, created if absent; a leaf there
    /// is a collision (31250).
    pub(super) fn level(&mut self, path: &[String]) -> Result<&mut Tree> {
        let full = path.join(".");
        let mut level = self;
        for part in path {
            let index = match level.fields.iter().position(|(k, _)| k == part) {
                Some(i) => i,
                None => {
                    level
                        .fields
                        .push((part.clone(), Node::Children(Tree::default())));
                    level.fields.len().saturating_sub(1)
                }
            };
            level = match level.fields.get_mut(index) {
                Some((_, Node::Children(sub))) => sub,
                _ => {
                    return Err(Error::new(
                        ErrorCode::Location31250,
                        format!("Path collision at {full}"),
                    ))
                }
            };
        }
        Ok(level)
    }

    /// Recomputes [`Tree::computes`] bottom-up (levels created by [`Tree::level`] learn of
    /// what was inserted into them only here).
    pub(super) fn settle(&mut self) -> bool {
        let mut computes = false;
        for (_, node) in &mut self.fields {
            computes |= match node {
                Node::Children(sub) => sub.settle(),
                other => other.computes(),
            };
        }
        self.computes = computes;
        computes
    }
}
