//! Pipeline stages: each parsed once into a [`Stage`], then applied to a stream of [`Row`]s.
//! Streaming stages (`$match`, `$project`, `$addFields`, `$unwind`, `$skip`, `$limit`, ...) stay
//! lazy, so a cursor pulls from the snapshot batch by batch; `$group`, `$sort`, `$sample` and
//! `$count` consume their input when the pipeline is built.

use super::expr::Expr;
use super::group::Group;
use super::memory::{Blocking, StageLimits};
use super::reshape::{add_fields_tree, apply_tree, AddNode, Project};
use super::unwind::Unwind;
use crate::command::{args, stats};
use crate::engine::cursor::HeldIter;
use crate::error::{Error, ErrorCode, Result};
use crate::query::filter::{integral_value, Filter};
use crate::query::size::document_size;
use crate::query::sort::SortSpec;
use bson::{doc, Bson, Document};
use std::hash::{BuildHasher, Hasher};

/// A document flowing through the pipeline.
pub struct Row {
    pub doc: Document,
    /// The stored size while the document is unchanged from storage.
    pub size: Option<usize>,
    /// When the stored document this row came from expires; rows derived from one document
    /// (projected, unwound, sorted) disappear with it (TTL-18). `None` for computed rows.
    pub expires_at: Option<i64>,
}

impl Row {
    fn computed(doc: Document) -> Row {
        Row {
            doc,
            size: None,
            expires_at: None,
        }
    }

    /// A row whose document a stage built from expressions: it may be deeper than its input,
    /// so it is checked against the nesting limit before later stages (and their recursive
    /// comparisons) see it.
    pub fn reshaped(&self, doc: Document) -> Result<Row> {
        crate::query::depth::check_document(&doc)?;
        Ok(self.derived(doc))
    }

    pub fn derived(&self, doc: Document) -> Row {
        Row {
            doc,
            size: None,
            expires_at: self.expires_at,
        }
    }
}

pub type Rows = Box<dyn Iterator<Item = Result<Row>> + Send>;

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
    ReplaceRoot(Expr),
    Unwind(Unwind),
    Group(Group),
    Count(String),
    Sample(u64),
    /// `$collStats`: `storageStats` scale (if asked) and whether `count` is asked.
    CollStats {
        storage_scale: Option<u64>,
        count: bool,
    },
    /// `$currentOp`: the server's running operations (first stage of `{aggregate: 1}` on
    /// `admin`).
    CurrentOp,
}

