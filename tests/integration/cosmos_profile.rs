//! The Cosmos profile (`--compat cosmos`), a test per rule through the Rust driver, each
//! checking Cosmos's code and text (docs/cosmos.md lists the rules and their sources); the
//! same commands in the default profile behave as MongoDB 7.0, and `--cosmos-allow RULE`
//! turns one rule off.

use crate::common;

use common::bson::{doc, Document};
use common::cosmos::{failure, next_events, SET};
use common::TestServer;
use mayfly::profile::refusal::rule_line;
use mayfly::profile::{CosmosVersion, Profile, Rule};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::time::Duration;

/// Cosmos's text first and unchanged, then the line naming the rule.
fn assert_refusal(message: &str, cosmos_text: &str, rule: Rule) {
    let (text, line) = message.rsplit_once('\n').expect("two lines");
    assert_eq!(text, cosmos_text);
    assert_eq!(line, rule_line(rule));
}

/// A refusal the Cosmos service raises: `Error=<code>, Details='…'` around its message.
fn assert_service_refusal(message: &str, code: i32, status: &str, cosmos_text: &str, rule: Rule) {
    let (details, line) = message.rsplit_once('\n').expect("a rule line");
    let prefix = format!(
        "Error={code}, Details='Response status code does not indicate success: {status}; Substatus: 0; ActivityId: "
    );
    assert!(details.starts_with(&prefix), "{details}");
    let inner = format!(r#"Message: {{"Errors":["{cosmos_text}"]}}"#);
    assert!(details.contains(&inner), "{details}");
    assert_eq!(line, rule_line(rule));
}

async fn seeded(client: &Client) -> mongodb::Collection<Document> {
    let coll = client.database("app").collection::<Document>("items");
    coll.insert_many((0..5).map(|i| doc! {"_id": i, "a": 5 - i, "b": i % 2}))
        .await
        .unwrap();
    coll
}

#[tokio::test]
async fn handshake_answers_as_the_accounts_replica_set_and_version() {
    let server = TestServer::start_cosmos(Profile::cosmos(CosmosVersion::V5_0)).await;
    let client = server.portal_client().await;
    let hello = client
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .unwrap();
    assert_eq!(hello.get_str("setName").unwrap(), "globaldb");
    assert_eq!(hello.get_i32("maxWireVersion").unwrap(), 13);
    assert_eq!(
        hello.get_i32("maxBsonObjectSize").unwrap(),
        16 * 1024 * 1024
    );
    assert_eq!(hello.get_i32("maxWriteBatchSize").unwrap(), 1000);
    assert_eq!(hello.get_document("tags"), Ok(&doc! {"region": "local"}));
    let build = client
        .database("admin")
        .run_command(doc! {"buildInfo": 1})
        .await
        .unwrap();
    assert_eq!(build.get_str("version").unwrap(), "5.0.0");
}

#[tokio::test]
async fn a_read_preference_with_the_accounts_region_tag_finds_the_server() {
    use mongodb::options::{ReadPreference, ReadPreferenceOptions, SelectionCriteria};
    let mut profile = Profile::cosmos(CosmosVersion::V7_0);
    profile.region = Some("West Europe".into());
    let server = TestServer::start_cosmos(profile).await;
    let nearest = |region: &str| {
        let options = ReadPreferenceOptions::builder()
            .tag_sets(vec![[("region".to_owned(), region.to_owned())].into()])
            .build();
        SelectionCriteria::ReadPreference(ReadPreference::Nearest {
            options: Some(options),
        })
    };
    let client = server.portal_client().await;
    let coll = client.database("app").collection::<Document>("c");
    coll.find_one(doc! {})
        .selection_criteria(nearest("West Europe"))
        .await
        .unwrap();
    let config = client
        .database("admin")
        .run_command(doc! {"replSetGetConfig": 1})
        .await
        .unwrap();
    let member = config
        .get_document("config")
        .unwrap()
        .get_array("members")
        .unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(
        member.get_document("tags"),
        Ok(&doc! {"region": "West Europe"})
    );
    // Another region's tag selects no server, as against an account in one region.
    let mut options = ClientOptions::parse(format!(
        "mongodb://{}/?replicaSet={SET}&retrywrites=false",
        server.addr
    ))
    .await
    .unwrap();
    options.server_selection_timeout = Some(Duration::from_millis(500));
    let client = Client::with_options(options).unwrap();
    let err = client
        .database("app")
        .collection::<Document>("c")
        .find_one(doc! {})
        .selection_criteria(nearest("East US"))
        .await
        .unwrap_err();
    assert!(
        matches!(*err.kind, mongodb::error::ErrorKind::ServerSelection { .. }),
        "{err}"
    );
    // A MongoDB replica set's member has no tags.
    let mongodb = TestServer::start_replset("rs0").await;
    let hello = mongodb
        .replset_client("rs0")
        .await
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .unwrap();
    assert!(!hello.contains_key("tags"), "{hello}");
}

#[tokio::test]
async fn a_driver_newer_than_the_account_fails_to_connect() {
    // This Rust driver needs MongoDB 4.4 (wire version 9) or later: a 4.2 account (wire
    // version 8) is too old for it, as it is on Azure.
    let server = TestServer::start_cosmos(Profile::cosmos(CosmosVersion::V4_2)).await;
    let client = server.portal_client().await;
    let err = client
        .database("app")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("reports wire version 8"), "{text}");
    assert!(text.contains("requires at least 9"), "{text}");
}

