//! The Cosmos profile's account commands and shard keys (docs/cosmos.md, "The rules"):
//! `customAction` (`CreateDatabase`, `UpdateDatabase`, `GetDatabase`, `CreateCollection`,
//! `UpdateCollection`, `GetCollection`) with the reply shapes of Microsoft's custom-commands
//! page, `shardCollection`, and the `shard-keys` rule on writes and unique indexes, each
//! through the Rust driver as an application connects to an account; the default profile
//! answers both commands as mongod 7.0 answers a command it lacks.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::cosmos::{failure, next_events};
use common::TestServer;
use mayfly::profile::refusal::rule_line;
use mayfly::profile::shard_keys::{NOT_FOUND, NOT_TARGETED};
use mayfly::profile::{CosmosVersion, Profile, Rule};
use mongodb::{Client, Database, IndexModel};

/// Runs a command and returns its reply without the replica set's `$clusterTime` and
/// `operationTime`.
async fn run(db: &Database, command: Document) -> Document {
    let mut reply = db.run_command(command).await.unwrap();
    reply.remove("$clusterTime");
    reply.remove("operationTime");
    reply
}

/// The code of a failed command (the driver reads `code` from `{ok: 0, code, errMsg}` too).
async fn code(db: &Database, command: Document) -> i32 {
    failure(db.run_command(command).await.unwrap_err()).0
}

/// Cosmos's text first and unchanged, then the line naming the `shard-keys` rule.
fn assert_shard_key_refusal(message: &str, cosmos_text: &str) {
    let (text, line) = message.rsplit_once('\n').expect("two lines");
    assert_eq!(text, cosmos_text);
    assert_eq!(line, rule_line(Rule::ShardKeys));
}

/// `app.orders`, sharded on `tenant`, holding `{_id: 1, tenant: "t1", n: 1}`.
async fn sharded_orders(client: &Client) -> mongodb::Collection<Document> {
    let db = client.database("app");
    run(
        &db,
        doc! {"customAction": "CreateCollection", "collection": "orders", "shardKey": "tenant"},
    )
    .await;
    let orders = db.collection::<Document>("orders");
    orders
        .insert_one(doc! {"_id": 1, "tenant": "t1", "n": 1})
        .await
        .unwrap();
    orders
}

#[tokio::test]
async fn create_collection_with_shard_key_and_throughput() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let created = run(
        &db,
        doc! {"customAction": "CreateCollection", "collection": "big", "shardKey": "a.b", "offerThroughput": 11000},
    )
    .await;
    assert_eq!(created, doc! {"ok": 1.0});
    run(
        &db,
        doc! {"customAction": "CreateCollection", "collection": "auto", "shardKey": "tenant", "autoScaleSettings": {"maxThroughput": 20000}},
    )
    .await;
    run(
        &db,
        doc! {"customAction": "CreateCollection", "collection": "small"},
    )
    .await;
    let names = db.list_collection_names().await.unwrap();
    for name in ["big", "auto", "small"] {
        assert!(names.contains(&name.to_owned()), "{names:?}");
    }
    // Over 10,000 RU/s needs a shard key; an existing collection is not created again.
    let refused = [
        doc! {"customAction": "CreateCollection", "collection": "x", "offerThroughput": 11000},
        doc! {"customAction": "CreateCollection", "collection": "x", "autoScaleSettings": {"maxThroughput": 20000}},
        doc! {"customAction": "CreateCollection", "collection": "x", "offerThroughput": 400, "autoScaleSettings": {"maxThroughput": 4000}},
        doc! {"customAction": "CreateCollection", "collection": "x", "offerThroughput": 450},
    ];
    for command in refused {
        assert_eq!(code(&db, command.clone()).await, 2, "{command}");
    }
    let again = doc! {"customAction": "CreateCollection", "collection": "big"};
    assert_eq!(code(&db, again).await, 48);
    // A failure is the page's "default output", `errMsg`, with MongoDB's `errmsg` beside it
    // (customaction-failure-carries-errmsg: drivers build their error from `errmsg`).
    let mut raw = server.raw().await;
    let reply = raw
        .command(
            1,
            &doc! {"customAction": "CreateCollection", "collection": "x", "offerThroughput": 11000, "$db": "app"},
        )
        .await
        .document;
    assert_eq!(reply.get("ok"), Some(&Bson::Double(0.0)));
    assert_eq!(reply.get_i32("code").unwrap(), 2);
    assert_eq!(
        reply.get_str("errMsg").unwrap(),
        "offerThroughput 11000 is over 10000 RU/s, the most a collection without a shardKey may have"
    );
    assert_eq!(reply.get_str("errmsg"), reply.get_str("errMsg"), "{reply}");
    assert_eq!(reply.get_str("codeName").unwrap(), "BadValue");
}

