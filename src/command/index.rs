//! Index commands: `createIndexes`, `listIndexes`, `dropIndexes`, and `collMod` (refused, as
//! Cosmos DB refuses it, TTL-7, but for turning change-stream images on or off).
//!
//! Owns: parsing index specifications into [`IndexMeta`] (before any write), generated names,
//! and mongod's conflict rules against existing indexes. The TTL index on `_ts` is an index like
//! the others here: its rules (TTL-1…TTL-4) are `ttl::index_ttl`, and the collection TTL is
//! derived from the index list by the catalog, so creating or dropping the index turns TTL on or
//! off (TTL-1, TTL-9). Does not own: building entries or unique checks (`engine::ddl`).

use super::args::{
    check_fields, durable, is_truthy, optional_array, optional_bool, type_name, wrong_type,
};
use super::ddl::{cursor_batch_size, listing_cursor};
use super::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name, CollectionMeta, IndexMeta};
use crate::engine::ddl;
use crate::error::{Error, ErrorCode, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::query::collation::Collation;
use crate::query::compare::{compare_documents, is_number, values_equal};
use crate::query::path::render_document;
use crate::ttl;
use bson::{doc, Bson, Document};
use std::cmp::Ordering;

/// mongod's limit, the `_id` index included.
const MAX_INDEXES: usize = 64;
const ID_INDEX_NAME: &str = "_id_";

/// The `_id` index every collection has; listed first.
pub fn id_index_entry() -> Document {
    doc! {"v": 2, "key": {"_id": 1}, "name": ID_INDEX_NAME}
}

// ---------------------------------------------------------------------------------------------
// createIndexes

const CREATE_FIELDS: &[&str] = &["indexes", "commitQuorum", "ignoreUnknownIndexOptions"];

pub async fn create_indexes(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "createIndexes", CREATE_FIELDS)?;
    let coll = collection_arg(cmd.get("createIndexes"), "createIndexes")?.to_owned();
    validate_collection_name(req.db, &coll)?;
    let Some(items) = optional_array(cmd, "createIndexes", "indexes")? else {
        return Err(Error::new(
            ErrorCode::Location40414,
            "BSON field 'createIndexes.indexes' is missing but a required field",
        ));
    };
    if items.is_empty() {
        return Err(Error::bad_value(
            "Must specify at least one index to create",
        ));
    }
    if cmd.contains_key("commitQuorum") {
        return Err(Error::bad_value("Standalones can't specify commitQuorum"));
    }
    // mongod drops the fields it does not know from each spec instead of refusing them.
    let ignore_unknown =
        optional_bool(cmd, "createIndexes", "ignoreUnknownIndexOptions")?.unwrap_or(false);
    let specs = parse_requested(&shared.config.profile, items, ignore_unknown)?;
    let db = req.db.to_owned();
    let durable = durable(cmd);
    let unique_needs_empty = shared
        .config
        .profile
        .enforces(crate::profile::Rule::UniqueIndexOnPopulated);
    let shard_keys = ShardKeys::of(&shared.config.profile);
    if req.transaction.is_some() {
        return create_in_transaction(shared, req, db, coll, specs, durable, shard_keys).await;
    }
    let added = loop {
        let (db, coll, specs) = (db.clone(), coll.clone(), specs.clone());
        let step = shared
            .engine
            .write(durable, move |txn, _now| {
                add_indexes(txn, &db, &coll, specs, unique_needs_empty, shard_keys)
            })
            .await??;
        match step {
            Added::WaitFor(collection_id) => {
                // mongod: a request for an index an unfinished build is creating waits for that
                // build, then tries again (and finds it ready, or builds it if the build failed).
                shared.engine.wait_for_index_builds(collection_id).await;
            }
            Added::Indexes(added) => break added,
        }
    };
    if !added.to_build.is_empty() {
        let built = shared
            .engine
            .build_indexes(added.collection_id, added.to_build.clone())
            .await;
        if let Err(e) = built {
            // All or nothing: the request's indexes that were ready at once (a `_ts` TTL index
            // has no entries to build) go too. The failed build removed its own.
            let (collection_id, ready) = (added.collection_id, added.ready);
            shared
                .engine
                .write(durable, move |txn, _now| -> Result<()> {
                    for id in ready {
                        ddl::remove_index(txn, collection_id, id)?;
                    }
                    Ok(())
                })
                .await??;
            return Err(e);
        }
    }
    Ok(created_reply(&added))
}

