//! The planner against its reference: for random documents (scalars, arrays, nested documents,
//! missing and null fields, mixed numeric types), random indexes (single, compound, descending,
//! multikey, unique, hashed alone or compound with the hashed field first or not, sparse,
//! partial with a random filter of mongod's allowed operators, hidden) and random filters,
//! sorts, skips and limits, the plan the executor chooses — and the plan of every index hinted
//! in turn — returns the same documents in the same order as a forced collection scan (`hint:
//! {$natural: 1}`), and `count` agrees. A hint may name an index that cannot answer the query
//! only as mongod allows it: a sparse index returns what it holds (a subset); a hidden index,
//! or a partial one the query does not imply, is refused with the planner's error. Some
//! queries carry a partial index's own filter, so the partial indexes are planned as well as
//! passed over. Some cases run in a
//! partitioned collection (sharded on `a`, keyed by `_id` then `a`), where documents share
//! `_id`s.
//!
//! Runs straight on the engine (no driver): many cases, each in a collection of its own.

use bson::{doc, Bson, Document};
use mayfly::clock::{Clock, ManualClock};
use mayfly::engine::exec::{Hint, ReadRequest};
use mayfly::engine::{ddl, documents::collection, Engine, IndexMeta, Interrupt};
use mayfly::profile::account::CollectionSettings;
use mayfly::query::sort::SortSpec;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use std::sync::Arc;

fn scalar() -> impl Strategy<Value = Bson> {
    prop_oneof![
        (-3i32..4).prop_map(Bson::Int32),
        (-3i64..4).prop_map(Bson::Int64),
        prop_oneof![
            Just(0.5),
            Just(-0.0),
            Just(2.0),
            Just(f64::NAN),
            Just(1e300)
        ]
        .prop_map(Bson::Double),
        prop_oneof![
            Just("a"),
            Just("ab"),
            Just("abc"),
            Just("b"),
            Just(""),
            Just("A"),
            Just("aB")
        ]
        .prop_map(|s| Bson::String(s.to_owned())),
        Just(Bson::Null),
        any::<bool>().prop_map(Bson::Boolean),
        (-2i32..3).prop_map(|x| Bson::Document(doc! {"x": x})),
        Just(Bson::MinKey),
        Just(Bson::MaxKey),
    ]
}

/// A field value: mostly scalars, sometimes an array of them (multikey), sometimes absent.
fn field() -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![
        6 => scalar().prop_map(Some),
        2 => prop::collection::vec(scalar(), 0..4).prop_map(|v| Some(Bson::Array(v))),
        2 => Just(None),
    ]
}

fn document(id: i32) -> impl Strategy<Value = Document> {
    (field(), field(), field()).prop_map(move |(a, b, c)| {
        let mut d = doc! {"_id": id, "u": id * 7 % 101};
        for (name, value) in [("a", a), ("b", b), ("c", c)] {
            if let Some(v) = value {
                d.insert(name, v);
            }
        }
        d
    })
}

fn documents() -> impl Strategy<Value = Vec<Document>> {
    (5usize..60).prop_flat_map(|n| (0..n as i32).map(document).collect::<Vec<_>>())
}

/// A key pattern of one or two fields with their directions; direction 0 is `"hashed"`.
type Pattern = (&'static str, i32, Option<(&'static str, i32)>);

/// A pattern direction as a key pattern value.
fn key_spec(direction: i32) -> Bson {
    if direction == 0 {
        Bson::String("hashed".into())
    } else {
        Bson::Int32(direction)
    }
}

const PATTERNS: &[Pattern] = &[
    ("a", 1, None),
    ("a", -1, None),
    ("b", 1, None),
    ("a", 1, Some(("b", 1))),
    ("a", 1, Some(("b", -1))),
    ("b", -1, Some(("a", 1))),
    ("c.x", 1, None),
    ("c", 1, Some(("a", -1))),
    // Hashed: documents with an array in a hashed index's fields are refused and left out.
    ("a", 0, None),
    ("a", 0, Some(("b", 1))),
    ("b", -1, Some(("a", 0))),
    ("c.x", 0, None),
    ("c", 0, None),
];

fn indexes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::btree_set(0..PATTERNS.len(), 0..4).prop_map(|s| s.into_iter().collect())
}

