//! Cosmos DB's custom TTL path (TTL-30): a Cosmos-profile server with the capability
//! `EnableTtlOnCustomPath` (`--cosmos-ttl-custom-path`), through the Rust driver and the manual
//! clock. The field holds a BSON date or Unix milliseconds; one per collection, never beside a
//! `_ts` TTL index.

use crate::common;

use common::bson::{doc, Bson, DateTime, Decimal128, Document};
use common::ttl::{advance, now, reaper, set_collection_ttl, ttl_status, visible};
use common::{error_code, TestServer};
use mayfly::clock::Clock;
use mayfly::profile::{CosmosVersion, Profile};
use mongodb::{Collection, Database};

/// A Cosmos 7.0 account with the custom TTL path capability.
async fn custom_path_server() -> TestServer {
    TestServer::start_cosmos(Profile {
        ttl_custom_path: true,
        ..Profile::cosmos(CosmosVersion::V7_0)
    })
    .await
}

/// A BSON date `seconds` after the epoch.
fn date(seconds: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(seconds * 1000))
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

async fn create(
    db: &Database,
    coll: &str,
    key: Document,
    value: impl Into<Bson>,
) -> mongodb::error::Result<Document> {
    let name = format!("{}_ttl", key.keys().next().unwrap());
    db.run_command(doc! {
        "createIndexes": coll,
        "indexes": [{"key": key, "name": name, "expireAfterSeconds": value.into()}],
    })
    .await
}

fn message(err: &mongodb::error::Error) -> String {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => c.message.clone(),
        other => panic!("not a command error: {other:?}"),
    }
}

async fn index_names(db: &Database, coll: &str) -> Vec<Document> {
    db.run_command(doc! {"listIndexes": coll})
        .await
        .map(|reply| {
            reply
                .get_document("cursor")
                .unwrap()
                .get_array("firstBatch")
                .unwrap()
                .iter()
                .filter_map(|i| i.as_document().cloned())
                .collect()
        })
        .unwrap_or_default()
}

async fn counts(coll: &Collection<Document>) -> (u64, u64) {
    (
        coll.count_documents(doc! {}).await.unwrap(),
        coll.estimated_document_count().await.unwrap(),
    )
}

#[tokio::test]
async fn a_custom_path_takes_the_cosmos_value_rules_ttl_30() {
    let server = custom_path_server().await;
    let db = server.client().await.database("custom");
    // TTL-2: every numeric type holding -1 or 1..=2147483647; listed as Int32 (TTL-8).
    for (coll, value, listed) in [
        ("int", Bson::Int32(10), 10),
        ("long", Bson::Int64(3600), 3600),
        ("double", Bson::Double(10.0), 10),
        ("decimal", dec("86400"), 86400),
        ("never", Bson::Int32(-1), -1),
        ("max", Bson::Int64(2_147_483_647), i32::MAX),
    ] {
        let reply = create(&db, coll, doc! {"expiresAt": 1}, value)
            .await
            .unwrap();
        assert_eq!(reply.get_bool("createdCollectionAutomatically"), Ok(true));
        let entry = index_names(&db, coll)
            .await
            .into_iter()
            .find(|i| i.get_str("name") == Ok("expiresAt_ttl"))
            .unwrap();
        assert_eq!(entry.get("expireAfterSeconds"), Some(&Bson::Int32(listed)));
        assert_eq!(entry.get_document("key"), Ok(&doc! {"expiresAt": 1}));
    }
    // `customAction: "GetCollection"` lists it with its value.
    let reply = db
        .run_command(
            doc! {"customAction": "GetCollection", "collection": "int", "showIndexes": true},
        )
        .await
        .unwrap();
    assert_eq!(
        reply.get_array("indexes").unwrap(),
        &vec![
            Bson::Document(
                doc! {"v": 2, "key": {"_id": 1}, "name": "_id_", "requiresReIndex": false}
            ),
            Bson::Document(doc! {
                "v": 2,
                "key": {"expiresAt": 1},
                "name": "expiresAt_ttl",
                "expireAfterSeconds": 10,
                "requiresReIndex": false,
            }),
        ]
    );
    // TTL-3: the same code and message as for `_ts`; nothing is created.
    for value in [
        Bson::Int32(0),
        Bson::Int32(-5),
        Bson::Int64(2_147_483_648),
        Bson::Double(10.5),
        Bson::String("10".into()),
        Bson::Null,
    ] {
        let err = create(&db, "refused", doc! {"at": 1}, value.clone())
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(67), "{value:?}");
        assert!(
            message(&err)
                .starts_with("TTL index 'expireAfterSeconds' option must be -1 or an integer"),
            "{value:?}: {}",
            message(&err)
        );
    }
    // A compound key or `_id`: 2, as TTL-4, checked before the value.
    for key in [
        doc! {"a": 1, "b": 1},
        doc! {"_ts": 1, "a": 1},
        doc! {"_id": 1},
    ] {
        let err = create(&db, "refused", key.clone(), 0).await.unwrap_err();
        assert_eq!(error_code(&err), Some(2), "{key}");
        assert_eq!(
            message(&err),
            "The 'expireAfterSeconds' option is supported on '_ts' or on one single custom \
             field other than '_id' only."
        );
    }
    assert!(index_names(&db, "refused").await.is_empty());
}

