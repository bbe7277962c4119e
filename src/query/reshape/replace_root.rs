//! `$replaceRoot: {newRoot: expr}` and `$replaceWith: expr`: the document becomes the value of
//! an expression, which must be an object.

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{value, Expression, Variables};
use crate::query::path::render_document;
use bson::{Bson, Document};

#[derive(Debug, Clone)]
pub struct ReplaceRoot {
    new_root: Expression,
}

impl ReplaceRoot {
    /// `$replaceRoot`'s argument: `{newRoot: expr}`.
    pub fn parse_replace_root(arg: &Bson, vars: &Variables) -> Result<ReplaceRoot> {
        let Bson::Document(d) = arg else {
            return Err(Error::new(
                ErrorCode::Location40229,
                format!(
                    "expected an object as specification for $replaceRoot stage, got {}",
                    crate::query::path::type_name(arg)
                ),
            ));
        };
        if let Some(unknown) = d.keys().find(|k| *k != "newRoot") {
            return Err(Error::new(
                ErrorCode::IDLUnknownField,
                format!("BSON field '$replaceRoot.{unknown}' is an unknown field."),
            ));
        }
        let Some(new_root) = d.get("newRoot") else {
            return Err(Error::new(
                ErrorCode::Location40414,
                "BSON field '$replaceRoot.newRoot' is missing but a required field",
            ));
        };
        ReplaceRoot::parse_replace_with(new_root, vars)
    }

    /// `$replaceWith`'s argument: the expression itself.
    pub fn parse_replace_with(arg: &Bson, vars: &Variables) -> Result<ReplaceRoot> {
        Ok(ReplaceRoot {
            new_root: Expression::compile(arg, vars)?,
        })
    }

    pub fn apply(&self, doc: &Document) -> Result<Document> {
        match self.new_root.eval(doc)? {
            Some(Bson::Document(d)) => Ok(d),
            other => Err(Error::new(
                ErrorCode::Location40228,
                format!(
                    "'replacement document' must evaluate to an object, but resulting value was: \
                     {}. Type of resulting value: '{}'. Input document: {}",
                    value::render(&other),
                    value::type_name(&other),
                    render_document(doc),
                ),
            )),
        }
    }
}
