//! `update`'s fields read in one pass: the command's (`updates`, `let` and the base fields)
//! and each statement's, as mongod 7.0's IDL knows them (`UpdateOpEntry`: `q`, `u`, `c`,
//! `arrayFilters`, `hint`, `multi`, `upsert`, `upsertSupplied`, `collation`, `sampleId` and
//! the router's `$_allowShardKeyUpdatesWithoutFullShardKeyInQuery`). No `sort`: mongod 7.0
//! refuses it as an unknown field (it came in 8.0).
//!
//! Owns: the fields' types and the refusal of what mayfly cannot honour. Does not own:
//! compiling the filter and the update (`update`), the batch's size (`base_spec`).

use super::base_spec::{statements, WriteBase};
use crate::command::spec::Spec;
use crate::engine::catalog::collection_arg;
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// The messages' name of a statement's fields.
const STATEMENT: &str = "update.updates";

/// `update` as the command carries it, typed. Owned, so that it is read once, before the
/// command runs, and shared by every step after (`ParsedCommand::Update`).
#[derive(Debug)]
pub struct UpdateSpec {
    /// The first field, judged before any other (`collection_arg`).
    pub collection: String,
    pub base: WriteBase,
    pub let_vars: Option<Document>,
    pub updates: Vec<UpdateStatementSpec>,
}

/// One statement of `updates`, typed.
#[derive(Debug)]
pub struct UpdateStatementSpec {
    pub q: Document,
    /// A replacement, operators or a pipeline: judged when the statement is compiled, where a
    /// bad one is the statement's write error.
    pub u: Bson,
    pub upsert: bool,
    pub multi: bool,
    pub array_filters: Option<Vec<Document>>,
    pub hint: Option<Bson>,
    pub collation: Option<Document>,
}

impl UpdateSpec {
    /// Reads `cmd`: the first field's error first, then every other field, the first bad one
    /// in the document's order being the error, a statement's standing at `updates`.
    pub fn read(cmd: &Document) -> Result<UpdateSpec> {
        let collection = collection_arg(cmd.get("update"), "update")?.to_owned();
        let mut spec = Spec::new("update", cmd);
        let base = WriteBase::read(&mut spec);
        let let_vars = spec.doc("let").cloned();
        let updates = statements(&mut spec, "updates", UpdateStatementSpec::read);
        spec.finish()?;
        Ok(UpdateSpec {
            collection,
            base,
            let_vars,
            // `None` only with an error, which `finish` returned.
            updates: updates.unwrap_or_default(),
        })
    }

    /// Whether a statement inserts when it matches nothing (authorization then needs
    /// `insert` too).
    pub fn any_upsert(&self) -> bool {
        self.updates.iter().any(|stmt| stmt.upsert)
    }

    /// The documents that hold its filters and expressions: each statement's `q` and
    /// `arrayFilters`, and `let` (not `u`, whose names may be fields it stores).
    pub fn expressions(&self) -> impl Iterator<Item = &Document> {
        self.updates
            .iter()
            .flat_map(|stmt| std::iter::once(&stmt.q).chain(stmt.array_filters.iter().flatten()))
            .chain(&self.let_vars)
    }
}