#[tokio::test]
async fn get_collection_shows_them() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    run(
        &db,
        doc! {"customAction": "CreateCollection", "collection": "manual", "shardKey": "pk", "offerThroughput": 500},
    )
    .await;
    run(
        &db,
        doc! {"customAction": "CreateCollection", "collection": "autoscale", "shardKey": "a.b", "autoScaleSettings": {"maxThroughput": 4000}},
    )
    .await;
    // An insert creates "a new fixed, unsharded, collection with 400RU/s".
    db.collection::<Document>("implicit")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    let get = |name: &str| doc! {"customAction": "GetCollection", "collection": name};
    assert_eq!(
        run(&db, get("manual")).await,
        doc! {
            "database": "app",
            "collection": "manual",
            "shardKeyDefinition": {"pk": "hashed"},
            "provisionedThroughput": 500,
            "maxContentLength": 2_097_152,
            "ok": 1.0,
        }
    );
    assert_eq!(
        run(&db, get("autoscale")).await,
        doc! {
            "database": "app",
            "collection": "autoscale",
            "shardKeyDefinition": {"a.b": "hashed"},
            "provisionedThroughput": 400,
            "autoScaleSettings": {"maxThroughput": 4000},
            "maxContentLength": 2_097_152,
            "ok": 1.0,
        }
    );
    assert_eq!(
        run(&db, get("implicit")).await,
        doc! {
            "database": "app",
            "collection": "implicit",
            "provisionedThroughput": 400,
            "maxContentLength": 2_097_152,
            "ok": 1.0,
        }
    );
    assert_eq!(code(&db, get("missing")).await, 26);
    let shown = doc! {"customAction": "GetCollection", "collection": "manual", "showIndexes": true};
    assert_eq!(
        run(&db, shown).await.get_array("indexes").unwrap(),
        &vec![Bson::Document(
            doc! {"v": 2, "key": {"_id": 1}, "name": "_id_", "requiresReIndex": false}
        )]
    );
    // The settings are kept with the catalog: they survive a restart.
    let server = server.restart().await;
    let client = server.portal_client().await;
    let reply = run(&client.database("app"), get("manual")).await;
    assert_eq!(reply.get_i32("provisionedThroughput").unwrap(), 500);
    assert_eq!(
        reply.get_document("shardKeyDefinition").unwrap(),
        &doc! {"pk": "hashed"}
    );
}