#[tokio::test]
async fn sort_without_index() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let coll = seeded(&client).await;
    let rule = Rule::SortWithoutIndex;
    let excluded = mayfly::profile::sort::EXCLUDED;
    let no_composite = mayfly::profile::sort::NO_COMPOSITE;
    let bad = "BadRequest (400)";
    // find, aggregate's $sort and findAndModify's sort.
    let (code, message) = failure(coll.find(doc! {}).sort(doc! {"a": 1}).await.unwrap_err());
    assert_eq!(code, 2);
    assert_service_refusal(&message, 2, bad, excluded, rule);
    let pipeline = vec![doc! {"$match": {"b": 1}}, doc! {"$sort": {"a": -1}}];
    let (code, message) = failure(coll.aggregate(pipeline.clone()).await.unwrap_err());
    assert_eq!(code, 2);
    assert_service_refusal(&message, 2, bad, excluded, rule);
    let (code, message) = failure(
        coll.find_one_and_update(doc! {}, doc! {"$set": {"c": 1}})
            .sort(doc! {"a": 1})
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 2);
    assert_service_refusal(&message, 2, bad, excluded, rule);
    // `_id` is always indexed.
    let first = coll.find_one(doc! {}).sort(doc! {"_id": -1}).await.unwrap();
    assert_eq!(first.unwrap().get_i32("_id").unwrap(), 4);
    // An index on the field serves it, in either direction.
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    let first = coll.find_one(doc! {}).sort(doc! {"a": -1}).await.unwrap();
    assert_eq!(first.unwrap().get_i32("a").unwrap(), 5);
    let mut cursor = coll.aggregate(pipeline).await.unwrap();
    assert!(cursor.advance().await.unwrap());
    // Two fields need a compound index in that order.
    let (code, message) = failure(
        coll.find(doc! {})
            .sort(doc! {"b": 1, "a": 1})
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 2);
    assert_service_refusal(&message, 2, bad, no_composite, rule);
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! {"b": 1, "a": 1})
            .build(),
    )
    .await
    .unwrap();
    let first = coll
        .find_one(doc! {})
        .sort(doc! {"b": -1, "a": -1})
        .await
        .unwrap();
    assert_eq!(first.unwrap().get_i32("_id").unwrap(), 1);
    // findAndModify sorts on one field only, even where a compound index would serve the sort
    // (find-and-modify-sorts-on-one-field).
    let (code, message) = failure(
        coll.find_one_and_update(doc! {}, doc! {"$set": {"c": 1}})
            .sort(doc! {"b": -1, "a": -1})
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 2);
    let one_field = mayfly::profile::sort::FIND_AND_MODIFY_ONE_FIELD;
    assert_service_refusal(&message, 2, bad, one_field, rule);
    let updated = coll
        .find_one_and_update(doc! {}, doc! {"$set": {"c": 1}})
        .sort(doc! {"a": -1})
        .await
        .unwrap();
    assert_eq!(updated.unwrap().get_i32("a").unwrap(), 5);
    // Explain plans the same read, under the same rule.
    let explain = client
        .database("app")
        .run_command(doc! {"explain": {"find": "items", "sort": {"c": 1}}})
        .await
        .unwrap_err();
    assert_eq!(failure(explain).0, 2);
}

#[tokio::test]
async fn sort_without_index_can_be_allowed_and_mongodb_sorts_anything() {
    let allowed = TestServer::start_cosmos(
        Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::SortWithoutIndex),
    )
    .await;
    let mongodb = TestServer::start().await;
    for client in [allowed.portal_client().await, mongodb.client().await] {
        let coll = seeded(&client).await;
        let first = coll.find_one(doc! {}).sort(doc! {"a": 1}).await.unwrap();
        assert_eq!(first.unwrap().get_i32("a").unwrap(), 1);
        let first = coll
            .find_one(doc! {})
            .sort(doc! {"b": 1, "a": 1})
            .await
            .unwrap();
        assert_eq!(first.unwrap().get_i32("_id").unwrap(), 4);
        let updated = coll
            .find_one_and_update(doc! {}, doc! {"$set": {"c": 1}})
            .sort(doc! {"b": 1, "a": 1})
            .await
            .unwrap();
        assert_eq!(updated.unwrap().get_i32("_id").unwrap(), 4);
    }
}

