//! Cosmos DB sorts only through an index ([`Rule::SortWithoutIndex`]).
//!
//! Cosmos indexes `_id` and the shard key by default (3.6 and later) and any field an index
//! names. A sort on one field is served by `_id`, by an index whose first field it is (either
//! direction), or by a wildcard index (`$**`, `path.$**`) that covers it. A sort on several
//! fields needs a compound index on exactly those fields in the same order, with every
//! direction the same or every one reversed. Anything else fails as Cosmos fails it, with
//! code 2 and the service's message. A `findAndModify` sorts on one field only.

use super::refusal::{refuse_from_service, ServiceFailure};
use super::Rule;
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// Cosmos's text for a single-field sort no index serves.
pub const EXCLUDED: &str =
    "The index path corresponding to the specified order-by item is excluded.";
/// Cosmos's text for a multi-field sort no compound index serves.
pub const NO_COMPOSITE: &str =
    "The order by query does not have a corresponding composite index that it can be served from.";

/// Whether indexes with these key patterns serve a sort by `pattern`; the refusal if not.
/// `$natural` and an empty pattern need no index.
pub fn check<'a>(
    pattern: &Document,
    indexes: impl Iterator<Item = &'a Document> + Clone,
) -> Result<()> {
    let fields: Vec<(&str, i8)> = pattern
        .iter()
        .filter(|(field, _)| field.as_str() != "$natural")
        .map(|(field, direction)| (field.as_str(), direction_of(direction)))
        .collect();
    match fields.as_slice() {
        [] => Ok(()),
        [(field, _)] => {
            if *field == "_id" || indexes.clone().any(|key| serves_one(key, field)) {
                Ok(())
            } else {
                Err(refusal(EXCLUDED))
            }
        }
        several => {
            if indexes.clone().any(|key| serves_several(key, several)) {
                Ok(())
            } else {
                Err(refusal(NO_COMPOSITE))
            }
        }
    }
}

/// mayfly's words for a `findAndModify` sort on several fields: Cosmos's feature tables allow
/// `findOneAndUpdate` one sort field, and the service's text for the refusal is not published.
pub const FIND_AND_MODIFY_ONE_FIELD: &str =
    "findAndModify (findOneAndUpdate, findOneAndReplace, findOneAndDelete) sorts on one field only.";

/// A `findAndModify` sorts on at most one field (`$natural` aside); the refusal if not. Its
/// one field still needs an index ([`check`], when the plan is chosen).
pub fn check_find_and_modify(pattern: &Document) -> Result<()> {
    let fields = pattern.keys().filter(|f| f.as_str() != "$natural").count();
    if fields > 1 {
        return Err(refusal(FIND_AND_MODIFY_ONE_FIELD));
    }
    Ok(())
}

fn refusal(text: &str) -> Error {
    refuse_from_service(
        Rule::SortWithoutIndex,
        ErrorCode::BadValue,
        ServiceFailure::bad_request(text),
    )
}

/// `1` ascending, `-1` descending, `0` for a value that is neither (`$meta`): it matches no
/// index direction.
fn direction_of(value: &Bson) -> i8 {
    match value {
        Bson::Int32(n) if *n > 0 => 1,
        Bson::Int32(n) if *n < 0 => -1,
        Bson::Int64(n) if *n > 0 => 1,
        Bson::Int64(n) if *n < 0 => -1,
        Bson::Double(n) if *n > 0.0 => 1,
        Bson::Double(n) if *n < 0.0 => -1,
        _ => 0,
    }
}

fn serves_one(key: &Document, field: &str) -> bool {
    let Some((first, _)) = key.iter().next() else {
        return false;
    };
    first == field || is_wildcard_over(first, field)
}

