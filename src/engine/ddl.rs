//! Catalog changes inside a [`Txn`]: implicit and explicit collection creation, drop, rename,
//! adding, changing and removing secondary indexes, and the Cosmos settings of collections and
//! databases. Every change starts from the catalog
//! entry as of this point in the group, never from a caller's copy. Building an index over
//! existing documents in the background is `index_build`.
//!
//! Each change is written to the operation log (when it is kept) as mongod logs it.
//!
//! Keys carry the collection id, not its name, so a rename (even across databases) changes only
//! the catalog.

use crate::engine::background::sweep;
use crate::engine::catalog::{validate_collection_name, CollectionMeta, IndexMeta};
use crate::engine::catalog_write::{mark_multikey, store};
use crate::engine::documents::collection;
use crate::engine::documents::record::StoredDoc;
use crate::engine::oplog::entries as oplog;
use crate::engine::writer::txn::Txn;
use crate::error::{Error, ErrorCode, Result};
use crate::profile::account::{CollectionSettings, DatabaseSettings};
use crate::storage::keys;
use crate::storage::Keyspace;
use bson::{doc, Bson, Document};
use std::sync::Arc;

/// The collection, created with default options if it does not exist (implicit creation by
/// the first write). Returns whether it was created.
pub fn ensure_collection(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
) -> Result<(Arc<CollectionMeta>, bool)> {
    if let Some(meta) = txn.catalog.get(db, name) {
        return Ok((Arc::clone(meta), false));
    }
    validate_collection_name(db, name)?;
    let meta = txn.catalog.new_collection(db, name, Document::new());
    let meta = store(txn, meta)?;
    log_create(txn, &meta)?;
    Ok((meta, true))
}

/// A collection the server itself writes under a `system.` name clients may not write to
/// (`system.profile`), created with default options if it does not exist.
pub fn ensure_system_collection(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
) -> Result<Arc<CollectionMeta>> {
    if let Some(meta) = txn.catalog.get(db, name) {
        return Ok(Arc::clone(meta));
    }
    crate::engine::catalog::validate_db_name(db)?;
    let meta = txn.catalog.new_collection(db, name, Document::new());
    let meta = store(txn, meta)?;
    log_create(txn, &meta)?;
    Ok(meta)
}

/// Logs a collection's creation as mongod does: `{create: name, ...options}`.
fn log_create(txn: &mut Txn<'_>, meta: &CollectionMeta) -> Result<()> {
    let mut o = doc! {"create": meta.name.as_str()};
    o.extend(meta.options.clone());
    oplog::command(txn, &meta.db, Some(meta), o)
}

/// The collection as of this point in the group, if it exists (never creates it).
pub fn collection(txn: &Txn<'_>, db: &str, name: &str) -> Option<Arc<CollectionMeta>> {
    txn.catalog.get(db, name).cloned()
}

/// Names of the collections of `db` as of this point in the group, in name order.
pub fn collection_names(txn: &Txn<'_>, db: &str) -> Vec<String> {
    txn.catalog
        .collections_in(db)
        .map(|m| m.name.clone())
        .collect()
}

/// `create`: 48 NamespaceExists if it exists.
pub fn create_collection(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
    options: Document,
) -> Result<Arc<CollectionMeta>> {
    validate_collection_name(db, name)?;
    if txn.catalog.get(db, name).is_some() {
        return Err(Error::new(
            ErrorCode::NamespaceExists,
            format!("Collection {db}.{name} already exists."),
        ));
    }
    let meta = txn.catalog.new_collection(db, name, options);
    let meta = store(txn, meta)?;
    log_create(txn, &meta)?;
    Ok(meta)
}

/// Turns on or off the logging of document images with `db.name`'s changes
/// (`collMod: name, changeStreamPreAndPostImages: {enabled}`); `None` when there is no such
/// collection.
pub fn set_images(txn: &mut Txn<'_>, db: &str, name: &str, enabled: bool) -> Result<Option<()>> {
    let Some(meta) = collection(txn, db, name) else {
        return Ok(None);
    };
    let mut meta = (*meta).clone();
    if enabled {
        meta.options
            .insert("changeStreamPreAndPostImages", doc! {"enabled": true});
    } else {
        meta.options.remove("changeStreamPreAndPostImages");
    }
    let meta = store(txn, meta)?;
    let o = doc! {"collMod": name, "changeStreamPreAndPostImages": {"enabled": enabled}};
    oplog::command(txn, db, Some(&meta), o)?;
    Ok(Some(()))
}