#[tokio::test]
async fn unique_index_on_populated() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let empty = client.database("app").collection::<Document>("empty");
    empty
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"email": 1})
                .options(
                    mongodb::options::IndexOptions::builder()
                        .unique(true)
                        .build(),
                )
                .build(),
        )
        .await
        .unwrap();
    let coll = seeded(&client).await;
    let unique = mongodb::IndexModel::builder()
        .keys(doc! {"a": 1})
        .options(
            mongodb::options::IndexOptions::builder()
                .unique(true)
                .build(),
        )
        .build();
    let (code, message) = failure(coll.create_index(unique.clone()).await.unwrap_err());
    assert_eq!(code, 67);
    assert_refusal(
        &message,
        "Cannot create unique index when collection contains documents",
        Rule::UniqueIndexOnPopulated,
    );
    // A non-unique index is fine, and so is the unique one in MongoDB.
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"b": 1}).build())
        .await
        .unwrap();
    let mongodb = TestServer::start().await;
    let coll = seeded(&mongodb.client().await).await;
    coll.create_index(unique).await.unwrap();
}

#[tokio::test]
async fn unique_index_on_populated_counts_what_count_documents_counts() {
    // A collection whose only documents have expired is empty to every read (TTL-18), and so
    // to this rule, though the reaper has not deleted them yet.
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    common::ttl::reaper(&client, "pause").await;
    let db = client.database("app");
    let coll = db.collection::<Document>("expired");
    common::ttl::set_collection_ttl(&db, "expired", 60).await;
    coll.insert_many((0..3).map(|i| doc! {"_id": i, "email": format!("e{i}")}))
        .await
        .unwrap();
    let unique = |field: &str| {
        mongodb::IndexModel::builder()
            .keys(doc! {field: 1})
            .options(
                mongodb::options::IndexOptions::builder()
                    .unique(true)
                    .build(),
            )
            .build()
    };
    let (code, _) = failure(coll.create_index(unique("email")).await.unwrap_err());
    assert_eq!(code, 67, "visible documents: refused");
    common::ttl::advance(&client, 61).await;
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
    coll.create_index(unique("email")).await.unwrap();
    // An expired document is invisible to uniqueness too (TTL-18): its email can be written
    // again before the reaper deletes it.
    coll.insert_one(doc! {"_id": 10, "email": "e0"})
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn nested_index_paths() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let coll = client.database("app").collection::<Document>("nested");
    for keys in [doc! {"a.b": 1, "c": 1}, doc! {"a.b": 1}] {
        let unique = keys.len() == 1;
        let model = mongodb::IndexModel::builder()
            .keys(keys)
            .options(
                mongodb::options::IndexOptions::builder()
                    .unique(unique)
                    .build(),
            )
            .build();
        let (code, message) = failure(coll.create_index(model).await.unwrap_err());
        assert_eq!(code, 115);
        assert_refusal(
            &message,
            "Unique and compound indexes do not support nested paths.",
            Rule::NestedIndexPaths,
        );
    }
    // A single-field index on a nested path is allowed.
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a.b": 1}).build())
        .await
        .unwrap();
}

#[tokio::test]
async fn index_kinds() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let cases = [
        (
            doc! {"key": {"body": "text"}, "name": "t"},
            "'text' is not supported",
        ),
        (
            doc! {"key": {"a": "hashed"}, "name": "h"},
            "'hashed' is not supported",
        ),
        (
            doc! {"key": {"a": 1}, "name": "s", "sparse": true},
            "'sparse' is not supported",
        ),
    ];
    for (spec, text) in cases {
        let err = db
            .run_command(doc! {"createIndexes": "kinds", "indexes": [spec]})
            .await
            .unwrap_err();
        let (code, message) = failure(err);
        assert_eq!(code, 115);
        assert_refusal(&message, text, Rule::IndexKinds);
    }
    // MongoDB has sparse indexes.
    let mongodb = TestServer::start().await;
    mongodb
        .client()
        .await
        .database("app")
        .run_command(doc! {"createIndexes": "kinds", "indexes": [{"key": {"a": 1}, "name": "s", "sparse": true}]})
        .await
        .unwrap();
}