#[tokio::test]
async fn one_custom_path_per_collection_never_beside_ts_ttl_30() {
    let server = custom_path_server().await;
    let db = server.client().await.database("custom");
    create(&db, "c", doc! {"at": 1}, 10).await.unwrap();
    // TTL-6: the same index again changes nothing; another value is 85.
    let again = create(&db, "c", doc! {"at": 1}, 10).await.unwrap();
    assert_eq!(
        again.get_i32("numIndexesBefore"),
        again.get_i32("numIndexesAfter")
    );
    let err = create(&db, "c", doc! {"at": 1}, 20).await.unwrap_err();
    assert_eq!(error_code(&err), Some(85));
    // A second custom path, and a `_ts` TTL index beside the custom path: 67.
    let err = create(&db, "c", doc! {"other": 1}, 10).await.unwrap_err();
    assert_eq!(error_code(&err), Some(67));
    assert_eq!(
        message(&err),
        "Cannot create a TTL index on the custom path 'other': the collection already has its \
         custom TTL path 'at' (index 'at_ttl'); only one is allowed per collection"
    );
    let err = create(&db, "c", doc! {"_ts": 1}, 10).await.unwrap_err();
    assert_eq!(error_code(&err), Some(67));
    assert_eq!(
        message(&err),
        "Cannot create a TTL index on '_ts': the collection's TTL is on the custom path 'at' \
         (index 'at_ttl'); drop that index first"
    );
    // An ordinary index on another field is still fine.
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"other": 1}, "name": "o"}]})
        .await
        .unwrap();
    // The reverse: a `_ts` TTL index first refuses a custom path.
    set_collection_ttl(&db, "ts", 10).await;
    let err = create(&db, "ts", doc! {"at": 1}, 10).await.unwrap_err();
    assert_eq!(error_code(&err), Some(67));
    assert_eq!(
        message(&err),
        "Cannot create a TTL index on the custom path 'at': the collection's TTL is on '_ts' \
         (index '_ts_1'); drop that index first"
    );
    // Two in one request are refused as well, and create nothing.
    let err = db
        .run_command(doc! {"createIndexes": "both", "indexes": [
            {"key": {"a": 1}, "name": "a_1", "expireAfterSeconds": 10},
            {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 10},
        ]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(67));
    assert!(index_names(&db, "both").await.is_empty());
    // Dropping the custom path frees the collection for `_ts`.
    db.collection::<Document>("c")
        .drop_index("at_ttl")
        .await
        .unwrap();
    set_collection_ttl(&db, "c", 10).await;
}

