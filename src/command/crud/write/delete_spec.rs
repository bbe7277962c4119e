//! `delete`'s fields read in one pass: the command's (`deletes`, `let` and the base fields)
//! and each statement's, as mongod 7.0's IDL knows them (`DeleteOpEntry`: `q`, `limit`,
//! `hint`, `collation`, `sampleId`).
//!
//! Owns: the fields' types and `limit`'s values. Does not own: compiling the filter
//! (`delete`), the batch's size (`base_spec`).

use super::base_spec::{statements, WriteBase};
use crate::command::spec::Spec;
use crate::command::values::wrong_type;
use crate::engine::catalog::collection_arg;
use crate::error::{Error, Result};
use bson::{Bson, Document};

/// The messages' name of a statement's fields.
const STATEMENT: &str = "delete.deletes";

/// `delete` as the command carries it, typed. Owned, so that it is read once, before the
/// command runs, and shared by every step after (`ParsedCommand::Delete`).
#[derive(Debug)]
pub struct DeleteSpec {
    /// The first field, judged before any other (`collection_arg`).
    pub collection: String,
    pub base: WriteBase,
    pub let_vars: Option<Document>,
    pub deletes: Vec<DeleteStatementSpec>,
}

/// One statement of `deletes`, typed.
#[derive(Debug)]
pub struct DeleteStatementSpec {
    pub q: Document,
    /// `limit: 1`: only the first match goes; `limit: 0`, every match.
    pub just_one: bool,
    pub hint: Option<Bson>,
    pub collation: Option<Document>,
}

impl DeleteSpec {
    /// Reads `cmd`: the first field's error first, then every other field, the first bad one
    /// in the document's order being the error, a statement's standing at `deletes`.
    pub fn read(cmd: &Document) -> Result<DeleteSpec> {
        let collection = collection_arg(cmd.get("delete"), "delete")?.to_owned();
        let mut spec = Spec::new("delete", cmd);
        let base = WriteBase::read(&mut spec);
        let let_vars = spec.doc("let").cloned();
        let deletes = statements(&mut spec, "deletes", DeleteStatementSpec::read);
        spec.finish()?;
        Ok(DeleteSpec {
            collection,
            base,
            let_vars,
            // `None` only with an error, which `finish` returned.
            deletes: deletes.unwrap_or_default(),
        })
    }

    /// The documents that hold its filters and expressions: each statement's `q`, and `let`.
    pub fn expressions(&self) -> impl Iterator<Item = &Document> {
        self.deletes
            .iter()
            .map(|stmt| &stmt.q)
            .chain(&self.let_vars)
    }
}

impl DeleteStatementSpec {
    fn read(stmt: &Document) -> Result<DeleteStatementSpec> {
        let mut spec = Spec::element(STATEMENT, stmt);
        let q = spec.required_doc("q");
        let just_one = spec
            .required("limit")
            .and_then(|limit| match just_one(limit) {
                Ok(just_one) => Some(just_one),
                Err(error) => {
                    spec.refuse("limit", error);
                    None
                }
            });
        let hint = spec.hint("hint");
        let collation = spec.doc("collation");
        // A query-sampling id: it changes nothing on one node.
        spec.take("sampleId");
        spec.finish()?;
        let (Some(q), Some(just_one)) = (q, just_one) else {
            return Err(Error::internal(
                "a delete statement read without q or limit",
            ));
        };
        Ok(DeleteStatementSpec {
            q: q.clone(),
            just_one,
            hint: hint.cloned(),
            collation: collation.cloned(),
        })
    }
}

/// `limit`: a number, 0 (every match) or 1 (the first).
fn just_one(limit: &Bson) -> Result<bool> {
    match limit {
        Bson::Int32(0) | Bson::Int64(0) => Ok(false),
        Bson::Int32(1) | Bson::Int64(1) => Ok(true),
        Bson::Double(l) if *l == 0.0 || *l == 1.0 => Ok(*l == 1.0),
        l @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)) => {
            Err(Error::failed_to_parse(format!(
                "The limit field in delete objects must be 0 or 1. Got {}",
                crate::query::path::render(l)
            )))
        }
        other => Err(wrong_type(
            STATEMENT,
            "limit",
            other,
            "[long, int, decimal, double]",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use bson::doc;

    #[test]
    fn every_field_is_read_typed() {
        let body = doc! {"delete": "c", "deletes": [
            {"q": {"a": 1}, "limit": 1, "hint": {"a": 1}, "collation": {"locale": "fr"},
             "sampleId": 1},
            {"q": {}, "limit": 0.0},
            {"q": {}, "limit": 1i64},
        ], "let": {"x": 1}, "ordered": false, "maxTimeMS": 5};
        let spec = DeleteSpec::read(&body).unwrap();
        assert!(!spec.base.ordered);
        assert_eq!(spec.collection, "c");
        assert_eq!(spec.let_vars, Some(doc! {"x": 1}));
        let scanned: Vec<&Document> = spec.expressions().collect();
        assert_eq!(
            scanned,
            [&doc! {"a": 1}, &doc! {}, &doc! {}, &doc! {"x": 1}]
        );
        let limits: Vec<bool> = spec.deletes.iter().map(|d| d.just_one).collect();
        assert_eq!(limits, [true, false, true]);
        let first = spec.deletes.first().unwrap();
        assert_eq!(first.q, doc! {"a": 1});
        assert_eq!(first.hint, Some(Bson::Document(doc! {"a": 1})));
        assert_eq!(first.collation, Some(doc! {"locale": "fr"}));
    }

    #[test]
    fn the_first_bad_field_is_the_error() {
        let cases = [
            (
                doc! {"delete": "c", "deletes": [{"q": {}}]},
                ErrorCode::Location40414,
                "BSON field 'delete.deletes.limit' is missing but a required field",
            ),
            (
                doc! {"delete": "c", "deletes": [{"limit": 1}]},
                ErrorCode::Location40414,
                "BSON field 'delete.deletes.q' is missing but a required field",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "limit": 2}]},
                ErrorCode::FailedToParse,
                "The limit field in delete objects must be 0 or 1. Got 2",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "limit": "1"}]},
                ErrorCode::TypeMismatch,
                "BSON field 'delete.deletes.limit' is the wrong type 'string', expected types '[long, int, decimal, double]'",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "limit": 2, "x": 1}]},
                ErrorCode::FailedToParse,
                "The limit field in delete objects must be 0 or 1. Got 2",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "x": 1, "limit": 2}]},
                ErrorCode::IDLUnknownField,
                "BSON field 'delete.deletes.x' is an unknown field.",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0, "multi": true}]},
                ErrorCode::IDLUnknownField,
                "BSON field 'delete.deletes.multi' is an unknown field.",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0, "hint": 1}]},
                ErrorCode::FailedToParse,
                "Hint must be either a string or nested object",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}], "let": []},
                ErrorCode::TypeMismatch,
                "BSON field 'delete.let' is the wrong type 'array', expected type 'object'",
            ),
            (
                doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}], "arrayFilters": []},
                ErrorCode::IDLUnknownField,
                "BSON field 'delete.arrayFilters' is an unknown field.",
            ),
        ];
        for (body, code, message) in cases {
            let err = DeleteSpec::read(&body).err().unwrap();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }
}