#[tokio::test]
async fn document_size() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let coll = client.database("app").collection::<Document>("big");
    let big = doc! {"_id": 1, "blob": "x".repeat(3 * 1024 * 1024)};
    let (code, message) = failure(coll.insert_one(big.clone()).await.unwrap_err());
    assert_eq!(code, 16);
    assert_service_refusal(
        &message,
        16,
        "RequestEntityTooLarge (413)",
        "Request size is too large",
        Rule::DocumentSize,
    );
    coll.insert_one(doc! {"_id": 2, "blob": "x".repeat(1024 * 1024)})
        .await
        .unwrap();
    // Growing it past 2 MB by an update, a replacement or an upsert fails the same way, and
    // leaves it as it was.
    let grow = doc! {"$set": {"more": "y".repeat(1536 * 1024)}};
    for err in [
        coll.update_one(doc! {"_id": 2}, grow.clone())
            .await
            .unwrap_err(),
        coll.replace_one(doc! {"_id": 2}, doc! {"blob": "z".repeat(3 * 1024 * 1024)})
            .await
            .unwrap_err(),
        coll.find_one_and_update(doc! {"_id": 2}, grow.clone())
            .await
            .unwrap_err(),
        coll.update_one(
            doc! {"_id": 3},
            doc! {"$set": {"blob": "x".repeat(3 * 1024 * 1024)}},
        )
        .upsert(true)
        .await
        .unwrap_err(),
    ] {
        let (code, message) = failure(err);
        assert_eq!(code, 16);
        assert_service_refusal(
            &message,
            16,
            "RequestEntityTooLarge (413)",
            "Request size is too large",
            Rule::DocumentSize,
        );
    }
    let kept = coll.find_one(doc! {"_id": 2}).await.unwrap().unwrap();
    assert!(!kept.contains_key("more"));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    // The account capability lifts it, and MongoDB takes up to 16 MB.
    let lifted =
        TestServer::start_cosmos(Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::DocumentSize))
            .await;
    let mongodb = TestServer::start().await;
    for client in [lifted.portal_client().await, mongodb.client().await] {
        let coll = client.database("app").collection::<Document>("big");
        coll.insert_one(big.clone()).await.unwrap();
    }
}

#[tokio::test]
async fn retryable_writes() {
    let server = TestServer::start_cosmos_7().await;
    // Drivers retry writes unless the connection string says `retrywrites=false`.
    let uri = format!("mongodb://{}/?replicaSet={SET}", server.addr);
    let client = Client::with_uri_str(uri).await.unwrap();
    let coll = client.database("app").collection::<Document>("items");
    let (code, message) = failure(coll.insert_one(doc! {"_id": 1}).await.unwrap_err());
    assert_eq!(code, 2);
    assert_refusal(
        &message,
        "Retryable writes are not supported. Please disable retryable writes by specifying \"retrywrites=false\" in the connection string or an equivalent driver specific config.",
        Rule::RetryableWrites,
    );
    // With `retrywrites=false`, as the portal's string has it, the write is done.
    let coll = server
        .portal_client()
        .await
        .database("app")
        .collection::<Document>("items");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    // The account capability `EnableMongoRetryableWrites`.
    let capable = TestServer::start_cosmos(
        Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::RetryableWrites),
    )
    .await;
    let uri = format!("mongodb://{}/?replicaSet={SET}", capable.addr);
    let client = Client::with_uri_str(uri).await.unwrap();
    client
        .database("app")
        .collection::<Document>("items")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
}

#[tokio::test]
async fn unsupported_commands() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    seeded(&client).await;
    for (db, command, name) in [
        ("app", doc! {"collMod": "items"}, "collMod"),
        (
            "admin",
            doc! {"renameCollection": "app.items", "to": "app.other"},
            "renameCollection",
        ),
        ("admin", doc! {"hostInfo": 1}, "hostInfo"),
    ] {
        let err = client.database(db).run_command(command).await.unwrap_err();
        let (code, message) = failure(err);
        assert_eq!(code, 115);
        assert_refusal(
            &message,
            &format!("Command {name} not supported."),
            Rule::UnsupportedCommands,
        );
    }
    // MongoDB renames.
    let mongodb = TestServer::start().await;
    let client = mongodb.client().await;
    seeded(&client).await;
    client
        .database("admin")
        .run_command(doc! {"renameCollection": "app.items", "to": "app.other"})
        .await
        .unwrap();
}

/// A client with one connection: `getLastRequestStatistics` reports on its own connection.
async fn one_connection(server: &TestServer) -> Client {
    let uri = format!(
        "mongodb://{}/?replicaSet={SET}&retrywrites=false&maxPoolSize=1",
        server.addr
    );
    let mut options = ClientOptions::parse(uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(5));
    Client::with_options(options).unwrap()
}

async fn last_request(client: &Client) -> Document {
    client
        .database("app")
        .run_command(doc! {"getLastRequestStatistics": 1})
        .await
        .unwrap()
}

