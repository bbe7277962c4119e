//! Projections: one parser and one evaluator for find's `projection` (and findAndModify's
//! `fields`) and the pipeline's `$project`/`$unset`, differing only by a [`Policy`].
//!
//! A projection document is parsed once (`parse.rs`) into a tree of paths (`ast.rs`) and
//! applied per document (`apply.rs`) the way mongod's projection executor does: included or
//! excluded fields keep the document's order; computed fields (aggregation expressions,
//! literals, `$meta`, find's `$elemMatch`) are then set in the projection's order, at any depth
//! (`{"a.b": expr}` and `{a: {b: expr}}` alike); last, find's `$slice` and positional `a.$`
//! reduce the arrays the projection kept.
//!
//! Owns: projection syntax, inclusion/exclusion and `_id` rules, path collisions, the
//! find-only operators and their errors (mongod's codes and messages). Does not own:
//! expressions (`query::expr`), matching (`query::filter`, which also says which array
//! element the query matched, for the positional `$` of updates and projections alike), or
//! where record ids come from (the reader passes them in a [`Source`]).

mod apply;
mod ast;
mod parse;
#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::query::expr::Variables;
use crate::query::filter::Filter;
use bson::{Bson, Document};

/// Which forms a projection may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// find and findAndModify: positional `a.$`, `$elemMatch`, `$slice` with a number or
    /// `[skip, limit]` as the find operator, `$meta`, and expressions and literals as computed
    /// fields (mongod 4.4+); nested arrays are walked into.
    Find,
    /// `$project`/`$unset`: expressions and literals; `{$slice: ...}` is the expression; no
    /// positional projection and no `$elemMatch`; arrays nested in arrays are left as they are.
    Aggregation,
}

/// A compiled projection.
#[derive(Debug, Clone)]
pub struct Projection {
    tree: ast::Tree,
    inclusion: bool,
    policy: Policy,
    /// find's `$slice` and positional projections, applied in the projection's order to the
    /// projected document.
    post: Vec<(Vec<String>, Post)>,
    elem_match: bool,
}

/// What a find projection does to a kept array after the rest of the projection ran.
#[derive(Debug, Clone, Copy)]
enum Post {
    /// `$slice: n` (`skip: None`; negative `n` counts from the end) or `[skip, limit]`.
    Slice { skip: Option<i32>, limit: i32 },
    /// `a.$`: the element the query matched.
    Positional,
}

/// What a reader knows about a document besides its fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct Source<'a> {
    /// The query that selected the document (the positional projection's match).
    pub query: Option<&'a Filter>,
    /// The document's record id (`{$meta: "recordId"}`).
    pub record_id: Option<&'a Bson>,
}

impl Projection {
    /// A find projection (find's `projection`, findAndModify's `fields`): `query` is the
    /// command's filter, which a positional projection needs; `vars` are the command's `let`
    /// variables and `$$NOW`.
    pub fn find(spec: &Document, query: &Filter, vars: &Variables) -> Result<Projection> {
        parse::parse(spec, Policy::Find, Some(query), vars)
    }

    /// A `$project` stage's projection.
    pub fn aggregation(spec: &Document, vars: &Variables) -> Result<Projection> {
        parse::parse(spec, Policy::Aggregation, None, vars)
    }

    /// Whether the projection holds an `$elemMatch` (which compares strings by their bytes).
    pub fn has_elem_match(&self) -> bool {
        self.elem_match
    }

    /// Whether applying needs the query that selected the document (a positional `a.$`).
    pub fn needs_query(&self) -> bool {
        self.post.iter().any(|(_, p)| matches!(p, Post::Positional))
    }

    /// Whether applying uses the document's record id (`{$meta: "recordId"}`).
    pub fn needs_record_id(&self) -> bool {
        fn walk(tree: &ast::Tree) -> bool {
            tree.fields.iter().any(|(_, n)| match n {
                ast::Node::RecordId => true,
                ast::Node::Children(sub) => walk(sub),
                _ => false,
            })
        }
        walk(&self.tree)
    }

    /// Applies the projection to `doc` with nothing known besides its fields.
    pub fn apply(&self, doc: &Document) -> Result<Document> {
        self.apply_from(doc, Source::default())
    }

    /// Applies the projection to `doc`, read with what `source` knows; an error when an
    /// expression fails, an `$elemMatch` `$regex` could not decide, or a positional projection
    /// finds no element the query matched (51246, 51247).
    pub fn apply_from(&self, doc: &Document, source: Source<'_>) -> Result<Document> {
        crate::query::filter::watch_regex(|| apply::apply(self, doc, source))?
    }
}
