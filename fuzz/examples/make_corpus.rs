//! Writes the checked-in seed corpus, fuzz/corpus/<target>/: realistic driver messages and
//! documents, encoded the way each target reads its input (`mayfly_fuzz::encode` for the BSON
//! targets, whole wire messages for `wire_codec`). Run from fuzz/:
//! `cargo run --example make_corpus` (files are named by content, so re-running adds only
//! what changed). Also writes the dictionary, fuzz/mongo.dict.

use bson::{doc, oid::ObjectId, Bson, Decimal128, Document, Regex, Timestamp};
use mayfly::wire::{client, Compressor};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;

fn write(target: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    std::fs::write(dir.join(format!("seed-{:016x}", h.finish())), bytes).unwrap();
}

fn seeds(target: &str, inputs: &[Vec<Document>]) {
    for docs in inputs {
        write(target, &mayfly_fuzz::encode(docs));
    }
}

/// Documents as applications store them: nested, arrays of documents, every common type.
fn documents() -> Vec<Document> {
    vec![
        doc! {"_id": 1, "a": 1, "b": "x", "tags": ["red", "blue"], "qty": 5},
        doc! {"_id": 2, "a": {"b": [1, 2, {"c": 3}]}, "b": Bson::Null, "qty": 2.5},
        doc! {"_id": ObjectId::from_bytes([7; 12]), "name": "Ann", "age": 34_i64,
        "items": [{"sku": "p1", "qty": 2, "price": Decimal128::from_bytes([0; 16])},
                  {"sku": "p2", "qty": 1}],
        "created": bson::DateTime::from_millis(1_700_000_000_000), "ttl": 60},
        doc! {"_id": "s", "a": [[1], {"b": 2}], "x": {"y": true}, "ts": Timestamp {time: 1, increment: 2}},
        doc! {"_id": 5, "a": [], "b": {}, "re": Regex {pattern: "^ab".into(), options: "i".into()},
        "n": f64::NAN, "big": 9_007_199_254_740_993_i64, "min": Bson::MinKey, "max": Bson::MaxKey},
    ]
}

fn filters() -> Vec<Document> {
    vec![
        doc! {},
        doc! {"a": 1},
        doc! {"a": {"$gt": 0, "$lte": 10}, "b": {"$in": ["x", Bson::Null]}},
        doc! {"$or": [{"a.b": 2}, {"tags": {"$all": ["red"]}}], "qty": {"$exists": true}},
        doc! {"items": {"$elemMatch": {"sku": "p1", "qty": {"$gte": 2}}}},
        doc! {"name": {"$regex": "^a", "$options": "i"}, "age": {"$not": {"$lt": 18}}},
        doc! {"a": {"$size": 2}, "b": {"$type": ["string", "null"]}, "qty": {"$mod": [2, 1]}},
        doc! {"$nor": [{"a": {"$ne": 1}}], "$and": [{"x.y": true}, {"tags.0": "red"}]},
        doc! {"a": {"$eq": [1]}, "b": {"$nin": [1, 2]}, "_id": {"$lt": Bson::MaxKey}},
    ]
}

fn updates() -> Vec<Document> {
    vec![
        doc! {"$set": {"a": 2, "x.y": false}, "$inc": {"qty": 1}},
        doc! {"$unset": {"b": ""}, "$rename": {"name": "fullName"}},
        doc! {"$push": {"tags": {"$each": ["green", "red"], "$position": 0, "$slice": 3, "$sort": 1}}},
        doc! {"$addToSet": {"tags": "red"}, "$pop": {"a": -1}, "$pull": {"items": {"qty": {"$lt": 2}}}},
        doc! {"$set": {"items.$[it].qty": 0}, "$mul": {"qty": 1.5}, "$min": {"age": 18}},
        doc! {"$set": {"a.$": 9}, "$currentDate": {"created": {"$type": "timestamp"}}},
        doc! {"$setOnInsert": {"c": 1}, "$max": {"qty": 10}, "$bit": {"qty": {"and": 3}}},
        doc! {"$pullAll": {"tags": ["red"]}, "$set": {"a.$[]": 0}},
        doc! {"name": "replacement", "qty": 0},
        doc! {"pipeline": [{"$set": {"total": {"$add": ["$qty", 1]}}}, {"$unset": "b"}]},
        doc! {"pipeline": [{"$replaceWith": {"$mergeObjects": ["$$ROOT", {"z": 1}]}}, {"$project": {"a": 1}}]},
    ]
}