/// Stages mongod has that mayfly does not run: refused by name rather than called unknown.
const UNSUPPORTED: &[&str] = &[
    "$lookup",
    "$facet",
    "$out",
    "$merge",
    "$bucket",
    "$bucketAuto",
    "$graphLookup",
    "$geoNear",
    "$indexStats",
    "$redact",
    "$densify",
    "$fill",
    "$setWindowFields",
    "$unionWith",
    "$changeStream",
    "$documents",
    "$listLocalSessions",
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
    pub fn parse(spec: &Document, first: bool, vars: &Document) -> Result<Vec<Stage>> {
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
                    filter: Filter::compile(d)?,
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
                    spec: SortSpec::compile(d)?,
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
            "$replaceRoot" => match arg {
                Bson::Document(d) if d.len() == 1 && d.contains_key("newRoot") => {
                    Stage::ReplaceRoot(Expr::compile(
                        d.get("newRoot").unwrap_or(&Bson::Null),
                        vars,
                    )?)
                }
                _ => {
                    return Err(Error::new(
                        ErrorCode::Location40228,
                        "$replaceRoot takes exactly one argument, 'newRoot'",
                    ))
                }
            },
            "$replaceWith" => Stage::ReplaceRoot(Expr::compile(arg, vars)?),
            "$unwind" => Stage::Unwind(Unwind::compile(arg)?),
            "$group" => Stage::Group(Group::compile(arg, vars)?),
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
            "$sample" => Stage::Sample(sample_size(arg)?),
            "$currentOp" => {
                if !first {
                    return Err(Error::new(
                        ErrorCode::Location40602,
                        "$currentOp is only valid as the first stage in a pipeline",
                    ));
                }
                current_op_spec(arg)?
            }
            "$collStats" => {
                if !first {
                    return Err(Error::new(
                        ErrorCode::Location40602,
                        "$collStats is only valid as the first stage in a pipeline",
                    ));
                }
                coll_stats_spec(arg)?
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
    pub fn apply(self, rows: Rows, limits: &StageLimits) -> Result<Rows> {
        Ok(match self {
            Stage::Match { filter, .. } => Box::new(rows.filter_map(move |r| match r {
                Ok(row) => match filter.matches(&row.doc) {
                    Ok(true) => Some(Ok(row)),
                    Ok(false) => None,
                    Err(e) => Some(Err(e)),
                },
                Err(e) => Some(Err(e)),
            })),
            Stage::Sort { spec: sort, .. } => {
                let mut keyed = Vec::new();
                let mut memory = limits.budget(Blocking::Sort);
                for row in rows {
                    let row = row?;
                    let size = row.size.unwrap_or_else(|| document_size(&row.doc));
                    memory.charge(size)?;
                    keyed.push((sort.keys_of(&row.doc), (size, row)));
                }
                keyed.sort_by(|a, b| sort.compare_keys(&a.0, &b.0));
                let sorted = keyed.into_iter().map(|(_, row)| row).collect();
                Box::new(HeldIter::new(sorted, limits.held.clone()).map(Ok))
            }
            Stage::Skip(n) => Box::new(rows.skip(usize::try_from(n).unwrap_or(usize::MAX))),
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
                    apply_tree(&row.doc, &mut out, &tree);
                    row.reshaped(out)
                })
            })),
            Stage::ReplaceRoot(expr) => Box::new(rows.map(move |r| {
                let row = r?;
                match expr.eval(&row.doc) {
                    Some(Bson::Document(d)) => row.reshaped(d),
                    other => Err(Error::new(
                        ErrorCode::Location40228,
                        format!(
                            "'replacement document' must evaluate to an object, but resulting value was: {}. Type of resulting value: '{}'. Input document: {}",
                            other.as_ref().map_or("MISSING".to_owned(), crate::query::path::render),
                            other.as_ref().map_or("missing", crate::query::path::type_name),
                            crate::query::path::render_document(&row.doc),
                        ),
                    )),
                }
            })),
            Stage::Unwind(u) => Box::new(rows.flat_map(move |r| match r {
                Ok(row) => u.apply(row).into_iter().map(Ok).collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            })),
            Stage::Group(g) => {
                let mut memory = limits.budget(Blocking::Group);
                let groups = g.run(rows.map(|r| r.map(|row| row.doc)), &mut memory)?;
                // Accumulators such as `$push` nest their inputs a level or two deeper.
                let sized = groups
                    .into_iter()
                    .map(|d| {
                        crate::query::depth::check_document(&d)?;
                        Ok((document_size(&d), Row::computed(d)))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Box::new(HeldIter::new(sized, limits.held.clone()).map(Ok))
            }
            Stage::Count(field) => {
                let mut n = 0u64;
                for row in rows {
                    row?;
                    n += 1;
                }
                // Like mongod's `$group` + `$project`, nothing comes out of an empty input.
                let out = (n > 0).then(|| Row::computed(doc! {field: stats::number(n)}));
                Box::new(out.into_iter().map(Ok))
            }
            Stage::Sample(size) => {
                let sampled = sample(rows, size, limits)?;
                Box::new(HeldIter::new(sampled, limits.held.clone()).map(Ok))
            }
            // Only valid first, where the pipeline's source produces it.
            Stage::CollStats { .. } | Stage::CurrentOp => rows,
        })
    }
}

