//! `$lookup`: for each input document, the documents of another collection of the same
//! database that match it, as an array field. Three forms, as mongod 7.0:
//! - `localField`/`foreignField`: equality of the local value (each element, for an array; `null`
//!   for a missing value) with the foreign field, read through the executor, so an index on
//!   `foreignField` serves it;
//! - `let`/`pipeline`: the pipeline runs over the foreign collection once per input document,
//!   with the `let` variables evaluated against that document;
//! - both: the equality match, then the pipeline.
//!
//! The sub-pipeline is compiled per input document, because variables resolve at compile time
//! (`query::expr`). Foreign documents are read when the row is pulled, at the cursor's current
//! time, so an expired foreign document is never joined (TTL-18).

use super::{Env, Nesting, Pipeline, Rows};
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{field_path, Expression, Variables};
use crate::query::path;
use crate::query::size::document_size;
use bson::{doc, Bson, Document};

/// The largest array of joined documents (mongod's BSON document limit).
const MAX_JOINED_BYTES: usize = 16 * 1024 * 1024;

pub struct Lookup {
    /// `None` only for a pipeline that starts with `$documents`.
    from: Option<String>,
    as_path: Vec<String>,
    /// `(localField, foreignField)`.
    join: Option<(Vec<String>, String)>,
    lets: Vec<(String, Expression)>,
    pipeline: Option<Vec<Document>>,
}

fn parse_error(message: impl Into<String>) -> Error {
    Error::failed_to_parse(message)
}

fn string_arg(name: &str, value: &Bson) -> Result<String> {
    match value {
        Bson::String(s) => Ok(s.clone()),
        other => Err(Error::new(
            ErrorCode::Location4570,
            format!(
                "$lookup argument '{name}: {}' must be a string, found {}: {}",
                path::render(other),
                path::type_name(other),
                path::render(other)
            ),
        )),
    }
}

impl Lookup {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<Lookup> {
        let Bson::Document(spec) = arg else {
            return Err(Error::new(
                ErrorCode::Location40319,
                "the $lookup stage specification must be an object, but found ".to_owned()
                    + path::type_name(arg),
            ));
        };
        let mut from = None;
        let mut as_field = None;
        let mut local = None;
        let mut foreign = None;
        let mut lets = Vec::new();
        let mut pipeline = None;
        for (k, v) in spec {
            match k.as_str() {
                "from" => {
                    from = Some(match v {
                        Bson::String(s) => s.clone(),
                        Bson::Document(_) => {
                            return Err(Error::new(
                                ErrorCode::FailedToParse,
                                "$lookup with 'from' as {db, coll} is only supported for \
                                 internal collections",
                            ))
                        }
                        other => {
                            return Err(Error::new(
                                ErrorCode::FailedToParse,
                                format!(
                                    "$lookup 'from' field must be a string, but found {}",
                                    path::type_name(other)
                                ),
                            ))
                        }
                    })
                }
                "as" => as_field = Some(string_arg(k, v)?),
                "localField" => local = Some(string_arg(k, v)?),
                "foreignField" => foreign = Some(string_arg(k, v)?),
                "let" => {
                    let Bson::Document(d) = v else {
                        return Err(parse_error(format!(
                            "$lookup argument 'let' must be an object, is type {}",
                            path::type_name(v)
                        )));
                    };
                    for (name, spec) in d {
                        crate::query::expr::validate_user_write(name)?;
                        lets.push((name.clone(), Expression::compile(spec, vars)?));
                    }
                }
                "pipeline" => {
                    let Bson::Array(items) = v else {
                        return Err(parse_error(format!(
                            "$lookup argument 'pipeline' must be an array, is type {}",
                            path::type_name(v)
                        )));
                    };
                    pipeline = Some(
                        items
                            .iter()
                            .map(|s| match s {
                                Bson::Document(d) => Ok(d.clone()),
                                other => Err(parse_error(format!(
                                    "Each element of the 'pipeline' array must be an object, \
                                     found {}",
                                    path::type_name(other)
                                ))),
                            })
                            .collect::<Result<Vec<_>>>()?,
                    );
                }
                other => return Err(parse_error(format!("unknown argument to $lookup: {other}"))),
            }
        }
        let Some(as_field) = as_field else {
            return Err(parse_error("must specify 'as' field for a $lookup"));
        };
        let join =
            match (local, foreign) {
                (Some(l), Some(f)) => Some((field_path(&l)?, f)),
                (None, None) => None,
                _ => return Err(parse_error(
                    "$lookup requires both or neither of 'localField' and 'foreignField' to be \
                     specified",
                )),
            };
        if join.is_none() && pipeline.is_none() {
            return Err(parse_error(
                "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to \
                 be specified",
            ));
        }
        if !lets.is_empty() && pipeline.is_none() {
            return Err(parse_error(
                "$lookup with 'let' must also specify 'pipeline'",
            ));
        }
        let starts_with_documents = pipeline
            .as_ref()
            .and_then(|p| p.first())
            .is_some_and(|s| s.contains_key("$documents"));
        if from.is_none() && !starts_with_documents {
            return Err(parse_error("must specify 'from' field for a $lookup"));
        }
        let lookup = Lookup {
            from,
            as_path: field_path(&as_field)?,
            join,
            lets,
            pipeline,
        };
        // Compile the sub-pipeline once now, with every variable null, so a bad stage fails the
        // command before any document is read.
        lookup.sub_pipeline(vars, &Document::new(), true)?;
        Ok(lookup)
    }

