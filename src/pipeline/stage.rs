//! The stages: each parsed once into a [`Stage`], then applied to a stream of rows.
//!
//! Every stage compares strings under the operation's collation, which `vars` carries
//! ([`Variables::collation`]): filters, sorts, group keys, accumulators and expressions are
//! compiled with it.

use super::bucket::Bucket;
use super::bucket_auto::BucketAuto;
use super::densify::Densify;
use super::facet::Facet;
use super::fill::Fill;
use super::graph_lookup::GraphLookup;
use super::group::Group;
use super::lookup::Lookup;
use super::memory::{Blocking, StageLimits};
use super::merge::Merge;
use super::out::Out;
use super::redact::Redact;
use super::union_with::UnionWith;
use super::unwind::Unwind;
use super::window::SetWindowFields;
use super::{Env, Row, Rows};
use crate::engine::cursor::HeldIter;
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{Expression, Variables};
use crate::query::filter::{integral_value, Filter};
use crate::query::path::type_name;
use crate::query::reshape::{add_fields_tree, apply_tree, AddNode, Project, ReplaceRoot};
use crate::query::sort::SortSpec;
use bson::{doc, Bson, Document};

pub enum Stage {
    Match {
        filter: Filter,
        spec: Document,
    },
    Sort {
        spec: SortSpec,
        pattern: Document,
    },
    Skip(u64),
    Limit(u64),
    Project(Project),
    AddFields(Vec<(String, AddNode)>),
    ReplaceRoot(ReplaceRoot),
    Unwind(Unwind),
    Group(Group),
    Bucket(Bucket),
    BucketAuto(BucketAuto),
    Count(String),
    Sample(u64),
    Lookup(Lookup),
    UnionWith(UnionWith),
    Facet(Facet),
    GraphLookup(GraphLookup),
    Redact(Redact),
    Out(Out),
    Merge(Merge),
    /// `$documents`: an expression evaluating to the documents that start the pipeline.
    Documents(Expression),
    /// `$collStats` with its options; the command produces its document.
    CollStats(Document),
    /// `$indexStats`: the collection's indexes and their accesses; the command produces them.
    IndexStats,
    /// `$currentOp` with its options: the server's running operations (first stage of
    /// `{aggregate: 1}` on `admin`); the command produces them.
    CurrentOp(Document),
    /// `$listLocalSessions` with its options (first stage of `{aggregate: 1}`); the command
    /// produces the sessions.
    ListLocalSessions(super::list_local_sessions::ListLocalSessions),
    SetWindowFields(SetWindowFields),
    Densify(Densify),
    Fill(Fill),
}

/// Stages mongod has that mayfly does not run: refused by name rather than called unknown.
const UNSUPPORTED: &[&str] = &[
    "$geoNear",
    "$listSessions",
    "$planCacheStats",
    "$search",
    "$searchMeta",
    "$vectorSearch",
    "$listSearchIndexes",
    "$shardedDataDistribution",
    "$listSampledQueries",
    "$changeStreamSplitLargeEvent",
    "$querySettings",
    "$queryStats",
    "$listCatalog",
];

