//! Turns fuzzer bytes into the BSON documents the targets feed to mayfly.
//!
//! Owns: the two input encodings every BSON-taking target shares, the words that steer
//! generated documents towards real operators, and the thread every input runs on (the
//! server's stack size, overflows saved as crashes: [`on_server_stack`]). Does not own: what a target does with the
//! documents (`fuzz_targets/`), nor the in-process server the command targets drive (`server`).
//!
//! An input's first byte picks its encoding:
//! - even: the rest is a sequence of length-prefixed BSON documents, as drivers send them (the
//!   seed corpus is written this way, so mutations start from realistic commands); decoding
//!   stops at the first invalid one, or the first nested deeper than a client may send.
//! - odd: the rest drives [`arbitrary::Unstructured`], which builds documents that are always
//!   valid BSON, with keys drawn mostly from [`WORDS`], so mutations reach deep code instead of
//!   failing at the BSON decoder.

mod overflow;
pub mod server;

use arbitrary::{Result, Unstructured};
use bson::spec::BinarySubtype;
use bson::{
    Binary, Bson, Decimal128, Document, JavaScriptCodeWithScope, RawBsonRef, RawDocument, Regex,
    Timestamp,
};

/// The most documents one input yields.
const MAX_DOCUMENTS: usize = 8;
/// How deep generated values nest.
const MAX_DEPTH: u32 = 24;
/// The deepest document a client may send (mayfly's documented wire limit: 200 levels).
/// BSON-encoded inputs nested deeper are skipped: refusing them is the wire codec's job, fuzzed
/// by `wire_codec` and, through it, by the command targets.
pub const MAX_CLIENT_DEPTH: usize = 200;

/// Field names, operators, stage names and argument names seen in real commands.
pub const WORDS: &[&str] = &[
    "_id",
    "a",
    "b",
    "c",
    "x",
    "a.b",
    "a.0",
    "a.b.c",
    "b.1",
    "a.$",
    "a.$[]",
    "a.$[x]",
    "$[]",
    "$[x]",
    "x.y",
    "tags",
    "qty",
    "name",
    "ttl",
    "_ts",
    "",
    // query operators
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$in",
    "$nin",
    "$and",
    "$or",
    "$nor",
    "$not",
    "$exists",
    "$type",
    "$size",
    "$all",
    "$elemMatch",
    "$regex",
    "$options",
    "$mod",
    "$expr",
    "$where",
    "$text",
    "$comment",
    "$jsonSchema",
    "$bitsAllSet",
    "$geoWithin",
    "$alwaysTrue",
    "$alwaysFalse",
    "$sampleRate",
    // update operators
    "$set",
    "$unset",
    "$inc",
    "$mul",
    "$min",
    "$max",
    "$rename",
    "$setOnInsert",
    "$currentDate",
    "$push",
    "$addToSet",
    "$pop",
    "$pull",
    "$pullAll",
    "$each",
    "$position",
    "$slice",
    "$sort",
    "$bit",
    "and",
    "or",
    "xor",
    "$timestamp",
    "$date",
    // projection
    "$meta",
    "textScore",
    // stages
    "$match",
    "$project",
    "$addFields",
    "$group",
    "$sort",
    "$limit",
    "$skip",
    "$unwind",
    "$count",
    "$replaceRoot",
    "$replaceWith",
    "$sortByCount",
    "$facet",
    "$lookup",
    "$out",
    "$merge",
    "$sample",
    "$bucket",
    "$documents",
    "$collStats",
    "$indexStats",
    "$unionWith",
    "$redact",
    "$densify",
    "$fill",
    "$setWindowFields",
    "$graphLookup",
    "$limit",
    // expressions and accumulators
    "$sum",
    "$avg",
    "$first",
    "$last",
    "$push",
    "$literal",
    "$cond",
    "$ifNull",
    "$concat",
    "$add",
    "$subtract",
    "$multiply",
    "$divide",
    "$toString",
    "$arrayElemAt",
    "$size",
    "$map",
    "$filter",
    "$reduce",
    "$let",
    "$range",
    "$switch",
    "$objectToArray",
    "$mergeObjects",
    "$$ROOT",
    "$$CURRENT",
    "$$NOW",
    "$a",
    "$b",
    "$a.b",
    "$$x",
    "$x",
    "path",
    "includeArrayIndex",
    "preserveNullAndEmptyArrays",
    "newRoot",
    "input",
    "as",
    "in",
    "vars",
    "cond",
    "then",
    "else",
    "if",
    "initialValue",
    // command arguments
    "find",
    "aggregate",
    "count",
    "distinct",
    "insert",
    "update",
    "delete",
    "findAndModify",
    "createIndexes",
    "dropIndexes",
    "listIndexes",
    "explain",
    "getMore",
    "killCursors",
    "filter",
    "projection",
    "sort",
    "skip",
    "limit",
    "batchSize",
    "singleBatch",
    "hint",
    "min",
    "max",
    "returnKey",
    "showRecordId",
    "collation",
    "locale",
    "let",
    "comment",
    "maxTimeMS",
    "allowDiskUse",
    "readConcern",
    "writeConcern",
    "w",
    "j",
    "ordered",
    "documents",
    "updates",
    "deletes",
    "q",
    "u",
    "upsert",
    "multi",
    "arrayFilters",
    "query",
    "remove",
    "new",
    "fields",
    "bypassDocumentValidation",
    "pipeline",
    "cursor",
    "key",
    "keys",
    "indexes",
    "unique",
    "sparse",
    "expireAfterSeconds",
    "partialFilterExpression",
    "index",
    "verbosity",
    "collection",
    "nameOnly",
    "$db",
    "lsid",
    "txnNumber",
];

