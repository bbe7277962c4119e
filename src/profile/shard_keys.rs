//! Cosmos DB's shard-key rules ([`Rule::ShardKeys`]) on a sharded collection, one created by
//! `customAction` `CreateCollection` with a `shardKey` or by `shardCollection`:
//!
//! - every document has the shard key: an insert or an upsert's new document without it fails
//!   with 61 ShardKeyNotFound `document does not contain shard key` (Microsoft's error-codes
//!   page; errors reported from accounts, 2018–2020);
//! - a write meant for one document (`update` with `multi: false`, `delete` with `limit: 1`,
//!   `findAndModify`) or one that may upsert names the shard key by equality in its filter, else
//!   61 `query in command must target a single shard key` (errors reported from accounts for
//!   `deleteOne` and bulk `replaceOne` upserts);
//! - the shard key is immutable: an update that changes its value fails with 66 ImmutableField
//!   (error-codes page), worded as mongod words a change to an immutable path;
//! - a unique index has the shard key as its first field, else 67 CannotCreateIndex `cannot
//!   create unique index over {student_id : 1.0} with shard key pattern { university : 1.0 }`
//!   (Microsoft's indexing page).
//!
//! Pure: callers pass the collection's shard key path and the documents or filters. That `_id`
//! is unique per shard-key value is not a rule here but how a sharded collection stores its
//! documents (`engine::record_key`), whatever the profile.

use super::refusal::refuse;
use super::{Profile, Rule};
use crate::error::{ErrorCode, Result};
use crate::query::compare::values_equal;
use crate::query::filter::equality_fields;
use crate::query::path;
use bson::{Bson, Document};

/// Cosmos's text for a document without the shard key.
pub const NOT_FOUND: &str = "document does not contain shard key";
/// Cosmos's text for a single-document write whose filter does not name the shard key.
pub const NOT_TARGETED: &str = "query in command must target a single shard key";

/// Whether one command applies the rules: in the Cosmos profile unless `--cosmos-allow
/// shard-keys`. Carried into the writer's job, where each collection's shard key is known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardKeys {
    enforced: bool,
    /// With the account capability `EnableMongoRetryableWrites`, every update and delete on a
    /// sharded collection names the shard key, those of many documents too (the feature
    /// pages: "updates/deletes on sharded collections must include the shard key").
    every_write_targets: bool,
}

impl ShardKeys {
    pub fn of(profile: &Profile) -> ShardKeys {
        let enforced = profile.enforces(Rule::ShardKeys);
        ShardKeys {
            enforced,
            every_write_targets: enforced
                && profile.is_cosmos()
                && profile.allowed.contains(&Rule::RetryableWrites),
        }
    }

    /// Whether an update or delete of many documents must name the shard key too.
    pub fn multi_writes_target(self) -> bool {
        self.every_write_targets
    }

    /// The rules for a collection whose shard key is `path` (`None`: unsharded); `None` when
    /// there is nothing to check.
    pub fn key(self, path: Option<&str>) -> Option<ShardKey> {
        path.filter(|_| self.enforced).map(ShardKey::new)
    }
}

/// A sharded collection's shard key, as the rules check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardKey {
    path: String,
    components: Vec<String>,
}

impl ShardKey {
    fn new(path: &str) -> ShardKey {
        ShardKey {
            path: path.to_owned(),
            components: path::split(path),
        }
    }

    /// The key's value in `doc` (an exact path: arrays on the way are not searched).
    fn value_in<'d>(&self, doc: &'d Document) -> Option<&'d Bson> {
        path::get(doc, &self.components)
    }

    /// A document to store must have the shard key (any value, `null` included).
    pub fn check_document(&self, doc: &Document) -> Result<()> {
        match self.value_in(doc) {
            Some(_) => Ok(()),
            None => Err(refuse(
                Rule::ShardKeys,
                ErrorCode::ShardKeyNotFound,
                NOT_FOUND,
            )),
        }
    }

    /// A single-document write's filter must name the shard key by equality (`{k: v}`,
    /// `{k: {$eq: v}}`, a one-value `$in`, or inside `$and`), so that it reaches one logical
    /// partition.
    pub fn check_target(&self, filter: &Document) -> Result<()> {
        let named = equality_fields(filter)
            .ok()
            .is_some_and(|equalities| self.value_in(&equalities).is_some());
        if named {
            Ok(())
        } else {
            Err(refuse(
                Rule::ShardKeys,
                ErrorCode::ShardKeyNotFound,
                NOT_TARGETED,
            ))
        }
    }

    /// An update leaves the shard key's value as it was (equal under the BSON order: `1` and
    /// `1.0` are one value); removing it is a change.
    pub fn check_unchanged(&self, old: &Document, new: &Document) -> Result<()> {
        let same = match (self.value_in(old), self.value_in(new)) {
            (Some(before), Some(after)) => values_equal(before, after),
            (None, None) => true,
            _ => false,
        };
        if same {
            return Ok(());
        }
        let p = &self.path;
        Err(refuse(
            Rule::ShardKeys,
            ErrorCode::ImmutableField,
            &format!(
                "Performing an update on the path '{p}' would modify the immutable field '{p}'"
            ),
        ))
    }

    /// The shard key's path (`a.b`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether an index with key pattern `key` has the shard key as its first field, as a
    /// unique index must.
    pub fn leads(&self, key: &Document) -> bool {
        key.keys().next() == Some(&self.path)
    }

    /// A unique index with key pattern `key` must have the shard key as its first field.
    pub fn check_unique_index(&self, key: &Document) -> Result<()> {
        if self.leads(key) {
            return Ok(());
        }
        Err(refuse(
            Rule::ShardKeys,
            ErrorCode::CannotCreateIndex,
            &format!(
                "cannot create unique index over {} with shard key pattern {{ {} : 1.0 }}",
                render_key(key),
                self.path
            ),
        ))
    }
}