#[tokio::test]
async fn request_units_are_reported_per_request() {
    let server = TestServer::start_cosmos_7().await;
    let client = one_connection(&server).await;
    let coll = client.database("app").collection::<Document>("items");
    // A document of about 1 KB.
    let doc = doc! {"_id": 1, "body": "x".repeat(1000)};
    coll.insert_one(doc).await.unwrap();
    let stats = last_request(&client).await;
    assert_eq!(stats.get_str("_t").unwrap(), "GetRequestStatisticsResponse");
    assert_eq!(stats.get_str("CommandName").unwrap(), "insert");
    let insert = stats.get_f64("RequestCharge").unwrap();
    assert!((4.5..=6.0).contains(&insert), "{insert}");
    assert!(stats.get_f64("RequestDurationInMilliSeconds").unwrap() >= 0.0);
    // A point read of 1 KB costs about 1 RU.
    coll.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    let stats = last_request(&client).await;
    assert_eq!(stats.get_str("CommandName").unwrap(), "find");
    let read = stats.get_f64("RequestCharge").unwrap();
    assert!((0.9..=1.5).contains(&read), "{read}");
    // A scan that examines 200 documents to return one costs more.
    coll.insert_many((2..200).map(|i| doc! {"_id": i, "n": i}))
        .await
        .unwrap();
    coll.find_one(doc! {"n": 150}).await.unwrap().unwrap();
    let scan = last_request(&client)
        .await
        .get_f64("RequestCharge")
        .unwrap();
    assert!(scan > 5.0 * read, "{scan} vs {read}");
    // serverStatus shows the charges by namespace.
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    let items = status
        .get_document("requestUnits")
        .unwrap()
        .get_document("byNamespace")
        .unwrap()
        .get_document("app.items")
        .unwrap();
    assert!(items.get_i64("requests").unwrap() >= 4);
    assert!(items.get_f64("requestCharge").unwrap() > scan);
    // MongoDB has no such command.
    let mongodb = TestServer::start().await;
    let err = mongodb
        .client()
        .await
        .database("app")
        .run_command(doc! {"getLastRequestStatistics": 1})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 59);
}

/// The `RetryAfterMs` a 16500 names.
fn retry_after(message: &str) -> Duration {
    let rest = message
        .strip_prefix("Error=16500, RetryAfterMs=")
        .expect(message);
    let millis: u64 = rest.split(',').next().unwrap().parse().unwrap();
    Duration::from_millis(millis)
}

#[tokio::test]
async fn throttling() {
    let mut profile = Profile::cosmos(CosmosVersion::V7_0);
    profile.throughput = Some(50);
    let server = TestServer::start_cosmos(profile).await;
    let client = server.portal_client().await;
    let coll = client.database("app").collection::<Document>("burst");
    // Each insert costs 5 RU: a burst of 50 spends the second's 50 RU within the first 11.
    let mut refused = None;
    for i in 0..50 {
        if let Err(err) = coll.insert_one(doc! {"_id": i}).await {
            refused = Some((i, err));
            break;
        }
    }
    let (i, err) = refused.expect("a burst over the budget is throttled");
    assert!(i >= 9, "{i}");
    let (code, message) = failure(err);
    assert_eq!(code, 16500);
    assert!(
        message.contains("TooManyRequests (429) Substatus: 3200")
            && message.contains(
                "Request rate is large. More Request Units may be needed, so no changes were made."
            ),
        "{message}"
    );
    assert!(message.ends_with(&format!("{} (budget 50 RU/s)", rule_line(Rule::Throttling))));
    // After `RetryAfterMs` the same insert succeeds: the refused one wrote nothing (no
    // duplicate key), and the budget then refills at 50 RU/s.
    tokio::time::sleep(retry_after(&message)).await;
    coll.insert_one(doc! {"_id": i}).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let n = coll.count_documents(doc! {}).await.unwrap();
    assert_eq!(n, u64::try_from(i).unwrap() + 1);
}

#[tokio::test]
async fn throttling_with_server_side_retry_waits_instead() {
    let mut profile = Profile::cosmos(CosmosVersion::V7_0);
    profile.throughput = Some(100);
    profile.server_side_retry = true;
    let server = TestServer::start_cosmos(profile).await;
    let client = server.portal_client().await;
    let coll = client.database("app").collection::<Document>("burst");
    let started = std::time::Instant::now();
    // 40 inserts of 5 RU: 200 RU at 100 RU/s, a full second's budget to start with.
    for i in 0..40 {
        coll.insert_one(doc! {"_id": i}).await.unwrap();
    }
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 40);
}

/// Inserts (5 RU each) into `colls` in turn until one is throttled, and checks that how many
/// went through is what a budget of `rate` RU/s allows: a second's worth to start with, plus
/// what refilled while they ran.
async fn assert_budget(colls: &[mongodb::Collection<Document>], rate: f64) {
    let started = std::time::Instant::now();
    for i in 0..10_000usize {
        let coll = &colls[i % colls.len()];
        if let Err(err) = coll.insert_one(doc! {"_id": i as i64}).await {
            assert_eq!(failure(err).0, 16500);
            let elapsed = started.elapsed().as_secs_f64();
            let (least, most) = (rate / 5.0 - 1.0, rate * (1.0 + elapsed) / 5.0 + 1.0);
            let done = i as f64;
            assert!(
                least <= done && done <= most,
                "{done} not in {least}..={most}"
            );
            return;
        }
    }
    panic!("never throttled");
}

