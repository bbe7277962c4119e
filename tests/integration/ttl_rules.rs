//! The Cosmos TTL rules end to end through the Rust driver: every row of the Examples table of
//! ttl.md (visible at T+n-1, gone at T+n), and the TTL index rules TTL-1 … TTL-9.

use crate::common;

use common::bson::{doc, Bson, Decimal128, Document};
use common::ttl::{advance, set_collection_ttl, ttl_collection, visible};
use common::{error_code, TestServer};
use std::str::FromStr;

/// One row of the Examples table: a document, a collection TTL, and when it disappears.
struct Row {
    what: &'static str,
    ttl: Option<Bson>,
    collection_ttl: Option<i32>,
    /// `Some(n)`: visible at T+n-1, gone at T+n. `None`: never expires.
    gone_after: Option<i64>,
}

fn row(
    what: &'static str,
    ttl: Option<Bson>,
    collection_ttl: Option<i32>,
    gone_after: Option<i64>,
) -> Row {
    Row {
        what,
        ttl,
        collection_ttl,
        gone_after,
    }
}

#[tokio::test]
async fn every_examples_row_expires_exactly_when_ttl_md_says() {
    let rows = vec![
        row("no ttl, TTL absent (TTL-10)", None, None, None),
        row(
            "ttl 5, TTL absent (TTL-10)",
            Some(Bson::Int32(5)),
            None,
            None,
        ),
        row("no ttl, TTL -1", None, Some(-1), None),
        row(
            "ttl 5, TTL -1 (TTL-13)",
            Some(Bson::Int32(5)),
            Some(-1),
            Some(5),
        ),
        row(
            "ttl 20.5, TTL -1 (TTL-12)",
            Some(Bson::Double(20.5)),
            Some(-1),
            None,
        ),
        row("no ttl, TTL 10", None, Some(10), Some(10)),
        row(
            "ttl NumberInt(20) (TTL-11)",
            Some(Bson::Int32(20)),
            Some(10),
            Some(20),
        ),
        row(
            "ttl NumberLong(20) (TTL-11)",
            Some(Bson::Int64(20)),
            Some(10),
            Some(20),
        ),
        row(
            "ttl 20.0 (TTL-11)",
            Some(Bson::Double(20.0)),
            Some(10),
            Some(20),
        ),
        row("ttl 2", Some(Bson::Int32(2)), Some(10), Some(2)),
        row("ttl -1 int", Some(Bson::Int32(-1)), Some(10), None),
        row("ttl -1 long", Some(Bson::Int64(-1)), Some(10), None),
        row("ttl -1 double", Some(Bson::Double(-1.0)), Some(10), None),
        row(
            "ttl 20.5 (TTL-12)",
            Some(Bson::Double(20.5)),
            Some(10),
            Some(10),
        ),
        row(
            "ttl NumberLong(2147483649) (TTL-12)",
            Some(Bson::Int64(2_147_483_649)),
            Some(10),
            Some(10),
        ),
        row("ttl 0 (TTL-12)", Some(Bson::Int32(0)), Some(10), Some(10)),
        row("ttl -5 (TTL-12)", Some(Bson::Int32(-5)), Some(10), Some(10)),
        row(
            "ttl \"20\" (TTL-12)",
            Some(Bson::String("20".into())),
            Some(10),
            Some(10),
        ),
        row("ttl null (TTL-12)", Some(Bson::Null), Some(10), Some(10)),
        row(
            "ttl true (TTL-12)",
            Some(Bson::Boolean(true)),
            Some(10),
            Some(10),
        ),
        row(
            "ttl Decimal128 (TTL-12)",
            Some(Bson::Decimal128(Decimal128::from_str("20").unwrap())),
            Some(10),
            Some(10),
        ),
    ];
    for r in rows {
        // A fresh server per row: each row's clock starts at its own T.
        let server = TestServer::start().await;
        let client = server.client().await;
        let db = client.database("ttl");
        if let Some(seconds) = r.collection_ttl {
            set_collection_ttl(&db, "c", seconds).await;
        }
        let coll = db.collection::<Document>("c");
        let mut document = doc! {"_id": 1};
        if let Some(ttl) = r.ttl.clone() {
            document.insert("ttl", ttl);
        }
        coll.insert_one(document.clone()).await.unwrap();
        match r.gone_after {
            Some(n) => {
                advance(&client, n - 1).await;
                assert!(
                    visible(&coll, 1).await,
                    "{}: visible at T+{}",
                    r.what,
                    n - 1
                );
                advance(&client, 1).await;
                assert!(!visible(&coll, 1).await, "{}: gone at T+{n}", r.what);
            }
            None => {
                advance(&client, 2_147_483_647 + 100).await;
                let found = coll.find_one(doc! {"_id": 1}).await.unwrap();
                assert_eq!(
                    found,
                    Some(document),
                    "{}: never expires, stored unchanged",
                    r.what
                );
            }
        }
    }
}

