//! Both TTL models against a reference model: random documents whose `a` and `b` hold dates,
//! arrays mixing dates and other values, non-dates or nothing, and whose own `ttl` is valid,
//! invalid or absent; a collection with or without a `_ts` TTL and with one or two date TTL
//! indexes (created before or after the documents); random clock advances, rewrites, re-inserts,
//! deletes and reaper passes. After every step each read path — a collection scan, the date
//! index's scan, point reads, `countDocuments`, `estimatedDocumentCount`, `distinct`, `$group`
//! and a `$lookup` from another collection — returns exactly the documents the model says are
//! live, writes match only those (TTL-19), and a reaper pass deletes exactly the expired ones.
//!
//! The model judges each document by the rules alone (TTL-10…TTL-14 for `_ts`, TTL-26 for the
//! date indexes), not by the server's code. Dates are whole seconds of the server's clock, so the
//! test does not depend on how a date's milliseconds are rounded. Cases are drawn from a seeded
//! generator; a failure names its seed and the steps taken.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::ttl::{advance, now, reaper};
use common::TestServer;
use futures::TryStreamExt;
use mongodb::{Collection, Database};
use std::collections::{BTreeMap, BTreeSet};

/// Cases and steps: about 2,000 checked states.
const CASES: u64 = 40;
const STEPS: usize = 10;

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }
}

/// A stored document as the model knows it: its last write (`_ts`, TTL-15) and its body.
#[derive(Debug, Clone)]
struct Stored {
    ts: i64,
    body: Document,
}

#[derive(Debug)]
struct Model {
    /// The `_ts` TTL index's value, if the collection has one.
    collection_ttl: Option<i32>,
    /// Date TTL indexes: field and `expireAfterSeconds`.
    dated: Vec<(&'static str, i64)>,
    /// Every document physically stored, expired or not, by `_id`.
    stored: BTreeMap<i32, Stored>,
}

impl Model {
    /// TTL-11: a valid own `ttl` (Int32, an Int64 or integral Double that fits Int32; -1 or >= 1).
    fn own_ttl(body: &Document) -> Option<i64> {
        let value = match body.get("ttl")? {
            Bson::Int32(n) => i64::from(*n),
            Bson::Int64(n) if i32::try_from(*n).is_ok() => *n,
            Bson::Double(d) if d.fract() == 0.0 && d.abs() <= f64::from(i32::MAX) => *d as i64,
            _ => return None,
        };
        (value == -1 || value >= 1).then_some(value)
    }

    /// TTL-26: the field's date, or the earliest date of an array; none otherwise.
    fn date_of(value: Option<&Bson>) -> Option<i64> {
        match value? {
            Bson::DateTime(d) => Some(d.timestamp_millis()),
            Bson::Array(items) => items
                .iter()
                .filter_map(|item| match item {
                    Bson::DateTime(d) => Some(d.timestamp_millis()),
                    _ => None,
                })
                .min(),
            _ => None,
        }
    }

    /// Whether `doc` is expired at `now` (seconds): any model saying so is enough (TTL-26).
    fn expired(&self, doc: &Stored, now: i64) -> bool {
        let by_ts = self.collection_ttl.is_some_and(|collection| {
            // TTL-13: the valid own ttl, else the collection's; -1 never expires (TTL-14).
            let lifetime = Model::own_ttl(&doc.body).unwrap_or(i64::from(collection));
            lifetime != -1 && now >= doc.ts + lifetime
        });
        by_ts
            || self.dated.iter().any(|(field, seconds)| {
                Model::date_of(doc.body.get(*field))
                    .is_some_and(|date| now * 1000 >= date + seconds * 1000)
            })
    }