#[tokio::test]
async fn throttling_follows_provisioned_throughput() {
    let mut profile = Profile::cosmos(CosmosVersion::V7_0);
    profile.throughput = Some(1000);
    let server = TestServer::start_cosmos(profile).await;
    let client = server.portal_client().await;
    let db = client.database("app");
    db.run_command(
        doc! {"customAction": "CreateCollection", "collection": "small", "offerThroughput": 400},
    )
    .await
    .unwrap();
    // The collection's own 400 RU/s, and the flag's 1000 for one without.
    assert_budget(&[db.collection("small")], 400.0).await;
    assert_budget(&[db.collection("large")], 1000.0).await;
    // A database's throughput is shared by its collections that have none of their own.
    let shared_db = client.database("pooled");
    shared_db
        .run_command(doc! {"customAction": "CreateDatabase", "offerThroughput": 400})
        .await
        .unwrap();
    assert_budget(
        &[shared_db.collection("a"), shared_db.collection("b")],
        400.0,
    )
    .await;
}

#[tokio::test]
async fn change_streams() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let coll = db.collection::<Document>("events");
    let rule = Rule::ChangeStreams;
    let shape = mayfly::profile::change_streams::MATCH_THEN_PROJECT;
    let (code, message) = failure(coll.watch().await.unwrap_err());
    assert_eq!(code, 2);
    assert_refusal(&message, shape, rule);
    let (code, message) = failure(db.watch().await.unwrap_err());
    assert_eq!(code, 2);
    assert_refusal(&message, "Expected type string but found int.", rule);
    // Microsoft's documented shape: $match on the operation types, then $project.
    let pipeline = vec![
        doc! {"$match": {"operationType": {"$in": ["insert", "update", "replace", "delete"]}}},
        doc! {"$project": {"_id": 1, "fullDocument": 1, "ns": 1, "documentKey": 1}},
    ];
    let mut stream = coll
        .watch()
        .pipeline(pipeline)
        .full_document(mongodb::options::FullDocumentType::UpdateLookup)
        .await
        .unwrap()
        .with_type::<Document>();
    coll.insert_one(doc! {"_id": 1, "n": 1}).await.unwrap();
    coll.delete_one(doc! {"_id": 1}).await.unwrap();
    coll.insert_one(doc! {"_id": 2, "n": 2}).await.unwrap();
    coll.update_one(doc! {"_id": 2}, doc! {"$set": {"n": 3}})
        .await
        .unwrap();
    let mut seen = Vec::new();
    for event in next_events(&mut stream, 3).await {
        assert!(!event.contains_key("operationType"), "{event}");
        seen.push(event.get_document("fullDocument").unwrap().clone());
    }
    // The delete is not reported; the update carries the looked-up document.
    assert_eq!(
        seen,
        vec![
            doc! {"_id": 1, "n": 1},
            doc! {"_id": 2, "n": 2},
            doc! {"_id": 2, "n": 3}
        ]
    );

    // A MongoDB replica set watches with any pipeline, the database too, and reports deletes.
    let mongodb = TestServer::start_replset("rs0").await;
    let client = mongodb.replset_client("rs0").await;
    let db = client.database("app");
    db.watch().await.unwrap();
    let coll = db.collection::<Document>("events");
    let mut stream = coll.watch().await.unwrap();
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    coll.delete_one(doc! {"_id": 1}).await.unwrap();
    let kinds: Vec<_> = next_events(&mut stream, 2)
        .await
        .into_iter()
        .map(|event| event.operation_type)
        .collect();
    use mongodb::change_stream::event::OperationType;
    assert_eq!(kinds, vec![OperationType::Insert, OperationType::Delete]);
}

#[tokio::test]
async fn transaction_limits() {
    // MongoDB's transactions live 60 seconds: checked alongside, in the same 6 seconds.
    tokio::join!(
        cosmos_transaction_limits(),
        mongodb_transaction_outlives_5s()
    );
}

async fn mongodb_transaction_outlives_5s() {
    let mongodb = TestServer::start_replset("rs0").await;
    let client = mongodb.replset_client("rs0").await;
    let coll = client.database("app").collection::<Document>("ledger");
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(6000)).await;
    coll.insert_one(doc! {"_id": 2})
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 2);
}