#[tokio::test]
async fn an_update_restarts_the_lifetime_examples_last_row() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_one(doc! {"_id": 1, "n": 0}).await.unwrap();
    advance(&client, 8).await;
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {"n": 1}})
        .await
        .unwrap();
    advance(&client, 9).await;
    assert!(visible(&coll, 1).await, "visible at T+17 (TTL-15)");
    advance(&client, 1).await;
    assert!(!visible(&coll, 1).await, "gone at T+18");
}

#[tokio::test]
async fn an_update_that_changes_nothing_keeps_ts() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_one(doc! {"_id": 1, "n": 1}).await.unwrap();
    advance(&client, 5).await;
    let r = coll
        .update_one(doc! {"_id": 1}, doc! {"$set": {"n": 1}})
        .await
        .unwrap();
    assert_eq!(r.modified_count, 0);
    advance(&client, 5).await;
    assert!(
        !visible(&coll, 1).await,
        "TTL-15: nModified 0 left _ts as it was"
    );
}

#[tokio::test]
async fn setting_or_removing_ttl_resets_the_clock_ttl_17() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = ttl_collection(&client, 10).await;
    coll.insert_many([doc! {"_id": 1}, doc! {"_id": 2, "ttl": 3}])
        .await
        .unwrap();
    advance(&client, 2).await;
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {"ttl": 100}})
        .await
        .unwrap();
    coll.update_one(doc! {"_id": 2}, doc! {"$unset": {"ttl": ""}})
        .await
        .unwrap();
    advance(&client, 9).await;
    assert!(visible(&coll, 1).await && visible(&coll, 2).await);
    advance(&client, 1).await;
    assert!(
        !visible(&coll, 2).await,
        "$unset ttl falls back to the collection TTL from t"
    );
    advance(&client, 89).await;
    assert!(visible(&coll, 1).await);
    advance(&client, 1).await;
    assert!(
        !visible(&coll, 1).await,
        "$set ttl 100 at t expires at t+100"
    );
}

#[tokio::test]
async fn expire_after_seconds_is_accepted_as_every_numeric_type_ttl_2() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("ttl");
    let values = [
        Bson::Int32(10),
        Bson::Int64(10),
        Bson::Double(10.0),
        Bson::Decimal128(Decimal128::from_str("10").unwrap()),
        Bson::Int32(-1),
        Bson::Int32(2_147_483_647),
    ];
    for (i, value) in values.into_iter().enumerate() {
        let name = format!("c{i}");
        let reply = db
            .run_command(doc! {
                "createIndexes": name.as_str(),
                "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": value.clone()}],
            })
            .await
            .unwrap();
        assert!(
            reply.get_bool("createdCollectionAutomatically").unwrap(),
            "TTL-1"
        );
        let listed = db
            .run_command(doc! {"listIndexes": name.as_str()})
            .await
            .unwrap();
        let batch = listed
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap();
        let ttl_index = batch
            .iter()
            .filter_map(Bson::as_document)
            .find(|i| i.get_str("name") == Ok("_ts_1"))
            .unwrap();
        assert!(
            matches!(ttl_index.get("expireAfterSeconds"), Some(Bson::Int32(_))),
            "TTL-8: listIndexes returns Int32 for {value:?}: {ttl_index}"
        );
    }
}

#[tokio::test]
async fn the_exact_command_the_csharp_driver_sends_is_accepted() {
    // new CreateIndexOptions { ExpireAfter = TimeSpan.FromSeconds(10) } on "_ts": the C# driver
    // sends TimeSpan.TotalSeconds as a double, with the generated name.
    let server = TestServer::start().await;
    let db = server.client().await.database("ttl");
    let reply = db
        .run_command(doc! {
            "createIndexes": "c",
            "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 10.0}],
            "$db": "ttl",
        })
        .await
        .unwrap();
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
}

