//! The Cosmos profile (`--compat cosmos`), a test per rule through the Rust driver, each
//! checking Cosmos's code and text (docs/cosmos.md lists the rules and their sources); the
//! same commands in the default profile behave as MongoDB 7.0, and `--cosmos-allow RULE`
//! turns one rule off.

use crate::common;

use common::bson::{doc, Document};
use common::TestServer;
use mayfly::profile::refusal::rule_line;
use mayfly::profile::{CosmosVersion, Profile, Rule};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::time::Duration;

const SET: &str = "globaldb";

async fn cosmos_server(profile: Profile) -> TestServer {
    TestServer::start_with(move |c| {
        c.profile = profile;
        c.replication.set_name = Some(SET.to_owned());
    })
    .await
}

async fn cosmos() -> TestServer {
    cosmos_server(Profile::cosmos(CosmosVersion::V7_0)).await
}

/// A client as the portal's connection string makes one: `replicaSet=globaldb`,
/// `retrywrites=false`.
async fn portal_client(server: &TestServer) -> Client {
    let uri = format!(
        "mongodb://{}/?replicaSet={SET}&retrywrites=false&maxIdleTimeMS=120000&appName=@test@",
        server.addr
    );
    let mut options = ClientOptions::parse(uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(5));
    Client::with_options(options).unwrap()
}

/// `(code, message)` of a failed command.
fn failure(err: mongodb::error::Error) -> (i32, String) {
    match *err.kind {
        mongodb::error::ErrorKind::Command(c) => (c.code, c.message),
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => {
            (w.code, w.message)
        }
        mongodb::error::ErrorKind::InsertMany(m) => {
            let w = m.write_errors.unwrap().remove(0);
            (w.code, w.message)
        }
        other => panic!("not a command error: {other:?}"),
    }
}

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
    let server = cosmos_server(Profile::cosmos(CosmosVersion::V5_0)).await;
    let client = portal_client(&server).await;
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
    let build = client
        .database("admin")
        .run_command(doc! {"buildInfo": 1})
        .await
        .unwrap();
    assert_eq!(build.get_str("version").unwrap(), "5.0.0");
}

#[tokio::test]
async fn a_driver_newer_than_the_account_fails_to_connect() {
    // This Rust driver needs MongoDB 4.4 (wire version 9) or later: a 4.2 account (wire
    // version 8) is too old for it, as it is on Azure.
    let server = cosmos_server(Profile::cosmos(CosmosVersion::V4_2)).await;
    let client = portal_client(&server).await;
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
    let server = cosmos().await;
    let client = portal_client(&server).await;
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
    let allowed =
        cosmos_server(Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::SortWithoutIndex)).await;
    let mongodb = TestServer::start().await;
    for client in [portal_client(&allowed).await, mongodb.client().await] {
        let coll = seeded(&client).await;
        let first = coll.find_one(doc! {}).sort(doc! {"a": 1}).await.unwrap();
        assert_eq!(first.unwrap().get_i32("a").unwrap(), 1);
        let first = coll
            .find_one(doc! {})
            .sort(doc! {"b": 1, "a": 1})
            .await
            .unwrap();
        assert_eq!(first.unwrap().get_i32("_id").unwrap(), 4);
    }
}

#[tokio::test]
async fn unique_index_on_populated() {
    let server = cosmos().await;
    let client = portal_client(&server).await;
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
async fn nested_index_paths() {
    let server = cosmos().await;
    let client = portal_client(&server).await;
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
    let server = cosmos().await;
    let client = portal_client(&server).await;
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
    let server = cosmos().await;
    let client = portal_client(&server).await;
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
        cosmos_server(Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::DocumentSize)).await;
    let mongodb = TestServer::start().await;
    for client in [portal_client(&lifted).await, mongodb.client().await] {
        let coll = client.database("app").collection::<Document>("big");
        coll.insert_one(big.clone()).await.unwrap();
    }
}

#[tokio::test]
async fn retryable_writes() {
    let server = cosmos().await;
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
    let coll = portal_client(&server)
        .await
        .database("app")
        .collection::<Document>("items");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    // The account capability `EnableMongoRetryableWrites`.
    let capable =
        cosmos_server(Profile::cosmos(CosmosVersion::V7_0).allowing(Rule::RetryableWrites)).await;
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
    let server = cosmos().await;
    let client = portal_client(&server).await;
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