#[tokio::test]
async fn update_collection_indexes_replace_all() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let id = doc! {"key": {"_id": 1}, "name": "_id_1"};
    run(
        &db,
        doc! {"customAction": "CreateCollection", "collection": "c", "indexes": [
            id.clone(),
            {"key": {"a": 1}, "name": "a_1"},
            {"key": {"b": 1}, "name": "b_1"},
        ]},
    )
    .await;
    let coll = db.collection::<Document>("c");
    let names = || async { coll.list_index_names().await.unwrap() };
    assert_eq!(names().await, vec!["_id_", "a_1", "b_1"]);
    // The list replaces the collection's indexes: `a_1` goes, `c_1` comes, `b_1` stays.
    let updated = run(
        &db,
        doc! {"customAction": "UpdateCollection", "collection": "c", "indexes": [
            id.clone(),
            {"key": {"b": 1}, "name": "b_1"},
            {"key": {"c": 1}, "name": "c_1"},
        ]},
    )
    .await;
    assert_eq!(updated, doc! {"ok": 1.0});
    assert_eq!(names().await, vec!["_id_", "b_1", "c_1"]);
    // The `_id` index is required; index rules apply as in createIndexes.
    let without_id = doc! {"customAction": "UpdateCollection", "collection": "c", "indexes": [{"key": {"b": 1}, "name": "b_1"}]};
    assert_eq!(code(&db, without_id).await, 2);
    let text = doc! {"customAction": "UpdateCollection", "collection": "c", "indexes": [id, {"key": {"t": "text"}, "name": "t"}]};
    assert_eq!(code(&db, text).await, 115);
    assert_eq!(names().await, vec!["_id_", "b_1", "c_1"]);
    // Throughput changes keep their kind; the shard key cannot change.
    let get = doc! {"customAction": "GetCollection", "collection": "c"};
    assert_eq!(
        run(&db, get.clone())
            .await
            .get_i32("provisionedThroughput")
            .unwrap(),
        400
    );
    run(
        &db,
        doc! {"customAction": "UpdateCollection", "collection": "c", "offerThroughput": 1200},
    )
    .await;
    assert_eq!(
        run(&db, get)
            .await
            .get_i32("provisionedThroughput")
            .unwrap(),
        1200
    );
    for command in [
        doc! {"customAction": "UpdateCollection", "collection": "c", "autoScaleSettings": {"maxThroughput": 4000}},
        doc! {"customAction": "UpdateCollection", "collection": "c", "shardKey": "a"},
        doc! {"customAction": "UpdateCollection", "collection": "c"},
    ] {
        assert_eq!(code(&db, command.clone()).await, 2, "{command}");
    }
    let missing =
        doc! {"customAction": "UpdateCollection", "collection": "none", "offerThroughput": 400};
    assert_eq!(code(&db, missing).await, 26);
}

#[tokio::test]
async fn create_database_and_get_database() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let shop = client.database("shop");
    let get = doc! {"customAction": "GetDatabase"};
    assert_eq!(code(&shop, get.clone()).await, 26);
    let created = run(
        &shop,
        doc! {"customAction": "CreateDatabase", "offerThroughput": 1000},
    )
    .await;
    assert_eq!(created, doc! {"ok": 1.0});
    assert_eq!(
        run(&shop, get.clone()).await,
        doc! {"database": "shop", "provisionedThroughput": 1000, "ok": 1.0}
    );
    assert_eq!(
        code(&shop, doc! {"customAction": "CreateDatabase"}).await,
        48
    );
    run(
        &shop,
        doc! {"customAction": "UpdateDatabase", "offerThroughput": 1200},
    )
    .await;
    assert_eq!(
        run(&shop, get.clone()).await,
        doc! {"database": "shop", "provisionedThroughput": 1200, "ok": 1.0}
    );
    let to_autoscale =
        doc! {"customAction": "UpdateDatabase", "autoScaleSettings": {"maxThroughput": 20000}};
    assert_eq!(code(&shop, to_autoscale).await, 2);
    // A collection created without throughput shares the database's.
    run(
        &shop,
        doc! {"customAction": "CreateCollection", "collection": "carts"},
    )
    .await;
    assert_eq!(
        run(
            &shop,
            doc! {"customAction": "GetCollection", "collection": "carts"}
        )
        .await,
        doc! {"database": "shop", "collection": "carts", "maxContentLength": 2_097_152, "ok": 1.0}
    );
    // Autoscale on the database: provisionedThroughput is a tenth of the maximum.
    let scaled = client.database("scaled");
    run(
        &scaled,
        doc! {"customAction": "CreateDatabase", "autoScaleSettings": {"maxThroughput": 20000}},
    )
    .await;
    assert_eq!(
        run(&scaled, get.clone()).await,
        doc! {
            "database": "scaled",
            "provisionedThroughput": 2000,
            "autoScaleSettings": {"maxThroughput": 20000},
            "ok": 1.0,
        }
    );
    // A database without throughput of its own; dropDatabase takes the settings along.
    let plain = client.database("plain");
    run(&plain, doc! {"customAction": "CreateDatabase"}).await;
    assert_eq!(
        run(&plain, get.clone()).await,
        doc! {"database": "plain", "ok": 1.0}
    );
    let update = doc! {"customAction": "UpdateDatabase", "offerThroughput": 400};
    assert_eq!(code(&plain, update).await, 2);
    shop.drop().await.unwrap();
    assert_eq!(code(&shop, get).await, 26);
}

