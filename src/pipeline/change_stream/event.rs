//! Change events from operation-log entries, in mongod 7.0's shape: `insert`, `update` (with its
//! `updateDescription`), `replace`, `delete`, `drop`, `rename`, `dropDatabase` and `invalidate`,
//! and with `showExpandedEvents` also `create`, `createIndexes`, `dropIndexes` and `modify`.
//!
//! Owns: which entries a stream's scope sees, and the event documents. Does not own: reading
//! the log or resuming (`mod.rs`), the `$v: 2` diff (`query::diff`).

use super::token::{Kind, Token};
use crate::error::Result;
use crate::query::diff::update_description;
use bson::{doc, Bson, Document, Timestamp};

/// What a stream watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Collection { db: String, coll: String },
    Database { db: String },
    Cluster,
}

impl Scope {
    /// Whether a change to `db.coll` is seen: system collections and the internal databases
    /// are never seen by database and cluster streams.
    fn sees(&self, db: &str, coll: &str) -> bool {
        match self {
            Scope::Collection { db: d, coll: c } => d == db && c == coll,
            Scope::Database { db: d } => d == db && !coll.starts_with("system."),
            Scope::Cluster => !is_internal(db) && !coll.starts_with("system."),
        }
    }

    fn sees_database(&self, db: &str) -> bool {
        match self {
            Scope::Collection { db: d, .. } | Scope::Database { db: d } => d == db,
            Scope::Cluster => !is_internal(db),
        }
    }
}

fn is_internal(db: &str) -> bool {
    matches!(db, "admin" | "config" | "local")
}

/// The stream's options that shape its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// `fullDocument: "updateLookup"`: update events carry the document as it is now.
    pub update_lookup: bool,
    pub expanded: bool,
    /// Update events carry the logged post-image, if any (`fullDocument`).
    pub post_image: bool,
    /// Update, replace and delete events carry the logged pre-image, if any
    /// (`fullDocumentBeforeChange`).
    pub pre_image: bool,
}

/// One event of an entry, with its token; `invalidates` when the stream ends after it.
pub struct Event {
    pub token: Token,
    pub doc: Document,
    pub invalidates: bool,
}

/// Looks a document up by its `documentKey` for `updateLookup`: the collection `db.coll` as it
/// is now.
pub type Lookup<'a> = dyn FnMut(&str, &str, &Document) -> Result<Option<Document>> + 'a;

/// The events entry `entry` (logged at `time`) gives a stream of `scope`: none, one, or an
/// event followed by `invalidate`.
pub fn events(
    scope: &Scope,
    shape: Shape,
    time: Timestamp,
    entry: &Document,
    lookup: &mut Lookup<'_>,
) -> Result<Vec<Event>> {
    let ns = entry.get_str("ns").unwrap_or_default();
    let (db, coll) = ns.split_once('.').unwrap_or((ns, ""));
    let o = entry.get_document("o").cloned().unwrap_or_default();
    let wall = entry.get("wall").cloned().unwrap_or(Bson::Null);
    let head = |operation: &str| {
        doc! {
            "_id": Token::new(time, Kind::Event).to_document(),
            "operationType": operation,
            "clusterTime": time,
            "wallTime": wall.clone(),
        }
    };
    let with_uuid = |mut event: Document| {
        if shape.expanded {
            if let Some(ui) = entry.get("ui") {
                event.insert("collectionUUID", ui.clone());
            }
        }
        event
    };
    let with_images = |mut event: Document| {
        if shape.pre_image {
            if let Some(pre) = entry.get("preImage") {
                event.insert("fullDocumentBeforeChange", pre.clone());
            }
        }
        event
    };
    let one = |mut doc: Document| {
        // A transaction's change names its session and transaction, as on mongod.
        for field in ["lsid", "txnNumber"] {
            if let Some(value) = entry.get(field) {
                doc.insert(field, value.clone());
            }
        }
        Ok(vec![Event {
            token: Token::new(time, Kind::Event),
            doc,
            invalidates: false,
        }])
    };
    let op = entry.get_str("op").unwrap_or_default();
    if op != "c" && !scope.sees(db, coll) {
        return Ok(Vec::new());
    }
    let namespace = doc! {"db": db, "coll": coll};
    match op {
        "i" => {
            let mut event = head("insert");
            event.insert("fullDocument", o.clone());
            event.insert("ns", namespace);
            // A partitioned collection's insert names its document with its shard key in `o2`.
            let key = match entry.get_document("o2") {
                Ok(key) => key.clone(),
                Err(_) => doc! {"_id": id_of(&o)},
            };
            event.insert("documentKey", key);
            one(with_uuid(event))
        }
        "u" => {
            let key = entry.get_document("o2").cloned().unwrap_or_default();
            if o.contains_key("$v") {
                let diff = o.get_document("diff").cloned().unwrap_or_default();
                let mut event = head("update");
                event.insert("ns", namespace);
                event.insert("documentKey", key.clone());
                event.insert("updateDescription", update_description(&diff));
                if shape.update_lookup {
                    let now = lookup(db, coll, &key)?;
                    event.insert("fullDocument", now.map_or(Bson::Null, Bson::Document));
                } else if let (true, Some(post)) = (shape.post_image, entry.get("postImage")) {
                    event.insert("fullDocument", post.clone());
                }
                one(with_images(with_uuid(event)))
            } else {
                let mut event = head("replace");
                event.insert("fullDocument", o.clone());
                event.insert("ns", namespace);
                event.insert("documentKey", key);
                one(with_images(with_uuid(event)))
            }
        }
        "d" => {
            // `o` is the deleted document's `documentKey`.
            let mut event = head("delete");
            event.insert("ns", namespace);
            event.insert("documentKey", o);
            one(with_images(with_uuid(event)))
        }
        "c" => command_events(scope, shape, time, db, &o, head, with_uuid),
        _ => Ok(Vec::new()),
    }
}

