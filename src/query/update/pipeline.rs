//! Pipeline-style updates (`[{$set: ...}, {$unset: ...}]`), for the stages an update allows,
//! with a deliberately small expression language: literals, `"$field.path"`, `$$ROOT`,
//! `$$CURRENT`, `$$REMOVE`, `{$literal: v}`, and documents/arrays of those.
//!
//! Owns: stage parsing and application. Does not own: aggregation operators (`{$add: ...}`,
//! `$cond`, ...), which are refused at parse time with 238 NotImplemented.

use crate::error::{Error, ErrorCode, Result};
use crate::query::path;
use crate::query::projection::Projection;
use bson::{Bson, Document};

/// A parsed update pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    stages: Vec<Stage>,
}

/// One parsed stage.
#[derive(Debug, Clone)]
pub(crate) enum Stage {
    /// `$set` / `$addFields`: (dotted path, expression) pairs.
    Set(Vec<(Vec<String>, Expr)>),
    Unset(Vec<Vec<String>>),
    Project(Projection),
    ReplaceRoot(Expr),
}

/// A value expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Literal(Bson),
    Field(Vec<String>),
    Root,
    Remove,
    Document(Vec<(String, Expr)>),
    Array(Vec<Expr>),
}

fn unsupported(what: &str) -> Error {
    Error::new(
        ErrorCode::NotImplemented,
        format!("{what} is not supported in pipeline updates by this server"),
    )
}

pub(crate) fn parse(stages: &[Document]) -> Result<Pipeline> {
    Ok(Pipeline {
        stages: stages.iter().map(stage).collect::<Result<_>>()?,
    })
}