async fn cosmos_transaction_limits() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let coll = db.collection::<Document>("ledger");
    coll.insert_one(doc! {"_id": 0}).await.unwrap();
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    coll.insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    // Cosmos transactions live 5 seconds.
    tokio::time::sleep(Duration::from_millis(6000)).await;
    let (code, message) = failure(
        coll.insert_one(doc! {"_id": 2})
            .session(&mut session)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 2);
    let (details, line) = message.rsplit_once('\n').unwrap();
    assert!(details.starts_with("Error=2, Details='Response status code does not indicate success: BadRequest (400); Substatus: 1101; ActivityId: "), "{details}");
    assert!(details.contains(r#"{"Errors":["Transaction is not active"]}"#));
    assert_eq!(line, rule_line(Rule::TransactionLimits));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    // None on a sharded collection.
    db.run_command(
        doc! {"customAction": "CreateCollection", "collection": "sharded", "shardKey": "tenant"},
    )
    .await
    .unwrap();
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let (code, message) = failure(
        db.collection::<Document>("sharded")
            .insert_one(doc! {"_id": 1, "tenant": "t"})
            .session(&mut session)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 50841);
    assert_refusal(
        &message,
        "Multi-document transactions cannot be run in a sharded collection",
        Rule::TransactionLimits,
    );
}

#[tokio::test]
async fn transactions_keep_to_one_collection() {
    let server = TestServer::start_cosmos_7().await;
    let client = server.portal_client().await;
    let db = client.database("app");
    let (ledger, audit) = (
        db.collection::<Document>("ledger"),
        db.collection::<Document>("audit"),
    );
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    ledger
        .insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    ledger
        .find_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .unwrap();
    let (code, message) = failure(
        audit
            .insert_one(doc! {"_id": 1})
            .session(&mut session)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 263);
    assert_refusal(
        &message,
        "Cosmos DB runs a multi-document transaction within one collection: this transaction is on app.ledger, not app.audit",
        Rule::TransactionLimits,
    );
    // The refused statement aborted the transaction, as any failed statement does.
    let err = session.commit_transaction().await.unwrap_err();
    assert_eq!(failure(err).0, 2);
    assert_eq!(ledger.count_documents(doc! {}).await.unwrap(), 0);
    assert_eq!(audit.count_documents(doc! {}).await.unwrap(), 0);

    // A MongoDB replica set commits a transaction over two collections.
    let mongodb = TestServer::start_replset("rs0").await;
    let client = mongodb.replset_client("rs0").await;
    let db = client.database("app");
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    for name in ["ledger", "audit"] {
        db.collection::<Document>(name)
            .insert_one(doc! {"_id": 1})
            .session(&mut session)
            .await
            .unwrap();
    }
    session.commit_transaction().await.unwrap();
    for name in ["ledger", "audit"] {
        let coll = db.collection::<Document>(name);
        assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    }
}

/// A Cosmos 7.0 account whose request and idle-connection limits are `limits` (the real ones,
/// 60 seconds and 30 minutes, are too long for a test), with the test commands (`sleep`).
async fn cosmos_with_limits(
    limits: mayfly::profile::limits::Limits,
    allow: Option<Rule>,
) -> TestServer {
    let mut profile = Profile::cosmos(CosmosVersion::V7_0);
    profile.limits = limits;
    if let Some(rule) = allow {
        profile = profile.allowing(rule);
    }
    TestServer::start_with(move |c| {
        c.profile = profile;
        c.replication.set_name = Some(SET.to_owned());
        c.enable_test_commands = true;
    })
    .await
}

#[tokio::test]
async fn request_time_limit() {
    let limits = mayfly::profile::limits::Limits {
        request: Duration::from_millis(300),
        ..Default::default()
    };
    let server = cosmos_with_limits(limits, None).await;
    let client = server.portal_client().await;
    let admin = client.database("admin");
    let started = std::time::Instant::now();
    let err = admin
        .run_command(doc! {"sleep": 1, "millis": 5000})
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "stopped at the limit"
    );
    let (code, message) = failure(err);
    assert_eq!(code, 50);
    assert_refusal(
        &message,
        mayfly::profile::limits::REQUEST_TIMED_OUT,
        Rule::RequestTimeLimit,
    );
    let mut raw = server.raw().await;
    let reply = raw
        .command(1, &doc! {"sleep": 1, "millis": 2000, "$db": "admin"})
        .await
        .document;
    assert_eq!(
        reply.get_str("codeName"),
        Ok("ExceededTimeLimit"),
        "{reply}"
    );
    // A request within the limit, and one run with the rule off, finish.
    admin
        .run_command(doc! {"sleep": 1, "millis": 50})
        .await
        .unwrap();
    let relaxed = cosmos_with_limits(limits, Some(Rule::RequestTimeLimit)).await;
    relaxed
        .portal_client()
        .await
        .database("admin")
        .run_command(doc! {"sleep": 1, "millis": 600})
        .await
        .unwrap();
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let limits = mayfly::profile::limits::Limits {
        idle_connection: Duration::from_millis(300),
        ..Default::default()
    };
    let ping = doc! {"ping": 1, "$db": "admin"};
    let server = cosmos_with_limits(limits, None).await;
    let mut raw = server.raw().await;
    assert_eq!(raw.command(1, &ping).await.document.get_f64("ok"), Ok(1.0));
    assert!(raw.is_closed().await, "closed once idle past the limit");
    // A connection in use stays open; with the rule off an idle one does too.
    let mut busy = server.raw().await;
    for id in 0..4 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(
            busy.command(id, &ping).await.document.get_f64("ok"),
            Ok(1.0)
        );
    }
    let relaxed = cosmos_with_limits(limits, Some(Rule::IdleConnections)).await;
    let mut raw = relaxed.raw().await;
    assert_eq!(raw.command(1, &ping).await.document.get_f64("ok"), Ok(1.0));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(raw.command(2, &ping).await.document.get_f64("ok"), Ok(1.0));
}