    /// The pipeline to run for `doc`: the equality match (if any), then the user's stages.
    fn sub_pipeline(&self, vars: &Variables, doc: &Document, checking: bool) -> Result<Pipeline> {
        let mut vars = vars.clone();
        for (name, expr) in &self.lets {
            let value = if checking {
                Bson::Null
            } else {
                expr.eval(doc)?.unwrap_or(Bson::Null)
            };
            vars = vars.with_value(name, value);
        }
        let mut specs = Vec::new();
        if let Some((local, foreign)) = &self.join {
            specs.push(doc! {"$match": join_filter(doc, local, foreign)});
        }
        specs.extend(self.pipeline.iter().flatten().cloned());
        Pipeline::parse_nested(&specs, &vars, Nesting::SubPipeline("$lookup"))
    }

    pub fn apply(self, rows: Rows, env: &Env) -> Rows {
        let env = env.clone();
        Box::new(rows.map(move |row| {
            let row = row?;
            env.interrupt.check()?;
            let pipeline = self.sub_pipeline(&env.vars, &row.doc, false)?;
            let joined = match &self.from {
                Some(from) => pipeline.run_on(from, &env)?,
                None => pipeline.run(Box::new(std::iter::empty()), &env)?,
            };
            let mut out = Vec::new();
            let mut bytes = 0usize;
            for r in joined {
                let r = r?;
                bytes += r.size.unwrap_or_else(|| document_size(&r.doc));
                if bytes > MAX_JOINED_BYTES {
                    return Err(Error::new(
                        ErrorCode::Location4568,
                        format!(
                            "Total size of documents in {} matching pipeline's $lookup stage \
                             exceeds {MAX_JOINED_BYTES} bytes",
                            self.from.as_deref().unwrap_or("$documents")
                        ),
                    ));
                }
                out.push(Bson::Document(r.doc));
            }
            let mut doc = row.doc.clone();
            path::set(&mut doc, &self.as_path, Bson::Array(out))?;
            row.reshaped(doc)
        }))
    }
}

/// The foreign documents that join `doc`: `foreign` equal to the local value, to any element of
/// a local array, or `null`/missing when the local value is missing.
fn join_filter(doc: &Document, local: &[String], foreign: &str) -> Document {
    let mut values = Vec::new();
    for v in path::lookup(doc, local).all() {
        match v {
            Bson::Array(items) => values.extend(items.iter().cloned()),
            other => values.push(other.clone()),
        }
    }
    if values.is_empty() {
        values.push(Bson::Null);
    }
    // `$in` treats a regex as a pattern; a local regex joins only an equal regex.
    if values
        .iter()
        .any(|v| matches!(v, Bson::RegularExpression(_)))
    {
        let alternatives: Vec<Bson> = values
            .into_iter()
            .map(|v| Bson::Document(doc! {foreign: {"$eq": v}}))
            .collect();
        return doc! {"$or": alternatives};
    }
    doc! {foreign: {"$in": values}}
}