/// Sets the `expireAfterSeconds` of index `index_id` of `db.name` (`collMod`, TTL-28): the
/// catalog is all that changes, since expiry by a date TTL index is read from the documents'
/// dates and the index's current value. `None` when there is no such collection or index.
pub fn set_expire_after_seconds(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
    index_id: u64,
    seconds: i32,
) -> Result<Option<()>> {
    change_index_option(
        txn,
        (db, name),
        index_id,
        ("expireAfterSeconds", seconds),
        |i| i.expire_after_seconds = Some(seconds),
    )
}

/// Hides or unhides index `index_id` of `db.name` (`collMod`): only the catalog changes, since a
/// hidden index is maintained like any other and only the planner passes it over. `None` when
/// there is no such collection or index.
pub fn set_index_hidden(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
    index_id: u64,
    hidden: bool,
) -> Result<Option<()>> {
    change_index_option(txn, (db, name), index_id, ("hidden", hidden), |i| {
        i.hidden = hidden
    })
}

/// Applies `change` to index `index_id` of `db.name` in the catalog and logs the `collMod` that
/// replays it (`{collMod, index: {name, <option>: <value>}}`); `None` when there is no such
/// collection or index.
fn change_index_option(
    txn: &mut Txn<'_>,
    (db, name): (&str, &str),
    index_id: u64,
    (option, value): (&str, impl Into<Bson>),
    change: impl FnOnce(&mut IndexMeta),
) -> Result<Option<()>> {
    let Some(meta) = collection(txn, db, name) else {
        return Ok(None);
    };
    let mut meta = (*meta).clone();
    let Some(index) = meta.indexes.iter_mut().find(|i| i.id == index_id) else {
        return Ok(None);
    };
    change(index);
    let mut shown = doc! {"name": index.name.clone()};
    shown.insert(option, value.into());
    let meta = store(txn, meta)?;
    let o = doc! {"collMod": name, "index": shown};
    oplog::command(txn, db, Some(&meta), o)?;
    Ok(Some(()))
}

/// Sets `db.name`'s Cosmos settings (shard key, throughput); `None` when there is no such
/// collection. A shard key is given only to an empty collection, whose documents are then
/// keyed by it after their `_id` ([`CollectionMeta::partitioned`]), and is never changed.
/// Not written to the operation log: MongoDB has no such change to replay.
pub fn set_cosmos_settings(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
    settings: CollectionSettings,
) -> Result<Option<Arc<CollectionMeta>>> {
    let Some(meta) = collection(txn, db, name) else {
        return Ok(None);
    };
    let mut meta = (*meta).clone();
    match (meta.shard_key(), settings.shard_key.as_deref()) {
        (None, Some(_)) => {
            if !collection::is_empty(txn, &meta)? {
                return Err(Error::internal(
                    "a shard key is given only to an empty collection",
                ));
            }
            meta.partitioned = true;
        }
        (old, new) if old != new => {
            return Err(Error::internal("a collection's shard key never changes"));
        }
        _ => {}
    }
    meta.cosmos = Some(settings);
    store(txn, meta).map(Some)
}

/// Database `db`'s Cosmos settings as of this point in the group, if it has any.
pub fn database_settings(txn: &Txn<'_>, db: &str) -> Option<DatabaseSettings> {
    txn.catalog.database_settings(db).cloned()
}

/// Sets database `db`'s Cosmos settings, or removes them (`None`, as `dropDatabase` does).
/// Returns whether it had settings before.
pub fn set_database_settings(
    txn: &mut Txn<'_>,
    db: &str,
    settings: Option<DatabaseSettings>,
) -> Result<bool> {
    let had = txn.catalog.database_settings(db).is_some();
    match settings {
        Some(settings) => {
            let (key, value) = txn.catalog.put_database_settings(db, settings)?;
            txn.put(Keyspace::Catalog, key, value);
        }
        None => match txn.catalog.remove_database_settings(db) {
            Some(key) => txn.delete(Keyspace::Catalog, key),
            None => return Ok(false),
        },
    }
    txn.catalog_changed();
    Ok(had)
}

/// Logs a `collMod` that changes nothing (`{collMod: name}` alone), as mongod logs it; `None`
/// when there is no such collection.
pub fn log_coll_mod(txn: &mut Txn<'_>, db: &str, name: &str) -> Result<Option<()>> {
    let Some(meta) = collection(txn, db, name) else {
        return Ok(None);
    };
    oplog::command(txn, db, Some(&meta), doc! {"collMod": name})?;
    Ok(Some(()))
}

