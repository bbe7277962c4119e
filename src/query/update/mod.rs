//! Update documents: parsed once into an [`Update`] (a replacement, a list of operator actions,
//! or a pipeline), then applied per document with mongod's semantics and errors.
//!
//! Owns: parsing and validation (`parse.rs`: unknown modifiers, path conflicts), operator
//! arguments (`modifiers.rs`), applying operators (`ops.rs`), numeric promotion (`arith.rs`),
//! positional `$[]`, `$[<id>]` with `arrayFilters` (`array_filters.rs`) and `$` (given the
//! matched index), a subset of pipeline-style updates (`pipeline.rs`), and the upsert seed.
//! Does not own: aggregation expressions beyond literals and field paths (refused with 238
//! NotImplemented), reading the clock (callers pass `now`), or generating `_id` for upserts
//! (callers add one when it is missing).

mod arith;
mod array_filters;
#[cfg(test)]
mod error_tests;
mod modifiers;
mod ops;
mod parse;
mod pipeline;
#[cfg(test)]
mod tests;

use crate::error::{Error, ErrorCode, Result};
use crate::query::path;
use bson::{Bson, Document};

pub use array_filters::ArrayFilters;
pub use pipeline::Pipeline;

/// A parsed update.
#[derive(Debug, Clone)]
pub enum Update {
    /// A whole-document replacement (the `_id` is kept).
    Replacement(Document),
    /// Operator actions, sorted by path (mongod applies fields in lexicographic order).
    Operators(Vec<Action>),
    /// A pipeline-style update (a subset of stages and expressions; see `pipeline.rs`).
    Pipeline(Pipeline),
}

/// One operator applied at one (possibly positional) path.
#[derive(Debug, Clone)]
pub struct Action {
    pub(crate) path: Vec<String>,
    pub(crate) op: Op,
}

#[derive(Debug, Clone)]
pub(crate) enum Op {
    Set(Bson),
    SetOnInsert(Bson),
    Unset,
    Inc(Bson),
    Mul(Bson),
    Min(Bson),
    Max(Bson),
    Rename(Vec<String>),
    CurrentDate { timestamp: bool },
    Push(modifiers::PushSpec),
    AddToSet(Vec<Bson>),
    Pop { first: bool },
    Pull(modifiers::PullCondition),
    PullAll(Vec<Bson>),
    Bit(Vec<(modifiers::BitOp, Bson)>),
}

/// What an update application needs from its caller.
#[derive(Debug, Clone, Copy)]
pub struct UpdateContext<'a> {
    /// The time `$currentDate` writes (the caller reads the clock).
    pub now: bson::DateTime,
    /// True when applying to the new document of an upsert (enables `$setOnInsert`).
    pub is_upsert_insert: bool,
    /// Compiled `arrayFilters` for `$[<identifier>]`.
    pub array_filters: &'a ArrayFilters,
    /// The array index the query matched, for the positional `$` operator.
    pub positional_match: Option<usize>,
}

impl UpdateContext<'static> {
    /// A context with no array filters and no positional match.
    pub fn new(now: bson::DateTime) -> UpdateContext<'static> {
        UpdateContext {
            now,
            is_upsert_insert: false,
            array_filters: ArrayFilters::none(),
            positional_match: None,
        }
    }
}

impl Update {
    /// Parses an update document: the first field decides between a replacement (no `$`) and
    /// an operator update.
    pub fn parse(update: &Document) -> Result<Update> {
        parse::update(update)
    }

    /// Parses a pipeline-style update: `$set`/`$addFields`, `$unset`, `$project`,
    /// `$replaceRoot`/`$replaceWith`, whose expressions see `vars` (the command's `let` and
    /// `$$NOW`).
    pub fn parse_pipeline(
        stages: &[Document],
        vars: &crate::query::expr::Variables,
    ) -> Result<Update> {
        pipeline::parse(stages, vars).map(Update::Pipeline)
    }

    /// Whether this is a replacement.
    pub fn is_replacement(&self) -> bool {
        matches!(self, Update::Replacement(_))
    }

    /// The `$[<identifier>]` names this update uses (to validate `arrayFilters`).
    pub fn array_filter_identifiers(&self) -> Vec<String> {
        let mut ids = Vec::new();
        if let Update::Operators(actions) = self {
            for action in actions {
                for component in &action.path {
                    if let Some(id) = positional_identifier(component) {
                        if !id.is_empty() && !ids.iter().any(|x| x == id) {
                            ids.push(id.to_owned());
                        }
                    }
                }
            }
        }
        ids
    }

