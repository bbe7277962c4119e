//! Query operators Cosmos DB for MongoDB (RU) lacks at every server version
//! ([`Rule::UnsupportedOperators`]): the bitwise ones (`$bitsAllSet`, `$bitsAllClear`,
//! `$bitsAnySet`, `$bitsAnyClear`) and the legacy geometry shapes (`$center`, `$centerSphere`,
//! `$box`, `$polygon`), by the feature-support tables for 3.6 to 7.0. No source shows the
//! answer an account gives, so mayfly answers as the account answers a command it lacks: 115
//! `Operator <name> not supported.`. (`$where`, `$text` and `$jsonSchema`, which Cosmos lacks
//! too, mayfly has in no profile: they answer 238 everywhere.)
//!
//! Pure: a walk over the command's body, which holds every filter a command takes (`filter`,
//! `q`, `query`, pipelines, `$lookup` and `$facet` pipelines within them) — but not the
//! documents a write stores (`documents`, an update's `u`, `findAndModify`'s `update`), where
//! such a name would be a field.

use super::refusal::refuse;
use super::Rule;
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

/// Deeper than any BSON document a client can send (mongod's limit is 100 levels with the
/// command's own): past it the walk stops looking.
const MAX_DEPTH: usize = 200;

/// Refuses a command whose filters use an operator the account lacks.
pub fn check(body: &Document) -> Result<()> {
    let found = body
        .iter()
        .filter(|(name, _)| !is_stored(name.as_str()))
        .find_map(|(name, value)| match name.as_str() {
            "updates" => updates(value),
            _ => in_value(value, 0),
        });
    match found {
        Some(operator) => Err(refuse(
            Rule::UnsupportedOperators,
            ErrorCode::CommandNotSupported,
            &format!("Operator {operator} not supported."),
        )),
        None => Ok(()),
    }
}

/// Top-level fields that hold documents to store, not filters.
fn is_stored(name: &str) -> bool {
    matches!(name, "documents" | "update")
}

/// An `update` command's statements: their filters (`q`), not their updates (`u`).
fn updates(value: &Bson) -> Option<&'static str> {
    let Bson::Array(statements) = value else {
        return None;
    };
    statements.iter().find_map(|statement| match statement {
        Bson::Document(statement) => statement
            .iter()
            .filter(|(name, _)| name.as_str() != "u")
            .find_map(|(_, value)| in_value(value, 1)),
        _ => None,
    })
}

fn in_value(value: &Bson, depth: usize) -> Option<&'static str> {
    if depth > MAX_DEPTH {
        return None;
    }
    match value {
        Bson::Document(doc) => doc.iter().find_map(|(name, value)| {
            UNSUPPORTED
                .iter()
                .find(|operator| **operator == name.as_str())
                .copied()
                .or_else(|| in_value(value, depth + 1))
        }),
        Bson::Array(items) => items.iter().find_map(|item| in_value(item, depth + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn refused(body: Document) -> Option<String> {
        check(&body).err().map(|e| {
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
}
