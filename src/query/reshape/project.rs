//! `$project` and `$unset`: the projection compiler (`query::projection`) under its
//! aggregation policy, with mongod's `Invalid $project :: caused by ::` context on `$project`'s
//! parse errors.

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::Variables;
use crate::query::projection::Projection;
use bson::{Bson, Document};

/// `$project` or `$unset`: one compiled projection.
#[derive(Debug, Clone)]
pub struct Project {
    projection: Projection,
}

impl Project {
    pub fn compile(arg: &Bson, vars: &Variables) -> Result<Project> {
        let Bson::Document(spec) = arg else {
            return Err(Error::new(
                ErrorCode::Location15969,
                "$project specification must be an object",
            ));
        };
        let context = |e: Error| {
            Error::new(
                e.code,
                format!("Invalid $project :: caused by :: {}", e.message),
            )
        };
        if spec.is_empty() {
            return Err(context(Error::new(
                ErrorCode::Location51272,
                "projection specification must have at least one field",
            )));
        }
        Ok(Project {
            projection: Projection::aggregation(spec, vars).map_err(context)?,
        })
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
            projection: Projection::aggregation(&spec, &Variables::default())?,
        })
    }

    pub fn apply(&self, doc: &Document) -> Result<Document> {
        self.projection.apply(doc)
    }
}