/// `$currentOp`'s options: flags about which operations to list. Every operation here is a
/// client's, active and visible to all, so each flag changes nothing but must be a boolean.
fn current_op_spec(arg: &Bson) -> Result<Stage> {
    let Bson::Document(options) = arg else {
        return Err(Error::failed_to_parse(
            "$currentOp options must be specified in an object",
        ));
    };
    const FLAGS: &[&str] = &[
        "allUsers",
        "idleConnections",
        "idleCursors",
        "idleSessions",
        "localOps",
        "truncateOps",
        "backtrace",
    ];
    for (name, value) in options {
        if !FLAGS.contains(&name.as_str()) {
            return Err(Error::failed_to_parse(format!(
                "Unrecognized option '{name}' in $currentOp stage."
            )));
        }
        if !matches!(value, Bson::Boolean(_)) {
            return Err(Error::failed_to_parse(format!(
                "The '{name}' parameter of the $currentOp stage must be a boolean value, but found: {}",
                crate::query::path::type_name(value)
            )));
        }
    }
    Ok(Stage::CurrentOp)
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
                    args::type_name(arg)
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

/// A uniform random sample of `size` rows (reservoir sampling), in random order.
/// A uniform sample of `size` rows (with their sizes), held within one stage's memory limit
/// (mongod samples with a sort on random keys, and fails as a sort does).
fn sample(rows: Rows, size: u64, limits: &StageLimits) -> Result<Vec<(usize, Row)>> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut rng = SplitMix(
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish(),
    );
    let mut reservoir: Vec<(usize, Row)> = Vec::new();
    let mut memory = limits.budget(Blocking::Sort);
    for (seen, row) in rows.enumerate() {
        let row = row?;
        let bytes = row.size.unwrap_or_else(|| document_size(&row.doc));
        if reservoir.len() < size {
            memory.charge(bytes)?;
            reservoir.push((bytes, row));
        } else if let Some(slot) = reservoir.get_mut(rng.below(seen as u64 + 1) as usize) {
            memory.adjust(bytes as isize - slot.0 as isize)?;
            *slot = (bytes, row);
        }
    }
    for i in (1..reservoir.len()).rev() {
        reservoir.swap(i, rng.below(i as u64 + 1) as usize);
    }
    Ok(reservoir)
}

/// splitmix64: small, fast, and plenty for sampling (not for secrets). Seeded from the
/// process's hash randomness, so no clock is read.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is negligible for sample sizes.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn coll_stats_spec(arg: &Bson) -> Result<Stage> {
    let Bson::Document(spec) = arg else {
        return Err(Error::new(
            ErrorCode::Location40166,
            format!(
                "$collStats must take a nested object but found: $collStats: {}",
                crate::query::path::render(arg)
            ),
        ));
    };
    let mut storage_scale = None;
    let mut count = false;
    for (k, v) in spec {
        match (k.as_str(), v) {
            ("storageStats", Bson::Document(s)) => {
                args::check_fields(
                    &prepend_name(s),
                    "$collStats.storageStats",
                    &["scale", "verbose", "waitForLock", "numericOnly"],
                )?;
                storage_scale = Some(stats::parse_scale(s, "$collStats.storageStats")?);
            }
            ("count", Bson::Document(_)) => count = true,
            ("latencyStats" | "queryExecStats", Bson::Document(_)) => {
                return Err(Error::new(
                    ErrorCode::NotImplemented,
                    format!("$collStats {k} is not supported by this server"),
                ))
            }
            ("storageStats" | "count" | "latencyStats" | "queryExecStats", other) => {
                return Err(args::wrong_type("$collStats", k, other, "object"))
            }
            _ => {
                return Err(Error::new(
                    ErrorCode::IDLUnknownField,
                    format!("BSON field '$collStats.{k}' is an unknown field."),
                ))
            }
        }
    }
    Ok(Stage::CollStats {
        storage_scale,
        count,
    })
}

/// `check_fields` skips a command's first field (its name); give it one.
fn prepend_name(d: &Document) -> Document {
    let mut out = doc! {"": 1};
    out.extend(d.clone());
    out
}
