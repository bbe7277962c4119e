//! Collection and database commands (create, drop, dropDatabase, renameCollection,
//! listCollections, listDatabases, collMod) through the Rust driver, as applications use them.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::results::CollectionType;
use mongodb::Database;

async fn fails_with(db: &Database, cmd: Document) -> (i32, String) {
    let err = db.run_command(cmd.clone()).await.unwrap_err();
    let mongodb::error::ErrorKind::Command(c) = err.kind.as_ref() else {
        panic!("{cmd}: {err}")
    };
    (c.code, c.message.clone())
}

#[tokio::test]
async fn create_makes_an_empty_collection_and_refuses_an_existing_one() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    db.create_collection("users").await.unwrap();
    assert_eq!(db.list_collection_names().await.unwrap(), vec!["users"]);
    let err = db.create_collection("users").await.unwrap_err();
    assert_eq!(error_code(&err), Some(48));
    let (_, message) = fails_with(&db, doc! {"create": "users"}).await;
    assert_eq!(message, "Collection test.users already exists.");
    let (code, _) = fails_with(&db, doc! {"create": "a$b"}).await;
    assert_eq!(code, 73);
}

#[tokio::test]
async fn create_refuses_options_mayfly_does_not_implement() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    for (cmd, word) in [
        (doc! {"create": "c", "capped": true, "size": 4096}, "capped"),
        (
            doc! {"create": "c", "viewOn": "other", "pipeline": []},
            "views",
        ),
        (
            doc! {"create": "c", "timeseries": {"timeField": "t"}},
            "timeseries",
        ),
        (
            doc! {"create": "c", "validator": {"a": {"$exists": true}}},
            "validator",
        ),
        (
            doc! {"create": "c", "clusteredIndex": {"key": {"_id": 1}, "unique": true}},
            "clusteredIndex",
        ),
        (doc! {"create": "c", "autoIndexId": false}, "autoIndexId"),
    ] {
        let (code, message) = fails_with(&db, cmd.clone()).await;
        assert_eq!(code, 115, "{cmd}");
        assert!(message.contains(word), "{cmd}: {message}");
    }
    let (code, message) = fails_with(&db, doc! {"create": "c", "expireAfterSeconds": 10}).await;
    assert_eq!(code, 72);
    assert!(message.contains("_ts"), "{message}");
    let (code, _) = fails_with(&db, doc! {"create": "c", "bogus": 1}).await;
    assert_eq!(code, 40415);
    let (code, _) = fails_with(&db, doc! {"create": "c", "validationLevel": "sometimes"}).await;
    assert_eq!(code, 2);
    assert!(
        db.list_collection_names().await.unwrap().is_empty(),
        "nothing was created"
    );
}

#[tokio::test]
async fn create_keeps_harmless_options_and_list_collections_shows_them() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    db.run_command(doc! {
        "create": "c", "capped": false, "validationLevel": "moderate", "validationAction": "warn",
        "autoIndexId": true,
        "collation": {"locale": "simple"}, "idIndex": {"key": {"_id": 1}, "name": "_id_"},
    })
    .await
    .unwrap();
    let specs: Vec<_> = db
        .list_collections()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(specs.len(), 1);
    let spec = &specs[0];
    assert_eq!(spec.name, "c");
    assert_eq!(spec.collection_type, CollectionType::Collection);
    assert!(!spec.info.read_only);
    assert!(spec.info.uuid.is_some());
    assert_eq!(
        spec.id_index.as_ref().unwrap().get_document("key").unwrap(),
        &doc! {"_id": 1}
    );

    let reply = db.run_command(doc! {"listCollections": 1}).await.unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_i64("id").unwrap(), 0);
    assert_eq!(cursor.get_str("ns").unwrap(), "test.$cmd.listCollections");
    let entry = cursor.get_array("firstBatch").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(
        entry.get_document("options").unwrap(),
        &doc! {"autoIndexId": true, "validationLevel": "moderate", "validationAction": "warn"}
    );
    assert!(matches!(
        entry.get_document("info").unwrap().get("uuid"),
        Some(Bson::Binary(b)) if b.subtype == mongodb::bson::spec::BinarySubtype::Uuid
    ));
    assert_eq!(
        entry.get_document("idIndex").unwrap(),
        &doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    );
}