    /// Applies the update to `doc` in place. Returns whether the document changed. On error
    /// `doc` is left untouched.
    pub fn apply(&self, doc: &mut Document, ctx: &UpdateContext<'_>) -> Result<bool> {
        // `$pull` conditions and array filters may hold a `$regex` that cannot decide.
        crate::query::filter::watch_regex(|| self.apply_watched(doc, ctx))?
    }

    fn apply_watched(&self, doc: &mut Document, ctx: &UpdateContext<'_>) -> Result<bool> {
        match self {
            Update::Replacement(replacement) => apply_replacement(doc, replacement),
            Update::Pipeline(stages) => {
                let mut result = pipeline::run(stages, doc)?;
                if !result.contains_key("_id") {
                    if let Some(id) = doc.get("_id") {
                        let mut with_id = Document::new();
                        with_id.insert("_id", id.clone());
                        with_id.extend(result);
                        result = with_id;
                    }
                }
                apply_replacement(doc, &result)
            }
            Update::Operators(actions) => {
                let mut work = doc.clone();
                for action in actions {
                    ops::apply_action(&mut work, action, ctx)?;
                }
                check_id_unchanged(doc, &work, actions)?;
                let changed = work != *doc;
                *doc = work;
                Ok(changed)
            }
        }
    }
}

/// `$[]` → `Some("")`, `$[x]` → `Some("x")`, anything else → `None`.
pub(crate) fn positional_identifier(component: &str) -> Option<&str> {
    component.strip_prefix("$[")?.strip_suffix(']')
}

fn apply_replacement(doc: &mut Document, replacement: &Document) -> Result<bool> {
    let mut next = Document::new();
    match (doc.get("_id"), replacement.get("_id")) {
        (Some(old), Some(new)) if old != new => {
            return Err(Error::new(
                ErrorCode::ImmutableField,
                format!(
                    "After applying the update, the (immutable) field '_id' was found to have \
                     been altered to _id: {}",
                    path::render(new)
                ),
            ));
        }
        (Some(id), _) | (None, Some(id)) => {
            next.insert("_id", id.clone());
        }
        (None, None) => {}
    }
    for (key, value) in replacement {
        if key != "_id" {
            next.insert(key.clone(), value.clone());
        }
    }
    let changed = next != *doc;
    *doc = next;
    Ok(changed)
}

fn check_id_unchanged(before: &Document, after: &Document, actions: &[Action]) -> Result<()> {
    let Some(old) = before.get("_id") else {
        return Ok(());
    };
    if after.get("_id") == Some(old) {
        return Ok(());
    }
    let touched = actions
        .iter()
        .flat_map(|a| {
            let mut paths = vec![&a.path];
            if let Op::Rename(target) = &a.op {
                paths.push(target);
            }
            paths
        })
        .find(|p| p.first().is_some_and(|c| c == "_id"))
        .map(|p| p.join("."))
        .unwrap_or_else(|| "_id".to_owned());
    Err(Error::new(
        ErrorCode::ImmutableField,
        format!(
            "Performing an update on the path '{touched}' would modify the immutable field '_id'"
        ),
    ))
}

/// The document an upsert inserts: the query's equality fields, then the update applied with
/// `is_upsert_insert` (so `$setOnInsert` fires). A replacement upsert is the replacement plus
/// the query's `_id`. `_id`, when present, is moved first; the caller adds one when missing.
pub fn upsert_seed(
    filter_equalities: &Document,
    update: &Update,
    ctx: &UpdateContext<'_>,
) -> Result<Document> {
    let mut seed = match update {
        Update::Replacement(replacement) => {
            let mut seed = Document::new();
            if let Some(id) = replacement
                .get("_id")
                .or_else(|| filter_equalities.get("_id"))
            {
                seed.insert("_id", id.clone());
            }
            for (key, value) in replacement {
                if key != "_id" {
                    seed.insert(key.clone(), value.clone());
                }
            }
            seed
        }
        Update::Operators(_) | Update::Pipeline(_) => {
            let mut seed = filter_equalities.clone();
            let insert_ctx = UpdateContext {
                is_upsert_insert: true,
                ..*ctx
            };
            update.apply(&mut seed, &insert_ctx)?;
            seed
        }
    };
    if let Some(id) = seed.remove("_id") {
        let mut ordered = Document::new();
        ordered.insert("_id", id);
        ordered.extend(seed);
        seed = ordered;
    }
    Ok(seed)
}
