//! The catalog: databases, collections (with a stable id, a UUID and their options) and their
//! indexes, the users of each database (mongod's `admin.system.users`), and the Cosmos settings
//! of databases (provisioned throughput), stored in the engine's `Catalog` keyspace and loaded
//! at start.
//!
//! A database exists while it has a collection (or, for `customAction` `GetDatabase`, Cosmos
//! settings). The collection TTL is not stored on its own: it
//! is the `expireAfterSeconds` of the collection's `_ts` index (TTL-1), so the two can never
//! disagree.

use crate::auth::User;
use crate::error::{Error, ErrorCode, Result};
use crate::profile::account::DatabaseSettings;
use crate::storage::{Keyspace, Snapshot};
use crate::ttl;
use bson::{doc, Bson, Document, Uuid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

const COLLECTION_KEY_PREFIX: &[u8] = b"coll\0";
const USER_KEY_PREFIX: &[u8] = b"user\0";
const DATABASE_KEY_PREFIX: &[u8] = b"database\0";

/// A database's stored Cosmos settings, with the name they belong to.
#[derive(Debug, Serialize, Deserialize)]
struct DatabaseEntry {
    db: String,
    settings: DatabaseSettings,
}

/// A secondary index (the `_id` index is implicit and not stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// Unique within its collection; part of every index entry's key.
    pub id: u64,
    pub name: String,
    pub key: Document,
    #[serde(default)]
    pub unique: bool,
    #[serde(default)]
    pub sparse: bool,
    /// Only documents this filter matches have entries (`partialFilterExpression`, validated
    /// by `createIndexes`; matched under the index's collation by `documents::partial`).
    #[serde(
        default,
        rename = "partialFilterExpression",
        skip_serializing_if = "Option::is_none"
    )]
    pub partial_filter: Option<Document>,
    /// Maintained (and unique-checked) like any index, but never planned nor hinted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    #[serde(default, rename = "expireAfterSeconds")]
    pub expire_after_seconds: Option<i32>,
    /// Whether some document ever gave this index an array (more than one entry, or the entry
    /// of an empty array). Set in the commit that writes such entries and never cleared, as on
    /// mongod; an entry stored before the flag existed loads as multikey (unknown = assume so).
    /// Not shown by `listIndexes`.
    #[serde(default = "unknown_is_multikey")]
    pub multikey: bool,
    /// The index is being built over existing documents (`index_build`): writes maintain and
    /// unique-check its entries like a ready index's, but it is not complete, so queries must
    /// not use it and `listIndexes` does not show it.
    #[serde(default)]
    pub building: bool,
    /// The index's collation, normalized (`None`: simple). String keys are its sort keys
    /// (`Collation::key_value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collation: Option<Document>,
    /// A Cosmos custom-path TTL index (TTL-30): with `expireAfterSeconds`, its field's numbers
    /// are Unix milliseconds as well as its dates instants (`ttl::custom`). Stored with the
    /// index, so expiry keeps its meaning whatever flags a later start has.
    #[serde(
        default,
        rename = "cosmosCustomTtl",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub custom_ttl: bool,
}

fn unknown_is_multikey() -> bool {
    true
}

impl IndexMeta {
    /// The `_ts` TTL index: not an index of document fields but the collection's TTL setting.
    pub fn is_ttl(&self) -> bool {
        self.expire_after_seconds.is_some() && ttl::is_ts_key_pattern(&self.key)
    }

    /// The date TTL index this is: `expireAfterSeconds` on a single field other than `_ts`,
    /// MongoDB's (TTL-25, the default profile) or Cosmos's custom path (TTL-30). `None` while
    /// it is being built: its entries are not all there, and expiry by it starts, as on mongod,
    /// once it is ready (the reaper and the counts find due documents through those entries);
    /// `None` too for a custom path with `expireAfterSeconds: -1`, which expires nothing.
    pub fn date_ttl(&self) -> Option<ttl::DateTtl> {
        if self.building {
            return None;
        }
        let seconds = self.expire_after_seconds?;
        let mut fields = self.key.keys();
        match (fields.next(), fields.next()) {
            (Some(field), None) if field != ttl::TS_FIELD && self.custom_ttl => {
                ttl::DateTtl::custom(field, seconds)
            }
            (Some(field), None) if field != ttl::TS_FIELD => ttl::DateTtl::new(field, seconds),
            _ => None,
        }
    }