/// Drops a collection and every key it owns. Returns the collection it was, if it existed.
pub fn drop_collection(
    txn: &mut Txn<'_>,
    db: &str,
    name: &str,
) -> Result<Option<Arc<CollectionMeta>>> {
    let Some((meta, key)) = txn.catalog.remove(db, name) else {
        return Ok(None);
    };
    oplog::command(txn, db, Some(&meta), doc! {"drop": name})?;
    txn.delete(Keyspace::Catalog, key);
    txn.drop_counter(meta.id);
    txn.catalog_changed();
    // The entries are left to the sweeper: a drop costs the same whatever the collection holds.
    let prefix = keys::collection_prefix(meta.id);
    for keyspace in [Keyspace::Documents, Keyspace::Indexes, Keyspace::Expiry] {
        sweep::schedule(txn, keyspace, &prefix);
    }
    Ok(Some(meta))
}

/// Renames `from` to `to_db.to`; with `drop_target` an existing target is dropped first.
pub fn rename_collection(
    txn: &mut Txn<'_>,
    from: (&str, &str),
    to: (&str, &str),
    drop_target: bool,
) -> Result<()> {
    validate_collection_name(to.0, to.1)?;
    let Some(source) = txn.catalog.get(from.0, from.1).cloned() else {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            "source namespace does not exist",
        ));
    };
    if from == to {
        return Err(Error::new(
            ErrorCode::IllegalOperation,
            "Can't rename a collection to itself",
        ));
    }
    if txn.catalog.get(to.0, to.1).is_some() {
        if !drop_target {
            return Err(Error::new(
                ErrorCode::NamespaceExists,
                "target namespace exists",
            ));
        }
        drop_collection(txn, to.0, to.1)?;
    }
    if let Some((_, key)) = txn.catalog.remove(from.0, from.1) {
        txn.delete(Keyspace::Catalog, key);
    }
    let mut renamed = (*source).clone();
    renamed.db = to.0.to_owned();
    renamed.name = to.1.to_owned();
    store(txn, renamed)?;
    oplog::command(
        txn,
        from.0,
        Some(&source),
        doc! {
            "renameCollection": source.namespace(),
            "to": format!("{}.{}", to.0, to.1),
            "stayTemp": false,
            "dropTarget": drop_target,
        },
    )
}

/// Logs that the index `index_id` of `meta` is ready: `{createIndexes: coll, ...spec}`.
pub fn log_index_ready(txn: &mut Txn<'_>, meta: &CollectionMeta, index_id: u64) -> Result<()> {
    let Some(index) = meta.index_by_id(index_id) else {
        return Ok(());
    };
    let mut o = doc! {"createIndexes": meta.name.as_str()};
    o.extend(index.to_list_entry());
    oplog::command(txn, &meta.db, Some(meta), o)
}

/// Logs a database's drop, after its collections' (`dropDatabase`).
pub fn log_drop_database(txn: &mut Txn<'_>, db: &str) -> Result<()> {
    oplog::command(txn, db, None, doc! {"dropDatabase": 1})
}

/// The collection with id `id` as of this point in the group. Catalog changes start from it,
/// never from a caller's copy, which may predate writes earlier in the group (a multikey flag
/// set by them would be lost).
fn current(txn: &Txn<'_>, id: u64) -> Result<Arc<CollectionMeta>> {
    txn.catalog.by_id(id).cloned().ok_or_else(|| {
        Error::new(
            ErrorCode::NamespaceNotFound,
            "the collection was dropped concurrently",
        )
    })
}

/// Adds `index` (its id assigned here) to the current entry of collection `collection_id`.
/// Returns the updated collection and the new index's id. Ids are never reused: a failed or
/// dropped index leaves `next_index_id` advanced, so stray entries can never join a new index.
pub fn add_index(
    txn: &mut Txn<'_>,
    collection_id: u64,
    mut index: IndexMeta,
) -> Result<(Arc<CollectionMeta>, u64)> {
    let mut updated = (*current(txn, collection_id)?).clone();
    index.id = updated.next_index_id.max(1);
    updated.next_index_id = index.id + 1;
    let index_id = index.id;
    updated.indexes.push(index);
    Ok((store(txn, updated)?, index_id))
}

