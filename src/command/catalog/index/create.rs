//! `createIndexes`: the requested specifications parsed and checked before any write, then added
//! in one writer job, all or nothing; an index over existing documents is built afterwards
//! (`engine::index_build`), and a request for one an unfinished build is creating waits for it.
//! Also what the Cosmos `customAction` commands reuse to set a new collection's indexes.

use super::spec::{conflict, count, parse_spec, FieldTtl, Outcome};
use crate::command::args::{check_fields, durable, optional_array, optional_bool, wrong_type};
use crate::command::{Request, Shared};
use crate::engine::catalog::{collection_arg, validate_collection_name, CollectionMeta, IndexMeta};
use crate::engine::ddl;
use crate::error::{Error, ErrorCode, Result};
use crate::profile::shard_keys::ShardKeys;
use crate::query::compare::compare_documents;
use crate::query::path::render_document;
use bson::{doc, Bson, Document};
use std::cmp::Ordering;

/// mongod's limit, the `_id` index included.
const MAX_INDEXES: usize = 64;

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
            .write(durable, move |txn, now| {
                let empty_at = unique_needs_empty.then_some(now);
                add_indexes(txn, &db, &coll, specs, empty_at, shard_keys)
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
pub(in crate::command) fn parse_requested(
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
        specs.push(parse_spec(spec, ignore_unknown, FieldTtl::of(profile))?);
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
pub(in crate::command) fn add_to_new_collection(
    txn: &mut crate::engine::Txn<'_>,
    db: &str,
    coll: &str,
    specs: Vec<(IndexMeta, bool)>,
    shard_keys: ShardKeys,
) -> Result<()> {
    match add_indexes(txn, db, coll, specs, None, shard_keys)? {
        Added::Indexes(added) if added.to_build.is_empty() => Ok(()),
        Added::Indexes(_) | Added::WaitFor(_) => Err(Error::internal(
            "indexes of a collection created in the same job needed a build",
        )),
    }
}

/// The requested indexes as they would be created on `meta`: one that names no collation takes
/// the collection's default.
pub(in crate::command) fn as_on(
    meta: &CollectionMeta,
    specs: Vec<(IndexMeta, bool)>,
) -> Vec<IndexMeta> {
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
    if crate::command::transactions::existed_at_start(req, &db, &coll)? {
        return Err(Error::new(
            ErrorCode::OperationNotSupportedInTransaction,
            format!("Cannot create new indexes on existing collection {ns} in a multi-document transaction."),
        ));
    }
    let step = crate::command::transactions::write(shared, req, durable, move |txn, _now| {
        // Only a collection the transaction creates gets indexes: it is empty.
        add_indexes(txn, &db, &coll, specs, None, shard_keys)
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
/// Adds `specs` to the collection (creating it if needed). With `unique_needs_empty_at` (the
/// Cosmos rule [`crate::profile::Rule::UniqueIndexOnPopulated`]), a unique index needs the
/// collection to hold no document visible at that time: expired ones
/// not yet reaped do not count, as `countDocuments` does not count them (TTL-18).
fn add_indexes(
    txn: &mut crate::engine::Txn<'_>,
    db: &str,
    coll: &str,
    specs: Vec<(IndexMeta, bool)>,
    unique_needs_empty_at: Option<i64>,
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
    let populated = match unique_needs_empty_at {
        Some(now) if !empty && specs.iter().any(|s| s.unique) => {
            crate::engine::documents::collection::has_visible(txn, &meta, now)?
        }
        _ => false,
    };
    let before = 1 + meta.indexes.len();
    let mut added: Vec<u64> = Vec::new();
    let (mut to_build, mut ready) = (Vec::new(), Vec::new());
    for spec in specs {
        let step = conflict(&meta.indexes, &spec).and_then(|outcome| {
            if outcome == Outcome::AlreadyExists {
                return Ok(None);
            }
            check_limit(&meta, &spec)?;
            if spec.unique && populated {
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