    /// A TTL index on a field other than `_ts`, ready or not: a date TTL index or a custom TTL
    /// path (TTL-25, TTL-30).
    pub fn is_field_ttl(&self) -> bool {
        self.expire_after_seconds.is_some() && !ttl::is_ts_key_pattern(&self.key)
    }

    /// The collection's Cosmos custom TTL path index (TTL-30).
    pub fn is_custom_ttl(&self) -> bool {
        self.custom_ttl && self.is_field_ttl()
    }

    /// Whether entries of this index are kept in the `Indexes` keyspace. The `_ts` key names the
    /// system property, which documents' expiry keys already order (TTL-16, TTL-20).
    pub fn is_stored(&self) -> bool {
        !ttl::is_ts_key_pattern(&self.key)
    }

    /// A new, ready, not (yet) multikey index; `id` is assigned when it is added.
    pub fn new(name: impl Into<String>, key: Document) -> IndexMeta {
        IndexMeta {
            id: 0,
            name: name.into(),
            key,
            unique: false,
            sparse: false,
            partial_filter: None,
            hidden: false,
            expire_after_seconds: None,
            multikey: false,
            building: false,
            collation: None,
            custom_ttl: false,
        }
    }

    /// The compiled collation of this index (`None`: simple).
    pub fn collator(&self) -> Result<Option<crate::query::collation::Collation>> {
        match &self.collation {
            Some(spec) => crate::query::collation::Collation::cached(spec),
            None => Ok(None),
        }
    }