/// The stack size of the server's threads (tokio's default, for its workers and blocking pool).
pub const SERVER_STACK: usize = 2 * 1024 * 1024;

/// Runs `f` on a fresh thread with the server's stack size, so recursion that would overflow
/// in the server overflows here too. A thread, not the fuzzer's own main thread, because Rust
/// A thread, not libFuzzer's main thread, so the depth at which it overflows does not depend on
/// the shell's stack limit; an overflow is reported and saved as a crash (`overflow`).
pub fn on_server_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .stack_size(SERVER_STACK)
            .spawn_scoped(scope, || overflow::guarded(f));
        match thread.map(|t| t.join()) {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(e) => {
                eprintln!("cannot start a fuzzing thread: {e}");
                std::process::abort()
            }
        }
    })
}

/// Decodes an input into at most [`MAX_DOCUMENTS`] documents (see the module comment).
pub fn documents(data: &[u8]) -> Vec<Document> {
    match data.split_first() {
        Some((mode, rest)) if mode % 2 == 0 => bson_sequence(rest),
        Some((_, rest)) => generated(rest),
        None => Vec::new(),
    }
}

/// Encodes documents as an input of the BSON-sequence kind (for seeds).
pub fn encode(docs: &[Document]) -> Vec<u8> {
    let mut out = vec![0u8];
    for doc in docs {
        // A Document built in memory always serializes.
        let _ = doc.to_writer(&mut out);
    }
    out
}

fn bson_sequence(mut rest: &[u8]) -> Vec<Document> {
    let mut docs = Vec::new();
    while docs.len() < MAX_DOCUMENTS && rest.len() >= 5 {
        let len = rest
            .get(..4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(i32::from_le_bytes)
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(0);
        let Some(bytes) = rest.get(..len) else { break };
        if !within_client_depth(bytes) {
            break;
        }
        let Ok(doc) = Document::from_reader(bytes) else {
            break;
        };
        docs.push(doc);
        rest = rest.get(len..).unwrap_or_default();
    }
    docs
}

/// Whether `bytes` is a BSON document nested at most [`MAX_CLIENT_DEPTH`] levels, checked
/// without recursion (decoding a deeper one would overflow the stack before any check).
fn within_client_depth(bytes: &[u8]) -> bool {
    fn values(doc: &RawDocument) -> Option<Vec<RawBsonRef<'_>>> {
        doc.iter().map(|e| e.ok().map(|(_, v)| v)).collect()
    }
    let Some(top) = RawDocument::from_bytes(bytes).ok().and_then(values) else {
        return false;
    };
    let mut stack = vec![(top, 1usize)];
    while let Some((level, depth)) = stack.pop() {
        if depth > MAX_CLIENT_DEPTH {
            return false;
        }
        for value in level {
            let children = match value {
                RawBsonRef::Document(d) => values(d),
                RawBsonRef::Array(a) => a.into_iter().map(|v| v.ok()).collect(),
                RawBsonRef::JavaScriptCodeWithScope(c) => values(c.scope),
                _ => continue,
            };
            let Some(children) = children else {
                return false;
            };
            stack.push((children, depth + 1));
        }
    }
    true
}