impl UpdateStatementSpec {
    fn read(stmt: &Document) -> Result<UpdateStatementSpec> {
        let mut spec = Spec::element(STATEMENT, stmt);
        let q = spec.required_doc("q");
        let u = spec.required("u");
        // `c` (a pipeline update's constants) and `upsertSupplied` (the upserted document
        // given in `c.new`, which only a router sends) would change what the statement does.
        if spec.doc("c").is_some_and(|c| !c.is_empty()) {
            let error = Error::new(
                ErrorCode::NotImplemented,
                "an update statement's constants ('c') are not supported by mayfly",
            );
            spec.refuse("c", error);
        }
        if spec.bool("upsertSupplied") == Some(true) {
            let error = Error::new(
                ErrorCode::NotImplemented,
                "an update statement's 'upsertSupplied' is not supported by mayfly",
            );
            spec.refuse("upsertSupplied", error);
        }
        let upsert = spec.bool("upsert").unwrap_or(false);
        let multi = spec.bool("multi").unwrap_or(false);
        let array_filters = spec.documents("arrayFilters");
        let hint = spec.hint("hint");
        let collation = spec.doc("collation");
        // A query-sampling id, and a router's flag for sharded collections (mayfly has
        // none): neither changes what the statement does on one node.
        spec.take("sampleId");
        spec.take("$_allowShardKeyUpdatesWithoutFullShardKeyInQuery");
        spec.finish()?;
        let (Some(q), Some(u)) = (q, u) else {
            return Err(Error::internal("an update statement read without q or u"));
        };
        Ok(UpdateStatementSpec {
            q: q.clone(),
            u: u.clone(),
            upsert,
            multi,
            array_filters: array_filters.map(|filters| filters.into_iter().cloned().collect()),
            hint: hint.cloned(),
            collation: collation.cloned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn every_field_is_read_typed() {
        let body = doc! {"update": "c", "ordered": false, "let": {"x": 1}, "stmtId": 3,
        "bypassDocumentValidation": false, "updates": [
            {"q": {"a": 1}, "u": {"$set": {"b": 1}}, "upsert": true, "multi": 1,
             "arrayFilters": [{"e": 1}], "hint": "a_1", "collation": {"locale": "fr"},
             "c": {}, "upsertSupplied": false, "sampleId": 1,
             "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery": true},
            {"q": {}, "u": [{"$set": {"c": 1}}]},
        ], "lsid": {"id": 1}, "$db": "d"};
        let spec = UpdateSpec::read(&body).unwrap();
        assert!(!spec.base.ordered);
        assert_eq!(spec.base.stmt_id, Some(3));
        assert_eq!(spec.collection, "c");
        assert_eq!(spec.let_vars, Some(doc! {"x": 1}));
        assert!(spec.any_upsert());
        let scanned: Vec<&Document> = spec.expressions().collect();
        assert_eq!(
            scanned,
            [&doc! {"a": 1}, &doc! {"e": 1}, &doc! {}, &doc! {"x": 1}]
        );
        let [first, second] = spec.updates.as_slice() else {
            panic!("two statements");
        };
        assert_eq!(first.q, doc! {"a": 1});
        assert_eq!(first.u, Bson::Document(doc! {"$set": {"b": 1}}));
        assert!(first.upsert && first.multi);
        assert_eq!(first.array_filters, Some(vec![doc! {"e": 1}]));
        assert_eq!(first.hint, Some(Bson::String("a_1".into())));
        assert_eq!(first.collation, Some(doc! {"locale": "fr"}));
        assert!(!second.upsert && !second.multi);
        assert!(second.u.as_array().is_some());
        assert_eq!(
            (second.array_filters.as_ref(), second.hint.as_ref()),
            (None, None)
        );
    }

    #[test]
    fn the_first_bad_field_is_the_error() {
        let cases = [
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}, "sort": {"a": 1}}]},
                ErrorCode::IDLUnknownField,
                "BSON field 'update.updates.sort' is an unknown field.",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}, "comment": "x"}]},
                ErrorCode::IDLUnknownField,
                "BSON field 'update.updates.comment' is an unknown field.",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}}], "sort": {"a": 1}},
                ErrorCode::IDLUnknownField,
                "BSON field 'update.sort' is an unknown field.",
            ),
            (
                doc! {"update": "c", "updates": [{"u": {}}]},
                ErrorCode::Location40414,
                "BSON field 'update.updates.q' is missing but a required field",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}}]},
                ErrorCode::Location40414,
                "BSON field 'update.updates.u' is missing but a required field",
            ),
            (
                doc! {"update": "c", "updates": [{"x": 1}]},
                ErrorCode::IDLUnknownField,
                "BSON field 'update.updates.x' is an unknown field.",
            ),
            (
                doc! {"update": "c", "updates": [{"q": 1, "u": {}, "x": 1}]},
                ErrorCode::TypeMismatch,
                "BSON field 'update.updates.q' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}, "multi": "yes"}]},
                ErrorCode::TypeMismatch,
                "BSON field 'update.updates.multi' is the wrong type 'string', expected type 'bool'",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}, "arrayFilters": [1]}]},
                ErrorCode::TypeMismatch,
                "BSON field 'update.updates.arrayFilters.0' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}, "hint": 1}]},
                ErrorCode::FailedToParse,
                "Hint must be either a string or nested object",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}, "collation": "fr"}]},
                ErrorCode::TypeMismatch,
                "BSON field 'update.updates.collation' is the wrong type 'string', expected type 'object'",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": [], "c": {"x": 1}}]},
                ErrorCode::NotImplemented,
                "an update statement's constants ('c') are not supported by mayfly",
            ),
            (
                doc! {"update": "c", "updates": [{"q": {}, "u": {}, "upsertSupplied": true}]},
                ErrorCode::NotImplemented,
                "an update statement's 'upsertSupplied' is not supported by mayfly",
            ),
            (
                doc! {"update": "c", "let": 1, "updates": [{"q": 1}]},
                ErrorCode::TypeMismatch,
                "BSON field 'update.let' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"update": "c", "updates": [{"q": 1}], "let": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'update.updates.q' is the wrong type 'int', expected type 'object'",
            ),
        ];
        for (body, code, message) in cases {
            let err = UpdateSpec::read(&body).err().unwrap();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }
}