    /// The entry `listIndexes` shows.
    pub fn to_list_entry(&self) -> Document {
        let mut entry = doc! {"v": 2, "key": self.key.clone(), "name": self.name.as_str()};
        if self.unique {
            entry.insert("unique", true);
        }
        if self.sparse {
            entry.insert("sparse", true);
        }
        if let Some(seconds) = self.expire_after_seconds {
            entry.insert("expireAfterSeconds", seconds);
        }
        if let Some(filter) = &self.partial_filter {
            entry.insert("partialFilterExpression", filter.clone());
        }
        if self.hidden {
            entry.insert("hidden", true);
        }
        if let Some(collation) = &self.collation {
            entry.insert("collation", collation.clone());
        }
        entry
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionMeta {
    /// Stable id: the prefix of every key of this collection.
    pub id: u64,
    pub db: String,
    pub name: String,
    pub uuid: Uuid,
    #[serde(default)]
    pub options: Document,
    #[serde(default)]
    pub indexes: Vec<IndexMeta>,
    #[serde(default)]
    pub next_index_id: u64,
    /// Its Cosmos DB settings (shard key, throughput), set by the Cosmos profile's commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosmos: Option<crate::profile::account::CollectionSettings>,
    /// Whether its documents are keyed by `_id` and then the shard key's value, which makes
    /// `_id` unique per shard-key value, as Cosmos DB keeps it (`record_key`). Set when an
    /// empty collection gets its shard key; a collection sharded by an earlier mayfly, keyed
    /// by `_id` alone, keeps `_id` unique in the whole collection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partitioned: bool,
}

impl CollectionMeta {
    pub fn namespace(&self) -> String {
        format!("{}.{}", self.db, self.name)
    }

    /// Whether the collection's changes are logged with their documents' images
    /// (`changeStreamPreAndPostImages: {enabled: true}`).
    pub fn keeps_images(&self) -> bool {
        self.options
            .get_document("changeStreamPreAndPostImages")
            .is_ok_and(|images| images.get_bool("enabled").unwrap_or(false))
    }

    /// The collection's default collation, normalized, as `create` stored it in its options
    /// (`None`: simple).
    pub fn default_collation_spec(&self) -> Option<Document> {
        self.options.get_document("collation").ok().cloned()
    }

    /// The compiled default collation (`None`: simple).
    pub fn default_collation(&self) -> Result<Option<crate::query::collation::Collation>> {
        match self.options.get_document("collation") {
            Ok(spec) => crate::query::collation::Collation::cached(spec),
            Err(_) => Ok(None),
        }
    }

    /// The collection TTL (Cosmos "DefaultTimeToLive"): set by the `_ts` TTL index (TTL-1).
    pub fn ttl(&self) -> Option<i32> {
        self.indexes
            .iter()
            .find(|i| i.is_ttl())
            .and_then(|i| i.expire_after_seconds)
    }

    /// Every TTL rule of the collection: the collection TTL and its date TTL indexes. Built
    /// without allocating for a collection without date TTL indexes.
    pub fn ttl_model(&self) -> ttl::TtlModel {
        ttl::TtlModel {
            collection_ttl: self.ttl(),
            dates: self
                .indexes
                .iter()
                .filter_map(IndexMeta::date_ttl)
                .collect(),
        }
    }

    pub fn index_by_id(&self, id: u64) -> Option<&IndexMeta> {
        self.indexes.iter().find(|i| i.id == id)
    }

    pub fn index(&self, name: &str) -> Option<&IndexMeta> {
        self.indexes.iter().find(|i| i.name == name)
    }

    pub fn stored_indexes(&self) -> impl Iterator<Item = &IndexMeta> {
        self.indexes.iter().filter(|i| i.is_stored())
    }

    pub fn storage_key(&self) -> Vec<u8> {
        collection_key(&self.db, &self.name)
    }

    /// The shard key's path when the collection is sharded (Cosmos profile).
    pub fn shard_key(&self) -> Option<&str> {
        self.cosmos.as_ref()?.shard_key.as_deref()
    }

    /// The shard key's path when the collection's documents are keyed by it after their `_id`
    /// ([`CollectionMeta::partitioned`]).
    pub fn partition_path(&self) -> Option<&str> {
        self.shard_key().filter(|_| self.partitioned)
    }
}

fn collection_key(db: &str, name: &str) -> Vec<u8> {
    let mut key = COLLECTION_KEY_PREFIX.to_vec();
    key.extend_from_slice(db.as_bytes());
    key.push(0);
    key.extend_from_slice(name.as_bytes());
    key
}

fn database_key(db: &str) -> Vec<u8> {
    let mut key = DATABASE_KEY_PREFIX.to_vec();
    key.extend_from_slice(db.as_bytes());
    key
}

fn user_key(db: &str, name: &str) -> Vec<u8> {
    let mut key = USER_KEY_PREFIX.to_vec();
    key.extend_from_slice(db.as_bytes());
    key.push(0);
    key.extend_from_slice(name.as_bytes());
    key
}

/// All collections and users, by (database, name). Cheap to clone for publishing to readers.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    collections: BTreeMap<(String, String), Arc<CollectionMeta>>,
    next_collection_id: u64,
    users: BTreeMap<(String, String), Arc<User>>,
    /// Databases' Cosmos settings, by name (only databases `customAction` gave settings).
    database_settings: BTreeMap<String, Arc<DatabaseSettings>>,
}

impl Catalog {
    /// Whether `other` is this catalog unchanged: the same collections, users and database
    /// settings (the same shared entries, not equal copies) and the same next collection id. A transaction that
    /// changed its copy of the catalog commits only over the catalog it started from.
    pub fn same_as(&self, other: &Catalog) -> bool {
        self.next_collection_id == other.next_collection_id
            && self.collections.len() == other.collections.len()
            && self.users.len() == other.users.len()
            && self
                .collections
                .iter()
                .zip(&other.collections)
                .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y))
            && self
                .users
                .iter()
                .zip(&other.users)
                .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y))
            && self.database_settings.len() == other.database_settings.len()
            && self
                .database_settings
                .iter()
                .zip(&other.database_settings)
                .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y))
    }

    /// Loads every collection stored in `snapshot`.
    pub fn load<S: Snapshot>(snapshot: &S) -> Result<Catalog> {
        let mut catalog = Catalog {
            collections: BTreeMap::new(),
            next_collection_id: 1,
            users: BTreeMap::new(),
            database_settings: BTreeMap::new(),
        };
        for entry in snapshot.prefix(Keyspace::Catalog, DATABASE_KEY_PREFIX, false) {
            let (_, value) = entry?;
            let entry: DatabaseEntry = bson::from_slice(&value)
                .map_err(|e| Error::internal(format!("corrupt database entry: {e}")))?;
            catalog
                .database_settings
                .insert(entry.db, Arc::new(entry.settings));
        }
        for entry in snapshot.prefix(Keyspace::Catalog, USER_KEY_PREFIX, false) {
            let (_, value) = entry?;
            let user: User = bson::from_slice(&value)
                .map_err(|e| Error::internal(format!("corrupt user entry: {e}")))?;
            catalog
                .users
                .insert((user.db.clone(), user.name.clone()), Arc::new(user));
        }
        for entry in snapshot.prefix(Keyspace::Catalog, COLLECTION_KEY_PREFIX, false) {
            let (_, value) = entry?;
            let meta: CollectionMeta = bson::from_slice(&value)
                .map_err(|e| Error::internal(format!("corrupt catalog entry: {e}")))?;
            catalog.next_collection_id = catalog.next_collection_id.max(meta.id + 1);
            catalog
                .collections
                .insert((meta.db.clone(), meta.name.clone()), Arc::new(meta));
        }
        Ok(catalog)
    }

    /// Never issues `id` again: the id of a dropped collection whose entries are still to be
    /// swept (`sweep`) stays taken until they are gone.
    pub fn reserve_collection_id(&mut self, id: u64) {
        self.next_collection_id = self.next_collection_id.max(id.saturating_add(1));
    }

    pub fn get(&self, db: &str, name: &str) -> Option<&Arc<CollectionMeta>> {
        self.collections.get(&(db.to_owned(), name.to_owned()))
    }

    pub fn by_id(&self, id: u64) -> Option<&Arc<CollectionMeta>> {
        self.collections.values().find(|m| m.id == id)
    }

    /// Collections of `db`, in name order.
    pub fn collections_in<'a>(
        &'a self,
        db: &'a str,
    ) -> impl Iterator<Item = &'a Arc<CollectionMeta>> + 'a {
        self.collections
            .range((db.to_owned(), String::new())..)
            .take_while(move |((d, _), _)| d == db)
            .map(|(_, m)| m)
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<CollectionMeta>> {
        self.collections.values()
    }

    /// Database names, in order.
    pub fn databases(&self) -> Vec<String> {
        let mut names: Vec<String> = self.collections.keys().map(|(d, _)| d.clone()).collect();
        names.dedup();
        names
    }

    /// A new collection's metadata (not yet inserted).
    pub fn new_collection(&mut self, db: &str, name: &str, options: Document) -> CollectionMeta {
        let id = self.next_collection_id;
        self.next_collection_id += 1;
        CollectionMeta {
            id,
            db: db.to_owned(),
            name: name.to_owned(),
            uuid: Uuid::new(),
            options,
            indexes: Vec::new(),
            next_index_id: 1,
            cosmos: None,
            partitioned: false,
        }
    }

    /// Inserts or replaces a collection; returns the catalog entry to store.
    pub fn put(&mut self, meta: CollectionMeta) -> Result<(Vec<u8>, Vec<u8>)> {
        let value = bson::to_vec(&meta)
            .map_err(|e| Error::internal(format!("cannot encode catalog entry: {e}")))?;
        let key = meta.storage_key();
        self.collections
            .insert((meta.db.clone(), meta.name.clone()), Arc::new(meta));
        Ok((key, value))
    }

    /// The user `name` of database `db`.
    pub fn user(&self, db: &str, name: &str) -> Option<&Arc<User>> {
        self.users.get(&(db.to_owned(), name.to_owned()))
    }

    /// Users of `db`, in name order.
    pub fn users_in<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a Arc<User>> + 'a {
        self.users
            .range((db.to_owned(), String::new())..)
            .take_while(move |((d, _), _)| d == db)
            .map(|(_, u)| u)
    }

    /// Every user, by database then name.
    pub fn all_users(&self) -> impl Iterator<Item = &Arc<User>> {
        self.users.values()
    }

    /// Whether any user exists (the localhost exception ends with the first one).
    pub fn has_users(&self) -> bool {
        !self.users.is_empty()
    }

    /// Inserts or replaces a user; returns the catalog entry to store.
    pub fn put_user(&mut self, user: User) -> Result<(Vec<u8>, Vec<u8>)> {
        let value = bson::to_vec(&user)
            .map_err(|e| Error::internal(format!("cannot encode user entry: {e}")))?;
        let key = user_key(&user.db, &user.name);
        self.users
            .insert((user.db.clone(), user.name.clone()), Arc::new(user));
        Ok((key, value))
    }

    /// Removes a user; returns its storage key.
    pub fn remove_user(&mut self, db: &str, name: &str) -> Option<(Arc<User>, Vec<u8>)> {
        self.users
            .remove(&(db.to_owned(), name.to_owned()))
            .map(|u| (u, user_key(db, name)))
    }

    /// Database `db`'s Cosmos settings, if `customAction` gave it some.
    pub fn database_settings(&self, db: &str) -> Option<&DatabaseSettings> {
        self.database_settings.get(db).map(|s| &**s)
    }

    /// Sets database `db`'s Cosmos settings; returns the catalog entry to store.
    pub fn put_database_settings(
        &mut self,
        db: &str,
        settings: DatabaseSettings,
    ) -> Result<(Vec<u8>, Vec<u8>)> {
        let entry = DatabaseEntry {
            db: db.to_owned(),
            settings,
        };
        let value = bson::to_vec(&entry)
            .map_err(|e| Error::internal(format!("cannot encode database entry: {e}")))?;
        self.database_settings
            .insert(entry.db, Arc::new(entry.settings));
        Ok((database_key(db), value))
    }

    /// Removes database `db`'s Cosmos settings; returns their storage key if there were any.
    pub fn remove_database_settings(&mut self, db: &str) -> Option<Vec<u8>> {
        self.database_settings.remove(db).map(|_| database_key(db))
    }

    /// Removes a collection; returns its storage key.
    pub fn remove(&mut self, db: &str, name: &str) -> Option<(Arc<CollectionMeta>, Vec<u8>)> {
        let removed = self.collections.remove(&(db.to_owned(), name.to_owned()))?;
        Some((removed, collection_key(db, name)))
    }
}

