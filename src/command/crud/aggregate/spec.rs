//! `aggregate`'s own fields, read in one pass into an [`AggregateSpec`] (mongod 7.0's
//! `aggregate.idl`, less the generic fields the envelope takes: `maxTimeMS`, `readConcern`,
//! `writeConcern`, `comment`, and the fields only mongod's cluster sends, which
//! `cluster_fields` knows). The stages are kept as sent; [`AggregateSpec::stages`] names
//! what they read and write for the envelope (authorization, the transaction allow-list, the
//! write-concern rule, the Cosmos gate) and the handler parses them in full.
//!
//! Owns: the fields' types, `cursor`'s own fields, the required `pipeline` and `cursor`. Does
//! not own: what the stages mean (`pipeline`), the namespace rules (`crud/read.rs`).

use crate::command::spec::Spec;
use crate::error::{Error, ErrorCode, Result};
use crate::pipeline::lite::LitePipeline;
use bson::{doc, Bson, Document};

/// An `aggregate` as the command carries it: typed, its pipeline's stages as sent.
#[derive(Debug, Default)]
pub struct AggregateSpec {
    /// The aggregated collection; `None` for `{aggregate: 1}` (a database-level source).
    pub collection: Option<String>,
    pub pipeline: Vec<Document>,
    pub explain: bool,
    /// `cursor.batchSize`; `None` when absent (or when explaining without a cursor).
    pub batch_size: Option<u64>,
    pub allow_disk_use: bool,
    pub bypass_document_validation: Option<bool>,
    pub hint: Option<Bson>,
    /// As sent (an empty one means the collection's default).
    pub collation: Option<Document>,
    pub let_vars: Option<Document>,
}

impl AggregateSpec {
    /// Reads `cmd`. The first field's error comes first (mongod resolves the namespace before
    /// parsing the rest); then the first bad field in the document's order; then a missing
    /// `pipeline` (40414) or `cursor` (9).
    /// The documents that hold its filters and expressions: the stages and `let`.
    pub fn expressions(&self) -> impl Iterator<Item = &Document> {
        self.pipeline.iter().chain(&self.let_vars)
    }

    pub fn read(cmd: &Document) -> Result<AggregateSpec> {
        let collection = match cmd.get("aggregate") {
            Some(Bson::String(name)) => Some(name.clone()),
            Some(v)
                if crate::query::compare::values_equal(v, &Bson::Int32(1))
                    && crate::query::compare::is_number(v) =>
            {
                None
            }
            _ => return Err(Error::new(
                ErrorCode::InvalidNamespace,
                "Invalid command format: the 'aggregate' field must specify a collection name or 1",
            )),
        };
        let mut spec = Spec::new("aggregate", cmd);
        let pipeline = spec
            .documents("pipeline")
            .map(|stages| stages.into_iter().cloned().collect())
            .unwrap_or_default();
        let explain = spec.bool("explain").unwrap_or(false);
        let cursor = spec.doc("cursor");
        let aggregate = AggregateSpec {
            collection,
            pipeline,
            explain,
            batch_size: None,
            allow_disk_use: spec.bool("allowDiskUse").unwrap_or(false),
            bypass_document_validation: spec.bool("bypassDocumentValidation"),
            hint: spec.take("hint").cloned(),
            collation: spec.doc("collation").cloned(),
            let_vars: spec.doc("let").cloned(),
        };
        spec.require("pipeline");
        spec.finish()?;
        let batch_size = match cursor {
            Some(cursor) => cursor_batch_size(cursor)?,
            None if explain => None,
            None => return Err(Error::failed_to_parse(
                "The 'cursor' option is required, except for aggregate with the explain argument",
            )),
        };
        Ok(AggregateSpec {
            batch_size,
            ..aggregate
        })
    }

    /// The stages by name, and the collections they read and write.
    pub fn stages(&self) -> LitePipeline<'_> {
        LitePipeline::of_stages(&self.pipeline)
    }
}