fn projections() -> Vec<Document> {
    vec![
        doc! {"a": 1, "b": 1},
        doc! {"_id": 0, "a.b": 1},
        doc! {"items": {"$slice": [1, 1]}, "name": 1},
        doc! {"items": {"$elemMatch": {"qty": {"$gt": 1}}}},
        doc! {"tags": 0, "x": 0},
        doc! {"a": {"$literal": 5}, "n": "$name"},
        doc! {"a.$": 1},
    ]
}

fn pipelines() -> Vec<Vec<Document>> {
    vec![
        vec![
            doc! {"$match": {"a": {"$exists": true}}},
            doc! {"$sort": {"a": 1}},
            doc! {"$limit": 3},
        ],
        vec![
            doc! {"$group": {"_id": "$b", "n": {"$sum": 1}, "q": {"$avg": "$qty"}, "f": {"$first": "$a"}}},
        ],
        vec![
            doc! {"$unwind": {"path": "$tags", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": true}},
            doc! {"$count": "n"},
        ],
        vec![
            doc! {"$project": {"a": 1, "t": {"$cond": [{"$gt": ["$qty", 2]}, "big", "small"]}}},
            doc! {"$skip": 1},
        ],
        vec![
            doc! {"$addFields": {"s": {"$concat": ["$b", "-"]}, "n": {"$size": {"$ifNull": ["$tags", []]}}}},
        ],
        vec![doc! {"$replaceRoot": {"newRoot": {"$mergeObjects": [{"k": 1}, "$x"]}}}],
        vec![doc! {"$sortByCount": "$b"}],
        vec![doc! {"$facet": {"a": [{"$match": {"a": 1}}], "b": [{"$count": "c"}]}}],
        vec![
            doc! {"$lookup": {"from": "seeded", "localField": "a", "foreignField": "a", "as": "j"}},
        ],
        vec![doc! {"$bucket": {"groupBy": "$qty", "boundaries": [0, 3, 10], "default": "other"}}],
        vec![doc! {"$sample": {"size": 2}}, doc! {"$project": {"_id": 0}}],
        vec![doc! {"$match": {"$expr": {"$eq": ["$a", 1]}}}],
        vec![
            doc! {"$group": {"_id": {"b": "$b"}, "p": {"$push": "$a"}, "s": {"$addToSet": "$tags"},
            "hi": {"$max": "$qty"}, "lo": {"$min": "$qty"}, "l": {"$last": "$_id"}}},
            doc! {"$sort": {"_id": -1}},
        ],
        vec![
            doc! {"$match": {"x": {"$exists": true}}},
            doc! {"$replaceWith": "$x"},
        ],
        vec![
            doc! {"$set": {"n": {"$literal": 1}, "c": "$a.b"}},
            doc! {"$unset": ["tags", "x.y"]},
            doc! {"$limit": 4},
        ],
        vec![
            doc! {"$documents": [{"a": 1}, {"a": [2, 3]}]},
            doc! {"$unwind": "$a"},
        ],
    ]
}

fn commands() -> Vec<Document> {
    let docs: Vec<Bson> = documents().into_iter().map(Bson::Document).collect();
    let lsid =
        doc! {"id": bson::Binary {subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![1; 16]}};
    vec![
        doc! {"find": "seeded", "filter": {"a": {"$gte": 1}}, "sort": {"a": -1}, "projection": {"a": 1},
        "limit": 2, "skip": 1, "batchSize": 1, "lsid": lsid.clone()},
        doc! {"find": "seeded", "filter": {"b": "x"}, "hint": "b_-1_qty_1", "singleBatch": true},
        doc! {"find": "seeded", "min": {"a": 0}, "max": {"a": 5}, "hint": {"a": 1}, "returnKey": true},
        doc! {"aggregate": "seeded", "pipeline": [{"$match": {"a": 1}}, {"$group": {"_id": "$b"}}], "cursor": {"batchSize": 1}},
        doc! {"count": "seeded", "query": {"a": {"$exists": true}}, "limit": 3},
        doc! {"distinct": "seeded", "key": "a.b", "query": {}},
        doc! {"insert": "c", "documents": docs, "ordered": false, "writeConcern": {"w": 1, "j": true}},
        doc! {"update": "c", "updates": [
            {"q": {"_id": 1}, "u": {"$set": {"a": 2}}, "upsert": true},
            {"q": {"a": {"$gt": 0}}, "u": {"$inc": {"qty": 1}}, "multi": true},
            {"q": {"items.sku": "p1"}, "u": {"$set": {"items.$[e].qty": 3}}, "arrayFilters": [{"e.sku": "p1"}]},
            {"q": {}, "u": [{"$set": {"z": "$a"}}]},
        ]},
        doc! {"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 1}, {"q": {"b": Bson::Null}, "limit": 0}]},
        doc! {"findAndModify": "c", "query": {"_id": 2}, "update": {"$set": {"b": 1}}, "new": true, "upsert": true, "fields": {"b": 1}},
        doc! {"findAndModify": "c", "query": {"a": 1}, "remove": true, "sort": {"a": 1}},
        doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1, "b": -1}, "name": "ab", "unique": false, "sparse": true},
        {"key": {"_ts": 1}, "name": "ttl", "expireAfterSeconds": 10}]},
        doc! {"dropIndexes": "c", "index": "ab"},
        doc! {"listIndexes": "seeded"},
        doc! {"listCollections": 1, "filter": {"name": "c"}, "nameOnly": true},
        doc! {"explain": {"find": "seeded", "filter": {"a": 1}}, "verbosity": "executionStats"},
        doc! {"getMore": 12345_i64, "collection": "seeded", "batchSize": 2},
        doc! {"killCursors": "seeded", "cursors": [1_i64]},
        doc! {"create": "d"},
        doc! {"collStats": "seeded", "scale": 1024},
        doc! {"hello": 1, "client": {"driver": {"name": "nodejs", "version": "6.9"}, "os": {"type": "Linux"}}},
    ]
}