#[tokio::test]
async fn shard_collection() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let admin = client.database("admin");
    let command = doc! {"shardCollection": "app.events", "key": {"tenant": "hashed"}};
    assert_eq!(
        run(&admin, command.clone()).await,
        doc! {"_t": "ShardCollectionResponse", "ok": 1.0, "collectionsharded": "app.events"}
    );
    // As Microsoft's page runs it: against the collection's own database. Again by the same
    // key is no change.
    run(&client.database("app"), command).await;
    let app = client.database("app");
    let shown = run(
        &app,
        doc! {"customAction": "GetCollection", "collection": "events"},
    )
    .await;
    assert_eq!(
        shown.get_document("shardKeyDefinition").unwrap(),
        &doc! {"tenant": "hashed"}
    );
    // The shard key cannot change, and a collection holding documents keeps its partitioning.
    let other_key = doc! {"shardCollection": "app.events", "key": {"region": "hashed"}};
    assert_eq!(code(&admin, other_key).await, 23);
    app.collection::<Document>("filled")
        .insert_one(doc! {"_id": 1, "tenant": "t"})
        .await
        .unwrap();
    let filled = doc! {"shardCollection": "app.filled", "key": {"tenant": "hashed"}};
    assert_eq!(code(&admin, filled).await, 20);
    for bad in [
        doc! {"shardCollection": "app.x", "key": {"a": 1, "b": 1}},
        doc! {"shardCollection": "app.x", "key": {"a": "hashed"}, "unique": true},
    ] {
        assert_eq!(code(&admin, bad.clone()).await, 2, "{bad}");
    }
    // The new collection follows the shard-key rules at once.
    let err = app
        .collection::<Document>("events")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 61);
}

#[tokio::test]
async fn insert_without_shard_key() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    let (code, message) = failure(
        orders
            .insert_one(doc! {"_id": 2, "n": 2})
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 61);
    assert_shard_key_refusal(&message, NOT_FOUND);
    // In a batch each document is judged on its own: the error names its index.
    let err = orders
        .insert_many(vec![
            doc! {"_id": 3, "tenant": "t1"},
            doc! {"_id": 4},
            doc! {"_id": 5, "tenant": null},
        ])
        .ordered(false)
        .await
        .unwrap_err();
    let mongodb::error::ErrorKind::InsertMany(batch) = *err.kind else {
        panic!("not a batch error");
    };
    let errors = batch.write_errors.unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!((errors[0].index, errors[0].code), (1, 61));
    assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 3);
    // An upsert's new document needs it too.
    let err = orders
        .update_one(doc! {"tenant": "t9"}, doc! {"$unset": {"tenant": 1}})
        .upsert(true)
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 61);
    // `--cosmos-allow shard-keys` turns the rule off.
    let allowed =
        TestServer::start_cosmos(Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::ShardKeys))
            .await;
    let orders = sharded_orders(&allowed.portal_client().await).await;
    orders.insert_one(doc! {"_id": 2}).await.unwrap();
}

#[tokio::test]
async fn single_document_write_without_shard_key() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    let by_id = doc! {"_id": 1};
    let set = doc! {"$set": {"n": 2}};
    let (code, message) = failure(
        orders
            .update_one(by_id.clone(), set.clone())
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 61);
    assert_shard_key_refusal(&message, NOT_TARGETED);
    let err = orders.delete_one(by_id.clone()).await.unwrap_err();
    assert_eq!(failure(err).0, 61);
    let err = orders
        .find_one_and_update(by_id.clone(), set.clone())
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 61);
    let err = orders.find_one_and_delete(by_id.clone()).await.unwrap_err();
    assert_eq!(failure(err).0, 61);
    // Naming the shard key by equality targets one partition; multi-document writes fan out.
    let targeted = doc! {"_id": 1, "tenant": "t1"};
    let done = orders.update_one(targeted.clone(), set).await.unwrap();
    assert_eq!(done.modified_count, 1);
    let done = orders
        .update_many(by_id.clone(), doc! {"$inc": {"n": 1}})
        .await
        .unwrap();
    assert_eq!(done.modified_count, 1);
    let found = orders
        .find_one_and_update(doc! {"tenant": {"$eq": "t1"}}, doc! {"$inc": {"n": 1}})
        .await
        .unwrap();
    assert!(found.is_some());
    assert_eq!(orders.delete_many(by_id).await.unwrap().deleted_count, 1);
}