#[tokio::test]
async fn list_collections_filters_names_only_and_batches() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    for name in ["a", "b", "c"] {
        db.collection::<Document>(name)
            .insert_one(doc! {"x": 1})
            .await
            .unwrap();
    }
    let reply = db
        .run_command(doc! {
            "listCollections": 1, "filter": {}, "cursor": {}, "nameOnly": true,
            "authorizedCollections": false,
        })
        .await
        .unwrap();
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .clone();
    assert_eq!(
        batch[0].as_document().unwrap(),
        &doc! {"name": "a", "type": "collection"}
    );
    assert_eq!(batch.len(), 3);

    let filtered: Vec<_> = db
        .list_collections()
        .filter(doc! {"name": {"$in": ["b", "c"]}, "type": "collection"})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let names: Vec<_> = filtered.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["b", "c"]);

    // A batch size leaves a cursor open; getMore on `$cmd.listCollections` continues it.
    let reply = db
        .run_command(doc! {"listCollections": 1, "cursor": {"batchSize": 1}})
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0);
    let more = db
        .run_command(doc! {"getMore": id, "collection": "$cmd.listCollections"})
        .await
        .unwrap();
    assert_eq!(
        more.get_document("cursor")
            .unwrap()
            .get_array("nextBatch")
            .unwrap()
            .len(),
        2
    );
    // The driver drives the same cursor to the end.
    let all: Vec<_> = db
        .list_collections()
        .batch_size(1)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 3);
}

#[tokio::test]
async fn drop_reports_indexes_and_a_missing_collection_is_a_no_op() {
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"a": 1}).await.unwrap();
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    let reply = db.run_command(doc! {"drop": "c"}).await.unwrap();
    assert_eq!(reply, doc! {"nIndexesWas": 2, "ns": "test.c", "ok": 1.0});
    assert!(db.list_collection_names().await.unwrap().is_empty());
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
    // mongod 7.0 (SERVER-43894): dropping what does not exist succeeds with `{ok: 1}`.
    let reply = db.run_command(doc! {"drop": "c"}).await.unwrap();
    assert_eq!(reply, doc! {"ok": 1.0});
    coll.drop().await.unwrap();
}

#[tokio::test]
async fn drop_database_drops_every_collection() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("shop");
    for name in ["orders", "users"] {
        db.collection::<Document>(name)
            .insert_one(doc! {"x": 1})
            .await
            .unwrap();
    }
    client
        .database("other")
        .collection::<Document>("keep")
        .insert_one(doc! {})
        .await
        .unwrap();
    let reply = db.run_command(doc! {"dropDatabase": 1}).await.unwrap();
    assert_eq!(reply, doc! {"dropped": "shop", "ok": 1.0});
    assert_eq!(
        client.list_database_names().await.unwrap(),
        vec!["admin", "config", "local", "other"]
    );
    // A database that does not exist: `{ok: 1}`, as mongod.
    assert_eq!(
        db.run_command(doc! {"dropDatabase": 1}).await.unwrap(),
        doc! {"ok": 1.0}
    );
    db.drop().await.unwrap();
}