fn wire() {
    let body = doc! {"hello": 1, "$db": "admin", "client": {"driver": {"name": "PyMongo", "version": "4.10"},
    "os": {"type": "Linux", "name": "Linux"}, "platform": "CPython"}, "compression": ["zstd", "zlib", "snappy"]};
    let find = doc! {"find": "c", "filter": {"a": 1}, "$db": "test", "lsid": {"id": bson::Binary {subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![1; 16]}}};
    let insert = doc! {"insert": "c", "$db": "test", "ordered": true};
    let docs = vec![doc! {"_id": 1, "a": 1}, doc! {"_id": 2, "a": [1, 2]}];
    let plain = client::MsgOptions::default();
    let with_seq = client::MsgOptions {
        sequences: vec![("documents", docs.clone())],
        ..Default::default()
    };
    let checksummed = client::MsgOptions {
        checksum: true,
        ..Default::default()
    };
    let more = client::MsgOptions {
        flags: 2,
        ..Default::default()
    };
    let mut messages = vec![
        client::op_msg(1, &body, &plain).unwrap(),
        client::op_msg(2, &find, &plain).unwrap(),
        client::op_msg(3, &insert, &with_seq).unwrap(),
        client::op_msg(4, &find, &checksummed).unwrap(),
        client::op_msg(5, &insert, &more).unwrap(),
        client::op_query(6, "admin.$cmd", &doc! {"isMaster": 1, "helloOk": true}).unwrap(),
    ];
    for compressor in [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd] {
        let opts = client::MsgOptions {
            compressor: Some(compressor),
            ..Default::default()
        };
        messages.push(client::op_msg(7, &find, &opts).unwrap());
        let opts = client::MsgOptions {
            compressor: Some(compressor),
            sequences: vec![("documents", docs.clone())],
            ..Default::default()
        };
        messages.push(client::op_msg(8, &insert, &opts).unwrap());
    }
    // The deepest nesting a client may send (200 levels with the body), through the codec.
    let mut deep = doc! {"a": 1};
    for _ in 0..197 {
        deep = doc! {"a": deep};
    }
    messages.push(
        client::op_msg(
            9,
            &doc! {"find": "c", "filter": deep, "$db": "test"},
            &plain,
        )
        .unwrap(),
    );
    // Two messages back to back, as a pipelining client sends them.
    let mut pair = messages[1].clone();
    pair.extend_from_slice(&messages[2]);
    messages.push(pair);
    for m in &messages {
        write("wire_codec", m);
    }
}