fn stage(spec: &Document) -> Result<Stage> {
    let mut fields = spec.iter();
    let (Some((name, arg)), None) = (fields.next(), fields.next()) else {
        return Err(Error::new(
            ErrorCode::Location40323,
            "A pipeline stage specification object must contain exactly one field.",
        ));
    };
    match name.as_str() {
        "$set" | "$addFields" => {
            let Bson::Document(d) = arg else {
                return Err(Error::new(
                    ErrorCode::Location40272,
                    format!(
                        "{name} specification stage must be an object, got {}",
                        path::type_name(arg)
                    ),
                ));
            };
            let mut out = Vec::new();
            flatten_set(d, &[], &mut out)?;
            Ok(Stage::Set(out))
        }
        "$unset" => {
            let names: Vec<&Bson> = match arg {
                Bson::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            let paths = names
                .into_iter()
                .map(|n| match n {
                    Bson::String(s) if !s.is_empty() => Ok(path::split(s)),
                    _ => Err(Error::new(
                        ErrorCode::Location31120,
                        "$unset specification must be a string or an array containing only \
                         string values",
                    )),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Stage::Unset(paths))
        }
        "$project" => match arg {
            Bson::Document(d) => Ok(Stage::Project(Projection::compile(d)?)),
            _ => Err(Error::new(
                ErrorCode::Location15969,
                "$project specification must be an object",
            )),
        },
        "$replaceRoot" => match arg {
            Bson::Document(d) => match d.get("newRoot") {
                Some(root) if d.len() == 1 => Ok(Stage::ReplaceRoot(expression(root)?)),
                _ => Err(Error::new(
                    ErrorCode::Location40231,
                    "no newRoot specified for the $replaceRoot stage",
                )),
            },
            _ => Err(Error::new(
                ErrorCode::Location40229,
                "expected an object as specification for $replaceRoot stage",
            )),
        },
        "$replaceWith" => Ok(Stage::ReplaceRoot(expression(arg)?)),
        other if other.starts_with('$') => {
            let known = [
                "$match", "$group", "$sort", "$limit", "$skip", "$lookup", "$unwind", "$facet",
                "$out", "$merge", "$count", "$sample",
            ];
            if known.contains(&other) {
                Err(Error::new(
                    ErrorCode::InvalidOptions,
                    format!("{other} is not allowed to be used within an update"),
                ))
            } else {
                Err(Error::new(
                    ErrorCode::Location40324,
                    format!("Unrecognized pipeline stage name: '{other}'"),
                ))
            }
        }
        other => Err(Error::new(
            ErrorCode::Location40324,
            format!("Unrecognized pipeline stage name: '{other}'"),
        )),
    }
}

/// `$set: {a: {b: 1}}` sets `a.b` (merging into an existing `a`), as `$addFields` does.
fn flatten_set(
    spec: &Document,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Expr)>,
) -> Result<()> {
    for (key, value) in spec {
        let mut full = prefix.to_vec();
        full.extend(path::split(key));
        if full.len() > crate::query::depth::MAX_PATH_COMPONENTS {
            return Err(Error::new(ErrorCode::Overflow, "FieldPath is too long"));
        }
        if full.iter().any(|c| c.is_empty() || c.starts_with('$')) {
            return Err(Error::new(
                ErrorCode::Location16410,
                format!("FieldPath field names may not start with '$' or be empty: {key}"),
            ));
        }
        match value {
            Bson::Document(d) if !d.is_empty() && !d.keys().any(|k| k.starts_with('$')) => {
                flatten_set(d, &full, out)?
            }
            other => out.push((full, expression(other)?)),
        }
    }
    Ok(())
}

fn expression(value: &Bson) -> Result<Expr> {
    match value {
        Bson::String(s) if s.starts_with("$$") => match s.as_str() {
            "$$ROOT" | "$$CURRENT" => Ok(Expr::Root),
            "$$REMOVE" => Ok(Expr::Remove),
            other => Err(unsupported(&format!("the variable {other}"))),
        },
        Bson::String(s) if s.starts_with('$') => {
            let field = s.get(1..).unwrap_or("");
            if field.is_empty() || field.split('.').any(str::is_empty) {
                return Err(Error::new(
                    ErrorCode::Location16410,
                    format!("Invalid field path: '{s}'"),
                ));
            }
            Ok(Expr::Field(path::split(field)))
        }
        Bson::Document(d) => {
            if let Some(first) = d.keys().next().filter(|k| k.starts_with('$')) {
                if first == "$literal" && d.len() == 1 {
                    return Ok(Expr::Literal(
                        d.get("$literal").cloned().unwrap_or(Bson::Null),
                    ));
                }
                return Err(unsupported(&format!("the expression {first}")));
            }
            d.iter()
                .map(|(k, v)| Ok((k.clone(), expression(v)?)))
                .collect::<Result<Vec<_>>>()
                .map(Expr::Document)
        }
        Bson::Array(items) => items
            .iter()
            .map(expression)
            .collect::<Result<Vec<_>>>()
            .map(Expr::Array),
        other => Ok(Expr::Literal(other.clone())),
    }
}

/// Evaluates to `None` for a missing field or `$$REMOVE`.
fn evaluate(expr: &Expr, root: &Document) -> Option<Bson> {
    match expr {
        Expr::Literal(v) => Some(v.clone()),
        Expr::Root => Some(Bson::Document(root.clone())),
        Expr::Remove => None,
        Expr::Field(p) => field_value(root, p),
        Expr::Document(fields) => {
            let mut out = Document::new();
            for (k, e) in fields {
                if let Some(v) = evaluate(e, root) {
                    out.insert(k.clone(), v);
                }
            }
            Some(Bson::Document(out))
        }
        Expr::Array(items) => Some(Bson::Array(
            items
                .iter()
                .map(|e| evaluate(e, root).unwrap_or(Bson::Null))
                .collect(),
        )),
    }
}

/// Aggregation field paths map over arrays: `$a.b` on `{a: [{b: 1}, {b: 2}]}` is `[1, 2]`.
fn field_value(doc: &Document, p: &[String]) -> Option<Bson> {
    let (first, rest) = p.split_first()?;
    descend(doc.get(first)?, rest)
}

fn descend(value: &Bson, rest: &[String]) -> Option<Bson> {
    let Some((first, tail)) = rest.split_first() else {
        return Some(value.clone());
    };
    match value {
        Bson::Document(d) => descend(d.get(first)?, tail),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter_map(|item| descend(item, rest))
                .collect(),
        )),
        _ => None,
    }
}

/// Runs the stages over `doc`, returning the new document (the caller restores `_id` rules).
pub(crate) fn run(pipeline: &Pipeline, doc: &Document) -> Result<Document> {
    let mut current = doc.clone();
    for stage in &pipeline.stages {
        current = match stage {
            Stage::Set(fields) => {
                let root = current.clone();
                for (p, e) in fields {
                    match evaluate(e, &root) {
                        Some(v) => path::set(&mut current, p, v)?,
                        None => {
                            path::unset(&mut current, p);
                        }
                    }
                }
                current
            }
            Stage::Unset(paths) => {
                for p in paths {
                    path::unset(&mut current, p);
                }
                current
            }
            Stage::Project(projection) => projection.apply(&current)?,
            Stage::ReplaceRoot(e) => match evaluate(e, &current) {
                Some(Bson::Document(d)) => d,
                other => {
                    return Err(Error::new(
                        ErrorCode::Location40228,
                        format!(
                            "'replacement document' must evaluate to an object, but resulting \
                             value was: {}. Type of resulting value: '{}'.",
                            other
                                .as_ref()
                                .map(path::render)
                                .unwrap_or_else(|| "MISSING".into()),
                            other.as_ref().map(path::type_name).unwrap_or("missing")
                        ),
                    ))
                }
            },
        };
    }
    Ok(current)
}