impl Stage {
    /// Parses one stage; `first` says whether it opens the pipeline. `$sortByCount` expands to
    /// two stages, so a list comes back.
    pub fn parse(spec: &Document, first: bool, vars: &Variables) -> Result<Vec<Stage>> {
        let (name, arg) = match (spec.len(), spec.iter().next()) {
            (1, Some(entry)) => entry,
            _ => {
                return Err(Error::new(
                    ErrorCode::Location40323,
                    "A pipeline stage specification object must contain exactly one field.",
                ))
            }
        };
        let stage = match name.as_str() {
            "$match" => match arg {
                Bson::Document(d) => Stage::Match {
                    filter: Filter::compile_full(d, vars.collation(), vars)?,
                    spec: d.clone(),
                },
                _ => {
                    return Err(Error::new(
                        ErrorCode::Location15959,
                        "the match filter must be an expression in an object",
                    ))
                }
            },
            "$sort" => match arg {
                Bson::Document(d) if d.is_empty() => {
                    return Err(Error::new(
                        ErrorCode::Location15976,
                        "$sort stage must have at least one sort key",
                    ))
                }
                Bson::Document(d) => Stage::Sort {
                    spec: SortSpec::compile_with(d, vars.collation())?,
                    pattern: d.clone(),
                },
                _ => {
                    return Err(Error::new(
                        ErrorCode::Location15973,
                        "the $sort key specification must be an object",
                    ))
                }
            },
            "$skip" => Stage::Skip(count_arg(arg, "$skip")?),
            "$limit" => Stage::Limit(count_arg(arg, "$limit")?),
            "$project" => Stage::Project(Project::compile(arg, vars)?),
            "$unset" => Stage::Project(Project::unset(arg)?),
            "$addFields" | "$set" => Stage::AddFields(add_fields_tree(arg, name, vars)?),
            "$replaceRoot" => Stage::ReplaceRoot(ReplaceRoot::parse_replace_root(arg, vars)?),
            "$replaceWith" => Stage::ReplaceRoot(ReplaceRoot::parse_replace_with(arg, vars)?),
            "$unwind" => Stage::Unwind(Unwind::compile(arg)?),
            "$group" => Stage::Group(Group::compile(arg, vars)?),
            "$bucket" => Stage::Bucket(Bucket::parse(arg, vars)?),
            "$bucketAuto" => Stage::BucketAuto(BucketAuto::parse(arg, vars)?),
            "$sortByCount" => {
                let group = doc! {"_id": arg.clone(), "count": {"$sum": 1}};
                return Ok(vec![
                    Stage::Group(Group::compile(&Bson::Document(group), vars)?),
                    Stage::Sort {
                        spec: SortSpec::compile(&doc! {"count": -1})?,
                        pattern: doc! {"count": -1},
                    },
                ]);
            }
            "$count" => Stage::Count(count_field(arg)?),
            "$lookup" => Stage::Lookup(Lookup::parse(arg, vars)?),
            "$unionWith" => Stage::UnionWith(UnionWith::parse(arg, vars)?),
            "$facet" => Stage::Facet(Facet::parse(arg, vars)?),
            "$graphLookup" => Stage::GraphLookup(GraphLookup::parse(arg, vars)?),
            "$redact" => Stage::Redact(Redact::parse(arg, vars)?),
            "$out" => Stage::Out(Out::parse(arg)?),
            "$merge" => Stage::Merge(Merge::parse(arg, vars)?),
            // An aggregate that opens with it is a change stream (`change_stream`); anywhere
            // else it is misplaced.
            "$changeStream" => {
                return Err(Error::new(
                    ErrorCode::Location40602,
                    "$changeStream is only valid as the first stage in a pipeline.",
                ))
            }
            "$documents" => {
                if !first {
                    return Err(Error::new(
                        ErrorCode::Location40602,
                        "$documents is only valid as the first stage in a pipeline",
                    ));
                }
                Stage::Documents(Expression::compile(arg, vars)?)
            }
            "$setWindowFields" => Stage::SetWindowFields(SetWindowFields::parse(arg, vars)?),
            "$densify" => Stage::Densify(Densify::parse(arg, vars.collation())?),
            "$fill" => Stage::Fill(Fill::parse(arg, vars)?),
            "$sample" => Stage::Sample(sample_size(arg)?),
            "$currentOp" => {
                if !first {
                    return Err(Error::new(
                        ErrorCode::Location40602,
                        "$currentOp is only valid as the first stage in a pipeline",
                    ));
                }
                match arg {
                    Bson::Document(d) => Stage::CurrentOp(d.clone()),
                    _ => {
                        return Err(Error::failed_to_parse(
                            "$currentOp options must be specified in an object",
                        ))
                    }
                }
            }
            "$indexStats" => {
                super::index_stats::parse(arg, first)?;
                Stage::IndexStats
            }
            "$listLocalSessions" => {
                if !first {
                    return Err(Error::new(
                        ErrorCode::Location40602,
                        "$listLocalSessions is only valid as the first stage in a pipeline",
                    ));
                }
                Stage::ListLocalSessions(super::list_local_sessions::ListLocalSessions::parse(arg)?)
            }
            "$collStats" => {
                if !first {
                    return Err(Error::new(
                        ErrorCode::Location40602,
                        "$collStats is only valid as the first stage in a pipeline",
                    ));
                }
                match arg {
                    Bson::Document(d) => Stage::CollStats(d.clone()),
                    _ => {
                        return Err(Error::new(
                            ErrorCode::Location40166,
                            format!(
                                "$collStats must take a nested object but found: $collStats: {}",
                                crate::query::path::render(arg)
                            ),
                        ))
                    }
                }
            }
            other if UNSUPPORTED.contains(&other) => {
                return Err(Error::new(
                    ErrorCode::NotImplemented,
                    format!("the {other} stage is not supported by this server"),
                ))
            }
            other => {
                return Err(Error::new(
                    ErrorCode::Location40324,
                    format!("Unrecognized pipeline stage name: '{other}'"),
                ))
            }
        };
        Ok(vec![stage])
    }