/// A libFuzzer dictionary: every word of `mayfly_fuzz::WORDS` as a BSON key (NUL-terminated).
fn dictionary() {
    let mut out = String::from(
        "# Written by examples/make_corpus.rs: field, operator and argument names as BSON keys.\n",
    );
    let mut seen = std::collections::BTreeSet::new();
    for word in mayfly_fuzz::WORDS {
        if !word.is_empty() && seen.insert(*word) {
            out.push_str(&format!(
                "\"{}\\x00\"\n",
                word.replace('\\', "\\\\").replace('"', "\\\"")
            ));
        }
    }
    std::fs::write("mongo.dict", out).unwrap();
}

/// SCRAM conversations (selector byte, client-first, 0, client-final, 0, third message) with
/// the fuzz target's credentials: a correct one for each mechanism, with and without
/// `skipEmptyExchange`, and common mistakes.
fn scram() {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use mayfly::auth::credentials::{hmac, salted_password};
    use mayfly::auth::Mechanism;
    for (selector, mechanism) in [(0u8, Mechanism::ScramSha1), (1, Mechanism::ScramSha256)] {
        let first_bare = "n=user,r=clientNonce";
        let nonce = "clientNoncefuzzServerNonce";
        let salt = b"fuzz-salt-16byte";
        let server_first = format!("r={nonce},s={},i=4096", STANDARD.encode(salt));
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{first_bare},{server_first},{without_proof}");
        let salted = salted_password(mechanism, "user", "pencil", salt, 4096).unwrap();
        let client_key = hmac(mechanism, &salted, b"Client Key").unwrap();
        let stored_key = mayfly::auth::credentials::hash(mechanism, &client_key);
        let signature = hmac(mechanism, &stored_key, auth_message.as_bytes()).unwrap();
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let finals = [
            format!("{without_proof},p={}", STANDARD.encode(&proof)),
            format!("{without_proof},p={}", STANDARD.encode([0u8; 20])),
            format!("c=eSws,r={nonce},p={}", STANDARD.encode(&proof)),
            format!("c=biws,r=other,p={}", STANDARD.encode(&proof)),
        ];
        for flag in [0u8, 2] {
            for last in &finals {
                let mut input = vec![selector | flag];
                input.extend_from_slice(format!("n,,{first_bare}").as_bytes());
                input.push(0);
                input.extend_from_slice(last.as_bytes());
                input.push(0);
                write("scram", &input);
            }
        }
        for first in [
            "y,,n=user,r=x",
            "n,a=user,n=user,r=x",
            "p=tls-unique,,n=u,r=x",
            "n,,n=us=2Cer=3D,r=x,e=ext",
        ] {
            let mut input = vec![selector];
            input.extend_from_slice(first.as_bytes());
            write("scram", &input);
        }
    }
}

