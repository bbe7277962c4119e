//! `$setWindowFields`, `$densify` and `$fill` through the driver: the reference pages'
//! examples, mongod's error codes, and TTL-18 (a row whose document expired is not returned).

use crate::common;

use common::bson::{doc, Bson, DateTime, Document};
use common::pipelines::{aggregate, aggregate_err};
use common::ttl::{advance, reaper, ttl_collection};
use common::TestServer;
use mongodb::Collection;

fn date(s: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(s).unwrap())
}

async fn cake_sales(coll: &Collection<Document>) {
    coll.insert_many([
        doc! {"_id": 0, "type": "chocolate", "orderDate": date("2020-05-18T14:10:30Z"), "state": "CA", "price": 13, "quantity": 120},
        doc! {"_id": 1, "type": "chocolate", "orderDate": date("2021-03-20T11:30:05Z"), "state": "WA", "price": 14, "quantity": 140},
        doc! {"_id": 2, "type": "vanilla", "orderDate": date("2021-01-11T06:31:15Z"), "state": "CA", "price": 12, "quantity": 145},
        doc! {"_id": 3, "type": "vanilla", "orderDate": date("2020-02-08T13:13:23Z"), "state": "WA", "price": 13, "quantity": 104},
        doc! {"_id": 4, "type": "strawberry", "orderDate": date("2019-05-18T16:09:01Z"), "state": "CA", "price": 41, "quantity": 162},
        doc! {"_id": 5, "type": "strawberry", "orderDate": date("2019-01-08T06:12:03Z"), "state": "WA", "price": 43, "quantity": 134},
    ])
    .await
    .unwrap();
}

/// `(_id, field)` of each document, in order.
fn pairs(docs: &[Document], field: &str) -> Vec<(i32, Bson)> {
    docs.iter()
        .map(|d| {
            (
                d.get_i32("_id").unwrap(),
                d.get(field).cloned().unwrap_or(Bson::Null),
            )
        })
        .collect()
}

#[tokio::test]
async fn set_window_fields_computes_the_reference_examples() {
    let server = TestServer::start().await;
    let coll = server.client().await.database("w").collection("cakeSales");
    cake_sales(&coll).await;
    let out = aggregate(
        &coll,
        vec![doc! {"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "cumulativeQuantityForState": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}},
            "maximumQuantityForState": {"$max": "$quantity"}}}}],
    )
    .await;
    assert_eq!(
        pairs(&out, "cumulativeQuantityForState"),
        [(4, 162), (0, 282), (2, 427), (5, 134), (3, 238), (1, 378)]
            .map(|(id, n)| (id, Bson::Int32(n)))
            .to_vec()
    );
    assert_eq!(out[0].get_i32("maximumQuantityForState").unwrap(), 162);
    let out = aggregate(
        &coll,
        vec![
            doc! {"$setWindowFields": {"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {
                "rankQuantityForState": {"$rank": {}}}}},
            doc! {"$project": {"rankQuantityForState": 1}},
        ],
    )
    .await;
    assert_eq!(
        pairs(&out, "rankQuantityForState"),
        [(4, 1), (2, 2), (0, 3), (1, 1), (5, 2), (3, 3)]
            .map(|(id, n)| (id, Bson::Int32(n)))
            .to_vec()
    );
    let out = aggregate(
        &coll,
        vec![
            doc! {"$setWindowFields": {"partitionBy": "$state", "sortBy": {"price": 1}, "output": {
            "quantityFromSimilarOrders": {"$sum": "$quantity", "window": {"range": [-10, 10]}}}}},
        ],
    )
    .await;
    assert_eq!(
        pairs(&out, "quantityFromSimilarOrders"),
        [(2, 265), (0, 265), (4, 162), (3, 244), (1, 244), (5, 134)]
            .map(|(id, n)| (id, Bson::Int32(n)))
            .to_vec()
    );
}