/// `cursor: {batchSize}`: its only field, a count that is not negative.
fn cursor_batch_size(cursor: &Document) -> Result<Option<u64>> {
    let mut named = doc! {"cursor": 1};
    named.extend(cursor.clone());
    let mut spec = Spec::new("aggregate.cursor", &named);
    let batch_size = spec.non_negative("batchSize", "BatchSize");
    spec.finish()?;
    Ok(batch_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_of_aggregate_idl_are_read_and_judged_in_mongods_order() {
        let body = doc! {"aggregate": "c", "pipeline": [{"$match": {"a": 1}}, {"$out": "o"}],
        "cursor": {"batchSize": 2}, "allowDiskUse": true, "bypassDocumentValidation": false,
        "hint": {"a": 1}, "collation": {"locale": "fr"}, "let": {"x": 1},
        "maxTimeMS": 5, "comment": "c", "readConcern": {}, "writeConcern": {"w": 1},
        "fromMongos": false, "$db": "d"};
        let spec = AggregateSpec::read(&body).unwrap();
        assert_eq!(spec.collection.as_deref(), Some("c"));
        assert_eq!(spec.pipeline.len(), 2);
        assert_eq!(spec.batch_size, Some(2));
        assert!(spec.allow_disk_use && !spec.explain);
        assert_eq!(spec.bypass_document_validation, Some(false));
        assert_eq!(spec.hint, Some(Bson::Document(doc! {"a": 1})));
        assert_eq!(spec.collation, Some(doc! {"locale": "fr"}));
        assert_eq!(spec.let_vars, Some(doc! {"x": 1}));
        assert_eq!(spec.stages().last(), Some("$out"));
        let database =
            AggregateSpec::read(&doc! {"aggregate": 1, "pipeline": [], "explain": true}).unwrap();
        assert_eq!((database.collection, database.batch_size), (None, None));

        let cases = [
            (
                doc! {"aggregate": true, "bogus": 1},
                ErrorCode::InvalidNamespace,
                "Invalid command format: the 'aggregate' field must specify a collection name or 1",
            ),
            (
                doc! {"aggregate": "c", "bogus": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'aggregate.bogus' is an unknown field.",
            ),
            (
                doc! {"aggregate": "c", "cursor": {}},
                ErrorCode::Location40414,
                "BSON field 'aggregate.pipeline' is missing but a required field",
            ),
            (
                doc! {"aggregate": "c", "pipeline": []},
                ErrorCode::FailedToParse,
                "The 'cursor' option is required, except for aggregate with the explain argument",
            ),
            (
                doc! {"aggregate": "c", "pipeline": [1], "bogus": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'aggregate.pipeline.0' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"aggregate": "c", "pipeline": [], "cursor": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'aggregate.cursor' is the wrong type 'int', expected type 'object'",
            ),
            (
                doc! {"aggregate": "c", "pipeline": [], "cursor": {"batchSize": -1}},
                ErrorCode::BadValue,
                "BatchSize value must be non-negative, but received: -1",
            ),
            (
                doc! {"aggregate": "c", "pipeline": [], "cursor": {"x": 1}},
                ErrorCode::IDLUnknownField,
                "BSON field 'aggregate.cursor.x' is an unknown field.",
            ),
            (
                doc! {"aggregate": "c", "pipeline": [], "cursor": {}, "explain": "y"},
                ErrorCode::TypeMismatch,
                "BSON field 'aggregate.explain' is the wrong type 'string', expected type 'bool'",
            ),
            (
                doc! {"aggregate": "c", "pipeline": [], "cursor": {}, "let": 1},
                ErrorCode::TypeMismatch,
                "BSON field 'aggregate.let' is the wrong type 'int', expected type 'object'",
            ),
        ];
        for (body, code, message) in cases {
            let err = AggregateSpec::read(&body).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }
}
