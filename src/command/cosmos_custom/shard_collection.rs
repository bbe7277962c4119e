//! `shardCollection`: `{shardCollection: "db.coll", key: {field: "hashed"}}` gives a collection
//! its shard key and answers `{_t: "ShardCollectionResponse", ok: 1, collectionsharded:
//! "db.coll"}` (Microsoft's indexing page, which runs it against the collection's own
//! database, so any database is accepted). A shard key cannot change later.
//!
//! Where the sources are silent mayfly decides: a collection that does not exist is created
//! (unsharded collections are created the same way, by their first write); sharding again by
//! the same key succeeds, as on mongos, and by another key fails with 23 AlreadyInitialized; a
//! collection that already holds documents is refused (20 IllegalOperation: Cosmos fixes a
//! collection's partitioning when it creates the collection), and so is one with a unique index
//! that does not lead with the key (72 InvalidOptions in mongos's words, under the
//! `shard-keys` rule). The key has one field, `"hashed"` (Cosmos hashes every shard key) or
//! `1`.

use super::check_shard_key_path;
use crate::auth::roles::{Action, Resource};
use crate::command::args::{check_fields, durable, optional_bool, wrong_type};
use crate::command::{Request, Shared};
use crate::engine::catalog::validate_collection_name;
use crate::engine::{ddl, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::account::CollectionSettings;
use crate::profile::refusal::refuse;
use crate::profile::shard_keys::{render_key, ShardKeys};
use crate::profile::Rule;
use crate::query::compare::values_equal;
use bson::{doc, Bson, Document};

const COMMAND: &str = "shardCollection";

/// The privileges `shardCollection` needs: to create the collection and change it.
pub fn needs<'a>(db: &'a str, body: &'a Document) -> Vec<(Resource<'a>, &'static [Action])> {
    let target = match body.get_str(COMMAND).ok().and_then(|ns| ns.split_once('.')) {
        Some((db, collection)) => Resource::Collection { db, collection },
        None => Resource::Database(db),
    };
    vec![
        (target, &[Action::CreateCollection]),
        (target, &[Action::CollMod]),
    ]
}

pub async fn shard_collection(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    check_fields(req.body, COMMAND, &["key", "unique"])?;
    let (db, coll) = namespace(req.body)?;
    let path = key_path(req.body)?;
    if optional_bool(req.body, COMMAND, "unique")? == Some(true) {
        return Err(Error::bad_value(
            "hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.",
        ));
    }
    let shard_keys = ShardKeys::of(&shared.config.profile);
    let ns = format!("{db}.{coll}");
    shared
        .engine
        .write(durable(req.body), move |txn, _now| {
            shard(txn, (&db, &coll), &path, shard_keys)
        })
        .await??;
    Ok(doc! {"_t": "ShardCollectionResponse", "ok": 1.0, "collectionsharded": ns})
}

/// Inside the writer: sets the shard key of `db.coll`, creating the collection if need be.
fn shard(
    txn: &mut Txn<'_>,
    (db, coll): (&str, &str),
    path: &str,
    shard_keys: ShardKeys,
) -> Result<()> {
    let settings = |settings: Option<&CollectionSettings>| CollectionSettings {
        shard_key: Some(path.to_owned()),
        ..settings.cloned().unwrap_or_default()
    };
    let Some(meta) = ddl::collection(txn, db, coll) else {
        ddl::ensure_collection(txn, db, coll)?;
        ddl::set_cosmos_settings(txn, db, coll, settings(None))?;
        return Ok(());
    };
    match meta.shard_key() {
        Some(existing) if existing == path => return Ok(()),
        Some(existing) => {
            return Err(Error::new(
                ErrorCode::AlreadyInitialized,
                format!(
                    "collection {db}.{coll} is already sharded with shard key {{ {existing}: \"hashed\" }}; a shard key cannot be changed"
                ),
            ))
        }
        None => {}
    }
    if !crate::engine::documents::collection::is_empty(txn, &meta)? {
        return Err(Error::new(
            ErrorCode::IllegalOperation,
            format!(
                "cannot shard collection {db}.{coll}: it already holds documents, and Cosmos DB sets a collection's shard key when it creates the collection"
            ),
        ));
    }
    if let Some(key) = shard_keys.key(Some(path)) {
        if let Some(index) = meta.indexes.iter().find(|i| i.unique && !key.leads(&i.key)) {
            return Err(refuse(
                Rule::ShardKeys,
                ErrorCode::InvalidOptions,
                &format!(
                    "can't shard collection '{db}.{coll}' with unique index on {} and proposed shard key {{ {path}: \"hashed\" }}. Uniqueness can't be maintained unless shard key is a prefix",
                    render_key(&index.key)
                ),
            ));
        }
    }
    ddl::set_cosmos_settings(txn, db, coll, settings(meta.cosmos.as_ref()))?;
    Ok(())
}

