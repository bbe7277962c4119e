//! Which index specifications a Cosmos DB account refuses, and how.
//!
//! - [`Rule::IndexKinds`]: no text, 2d, hashed (outside a shard key), sparse, partial or collated
//!   (case-insensitive) indexes. (Cosmos has partial indexes only as unique ones behind the
//!   account capability `EnablePartialUniqueIndex`, which mayfly does not model yet, so every
//!   `partialFilterExpression` is refused here.) Cosmos answers a text index with 115 `'text' is not
//!   supported`; no source shows the text for the others, so they follow the same template
//!   (`'2d' is not supported`, …). (2dsphere indexes Cosmos has; mayfly refuses them in every
//!   profile, as it has no geospatial queries.)
//! - [`Rule::NestedIndexPaths`]: a unique or compound index on a dotted path: 115 `Unique and
//!   compound indexes do not support nested paths.` (the account capability
//!   `EnableUniqueCompoundNestedDocs` lifts it).
//! - [`Rule::UniqueIndexOnPopulated`]: a unique index only while the collection is empty: 67
//!   `Cannot create unique index when collection contains documents` ([`unique_on_populated`],
//!   checked where the collection's emptiness is known, in the write that adds the index).

use super::refusal::refuse;
use super::{Profile, Rule};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// Cosmos's text for [`Rule::UniqueIndexOnPopulated`].
pub const UNIQUE_ON_POPULATED: &str =
    "Cannot create unique index when collection contains documents";
/// Cosmos's text for [`Rule::NestedIndexPaths`].
pub const NESTED_PATHS: &str = "Unique and compound indexes do not support nested paths.";

/// Checks one `createIndexes` specification as it came, before mongod's own checks.
pub fn check_spec(profile: &Profile, spec: &Document) -> Result<()> {
    let Ok(key) = spec.get_document("key") else {
        return Ok(());
    };
    if profile.enforces(Rule::IndexKinds) {
        if let Some(kind) = refused_kind(spec, key) {
            return Err(refuse(
                Rule::IndexKinds,
                ErrorCode::CommandNotSupported,
                &format!("'{kind}' is not supported"),
            ));
        }
    }
    let unique = spec.get("unique").is_some_and(is_truthy);
    let nested = key
        .keys()
        .any(|field| field.contains('.') && !field.ends_with("$**"));
    if profile.enforces(Rule::NestedIndexPaths) && nested && (unique || key.len() > 1) {
        return Err(refuse(
            Rule::NestedIndexPaths,
            ErrorCode::CommandNotSupported,
            NESTED_PATHS,
        ));
    }
    Ok(())
}

/// The refusal of a unique index on a collection that holds documents.
pub fn unique_on_populated() -> Error {
    refuse(
        Rule::UniqueIndexOnPopulated,
        ErrorCode::CannotCreateIndex,
        UNIQUE_ON_POPULATED,
    )
}

/// The index kind Cosmos has not, as its refusal names it.
fn refused_kind(spec: &Document, key: &Document) -> Option<&'static str> {
    for value in key.values() {
        if let Bson::String(kind) = value {
            match kind.as_str() {
                "text" => return Some("text"),
                "2d" => return Some("2d"),
                "hashed" => return Some("hashed"),
                _ => {}
            }
        }
    }
    if spec.get("sparse").is_some_and(is_truthy) {
        return Some("sparse");
    }
    if spec.contains_key("partialFilterExpression") {
        return Some("partialFilterExpression");
    }
    if spec.contains_key("collation") {
        return Some("collation");
    }
    None
}

fn is_truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => *b,
        Bson::Int32(n) => *n != 0,
        Bson::Int64(n) => *n != 0,
        Bson::Double(n) => *n != 0.0,
        Bson::Null => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::CosmosVersion;
    use bson::doc;

    fn outcome(profile: &Profile, spec: Document) -> Option<(i32, String)> {
        check_spec(profile, &spec).err().map(|e| {
            let text = e.message.lines().next().unwrap_or_default().to_owned();
            (e.code.code(), text)
        })
    }

    #[test]
    fn cosmos_refuses_what_it_lacks() {
        let cosmos = Profile::cosmos(CosmosVersion::V7_0);
        let refused = |text: &str| Some((115, text.to_owned()));
        let cases = [
            (
                doc! {"key": {"a": "text"}, "name": "t"},
                refused("'text' is not supported"),
            ),
            (
                doc! {"key": {"loc": "2d"}, "name": "g"},
                refused("'2d' is not supported"),
            ),
            (
                doc! {"key": {"a": "hashed"}, "name": "h"},
                refused("'hashed' is not supported"),
            ),
            (
                doc! {"key": {"a": 1}, "name": "s", "sparse": true},
                refused("'sparse' is not supported"),
            ),
            (doc! {"key": {"a": 1}, "name": "s", "sparse": false}, None),
            (
                doc! {"key": {"a": 1}, "name": "p", "unique": true, "partialFilterExpression": {"a": 1}},
                refused("'partialFilterExpression' is not supported"),
            ),
            (
                doc! {"key": {"a": 1}, "name": "c", "collation": {"locale": "en", "strength": 2}},
                refused("'collation' is not supported"),
            ),
            (
                doc! {"key": {"a.b": 1}, "name": "n", "unique": true},
                refused(NESTED_PATHS),
            ),
            (
                doc! {"key": {"a.b": 1, "c": 1}, "name": "n"},
                refused(NESTED_PATHS),
            ),
            (doc! {"key": {"a.b": 1}, "name": "n"}, None),
            (doc! {"key": {"a.$**": 1}, "name": "w"}, None),
            (
                doc! {"key": {"a": 1, "b": -1}, "name": "ab", "unique": true},
                None,
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(outcome(&cosmos, spec.clone()), want, "{spec}");
            assert_eq!(outcome(&Profile::mongodb(), spec), None);
        }
    }

    #[test]
    fn each_rule_can_be_allowed_alone() {
        let profile = Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::IndexKinds);
        assert_eq!(
            outcome(&profile, doc! {"key": {"a": "text"}, "name": "t"}),
            None
        );
        assert!(outcome(&profile, doc! {"key": {"a.b": 1}, "unique": true}).is_some());
        let profile = Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::NestedIndexPaths);
        assert_eq!(
            outcome(&profile, doc! {"key": {"a.b": 1}, "unique": true}),
            None
        );
    }
}