/// What an index is besides its key pattern.
#[derive(Debug, Clone)]
enum Kind {
    Plain,
    Sparse,
    Partial(Document),
    Hidden,
}

/// A `partialFilterExpression` of mongod 7.0's allowed operators.
fn partial_filter() -> impl Strategy<Value = Document> {
    let path = prop_oneof![Just("a"), Just("b"), Just("c.x"), Just("u")];
    (path.clone(), path, scalar(), scalar(), 0..8u8).prop_map(|(p, q, v, w, op)| match op {
        0 => doc! {p: v},
        1 => doc! {p: {"$gt": v}},
        2 => doc! {p: {"$lte": v}},
        3 => doc! {p: {"$exists": true}},
        4 => doc! {p: {"$type": "number"}},
        5 => doc! {p: {"$in": [v, w]}},
        6 => doc! {"$or": [{p: v}, {q: {"$gte": w}}]},
        _ => doc! {p: {"$gte": v}, q: {"$exists": true}},
    })
}

fn kinds() -> impl Strategy<Value = Vec<Kind>> {
    let kind = prop_oneof![
        4 => Just(Kind::Plain),
        2 => Just(Kind::Sparse),
        3 => partial_filter().prop_map(Kind::Partial),
        1 => Just(Kind::Hidden),
    ];
    prop::collection::vec(kind, 4)
}

fn predicate() -> impl Strategy<Value = Document> {
    let path = prop_oneof![
        Just("a"),
        Just("b"),
        Just("c.x"),
        Just("c"),
        Just("_id"),
        Just("u")
    ];
    (
        path,
        scalar(),
        prop::collection::vec(scalar(), 0..3),
        0..13u8,
    )
        .prop_map(|(path, v, vs, op)| {
            let cond = match op {
                0 => v,
                1 => Bson::Document(doc! {"$gt": v}),
                2 => Bson::Document(doc! {"$gte": v}),
                3 => Bson::Document(doc! {"$lt": v}),
                4 => Bson::Document(doc! {"$lte": v}),
                5 => Bson::Document(doc! {"$in": vs}),
                6 => Bson::Document(doc! {"$ne": v}),
                7 => Bson::Document(doc! {"$exists": true}),
                8 => Bson::RegularExpression(bson::Regex {
                    pattern: "^ab".into(),
                    options: String::new(),
                }),
                9 => Bson::Document(doc! {"$gte": v.clone(), "$lte": v}),
                11 => Bson::Document(doc! {"$elemMatch": {"$gte": v.clone(), "$lte": v}}),
                12 => Bson::Document(doc! {"$elemMatch": {"$gt": v, "$in": vs}}),
                _ => Bson::Document(doc! {"$nin": vs}),
            };
            doc! {path: cond}
        })
}

fn filter() -> impl Strategy<Value = Document> {
    prop_oneof![
        4 => prop::collection::vec(predicate(), 0..3).prop_map(|ps| {
            // Distinct paths side by side; a repeated path goes through `$and`, so both stay.
            let mut f = Document::new();
            let mut ands = Vec::new();
            for p in ps {
                if p.keys().any(|k| f.contains_key(k)) {
                    ands.push(Bson::Document(p));
                } else {
                    f.extend(p);
                }
            }
            if !ands.is_empty() {
                f.insert("$and", ands);
            }
            f
        }),
        1 => (predicate(), predicate()).prop_map(|(x, y)| doc! {"$or": [x, y]}),
    ]
}