#[tokio::test]
async fn dates_and_epoch_milliseconds_expire_at_the_exact_second_ttl_30() {
    let server = custom_path_server().await;
    let client = server.portal_client().await;
    reaper(&client, "pause").await;
    let db = client.database("custom");
    create(&db, "c", doc! {"at": 1}, 10).await.unwrap();
    let coll = db.collection::<Document>("c");
    let t = now(&client).await;
    let ms = |seconds: i64| (t + seconds) * 1000;
    coll.insert_many([
        doc! {"_id": "date", "at": date(t + 2)},          // t + 12
        doc! {"_id": "long", "at": ms(4)},                // t + 14
        doc! {"_id": "double", "at": ms(5) as f64 + 0.5}, // fraction: t + 16
        doc! {"_id": "decimal", "at": dec(&ms(7).to_string())}, // t + 17
        doc! {"_id": "array", "at": [ms(30), date(t + 9), "x"]}, // smallest: t + 19
        doc! {"_id": "ttl", "at": ms(20), "ttl": 1},      // own ttl ignored: t + 30
        doc! {"_id": "int", "at": 5_i32},                 // 5 ms after the epoch
        doc! {"_id": "missing"},
        doc! {"_id": "string", "at": ms(0).to_string()},
        doc! {"_id": "null", "at": Bson::Null},
        doc! {"_id": "nan", "at": f64::NAN},
        doc! {"_id": "nested", "at": {"t": ms(0)}},
    ])
    .await
    .unwrap();
    assert!(!visible(&coll, "int").await, "long due: invisible at once");
    let mut elapsed = 0;
    for (second, gone) in [
        (12, "date"),
        (14, "long"),
        (16, "double"),
        (17, "decimal"),
        (19, "array"),
        (30, "ttl"),
    ] {
        advance(&client, second - 1 - elapsed).await;
        assert!(
            visible(&coll, gone).await,
            "{gone} visible at t+{}",
            second - 1
        );
        advance(&client, 1).await;
        elapsed = second;
        assert!(!visible(&coll, gone).await, "{gone} gone at t+{second}");
    }
    // Missing or another type: never expires.
    advance(&client, 1_000_000).await;
    assert_eq!(counts(&coll).await, (5, 5));
    // Every expired one is due to the reaper, through the index's numbers and dates.
    assert_eq!(ttl_status(&client).await.get_i64("backlog"), Ok(7));
    assert_eq!(reaper(&client, "runOnce").await.get_i64("reaped"), Ok(7));
    assert_eq!(ttl_status(&client).await.get_i64("backlog"), Ok(0));
    coll.drop_index("at_ttl").await.unwrap();
    assert_eq!(counts(&coll).await, (5, 5), "deleted, not hidden");
}

#[tokio::test]
async fn the_reaper_deletes_custom_path_documents_in_batches_ttl_30() {
    let server = custom_path_server().await;
    let client = server.portal_client().await;
    reaper(&client, "pause").await;
    let db = client.database("custom");
    // Descending: the key order puts the dates before the numbers.
    for (coll, direction) in [("up", 1), ("down", -1)] {
        create(&db, coll, doc! {"at": direction}, 5).await.unwrap();
        let t = now(&client).await;
        // More than a batch of each kind, so batches cross from one bracket to the other.
        let docs: Vec<Document> = (0..300)
            .map(|i| match i % 2 {
                0 => doc! {"_id": i, "at": (t - i) * 1000},
                _ => doc! {"_id": i, "at": date(t - i)},
            })
            .chain([
                doc! {"_id": "later", "at": (t + 1000) * 1000},
                doc! {"_id": "nan", "at": f64::NAN},
                doc! {"_id": "word", "at": "soon"},
            ])
            .collect();
        db.collection::<Document>(coll)
            .insert_many(docs)
            .await
            .unwrap();
    }
    advance(&client, 5).await;
    assert_eq!(ttl_status(&client).await.get_i64("backlog"), Ok(600));
    assert_eq!(reaper(&client, "runOnce").await.get_i64("reaped"), Ok(600));
    assert_eq!(ttl_status(&client).await.get_i64("backlog"), Ok(0));
    for coll in ["up", "down"] {
        let coll = db.collection::<Document>(coll);
        coll.drop_index("at_ttl").await.unwrap();
        assert_eq!(counts(&coll).await, (3, 3), "{}", coll.name());
    }
}

#[tokio::test]
async fn custom_path_expiry_survives_a_restart_ttl_30() {
    let server = custom_path_server().await;
    let client = server.portal_client().await;
    let db = client.database("custom");
    create(&db, "c", doc! {"at": 1}, 10).await.unwrap();
    let t = now(&client).await;
    db.collection::<Document>("c")
        .insert_many([
            doc! {"_id": 1, "at": t * 1000},
            doc! {"_id": 2, "at": (t + 100) * 1000},
        ])
        .await
        .unwrap();
    drop(client);
    server.clock.advance(std::time::Duration::from_secs(50));
    let server = server.restart().await;
    let client = server.portal_client().await;
    reaper(&client, "pause").await;
    let coll = client.database("custom").collection::<Document>("c");
    assert!(!visible(&coll, 1).await, "invisible from the first request");
    assert!(visible(&coll, 2).await);
    assert_eq!(reaper(&client, "runOnce").await.get_i64("reaped"), Ok(1));
}

#[tokio::test]
async fn without_the_capability_ttl_4_still_refuses_ttl_30() {
    let server = TestServer::start_cosmos_7().await;
    let db = server.client().await.database("custom");
    let err = create(&db, "c", doc! {"at": 1}, 10).await.unwrap_err();
    assert_eq!(error_code(&err), Some(2));
    assert_eq!(
        message(&err),
        "The 'expireAfterSeconds' option is supported on '_ts' field only."
    );
}
