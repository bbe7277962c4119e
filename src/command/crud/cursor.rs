//! Cursor replies: the first batch of a command's cursor, `getMore` and `killCursors`.

use crate::command::args::{check_fields, optional_array, optional_i64, wrong_type};
use crate::command::session_id::SessionId;
use crate::command::spec::Spec;
use crate::command::{Request, Shared};
use crate::engine::catalog::collection_arg;
use crate::engine::cursor::{Cursor, Item};
use crate::error::{Error, ErrorCode, Result};
use crate::status::OpKind;
use bson::{doc, Bson, Document, RawArrayBuf, RawDocumentBuf};

pub type SizedDocs = Box<dyn Iterator<Item = Result<Item>> + Send>;

/// Replies `{cursor: {id, ns, firstBatch}, ok: 1}`, keeping the cursor open if documents remain.
pub fn first_batch_reply(
    shared: &Shared,
    mut cursor: Cursor,
    now: i64,
    batch_size: Option<usize>,
    single_batch: bool,
) -> Result<RawDocumentBuf> {
    let (batch, exhausted) = cursor.next_batch(now, batch_size)?;
    let ns = cursor.ns.clone();
    let token = cursor.resume_token();
    let id = if exhausted || single_batch {
        0
    } else {
        shared.engine.cursors.register(cursor)?
    };
    Ok(cursor_reply(id, &ns, "firstBatch", batch, token))
}

/// `{cursor: {<field>: batch, postBatchResumeToken?, id, ns}, ok: 1}`, built from the batch's
/// encoded documents without decoding them; a change stream's cursor adds the token to resume
/// after the batch.
pub fn cursor_reply(
    id: i64,
    ns: &str,
    field: &str,
    batch: Vec<RawDocumentBuf>,
    resume_token: Option<Document>,
) -> RawDocumentBuf {
    let mut documents = RawArrayBuf::new();
    for doc in batch {
        documents.push(doc);
    }
    let mut cursor = RawDocumentBuf::new();
    if let Some(token) = resume_token {
        if let Ok(token) = RawDocumentBuf::from_document(&token) {
            cursor.append(field, documents);
            cursor.append("postBatchResumeToken", token);
            cursor.append("id", id);
            cursor.append("ns", ns);
            let mut reply = RawDocumentBuf::new();
            reply.append("cursor", cursor);
            reply.append("ok", 1.0);
            return reply;
        }
    }
    cursor.append("id", id);
    cursor.append("ns", ns);
    cursor.append(field, documents);
    let mut reply = RawDocumentBuf::new();
    reply.append("cursor", cursor);
    reply.append("ok", 1.0);
    reply
}

/// `getMore`'s own fields (mongod 7.0's `getMore.idl`), read in one pass by [`Spec`].
#[derive(Debug, Default)]
pub struct GetMoreSpec {
    id: i64,
    collection: String,
    /// `None`: the cursor's default (also for 0).
    batch_size: Option<usize>,
    /// Whether `maxTimeMS` (the envelope's) was sent: only an awaitData cursor takes it.
    max_time_ms: bool,
}

impl GetMoreSpec {
    /// Reads `cmd`: an unknown field first, then the cursor id, the collection and the batch
    /// size, in that order.
    pub fn read(cmd: &Document) -> Result<GetMoreSpec> {
        let mut spec = Spec::new("getMore", cmd);
        let collection = spec.take("collection");
        let max_time_ms = spec.take("maxTimeMS").is_some();
        spec.take("batchSize");
        // Sent by mongod's own members: known, meaningless on one node.
        for field in ["term", "lastKnownCommittedOpTime"] {
            spec.take(field);
        }
        spec.finish()?;
        let id = match cmd.get("getMore") {
            Some(Bson::Int64(id)) => *id,
            Some(other) => return Err(wrong_type("getMore", "getMore", other, "long")),
            None => return Err(Error::failed_to_parse("getMore requires a cursor id")),
        };
        let collection = collection_arg(collection, "getMore")?.to_owned();
        let batch_size = match optional_i64(cmd, "getMore", "batchSize")? {
            Some(n) if n < 0 => {
                return Err(Error::bad_value(format!(
                    "BatchSize value must be non-negative, but received: {n}"
                )))
            }
            Some(0) | None => None,
            Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        };
        Ok(GetMoreSpec {
            id,
            collection,
            batch_size,
            max_time_ms,
        })
    }