/// A key pattern as Cosmos renders it in the unique-index refusal: `{student_id : 1.0}`,
/// numbers as doubles.
pub fn render_key(key: &Document) -> String {
    let fields: Vec<String> = key
        .iter()
        .map(|(field, value)| {
            let value = match value {
                Bson::Int32(n) => format!("{:?}", f64::from(*n)),
                Bson::Int64(n) => format!("{:?}", *n as f64),
                Bson::Double(d) => format!("{d:?}"),
                Bson::String(s) => format!("\"{s}\""),
                other => path::render(other),
            };
            format!("{field} : {value}")
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::refusal::rule_line;
    use crate::profile::CosmosVersion;
    use bson::doc;

    fn key(path: &str) -> ShardKey {
        ShardKeys::of(&Profile::cosmos(CosmosVersion::V7_0))
            .key(Some(path))
            .unwrap()
    }

    /// `(code, Cosmos's text)` of a refusal, after checking the rule line.
    fn refusal(result: Result<()>) -> Option<(i32, String)> {
        result.err().map(|e| {
            let (text, line) = e.message.rsplit_once('\n').unwrap();
            assert_eq!(line, rule_line(Rule::ShardKeys));
            (e.code.code(), text.to_owned())
        })
    }

    #[test]
    fn the_rules_apply_only_to_a_sharded_collection_in_the_cosmos_profile() {
        let cosmos = ShardKeys::of(&Profile::cosmos(CosmosVersion::V4_2));
        assert!(cosmos.key(Some("a")).is_some());
        assert!(cosmos.key(None).is_none());
        assert!(ShardKeys::of(&Profile::mongodb()).key(Some("a")).is_none());
        let relaxed = Profile::cosmos(CosmosVersion::V4_2).allowing(Rule::ShardKeys);
        assert!(ShardKeys::of(&relaxed).key(Some("a")).is_none());
    }

    #[test]
    fn a_document_needs_the_shard_key() {
        let missing = Some((61, NOT_FOUND.to_owned()));
        let cases = [
            ("tenant", doc! {"_id": 1, "tenant": "t1"}, None),
            ("tenant", doc! {"_id": 1, "tenant": null}, None),
            ("tenant", doc! {"_id": 1}, missing.clone()),
            ("a.b", doc! {"a": {"b": 1}}, None),
            ("a.b", doc! {"a": {"c": 1}}, missing.clone()),
            ("a.b", doc! {"a": 1}, missing.clone()),
            ("a.b", doc! {"a": [{"b": 1}]}, missing),
        ];
        for (path, document, want) in cases {
            let got = refusal(key(path).check_document(&document));
            assert_eq!(got, want, "{path} in {document}");
        }
    }

    #[test]
    fn a_single_document_write_names_the_shard_key_by_equality() {
        let untargeted = Some((61, NOT_TARGETED.to_owned()));
        let cases = [
            (doc! {"tenant": "t1", "_id": 1}, None),
            (doc! {"tenant": {"$eq": "t1"}}, None),
            (doc! {"tenant": {"$in": ["t1"]}}, None),
            (doc! {"$and": [{"tenant": "t1"}, {"x": 1}]}, None),
            (doc! {"_id": 1}, untargeted.clone()),
            (doc! {}, untargeted.clone()),
            (doc! {"tenant": {"$in": ["t1", "t2"]}}, untargeted.clone()),
            (doc! {"tenant": {"$gt": "t1"}}, untargeted.clone()),
            (doc! {"$or": [{"tenant": "t1"}]}, untargeted),
        ];
        for (filter, want) in cases {
            assert_eq!(
                refusal(key("tenant").check_target(&filter)),
                want,
                "{filter}"
            );
        }
        assert_eq!(refusal(key("a.b").check_target(&doc! {"a.b": 1})), None);
        assert_eq!(
            refusal(key("a.b").check_target(&doc! {"a": {"b": 1}})),
            None
        );
    }

    #[test]
    fn the_shard_key_is_immutable() {
        let changed = Some((
            66,
            "Performing an update on the path 'tenant' would modify the immutable field 'tenant'"
                .to_owned(),
        ));
        let cases = [
            (doc! {"tenant": 1, "x": 1}, doc! {"tenant": 1, "x": 2}, None),
            (doc! {"tenant": 1}, doc! {"tenant": 1.0}, None),
            (doc! {"x": 1}, doc! {"x": 2}, None),
            (doc! {"tenant": 1}, doc! {"tenant": 2}, changed.clone()),
            (doc! {"tenant": 1}, doc! {"x": 1}, changed.clone()),
            (doc! {"x": 1}, doc! {"tenant": 1}, changed),
        ];
        for (old, new, want) in cases {
            let got = refusal(key("tenant").check_unchanged(&old, &new));
            assert_eq!(got, want, "{old} -> {new}");
        }
    }

    #[test]
    fn a_unique_index_leads_with_the_shard_key() {
        let cases = [
            (doc! {"university": 1, "student_id": 1}, None),
            (doc! {"university": -1}, None),
            (
                doc! {"student_id": 1.0},
                Some("cannot create unique index over {student_id : 1.0} with shard key pattern { university : 1.0 }"),
            ),
            (
                doc! {"student_id": 1, "university": -1},
                Some("cannot create unique index over {student_id : 1.0, university : -1.0} with shard key pattern { university : 1.0 }"),
            ),
        ];
        for (index, want) in cases {
            let got = refusal(key("university").check_unique_index(&index));
            assert_eq!(got, want.map(|text| (67, text.to_owned())), "{index}");
        }
    }
}
