//! Pipeline-style updates (`[{$set: ...}, {$unset: ...}]`): the stages an update allows, run
//! over the one document being updated through the same reshaping stages as aggregation
//! (`query::reshape`), with the whole expression language.
//!
//! Owns: which stages an update allows and running them in order. Does not own: the stages'
//! semantics or expressions.

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::Variables;
use crate::query::reshape::{add_fields_tree, apply_tree, AddNode, Project, ReplaceRoot};
use bson::Document;

/// A parsed update pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    stages: Vec<Stage>,
}

/// One parsed stage.
#[derive(Debug, Clone)]
pub(crate) enum Stage {
    /// `$set` / `$addFields`.
    AddFields(Vec<(String, AddNode)>),
    /// `$project` / `$unset`.
    Project(Project),
    ReplaceRoot(ReplaceRoot),
}

/// Stages mongod knows but does not allow in an update.
const NOT_IN_UPDATES: &[&str] = &[
    "$match",
    "$group",
    "$sort",
    "$limit",
    "$skip",
    "$lookup",
    "$unwind",
    "$facet",
    "$out",
    "$merge",
    "$count",
    "$sample",
    "$bucket",
    "$bucketAuto",
    "$graphLookup",
    "$unionWith",
    "$setWindowFields",
    "$densify",
    "$fill",
    "$redact",
    "$sortByCount",
    "$documents",
];

pub(crate) fn parse(stages: &[Document], vars: &Variables) -> Result<Pipeline> {
    Ok(Pipeline {
        stages: stages
            .iter()
            .map(|s| stage(s, vars))
            .collect::<Result<_>>()?,
    })
}

fn stage(spec: &Document, vars: &Variables) -> Result<Stage> {
    let mut fields = spec.iter();
    let (Some((name, arg)), None) = (fields.next(), fields.next()) else {
        return Err(Error::new(
            ErrorCode::Location40323,
            "A pipeline stage specification object must contain exactly one field.",
        ));
    };
    match name.as_str() {
        "$set" | "$addFields" => Ok(Stage::AddFields(add_fields_tree(arg, name, vars)?)),
        "$unset" => Ok(Stage::Project(Project::unset(arg)?)),
        "$project" => Ok(Stage::Project(Project::compile(arg, vars)?)),
        "$replaceRoot" => Ok(Stage::ReplaceRoot(ReplaceRoot::parse_replace_root(
            arg, vars,
        )?)),
        "$replaceWith" => Ok(Stage::ReplaceRoot(ReplaceRoot::parse_replace_with(
            arg, vars,
        )?)),
        other if NOT_IN_UPDATES.contains(&other) => Err(Error::new(
            ErrorCode::InvalidOptions,
            format!("{other} is not allowed to be used within an update"),
        )),
        other => Err(Error::new(
            ErrorCode::Location40324,
            format!("Unrecognized pipeline stage name: '{other}'"),
        )),
    }
}

/// Runs the stages over `doc`, returning the new document (the caller restores `_id` rules).
pub(crate) fn run(pipeline: &Pipeline, doc: &Document) -> Result<Document> {
    let mut current = doc.clone();
    for stage in &pipeline.stages {
        current = match stage {
            Stage::AddFields(tree) => {
                let mut out = current.clone();
                apply_tree(&current, &mut out, tree)?;
                out
            }
            Stage::Project(project) => project.apply(&current)?,
            Stage::ReplaceRoot(replace) => replace.apply(&current)?,
        };
        crate::query::depth::check_document(&current)?;
    }
    Ok(current)
}