#[tokio::test]
async fn unsupported_operators() {
    let server = TestServer::start_cosmos_7().await;
    let coll = seeded(&server.portal_client().await).await;
    // Documents whose `a` has bits 0 and 2 set: 5 (0b101).
    let bits = doc! {"a": {"$bitsAllSet": [0, 2]}};
    let (code, message) = failure(coll.find(bits.clone()).await.unwrap_err());
    assert_eq!(code, 115);
    assert_refusal(
        &message,
        "Operator $bitsAllSet not supported.",
        Rule::UnsupportedOperators,
    );
    let err = coll
        .delete_many(doc! {"$or": [{"b": 7}, {"a": {"$bitsAnyClear": 1}}]})
        .await
        .unwrap_err();
    assert_eq!(failure(err).0, 115);
    // MongoDB has them.
    let mongodb = TestServer::start().await;
    let coll = seeded(&mongodb.client().await).await;
    let found = coll.find_one(bits).await.unwrap().unwrap();
    assert_eq!(found.get_i32("a"), Ok(5));
}

#[tokio::test]
async fn unsupported_stages() {
    let server = TestServer::start_cosmos(Profile::cosmos(CosmosVersion::V7_0)).await;
    let client = server.portal_client().await;
    let coll = seeded(&client).await;
    let bucket = vec![doc! {"$bucket": {"groupBy": "$a", "boundaries": [0, 3, 10]}}];
    let (code, message) = failure(coll.aggregate(bucket.clone()).await.unwrap_err());
    assert_eq!(code, 40324);
    assert_refusal(
        &message,
        "Unrecognized pipeline stage name: '$bucket'",
        Rule::UnsupportedStages,
    );
    let lookup =
        vec![doc! {"$lookup": {"from": "items", "let": {"a": "$a"}, "pipeline": [], "as": "j"}}];
    let (code, message) = failure(coll.aggregate(lookup.clone()).await.unwrap_err());
    assert_eq!(code, 9);
    assert_refusal(&message, "let is not supported", Rule::UnsupportedStages);
    // (A 4.0 account has no `$set` stage either: the unit tests of `profile::stages` cover the
    // versions this driver cannot connect to.) MongoDB has all three.
    let set = vec![doc! {"$set": {"c": 1}}];
    let mongodb = TestServer::start().await;
    let coll = seeded(&mongodb.client().await).await;
    for pipeline in [bucket, lookup, set] {
        coll.aggregate(pipeline).await.unwrap();
    }
}

#[tokio::test]
async fn write_concerns() {
    // Cosmos ignores write concerns (every write is acknowledged by its quorum): `w: 3` and a
    // tag set are not errors there. With the rule allowed, the one-member replica set judges
    // them as mongod does.
    let concerns = [
        doc! {"w": 3},
        doc! {"w": "dc"},
        doc! {"w": "majority", "j": true},
    ];
    let cosmos = TestServer::start_cosmos_7().await;
    let allowed = TestServer::start_cosmos(
        Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::WriteConcerns),
    )
    .await;
    for (server, judged) in [(&cosmos, false), (&allowed, true)] {
        let db = server.portal_client().await.database("app");
        for (i, concern) in concerns.iter().enumerate() {
            let reply = db
                .run_command(doc! {
                    "insert": "wc",
                    "documents": [{"_id": i as i32}],
                    "writeConcern": concern.clone(),
                })
                .await
                .unwrap();
            assert_eq!(reply.get_i32("n").unwrap(), 1, "{reply}");
            let error = reply.get_document("writeConcernError").ok();
            let unmet = judged && concern.get_str("w") != Ok("majority");
            assert_eq!(error.is_some(), unmet, "{concern}: {reply}");
            if let Some(error) = error {
                let code = error.get_i32("code").unwrap();
                assert!(code == 100 || code == 79, "{error}");
            }
        }
    }
}
