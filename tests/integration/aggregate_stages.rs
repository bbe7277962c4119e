//! The stages that read other collections or several pipelines: `$lookup` (all three forms),
//! `$unionWith`, `$facet` and `$documents`, through the driver as applications use them.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::pipelines::{self, aggregate};
use common::ttl::{advance, reaper, set_collection_ttl};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::{Collection, Database};

async fn aggregate_err(coll: &Collection<Document>, pipeline: Vec<Document>) -> i32 {
    pipelines::aggregate_err(coll, pipeline)
        .await
        .expect("a command error")
}

async fn shop(db: &Database) -> (Collection<Document>, Collection<Document>) {
    let customers = db.collection::<Document>("customers");
    let orders = db.collection::<Document>("orders");
    customers
        .insert_many(vec![
            doc! {"_id": 1, "name": "Ann", "tags": ["a", "b"]},
            doc! {"_id": 2, "name": "Bob"},
            doc! {"_id": 3, "name": "Cy", "tags": []},
        ])
        .await
        .unwrap();
    orders
        .insert_many(vec![
            doc! {"_id": 10, "cust": 1, "amt": 5},
            doc! {"_id": 11, "cust": 1, "amt": 7},
            doc! {"_id": 12, "cust": 2, "amt": 1},
            doc! {"_id": 13, "cust": [2, 3], "amt": 2},
            doc! {"_id": 14, "amt": 9},
        ])
        .await
        .unwrap();
    (customers, orders)
}

fn ids(docs: &[Bson]) -> Vec<i32> {
    docs.iter()
        .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
        .collect()
}

#[tokio::test]
async fn lookup_by_local_and_foreign_field_matches_elements_and_missing_as_null() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let (customers, orders) = shop(&db).await;
    let out = aggregate(
        &customers,
        vec![
            doc! {"$lookup": {"from": "orders", "localField": "_id", "foreignField": "cust", "as": "orders"}},
            doc! {"$sort": {"_id": 1}},
        ],
    )
    .await;
    let joined: Vec<Vec<i32>> = out
        .iter()
        .map(|d| ids(d.get_array("orders").unwrap()))
        .collect();
    // A foreign array matches by any element (order 13 joins both 2 and 3).
    assert_eq!(joined, vec![vec![10, 11], vec![12, 13], vec![13]]);

    // A missing local field joins foreign documents whose field is null or missing.
    let out = aggregate(
        &orders,
        vec![
            doc! {"$match": {"_id": 14}},
            doc! {"$lookup": {"from": "customers", "localField": "cust", "foreignField": "tags", "as": "c"}},
        ],
    )
    .await;
    assert_eq!(ids(out[0].get_array("c").unwrap()), vec![2]);

    // A local array joins each element; `as` may be a dotted path.
    let out = aggregate(
        &orders,
        vec![
            doc! {"$match": {"_id": 13}},
            doc! {"$lookup": {"from": "customers", "localField": "cust", "foreignField": "_id", "as": "x.who"}},
        ],
    )
    .await;
    let who = out[0].get_document("x").unwrap().get_array("who").unwrap();
    assert_eq!(ids(who), vec![2, 3]);
}

#[tokio::test]
async fn lookup_with_let_and_pipeline_and_the_combined_form() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let (customers, _) = shop(&db).await;
    let out = aggregate(
        &customers,
        vec![
            doc! {"$match": {"_id": 1}},
            doc! {"$lookup": {
                "from": "orders",
                "let": {"who": "$name"},
                "pipeline": [
                    {"$match": {"amt": {"$gt": 4}}},
                    {"$project": {"_id": 0, "amt": 1, "by": "$$who"}},
                ],
                "as": "big",
            }},
        ],
    )
    .await;
    assert_eq!(
        out[0].get_array("big").unwrap(),
        &vec![
            Bson::Document(doc! {"amt": 5, "by": "Ann"}),
            Bson::Document(doc! {"amt": 7, "by": "Ann"}),
            Bson::Document(doc! {"amt": 9, "by": "Ann"}),
        ]
    );
    let out = aggregate(
        &customers,
        vec![
            doc! {"$match": {"_id": 1}},
            doc! {"$lookup": {
                "from": "orders", "localField": "_id", "foreignField": "cust",
                "pipeline": [{"$match": {"amt": {"$gt": 6}}}],
                "as": "big",
            }},
        ],
    )
    .await;
    assert_eq!(ids(out[0].get_array("big").unwrap()), vec![11]);
}

