//! `$project` and `$unset`: inclusion and exclusion through the find projection, plus
//! top-level computed fields.

use super::{is_expression, truthy};
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{Expression, Variables};
use crate::query::projection::Projection;
use bson::{doc, Bson, Document};

/// `$project`: inclusion/exclusion through the find projection, plus top-level computed fields.
#[derive(Debug, Clone)]
pub struct Project {
    base: Base,
    computed: Vec<(String, Expression)>,
}

#[derive(Debug, Clone)]
enum Base {
    Projection(Projection),
    /// Only computed fields: the output starts from `_id` alone (or nothing).
    IdOnly(bool),
}

impl Project {
    pub fn compile(arg: &Bson, vars: &Variables) -> Result<Project> {
        let Bson::Document(spec) = arg else {
            return Err(Error::new(
                ErrorCode::Location15969,
                "$project specification must be an object",
            ));
        };
        if spec.is_empty() {
            return Err(Error::new(
                ErrorCode::Location51272,
                "Invalid $project :: caused by :: projection specification must have at least one field",
            ));
        }
        let mut plain = Document::new();
        let mut computed = Vec::new();
        for (k, v) in spec {
            if is_expression(v) {
                if k.contains('.') {
                    return Err(Error::new(ErrorCode::NotImplemented, format!("computed dotted fields in $project ('{k}') are not supported by this server")));
                }
                computed.push((k.clone(), Expression::compile(v, vars)?));
            } else {
                if let Bson::Document(d) = v {
                    if contains_expression(d) {
                        return Err(Error::new(ErrorCode::NotImplemented, format!("computed fields inside sub-documents of $project ('{k}') are not supported by this server")));
                    }
                }
                plain.insert(k.clone(), v.clone());
            }
        }
        if computed.is_empty() {
            return Ok(Project {
                base: Base::Projection(Projection::compile(&plain)?),
                computed,
            });
        }
        if has_exclusion(&plain, true) {
            return Err(Error::new(
                ErrorCode::Location31252,
                "Invalid $project :: caused by :: Cannot use expression other than $meta in exclusion projection",
            ));
        }
        let include_id = plain.get("_id").is_none_or(truthy);
        let base = if plain.keys().any(|k| k != "_id") {
            Base::Projection(Projection::compile(&plain)?)
        } else {
            Base::IdOnly(include_id)
        };
        Ok(Project { base, computed })
    }

    /// `$unset: "a"` or `["a", "b.c"]`: an exclusion projection.
    pub fn unset(arg: &Bson) -> Result<Project> {
        let fields: Vec<&Bson> = match arg {
            Bson::Array(items) if !items.is_empty() => items.iter().collect(),
            Bson::String(_) => vec![arg],
            _ => {
                return Err(Error::new(
                    ErrorCode::Location31120,
                    "$unset specification must be a string or an array",
                ))
            }
        };
        let mut spec = Document::new();
        for f in fields {
            let Bson::String(name) = f else {
                return Err(Error::new(ErrorCode::Location31120, "$unset specification must be a string or an array containing only string values"));
            };
            spec.insert(name.clone(), 0);
        }
        Ok(Project {
            base: Base::Projection(Projection::compile(&spec)?),
            computed: Vec::new(),
        })
    }

    pub fn apply(&self, doc: &Document) -> Result<Document> {
        let mut out = match &self.base {
            Base::Projection(p) => p.apply(doc)?,
            Base::IdOnly(true) => doc
                .get("_id")
                .map(|id| doc! {"_id": id.clone()})
                .unwrap_or_default(),
            Base::IdOnly(false) => Document::new(),
        };
        for (k, e) in &self.computed {
            match e.eval(doc)? {
                Some(v) if k == "_id" && !out.contains_key("_id") => {
                    let mut front = doc! {"_id": v};
                    front.extend(out);
                    out = front;
                }
                Some(v) => {
                    out.insert(k.clone(), v);
                }
                None => {
                    out.remove(k);
                }
            }
        }
        Ok(out)
    }
}

fn contains_expression(d: &Document) -> bool {
    d.values().any(|v| match v {
        Bson::Document(sub) => is_expression(v) || contains_expression(sub),
        other => is_expression(other),
    })
}

fn has_exclusion(spec: &Document, top: bool) -> bool {
    spec.iter().any(|(k, v)| match v {
        _ if top && k == "_id" => false,
        Bson::Boolean(false) => true,
        v if crate::query::compare::is_number(v) => !truthy(v),
        Bson::Document(d) if !is_expression(v) => has_exclusion(d, false),
        _ => false,
    })
}