#[tokio::test]
async fn with_retryable_writes_every_update_and_delete_names_the_shard_key() {
    // The capability `EnableMongoRetryableWrites`: "updates/deletes on sharded collections must
    // include the shard key", those of many documents too.
    let server = TestServer::start_cosmos(
        Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::RetryableWrites),
    )
    .await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    let by_id = doc! {"_id": 1};
    let inc = doc! {"$inc": {"n": 1}};
    let (code, message) = failure(
        orders
            .update_many(by_id.clone(), inc.clone())
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 61);
    assert_shard_key_refusal(&message, NOT_TARGETED);
    let err = orders.delete_many(by_id.clone()).await.unwrap_err();
    assert_eq!(failure(err).0, 61);
    let targeted = doc! {"_id": 1, "tenant": "t1"};
    let done = orders.update_many(targeted.clone(), inc).await.unwrap();
    assert_eq!(done.modified_count, 1);
    assert_eq!(orders.delete_many(targeted).await.unwrap().deleted_count, 1);
    // An unsharded collection has no key to name.
    let plain = client.database("app").collection::<Document>("plain");
    plain.insert_one(doc! {"_id": 1}).await.unwrap();
    assert_eq!(plain.delete_many(doc! {}).await.unwrap().deleted_count, 1);
}

#[tokio::test]
async fn changing_the_shard_key() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    let targeted = doc! {"_id": 1, "tenant": "t1"};
    let immutable =
        "Performing an update on the path 'tenant' would modify the immutable field 'tenant'";
    let (code, message) = failure(
        orders
            .update_one(targeted.clone(), doc! {"$set": {"tenant": "t2"}})
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 66);
    assert_shard_key_refusal(&message, immutable);
    let err = orders
        .replace_one(targeted.clone(), doc! {"n": 5})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 66);
    let err = orders
        .find_one_and_update(targeted.clone(), doc! {"$unset": {"tenant": 1}})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 66);
    let err = orders
        .update_many(doc! {}, doc! {"$set": {"tenant": "t3"}})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 66);
    // A replacement that keeps the shard key's value is no change to it.
    orders
        .replace_one(targeted, doc! {"tenant": "t1", "n": 6})
        .await
        .unwrap();
    let stored = orders.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(stored, doc! {"_id": 1, "tenant": "t1", "n": 6});
}

#[tokio::test]
async fn unique_index_must_lead_with_the_shard_key() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let admin = client.database("admin");
    run(
        &admin,
        doc! {"shardCollection": "test.coll", "key": {"university": "hashed"}},
    )
    .await;
    let coll = client.database("test").collection::<Document>("coll");
    let unique = |keys: Document| {
        IndexModel::builder()
            .keys(keys)
            .options(
                mongodb::options::IndexOptions::builder()
                    .unique(true)
                    .build(),
            )
            .build()
    };
    let (code, message) = failure(
        coll.create_index(unique(doc! {"student_id": 1}))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 67);
    assert_shard_key_refusal(
        &message,
        "cannot create unique index over {student_id : 1.0} with shard key pattern { university : 1.0 }",
    );
    coll.create_index(unique(doc! {"university": 1, "student_id": 1}))
        .await
        .unwrap();
    // Through CreateCollection's indexes, before anything is created.
    let db = client.database("test");
    let command = doc! {"customAction": "CreateCollection", "collection": "other", "shardKey": "university", "indexes": [
        {"key": {"_id": 1}, "name": "_id_1"},
        {"key": {"student_id": 1}, "name": "s", "unique": true},
    ]};
    assert_eq!(self::code(&db, command).await, 67);
    let names = db.list_collection_names().await.unwrap();
    assert!(!names.contains(&"other".to_owned()), "{names:?}");
}