#[tokio::test]
async fn bad_lookups_fail_before_reading() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let (customers, _) = shop(&db).await;
    let cases = [
        (doc! {"from": "orders", "localField": "a", "as": "x"}, 9),
        (
            doc! {"from": "orders", "localField": "a", "foreignField": "b"},
            9,
        ),
        (doc! {"from": "orders", "as": "x"}, 9),
        (
            doc! {"from": "orders", "pipeline": [{"$bogus": 1}], "as": "x"},
            40324,
        ),
        (
            doc! {"from": "orders", "localField": 1, "foreignField": "b", "as": "x"},
            4570,
        ),
        (
            doc! {"from": "orders", "let": {"Bad": 1}, "pipeline": [], "as": "x"},
            16867,
        ),
    ];
    for (spec, code) in cases {
        assert_eq!(
            aggregate_err(&customers, vec![doc! {"$lookup": spec.clone()}]).await,
            code,
            "{spec}"
        );
    }
}

#[tokio::test]
async fn union_with_appends_another_collections_pipeline() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let (customers, _) = shop(&db).await;
    let out = aggregate(
        &customers,
        vec![
            doc! {"$project": {"name": 1}},
            doc! {"$unionWith": {"coll": "orders", "pipeline": [{"$match": {"amt": {"$lt": 3}}}]}},
            doc! {"$unionWith": "nothing_here"},
        ],
    )
    .await;
    let got: Vec<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(got, vec![1, 2, 3, 12, 13]);
}

#[tokio::test]
async fn facet_runs_each_pipeline_over_the_same_input() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let (_, orders) = shop(&db).await;
    let out = aggregate(
        &orders,
        vec![doc! {"$facet": {
            "count": [{"$count": "n"}],
            "big": [{"$match": {"amt": {"$gte": 7}}}, {"$project": {"_id": 1}}],
            "none": [{"$match": {"amt": 100}}],
        }}],
    )
    .await;
    assert_eq!(
        out,
        vec![doc! {"count": [{"n": 5}], "big": [{"_id": 11}, {"_id": 14}], "none": []}]
    );
    for (spec, code) in [
        (doc! {"$facet": {}}, 40169),
        (doc! {"$facet": {"a": []}}, 40172),
        (
            doc! {"$facet": {"a": [{"$facet": {"b": [{"$count": "n"}]}}]}},
            40600,
        ),
        (doc! {"$facet": {"a": 1}}, 40170),
    ] {
        assert_eq!(
            aggregate_err(&orders, vec![spec.clone()]).await,
            code,
            "{spec}"
        );
    }
}

#[tokio::test]
async fn documents_starts_a_collectionless_pipeline() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let mut cursor = db
        .aggregate(vec![
            doc! {"$documents": [{"x": 1}, {"x": 2}, {"x": 3}]},
            doc! {"$match": {"x": {"$gte": 2}}},
        ])
        .await
        .unwrap();
    let mut xs = Vec::new();
    while let Some(d) = cursor.try_next().await.unwrap() {
        xs.push(d.get_i32("x").unwrap());
    }
    assert_eq!(xs, vec![2, 3]);
    let err = db
        .aggregate(vec![doc! {"$documents": 1}])
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(5858203));
}

#[tokio::test]
async fn an_expired_foreign_document_is_never_joined_ttl_18() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("stages");
    reaper(&client, "pause").await;
    let orders = db.collection::<Document>("orders");
    let events = db.collection::<Document>("events");
    set_collection_ttl(&db, "events", 10).await;
    orders.insert_one(doc! {"_id": 1}).await.unwrap();
    events
        .insert_many(vec![
            doc! {"_id": "old", "order": 1},
            doc! {"_id": "long", "order": 1, "ttl": 100},
        ])
        .await
        .unwrap();
    advance(&client, 11).await;
    let pipeline = vec![
        doc! {"$lookup": {"from": "events", "localField": "_id", "foreignField": "order", "as": "e"}},
    ];
    let out = aggregate(&orders, pipeline.clone()).await;
    assert_eq!(
        out[0].get_array("e").unwrap(),
        &vec![Bson::Document(doc! {"_id": "long", "order": 1, "ttl": 100})]
    );
    let out = aggregate(&orders, vec![doc! {"$unionWith": "events"}]).await;
    assert_eq!(out.len(), 2, "{out:?}");
}

