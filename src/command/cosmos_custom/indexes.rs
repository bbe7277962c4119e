//! The `indexes` option of `customAction` `CreateCollection` and `UpdateCollection`: the
//! collection's whole index list, `_id` included (Microsoft's custom-commands page: "When
//! present, an index on _id is required"; for `UpdateCollection` "the set of indexes specified
//! (including dropping indexes) replaces the existing indexes of the collection").
//!
//! Owns: finding the `_id` entry (any name: the page writes `{key: {_id: 1}, name: "_id_1"}`),
//! and what replacing an index list drops and creates. Does not own: parsing a specification or
//! creating and dropping indexes (`command::catalog::index`, whose rules, the Cosmos ones included,
//! apply unchanged).

use crate::command::catalog::index::{as_on, parse_requested};
use crate::engine::catalog::{CollectionMeta, IndexMeta};
use crate::error::{Error, Result};
use crate::profile::shard_keys::ShardKey;
use crate::profile::Profile;
use crate::query::compare::{compare_documents, values_equal};
use bson::{Bson, Document};
use std::cmp::Ordering;

/// The requested indexes other than `_id`, parsed, each with the specification it came as.
#[derive(Debug, Clone)]
pub struct RequestedIndexes {
    /// As `createIndexes` parses them: the index, and whether it takes the collection's
    /// default collation.
    pub specs: Vec<(IndexMeta, bool)>,
    /// The specifications as sent, for `createIndexes`.
    pub documents: Vec<Bson>,
}

/// Parses `indexes`; refuses a list without the `_id` index, and (on a sharded collection in
/// the Cosmos profile) a unique index that does not lead with the shard key.
pub fn parse(
    profile: &Profile,
    items: &[Bson],
    shard_key: Option<&ShardKey>,
) -> Result<RequestedIndexes> {
    let (ids, documents): (Vec<Bson>, Vec<Bson>) = items.iter().cloned().partition(is_id_index);
    if ids.is_empty() {
        return Err(Error::bad_value(
            "indexes must include the _id index, {key: {_id: 1}, name: \"_id_1\"}",
        ));
    }
    let specs = parse_requested(profile, &documents, false)?;
    if let Some(key) = shard_key {
        for (index, _) in specs.iter().filter(|(index, _)| index.unique) {
            key.check_unique_index(&index.key)?;
        }
    }
    Ok(RequestedIndexes { specs, documents })
}

/// Whether an entry of `indexes` is the `_id` index: key `{_id: 1}`, whatever its name.
fn is_id_index(item: &Bson) -> bool {
    let Bson::Document(spec) = item else {
        return false;
    };
    let Ok(key) = spec.get_document("key") else {
        return false;
    };
    key.len() == 1
        && key
            .get("_id")
            .is_some_and(|v| values_equal(v, &Bson::Int32(1)))
}

/// What replacing `meta`'s indexes with `wanted` takes: the names of the indexes to drop, and
/// the specifications of those to create. An index that is already there exactly as asked
/// (name, key, options) stays.
pub fn replacement(meta: &CollectionMeta, wanted: &RequestedIndexes) -> (Vec<String>, Vec<Bson>) {
    let asked = as_on(meta, wanted.specs.clone());
    let drop = meta
        .indexes
        .iter()
        .filter(|have| !asked.iter().any(|want| same(have, want)))
        .map(|have| have.name.clone())
        .collect();
    let create = asked
        .iter()
        .zip(&wanted.documents)
        .filter(|(want, _)| !meta.indexes.iter().any(|have| same(have, want)))
        .map(|(_, document)| document.clone())
        .collect();
    (drop, create)
}

/// The same index: name, key pattern and every option that changes what it does.
fn same(a: &IndexMeta, b: &IndexMeta) -> bool {
    a.name == b.name
        && compare_documents(&a.key, &b.key) == Ordering::Equal
        && a.unique == b.unique
        && a.sparse == b.sparse
        && a.expire_after_seconds == b.expire_after_seconds
        && a.collation == b.collation
}

/// `{createIndexes: coll, indexes: [...]}` for the specifications to create.
pub fn create_command(coll: &str, documents: Vec<Bson>) -> Document {
    bson::doc! {"createIndexes": coll, "indexes": documents}
}

/// `{dropIndexes: coll, index: [names]}` for the indexes to drop.
pub fn drop_command(coll: &str, names: Vec<String>) -> Document {
    bson::doc! {"dropIndexes": coll, "index": names}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::shard_keys::ShardKeys;
    use crate::profile::CosmosVersion;
    use bson::doc;

    fn cosmos() -> Profile {
        Profile::cosmos(CosmosVersion::V7_0)
    }

    fn items(specs: Vec<Document>) -> Vec<Bson> {
        specs.into_iter().map(Bson::Document).collect()
    }

    #[test]
    fn the_list_needs_the_id_index_and_takes_the_rules() {
        let id = doc! {"key": {"_id": 1}, "name": "_id_1"};
        let a = doc! {"key": {"a": 1}, "name": "a_1"};
        let shard_key = ShardKeys::of(&cosmos()).key(Some("tenant"));
        let cases = [
            (vec![id.clone()], None, Ok(0)),
            (vec![id.clone(), a.clone()], None, Ok(1)),
            (vec![doc! {"key": {"_id": 1.0}}, a.clone()], None, Ok(1)),
            (vec![a.clone()], None, Err(2)),
            (vec![], None, Err(2)),
            (
                vec![id.clone(), doc! {"key": {"a": "text"}}],
                None,
                Err(115),
            ),
            (
                vec![
                    id.clone(),
                    doc! {"key": {"a": 1}, "name": "a", "unique": true},
                ],
                shard_key.clone(),
                Err(67),
            ),
            (
                vec![
                    id.clone(),
                    doc! {"key": {"tenant": 1, "a": 1}, "name": "t_a", "unique": true},
                ],
                shard_key,
                Ok(1),
            ),
        ];
        for (list, key, want) in cases {
            let got = parse(&cosmos(), &items(list.clone()), key.as_ref())
                .map(|r| r.specs.len())
                .map_err(|e| e.code.code());
            assert_eq!(got, want, "{list:?}");
        }
    }

    #[test]
    fn a_replacement_drops_what_is_not_asked_and_creates_what_is_missing() {
        let mut meta = crate::engine::Catalog::default().new_collection("d", "c", Document::new());
        meta.indexes = vec![
            IndexMeta::new("a_1", doc! {"a": 1}),
            IndexMeta::new("b_1", doc! {"b": 1}),
            IndexMeta {
                unique: true,
                ..IndexMeta::new("c_1", doc! {"c": 1})
            },
        ];
        let wanted = parse(
            &Profile::mongodb(),
            &items(vec![
                doc! {"key": {"_id": 1}, "name": "_id_1"},
                doc! {"key": {"a": 1}, "name": "a_1"},
                doc! {"key": {"c": 1}, "name": "c_1"},
                doc! {"key": {"d": 1}, "name": "d_1"},
            ]),
            None,
        )
        .unwrap();
        let (drop, create) = replacement(&meta, &wanted);
        assert_eq!(drop, vec!["b_1".to_owned(), "c_1".to_owned()]);
        assert_eq!(
            create,
            items(vec![
                doc! {"key": {"c": 1}, "name": "c_1"},
                doc! {"key": {"d": 1}, "name": "d_1"},
            ])
        );
    }
}
