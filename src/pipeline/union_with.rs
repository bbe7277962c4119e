//! `$unionWith`: the input, then the documents of another collection of the same database run
//! through an optional pipeline. The other collection is read only once the input is
//! exhausted, at the cursor's time then (TTL-18 holds for its documents as for any read).

use super::{Env, Nesting, Pipeline, Rows};
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::Variables;
use crate::query::path;
use bson::{Bson, Document};

pub struct UnionWith {
    /// `None` for a pipeline that starts with `$documents`.
    coll: Option<String>,
    pipeline: Vec<Document>,
    vars: Variables,
}

impl UnionWith {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<UnionWith> {
        let (coll, pipeline) = match arg {
            Bson::String(coll) => (Some(coll.clone()), Vec::new()),
            Bson::Document(spec) => {
                let mut coll = None;
                let mut pipeline = Vec::new();
                for (k, v) in spec {
                    match (k.as_str(), v) {
                        ("coll", Bson::String(c)) => coll = Some(c.clone()),
                        ("pipeline", Bson::Array(items)) => {
                            for item in items {
                                let Bson::Document(d) = item else {
                                    return Err(Error::type_mismatch(
                                        "Each element of the 'pipeline' array must be an object",
                                    ));
                                };
                                pipeline.push(d.clone());
                            }
                        }
                        ("coll" | "pipeline", other) => {
                            return Err(Error::type_mismatch(format!(
                                "BSON field '$unionWith.{k}' is the wrong type '{}', expected \
                                 type '{}'",
                                path::type_name(other),
                                if k == "coll" { "string" } else { "array" }
                            )))
                        }
                        _ => {
                            return Err(Error::new(
                                ErrorCode::IDLUnknownField,
                                format!("BSON field '$unionWith.{k}' is an unknown field."),
                            ))
                        }
                    }
                }
                let starts_with_documents = pipeline
                    .first()
                    .is_some_and(|s| s.contains_key("$documents"));
                if coll.is_none() && !starts_with_documents {
                    return Err(Error::new(
                        ErrorCode::Location40414,
                        "BSON field '$unionWith.coll' is missing but a required field",
                    ));
                }
                (coll, pipeline)
            }
            other => {
                return Err(Error::new(
                    ErrorCode::Location40600,
                    format!(
                        "the $unionWith stage specification must be an object or string, but \
                         found {}",
                        path::type_name(other)
                    ),
                ))
            }
        };
        // Parse now so a bad sub-pipeline fails the command before any document is read.
        Pipeline::parse_nested(&pipeline, vars, Nesting::SubPipeline("$unionWith"))?;
        Ok(UnionWith {
            coll,
            pipeline,
            vars: vars.clone(),
        })
    }

    pub fn apply(self, rows: Rows, env: &Env) -> Rows {
        let env = env.clone();
        let mut second: Option<Rows> = None;
        let mut first = Some(rows);
        Box::new(std::iter::from_fn(move || {
            if let Some(rows) = first.as_mut() {
                match rows.next() {
                    Some(row) => return Some(row),
                    None => first = None,
                }
            }
            if second.is_none() {
                let other = Pipeline::parse_nested(
                    &self.pipeline,
                    &self.vars,
                    Nesting::SubPipeline("$unionWith"),
                )
                .and_then(|p| match &self.coll {
                    Some(coll) => p.run_on(coll, &env),
                    None => p.run(Box::new(std::iter::empty()), &env),
                });
                match other {
                    Ok(rows) => second = Some(rows),
                    Err(e) => {
                        second = Some(Box::new(std::iter::empty()));
                        return Some(Err(e));
                    }
                }
            }
            second.as_mut().and_then(Iterator::next)
        }))
    }
}