fn generated(rest: &[u8]) -> Vec<Document> {
    let mut u = Unstructured::new(rest);
    let mut docs = Vec::new();
    while docs.len() < MAX_DOCUMENTS && !u.is_empty() {
        match document(&mut u, 0) {
            Ok(doc) => docs.push(doc),
            Err(_) => break,
        }
    }
    docs
}

/// A generated key: usually one of [`WORDS`], sometimes any string.
pub fn key(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(7, 8)? {
        Ok((*u.choose(WORDS)?).to_owned())
    } else {
        u.arbitrary()
    }
}

/// A generated document of up to a handful of fields.
pub fn document(u: &mut Unstructured<'_>, depth: u32) -> Result<Document> {
    let mut doc = Document::new();
    let fields = u.int_in_range(0..=4u8)?;
    for _ in 0..fields {
        let k = key(u)?;
        let v = value(u, depth + 1)?;
        doc.insert(k, v);
    }
    Ok(doc)
}

/// A generated value of any BSON type, edge cases favoured.
pub fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Bson> {
    let nested = depth < MAX_DEPTH;
    let choice = u.int_in_range(0..=25u8)?;
    Ok(match choice {
        0 | 1 if nested => Bson::Document(document(u, depth)?),
        2 | 3 if nested => {
            let n = u.int_in_range(0..=4u8)?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(value(u, depth + 1)?);
            }
            Bson::Array(items)
        }
        4 => Bson::Int32(u.int_in_range(-3..=3)?),
        5 => Bson::Int32(u.arbitrary()?),
        6 => Bson::Int64(u.arbitrary()?),
        7 => Bson::Double(*u.choose(&[
            0.0,
            -0.0,
            1.5,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
        ])?),
        8 => Bson::Double(u.arbitrary()?),
        9 => Bson::Decimal128(Decimal128::from_bytes(u.arbitrary()?)),
        10 | 11 => Bson::String((*u.choose(WORDS)?).to_owned()),
        12 => Bson::String(u.arbitrary()?),
        13 => Bson::Boolean(u.arbitrary()?),
        14 => Bson::Null,
        15 => Bson::DateTime(bson::DateTime::from_millis(u.arbitrary()?)),
        16 => Bson::RegularExpression(Regex {
            pattern: u.arbitrary()?,
            options: (*u.choose(&["", "i", "m", "x", "s", "imsx", "u"])?).to_owned(),
        }),
        17 => Bson::Binary(Binary {
            subtype: BinarySubtype::from(u.arbitrary::<u8>()?),
            bytes: u.arbitrary()?,
        }),
        18 => Bson::ObjectId(bson::oid::ObjectId::from_bytes(u.arbitrary()?)),
        19 => Bson::Timestamp(Timestamp {
            time: u.arbitrary()?,
            increment: u.arbitrary()?,
        }),
        20 => u
            .choose(&[Bson::MinKey, Bson::MaxKey, Bson::Undefined])?
            .clone(),
        21 => Bson::Symbol(u.arbitrary()?),
        22 => Bson::JavaScriptCode(u.arbitrary()?),
        23 if nested => Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
            code: u.arbitrary()?,
            scope: document(u, depth)?,
        }),
        _ => Bson::Int32(u.int_in_range(0..=100)?),
    })
}