async fn all(coll: &Collection<Document>) -> Vec<Document> {
    coll.find(doc! {})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn out_replaces_the_target_atomically_and_keeps_its_indexes() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let (_, orders) = shop(&db).await;
    let report = db.collection::<Document>("report");
    report.insert_one(doc! {"_id": "stale"}).await.unwrap();
    db.run_command(
        doc! {"createIndexes": "report", "indexes": [{"key": {"total": 1}, "name": "total_1"}]},
    )
    .await
    .unwrap();
    let out = aggregate(
        &orders,
        vec![
            doc! {"$group": {"_id": "$cust", "total": {"$sum": "$amt"}}},
            doc! {"$match": {"_id": {"$not": {"$type": "array"}, "$ne": null}}},
            doc! {"$out": "report"},
        ],
    )
    .await;
    assert!(out.is_empty());
    assert_eq!(
        all(&report).await,
        vec![doc! {"_id": 1, "total": 12}, doc! {"_id": 2, "total": 1}]
    );
    let indexes: Vec<String> = report.list_index_names().await.unwrap();
    assert!(indexes.contains(&"total_1".to_owned()), "{indexes:?}");

    // A duplicate _id fails the stage and leaves the target as it was.
    let code = aggregate_err(
        &orders,
        vec![
            doc! {"$project": {"_id": {"$literal": 1}}},
            doc! {"$out": "report"},
        ],
    )
    .await;
    assert_eq!(code, 11000);
    assert_eq!(all(&report).await.len(), 2);
    let names = db.list_collection_names().await.unwrap();
    assert!(
        !names.iter().any(|n| n.starts_with("tmp.agg_out")),
        "the temporary collection is dropped: {names:?}"
    );
    for (pipeline, code) in [
        (vec![doc! {"$out": "a"}, doc! {"$match": {}}], 40601),
        (
            vec![doc! {"$lookup": {"from": "orders", "pipeline": [{"$out": "z"}], "as": "x"}}],
            51047,
        ),
        (vec![doc! {"$facet": {"a": [{"$out": "x"}]}}], 40600),
    ] {
        assert_eq!(
            aggregate_err(&orders, pipeline.clone()).await,
            code,
            "{pipeline:?}"
        );
    }
}

#[tokio::test]
async fn merge_matches_on_fields_and_applies_each_mode() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let source = db.collection::<Document>("src");
    let target = db.collection::<Document>("dst");
    source
        .insert_many(vec![
            doc! {"_id": 1, "sku": "a", "qty": 5},
            doc! {"_id": 2, "sku": "b", "qty": 1},
        ])
        .await
        .unwrap();
    target
        .insert_many(vec![doc! {"_id": 1, "qty": 2, "note": "keep"}])
        .await
        .unwrap();
    let merge = |spec: Document| vec![doc! {"$merge": spec}];

    // Default: merge matched, insert unmatched.
    aggregate(&source, merge(doc! {"into": "dst"})).await;
    assert_eq!(
        all(&target).await,
        vec![
            doc! {"_id": 1, "qty": 5, "note": "keep", "sku": "a"},
            doc! {"_id": 2, "sku": "b", "qty": 1}
        ]
    );
    // A pipeline with $$new and let.
    aggregate(
        &source,
        merge(doc! {"into": "dst", "let": {"add": "$qty"}, "whenMatched": [{"$set": {"qty": {"$and": ["$qty", "$$add"]}, "seen": "$$add"}}], "whenNotMatched": "discard"}),
    )
    .await;
    assert_eq!(
        all(&target).await[0],
        doc! {"_id": 1, "qty": true, "note": "keep", "sku": "a", "seen": 5}
    );
    aggregate(
        &source,
        merge(doc! {"into": "dst", "whenMatched": "replace"}),
    )
    .await;
    assert_eq!(all(&target).await[0], doc! {"_id": 1, "sku": "a", "qty": 5});
    aggregate(
        &source,
        merge(doc! {"into": {"db": "stages", "coll": "dst"}, "whenMatched": "keepExisting"}),
    )
    .await;
    assert_eq!(all(&target).await[0], doc! {"_id": 1, "sku": "a", "qty": 5});
    assert_eq!(
        aggregate_err(&source, merge(doc! {"into": "dst", "whenMatched": "fail"})).await,
        11000
    );
    assert_eq!(
        aggregate_err(
            &source,
            merge(doc! {"into": "empty", "whenNotMatched": "fail"})
        )
        .await,
        13113
    );
    // Other `on` fields need a unique index on exactly them.
    assert_eq!(
        aggregate_err(&source, merge(doc! {"into": "dst", "on": "sku"})).await,
        51183
    );
    db.run_command(doc! {"createIndexes": "dst", "indexes": [{"key": {"sku": 1}, "name": "sku_1", "unique": true}]})
        .await
        .unwrap();
    aggregate(
        &source,
        vec![
            doc! {"$project": {"_id": 0, "sku": 1, "qty": {"$literal": 9}}},
            doc! {"$merge": {"into": "dst", "on": "sku"}},
        ],
    )
    .await;
    let skus: Vec<(String, i32)> = all(&target)
        .await
        .iter()
        .map(|d| {
            (
                d.get_str("sku").unwrap().to_owned(),
                d.get_i32("qty").unwrap(),
            )
        })
        .collect();
    assert_eq!(skus, vec![("a".into(), 9), ("b".into(), 9)]);
}

