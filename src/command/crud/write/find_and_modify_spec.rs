//! `findAndModify`'s fields read in one pass, as mongod 7.0's IDL knows them: `query`, `sort`,
//! `remove`, `update`, `new`, `fields`, `upsert`, `arrayFilters`, `hint`, `collation`, `let`,
//! `bypassDocumentValidation` and `stmtId` (the fields only mongod's cluster sends are
//! `cluster_fields`').
//!
//! Owns: the fields' types. Does not own: how they combine (`remove` with `update`, ...) or
//! compiling them (`find_and_modify`).

use super::base_spec::WriteBase;
use crate::command::spec::Spec;
use crate::engine::catalog::collection_arg;
use crate::error::Result;
use bson::{Bson, Document};

/// `findAndModify` as the command carries it, typed. Owned, so that it is read once, before
/// the command runs, and shared by every step after (`ParsedCommand::FindAndModify`).
#[derive(Debug)]
pub struct FindAndModifySpec {
    /// The first field, judged before any other (`collection_arg`).
    pub collection: String,
    pub query: Option<Document>,
    pub sort: Option<Document>,
    pub remove: bool,
    /// A replacement, operators or a pipeline: judged when compiled.
    pub update: Option<Bson>,
    /// Return the document as it is after the update (`new: true`).
    pub return_new: bool,
    pub fields: Option<Document>,
    pub upsert: bool,
    pub array_filters: Option<Vec<Document>>,
    pub hint: Option<Bson>,
    pub collation: Option<Document>,
    pub let_vars: Option<Document>,
    pub stmt_id: Option<i32>,
}

impl FindAndModifySpec {
    /// Reads `cmd` (its first field `findAndModify` or `findandmodify`): the first field's
    /// error first, then every other field, the first bad one in the document's order being
    /// the error.
    pub fn read(cmd: &Document) -> Result<FindAndModifySpec> {
        // Either spelling: the first field names the collection.
        let collection = collection_arg(cmd.values().next(), "findAndModify")?.to_owned();
        let mut spec = Spec::new("findAndModify", cmd);
        let read = FindAndModifySpec {
            collection,
            query: spec.doc("query").cloned(),
            sort: spec.doc("sort").cloned(),
            remove: spec.bool("remove").unwrap_or(false),
            update: spec.take("update").cloned(),
            return_new: spec.bool("new").unwrap_or(false),
            fields: spec.doc("fields").cloned(),
            upsert: spec.bool("upsert").unwrap_or(false),
            array_filters: spec
                .documents("arrayFilters")
                .map(|filters| filters.into_iter().cloned().collect()),
            hint: spec.hint("hint").cloned(),
            collation: spec.doc("collation").cloned(),
            let_vars: spec.doc("let").cloned(),
            stmt_id: spec.i32("stmtId"),
        };
        // Typed, then unused: mayfly has no document validators to bypass.
        spec.bool("bypassDocumentValidation");
        spec.finish()?;
        Ok(read)
    }

    /// The statement id of this one-statement write (`retryable::statement_ids`).
    pub fn statement_id(&self) -> Result<i32> {
        let base = WriteBase {
            ordered: true,
            stmt_id: self.stmt_id,
            stmt_ids: None,
        };
        Ok(base
            .statement_ids("findAndModify", 1)?
            .first()
            .copied()
            .unwrap_or_default())
    }

    /// The documents that hold its filters and expressions: `query`, `sort`, `fields`,
    /// `arrayFilters` and `let` (not `update`, whose names may be fields it stores).
    pub fn expressions(&self) -> impl Iterator<Item = &Document> {
        self.query
            .iter()
            .chain(&self.sort)
            .chain(&self.fields)
            .chain(self.array_filters.iter().flatten())
            .chain(&self.let_vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use bson::doc;

    #[test]
    fn every_field_is_read_typed() {
        let body = doc! {"findandmodify": "c", "query": {"a": 1}, "sort": {"b": -1},
        "update": {"$inc": {"n": 1}}, "new": true, "fields": {"n": 1}, "upsert": 1,
        "arrayFilters": [{"e": 2}], "hint": "a_1", "collation": {"locale": "fr"},
        "let": {"x": 1}, "bypassDocumentValidation": true, "stmtId": 2, "txnNumber": 1i64};
        let spec = FindAndModifySpec::read(&body).unwrap();
        assert_eq!(spec.collection, "c");
        assert_eq!(spec.query, Some(doc! {"a": 1}));
        assert_eq!(spec.sort, Some(doc! {"b": -1}));
        assert!(!spec.remove && spec.return_new && spec.upsert);
        assert_eq!(spec.update, Some(Bson::Document(doc! {"$inc": {"n": 1}})));
        assert_eq!(spec.fields, Some(doc! {"n": 1}));
        assert_eq!(spec.array_filters, Some(vec![doc! {"e": 2}]));
        assert_eq!(spec.hint, Some(Bson::String("a_1".into())));
        assert_eq!(spec.collation, Some(doc! {"locale": "fr"}));
        assert_eq!(spec.let_vars, Some(doc! {"x": 1}));
        let scanned: Vec<&Document> = spec.expressions().collect();
        assert_eq!(
            scanned,
            [
                &doc! {"a": 1},
                &doc! {"b": -1},
                &doc! {"n": 1},
                &doc! {"e": 2},
                &doc! {"x": 1}
            ]
        );
        assert_eq!(spec.statement_id().unwrap(), 2);
        let remove = doc! {"findAndModify": "c", "remove": true};
        let bare = FindAndModifySpec::read(&remove).unwrap();
        assert!(bare.remove && bare.update.is_none() && bare.query.is_none());
        assert_eq!(bare.statement_id().unwrap(), 0);
    }

    #[test]
    fn the_first_bad_field_is_the_error() {
        let cases = [
            (
                doc! {"findAndModify": "c", "remove": true, "bogus": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'findAndModify.bogus' is an unknown field.",
            ),
            (
                doc! {"findandmodify": "c", "remove": true, "multi": true},
                ErrorCode::IDLUnknownField,
                "BSON field 'findAndModify.multi' is an unknown field.",
            ),
            (
                doc! {"findAndModify": "c", "query": 1, "bogus": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'findAndModify.query' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"findAndModify": "c", "bogus": 1, "query": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'findAndModify.bogus' is an unknown field.",
            ),
            (
                doc! {"findAndModify": "c", "new": "yes", "sort": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'findAndModify.new' is the wrong type 'string', expected type 'bool'",
            ),
            (
                doc! {"findAndModify": "c", "update": {}, "arrayFilters": {}},
                ErrorCode::TypeMismatch,
                "BSON field 'findAndModify.arrayFilters' is the wrong type 'object', expected type 'array'",
            ),
            (
                doc! {"findAndModify": "c", "update": {}, "hint": []},
                ErrorCode::FailedToParse,
                "Hint must be either a string or nested object",
            ),
            (
                doc! {"findAndModify": "c", "update": {}, "stmtId": "1"},
                ErrorCode::TypeMismatch,
                "BSON field 'findAndModify.stmtId' is the wrong type 'string', expected type 'int'",
            ),
            (
                doc! {"findAndModify": "c", "update": {}, "fields": [1]},
                ErrorCode::TypeMismatch,
                "BSON field 'findAndModify.fields' is the wrong type 'array', expected type 'object'",
            ),
        ];
        for (body, code, message) in cases {
            let err = FindAndModifySpec::read(&body).err().unwrap();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }
}