    /// Applies the stage to its input; blocking stages hold at most their memory limit.
    pub fn apply(self, rows: Rows, env: &Env) -> Result<Rows> {
        let limits: &StageLimits = &env.limits;
        Ok(match self {
            Stage::Match { filter, .. } => Box::new(rows.filter_map(move |r| match r {
                Ok(row) => match filter.matches(&row.doc) {
                    Ok(true) => Some(Ok(row)),
                    Ok(false) => None,
                    Err(e) => Some(Err(e)),
                },
                Err(e) => Some(Err(e)),
            })),
            Stage::Sort { spec, .. } => super::sort::sort(rows, spec, env)?,
            Stage::Skip(n) => {
                // Only documents are skipped: an error (a stage's, or the operation's
                // interruption) goes on to the client.
                let mut left = n;
                Box::new(rows.filter(move |r| match r {
                    Ok(_) if left > 0 => {
                        left -= 1;
                        false
                    }
                    _ => true,
                }))
            }
            Stage::Limit(n) => Box::new(rows.take(usize::try_from(n).unwrap_or(usize::MAX))),
            Stage::Project(p) => Box::new(rows.map(move |r| {
                r.and_then(|row| {
                    let doc = p.apply(&row.doc)?;
                    row.reshaped(doc)
                })
            })),
            Stage::AddFields(tree) => Box::new(rows.map(move |r| {
                r.and_then(|row| {
                    let mut out = row.doc.clone();
                    apply_tree(&row.doc, &mut out, &tree)?;
                    row.reshaped(out)
                })
            })),
            Stage::ReplaceRoot(replace) => Box::new(rows.map(move |r| {
                r.and_then(|row| {
                    let doc = replace.apply(&row.doc)?;
                    row.reshaped(doc)
                })
            })),
            Stage::Unwind(u) => Box::new(rows.flat_map(move |r| match r {
                Ok(row) => u.apply(row),
                Err(e) => Box::new(std::iter::once(Err(e))),
            })),
            Stage::Group(g) => {
                let mut memory = limits.budget(Blocking::Group).spilling_to(env.view.spill());
                let grouped = g.run(rows.map(|r| r.map(|row| row.doc)), &mut memory)?;
                super::group::into_rows(grouped, limits)?
            }
            Stage::Bucket(b) => b.apply(rows, limits, env.view.spill())?,
            Stage::BucketAuto(b) => b.apply(rows, limits, env.view.spill())?,
            Stage::Lookup(lookup) => lookup.apply(rows, env),
            Stage::UnionWith(union) => union.apply(rows, env),
            Stage::Facet(facet) => facet.apply(rows, env)?,
            Stage::GraphLookup(graph) => graph.apply(rows, env),
            Stage::Redact(redact) => redact.apply(rows),
            Stage::Out(out) => out.run(rows, env)?,
            Stage::Merge(merge) => merge.run(rows, env)?,
            Stage::Documents(expr) => documents(&expr)?,
            Stage::Count(field) => {
                let mut n = 0u64;
                for row in rows {
                    row?;
                    n += 1;
                }
                // Like mongod's `$group` + `$project`, nothing comes out of an empty input.
                let out = (n > 0).then(|| Row::computed(doc! {field: count_value(n)}));
                Box::new(out.into_iter().map(Ok))
            }
            Stage::Sample(size) => super::sample::sample(rows, size, limits, env.view.spill())?,
            Stage::SetWindowFields(w) => w.apply(rows, limits, env.view.spill())?,
            Stage::Densify(d) => {
                let out = d.apply(rows, limits)?;
                Box::new(HeldIter::new(out, limits.held.clone()).map(Ok))
            }
            Stage::Fill(f) => f.apply(rows, limits, env.view.spill())?,
            // Only valid first, where the pipeline's source produces it.
            Stage::CollStats(_)
            | Stage::CurrentOp(_)
            | Stage::IndexStats
            | Stage::ListLocalSessions(_) => rows,
        })
    }
}

/// `$skip` / `$limit` arguments: whole numbers, non-negative (`$limit` positive).
fn count_arg(arg: &Bson, stage: &str) -> Result<u64> {
    let limit = stage == "$limit";
    let Some(n) = crate::query::compare::is_number(arg)
        .then(|| integral_value(arg))
        .flatten()
    else {
        return Err(if limit {
            Error::new(
                ErrorCode::Location15957,
                "the limit must be specified as a number",
            )
        } else {
            Error::new(
                ErrorCode::Location15972,
                format!(
                    "Argument to $skip must be a number not a {}",
                    type_name(arg)
                ),
            )
        });
    };
    match (limit, n) {
        (true, n) if n <= 0 => Err(Error::new(
            ErrorCode::Location15958,
            format!("invalid argument to $limit stage: Expected a positive number in: $limit: {n}"),
        )),
        (false, n) if n < 0 => Err(Error::new(
            ErrorCode::Location15956,
            format!(
                "invalid argument to $skip stage: Expected a non-negative number in: $skip: {n}"
            ),
        )),
        (_, n) => Ok(n.unsigned_abs()),
    }
}