/// `shardCollection: "db.coll"`.
fn namespace(cmd: &Document) -> Result<(String, String)> {
    let ns = match cmd.get(COMMAND) {
        Some(Bson::String(ns)) => ns,
        Some(other) => return Err(wrong_type(COMMAND, COMMAND, other, "string")),
        None => return Err(Error::failed_to_parse("shardCollection needs a namespace")),
    };
    let Some((db, coll)) = ns.split_once('.') else {
        return Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid namespace specified '{ns}'"),
        ));
    };
    validate_collection_name(db, coll)?;
    Ok((db.to_owned(), coll.to_owned()))
}

/// The path of `key: {path: "hashed" | 1}`.
fn key_path(cmd: &Document) -> Result<String> {
    let key = match cmd.get("key") {
        Some(Bson::Document(key)) => key,
        Some(other) => return Err(wrong_type(COMMAND, "key", other, "object")),
        None => {
            return Err(Error::new(
                ErrorCode::Location40414,
                "BSON field 'shardCollection.key' is missing but a required field",
            ))
        }
    };
    let mut fields = key.iter();
    let (Some((path, kind)), None) = (fields.next(), fields.next()) else {
        return Err(Error::bad_value(
            "a Cosmos DB shard key has exactly one field: {key: {<field>: \"hashed\"}}",
        ));
    };
    let hashed = matches!(kind, Bson::String(s) if s == "hashed");
    if !hashed && !values_equal(kind, &Bson::Int32(1)) {
        return Err(Error::bad_value(format!(
            "the shard key {{ {path}: {} }} must be {{ {path}: \"hashed\" }} (or 1): Cosmos DB hashes every shard key",
            crate::query::path::render(kind)
        )));
    }
    check_shard_key_path(path)?;
    Ok(path.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_and_key_are_read_as_cosmos_takes_them() {
        let cases = [
            (
                doc! {"shardCollection": "db.c", "key": {"tenant": "hashed"}},
                Ok(("db", "c", "tenant")),
            ),
            (
                doc! {"shardCollection": "db.c.d", "key": {"a.b": 1}},
                Ok(("db", "c.d", "a.b")),
            ),
            (doc! {"shardCollection": "db", "key": {"a": 1}}, Err(73)),
            (doc! {"shardCollection": 1, "key": {"a": 1}}, Err(14)),
            (doc! {"shardCollection": "db.c"}, Err(40414)),
            (doc! {"shardCollection": "db.c", "key": "a"}, Err(14)),
            (doc! {"shardCollection": "db.c", "key": {}}, Err(2)),
            (
                doc! {"shardCollection": "db.c", "key": {"a": 1, "b": 1}},
                Err(2),
            ),
            (doc! {"shardCollection": "db.c", "key": {"a": -1}}, Err(2)),
            (doc! {"shardCollection": "db.c", "key": {"a": "2d"}}, Err(2)),
            (doc! {"shardCollection": "db.c", "key": {"$a": 1}}, Err(2)),
        ];
        for (cmd, want) in cases {
            let got = namespace(&cmd)
                .and_then(|(db, coll)| Ok((db, coll, key_path(&cmd)?)))
                .map_err(|e| e.code.code());
            let want = want.map(|(d, c, k)| (d.to_owned(), c.to_owned(), k.to_owned()));
            assert_eq!(got, want, "{cmd}");
        }
    }
}
