//! `customAction` `CreateCollection`, `UpdateCollection` and `GetCollection`: a collection's
//! shard key, provisioned throughput and index list.
//!
//! From Microsoft's custom-commands page: a collection without `offerThroughput` gets 400 RU/s
//! (unless its database provisions throughput its collections share), over 10,000 RU/s needs a
//! `shardKey`, `indexes` must hold the `_id` index and in `UpdateCollection` replaces the whole
//! list, and `GetCollection` answers `{database, collection, shardKeyDefinition?,
//! provisionedThroughput?, autoScaleSettings?, ok}`. `shardKeyDefinition` is `{<path>:
//! "hashed"}` and the reply also holds `maxContentLength` (the largest document, 2,097,152
//! bytes), as replies captured from accounts show them. Where the page is silent mayfly
//! decides: creating a collection that exists fails with 48 NamespaceExists (as `create`),
//! reading or updating one that does not with 26 NamespaceNotFound, changing a shard key or a
//! collection's share of its database's throughput with 2 BadValue. `showIndexes: true` adds
//! `indexes`, the collection's index list as `listIndexes` shows it (`_id` first, a TTL index
//! with `expireAfterSeconds`, a custom TTL path included, TTL-30), each with
//! `requiresReIndex: false`: the page names that flag, and a mayfly index is complete once
//! listed.

use super::{as_command, indexes, throughput};
use crate::command::args::{check_fields, durable, optional_array, optional_bool, wrong_type};
use crate::command::catalog::index;
use crate::command::{CommandName, Request, Shared};
use crate::engine::catalog::validate_collection_name;
use crate::engine::{ddl, Txn};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::account::{CollectionSettings, Throughput};
use crate::profile::shard_keys::ShardKeys;
use crate::profile::{Rule, COSMOS_MAX_DOCUMENT_BYTES};
use bson::{doc, Bson, Document};
use std::sync::Arc;

const CREATE_FIELDS: &[&str] = &[
    "collection",
    "shardKey",
    "offerThroughput",
    "autoScaleSettings",
    "indexes",
];
/// `shardKey` is known only to be refused: a shard key cannot change.
const UPDATE_FIELDS: &[&str] = &[
    "collection",
    "offerThroughput",
    "autoScaleSettings",
    "indexes",
    "shardKey",
];
const GET_FIELDS: &[&str] = &["collection", "showIndexes"];

/// MongoDB's largest document, `maxContentLength` when `--cosmos-16mb` lifts Cosmos's 2 MB.
const MONGODB_MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// `{customAction: "CreateCollection", collection, shardKey?, offerThroughput? |
/// autoScaleSettings?, indexes?}` → `{ok: 1}`. The collection, its settings and its indexes
/// are written in one job: all or nothing.
pub async fn create(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    check_fields(req.body, "customAction", CREATE_FIELDS)?;
    let coll = collection_arg(req)?;
    let shard_key = shard_key_arg(req.body)?;
    let asked = throughput::parse(req.body)?;
    if let Some(t) = asked {
        throughput::check_for_collection(t, shard_key.is_some())?;
    }
    let profile = &shared.config.profile;
    let shard_keys = ShardKeys::of(profile);
    let wanted = match optional_array(req.body, "customAction", "indexes")? {
        Some(items) => {
            let key = shard_keys.key(shard_key.as_deref());
            indexes::parse(profile, items, key.as_ref())?.specs
        }
        None => Vec::new(),
    };
    let db = req.db.to_owned();
    shared
        .engine
        .write(durable(req.body), move |txn, _now| {
            // "If this parameter isn't provided, it defaults to the minimum, 400 RU/s", unless
            // the collection shares its database's.
            let throughput = asked
                .or((!shares_database(txn, &db))
                    .then_some(Throughput::Manual(throughput::DEFAULT_RU)));
            ddl::create_collection(txn, &db, &coll, Document::new())?;
            let settings = CollectionSettings {
                shard_key,
                throughput,
            };
            ddl::set_cosmos_settings(txn, &db, &coll, settings)?;
            if wanted.is_empty() {
                return Ok(());
            }
            if let Err(e) = index::add_to_new_collection(txn, &db, &coll, wanted, shard_keys) {
                ddl::drop_collection(txn, &db, &coll)?;
                return Err(e);
            }
            Ok(())
        })
        .await??;
    Ok(doc! {"ok": 1.0})
}