fn count_field(arg: &Bson) -> Result<String> {
    let Bson::String(field) = arg else {
        return Err(Error::new(
            ErrorCode::Location40156,
            "the count field must be a non-empty string",
        ));
    };
    if field.is_empty() {
        return Err(Error::new(
            ErrorCode::Location40157,
            "the count field must be a non-empty string",
        ));
    }
    if field.starts_with('$') {
        return Err(Error::new(
            ErrorCode::Location40158,
            "the count field cannot be a $-prefixed path",
        ));
    }
    if field.contains('\0') {
        return Err(Error::new(
            ErrorCode::Location40159,
            "the count field cannot contain a null byte",
        ));
    }
    if field.contains('.') {
        return Err(Error::new(
            ErrorCode::Location40160,
            "the count field cannot contain '.'",
        ));
    }
    Ok(field.clone())
}

fn sample_size(arg: &Bson) -> Result<u64> {
    let Bson::Document(spec) = arg else {
        return Err(Error::new(
            ErrorCode::Location28745,
            "the $sample stage specification must be an object",
        ));
    };
    let mut size = None;
    for (k, v) in spec {
        if k != "size" {
            return Err(Error::new(
                ErrorCode::Location28748,
                format!("unrecognized option to $sample: {k}"),
            ));
        }
        let n = crate::query::compare::is_number(v)
            .then(|| integral_value(v).or_else(|| v.as_f64().map(|f| f as i64)))
            .flatten()
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Location28746,
                    "size argument to $sample must be a number",
                )
            })?;
        if n < 0 {
            return Err(Error::new(
                ErrorCode::Location28747,
                "size argument to $sample must not be negative",
            ));
        }
        size = Some(n.unsigned_abs());
    }
    size.ok_or_else(|| {
        Error::new(
            ErrorCode::Location28749,
            "$sample stage must specify a size",
        )
    })
}

/// `$count`'s number: an int32 while it fits, as mongod's.
fn count_value(n: u64) -> Bson {
    i32::try_from(n).map_or_else(
        |_| Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
        Bson::Int32,
    )
}

/// `$documents`' rows: its expression, evaluated once, must be an array of objects.
fn documents(expr: &Expression) -> Result<Rows> {
    let bad = |what: String| {
        Error::new(
            ErrorCode::Location5858203,
            format!("error during evaluation of $documents: {what}"),
        )
    };
    let docs = match expr.eval(&Document::new())? {
        Some(Bson::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Bson::Document(d) => {
                    crate::query::depth::check_document(&d)?;
                    Ok(Row::computed(d))
                }
                other => Err(bad(format!(
                    "an element of the array is {}, not an object",
                    type_name(&other)
                ))),
            })
            .collect::<Vec<_>>(),
        other => {
            return Err(bad(format!(
                "it evaluated to {}, not an array",
                crate::query::expr::value::type_name(&other)
            )))
        }
    };
    Ok(Box::new(docs.into_iter()))
}

impl Stage {
    /// The stage's name as a client writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Stage::Match { .. } => "$match",
            Stage::Sort { .. } => "$sort",
            Stage::Skip(_) => "$skip",
            Stage::Limit(_) => "$limit",
            Stage::Project(_) => "$project",
            Stage::AddFields(_) => "$addFields",
            Stage::ReplaceRoot(_) => "$replaceRoot",
            Stage::Unwind(_) => "$unwind",
            Stage::Group(_) => "$group",
            Stage::Bucket(_) => "$bucket",
            Stage::BucketAuto(_) => "$bucketAuto",
            Stage::Count(_) => "$count",
            Stage::Sample(_) => "$sample",
            Stage::Lookup(_) => "$lookup",
            Stage::UnionWith(_) => "$unionWith",
            Stage::Facet(_) => "$facet",
            Stage::SetWindowFields(_) => "$setWindowFields",
            Stage::Densify(_) => "$densify",
            Stage::Fill(_) => "$fill",
            Stage::GraphLookup(_) => "$graphLookup",
            Stage::Redact(_) => "$redact",
            Stage::Out(_) => "$out",
            Stage::Merge(_) => "$merge",
            Stage::Documents(_) => "$documents",
            Stage::CollStats(_) => "$collStats",
            Stage::IndexStats => "$indexStats",
            Stage::CurrentOp(_) => "$currentOp",
            Stage::ListLocalSessions(_) => "$listLocalSessions",
        }
    }
}