#[tokio::test]
async fn sort_on_the_shard_key_needs_no_index() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    orders
        .insert_one(doc! {"_id": 2, "tenant": "t0", "n": 2})
        .await
        .unwrap();
    let first = orders
        .find_one(doc! {})
        .sort(doc! {"tenant": 1})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.get_str("tenant").unwrap(), "t0");
    let err = orders
        .find_one(doc! {})
        .sort(doc! {"n": 1})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 2);
}

/// Every document of `coll` matching `filter`, in `tenant` order (the shard key is indexed; a
/// sort on more fields would need a compound index).
async fn all(coll: &mongodb::Collection<Document>, filter: Document) -> Vec<Document> {
    use futures::TryStreamExt;
    coll.find(filter)
        .sort(doc! {"tenant": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn id_is_unique_per_shard_key_value() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    orders
        .create_index(IndexModel::builder().keys(doc! {"n": 1}).build())
        .await
        .unwrap();
    // One `_id` in another logical partition is another document; in the same one, a duplicate.
    orders
        .insert_one(doc! {"_id": 1, "tenant": "t2", "n": 2})
        .await
        .unwrap();
    let err = orders
        .insert_one(doc! {"_id": 1, "tenant": "t1", "n": 3})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 11000);
    let both = vec![
        doc! {"_id": 1, "tenant": "t1", "n": 1},
        doc! {"_id": 1, "tenant": "t2", "n": 2},
    ];
    assert_eq!(all(&orders, doc! {"_id": 1}).await, both);
    assert_eq!(
        all(&orders, doc! {"n": {"$gte": 1}}).await,
        both,
        "by the index"
    );
    assert_eq!(orders.count_documents(doc! {"_id": 1}).await.unwrap(), 2);
    // A write that names the shard key reaches its partition's document alone.
    let t2 = doc! {"_id": 1, "tenant": "t2"};
    let done = orders
        .update_one(t2.clone(), doc! {"$set": {"n": 5}})
        .await
        .unwrap();
    assert_eq!(done.modified_count, 1);
    assert_eq!(
        all(&orders, doc! {"n": 5}).await,
        vec![doc! {"_id": 1, "tenant": "t2", "n": 5}]
    );
    // An unsharded collection keeps `_id` unique in the whole collection.
    let fixed = client.database("app").collection::<Document>("fixed");
    fixed
        .insert_one(doc! {"_id": 1, "tenant": "t1"})
        .await
        .unwrap();
    let err = fixed
        .insert_one(doc! {"_id": 1, "tenant": "t2"})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 11000);

    // Both documents, and their index entries, outlive a restart.
    drop(client);
    let server = server.restart().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let orders = db.collection::<Document>("orders");
    let validated = run(&db, doc! {"validate": "orders"}).await;
    assert_eq!(validated.get_bool("valid"), Ok(true), "{validated}");
    assert_eq!(
        all(&orders, doc! {"n": {"$in": [1, 5]}}).await,
        vec![
            doc! {"_id": 1, "tenant": "t1", "n": 1},
            doc! {"_id": 1, "tenant": "t2", "n": 5},
        ]
    );
    let done = orders
        .delete_one(doc! {"_id": 1, "tenant": "t1"})
        .await
        .unwrap();
    assert_eq!(done.deleted_count, 1);
    assert_eq!(
        all(&orders, doc! {}).await,
        vec![doc! {"_id": 1, "tenant": "t2", "n": 5}]
    );
}