/// `{customAction: "UpdateCollection", collection, offerThroughput? | autoScaleSettings?,
/// indexes?}` → `{ok: 1}`. The throughput keeps its kind; `indexes` replaces the index list,
/// dropping what it does not name (through `dropIndexes` and `createIndexes`, whose rules
/// apply: a new unique index on a populated collection is refused in the Cosmos profile).
pub async fn update(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    check_fields(req.body, "customAction", UPDATE_FIELDS)?;
    let coll = collection_arg(req)?;
    if req.body.contains_key("shardKey") {
        return Err(Error::bad_value(
            "the shard key of a collection is set when it is created and cannot be changed",
        ));
    }
    let new = throughput::parse(req.body)?;
    let items = optional_array(req.body, "customAction", "indexes")?;
    if new.is_none() && items.is_none() {
        return Err(Error::bad_value(
            "UpdateCollection needs offerThroughput, autoScaleSettings or indexes",
        ));
    }
    let Some(meta) = shared.engine.catalog()?.get(req.db, &coll).cloned() else {
        return Err(not_found(req.db, &coll));
    };
    let profile = &shared.config.profile;
    let shard_key = ShardKeys::of(profile).key(meta.shard_key());
    let wanted = items
        .map(|items| indexes::parse(profile, items, shard_key.as_ref()))
        .transpose()?;
    if let Some(new) = new {
        set_throughput(shared, req, &coll, new).await?;
    }
    if let Some(wanted) = wanted {
        replace_indexes(shared, req, &coll, &wanted).await?;
    }
    Ok(doc! {"ok": 1.0})
}

/// Gives `coll` a new throughput of the kind it has (a collection created without one has 400
/// RU/s, manual).
async fn set_throughput(
    shared: &Shared,
    req: &Request<'_>,
    coll: &str,
    new: Throughput,
) -> Result<()> {
    let (db, coll) = (req.db.to_owned(), coll.to_owned());
    shared
        .engine
        .write(durable(req.body), move |txn, _now| {
            let Some(meta) = ddl::collection(txn, &db, &coll) else {
                return Err(not_found(&db, &coll));
            };
            let mut settings = meta.cosmos.clone().unwrap_or_default();
            let current = match settings.throughput {
                Some(current) => current,
                None if shares_database(txn, &db) => {
                    return Err(Error::bad_value(format!(
                        "collection {db}.{coll} shares its database's throughput and has none of its own to update"
                    )))
                }
                None => Throughput::Manual(throughput::DEFAULT_RU),
            };
            throughput::check_same_kind(current, new)?;
            throughput::check_for_collection(new, settings.shard_key.is_some())?;
            settings.throughput = Some(new);
            ddl::set_cosmos_settings(txn, &db, &coll, settings).map(|_| ())
        })
        .await?
}

/// Makes `coll`'s indexes `wanted`: drops the others, then creates the missing ones.
async fn replace_indexes(
    shared: &Shared,
    req: &Request<'_>,
    coll: &str,
    wanted: &indexes::RequestedIndexes,
) -> Result<()> {
    let Some(meta) = shared.engine.catalog()?.get(req.db, coll).cloned() else {
        return Err(not_found(req.db, coll));
    };
    let (drop, create) = indexes::replacement(&meta, wanted);
    if !drop.is_empty() {
        let body = Arc::new(indexes::drop_command(coll, drop));
        let drop_req = as_command(req, CommandName::DropIndexes, &body);
        index::drop_indexes(shared, &drop_req).await?;
    }
    if !create.is_empty() {
        let body = Arc::new(indexes::create_command(coll, create));
        let create_req = as_command(req, CommandName::CreateIndexes, &body);
        index::create_indexes(shared, &create_req).await?;
    }
    Ok(())
}