/// The requested index specifications (`createIndexes.indexes`), parsed and checked against the
/// profile's rules. Conflicts among them (and with `_id_`) are found here, before anything is
/// written, so a failing request never creates the collection.
pub(super) fn parse_requested(
    profile: &crate::profile::Profile,
    items: &[Bson],
    ignore_unknown: bool,
) -> Result<Vec<(IndexMeta, bool)>> {
    let mut specs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Bson::Document(spec) = item else {
            return Err(wrong_type(
                "createIndexes",
                &format!("indexes.{i}"),
                item,
                "object",
            ));
        };
        crate::profile::indexes::check_spec(profile, spec)?;
        specs.push(parse_spec(spec, ignore_unknown)?);
    }
    let mut requested: Vec<IndexMeta> = Vec::new();
    for (spec, _) in &specs {
        if conflict(&requested, spec)? == Outcome::Create {
            requested.push(spec.clone());
        }
    }
    Ok(specs)
}

/// Inside the writer: adds `specs` to `db.coll`, which the same job just created (`customAction`
/// `CreateCollection` with `indexes`). The collection is empty, so every index is ready at once;
/// all or nothing.
pub(super) fn add_to_new_collection(
    txn: &mut crate::engine::Txn<'_>,
    db: &str,
    coll: &str,
    specs: Vec<(IndexMeta, bool)>,
    shard_keys: ShardKeys,
) -> Result<()> {
    match add_indexes(txn, db, coll, specs, false, shard_keys)? {
        Added::Indexes(added) if added.to_build.is_empty() => Ok(()),
        Added::Indexes(_) | Added::WaitFor(_) => Err(Error::internal(
            "indexes of a collection created in the same job needed a build",
        )),
    }
}

/// The requested indexes as they would be created on `meta`: one that names no collation takes
/// the collection's default.
pub(super) fn as_on(meta: &CollectionMeta, specs: Vec<(IndexMeta, bool)>) -> Vec<IndexMeta> {
    let default = meta.default_collation_spec();
    specs
        .into_iter()
        .map(
            |(spec, inherits)| match (&default, inherits && spec.is_stored()) {
                (Some(d), true) => IndexMeta {
                    collation: Some(d.clone()),
                    ..spec
                },
                _ => spec,
            },
        )
        .collect()
}

/// `createIndexes` in a transaction, as mongod 7.0 allows it: only on a collection the
/// transaction creates (by this command or an earlier one) and only while it is empty.
async fn create_in_transaction(
    shared: &Shared,
    req: &Request<'_>,
    db: String,
    coll: String,
    specs: Vec<(IndexMeta, bool)>,
    durable: bool,
    shard_keys: ShardKeys,
) -> Result<Document> {
    let ns = format!("{db}.{coll}");
    if super::transactions::existed_at_start(req, &db, &coll)? {
        return Err(Error::new(
            ErrorCode::OperationNotSupportedInTransaction,
            format!("Cannot create new indexes on existing collection {ns} in a multi-document transaction."),
        ));
    }
    let step = super::transactions::write(shared, req, durable, move |txn, _now| {
        // Only a collection the transaction creates gets indexes: it is empty.
        add_indexes(txn, &db, &coll, specs, false, shard_keys)
    })
    .await??;
    match step {
        Added::Indexes(added) if added.to_build.is_empty() => Ok(created_reply(&added)),
        // A collection the transaction created has no build of its own to wait for.
        Added::Indexes(_) | Added::WaitFor(_) => Err(Error::new(
            ErrorCode::OperationNotSupportedInTransaction,
            format!("Cannot create new indexes on non-empty collection {ns} in a multi-document transaction."),
        )),
    }
}