/// mongod's rules for database names (73 InvalidNamespace).
pub fn validate_db_name(db: &str) -> Result<()> {
    let bad = db.is_empty()
        || db.len() >= 64
        || db
            .chars()
            .any(|c| matches!(c, '/' | '\\' | '.' | ' ' | '"' | '$' | '\0'));
    if bad {
        return Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid database name: '{db}'"),
        ));
    }
    Ok(())
}

/// mongod's rules for collection names a client may read: those it may write to, and the
/// `system.` collections (`system.profile`).
pub fn validate_read_collection_name(db: &str, name: &str) -> Result<()> {
    match name.strip_prefix("system.") {
        Some(rest) if !rest.is_empty() => validate_collection_name(db, rest).map_err(|_| {
            Error::new(
                ErrorCode::InvalidNamespace,
                format!("Invalid collection name: {name}"),
            )
        }),
        _ => validate_collection_name(db, name),
    }
}

/// mongod's rules for collection names a client may write to (73 InvalidNamespace).
pub fn validate_collection_name(db: &str, name: &str) -> Result<()> {
    validate_db_name(db)?;
    if name.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid namespace specified '{db}.'"),
        ));
    }
    if name.contains('$')
        || name.contains('\0')
        || name.starts_with('.')
        || name.starts_with("system.")
    {
        return Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid collection name: {name}"),
        ));
    }
    if db.len() + 1 + name.len() > 255 {
        return Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("Fully qualified namespace is too long. Namespace: {db}.{name} Max: 255"),
        ));
    }
    Ok(())
}

