//! Operators Cosmos DB for MongoDB (RU) lacks ([`Rule::UnsupportedOperators`]), by the
//! feature-support tables for 3.6 to 7.0: at every server version the bitwise query operators
//! (`$bitsAllSet`, `$bitsAllClear`, `$bitsAnySet`, `$bitsAnyClear`) and the legacy geometry
//! shapes (`$center`, `$centerSphere`, `$box`, `$polygon`); before 4.2 the `$regexMatch`,
//! `$regexFind` and `$regexFindAll` expressions. No source shows the answer an account gives,
//! so mayfly answers as the account answers a command it lacks: 115
//! `Operator <name> not supported.`. (`$where`, `$text` and `$jsonSchema`, which Cosmos lacks
//! too, mayfly has in no profile: they answer 238 everywhere.)
//!
//! Pure: a walk over the documents that hold a command's filters and expressions, as its spec
//! names them (`filter`, `q`, `query`, pipelines, `$lookup` and `$facet` pipelines within
//! them, `let`, `arrayFilters`), or, for a command read by no spec, over its whole body — but
//! never the documents a write stores (`documents`, an update's `u`, `findAndModify`'s
//! `update`), where such a name would be a field.

use super::refusal::refuse;
use super::{CosmosVersion, Rule};
use crate::error::{ErrorCode, Result};
use bson::{Bson, Document};

/// The query operators no account version has.
pub const UNSUPPORTED: &[&str] = &[
    "$bitsAllSet",
    "$bitsAllClear",
    "$bitsAnySet",
    "$bitsAnyClear",
    "$center",
    "$centerSphere",
    "$box",
    "$polygon",
];

/// The expressions accounts before 4.2 lack.
pub const FROM_4_2: &[&str] = &["$regexMatch", "$regexFind", "$regexFindAll"];

/// Deeper than any BSON document a client can send (mongod's limit is 100 levels with the
/// command's own): past it the walk stops looking.
const MAX_DEPTH: usize = 200;

/// Refuses a command whose filters or expressions use an operator an account at `version`
/// lacks, its whole document walked (a command read by no spec).
pub fn check(version: CosmosVersion, body: &Document) -> Result<()> {
    let lacks = lacking(version);
    let found = body
        .iter()
        .filter(|(name, _)| !is_stored(name.as_str()))
        .find_map(|(name, value)| match name.as_str() {
            "updates" => updates(value, &lacks),
            _ => in_value(value, 0, &lacks),
        });
    refusal(found)
}

/// Refuses a command whose filters or expressions, `documents` (as its spec read them: no
/// document it stores among them), use an operator an account at `version` lacks.
pub fn check_documents<'a>(
    version: CosmosVersion,
    documents: impl IntoIterator<Item = &'a Document>,
) -> Result<()> {
    let lacks = lacking(version);
    let found = documents.into_iter().find_map(|document| {
        document
            .iter()
            .find_map(|(name, value)| lacks(name).or_else(|| in_value(value, 1, &lacks)))
    });
    refusal(found)
}

/// The operator of those `version` lacks that `name` is, if any.
fn lacking(version: CosmosVersion) -> impl Fn(&str) -> Option<&'static str> {
    move |name: &str| {
        UNSUPPORTED
            .iter()
            .chain(if has_regex_expressions(version) {
                [].iter()
            } else {
                FROM_4_2.iter()
            })
            .find(|operator| **operator == name)
            .copied()
    }
}

fn refusal(found: Option<&'static str>) -> Result<()> {
    match found {
        Some(operator) => Err(refuse(
            Rule::UnsupportedOperators,
            ErrorCode::CommandNotSupported,
            &format!("Operator {operator} not supported."),
        )),
        None => Ok(()),
    }
}

fn has_regex_expressions(version: CosmosVersion) -> bool {
    !matches!(version, CosmosVersion::V3_6 | CosmosVersion::V4_0)
}

/// Top-level fields that hold documents to store, not filters.
fn is_stored(name: &str) -> bool {
    matches!(name, "documents" | "update")
}