#[tokio::test]
async fn the_rust_drivers_create_index_sets_the_ttl() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = client.database("ttl").collection::<Document>("c");
    let model = mongodb::IndexModel::builder()
        .keys(doc! {"_ts": 1})
        .options(
            mongodb::options::IndexOptions::builder()
                .expire_after(std::time::Duration::from_secs(10))
                .build(),
        )
        .build();
    coll.create_index(model).await.unwrap();
    // The driver's own list_indexes() reads the TTL index back (TTL-8).
    let models: Vec<mongodb::IndexModel> = {
        use futures::TryStreamExt;
        coll.list_indexes()
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    };
    let ttl_index = models
        .iter()
        .find(|m| m.keys == doc! {"_ts": 1})
        .expect("the _ts index");
    let options = ttl_index.options.as_ref().unwrap();
    assert_eq!(
        options.expire_after,
        Some(std::time::Duration::from_secs(10))
    );
    assert_eq!(options.name.as_deref(), Some("_ts_1"));
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    advance(&client, 10).await;
    assert!(!visible(&coll, 1).await);
}

#[tokio::test]
async fn out_of_domain_values_are_refused_with_67_ttl_3() {
    let server = TestServer::start().await;
    let db = server.client().await.database("ttl");
    let refused = [
        Bson::Int32(0),
        Bson::Int32(-2),
        Bson::Int64(2_147_483_648),
        Bson::Double(10.5),
        Bson::Double(f64::NAN),
        Bson::String("10".into()),
        Bson::Null,
    ];
    for value in refused {
        let err = db
            .run_command(doc! {
                "createIndexes": "c",
                "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": value.clone()}],
            })
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(67), "{value:?}");
    }
    let names = db
        .collection::<Document>("c")
        .list_index_names()
        .await
        .unwrap_or_default();
    assert!(
        !names.contains(&"_ts_1".to_string()),
        "no index was created"
    );
}

#[tokio::test]
async fn expire_after_seconds_on_other_keys_is_refused_with_2_ttl_4() {
    // The Cosmos profile; the default one makes date TTL indexes (`ttl_dates.rs`, TTL-25).
    let server = TestServer::start_cosmos(mayfly::profile::Profile::cosmos(
        mayfly::profile::CosmosVersion::V7_0,
    ))
    .await;
    let db = server.client().await.database("ttl");
    for key in [
        doc! {"createdAt": 1},
        doc! {"_ts": 1, "a": 1},
        doc! {"_id": 1},
    ] {
        // The key pattern is checked before the value: even a bad value gets 2.
        for value in [Bson::Int32(10), Bson::Int32(0)] {
            let err = db
                .run_command(doc! {
                    "createIndexes": "c",
                    "indexes": [{"key": key.clone(), "name": "x", "expireAfterSeconds": value}],
                })
                .await
                .unwrap_err();
            assert_eq!(error_code(&err), Some(2), "{key}");
            let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
                panic!()
            };
            assert_eq!(
                c.message,
                "The 'expireAfterSeconds' option is supported on '_ts' field only."
            );
        }
    }
}

#[tokio::test]
async fn a_ts_index_without_expire_after_seconds_is_ordinary_ttl_5() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("ttl");
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"_ts": 1}, "name": "_ts_1"}]})
        .await
        .unwrap();
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "ttl": 5}).await.unwrap();
    advance(&client, 1_000_000).await;
    assert!(visible(&coll, 1).await);
}

#[tokio::test]
async fn recreating_the_ttl_index_is_idempotent_and_a_new_value_conflicts_ttl_6() {
    let server = TestServer::start().await;
    let db = server.client().await.database("ttl");
    set_collection_ttl(&db, "c", 10).await;
    let again = db
        .run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 10}]})
        .await
        .unwrap();
    assert_eq!(
        again.get_i32("numIndexesBefore").unwrap(),
        again.get_i32("numIndexesAfter").unwrap()
    );
    let err = db
        .run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 20}]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(85));
}

#[tokio::test]
async fn coll_mod_of_expire_after_seconds_is_refused_with_115_ttl_7() {
    let server = TestServer::start().await;
    let db = server.client().await.database("ttl");
    set_collection_ttl(&db, "c", 10).await;
    let err = db
        .run_command(
            doc! {"collMod": "c", "index": {"keyPattern": {"_ts": 1}, "expireAfterSeconds": 20}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(115));
}

#[tokio::test]
async fn drop_and_recreate_applies_the_new_value_to_existing_documents_ttl_7() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("ttl");
    set_collection_ttl(&db, "c", 100).await;
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    advance(&client, 10).await;
    coll.drop_index("_ts_1").await.unwrap();
    set_collection_ttl(&db, "c", 10).await;
    assert!(
        !visible(&coll, 1).await,
        "the new TTL counts from the document's _ts"
    );
}