fn sort() -> impl Strategy<Value = Document> {
    prop_oneof![
        Just(doc! {}),
        Just(doc! {"a": 1}),
        Just(doc! {"a": -1}),
        Just(doc! {"b": 1, "a": -1}),
        Just(doc! {"a": 1, "b": 1}),
        Just(doc! {"_id": -1}),
        Just(doc! {"u": 1}),
        Just(doc! {"c.x": -1}),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    docs: Vec<Document>,
    indexes: Vec<usize>,
    filter: Document,
    sort: Document,
    skip: u64,
    limit: Option<u64>,
    /// The query's collation (`None`: simple).
    collation: Option<Document>,
    /// Odd-numbered indexes are created with the case-insensitive collation.
    collated_indexes: bool,
    /// The collection is partitioned on `a`, and documents `2k` and `2k + 1` share `_id` `k`
    /// (a second one with the same `a` is a duplicate, left out).
    partitioned: bool,
    /// What each index (by position in `indexes`) is besides its key pattern.
    kinds: Vec<Kind>,
}

impl Case {
    fn kind(&self, position: usize) -> &Kind {
        self.kinds.get(position).unwrap_or(&Kind::Plain)
    }
}

/// Case-insensitive: strings that differ only in case are equal.
fn case_insensitive() -> Document {
    doc! {"locale": "en", "strength": 2}
}

fn query_collation(case: &Case) -> Option<mayfly::query::collation::Collation> {
    case.collation
        .as_ref()
        .and_then(|c| mayfly::query::collation::Collation::parse(c).unwrap())
}

fn case() -> impl Strategy<Value = Case> {
    (
        documents(),
        indexes(),
        filter(),
        sort(),
        0u64..3,
        prop::option::of(1u64..6),
        (any::<bool>(), any::<bool>(), any::<bool>()),
        (kinds(), any::<bool>()),
    )
        .prop_map(
            |(
                docs,
                indexes,
                filter,
                sort,
                skip,
                limit,
                (collated, collated_indexes, partitioned),
                (kinds, with_partial_filter),
            )| {
                // Half the time the query also asks for the first partial index's filter, so
                // that index is one the planner may use.
                let partial = kinds.iter().take(indexes.len()).find_map(|k| match k {
                    Kind::Partial(f) => Some(f.clone()),
                    _ => None,
                });
                let filter = match partial.filter(|_| with_partial_filter) {
                    Some(p) => doc! {"$and": [filter, p]},
                    None => filter,
                };
                Case {
                    docs,
                    indexes,
                    filter,
                    sort,
                    skip,
                    limit,
                    collation: collated.then(case_insensitive),
                    collated_indexes,
                    partitioned,
                    kinds,
                }
            },
        )
}

fn index_meta(i: usize, collated: bool, kind: &Kind) -> IndexMeta {
    let (f1, d1, second) = PATTERNS[i];
    let mut key = doc! {f1: key_spec(d1)};
    if let Some((f2, d2)) = second {
        key.insert(f2, key_spec(d2));
    }
    IndexMeta {
        id: 0,
        name: format!("ix{i}"),
        key,
        unique: false,
        sparse: matches!(kind, Kind::Sparse),
        partial_filter: match kind {
            Kind::Partial(f) => Some(f.clone()),
            _ => None,
        },
        hidden: matches!(kind, Kind::Hidden),
        expire_after_seconds: None,
        multikey: false,
        building: false,
        collation: (collated && i % 2 == 1).then(|| {
            mayfly::query::collation::Collation::parse(&case_insensitive())
                .unwrap()
                .unwrap()
                .to_document()
        }),
        custom_ttl: false,
    }
}

fn unique_index() -> IndexMeta {
    IndexMeta {
        id: 0,
        name: "u_unique".into(),
        key: doc! {"u": 1, "_id": 1},
        unique: true,
        sparse: false,
        partial_filter: None,
        hidden: false,
        expire_after_seconds: None,
        multikey: false,
        building: false,
        collation: None,
        custom_ttl: false,
    }
}

/// Loads the case into a fresh engine; a document that cannot be indexed (parallel arrays in a
/// compound key, an array in a hashed index's field) is left out.
async fn load(engine: &Engine, coll: &str, case: &Case) -> Option<()> {
    let mut metas = vec![unique_index()];
    metas.extend(
        case.indexes
            .iter()
            .enumerate()
            .map(|(n, &i)| index_meta(i, case.collated_indexes, case.kind(n))),
    );
    let name = coll.to_owned();
    let partitioned = case.partitioned;
    engine
        .write(false, move |txn, now| -> mayfly::error::Result<()> {
            let (mut meta, _) = ddl::ensure_collection(txn, "d", &name)?;
            if partitioned {
                let settings = CollectionSettings {
                    shard_key: Some("a".into()),
                    throughput: None,
                };
                meta = ddl::set_cosmos_settings(txn, "d", &name, settings)?.unwrap();
            }
            for index in metas {
                meta = ddl::create_index(txn, &meta, index, now)?;
            }
            Ok(())
        })
        .await
        .unwrap()
        .unwrap();
    // One unsynced job: a document that cannot be indexed (parallel arrays in a compound key,
    // an array in a hashed index's field) is refused alone and left out of the case.
    let mut docs = case.docs.clone();
    if case.partitioned {
        for d in &mut docs {
            let id = d.get_i32("_id").unwrap();
            d.insert("_id", id / 2);
        }
    }
    let name = coll.to_owned();
    engine
        .write(false, move |txn, now| {
            let meta = ddl::collection(txn, "d", &name).unwrap();
            for d in &docs {
                let _ = collection::insert(txn, &meta, d, now);
            }
        })
        .await
        .unwrap();
    Some(())
}

/// How many documents the case selects when only counted (no sort, no documents decoded: the
/// planner may count index entries instead).
fn count(engine: &Engine, coll: &str, case: &Case, hint: Option<Hint>) -> Result<u64, String> {
    let view = engine.read().unwrap();
    let meta = view.collection("d", coll);
    let mut req = ReadRequest::new(case.filter.clone())
        .and_then(|r| r.requested_collation(Some(query_collation(case))))
        .map_err(|e| e.message)?;
    req.skip = case.skip;
    req.limit = case.limit;
    req.hint = hint;
    req.decode = false;
    req.count_only = true;
    let execution = view
        .execute(meta.as_deref(), &req, view.now_cell(), Interrupt::none())
        .map_err(|e| e.message)?;
    let mut n = 0;
    for d in execution.docs {
        d.map_err(|e| e.message)?;
        n += 1;
    }
    Ok(n)
}

fn run(
    engine: &Engine,
    coll: &str,
    case: &Case,
    hint: Option<Hint>,
) -> Result<Vec<Document>, String> {
    let view = engine.read().unwrap();
    let meta = view.collection("d", coll);
    let mut req = ReadRequest::new(case.filter.clone())
        .and_then(|r| r.requested_collation(Some(query_collation(case))))
        .and_then(|r| r.sorted(case.sort.clone()))
        .map_err(|e| e.message)?;
    req.skip = case.skip;
    req.limit = case.limit;
    req.hint = hint;
    let execution = view
        .execute(meta.as_deref(), &req, view.now_cell(), Interrupt::none())
        .map_err(|e| e.message)?;
    execution
        .docs
        .map(|d| d.map(|d| d.doc).map_err(|e| e.message))
        .collect()
}

fn ids(docs: &[Document]) -> Vec<String> {
    let mut ids: Vec<String> = docs
        .iter()
        .map(|d| format!("{}", d.get("_id").unwrap()))
        .collect();
    ids.sort();
    ids
}

/// The planner's refusal of a hint it cannot follow (mongod's words).
const NO_SUCH_INDEX: &str = "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index";

/// How often a partial index answered a hinted query (the test must exercise them).
static PARTIAL_PLANS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn check(engine: &Engine, coll: &str, case: &Case) -> Result<(), TestCaseError> {
    let reference = match run(engine, coll, case, Some(Hint::Natural { reverse: false })) {
        Ok(r) => r,
        // An invalid filter (e.g. `$in` of a regex-free list is always valid; this covers
        // operators the generator may combine badly) must fail the same way for every plan.
        Err(message) => {
            prop_assert_eq!(run(engine, coll, case, None).err(), Some(message));
            return Ok(());
        }
    };
    let collation = query_collation(case);
    let spec = SortSpec::compile_with(&case.sort, collation.as_ref()).unwrap_or_default();
    let keys =
        |docs: &[Document]| -> Vec<Vec<Bson>> { docs.iter().map(|d| spec.keys_of(d)).collect() };
    // Equal under the BSON order (2 and 2.0 are one key; NaN equals NaN).
    let same_keys = |x: &[Vec<Bson>], y: &[Vec<Bson>]| {
        x.len() == y.len()
            && x.iter().zip(y).all(|(a, b)| {
                a.iter().zip(b).all(|(p, q)| {
                    mayfly::query::compare::compare_values_with(p, q, collation.as_ref()).is_eq()
                })
            })
    };
    let mut hints: Vec<(Option<Hint>, Kind)> = vec![
        (None, Kind::Plain),
        (Some(Hint::Name("_id_".into())), Kind::Plain),
    ];
    hints.extend(
        case.indexes
            .iter()
            .enumerate()
            .map(|(n, &i)| (Some(Hint::Name(format!("ix{i}"))), case.kind(n).clone())),
    );
    hints.push((Some(Hint::Name("u_unique".into())), Kind::Plain));
    for (hint, kind) in hints {
        let got = match (run(engine, coll, case, hint.clone()), &kind) {
            (Err(message), Kind::Hidden | Kind::Partial(_)) => {
                prop_assert_eq!(message.as_str(), NO_SUCH_INDEX, "hint {:?}", hint);
                let counted = count(engine, coll, case, hint.clone()).err();
                prop_assert_eq!(counted.as_deref(), Some(NO_SUCH_INDEX));
                continue;
            }
            (Ok(_), Kind::Hidden) => {
                return Err(TestCaseError::fail(format!(
                    "hidden index hinted: {hint:?}"
                )))
            }
            (got, _) => got.map_err(TestCaseError::fail)?,
        };
        if let Kind::Partial(_) = kind {
            PARTIAL_PLANS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let counted = count(engine, coll, case, hint.clone()).map_err(TestCaseError::fail)?;
        if let Kind::Sparse = kind {
            // A hinted sparse index returns the documents it holds, as on mongod: a subset.
            prop_assert!(got.len() <= reference.len(), "sparse hint {:?}", hint);
            prop_assert!(
                counted as usize <= reference.len(),
                "sparse hint {:?}",
                hint
            );
            // Without skip or limit, a subset of the scan's; with them, ties may have come in
            // another order, so only of the documents that match (checked below).
            if case.skip == 0 && case.limit.is_none() {
                let want = ids(&reference);
                prop_assert!(ids(&got).iter().all(|id| want.contains(id)));
            }
            let filter =
                mayfly::query::filter::Filter::compile_with(&case.filter, collation.as_ref())
                    .unwrap();
            for d in &got {
                prop_assert!(filter.matches(d).unwrap(), "{} does not match", d);
            }
            continue;
        }
        prop_assert_eq!(got.len(), reference.len(), "count with hint {:?}", hint);
        prop_assert_eq!(
            counted as usize,
            reference.len(),
            "counted with hint {:?}",
            hint
        );
        if case.sort.is_empty() {
            if case.skip == 0 && case.limit.is_none() {
                prop_assert_eq!(ids(&got), ids(&reference), "hint {:?}", hint);
            }
        } else {
            // Ties may come in another order (mongod promises none): the sort keys must agree,
            // and without skip or limit the documents too.
            let (got_keys, want_keys) = (keys(&got), keys(&reference));
            prop_assert!(
                same_keys(&got_keys, &want_keys),
                "sort keys with hint {:?}: {:?} vs {:?}",
                hint,
                got_keys,
                want_keys
            );
            if case.skip == 0 && case.limit.is_none() {
                prop_assert_eq!(ids(&got), ids(&reference), "hint {:?}", hint);
            }
        }
        for d in &got {
            let filter =
                mayfly::query::filter::Filter::compile_with(&case.filter, collation.as_ref())
                    .unwrap();
            prop_assert!(filter.matches(d).unwrap(), "{} does not match", d);
        }
    }
    Ok(())
}

#[test]
fn every_plan_returns_what_a_collection_scan_returns() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 1000,
        ..ProptestConfig::default()
    });
    // One engine; each case gets a collection of its own.
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::starting_at_secs(1_000_000));
    let engine = Engine::open(dir.path(), clock).unwrap();
    let cases = std::sync::atomic::AtomicUsize::new(0);
    runner
        .run(&case(), |case| {
            let coll = format!(
                "c{}",
                cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            );
            if runtime.block_on(load(&engine, &coll, &case)).is_none() {
                return Ok(());
            }
            check(&engine, &coll, &case)
        })
        .unwrap();
    // Partial indexes were used, not only passed over.
    let used = PARTIAL_PLANS.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        used > 20,
        "partial indexes answered only {used} hinted queries"
    );
}