#[tokio::test]
async fn change_events_name_a_partitioned_document_by_its_shard_key_and_id() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    orders
        .insert_one(doc! {"_id": 1, "tenant": "t2", "n": 2})
        .await
        .unwrap();
    let pipeline = vec![
        doc! {"$match": {"operationType": {"$in": ["insert", "update", "replace"]}}},
        doc! {"$project": {"_id": 1, "fullDocument": 1, "documentKey": 1}},
    ];
    let mut stream = orders
        .watch()
        .pipeline(pipeline)
        .full_document(mongodb::options::FullDocumentType::UpdateLookup)
        .await
        .unwrap()
        .with_type::<Document>();
    orders
        .insert_one(doc! {"_id": 2, "tenant": "t1", "n": 1})
        .await
        .unwrap();
    // The lookup finds the updated document, not the other one with its `_id`.
    orders
        .update_one(doc! {"_id": 1, "tenant": "t2"}, doc! {"$inc": {"n": 1}})
        .await
        .unwrap();
    let mut seen = next_events(&mut stream, 2).await;
    for event in &mut seen {
        event.remove("_id");
    }
    assert_eq!(
        seen,
        vec![
            doc! {
                "fullDocument": {"_id": 2, "tenant": "t1", "n": 1},
                "documentKey": {"tenant": "t1", "_id": 2},
            },
            doc! {
                "documentKey": {"tenant": "t2", "_id": 1},
                "fullDocument": {"_id": 1, "tenant": "t2", "n": 3},
            },
        ]
    );
}

#[tokio::test]
async fn a_partitioned_document_moves_when_the_rule_lets_its_shard_key_change() {
    let server =
        TestServer::start_cosmos(Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::ShardKeys))
            .await;
    let client = server.portal_client().await;
    let orders = sharded_orders(&client).await;
    orders
        .insert_one(doc! {"_id": 1, "tenant": "t2", "n": 2})
        .await
        .unwrap();
    // Onto another document of the same `_id` and shard key: a duplicate, nothing changes.
    let t1 = doc! {"_id": 1, "tenant": "t1"};
    let err = orders
        .update_one(t1.clone(), doc! {"$set": {"tenant": "t2"}})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 11000);
    orders
        .update_one(t1, doc! {"$set": {"tenant": "t3"}})
        .await
        .unwrap();
    assert_eq!(
        all(&orders, doc! {"_id": 1}).await,
        vec![
            doc! {"_id": 1, "tenant": "t2", "n": 2},
            doc! {"_id": 1, "tenant": "t3", "n": 1},
        ]
    );
    let validated = run(&client.database("app"), doc! {"validate": "orders"}).await;
    assert_eq!(validated.get_bool("valid"), Ok(true), "{validated}");
}

/// A shard-key value of 70 KB is stored and found like any other: the Cosmos behaviour this
/// profile follows documents no limit on a key's size, and mongod has none below the document
/// limit.
#[tokio::test]
async fn a_long_shard_key_value_is_stored_like_any_other() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let orders = sharded_orders(&client).await;
    let long = "t".repeat(70_000);
    let documents = vec![
        Bson::Document(doc! {"_id": 2, "tenant": "t1"}),
        Bson::Document(doc! {"_id": 3, "tenant": &long}),
        Bson::Document(doc! {"_id": 3, "tenant": long.clone() + "2"}),
    ];
    let reply = run(
        &db,
        doc! {"insert": "orders", "ordered": false, "documents": documents},
    )
    .await;
    assert_eq!(reply.get_i32("n"), Ok(3), "{reply}");
    assert!(reply.get_array("writeErrors").is_err(), "{reply}");
    let found = all(&orders, doc! {"tenant": &long}).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get_i32("_id"), Ok(3));
    let validated = run(&db, doc! {"validate": "orders"}).await;
    assert_eq!(validated.get_bool("valid"), Ok(true), "{validated}");
}

#[tokio::test]
async fn the_default_profile_has_neither_command() {
    let server = TestServer::start().await;
    let client = server.client().await;
    for (db, command) in [
        (
            "app",
            doc! {"customAction": "CreateCollection", "collection": "c", "shardKey": "a"},
        ),
        (
            "admin",
            doc! {"shardCollection": "app.c", "key": {"a": "hashed"}},
        ),
    ] {
        let name = command.keys().next().unwrap().clone();
        let (code, message) = failure(client.database(db).run_command(command).await.unwrap_err());
        assert_eq!(code, 59);
        assert_eq!(message, format!("no such command: '{name}'"));
    }
    let listed = client
        .database("admin")
        .run_command(doc! {"listCommands": 1})
        .await
        .unwrap();
    let commands = listed.get_document("commands").unwrap();
    assert!(!commands.contains_key("customAction"));
    assert!(!commands.contains_key("shardCollection"));
}