/// A drop leaves its entries to the background sweep: a collection made again under the same
/// name is empty at once, and `serverStatus` shows the entries deleted once nothing is left.
#[tokio::test]
async fn a_dropped_collections_space_is_reclaimed_in_the_background() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("shop");
    let orders = db.collection::<Document>("orders");
    let docs: Vec<Document> = (0..3000).map(|i| doc! {"_id": i, "a": i}).collect();
    orders.insert_many(docs).await.unwrap();
    orders
        .create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .unwrap();
    orders.drop().await.unwrap();
    orders.insert_one(doc! {"_id": 1, "a": -1}).await.unwrap();
    assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 1);
    assert_eq!(orders.count_documents(doc! {"a": 5}).await.unwrap(), 0);
    let admin = client.database("admin");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let swept = loop {
        let status = admin.run_command(doc! {"serverStatus": 1}).await.unwrap();
        let space = status
            .get_document("storageEngine")
            .unwrap()
            .get_document("droppedSpace")
            .unwrap()
            .clone();
        if space.get_i64("pendingRanges").unwrap() == 0 {
            break space;
        }
        assert!(std::time::Instant::now() < deadline, "never swept: {space}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // 3,000 documents, their 3,000 entries in `a_1`, and their 3,000 expiry entries (every
    // document has one, so that a TTL given later needs no rewrite).
    assert_eq!(swept.get_i64("entriesDeleted").unwrap(), 9000, "{swept}");
    assert_eq!(swept.get_i64("errors").unwrap(), 0);
    assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn rename_keeps_documents_and_indexes_even_across_databases() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let admin = client.database("admin");
    let source = client.database("a").collection::<Document>("from");
    source
        .insert_many(vec![doc! {"_id": 1, "k": "x"}, doc! {"_id": 2, "k": "y"}])
        .await
        .unwrap();
    client
        .database("a")
        .run_command(doc! {"createIndexes": "from", "indexes": [{"key": {"k": 1}, "name": "k_1", "unique": true}]})
        .await
        .unwrap();
    admin
        .run_command(doc! {"renameCollection": "a.from", "to": "a.to"})
        .await
        .unwrap();
    admin
        .run_command(doc! {"renameCollection": "a.to", "to": "b.moved"})
        .await
        .unwrap();
    let moved = client.database("b").collection::<Document>("moved");
    let docs: Vec<_> = moved
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        docs,
        vec![doc! {"_id": 1, "k": "x"}, doc! {"_id": 2, "k": "y"}]
    );
    assert_eq!(moved.list_index_names().await.unwrap(), vec!["_id_", "k_1"]);
    // The unique index still holds after the move.
    let err = moved
        .insert_one(doc! {"_id": 3, "k": "x"})
        .await
        .unwrap_err();
    assert_eq!(write_code(&err), Some(11000));
    assert_eq!(
        client.list_database_names().await.unwrap(),
        vec!["admin", "b", "config", "local"]
    );
}

fn write_code(err: &mongodb::error::Error) -> Option<i32> {
    match err.kind.as_ref() {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(e)) => {
            Some(e.code)
        }
        _ => error_code(err),
    }
}

#[tokio::test]
async fn rename_errors_are_mongods() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let admin = client.database("admin");
    for name in ["a", "b"] {
        client
            .database("t")
            .collection::<Document>(name)
            .insert_one(doc! {"n": name})
            .await
            .unwrap();
    }
    let (code, message) =
        fails_with(&admin, doc! {"renameCollection": "t.missing", "to": "t.z"}).await;
    assert_eq!(
        (code, message.as_str()),
        (26, "Source collection t.missing does not exist")
    );
    let (code, _) = fails_with(&admin, doc! {"renameCollection": "t.a", "to": "t.b"}).await;
    assert_eq!(code, 48);
    for bad in ["t.", "t.a$b", "nodot", "t.system.x"] {
        let (code, _) = fails_with(&admin, doc! {"renameCollection": "t.a", "to": bad}).await;
        assert_eq!(code, 73, "{bad}");
    }
    let (code, _) = fails_with(
        &client.database("t"),
        doc! {"renameCollection": "t.a", "to": "t.c"},
    )
    .await;
    assert_eq!(code, 13, "admin only");
    // dropTarget replaces the target.
    admin
        .run_command(doc! {"renameCollection": "t.a", "to": "t.b", "dropTarget": true})
        .await
        .unwrap();
    let b = client.database("t").collection::<Document>("b");
    let docs: Vec<_> = b
        .find(doc! {})
        .projection(doc! {"_id": 0})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(docs, vec![doc! {"n": "a"}]);
}

