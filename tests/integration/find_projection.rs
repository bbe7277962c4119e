//! Projections through the driver, as mongod 7.0's documentation shows them ("Project Fields
//! to Return from Query", and the `$elemMatch`, `$slice` and positional `$` projection pages),
//! with the documented outputs; then `$project` with computed fields at depth, findAndModify's
//! `fields`, and the errors mongod gives.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::Collection;

async fn find(
    coll: &Collection<Document>,
    filter: Document,
    projection: Document,
) -> Vec<Document> {
    coll.find(filter)
        .projection(projection)
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

async fn find_err(coll: &Collection<Document>, filter: Document, projection: Document) -> i32 {
    let err = match coll.find(filter).projection(projection).await {
        Err(e) => e,
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await.unwrap_err(),
    };
    error_code(&err).unwrap_or_else(|| panic!("not a command error: {err}"))
}

/// The documentation's `inventory` collection, with `_id`s 1..5 in its order.
fn inventory() -> Vec<Document> {
    vec![
        doc! {"_id": 1, "item": "journal", "status": "A", "size": {"h": 14, "w": 21, "uom": "cm"}, "instock": [{"warehouse": "A", "qty": 5}]},
        doc! {"_id": 2, "item": "notebook", "status": "A", "size": {"h": 8.5, "w": 11, "uom": "in"}, "instock": [{"warehouse": "C", "qty": 5}]},
        doc! {"_id": 3, "item": "paper", "status": "D", "size": {"h": 8.5, "w": 11, "uom": "in"}, "instock": [{"warehouse": "A", "qty": 60}]},
        doc! {"_id": 4, "item": "planner", "status": "D", "size": {"h": 22.85, "w": 30, "uom": "cm"}, "instock": [{"warehouse": "A", "qty": 40}]},
        doc! {"_id": 5, "item": "postcard", "status": "A", "size": {"h": 10, "w": 15.25, "uom": "cm"}, "instock": [{"warehouse": "B", "qty": 15}, {"warehouse": "C", "qty": 35}]},
    ]
}

#[tokio::test]
async fn documented_projections_return_documented_fields() {
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("proj")
        .collection::<Document>("inventory");
    coll.insert_many(inventory()).await.unwrap();
    let a = doc! {"status": "A"};
    let cases: Vec<(Document, Vec<Document>)> = vec![
        (
            doc! {"item": 1, "status": 1},
            vec![
                doc! {"_id": 1, "item": "journal", "status": "A"},
                doc! {"_id": 2, "item": "notebook", "status": "A"},
                doc! {"_id": 5, "item": "postcard", "status": "A"},
            ],
        ),
        (
            doc! {"item": 1, "status": 1, "_id": 0},
            vec![
                doc! {"item": "journal", "status": "A"},
                doc! {"item": "notebook", "status": "A"},
                doc! {"item": "postcard", "status": "A"},
            ],
        ),
        (
            doc! {"status": 0, "instock": 0},
            vec![
                doc! {"_id": 1, "item": "journal", "size": {"h": 14, "w": 21, "uom": "cm"}},
                doc! {"_id": 2, "item": "notebook", "size": {"h": 8.5, "w": 11, "uom": "in"}},
                doc! {"_id": 5, "item": "postcard", "size": {"h": 10, "w": 15.25, "uom": "cm"}},
            ],
        ),
        (
            doc! {"item": 1, "status": 1, "size.uom": 1},
            vec![
                doc! {"_id": 1, "item": "journal", "status": "A", "size": {"uom": "cm"}},
                doc! {"_id": 2, "item": "notebook", "status": "A", "size": {"uom": "in"}},
                doc! {"_id": 5, "item": "postcard", "status": "A", "size": {"uom": "cm"}},
            ],
        ),
        (
            doc! {"item": 1, "status": 1, "size": {"uom": 1}},
            vec![
                doc! {"_id": 1, "item": "journal", "status": "A", "size": {"uom": "cm"}},
                doc! {"_id": 2, "item": "notebook", "status": "A", "size": {"uom": "in"}},
                doc! {"_id": 5, "item": "postcard", "status": "A", "size": {"uom": "cm"}},
            ],
        ),
        (
            doc! {"size.uom": 0},
            vec![
                doc! {"_id": 1, "item": "journal", "status": "A", "size": {"h": 14, "w": 21}, "instock": [{"warehouse": "A", "qty": 5}]},
                doc! {"_id": 2, "item": "notebook", "status": "A", "size": {"h": 8.5, "w": 11}, "instock": [{"warehouse": "C", "qty": 5}]},
                doc! {"_id": 5, "item": "postcard", "status": "A", "size": {"h": 10, "w": 15.25}, "instock": [{"warehouse": "B", "qty": 15}, {"warehouse": "C", "qty": 35}]},
            ],
        ),
        (
            doc! {"item": 1, "status": 1, "instock.qty": 1},
            vec![
                doc! {"_id": 1, "item": "journal", "status": "A", "instock": [{"qty": 5}]},
                doc! {"_id": 2, "item": "notebook", "status": "A", "instock": [{"qty": 5}]},
                doc! {"_id": 5, "item": "postcard", "status": "A", "instock": [{"qty": 15}, {"qty": 35}]},
            ],
        ),
        (
            doc! {"item": 1, "status": 1, "instock": {"$slice": -1}},
            vec![
                doc! {"_id": 1, "item": "journal", "status": "A", "instock": [{"warehouse": "A", "qty": 5}]},
                doc! {"_id": 2, "item": "notebook", "status": "A", "instock": [{"warehouse": "C", "qty": 5}]},
                doc! {"_id": 5, "item": "postcard", "status": "A", "instock": [{"warehouse": "C", "qty": 35}]},
            ],
        ),
    ];
    for (projection, expected) in cases {
        assert_eq!(
            find(&coll, a.clone(), projection.clone()).await,
            expected,
            "{projection}"
        );
    }
}

#[tokio::test]
async fn find_projects_aggregation_expressions_and_literals() {
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("proj")
        .collection::<Document>("inventory");
    coll.insert_many(inventory()).await.unwrap();
    // The documentation's example, with its documented output.
    let projection = doc! {
        "_id": 0,
        "item": 1,
        "status": {"$switch": {
            "branches": [
                {"case": {"$eq": ["$status", "A"]}, "then": "Available"},
                {"case": {"$eq": ["$status", "D"]}, "then": "Discontinued"},
            ],
            "default": "No status found",
        }},
        "area": {"$concat": [{"$toString": {"$multiply": ["$size.h", "$size.w"]}}, " ", "$size.uom"]},
        "reportNumber": {"$literal": 1},
    };
    assert_eq!(
        find(&coll, doc! {}, projection).await,
        vec![
            doc! {"item": "journal", "status": "Available", "area": "294 cm", "reportNumber": 1},
            doc! {"item": "notebook", "status": "Available", "area": "93.5 in", "reportNumber": 1},
            doc! {"item": "paper", "status": "Discontinued", "area": "93.5 in", "reportNumber": 1},
            doc! {"item": "planner", "status": "Discontinued", "area": "685.5 cm", "reportNumber": 1},
            doc! {"item": "postcard", "status": "Available", "area": "152.5 cm", "reportNumber": 1},
        ]
    );
    // `$cond`, a computed dotted field, a literal value, `$$NOW` and the command's `let`.
    let got: Vec<Document> = coll
        .find(doc! {"_id": {"$lte": 2}})
        .projection(doc! {
            "_id": 0,
            "item": 1,
            "status": {"$cond": {"if": {"$eq": ["$status", "A"]}, "then": "Available", "else": "Discontinued"}},
            "size.area": {"$multiply": ["$size.h", "$size.w"]},
            "kind": "stationery",
            "asOf": "$$NOW",
            "who": "$$who",
        })
        .let_vars(doc! {"who": "audit"})
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(got.len(), 2);
    for (d, (item, area)) in got.iter().zip([
        ("journal", Bson::Int32(294)),
        ("notebook", Bson::Double(93.5)),
    ]) {
        assert_eq!(d.get_str("item").unwrap(), item);
        assert_eq!(d.get_str("status").unwrap(), "Available");
        assert_eq!(d.get_document("size").unwrap(), &doc! {"area": area});
        assert_eq!(d.get_str("kind").unwrap(), "stationery");
        assert!(matches!(d.get("asOf"), Some(Bson::DateTime(_))), "{d}");
        assert_eq!(d.get_str("who").unwrap(), "audit");
        let keys: Vec<&str> = d.keys().map(String::as_str).collect();
        // `size` exists in the document, so it keeps its place; the computed fields that are
        // new follow in the projection's order.
        assert_eq!(keys, ["item", "size", "status", "kind", "asOf", "who"]);
    }
}

#[tokio::test]
async fn elem_match_slice_and_positional_as_documented() {
    let server = TestServer::start().await;
    let db = server.client().await.database("proj");
    let schools = db.collection::<Document>("schools");
    schools
        .insert_many(vec![
            doc! {"_id": 1, "zipcode": "63109", "students": [{"name": "john", "school": 102, "age": 10}, {"name": "jess", "school": 102, "age": 11}, {"name": "jeff", "school": 108, "age": 15}]},
            doc! {"_id": 2, "zipcode": "63110", "students": [{"name": "ajax", "school": 100, "age": 7}, {"name": "achilles", "school": 100, "age": 8}]},
            doc! {"_id": 3, "zipcode": "63109", "students": [{"name": "ajax", "school": 100, "age": 7}, {"name": "achilles", "school": 100, "age": 8}]},
            doc! {"_id": 4, "zipcode": "63109", "students": [{"name": "barney", "school": 102, "age": 7}, {"name": "ruth", "school": 102, "age": 16}]},
        ])
        .await
        .unwrap();
    assert_eq!(
        find(
            &schools,
            doc! {"zipcode": "63109"},
            doc! {"students": {"$elemMatch": {"school": 102}}}
        )
        .await,
        vec![
            doc! {"_id": 1, "students": [{"name": "john", "school": 102, "age": 10}]},
            doc! {"_id": 3},
            doc! {"_id": 4, "students": [{"name": "barney", "school": 102, "age": 7}]},
        ]
    );
    let students = db.collection::<Document>("students");
    students
        .insert_many(vec![
            doc! {"_id": 1, "semester": 1, "grades": [70, 87, 90]},
            doc! {"_id": 2, "semester": 1, "grades": [90, 88, 92]},
            doc! {"_id": 3, "semester": 1, "grades": [85, 100, 90]},
            doc! {"_id": 4, "semester": 2, "grades": [79, 85, 80]},
            doc! {"_id": 5, "semester": 2, "grades": [88, 88, 92]},
            doc! {"_id": 6, "semester": 2, "grades": [95, 90, 96]},
        ])
        .await
        .unwrap();
    assert_eq!(
        find(
            &students,
            doc! {"semester": 1, "grades": {"$gte": 85}},
            doc! {"grades.$": 1}
        )
        .await,
        vec![
            doc! {"_id": 1, "grades": [87]},
            doc! {"_id": 2, "grades": [90]},
            doc! {"_id": 3, "grades": [85]},
        ]
    );
    assert_eq!(
        find(
            &students,
            doc! {"semester": 2},
            doc! {"grades": {"$slice": [1, 1]}, "_id": 0}
        )
        .await,
        vec![
            doc! {"semester": 2, "grades": [85]},
            doc! {"semester": 2, "grades": [88]},
            doc! {"semester": 2, "grades": [90]},
        ]
    );
    // findAndModify's `fields` is a find projection: the positional `$` works there too.
    let reply = db
        .run_command(doc! {
            "findAndModify": "students",
            "query": {"_id": 3, "grades": {"$gte": 95}},
            "update": {"$set": {"checked": true}},
            "fields": {"grades.$": 1},
        })
        .await
        .unwrap();
    assert_eq!(
        reply.get_document("value").unwrap(),
        &doc! {"_id": 3, "grades": [100]}
    );
    // The errors mongod gives.
    assert_eq!(
        find_err(&students, doc! {"semester": 1}, doc! {"grades.$": 1}).await,
        31277
    );
    assert_eq!(
        find_err(
            &students,
            doc! {"grades": 85},
            doc! {"semester": 0, "grades.$": 1}
        )
        .await,
        31253
    );
    assert_eq!(
        find_err(&students, doc! {}, doc! {"grades": {"$elemMatch": 1}}).await,
        31274
    );
    assert_eq!(
        find_err(&students, doc! {}, doc! {"s": {"$meta": "textScore"}}).await,
        40218
    );
}

#[tokio::test]
async fn project_computes_fields_at_any_depth() {
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("proj")
        .collection::<Document>("inventory");
    coll.insert_many(inventory()).await.unwrap();
    let got: Vec<Document> = coll
        .aggregate(vec![
            doc! {"$match": {"_id": {"$in": [1, 3]}}},
            doc! {"$sort": {"_id": 1}},
            doc! {"$project": {
                "_id": 0,
                "item": 1,
                "size.area": {"$multiply": ["$size.h", "$size.w"]},
                "size": {"uom": 1, "label": {"$concat": ["$item", "/", "$size.uom"]}},
                "instock.total": {"$sum": "$instock.qty"},
            }},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        got,
        vec![
            doc! {"item": "journal", "size": {"uom": "cm", "area": 294, "label": "journal/cm"}, "instock": [{"total": 5}]},
            doc! {"item": "paper", "size": {"uom": "in", "area": 93.5, "label": "paper/in"}, "instock": [{"total": 60}]},
        ]
    );
    let err = coll
        .aggregate(vec![doc! {"$project": {"grades.$": 1}}])
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(31324));
}