/// `$**` covers every field; `a.$**` covers `a` and the paths below it.
fn is_wildcard_over(key_field: &str, field: &str) -> bool {
    if key_field == "$**" {
        return true;
    }
    key_field.strip_suffix(".$**").is_some_and(|prefix| {
        field == prefix
            || field
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

fn serves_several(key: &Document, fields: &[(&str, i8)]) -> bool {
    if key.len() != fields.len() {
        return false;
    }
    let pairs = key
        .iter()
        .zip(fields)
        .map(|((name, direction), (field, wanted))| {
            (name == field, direction_of(direction), *wanted)
        });
    let mut same = true;
    let mut reversed = true;
    for (named, direction, wanted) in pairs {
        if !named || wanted == 0 || direction == 0 {
            return false;
        }
        same &= direction == wanted;
        reversed &= direction == -wanted;
    }
    same || reversed
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn served(pattern: Document, indexes: &[Document]) -> bool {
        check(&pattern, indexes.iter()).is_ok()
    }

    #[test]
    fn find_and_modify_sorts_on_one_field() {
        for (pattern, allowed) in [
            (doc! {}, true),
            (doc! {"a": 1}, true),
            (doc! {"$natural": -1}, true),
            (doc! {"a": 1, "b": -1}, false),
            (doc! {"a": 1, "b": 1, "c": 1}, false),
        ] {
            assert_eq!(
                check_find_and_modify(&pattern).is_ok(),
                allowed,
                "{pattern}"
            );
        }
    }

    #[test]
    fn single_field_sorts() {
        let id = doc! {"_id": 1};
        let a = doc! {"a": 1};
        let ab = doc! {"a": 1, "b": -1};
        let cases: Vec<(Document, Vec<Document>, bool)> = vec![
            (doc! {}, vec![], true),
            (doc! {"$natural": 1}, vec![], true),
            (doc! {"_id": -1}, vec![], true),
            (doc! {"a": 1}, vec![id.clone()], false),
            (doc! {"a": 1}, vec![id.clone(), a.clone()], true),
            (doc! {"a": -1}, vec![a.clone()], true),
            (doc! {"a": 1}, vec![ab.clone()], true),
            (doc! {"b": 1}, vec![ab.clone()], false),
            (doc! {"a.b": 1}, vec![a.clone()], false),
            (doc! {"a": 1}, vec![doc! {"$**": 1}], true),
            (doc! {"a.b": 1}, vec![doc! {"a.$**": 1}], true),
            (doc! {"a": 1}, vec![doc! {"a.$**": 1}], true),
            (doc! {"ab": 1}, vec![doc! {"a.$**": 1}], false),
            (doc! {"score": {"$meta": "textScore"}}, vec![], false),
        ];
        for (pattern, indexes, want) in cases {
            assert_eq!(
                served(pattern.clone(), &indexes),
                want,
                "{pattern} {indexes:?}"
            );
        }
    }

    #[test]
    fn multi_field_sorts_need_the_same_compound_index() {
        let ab = doc! {"a": 1, "b": -1};
        let cases = [
            (doc! {"a": 1, "b": -1}, true),
            (doc! {"a": -1, "b": 1}, true),
            (doc! {"a": 1, "b": 1}, false),
            (doc! {"b": -1, "a": 1}, false),
            (doc! {"a": 1}, true),
            (doc! {"a": 1, "b": -1, "c": 1}, false),
            (doc! {"_id": 1, "a": 1}, false),
        ];
        for (pattern, want) in cases {
            assert_eq!(
                served(pattern.clone(), &[doc! {"_id": 1}, ab.clone()]),
                want,
                "{pattern}"
            );
        }
        assert!(!served(doc! {"a": 1, "b": 1}, &[doc! {"$**": 1}]));
    }

    #[test]
    fn refusals_carry_cosmos_text() {
        let single = check(&doc! {"a": 1}, [].iter()).unwrap_err();
        assert_eq!(single.code, ErrorCode::BadValue);
        assert!(single.message.contains(EXCLUDED));
        let several = check(&doc! {"a": 1, "b": 1}, [].iter()).unwrap_err();
        assert!(several.message.contains(NO_COMPOSITE));
    }
}
