//! Whole commands through the wire codec and the command layer's `execute`, on an in-process
//! engine: envelope checks, typed argument parsing of every CRUD, index and cursor command, planning and
//! execution. Each document of the input is one command, run in order. When a document's first
//! key is not one of `server::COMMANDS`, a command chosen by that key's length is put before it
//! (on the seeded collection), so generated documents run too. A `getMore` or `killCursors`
//! naming cursor id 1 gets the id of the last cursor an earlier command of the input left
//! open, so batches after the first are reached; the input's cursors are closed after it. Any reply is fine, a panic or an abort is not.
#![no_main]

use bson::{doc, Bson, Document};
use libfuzzer_sys::fuzz_target;
use mayfly::command::Reply;
use mayfly_fuzz::server;

/// The id of the cursor a reply left open, if any.
fn open_cursor(reply: &Reply) -> Option<i64> {
    let id = match reply {
        Reply::Document(d) => d.get_document("cursor").ok()?.get_i64("id").ok()?,
        Reply::Raw(r) => r.get_document("cursor").ok()?.get_i64("id").ok()?,
    };
    (id != 0).then_some(id)
}

fn with_cursor(mut body: Document, cursor: Option<i64>) -> Document {
    let Some(id) = cursor else { return body };
    if body.get("getMore") == Some(&Bson::Int64(1)) {
        body.insert("getMore", id);
    }
    if let Ok(ids) = body.get_array_mut("cursors") {
        for item in ids.iter_mut() {
            if *item == Bson::Int64(1) {
                *item = Bson::Int64(id);
            }
        }
    }
    body
}

fn run(data: &[u8]) {
    let mut cursor = None;
    let mut opened = Vec::new();
    for body in mayfly_fuzz::documents(data) {
        let first = body.keys().next().cloned().unwrap_or_default();
        let command = if server::allowed(&first) {
            body
        } else {
            let commands = server::COMMANDS;
            let Some(name) = commands.get(first.len() % commands.len()) else {
                return;
            };
            let mut command = Document::new();
            command.insert(*name, server::SEEDED);
            command.extend(body);
            command
        };
        let Some(reply) = server::run(with_cursor(command, cursor)) else {
            continue;
        };
        if let Some(id) = open_cursor(&reply) {
            cursor = Some(id);
            opened.push(Bson::Int64(id));
        }
    }
    // Cursors hold snapshots and the manual clock never times them out: close them so a long
    // run does not pile them up.
    if !opened.is_empty() {
        for collection in [server::SEEDED, "c"] {
            let _ = server::run(doc! {"killCursors": collection, "cursors": opened.clone()});
        }
    }
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
