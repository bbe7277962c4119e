//! `collMod`: refused, as Cosmos DB refuses it (TTL-7), but for turning change-stream images on
//! or off, the no-op `{collMod: c}`, and in the default profile mongod's change of an index:
//! a date TTL index's `expireAfterSeconds` (TTL-28) and hiding or unhiding it
//! ([`index_options`]).

use super::spec::unsupported;
use crate::command::args::{durable, wrong_type};
use crate::command::{Request, Shared};
use crate::engine::catalog::collection_arg;
use crate::engine::ddl;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::compare_documents;
use crate::query::path::render_document;
use bson::{doc, Bson, Document};

/// The refusal of a change of the `_ts` TTL index (TTL-7).
const TS_REFUSAL: &str = "collMod is not supported (Cosmos DB does not support collMod): to change a TTL index's 'expireAfterSeconds', drop the index and create it again";

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
        .filter(|k| !crate::command::args::is_generic(k))
        .collect();
    let changes_ttl =
        matches!(cmd.get("index"), Some(Bson::Document(i)) if i.contains_key("expireAfterSeconds"));
    let changes_index = matches!(cmd.get("index"), Some(Bson::Document(_)));
    if changes_index && !shared.config.profile.is_cosmos() && changes.len() == 1 {
        return index_options(shared, req, coll).await;
    }
    if changes_ttl {
        return Err(unsupported(TS_REFUSAL));
    }
    // Only the logging of document images for change streams may change.
    if let (Some(enabled), 1) = (
        crate::command::catalog::images::images_option(cmd, "collMod")?,
        changes.len(),
    ) {
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

/// `{collMod: c, index: {keyPattern | name, expireAfterSeconds?, hidden?}}` in the default
/// profile, with mongod 7.0's reply (each option that changed as `<option>_old` and
/// `<option>_new`; `expireAfterSeconds_old` only when the index had a value).
/// `expireAfterSeconds` (TTL-28) sets a date TTL index's value, or makes a single-field index a
/// date TTL index, validated as `createIndexes` validates it (TTL-25); the `_ts` index keeps the
/// Cosmos rule (TTL-7: 115). `hidden` hides the index from the planner or shows it again; the
/// `_id` index cannot be hidden.
async fn index_options(shared: &Shared, req: &Request<'_>, coll: &str) -> Result<Document> {
    let cmd = req.body;
    let Some(Bson::Document(index)) = cmd.get("index") else {
        return Err(Error::internal(
            "collMod index option checked by the caller",
        ));
    };
    for field in index.keys() {
        if !matches!(
            field.as_str(),
            "keyPattern" | "name" | "expireAfterSeconds" | "hidden"
        ) {
            return Err(unsupported(format!(
                "collMod of an index's '{field}' is not supported by this server"
            )));
        }
    }
    let hidden = match index.get("hidden") {
        None => None,
        Some(Bson::Boolean(h)) => Some(*h),
        Some(other) => return Err(wrong_type("collMod", "index.hidden", other, "bool")),
    };
    let selector = match (index.get("keyPattern"), index.get("name")) {
        (Some(_), Some(_)) => {
            return Err(Error::new(
                ErrorCode::InvalidOptions,
                "Cannot specify both key pattern and name.",
            ))
        }
        (Some(Bson::Document(key)), None) => Selector::Key(key.clone()),
        (None, Some(Bson::String(name))) => Selector::Name(name.clone()),
        (Some(other), None) => {
            return Err(wrong_type("collMod", "index.keyPattern", other, "object"))
        }
        (None, Some(other)) => return Err(wrong_type("collMod", "index.name", other, "string")),
        (None, None) => {
            return Err(Error::new(
                ErrorCode::InvalidOptions,
                "Must specify either index name or key pattern.",
            ))
        }
    };
    if hidden.is_some() && selector.is_id_index() {
        return Err(Error::bad_value("can't hide _id index"));
    }
    let value = index.get("expireAfterSeconds").cloned();
    if value.is_none() && hidden.is_none() {
        return Err(Error::new(
            ErrorCode::InvalidOptions,
            "no expireAfterSeconds, hidden, unique, or prepareUnique field",
        ));
    }
    if value.is_some()
        && matches!(&selector, Selector::Key(key) if crate::ttl::is_ts_key_pattern(key))
    {
        // TTL-7 for the `_ts` key, whether or not the collection has that index yet.
        return Err(unsupported(TS_REFUSAL));
    }
    let (db, name) = (req.db.to_owned(), coll.to_owned());
    let ns = format!("{db}.{name}");
    shared
        .engine
        .write(durable(cmd), move |txn, _now| -> Result<Document> {
            let Some(meta) = ddl::collection(txn, &db, &name) else {
                return Err(Error::new(
                    ErrorCode::NamespaceNotFound,
                    format!("ns does not exist: {ns}"),
                ));
            };
            let found = meta.indexes.iter().find(|i| match &selector {
                Selector::Key(key) => compare_documents(&i.key, key) == std::cmp::Ordering::Equal,
                Selector::Name(n) => &i.name == n,
            });
            let Some(found) = found.filter(|i| !i.building) else {
                return Err(Error::new(
                    ErrorCode::IndexNotFound,
                    format!("cannot find index {} for ns {ns}", selector.render()),
                ));
            };
            if value.is_some() && crate::ttl::is_ts_key_pattern(&found.key) {
                // TTL-7: the `_ts` index keeps the Cosmos rule in every profile.
                return Err(unsupported(TS_REFUSAL));
            }
            // Validated before anything changes: the command is all or nothing.
            let seconds = match &value {
                Some(value) => {
                    let mut spec = found.to_list_entry();
                    spec.insert("expireAfterSeconds", value.clone());
                    Some(crate::ttl::date::validate_date_ttl_index(
                        &spec, &found.key, value,
                    )?)
                }
                None => None,
            };
            let (old, was_hidden, id) = (found.expire_after_seconds, found.hidden, found.id);
            let mut reply = Document::new();
            if let Some(seconds) = seconds.filter(|s| old != Some(*s)) {
                ddl::set_expire_after_seconds(txn, &db, &name, id, seconds)?;
                if let Some(old) = old {
                    reply.insert("expireAfterSeconds_old", old);
                }
                reply.insert("expireAfterSeconds_new", seconds);
            }
            // Hiding a hidden index or showing a visible one changes nothing, as on mongod.
            if let Some(hidden) = hidden.filter(|h| *h != was_hidden) {
                ddl::set_index_hidden(txn, &db, &name, id, hidden)?;
                reply.insert("hidden_old", was_hidden);
                reply.insert("hidden_new", hidden);
            }
            reply.insert("ok", 1.0);
            Ok(reply)
        })
        .await?
}

/// How `collMod` names the index it changes.
enum Selector {
    Key(Document),
    Name(String),
}

impl Selector {
    /// Whether this names the `_id` index, which is not among the stored indexes.
    fn is_id_index(&self) -> bool {
        match self {
            Selector::Key(key) => super::spec::is_id_key(key),
            Selector::Name(name) => name == super::spec::ID_INDEX_NAME,
        }
    }

    fn render(&self) -> String {
        match self {
            Selector::Key(key) => render_document(key),
            Selector::Name(name) => name.clone(),
        }
    }
}