/// Adds `index` to the collection and builds its entries for the visible documents in this
/// same job; a unique violation among them fails the build (11000) and leaves no index. Meant
/// for empty or small collections (and tests): `createIndexes` on existing documents builds in
/// the background instead (`index_build`).
pub fn create_index(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    index: IndexMeta,
    now: i64,
) -> Result<Arc<CollectionMeta>> {
    let (updated, index_id) = add_index(txn, meta.id, index)?;
    let Some(index) = updated.index_by_id(index_id).filter(|i| i.is_stored()) else {
        return Ok(updated);
    };
    let index = index.clone();
    let prefix = keys::collection_prefix(meta.id);
    let docs: Vec<StoredDoc> =
        collection::scan(txn, &updated, &prefix, now).collect::<Result<_>>()?;
    let mut multikey = false;
    for doc in &docs {
        match collection::add_index_entries(txn, &updated, &index, &doc.key, &doc.doc, now) {
            Ok(m) => multikey |= m,
            Err(e) => {
                remove_index(txn, meta.id, index_id)?;
                forget_index_entries(txn, meta.id, index_id);
                return Err(e);
            }
        }
    }
    if multikey {
        mark_multikey(txn, meta.id, index_id)?;
    }
    let updated = current(txn, meta.id)?;
    log_index_ready(txn, &updated, index_id)?;
    Ok(updated)
}

/// Removes index `index_id` from the current catalog entry, leaving its entries (the caller
/// deletes them). Returns the index, if it was there.
pub fn remove_index(
    txn: &mut Txn<'_>,
    collection_id: u64,
    index_id: u64,
) -> Result<Option<IndexMeta>> {
    let Some(current) = txn.catalog.by_id(collection_id) else {
        return Ok(None);
    };
    let mut updated = (**current).clone();
    let Some(pos) = updated.indexes.iter().position(|i| i.id == index_id) else {
        return Ok(None);
    };
    let index = updated.indexes.remove(pos);
    store(txn, updated)?;
    Ok(Some(index))
}

/// Logs that `meta`'s index `name` is dropped: `{dropIndexes: coll, index: name}`.
pub fn log_index_dropped(txn: &mut Txn<'_>, meta: &CollectionMeta, name: &str) -> Result<()> {
    oplog::command(
        txn,
        &meta.db,
        Some(meta),
        doc! {"dropIndexes": meta.name.as_str(), "index": name},
    )
}

/// Removes the index named `name` and its entries.
pub fn drop_index(
    txn: &mut Txn<'_>,
    meta: &CollectionMeta,
    name: &str,
) -> Result<Arc<CollectionMeta>> {
    let current = current(txn, meta.id)?;
    let Some(index) = current.index(name) else {
        return Err(Error::new(
            ErrorCode::IndexNotFound,
            format!("index not found with name [{name}]"),
        ));
    };
    let (index_id, stored) = (index.id, index.is_stored());
    log_index_dropped(txn, &current, name)?;
    remove_index(txn, meta.id, index_id)?;
    if stored {
        forget_index_entries(txn, meta.id, index_id);
    }
    self::current(txn, meta.id)
}