#[tokio::test]
async fn densify_and_fill_fill_the_gaps() {
    let server = TestServer::start().await;
    let db = server.client().await.database("w");
    let coffee = db.collection::<Document>("coffee");
    coffee
        .insert_many([
            doc! {"_id": 1, "altitude": 600, "variety": "Arabica Typica"},
            doc! {"_id": 2, "altitude": 750, "variety": "Arabica Typica"},
            doc! {"_id": 3, "altitude": 950, "variety": "Arabica Typica"},
            doc! {"_id": 4, "altitude": 1250, "variety": "Arabica Typica"},
            doc! {"_id": 5, "altitude": 1700, "variety": "Gesha"},
            doc! {"_id": 6, "altitude": 1400, "variety": "Gesha"},
        ])
        .await
        .unwrap();
    let out = aggregate(
        &coffee,
        vec![doc! {"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "partition", "step": 200}}}],
    )
    .await;
    let altitudes: Vec<i32> = out.iter().map(|d| d.get_i32("altitude").unwrap()).collect();
    assert_eq!(
        altitudes,
        vec![600, 750, 800, 950, 1000, 1200, 1250, 1400, 1600, 1700]
    );
    assert_eq!(out[2], doc! {"variety": "Arabica Typica", "altitude": 800});

    let stock = db.collection::<Document>("stock");
    stock
        .insert_many([
            doc! {"_id": 0, "time": date("2021-03-08T09:00:00Z"), "price": 500},
            doc! {"_id": 1, "time": date("2021-03-08T10:00:00Z")},
            doc! {"_id": 2, "time": date("2021-03-08T11:00:00Z"), "price": 515},
            doc! {"_id": 3, "time": date("2021-03-08T12:00:00Z")},
            doc! {"_id": 4, "time": date("2021-03-08T13:00:00Z")},
            doc! {"_id": 5, "time": date("2021-03-08T14:00:00Z"), "price": 485},
        ])
        .await
        .unwrap();
    let out = aggregate(
        &stock,
        vec![doc! {"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}, "note": {"value": "filled"}}}}],
    )
    .await;
    assert_eq!(
        pairs(&out, "price"),
        vec![
            (0, Bson::Int32(500)),
            (1, Bson::Double(507.5)),
            (2, Bson::Int32(515)),
            (3, Bson::Double(505.0)),
            (4, Bson::Double(495.0)),
            (5, Bson::Int32(485)),
        ]
    );
    assert!(out.iter().all(|d| d.get_str("note") == Ok("filled")));
    let out = aggregate(
        &stock,
        vec![doc! {"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "locf"}}}}],
    )
    .await;
    assert_eq!(out[4].get("price"), Some(&Bson::Int32(515)));
}

#[tokio::test]
async fn bad_stages_fail_with_mongods_codes() {
    let server = TestServer::start().await;
    let coll = server
        .client()
        .await
        .database("w")
        .collection::<Document>("cakeSales");
    cake_sales(&coll).await;
    let cases = [
        (doc! {"$setWindowFields": {"sortBy": {"a": 1}}}, 40414),
        (
            doc! {"$setWindowFields": {"output": {"a": {"$sum": 1, "window": {"range": [0, 1]}}}}},
            5339902,
        ),
        (
            doc! {"$setWindowFields": {"output": {"a": {"$rank": {}}}}},
            5371602,
        ),
        (
            doc! {"$setWindowFields": {"sortBy": {"type": 1}, "output": {"a": {"$sum": 1, "window": {"range": [0, 1]}}}}},
            5429414,
        ),
        (
            doc! {"$densify": {"field": "price", "range": {"step": -1, "bounds": "full"}}},
            5733401,
        ),
        (
            doc! {"$densify": {"field": "type", "range": {"step": 1, "bounds": "full"}}},
            5733201,
        ),
        (
            doc! {"$fill": {"output": {"price": {"method": "linear"}}}},
            605001,
        ),
        (doc! {"$fill": {"output": {}}}, 6050203),
    ];
    for (stage, code) in cases {
        assert_eq!(
            aggregate_err(&coll, vec![stage.clone()]).await,
            Some(code),
            "{stage}"
        );
    }
}

/// TTL-18: expired documents neither appear nor count in a window, and a window row whose
/// document expires while the cursor is open is not returned by a later batch.
#[tokio::test]
async fn expired_documents_leave_windows_ttl_18() {
    let server = TestServer::start().await;
    let client = server.client().await;
    reaper(&client, "pause").await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_many([doc! {"_id": 1, "v": 1}, doc! {"_id": 2, "v": 2}])
        .await
        .unwrap();
    advance(&client, 5).await;
    coll.insert_many([doc! {"_id": 3, "v": 3}, doc! {"_id": 4, "v": 4}])
        .await
        .unwrap();
    advance(&client, 5).await; // 1 and 2 are exactly 10 seconds old: expired.
    let pipeline = vec![doc! {"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
    "total": {"$sum": "$v"}, "n": {"$documentNumber": {}}}}}];
    let out = aggregate(&coll, pipeline.clone()).await;
    assert_eq!(
        out,
        vec![
            doc! {"_id": 3, "v": 3, "total": 7, "n": 1},
            doc! {"_id": 4, "v": 4, "total": 7, "n": 2},
        ]
    );
    coll.insert_one(doc! {"_id": 5, "v": 5}).await.unwrap();
    let db = client.database("ttl");
    let first = db
        .run_command(doc! {"aggregate": "c", "pipeline": pipeline, "cursor": {"batchSize": 1}})
        .await
        .unwrap();
    let cursor = first.get_document("cursor").unwrap();
    assert_eq!(
        cursor.get_array("firstBatch").unwrap(),
        &vec![Bson::Document(doc! {"_id": 3, "v": 3, "total": 12, "n": 1})]
    );
    let id = cursor.get_i64("id").unwrap();
    advance(&client, 5).await; // 3 and 4 expire; 5 lives on.
    let more = db
        .run_command(doc! {"getMore": id, "collection": "c", "batchSize": 10})
        .await
        .unwrap();
    assert_eq!(
        more.get_document("cursor")
            .unwrap()
            .get_array("nextBatch")
            .unwrap(),
        &vec![Bson::Document(doc! {"_id": 5, "v": 5, "total": 12, "n": 3})],
        "the row of expired document 4 is gone; 5 keeps the values computed when the stage ran"
    );
}