#[tokio::test]
async fn graph_lookup_walks_the_reporting_chain() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let employees = db.collection::<Document>("employees");
    // The example of MongoDB's $graphLookup reference page.
    employees
        .insert_many(vec![
            doc! {"_id": 1, "name": "Dev"},
            doc! {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
            doc! {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
            doc! {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
            doc! {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
            doc! {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
        ])
        .await
        .unwrap();
    let out = aggregate(
        &employees,
        vec![
            doc! {"$match": {"name": "Asya"}},
            doc! {"$graphLookup": {
                "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
                "connectToField": "name", "as": "chain", "depthField": "d",
            }},
        ],
    )
    .await;
    let mut chain: Vec<(String, i64)> = out[0]
        .get_array("chain")
        .unwrap()
        .iter()
        .map(|d| {
            let d = d.as_document().unwrap();
            (
                d.get_str("name").unwrap().to_owned(),
                d.get_i64("d").unwrap(),
            )
        })
        .collect();
    chain.sort();
    assert_eq!(
        chain,
        vec![("Dev".into(), 2), ("Eliot".into(), 1), ("Ron".into(), 0)]
    );
    let out = aggregate(
        &employees,
        vec![
            doc! {"$match": {"name": "Asya"}},
            doc! {"$graphLookup": {
                "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
                "connectToField": "name", "as": "chain", "maxDepth": 0,
                "restrictSearchWithMatch": {"_id": {"$ne": 99}},
            }},
        ],
    )
    .await;
    assert_eq!(ids(out[0].get_array("chain").unwrap()), vec![3]);
    for (spec, code) in [
        (doc! {"from": "employees", "as": "x"}, 40105),
        (doc! {"from": "employees", "bogus": 1}, 40104),
        (doc! {"from": "employees", "maxDepth": -1}, 40101),
        (doc! {"from": 1, "as": "x"}, 40103),
        (doc! {"as": "x"}, 9),
    ] {
        assert_eq!(
            aggregate_err(&employees, vec![doc! {"$graphLookup": spec.clone()}]).await,
            code,
            "{spec}"
        );
    }
}

#[tokio::test]
async fn redact_keeps_prunes_and_descends_by_level() {
    let server = TestServer::start().await;
    let db = server.client().await.database("stages");
    let docs = db.collection::<Document>("levels");
    // Each level says what becomes of it; `$$CURRENT` is the level being judged.
    docs.insert_one(doc! {
        "_id": 1, "v": "descend", "n": 1,
        "a": {"v": "prune", "secret": 1},
        "b": {"v": "keep", "inner": {"v": "prune"}},
        "c": [{"v": "descend", "d": {"v": "prune"}, "e": 2}, {"v": "prune"}, 3],
    })
    .await
    .unwrap();
    let out = aggregate(&docs, vec![doc! {"$redact": "$v"}]).await;
    assert_eq!(
        out,
        vec![doc! {
            "_id": 1, "v": "descend", "n": 1,
            "b": {"v": "keep", "inner": {"v": "prune"}},
            "c": [{"v": "descend", "e": 2}, 3],
        }]
    );
    // $$ROOT stays the whole document at every level.
    let out = aggregate(&docs, vec![doc! {"$redact": "$$ROOT.v"}]).await;
    assert_eq!(
        out[0].get_document("a").unwrap().get_i32("secret").unwrap(),
        1
    );
    assert_eq!(
        aggregate_err(&docs, vec![doc! {"$redact": "$n"}]).await,
        17053
    );
    assert!(aggregate(&docs, vec![doc! {"$redact": "$$PRUNE"}])
        .await
        .is_empty());
}