/// An `update` command's statements: their filters (`q`), not their updates (`u`).
fn updates(value: &Bson, lacks: &dyn Fn(&str) -> Option<&'static str>) -> Option<&'static str> {
    let Bson::Array(statements) = value else {
        return None;
    };
    statements.iter().find_map(|statement| match statement {
        Bson::Document(statement) => statement
            .iter()
            .filter(|(name, _)| name.as_str() != "u")
            .find_map(|(_, value)| in_value(value, 1, lacks)),
        _ => None,
    })
}

fn in_value(
    value: &Bson,
    depth: usize,
    lacks: &dyn Fn(&str) -> Option<&'static str>,
) -> Option<&'static str> {
    if depth > MAX_DEPTH {
        return None;
    }
    match value {
        Bson::Document(doc) => doc
            .iter()
            .find_map(|(name, value)| lacks(name).or_else(|| in_value(value, depth + 1, lacks))),
        Bson::Array(items) => items
            .iter()
            .find_map(|item| in_value(item, depth + 1, lacks)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn refused(body: Document) -> Option<String> {
        refused_at(CosmosVersion::V7_0, body)
    }

    fn refused_at(version: CosmosVersion, body: Document) -> Option<String> {
        check(version, &body).err().map(|e| {
            assert_eq!(e.code.code(), 115);
            e.message.lines().next().unwrap_or_default().to_owned()
        })
    }

    #[test]
    fn filters_anywhere_in_the_command_are_checked() {
        let bits = Some("Operator $bitsAllSet not supported.".to_owned());
        let filter = doc! {"flags": {"$bitsAllSet": [1, 5]}};
        assert_eq!(refused(doc! {"find": "c", "filter": filter.clone()}), bits);
        assert_eq!(refused(doc! {"count": "c", "query": filter.clone()}), bits);
        assert_eq!(
            refused(doc! {"delete": "c", "deletes": [{"q": filter.clone(), "limit": 0}]}),
            bits
        );
        assert_eq!(
            refused(
                doc! {"update": "c", "updates": [{"q": filter.clone(), "u": {"$set": {"a": 1}}}]}
            ),
            bits
        );
        let nested = doc! {"$facet": {"x": [{"$match": {"$or": [{"a": 1}, filter.clone()]}}]}};
        assert_eq!(
            refused(doc! {"aggregate": "c", "pipeline": [nested], "cursor": {}}),
            bits
        );
        assert_eq!(
            refused(
                doc! {"find": "c", "filter": {"loc": {"$geoWithin": {"$box": [[0, 0], [1, 1]]}}}}
            ),
            Some("Operator $box not supported.".to_owned())
        );
    }

    #[test]
    fn the_regex_expressions_came_with_4_2() {
        let pipeline = doc! {"aggregate": "c", "cursor": {}, "pipeline": [
            {"$project": {"m": {"$regexMatch": {"input": "$a", "regex": "^x"}}}}
        ]};
        let find =
            doc! {"find": "c", "filter": {"$expr": {"$regexFind": {"input": "$a", "regex": "b"}}}};
        for version in [CosmosVersion::V3_6, CosmosVersion::V4_0] {
            assert_eq!(
                refused_at(version, pipeline.clone()),
                Some("Operator $regexMatch not supported.".to_owned())
            );
            assert!(refused_at(version, find.clone()).is_some());
        }
        for version in [
            CosmosVersion::V4_2,
            CosmosVersion::V5_0,
            CosmosVersion::V7_0,
        ] {
            assert_eq!(refused_at(version, pipeline.clone()), None);
            assert_eq!(refused_at(version, find.clone()), None);
        }
    }

    #[test]
    fn stored_documents_and_other_operators_are_not_filters() {
        let named = doc! {"$bitsAllSet": 1};
        assert_eq!(
            refused(doc! {"insert": "c", "documents": [named.clone()]}),
            None
        );
        assert_eq!(
            refused(doc! {"update": "c", "updates": [{"q": {}, "u": named.clone()}]}),
            None
        );
        assert_eq!(
            refused(doc! {"findAndModify": "c", "query": {}, "update": named}),
            None
        );
        assert_eq!(
            refused(doc! {"find": "c", "filter": {"a": {"$gt": 1}, "$expr": {"$bitAnd": [1, 3]}}}),
            None
        );
    }

    #[test]
    fn a_specs_documents_are_walked_from_their_top() {
        let refused = |documents: &[Document]| {
            check_documents(CosmosVersion::V7_0, documents)
                .err()
                .map(|e| e.message.lines().next().unwrap_or_default().to_owned())
        };
        assert_eq!(
            refused(&[doc! {}, doc! {"$or": [{"a": {"$box": [[0, 0], [1, 1]]}}]}]),
            Some("Operator $box not supported.".to_owned())
        );
        assert_eq!(
            refused(&[doc! {"$match": {"f": {"$bitsAnySet": 3}}}]),
            Some("Operator $bitsAnySet not supported.".to_owned())
        );
        assert_eq!(
            refused(&[doc! {"a": 1}, doc! {"$expr": {"$gt": ["$a", 1]}}]),
            None
        );
        assert_eq!(refused(&[]), None);
    }
}