#[tokio::test]
async fn list_databases_reports_sizes_and_honours_filter_and_name_only() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .database("big")
        .collection::<Document>("c")
        .insert_one(doc! {"pad": "x".repeat(1000)})
        .await
        .unwrap();
    client
        .database("empty")
        .create_collection("c")
        .await
        .unwrap();
    let specs = client.list_databases().await.unwrap();
    let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
    // mongod always lists admin, config and local, in name order with the others.
    assert_eq!(names, ["admin", "big", "config", "empty", "local"]);
    let spec = |name: &str| specs.iter().find(|s| s.name == name).unwrap();
    assert!(spec("big").size_on_disk > 1000);
    assert!(!spec("big").empty);
    assert_eq!(spec("empty").size_on_disk, 0);
    assert!(spec("empty").empty);
    // No users, no transaction records, no operation log (standalone): nothing in them.
    for system in ["admin", "config", "local"] {
        assert_eq!(spec(system).size_on_disk, 0, "{system}");
        assert!(spec(system).empty, "{system}");
    }

    let admin = client.database("admin");
    let reply = admin.run_command(doc! {"listDatabases": 1}).await.unwrap();
    assert!(reply.get_i64("totalSize").unwrap() > 1000);
    assert_eq!(reply.get_i64("totalSizeMb").unwrap(), 0);
    let reply = admin
        .run_command(doc! {"listDatabases": 1, "nameOnly": true, "filter": {"name": "empty"}, "authorizedDatabases": false})
        .await
        .unwrap();
    assert_eq!(reply, doc! {"databases": [{"name": "empty"}], "ok": 1.0});
    assert_eq!(
        client.list_database_names().await.unwrap(),
        vec!["admin", "big", "config", "empty", "local"]
    );
    let (code, _) = fails_with(&client.database("test"), doc! {"listDatabases": 1}).await;
    assert_eq!(code, 13);
}

#[tokio::test]
async fn coll_mod_is_refused_except_a_no_op() {
    // TTL-7: Cosmos DB does not support collMod.
    let server = TestServer::start().await;
    let db = server.client().await.database("test");
    db.create_collection("c").await.unwrap();
    let (code, message) = fails_with(
        &db,
        doc! {"collMod": "c", "index": {"keyPattern": {"_ts": 1}, "expireAfterSeconds": 20}},
    )
    .await;
    assert_eq!(code, 115);
    assert!(
        message.contains("drop the index and create it again"),
        "{message}"
    );
    let (code, message) = fails_with(&db, doc! {"collMod": "c", "validator": {}}).await;
    assert_eq!(code, 115);
    assert!(message.contains("validator"), "{message}");
    assert_eq!(
        db.run_command(doc! {"collMod": "c"}).await.unwrap(),
        doc! {"ok": 1.0}
    );
    let (code, _) = fails_with(&db, doc! {"collMod": "missing"}).await;
    assert_eq!(code, 26);
}

/// `admin` holds the users (mongod's `admin.system.users`) and `local` the operation log in
/// replica-set mode: their sizes are what they really hold.
#[tokio::test]
async fn the_system_databases_report_what_they_hold() {
    let size_of = |reply: &Document, name: &str| {
        reply
            .get_array("databases")
            .unwrap()
            .iter()
            .map(|d| d.as_document().unwrap())
            .find(|d| d.get_str("name") == Ok(name))
            .map(|d| d.get_i64("sizeOnDisk").unwrap())
            .unwrap()
    };
    let server = TestServer::start().await;
    let admin = server.client().await.database("admin");
    let before = admin.run_command(doc! {"listDatabases": 1}).await.unwrap();
    assert_eq!(size_of(&before, "admin"), 0);
    admin
        .run_command(doc! {"createUser": "ops", "pwd": "secret-pw", "roles": ["root"]})
        .await
        .unwrap();
    let after = admin.run_command(doc! {"listDatabases": 1}).await.unwrap();
    assert!(size_of(&after, "admin") > 100, "{after}");

    let replset = TestServer::start_replset("rs0").await;
    let client = replset.client().await;
    client
        .database("app")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .await
        .unwrap();
    let listed = client
        .database("admin")
        .run_command(doc! {"listDatabases": 1})
        .await
        .unwrap();
    assert!(size_of(&listed, "local") > 0, "the operation log: {listed}");
}