/// Leaves the entries of an index no longer in the catalog to the sweeper (`sweep`), in this
/// job's commit: removing an index costs the same whatever it holds.
pub fn forget_index_entries(txn: &mut Txn<'_>, collection_id: u64, index_id: u64) {
    sweep::schedule(
        txn,
        Keyspace::Indexes,
        &keys::index_prefix(collection_id, index_id),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::engine::Engine;
    use bson::{doc, Document};

    fn open(dir: &std::path::Path) -> Engine {
        Engine::open(dir, Arc::new(ManualClock::starting_at_secs(1_000))).unwrap()
    }

    /// `c` with indexes `a_1` and `a.b_1` and the documents `docs`, each inserted in its own
    /// job through the collection as it was when the indexes were made.
    async fn insert_through_stale_meta(engine: &Engine, docs: Vec<Document>) {
        let meta = engine
            .write(true, |txn, now| {
                let (meta, _) = ensure_collection(txn, "db", "c").unwrap();
                let meta =
                    create_index(txn, &meta, IndexMeta::new("a_1", doc! {"a": 1}), now).unwrap();
                create_index(txn, &meta, IndexMeta::new("a.b_1", doc! {"a.b": 1}), now).unwrap()
            })
            .await
            .unwrap();
        for d in docs {
            let meta = Arc::clone(&meta);
            engine
                .write(true, move |txn, now| {
                    collection::insert(txn, &meta, &d, now).unwrap()
                })
                .await
                .unwrap();
        }
    }

    fn multikey(engine: &Engine, name: &str) -> bool {
        let catalog = engine.catalog().unwrap();
        catalog
            .get("db", "c")
            .unwrap()
            .index(name)
            .unwrap()
            .multikey
    }

    #[tokio::test]
    async fn scalars_leave_an_index_not_multikey() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let docs = vec![doc! {"_id": 1, "a": 1}, doc! {"_id": 2, "a": {"b": 2}}];
        insert_through_stale_meta(&engine, docs).await;
        assert!(!multikey(&engine, "a_1"));
        assert!(!multikey(&engine, "a.b_1"));
    }

    #[tokio::test]
    async fn an_array_makes_an_index_multikey_and_the_flag_survives_a_restart() {
        for (d, a, ab) in [
            (doc! {"_id": 1, "a": [1, 2]}, true, true),
            (doc! {"_id": 1, "a": []}, true, true),
            (doc! {"_id": 1, "a": [{"b": 1}]}, true, true),
            (doc! {"_id": 1, "a": {"b": [1, 2]}}, false, true),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let engine = open(dir.path());
            let docs = vec![doc! {"_id": 0, "a": 0}, d.clone()];
            insert_through_stale_meta(&engine, docs).await;
            assert_eq!(
                (multikey(&engine, "a_1"), multikey(&engine, "a.b_1")),
                (a, ab),
                "{d}"
            );
            drop(engine);
            let engine = open(dir.path());
            assert_eq!(
                (multikey(&engine, "a_1"), multikey(&engine, "a.b_1")),
                (a, ab),
                "{d}"
            );
        }
    }

    #[tokio::test]
    async fn cosmos_settings_survive_a_restart_and_go_with_their_database() {
        use crate::profile::account::Throughput;
        let dir = tempfile::tempdir().unwrap();
        let settings = CollectionSettings {
            shard_key: Some("tenant".into()),
            throughput: Some(Throughput::Autoscale(4000)),
        };
        let shared = DatabaseSettings {
            throughput: Some(Throughput::Manual(1000)),
        };
        {
            let engine = open(dir.path());
            let (settings, shared) = (settings.clone(), shared.clone());
            engine
                .write(true, move |txn, _| {
                    ensure_collection(txn, "db", "c").unwrap();
                    assert!(set_cosmos_settings(txn, "db", "c", settings)
                        .unwrap()
                        .is_some());
                    assert!(set_cosmos_settings(txn, "db", "none", Default::default())
                        .unwrap()
                        .is_none());
                    assert!(!set_database_settings(txn, "db", Some(shared)).unwrap());
                })
                .await
                .unwrap();
        }
        let engine = open(dir.path());
        let catalog = engine.catalog().unwrap();
        let meta = catalog.get("db", "c").unwrap();
        assert_eq!(meta.cosmos.as_ref(), Some(&settings));
        assert_eq!(meta.shard_key(), Some("tenant"));
        assert_eq!(meta.partition_path(), Some("tenant"));
        assert_eq!(catalog.database_settings("db"), Some(&shared));
        assert_eq!(catalog.database_settings("other"), None);
        engine
            .write(true, |txn, _| {
                assert!(set_database_settings(txn, "db", None).unwrap());
                assert!(!set_database_settings(txn, "db", None).unwrap());
            })
            .await
            .unwrap();
        drop(engine);
        assert_eq!(
            open(dir.path()).catalog().unwrap().database_settings("db"),
            None
        );
    }

    /// A caller's copy of the collection taken before the flag was set cannot write the old
    /// index list back: catalog changes start from the current entry.
    #[tokio::test]
    async fn catalog_changes_from_a_stale_copy_keep_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        insert_through_stale_meta(&engine, vec![]).await;
        let stale = engine.catalog().unwrap().get("db", "c").cloned().unwrap();
        engine
            .write(true, move |txn, now| {
                collection::insert(txn, &stale, &doc! {"_id": 1, "a": [1, 2]}, now).unwrap();
                // The same job goes on with its stale copy.
                let meta = drop_index(txn, &stale, "a.b_1").unwrap();
                create_index(txn, &stale, IndexMeta::new("b_1", doc! {"b": 1}), now).unwrap();
                assert!(meta.index("a_1").unwrap().multikey);
            })
            .await
            .unwrap();
        assert!(multikey(&engine, "a_1"));
        assert!(!multikey(&engine, "b_1"));
    }
}