fn created_reply(added: &AddedIndexes) -> Document {
    let (before, after, created) = (added.before, added.after, added.created);
    let mut reply = doc! {
        "createdCollectionAutomatically": created,
        "numIndexesBefore": count(before),
        "numIndexesAfter": count(after),
    };
    if before == after && !created {
        reply.insert("note", "all indexes already exist");
    }
    reply.insert("ok", 1.0);
    reply
}

/// What the first job of `createIndexes` did.
enum Added {
    /// A requested index is being created by an unfinished build of this collection.
    WaitFor(u64),
    Indexes(AddedIndexes),
}

struct AddedIndexes {
    collection_id: u64,
    before: usize,
    after: usize,
    created: bool,
    /// Indexes added `building`, to be built over the existing documents.
    to_build: Vec<u64>,
    /// Indexes added ready at once.
    ready: Vec<u64>,
}

/// Inside the writer: adds the requested indexes to the catalog, all or nothing. On an empty
/// collection they are ready at once; otherwise they are added `building` (from now on every
/// write maintains them) and the caller builds them over the existing documents. The Cosmos
/// profile's rules: `unique_needs_empty`, and `shard_keys` (a unique index leads with the
/// shard key).
fn add_indexes(
    txn: &mut crate::engine::Txn<'_>,
    db: &str,
    coll: &str,
    specs: Vec<(IndexMeta, bool)>,
    unique_needs_empty: bool,
    shard_keys: ShardKeys,
) -> Result<Added> {
    let (mut meta, created) = match ddl::collection(txn, db, coll) {
        Some(meta) => (meta, false),
        None => ddl::ensure_collection(txn, db, coll)?,
    };
    let specs = as_on(&meta, specs);
    let in_progress = |spec: &IndexMeta| {
        meta.indexes.iter().any(|i| {
            i.building
                && (i.name == spec.name || compare_documents(&i.key, &spec.key) == Ordering::Equal)
        })
    };
    if specs.iter().any(in_progress) {
        return Ok(Added::WaitFor(meta.id));
    }
    let empty = crate::engine::documents::collection::is_empty(txn, &meta)?;
    let before = 1 + meta.indexes.len();
    let mut added: Vec<u64> = Vec::new();
    let (mut to_build, mut ready) = (Vec::new(), Vec::new());
    for spec in specs {
        let step = conflict(&meta.indexes, &spec).and_then(|outcome| {
            if outcome == Outcome::AlreadyExists {
                return Ok(None);
            }
            check_limit(&meta, &spec)?;
            if unique_needs_empty && spec.unique && !empty {
                return Err(crate::profile::indexes::unique_on_populated());
            }
            if let Some(key) = shard_keys.key(meta.shard_key()).filter(|_| spec.unique) {
                key.check_unique_index(&spec.key)?;
            }
            let building = !empty && spec.is_stored();
            let index = IndexMeta { building, ..spec };
            ddl::add_index(txn, meta.id, index).map(|(m, id)| Some((m, id, building)))
        });
        match step {
            Ok(Some((updated, id, building))) => {
                meta = updated;
                added.push(id);
                if building {
                    to_build.push(id);
                } else {
                    ready.push(id);
                }
            }
            Ok(None) => {}
            Err(e) => {
                // All or nothing, as mongod builds a request's indexes together. No entries
                // exist yet: ready ones were added to an empty collection, the others are
                // built after this job.
                for id in added.iter().rev() {
                    ddl::remove_index(txn, meta.id, *id)?;
                }
                return Err(e);
            }
        }
    }
    // Ready at once: logged now (those built later are logged when their build ends).
    for id in &ready {
        ddl::log_index_ready(txn, &meta, *id)?;
    }
    Ok(Added::Indexes(AddedIndexes {
        collection_id: meta.id,
        before,
        after: 1 + meta.indexes.len(),
        created,
        to_build,
        ready,
    }))
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn check_limit(meta: &CollectionMeta, spec: &IndexMeta) -> Result<()> {
    if 1 + meta.indexes.len() >= MAX_INDEXES {
        return Err(Error::new(
            ErrorCode::CannotCreateIndex,
            format!(
                "add index fails, too many indexes for {} key:{}",
                meta.namespace(),
                render_document(&spec.key)
            ),
        ));
    }
    Ok(())
}

/// Index options mongod knows that mayfly does not implement: refused, never ignored.
const UNSUPPORTED_OPTIONS: &[&str] = &[
    "partialFilterExpression",
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
    "bucketSize",
    "wildcardProjection",
    "coarsestIndexedLevel",
    "finestIndexedLevel",
    "prepareUnique",
    "clustered",
];

/// Special index types mongod has and mayfly does not.
const UNSUPPORTED_TYPES: &[&str] = &[
    "text",
    "2dsphere",
    "2d",
    "geoHaystack",
    "hashed",
    "columnstore",
];

/// One index specification, validated; `id` is assigned when the index is created.
/// The requested index, and whether it names no collation (it then takes the collection's).
fn parse_spec(spec: &Document, ignore_unknown: bool) -> Result<(IndexMeta, bool)> {
    let in_spec = |message: String| {
        Error::new(
            ErrorCode::CannotCreateIndex,
            format!(
                "Error in specification {} :: caused by :: {message}",
                render_document(spec)
            ),
        )
    };
    let mut key = None;
    let mut name = None;
    let (mut unique, mut sparse) = (false, false);
    let mut collation: Option<Option<Document>> = None;
    for (field, value) in spec {
        match field.as_str() {
            "key" => match value {
                Bson::Document(k) => key = Some(k.clone()),
                other => return Err(wrong_type("createIndexes", "indexes.key", other, "object")),
            },
            "name" => match value {
                Bson::String(n) => name = Some(n.clone()),
                other => return Err(wrong_type("createIndexes", "indexes.name", other, "string")),
            },
            "unique" => unique = flag(field, value)?,
            "sparse" => sparse = flag(field, value)?,
            "background" | "dropDups" => {
                flag(field, value)?;
            }
            "expireAfterSeconds" | "ns" | "storageEngine" => {}
            "v" => {
                if !(values_equal(value, &Bson::Int32(1)) || values_equal(value, &Bson::Int32(2))) {
                    return Err(in_spec(format!(
                        "Invalid index specification {}; cannot create an index with v={}",
                        render_document(spec),
                        crate::query::path::render(value)
                    )));
                }
            }
            "hidden" => {
                if flag(field, value)? {
                    return Err(unsupported("hidden indexes are not supported by mayfly"));
                }
            }
            "collation" => {
                let Bson::Document(c) = value else {
                    return Err(wrong_type(
                        "createIndexes",
                        "indexes.collation",
                        value,
                        "object",
                    ));
                };
                collation = Some(Collation::parse(c)?.map(|c| c.to_document()));
            }
            f if UNSUPPORTED_OPTIONS.contains(&f) => {
                return Err(unsupported(format!(
                    "the index option '{f}' is not supported by mayfly"
                )));
            }
            _ if ignore_unknown => {}
            f => {
                return Err(Error::new(
                    ErrorCode::InvalidIndexSpecificationOption,
                    format!(
                    "The field '{f}' is not valid for an index specification. Specification: {}",
                    render_document(spec)
                ),
                ))
            }
        }
    }
    let Some(key) = key else {
        return Err(Error::failed_to_parse(format!(
            "Error in specification {} :: caused by :: The 'key' field is a required property of an index specification",
            render_document(spec)
        )));
    };
    validate_key(&key).map_err(|e| match e.code {
        ErrorCode::CannotCreateIndex => in_spec(e.message),
        _ => e,
    })?;
    // TTL-4 before TTL-2/3: the key pattern is checked first, then the value.
    let expire_after_seconds = ttl::index_ttl(&key, spec.get("expireAfterSeconds"))?;
    let name = match name {
        Some(n) if n.is_empty() => return Err(in_spec("index name cannot be empty".into())),
        Some(n) if n == "*" => return Err(in_spec("The index name '*' is not valid.".into())),
        Some(n) if n.contains('\0') => {
            return Err(in_spec("index name cannot contain NUL bytes".into()))
        }
        Some(n) => n,
        None => generated_name(&key),
    };
    let is_id = is_id_key(&key);
    if name == ID_INDEX_NAME && !is_id {
        return Err(Error::bad_value(format!(
            "The index name '_id_' is reserved for the _id index, which must have key pattern {{_id: 1}}, found key: {}",
            render_document(&key)
        )));
    }
    if is_id {
        for (option, set) in [("unique", unique), ("sparse", sparse)] {
            if set {
                return Err(Error::new(
                    ErrorCode::InvalidIndexSpecificationOption,
                    format!(
                        "The field '{option}' is not valid for an _id index specification. Specification: {}",
                        render_document(spec)
                    ),
                ));
            }
        }
    }
    if unique && ttl::is_ts_key_pattern(&key) {
        // `_ts` is the system last-modified time, not a field: a unique constraint on it would
        // silently never be enforced.
        return Err(in_spec(
            "an index on the system property '_ts' cannot be unique".into(),
        ));
    }
    if is_id && collation.as_ref().is_some_and(Option::is_some) {
        return Err(unsupported(
            "a collation on the _id index is not supported by this server: _id keys compare by their bytes",
        ));
    }
    let inherits = collation.is_none();
    let index = IndexMeta {
        id: 0,
        name,
        key,
        unique,
        sparse,
        expire_after_seconds,
        multikey: false,
        building: false,
        collation: collation.flatten(),
    };
    Ok((index, inherits))
}

fn flag(field: &str, value: &Bson) -> Result<bool> {
    match value {
        Bson::Boolean(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => {
            Ok(is_truthy(value))
        }
        other => Err(wrong_type(
            "createIndexes",
            &format!("indexes.{field}"),
            other,
            "bool",
        )),
    }
}

fn unsupported(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::CommandNotSupported, message)
}

/// mongod's key pattern rules (67 CannotCreateIndex), with special index types refused (115).
fn validate_key(key: &Document) -> Result<()> {
    let invalid = |m: String| Error::new(ErrorCode::CannotCreateIndex, m);
    if key.is_empty() {
        return Err(invalid("Index keys cannot be empty.".into()));
    }
    for (field, value) in key {
        if field == "$**" || field.ends_with(".$**") {
            return Err(unsupported("wildcard indexes are not supported by mayfly"));
        }
        if field.is_empty() || field.split('.').any(str::is_empty) {
            return Err(invalid("Index keys cannot contain an empty field.".into()));
        }
        if field.split('.').any(|part| part.starts_with('$')) {
            return Err(invalid(
                "Index key contains an illegal field name: field name starts with '$'.".into(),
            ));
        }
        match value {
            Bson::String(kind) if UNSUPPORTED_TYPES.contains(&kind.as_str()) => {
                return Err(unsupported(format!("'{kind}' indexes are not supported by mayfly")));
            }
            Bson::String(kind) => return Err(invalid(format!("Unknown index plugin '{kind}'"))),
            Bson::Double(n) if n.is_nan() => {
                return Err(invalid("Values in the index key pattern can't be NaN.".into()))
            }
            v if is_number(v) => {
                if values_equal(v, &Bson::Int32(0)) {
                    return Err(invalid("Values in the index key pattern can't be 0.".into()));
                }
            }
            other => {
                return Err(invalid(format!(
                    "Values in v:2 index key pattern cannot be of type {}. Only numbers > 0, numbers < 0, and strings are allowed.",
                    type_name(other)
                )))
            }
        }
    }
    Ok(())
}

fn is_id_key(key: &Document) -> bool {
    compare_documents(key, &doc! {"_id": 1}) == Ordering::Equal
}

/// `{a: 1, b: -1}` → `a_1_b_-1`, as drivers and mongod name indexes.
fn generated_name(key: &Document) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|(field, value)| {
            let v = match value {
                Bson::Int32(n) => n.to_string(),
                Bson::Int64(n) => n.to_string(),
                Bson::Double(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", *n as i64),
                Bson::Double(n) => n.to_string(),
                Bson::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{field}_{v}")
        })
        .collect();
    parts.join("_")
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Create,
    AlreadyExists,
}

/// mongod's rules for a requested index against the existing ones (`_id_` implied).
fn conflict(existing: &[IndexMeta], new: &IndexMeta) -> Result<Outcome> {
    if is_id_key(&new.key) {
        return if new.name == ID_INDEX_NAME {
            Ok(Outcome::AlreadyExists)
        } else {
            Err(different_name(ID_INDEX_NAME))
        };
    }
    for old in existing {
        let same_key = compare_documents(&old.key, &new.key) == Ordering::Equal;
        if old.name == new.name {
            let same_options = old.unique == new.unique
                && old.sparse == new.sparse
                && old.collation == new.collation
                && old.expire_after_seconds == new.expire_after_seconds;
            if same_key && same_options {
                // TTL-6: the same TTL index again changes nothing.
                return Ok(Outcome::AlreadyExists);
            }
            let code = if same_key {
                ErrorCode::IndexOptionsConflict
            } else {
                ErrorCode::IndexKeySpecsConflict
            };
            return Err(Error::new(
                code,
                format!(
                    "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: {}, existing index: {}",
                    render_document(&new.to_list_entry()),
                    render_document(&old.to_list_entry())
                ),
            ));
        }
        if same_key {
            return Err(different_name(&old.name));
        }
    }
    if new.is_ttl() {
        if let Some(old) = existing.iter().find(|i| i.is_ttl()) {
            return Err(Error::new(
                ErrorCode::IndexOptionsConflict,
                format!(
                    "The collection already has a TTL index '{}' (expireAfterSeconds: {}); drop it before creating another",
                    old.name,
                    old.expire_after_seconds.unwrap_or_default()
                ),
            ));
        }
    }
    Ok(Outcome::Create)
}

fn different_name(existing: &str) -> Error {
    Error::new(
        ErrorCode::IndexOptionsConflict,
        format!("Index already exists with a different name: {existing}"),
    )
}

// ---------------------------------------------------------------------------------------------
// listIndexes

const LIST_FIELDS: &[&str] = &["cursor", "includeBuildUUIDs", "includeIndexBuildInfo"];

pub fn list_indexes(shared: &Shared, req: &Request<'_>) -> Result<bson::RawDocumentBuf> {
    let cmd = req.body;
    check_fields(cmd, "listIndexes", LIST_FIELDS)?;
    for flag in ["includeBuildUUIDs", "includeIndexBuildInfo"] {
        if optional_bool(cmd, "listIndexes", flag)? == Some(true) {
            // Both change the shape of the listing (and list unfinished builds).
            return Err(unsupported(format!(
                "listIndexes' '{flag}' is not supported by mayfly"
            )));
        }
    }
    let coll = collection_arg(cmd.get("listIndexes"), "listIndexes")?;
    let batch_size = cursor_batch_size(cmd, "listIndexes")?;
    let ns = format!("{}.{coll}", req.db);
    let Some(meta) = shared.engine.catalog()?.get(req.db, coll).cloned() else {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            format!("ns does not exist: {ns}"),
        ));
    };
    let mut entries = vec![id_index_entry()];
    // TTL-8: `expireAfterSeconds` is stored and shown as Int32. An index still being built is
    // not listed: mongod lists unfinished builds only with `includeBuildUUIDs` or
    // `includeIndexBuildInfo`, which mayfly refuses.
    entries.extend(
        meta.indexes
            .iter()
            .filter(|i| !i.building)
            .map(IndexMeta::to_list_entry),
    );
    listing_cursor(shared, ns, entries, batch_size)
}