fn main() {
    dictionary();
    wire();
    scram();
    let docs = documents();
    let with_docs = |first: Document| {
        let mut v = vec![first];
        v.extend(docs.iter().cloned());
        v
    };
    // The deepest nesting a client may send: 98 `$elemMatch` levels over arrays as deep.
    let mut deep_filter = doc! {"a": {"$gt": 1}};
    let mut deep_doc = doc! {"a": 1};
    for _ in 0..98 {
        deep_filter = doc! {"a": {"$elemMatch": deep_filter}};
        deep_doc = doc! {"a": [deep_doc]};
    }
    let mut filter_inputs: Vec<Vec<Document>> = filters().into_iter().map(with_docs).collect();
    filter_inputs.push(vec![deep_filter, deep_doc]);
    seeds("filter", &filter_inputs);
    seeds(
        "projection",
        &projections().into_iter().map(with_docs).collect::<Vec<_>>(),
    );
    let mut update_inputs = Vec::new();
    for (i, u) in updates().into_iter().enumerate() {
        let target = docs[i % docs.len()].clone();
        let mut input = vec![u.clone(), target, doc! {"a": {"$gte": 1}}];
        if u.keys().any(|k| k == "$set") && format!("{u}").contains("$[it]") {
            input.push(doc! {"it.qty": {"$gt": 1}});
        }
        update_inputs.push(input);
        // The same update as an upsert: an empty target, the seed built from the query.
        update_inputs.push(vec![u, doc! {}, doc! {"_id": 7, "a": 1}]);
    }
    seeds("update", &update_inputs);
    seeds("pipeline", &pipelines());
    let mut command_inputs: Vec<Vec<Document>> = commands().into_iter().map(|c| vec![c]).collect();
    // A cursor's later batches: id 1 stands for the cursor the first command left open.
    command_inputs.push(vec![
        doc! {"find": "seeded", "filter": {}, "batchSize": 1, "sort": {"qty": 1}},
        doc! {"getMore": 1_i64, "collection": "seeded", "batchSize": 2},
        doc! {"killCursors": "seeded", "cursors": [1_i64]},
    ]);
    command_inputs.push(vec![
        doc! {"aggregate": "seeded", "pipeline": [{"$unwind": "$tags"}], "cursor": {"batchSize": 0}},
        doc! {"getMore": 1_i64, "collection": "seeded"},
    ]);
    seeds("command_args", &command_inputs);
    let mut key_inputs: Vec<Vec<Document>> = docs.iter().map(|d| vec![d.clone()]).collect();
    key_inputs.push(vec![doc! {"i": 1, "l": 1_i64, "d": 1.0, "n": -0.0, "big": i64::MAX, "e": 1e300,
        "s": "a", "s0": "a\u{0}b", "sym": Bson::Symbol("a".into()), "dec": Decimal128::from_bytes([0; 16]),
        "ninf": f64::NEG_INFINITY, "nan": f64::NAN, "u": Bson::Undefined, "null": Bson::Null}]);
    seeds("key_order", &key_inputs);
    bson_check(&docs);
}

/// Seeds for `bson_check`: each document as it is (first byte 6: depth limit 200), and one with
/// an element of every type, code with scope and old-style binary included (a DBPointer,
/// which `bson` builds only by decoding, is appended as bytes).
fn bson_check(docs: &[Document]) {
    let every_type = doc! {
        "d": 1.5, "s": "x", "o": {"a": 1}, "a": [1, "b"],
        "bin": bson::Binary {subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2]},
        "old": bson::Binary {subtype: bson::spec::BinarySubtype::BinaryOld, bytes: vec![3]},
        "u": Bson::Undefined, "oid": ObjectId::from_bytes([1; 12]), "t": true,
        "dt": bson::DateTime::from_millis(0), "n": Bson::Null,
        "re": Regex {pattern: "a".into(), options: "i".into()},
        "js": Bson::JavaScriptCode("f()".into()), "sym": Bson::Symbol("y".into()),
        "jss": bson::JavaScriptCodeWithScope {code: "g()".into(), scope: doc! {"v": [1]}},
        "i": 1, "ts": Timestamp {time: 1, increment: 2}, "l": 2_i64,
        "dec": Decimal128::from_bytes([0; 16]), "max": Bson::MaxKey, "min": Bson::MinKey,
    };
    for doc in docs {
        let mut input = vec![6u8];
        doc.to_writer(&mut input).unwrap();
        write("bson_check", &input);
    }
    let mut bytes = bson::to_vec(&every_type).unwrap();
    bytes.pop();
    bytes.extend_from_slice(&[0x0c, b'p', 0, 2, 0, 0, 0, b'n', 0]);
    bytes.extend_from_slice(&[9; 12]);
    bytes.push(0);
    let len = bytes.len() as i32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    write("bson_check", &[&[6u8][..], &bytes].concat());
}