/// A collection name as a command argument: `{find: "c"}` (a string is required).
pub fn collection_arg<'a>(value: Option<&'a Bson>, command: &str) -> Result<&'a str> {
    match value {
        Some(Bson::String(s)) => Ok(s),
        Some(other) => Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!(
                "collection name has invalid type {}",
                crate::query::path::type_name(other)
            ),
        )),
        None => Err(Error::failed_to_parse(format!(
            "{command} requires a collection name"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_rules() {
        assert!(validate_collection_name("test", "users").is_ok());
        for (db, coll) in [
            ("", "c"),
            ("a.b", "c"),
            ("a b", "c"),
            ("t", ""),
            ("t", "a$b"),
            ("t", "system.x"),
        ] {
            let err = validate_collection_name(db, coll).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidNamespace, "{db}.{coll}");
        }
    }

    #[test]
    fn ttl_comes_from_the_ts_index() {
        let mut catalog = Catalog::default();
        let mut meta = catalog.new_collection("d", "c", Document::new());
        assert_eq!(meta.ttl(), None);
        meta.indexes.push(IndexMeta {
            id: 1,
            expire_after_seconds: Some(10),
            ..IndexMeta::new("_ts_1", doc! {"_ts": 1})
        });
        assert_eq!(meta.ttl(), Some(10));
        assert!(!meta.indexes[0].is_stored());
        catalog.put(meta).unwrap();
        assert_eq!(catalog.databases(), vec!["d".to_string()]);
        assert_eq!(catalog.collections_in("d").count(), 1);
    }

    #[test]
    fn an_index_stored_before_the_multikey_flag_loads_as_multikey() {
        let old = doc! {"id": 3_i64, "name": "a_1", "key": {"a": 1}, "unique": false};
        let index: IndexMeta = bson::from_document(old).unwrap();
        assert!(index.multikey, "unknown must be assumed multikey");
        assert!(!index.building);
        let new = IndexMeta::new("a_1", doc! {"a": 1});
        let round: IndexMeta = bson::from_slice(&bson::to_vec(&new).unwrap()).unwrap();
        assert!(!round.multikey);
        assert!(!new.to_list_entry().contains_key("multikey"));
    }
}
