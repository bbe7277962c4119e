//! `$facet`: several pipelines over the same input, one output document with an array per
//! pipeline. The input is held (within the stage's 100 MB budget, counted decoded) so each
//! pipeline reads it.

use super::memory::{held_row, Blocking};
use super::{Env, Nesting, Pipeline, Row, Rows};
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{validate_field_name, Variables};
use crate::query::path;
use crate::query::size::document_size;
use bson::{Bson, Document};

/// The largest document a stage may build (mongod's BSON limit).
const MAX_OUTPUT_BYTES: usize = 16 * 1024 * 1024;

pub struct Facet {
    facets: Vec<(String, Vec<Document>)>,
    vars: Variables,
}

impl Facet {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<Facet> {
        let Bson::Document(spec) = arg else {
            return Err(Error::new(
                ErrorCode::Location15947,
                format!(
                    "the $facet specification must be a non-empty object, but found: {}",
                    path::render(arg)
                ),
            ));
        };
        if spec.is_empty() {
            return Err(Error::new(
                ErrorCode::Location40169,
                "the $facet specification must be a non-empty object",
            ));
        }
        let mut facets = Vec::with_capacity(spec.len());
        for (name, value) in spec {
            validate_field_name(name).map_err(|e| {
                Error::new(
                    ErrorCode::Location40170,
                    format!(
                        "invalid output field name '{name}' in $facet: {}",
                        e.message
                    ),
                )
            })?;
            let Bson::Array(items) = value else {
                return Err(Error::new(
                    ErrorCode::Location40170,
                    format!(
                        "arguments to $facet must be arrays, {name} is type {}",
                        path::type_name(value)
                    ),
                ));
            };
            let mut stages = Vec::with_capacity(items.len());
            for item in items {
                let Bson::Document(d) = item else {
                    return Err(Error::new(
                        ErrorCode::Location40171,
                        format!(
                            "all elements of pipeline specification must be objects, but one \
                             in {name} is type {}",
                            path::type_name(item)
                        ),
                    ));
                };
                stages.push(d.clone());
            }
            if stages.is_empty() {
                return Err(Error::new(
                    ErrorCode::Location40172,
                    format!("sub-pipeline in $facet stage cannot be empty: {name}"),
                ));
            }
            Pipeline::parse_nested(&stages, vars, Nesting::Facet)?;
            facets.push((name.clone(), stages));
        }
        Ok(Facet {
            facets,
            vars: vars.clone(),
        })
    }

    pub fn apply(self, rows: Rows, env: &Env) -> Result<Rows> {
        let mut memory = env.limits.budget(Blocking::Sort);
        let mut input = Vec::new();
        for row in rows {
            let row = row?;
            memory.charge(held_row(&row)?)?;
            input.push(row);
        }
        let mut out = Document::new();
        let mut bytes = 0usize;
        for (name, stages) in &self.facets {
            let pipeline = Pipeline::parse_nested(stages, &self.vars, Nesting::Facet)?;
            let copy: Vec<Result<Row>> = input.iter().map(|r| Ok(r.clone())).collect();
            let mut docs = Vec::new();
            for row in pipeline.run(Box::new(copy.into_iter()), env)? {
                let row = row?;
                bytes += document_size(&row.doc);
                if bytes > MAX_OUTPUT_BYTES {
                    return Err(Error::new(
                        ErrorCode::Location4031700,
                        format!(
                            "document constructed by $facet is {bytes} bytes, which exceeds the \
                             limit of {MAX_OUTPUT_BYTES} bytes"
                        ),
                    ));
                }
                docs.push(Bson::Document(row.doc));
            }
            out.insert(name.clone(), docs);
        }
        Ok(Box::new(std::iter::once(Ok(Row::computed(out)))))
    }
}