    pub fn id(&self) -> i64 {
        self.id
    }

    pub fn collection(&self) -> &str {
        &self.collection
    }
}

pub fn get_more(shared: &Shared, req: &Request<'_>, spec: &GetMoreSpec) -> Result<RawDocumentBuf> {
    let (id, coll, batch_size) = (spec.id, spec.collection.as_str(), spec.batch_size);
    shared.counters.count(OpKind::GetMore, 1);
    let ns = format!("{}.{coll}", req.db);
    let Some(mut cursor) = shared.engine.cursors.take(id) else {
        return Err(Error::new(
            ErrorCode::CursorNotFound,
            format!("cursor id {id} not found"),
        ));
    };
    if cursor.ns != ns {
        let owner = cursor.ns.clone();
        shared.engine.cursors.put_back(id, cursor);
        return Err(Error::new(
            ErrorCode::Unauthorized,
            format!("Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {owner}"),
        ));
    }
    let owner = match shared.sessions.cursor_owner(id) {
        Ok(owner) => owner,
        Err(e) => {
            shared.engine.cursors.put_back(id, cursor);
            return Err(e);
        }
    };
    if let Err(e) = same_session(id, owner, req.session.session) {
        shared.engine.cursors.put_back(id, cursor);
        return Err(e);
    }
    if spec.max_time_ms && !cursor.is_tailable() {
        // Only a change stream's cursor awaits data; a find's own maxTimeMS budget carries
        // over instead.
        shared.engine.cursors.put_back(id, cursor);
        return Err(Error::bad_value(
            "cannot set maxTimeMS on getMore command for a non-awaitData cursor",
        ));
    }
    cursor.resume(&req.interrupt);
    // A failed batch (including MaxTimeMSExpired and Interrupted) drops the cursor, as in mongod.
    let (batch, exhausted) = match cursor.next_batch(shared.engine.now(), batch_size) {
        Ok(batch) => batch,
        Err(e) => {
            shared.engine.cursors.release(id);
            return Err(e);
        }
    };
    let token = cursor.resume_token();
    let reply_id = if exhausted {
        shared.engine.cursors.release(id);
        0
    } else {
        shared.engine.cursors.put_back(id, cursor);
        id
    };
    Ok(cursor_reply(reply_id, &ns, "nextBatch", batch, token))
}

/// Only the session a cursor was opened in may continue it, and a cursor opened outside a
/// session only outside one (mongod's 50736, 50737, 50738).
fn same_session(id: i64, owner: Option<SessionId>, caller: Option<SessionId>) -> Result<()> {
    let which = "Cannot run getMore on cursor";
    match (owner, caller) {
        (None, Some(caller)) => Err(Error::new(
            ErrorCode::Location50736,
            format!("{which} {id}, which was not created in a session, in session {caller}"),
        )),
        (Some(owner), None) => Err(Error::new(
            ErrorCode::Location50737,
            format!("{which} {id}, which was created in session {owner}, without an lsid"),
        )),
        (Some(owner), Some(caller)) if owner != caller => Err(Error::new(
            ErrorCode::Location50738,
            format!("{which} {id}, which was created in session {owner}, in session {caller}"),
        )),
        _ => Ok(()),
    }
}

pub fn kill_cursors(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let cmd = req.body;
    check_fields(cmd, "killCursors", &["cursors"])?;
    collection_arg(cmd.get("killCursors"), "killCursors")?;
    let ids = optional_array(cmd, "killCursors", "cursors")?.ok_or_else(|| {
        Error::failed_to_parse("BSON field 'killCursors.cursors' is missing but a required field")
    })?;
    let mut killed = Vec::new();
    let mut not_found = Vec::new();
    for id in ids {
        let Bson::Int64(id) = id else {
            return Err(wrong_type("killCursors", "cursors", id, "long"));
        };
        if shared.engine.cursors.kill(*id) {
            killed.push(Bson::Int64(*id));
        } else {
            not_found.push(Bson::Int64(*id));
        }
    }
    Ok(doc! {
        "cursorsKilled": killed,
        "cursorsNotFound": not_found,
        "cursorsAlive": Bson::Array(Vec::new()),
        "cursorsUnknown": Bson::Array(Vec::new()),
        "ok": 1.0,
    })
}