    fn live(&self, now: i64) -> BTreeSet<i32> {
        self.stored
            .iter()
            .filter(|(_, doc)| !self.expired(doc, now))
            .map(|(id, _)| *id)
            .collect()
    }
}

/// A field value: a date near `base`, an array mixing dates and other values, or a non-date.
fn value(rng: &mut Rng, base: i64) -> Option<Bson> {
    let date = |rng: &mut Rng| {
        Bson::DateTime(bson::DateTime::from_millis(
            (base + rng.range(-20, 40)) * 1000,
        ))
    };
    match rng.below(8) {
        0..=2 => Some(date(rng)),
        3 | 4 => {
            let n = rng.below(4);
            let items = (0..n)
                .map(|_| match rng.below(3) {
                    0 | 1 => date(rng),
                    _ => Bson::Int64(base * 1000),
                })
                .collect();
            Some(Bson::Array(items))
        }
        5 => Some(rng.pick(&[
            Bson::Int64(base * 1000),
            Bson::String("2026-01-01T00:00:00Z".into()),
            Bson::Null,
            Bson::Document(doc! {"at": bson::DateTime::from_millis(base * 1000)}),
        ])),
        _ => None,
    }
}

/// A document's own `ttl`: valid, invalid (ignored, TTL-12) or absent.
fn own_ttl(rng: &mut Rng) -> Option<Bson> {
    match rng.below(6) {
        0 => Some(rng.pick(&[Bson::Int32(3), Bson::Int64(8), Bson::Double(12.0)])),
        1 => Some(rng.pick(&[Bson::Int32(-1), Bson::Double(-1.0)])),
        2 => Some(rng.pick(&[Bson::Int32(0), Bson::Double(2.5), Bson::String("5".into())])),
        _ => None,
    }
}

fn body(rng: &mut Rng, id: i32, base: i64) -> Document {
    let mut body = doc! {"_id": id, "g": id % 3};
    for (field, value) in [
        ("a", value(rng, base)),
        ("b", value(rng, base)),
        ("ttl", own_ttl(rng)),
    ] {
        if let Some(value) = value {
            body.insert(field, value);
        }
    }
    body
}

async fn ids_of(
    coll: &Collection<Document>,
    filter: Document,
    hint: Option<&str>,
) -> BTreeSet<i32> {
    let mut find = coll.find(filter);
    if let Some(hint) = hint {
        find = find.hint(mongodb::options::Hint::Name(hint.to_owned()));
    }
    find.await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect()
}

fn duplicate_key(e: &mongodb::error::Error) -> bool {
    matches!(
        e.kind.as_ref(),
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) if w.code == 11000
    )
}

async fn create_dated(db: &Database, coll: &str, field: &str, seconds: i64) {
    db.run_command(doc! {
        "createIndexes": coll,
        "indexes": [{"key": {field: 1}, "name": format!("{field}_1"), "expireAfterSeconds": seconds}],
    })
    .await
    .unwrap();
}

