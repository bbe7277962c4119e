//! `collMod`: refused, as Cosmos DB refuses it (TTL-7), but for turning change-stream images on
//! or off, the no-op `{collMod: c}`, and in the default profile mongod's change of a date TTL
//! index's `expireAfterSeconds` (TTL-28, [`index_ttl`]).

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
    if changes_ttl && !shared.config.profile.is_cosmos() && changes.len() == 1 {
        return index_ttl(shared, req, coll).await;
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

/// `{collMod: c, index: {keyPattern | name, expireAfterSeconds}}` in the default profile
/// (TTL-28): sets a date TTL index's value, or makes a single-field index a date TTL index, with
/// mongod 7.0's reply (`expireAfterSeconds_old` when the index had a value,
/// `expireAfterSeconds_new`). The value is validated as `createIndexes` validates it (TTL-25).
/// The `_ts` index keeps the Cosmos rule (TTL-7: 115).
async fn index_ttl(shared: &Shared, req: &Request<'_>, coll: &str) -> Result<Document> {
    let cmd = req.body;
    let Some(Bson::Document(index)) = cmd.get("index") else {
        return Err(Error::internal(
            "collMod index option checked by the caller",
        ));
    };
    for field in index.keys() {
        if !matches!(field.as_str(), "keyPattern" | "name" | "expireAfterSeconds") {
            return Err(unsupported(format!(
                "collMod of an index's '{field}' is not supported by this server"
            )));
        }
    }
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
    if matches!(&selector, Selector::Key(key) if crate::ttl::is_ts_key_pattern(key)) {
        // TTL-7 for the `_ts` key, whether or not the collection has that index yet.
        return Err(unsupported(TS_REFUSAL));
    }
    let value = index
        .get("expireAfterSeconds")
        .cloned()
        .unwrap_or(Bson::Null);
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
            if crate::ttl::is_ts_key_pattern(&found.key) {
                // TTL-7: the `_ts` index keeps the Cosmos rule in every profile.
                return Err(unsupported(TS_REFUSAL));
            }
            let mut spec = found.to_list_entry();
            spec.insert("expireAfterSeconds", value.clone());
            let seconds = crate::ttl::date::validate_date_ttl_index(&spec, &found.key, &value)?;
            let old = found.expire_after_seconds;
            let id = found.id;
            let mut reply = Document::new();
            if old != Some(seconds) {
                ddl::set_expire_after_seconds(txn, &db, &name, id, seconds)?;
                if let Some(old) = old {
                    reply.insert("expireAfterSeconds_old", old);
                }
                reply.insert("expireAfterSeconds_new", seconds);
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
    fn render(&self) -> String {
        match self {
            Selector::Key(key) => render_document(key),
            Selector::Name(name) => name.clone(),
        }
    }
}