/// `{customAction: "GetCollection", collection, showIndexes?}` → `{database, collection,
/// shardKeyDefinition?, provisionedThroughput?, autoScaleSettings?, maxContentLength, indexes?,
/// ok}`.
pub fn get(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    check_fields(req.body, "customAction", GET_FIELDS)?;
    let coll = collection_arg(req)?;
    let show_indexes = optional_bool(req.body, "customAction", "showIndexes")? == Some(true);
    let catalog = shared.engine.catalog()?;
    let Some(meta) = catalog.get(req.db, &coll) else {
        return Err(not_found(req.db, &coll));
    };
    let mut reply = doc! {"database": req.db, "collection": coll.as_str()};
    if let Some(path) = meta.shard_key() {
        reply.insert("shardKeyDefinition", doc! {path: "hashed"});
    }
    let shares = catalog
        .database_settings(req.db)
        .is_some_and(|s| s.throughput.is_some());
    match meta.cosmos.as_ref().and_then(|s| s.throughput) {
        Some(own) => throughput::report(&mut reply, own),
        // The budget it is throttled to: `--cosmos-throughput`, or Cosmos's default.
        None if !shares => {
            let default = shared
                .config
                .profile
                .throughput
                .unwrap_or(throughput::DEFAULT_RU);
            throughput::report(&mut reply, Throughput::Manual(default))
        }
        None => {}
    }
    let largest = if shared.config.profile.enforces(Rule::DocumentSize) {
        COSMOS_MAX_DOCUMENT_BYTES
    } else {
        MONGODB_MAX_DOCUMENT_BYTES
    };
    reply.insert(
        "maxContentLength",
        i32::try_from(largest).unwrap_or(i32::MAX),
    );
    if show_indexes {
        reply.insert("indexes", shown_indexes(meta));
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

/// `GetCollection`'s `indexes`: the finished indexes as `listIndexes` shows them, `_id` first.
fn shown_indexes(meta: &crate::engine::catalog::CollectionMeta) -> Vec<Bson> {
    std::iter::once(index::id_index_entry())
        .chain(
            meta.indexes
                .iter()
                .filter(|i| !i.building)
                .map(crate::engine::catalog::IndexMeta::to_list_entry),
        )
        .map(|mut entry| {
            entry.insert("requiresReIndex", false);
            Bson::Document(entry)
        })
        .collect()
}

/// Whether `db` provisions throughput its collections share.
fn shares_database(txn: &Txn<'_>, db: &str) -> bool {
    ddl::database_settings(txn, db).is_some_and(|s| s.throughput.is_some())
}

/// `collection`: required, a name a client may write to.
fn collection_arg(req: &Request<'_>) -> Result<String> {
    match req.body.get("collection") {
        Some(Bson::String(coll)) => {
            validate_collection_name(req.db, coll)?;
            Ok(coll.clone())
        }
        Some(other) => Err(wrong_type("customAction", "collection", other, "string")),
        None => Err(Error::new(
            ErrorCode::Location40414,
            "BSON field 'customAction.collection' is missing but a required field",
        )),
    }
}

/// `shardKey`: a field path (`"a.b"`).
fn shard_key_arg(cmd: &Document) -> Result<Option<String>> {
    match cmd.get("shardKey") {
        None => Ok(None),
        Some(Bson::String(path)) => {
            super::check_shard_key_path(path)?;
            Ok(Some(path.clone()))
        }
        Some(other) => Err(wrong_type("customAction", "shardKey", other, "string")),
    }
}

fn not_found(db: &str, coll: &str) -> Error {
    Error::new(
        ErrorCode::NamespaceNotFound,
        format!("Collection {db}.{coll} does not exist."),
    )
}