/// Every read path against the model's live set at `now`.
async fn check(db: &Database, name: &str, model: &Model, now: i64, rng: &mut Rng, trail: &str) {
    let coll = db.collection::<Document>(name);
    let live = model.live(now);
    let count = live.len() as u64;
    assert_eq!(
        ids_of(&coll, doc! {}, None).await,
        live,
        "collection scan; {trail}"
    );
    for (field, _) in &model.dated {
        let hint = format!("{field}_1");
        assert_eq!(
            ids_of(&coll, doc! {}, Some(&hint)).await,
            live,
            "scan of {hint}; {trail}"
        );
    }
    let probe = rng.range(0, 30) as i32;
    let found = coll.find_one(doc! {"_id": probe}).await.unwrap().is_some();
    assert_eq!(
        found,
        live.contains(&probe),
        "point read of {probe}; {trail}"
    );
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        count,
        "countDocuments; {trail}"
    );
    assert_eq!(
        coll.estimated_document_count().await.unwrap(),
        count,
        "count; {trail}"
    );
    let distinct: BTreeSet<i32> = coll
        .distinct("_id", doc! {})
        .await
        .unwrap()
        .iter()
        .map(|v| v.as_i32().unwrap())
        .collect();
    assert_eq!(distinct, live, "distinct; {trail}");
    let grouped: Vec<Document> = coll
        .aggregate([doc! {"$group": {"_id": null, "n": {"$sum": 1}}}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let grouped = grouped.first().map_or(0, |d| d.get_i32("n").unwrap());
    assert_eq!(grouped as u64, count, "$group; {trail}");
    let joined: Vec<Document> = db
        .collection::<Document>("one")
        .aggregate([
            doc! {"$lookup": {"from": name, "pipeline": [{"$project": {"_id": 1}}], "as": "all"}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let joined = joined.first().unwrap().get_array("all").unwrap().len();
    assert_eq!(joined as u64, count, "$lookup; {trail}");
}

async fn run_case(server: &TestServer, seed: u64) {
    let client = server.client().await;
    let db = client.database("ttl_differential");
    let name = format!("c{seed}");
    let coll = db.collection::<Document>(&name);
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let base = now(&client).await;
    let mut model = Model {
        collection_ttl: rng.pick(&[None, Some(-1), Some(6), Some(25)]),
        dated: vec![("a", rng.pick(&[0, 4, 15]))],
        stored: BTreeMap::new(),
    };
    if rng.below(2) == 0 {
        model.dated.push(("b", rng.pick(&[0, 10])));
    }
    let mut trail = format!(
        "seed {seed}, collection TTL {:?}, dated {:?}",
        model.collection_ttl, model.dated
    );
    if let Some(ttl) = model.collection_ttl {
        common::ttl::set_collection_ttl(&db, &name, ttl).await;
    }
    let indexes_first = rng.below(2) == 0;
    if indexes_first {
        for (field, seconds) in &model.dated {
            create_dated(&db, &name, field, *seconds).await;
        }
    }
    let n = rng.range(6, 24) as i32;
    let docs: Vec<Document> = (0..n).map(|id| body(&mut rng, id, base)).collect();
    coll.insert_many(docs.clone()).await.unwrap();
    for doc in docs {
        let id = doc.get_i32("_id").unwrap();
        model.stored.insert(
            id,
            Stored {
                ts: base,
                body: doc,
            },
        );
    }
    if !indexes_first {
        for (field, seconds) in &model.dated {
            create_dated(&db, &name, field, *seconds).await;
        }
    }
    let mut now = base;
    check(&db, &name, &model, now, &mut rng, &trail).await;
    for step in 0..STEPS {
        match rng.below(6) {
            0 | 1 => {
                let by = rng.range(1, 12);
                now = advance(&client, by).await;
                trail.push_str(&format!("; advance {by}"));
            }
            2 => {
                // A rewrite of some documents: live ones match and get a new _ts (TTL-15, TTL-19).
                let ids: Vec<i32> = (0..n).filter(|_| rng.below(3) == 0).collect();
                let moved = value(&mut rng, now);
                let mut set = doc! {"n": step as i32};
                if let Some(moved) = &moved {
                    set.insert("a", moved.clone());
                }
                let result = coll
                    .update_many(
                        doc! {"_id": {"$in": ids.clone()}},
                        doc! {"$set": set.clone()},
                    )
                    .await
                    .unwrap();
                let live = model.live(now);
                let matched: Vec<i32> =
                    ids.iter().copied().filter(|id| live.contains(id)).collect();
                assert_eq!(
                    result.matched_count,
                    matched.len() as u64,
                    "update matched; {trail}"
                );
                for id in matched {
                    if let Some(doc) = model.stored.get_mut(&id) {
                        doc.ts = now;
                        doc.body.extend(set.clone());
                    }
                }
                trail.push_str(&format!("; update {ids:?} set {set}"));
            }
            3 => {
                // Inserting an _id again: a duplicate only while its document is live (TTL-19).
                let id = rng.range(0, i64::from(n) + 2) as i32;
                let doc = body(&mut rng, id, now);
                let live = model.live(now).contains(&id);
                let result = coll.insert_one(doc.clone()).await;
                match &result {
                    Err(e) => assert!(live && duplicate_key(e), "insert of {id}: {e}; {trail}"),
                    Ok(_) => assert!(!live, "insert of live {id} accepted; {trail}"),
                }
                if !live {
                    model.stored.insert(
                        id,
                        Stored {
                            ts: now,
                            body: doc.clone(),
                        },
                    );
                }
                trail.push_str(&format!("; insert {doc}"));
            }
            4 => {
                let id = rng.range(0, i64::from(n)) as i32;
                let deleted = coll
                    .delete_one(doc! {"_id": id})
                    .await
                    .unwrap()
                    .deleted_count;
                let live = model.live(now).contains(&id);
                assert_eq!(deleted, u64::from(live), "delete of {id}; {trail}");
                if live {
                    model.stored.remove(&id);
                }
                trail.push_str(&format!("; delete {id}"));
            }
            _ => {
                // A reaper pass deletes exactly the expired documents, and changes no answer.
                let expired: Vec<i32> = model
                    .stored
                    .iter()
                    .filter(|(_, doc)| model.expired(doc, now))
                    .map(|(id, _)| *id)
                    .collect();
                let reaped = reaper(&client, "runOnce").await;
                let reaped = reaped
                    .get_i64("reaped")
                    .unwrap_or_else(|_| i64::from(reaped.get_i32("reaped").unwrap()));
                assert_eq!(reaped, expired.len() as i64, "reaped {expired:?}; {trail}");
                for id in expired {
                    model.stored.remove(&id);
                }
                trail.push_str("; reap");
            }
        }
        check(&db, &name, &model, now, &mut rng, &trail).await;
    }
    // A reaper pass reaps every collection: the next case's counts must not see this one's.
    coll.drop().await.unwrap();
}

#[tokio::test]
async fn every_read_path_agrees_with_the_ttl_model() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    // The one document every case's `$lookup` starts from.
    client
        .database("ttl_differential")
        .collection::<Document>("one")
        .insert_one(doc! {"_id": 0})
        .await
        .unwrap();
    for seed in 1..=CASES {
        run_case(&server, seed).await;
    }
}