fn id_of(doc: &Document) -> Bson {
    doc.get("_id").cloned().unwrap_or(Bson::Null)
}

fn command_events(
    scope: &Scope,
    shape: Shape,
    time: Timestamp,
    db: &str,
    o: &Document,
    head: impl Fn(&str) -> Document,
    with_uuid: impl Fn(Document) -> Document,
) -> Result<Vec<Event>> {
    let event = |doc: Document| Event {
        token: Token::new(time, Kind::Event),
        doc,
        invalidates: false,
    };
    let invalidate = || {
        let mut doc = head("invalidate");
        doc.insert("_id", Token::new(time, Kind::Invalidate).to_document());
        Event {
            token: Token::new(time, Kind::Invalidate),
            doc,
            invalidates: true,
        }
    };
    let collection_scope = matches!(scope, Scope::Collection { .. });
    if let Ok(coll) = o.get_str("drop") {
        if !scope.sees(db, coll) {
            return Ok(Vec::new());
        }
        let mut doc = head("drop");
        doc.insert("ns", doc! {"db": db, "coll": coll});
        let mut out = vec![event(with_uuid(doc))];
        if collection_scope {
            out.push(invalidate());
        }
        return Ok(out);
    }
    if let Ok(from) = o.get_str("renameCollection") {
        let to = o.get_str("to").unwrap_or_default();
        let (from_db, from_coll) = from.split_once('.').unwrap_or((from, ""));
        let (to_db, to_coll) = to.split_once('.').unwrap_or((to, ""));
        let seen_from = scope.sees(from_db, from_coll);
        // A database or cluster stream also sees a rename into what it watches.
        let seen_to = !collection_scope && scope.sees(to_db, to_coll);
        if !seen_from && !seen_to {
            return Ok(Vec::new());
        }
        let mut doc = head("rename");
        doc.insert("ns", doc! {"db": from_db, "coll": from_coll});
        doc.insert("to", doc! {"db": to_db, "coll": to_coll});
        if shape.expanded {
            doc.insert(
                "operationDescription",
                doc! {"to": {"db": to_db, "coll": to_coll}, "dropTarget": o.get_bool("dropTarget").unwrap_or(false)},
            );
        }
        let mut out = vec![event(with_uuid(doc))];
        if collection_scope {
            out.push(invalidate());
        }
        return Ok(out);
    }
    if o.contains_key("dropDatabase") {
        if collection_scope || !scope.sees_database(db) {
            return Ok(Vec::new());
        }
        let mut doc = head("dropDatabase");
        doc.insert("ns", doc! {"db": db});
        let mut out = vec![event(doc)];
        if matches!(scope, Scope::Database { .. }) {
            out.push(invalidate());
        }
        return Ok(out);
    }
    if !shape.expanded {
        return Ok(Vec::new());
    }
    let expanded = |kind: &str, coll: &str, description: Document| {
        if !scope.sees(db, coll) {
            return Vec::new();
        }
        let mut doc = head(kind);
        doc.insert("ns", doc! {"db": db, "coll": coll});
        doc.insert("operationDescription", description);
        vec![event(with_uuid(doc))]
    };
    if let Ok(coll) = o.get_str("create") {
        let mut description = o.clone();
        description.remove("create");
        description.insert("idIndex", doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"});
        return Ok(expanded("create", coll, description));
    }
    if let Ok(coll) = o.get_str("createIndexes") {
        let mut spec = o.clone();
        spec.remove("createIndexes");
        return Ok(expanded("createIndexes", coll, doc! {"indexes": [spec]}));
    }
    if let Ok(coll) = o.get_str("collMod") {
        let mut changed = o.clone();
        changed.remove("collMod");
        if !scope.sees(db, coll) {
            return Ok(Vec::new());
        }
        let mut doc = head("modify");
        doc.insert("ns", doc! {"db": db, "coll": coll});
        doc.insert(
            "updateDescription",
            doc! {"updatedFields": changed, "removedFields": []},
        );
        return Ok(vec![event(with_uuid(doc))]);
    }
    if let Ok(coll) = o.get_str("dropIndexes") {
        let name = o.get_str("index").unwrap_or_default();
        return Ok(expanded(
            "dropIndexes",
            coll,
            doc! {"indexes": [{"name": name}]},
        ));
    }
    Ok(Vec::new())
}