// ---------------------------------------------------------------------------------------------
// dropIndexes

pub async fn drop_indexes(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "dropIndexes", &["index"])?;
    let coll = collection_arg(cmd.get("dropIndexes"), "dropIndexes")?.to_owned();
    let target = match cmd.get("index") {
        None => {
            return Err(Error::new(
                ErrorCode::Location40414,
                "BSON field 'dropIndexes.index' is missing but a required field",
            ))
        }
        Some(Bson::String(s)) if s == "*" => Target::All,
        Some(Bson::String(s)) => Target::Names(vec![s.clone()]),
        Some(Bson::Document(key)) => Target::Key(key.clone()),
        Some(Bson::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Bson::String(s) => names.push(s.clone()),
                    other => {
                        return Err(wrong_type(
                            "dropIndexes",
                            &format!("index.{i}"),
                            other,
                            "string",
                        ))
                    }
                }
            }
            Target::Names(names)
        }
        Some(other) => {
            return Err(wrong_type(
                "dropIndexes",
                "index",
                other,
                "[string, object, array]",
            ));
        }
    };
    let db = req.db.to_owned();
    let all = target == Target::All;
    let was = shared
        .engine
        .write(durable(cmd), move |txn, _now| -> Result<usize> {
            let Some(meta) = ddl::collection(txn, &db, &coll) else {
                return Err(Error::new(
                    ErrorCode::NamespaceNotFound,
                    format!("ns not found {db}.{coll}"),
                ));
            };
            let was = 1 + meta.indexes.len();
            // Every name is resolved before anything is dropped: all or nothing. An index
            // still being built is dropped too, which ends its build (IndexBuildAborted).
            let ids: Vec<u64> = doomed(&meta, &target)?
                .iter()
                .filter_map(|name| meta.index(name).map(|i| i.id))
                .collect();
            for id in ids {
                // TTL-9: dropping the `_ts` TTL index turns the collection TTL off.
                if let Some(index) = ddl::remove_index(txn, meta.id, id)? {
                    ddl::log_index_dropped(txn, &meta, &index.name)?;
                    if index.is_stored() {
                        // Deleted by the sweeper, so a big index holds up no one.
                        ddl::forget_index_entries(txn, meta.id, index.id);
                    }
                }
            }
            Ok(was)
        })
        .await??;
    let mut reply = doc! {"nIndexesWas": count(was)};
    if all {
        reply.insert("msg", "non-_id indexes dropped for collection");
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

#[derive(Debug, PartialEq)]
enum Target {
    All,
    Names(Vec<String>),
    Key(Document),
}

fn doomed(meta: &CollectionMeta, target: &Target) -> Result<Vec<String>> {
    let cannot_drop_id = || Error::new(ErrorCode::InvalidOptions, "cannot drop _id index");
    match target {
        Target::All => Ok(meta.indexes.iter().map(|i| i.name.clone()).collect()),
        Target::Names(names) => {
            for name in names {
                if name == ID_INDEX_NAME {
                    return Err(cannot_drop_id());
                }
                if meta.index(name).is_none() {
                    return Err(Error::new(
                        ErrorCode::IndexNotFound,
                        format!("index not found with name [{name}]"),
                    ));
                }
            }
            Ok(names.clone())
        }
        Target::Key(key) => {
            if is_id_key(key) {
                return Err(cannot_drop_id());
            }
            meta.indexes
                .iter()
                .find(|i| compare_documents(&i.key, key) == Ordering::Equal)
                .map(|i| vec![i.name.clone()])
                .ok_or_else(|| {
                    Error::new(
                        ErrorCode::IndexNotFound,
                        format!("can't find index with key: {}", render_document(key)),
                    )
                })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// collMod

/// Cosmos DB does not support `collMod` (TTL-7): changing `expireAfterSeconds` is refused with
/// 115, and so is every other change but `changeStreamPreAndPostImages` (change streams are a
/// replica-set feature mayfly has beyond Cosmos's emulation). `{collMod: c}` alone changes nothing and succeeds on an
/// existing collection, as on mongod.
pub async fn coll_mod(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    let coll = collection_arg(cmd.get("collMod"), "collMod")?;
    let changes: Vec<&String> = cmd
        .keys()
        .skip(1)
        .filter(|k| !super::args::is_generic(k))
        .collect();
    let changes_ttl =
        matches!(cmd.get("index"), Some(Bson::Document(i)) if i.contains_key("expireAfterSeconds"));
    if changes_ttl {
        return Err(unsupported(
            "collMod is not supported (Cosmos DB does not support collMod): to change a TTL index's 'expireAfterSeconds', drop the index and create it again",
        ));
    }
    // Only the logging of document images for change streams may change.
    if let (Some(enabled), 1) = (super::ddl::images_option(cmd, "collMod")?, changes.len()) {
        let (db, name) = (req.db.to_owned(), coll.to_owned());
        let changed = shared
            .engine
            .write(durable(cmd), move |txn, _now| {
                ddl::set_images(txn, &db, &name, enabled)
            })
            .await??;
        if changed.is_none() {
            return Err(Error::new(
                ErrorCode::NamespaceNotFound,
                format!("ns does not exist: {}.{coll}", req.db),
            ));
        }
        return Ok(doc! {"ok": 1.0});
    }
    if let Some(option) = changes.first() {
        return Err(unsupported(format!(
            "collMod is not supported (Cosmos DB does not support collMod): cannot change '{option}'"
        )));
    }
    // Nothing changes, but the operation log records it, as mongod's does.
    let (db, name) = (req.db.to_owned(), coll.to_owned());
    let found = shared
        .engine
        .write(durable(cmd), move |txn, _now| {
            ddl::log_coll_mod(txn, &db, &name)
        })
        .await??;
    if found.is_none() {
        return Err(Error::new(
            ErrorCode::NamespaceNotFound,
            format!("ns does not exist: {}.{coll}", req.db),
        ));
    }
    Ok(doc! {"ok": 1.0})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_generated_as_drivers_do() {
        assert_eq!(generated_name(&doc! {"a": 1, "b": -1}), "a_1_b_-1");
        assert_eq!(generated_name(&doc! {"a.b": 1.0}), "a.b_1");
        assert_eq!(generated_name(&doc! {"_ts": -1_i64}), "_ts_-1");
    }

    #[test]
    fn key_patterns_follow_mongod() {
        assert!(validate_key(&doc! {"a": 1, "b": -1.5}).is_ok());
        for bad in [
            doc! {},
            doc! {"a": 0},
            doc! {"a": true},
            doc! {"a": "x"},
            doc! {"$a": 1},
            doc! {"a..b": 1},
        ] {
            assert_eq!(
                validate_key(&bad).unwrap_err().code,
                ErrorCode::CannotCreateIndex,
                "{bad}"
            );
        }
        for unsupported in [doc! {"a": "text"}, doc! {"a": "hashed"}, doc! {"$**": 1}] {
            assert_eq!(
                validate_key(&unsupported).unwrap_err().code,
                ErrorCode::CommandNotSupported
            );
        }
    }
}
