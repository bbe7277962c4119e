//! Change streams through the Rust driver, against a server in replica-set mode: the events of
//! every kind of change (a TTL deletion included), resuming from a token after a restart, the
//! scopes, awaiting data, and the errors.

use crate::common;

use common::bson::{doc, Bson, Document, Timestamp};
use common::{ttl, TestServer};
use futures::StreamExt;
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use mongodb::change_stream::ChangeStream;
use mongodb::options::FullDocumentType;
use mongodb::Client;
use std::time::Duration;

async fn replica_set() -> TestServer {
    TestServer::start_with(|c| c.replication.set_name = Some("rs0".into())).await
}

/// The next event, failing the test if none comes within five seconds.
async fn next(
    stream: &mut ChangeStream<ChangeStreamEvent<Document>>,
) -> ChangeStreamEvent<Document> {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an event within 5 s")
        .expect("the stream is open")
        .expect("no error")
}

async fn run(client: &Client, db: &str, cmd: Document) -> mongodb::error::Result<Document> {
    client.database(db).run_command(cmd).await
}

fn code(err: &mongodb::error::Error) -> i32 {
    match &*err.kind {
        mongodb::error::ErrorKind::Command(c) => c.code,
        other => panic!("not a command error: {other:?}"),
    }
}

#[tokio::test]
async fn insert_update_replace_and_delete_arrive_in_order_in_mongods_shape() {
    let server = replica_set().await;
    let client = server.client().await;
    let coll = client.database("shop").collection::<Document>("orders");
    let mut stream = coll.watch().await.unwrap();
    coll.insert_one(doc! {"_id": 1, "qty": 1, "tags": ["a", "b", "c"]})
        .await
        .unwrap();
    coll.update_one(
        doc! {"_id": 1},
        doc! {"$set": {"qty": 2, "note": "x"}, "$pop": {"tags": 1}},
    )
    .await
    .unwrap();
    coll.update_one(doc! {"_id": 1}, doc! {"$unset": {"note": ""}})
        .await
        .unwrap();
    coll.replace_one(doc! {"_id": 1}, doc! {"qty": 9})
        .await
        .unwrap();
    coll.delete_one(doc! {"_id": 1}).await.unwrap();

    let insert = next(&mut stream).await;
    assert_eq!(insert.operation_type, OperationType::Insert);
    assert_eq!(
        insert.full_document,
        Some(doc! {"_id": 1, "qty": 1, "tags": ["a", "b", "c"]})
    );
    assert_eq!(insert.document_key, Some(doc! {"_id": 1}));
    let ns = insert.ns.as_ref().unwrap();
    assert_eq!(
        (ns.db.as_str(), ns.coll.as_deref()),
        ("shop", Some("orders"))
    );
    assert!(insert.cluster_time.is_some());
    assert!(insert.wall_time.is_some());

    let update = next(&mut stream).await;
    assert_eq!(update.operation_type, OperationType::Update);
    assert_eq!(update.full_document, None, "no lookup unless asked");
    let description = update.update_description.unwrap();
    assert_eq!(description.updated_fields, doc! {"qty": 2, "note": "x"});
    assert!(description.removed_fields.is_empty());
    let truncated = description.truncated_arrays.unwrap();
    assert_eq!(truncated.len(), 1);
    assert_eq!(truncated[0].field, "tags");
    assert_eq!(truncated[0].new_size, 2);

    let unset = next(&mut stream).await;
    assert_eq!(
        unset.update_description.unwrap().removed_fields,
        vec!["note".to_owned()]
    );

    let replace = next(&mut stream).await;
    assert_eq!(replace.operation_type, OperationType::Replace);
    assert_eq!(replace.full_document, Some(doc! {"_id": 1, "qty": 9}));

    let delete = next(&mut stream).await;
    assert_eq!(delete.operation_type, OperationType::Delete);
    assert_eq!(delete.document_key, Some(doc! {"_id": 1}));
    assert!(insert.cluster_time < delete.cluster_time);
}

#[tokio::test]
async fn a_ttl_deletion_is_a_delete_event() {
    let server = replica_set().await;
    let client = server.client().await;
    let coll = ttl::ttl_collection(&client, 10).await;
    coll.insert_one(doc! {"_id": "session-1"}).await.unwrap();
    let mut stream = coll.watch().await.unwrap();
    ttl::advance(&client, 60).await;
    ttl::reaper(&client, "runOnce").await;
    let event = next(&mut stream).await;
    assert_eq!(event.operation_type, OperationType::Delete);
    assert_eq!(event.document_key, Some(doc! {"_id": "session-1"}));
}

#[tokio::test]
async fn a_stream_resumes_from_a_token_after_a_restart() {
    let server = replica_set().await;
    let token: ResumeToken = {
        let client = server.client().await;
        let coll = client.database("db").collection::<Document>("c");
        let mut stream = coll.watch().await.unwrap();
        coll.insert_one(doc! {"_id": 1}).await.unwrap();
        let first = next(&mut stream).await;
        coll.insert_one(doc! {"_id": 2}).await.unwrap();
        first.id
    };
    let server = server.restart().await;
    let client = server.client().await;
    let coll = client.database("db").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 3}).await.unwrap();
    let mut resumed = coll.watch().resume_after(token).await.unwrap();
    let ids: Vec<Bson> = vec![
        next(&mut resumed)
            .await
            .document_key
            .unwrap()
            .get("_id")
            .cloned()
            .unwrap(),
        next(&mut resumed)
            .await
            .document_key
            .unwrap()
            .get("_id")
            .cloned()
            .unwrap(),
    ];
    assert_eq!(ids, vec![Bson::Int32(2), Bson::Int32(3)]);
}

#[tokio::test]
async fn update_lookup_brings_the_current_document() {
    let server = replica_set().await;
    let client = server.client().await;
    let coll = client.database("db").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1, "n": 1}).await.unwrap();
    let mut stream = coll
        .watch()
        .full_document(FullDocumentType::UpdateLookup)
        .await
        .unwrap();
    coll.update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
        .await
        .unwrap();
    let event = next(&mut stream).await;
    assert_eq!(event.full_document, Some(doc! {"_id": 1, "n": 2}));
}

#[tokio::test]
async fn dropping_the_collection_invalidates_its_stream_but_not_the_databases() {
    let server = replica_set().await;
    let client = server.client().await;
    let db = client.database("db");
    let coll = db.collection::<Document>("c");
    coll.insert_one(doc! {"_id": 0}).await.unwrap();
    let mut on_collection = coll.watch().await.unwrap();
    let mut on_database = db.watch().await.unwrap();
    let mut on_cluster = client.watch().await.unwrap();
    db.collection::<Document>("other")
        .insert_one(doc! {"_id": "o"})
        .await
        .unwrap();
    coll.drop().await.unwrap();
    db.collection::<Document>("other")
        .insert_one(doc! {"_id": "p"})
        .await
        .unwrap();

    let drop = next(&mut on_collection).await;
    assert_eq!(drop.operation_type, OperationType::Drop);
    let invalidate = next(&mut on_collection).await;
    assert_eq!(invalidate.operation_type, OperationType::Invalidate);
    assert!(
        tokio::time::timeout(Duration::from_secs(5), on_collection.next())
            .await
            .unwrap()
            .is_none()
    );

    let seen: Vec<OperationType> = vec![
        next(&mut on_database).await.operation_type,
        next(&mut on_database).await.operation_type,
        next(&mut on_database).await.operation_type,
    ];
    assert_eq!(
        seen,
        vec![
            OperationType::Insert,
            OperationType::Drop,
            OperationType::Insert
        ]
    );
    // The cluster stream sees the other collection's creation as its first insert, too.
    assert_eq!(
        next(&mut on_cluster).await.operation_type,
        OperationType::Insert
    );
}

#[tokio::test]
async fn a_get_more_waits_for_the_next_commit() {
    let server = replica_set().await;
    let client = server.client().await;
    let coll = client.database("db").collection::<Document>("c");
    let mut stream = coll
        .watch()
        .max_await_time(Duration::from_secs(30))
        .await
        .unwrap();
    let writer = coll.clone();
    let started = std::time::Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        writer.insert_one(doc! {"_id": "late"}).await.unwrap();
    });
    let event = next(&mut stream).await;
    assert_eq!(event.document_key, Some(doc! {"_id": "late"}));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "woken by the commit"
    );

    // With nothing to report, a getMore returns an empty batch once maxTimeMS has passed.
    let reply = run(
        &client,
        "db",
        doc! {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}},
    )
    .await
    .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    assert!(cursor.get_document("postBatchResumeToken").is_ok());
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0);
    let started = std::time::Instant::now();
    let more = run(
        &client,
        "db",
        doc! {"getMore": id, "collection": "c", "maxTimeMS": 200},
    )
    .await
    .unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(190), "{waited:?}");
    let cursor = more.get_document("cursor").unwrap();
    assert!(cursor.get_array("nextBatch").unwrap().is_empty());
    assert_eq!(cursor.get_i64("id").unwrap(), id);
    assert!(cursor.get_document("postBatchResumeToken").is_ok());
}

#[tokio::test]
async fn stages_after_change_stream_filter_and_reshape_but_may_not_touch_the_id() {
    let server = replica_set().await;
    let client = server.client().await;
    let coll = client.database("db").collection::<Document>("c");
    let mut stream = coll
        .watch()
        .pipeline(vec![
            doc! {"$match": {"fullDocument.keep": true}},
            doc! {"$addFields": {"seen": true}},
        ])
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 1, "keep": false})
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 2, "keep": true})
        .await
        .unwrap();
    let event = next(&mut stream).await;
    assert_eq!(event.document_key, Some(doc! {"_id": 2}));

    for (stage, want) in [
        (doc! {"$group": {"_id": null}}, 20),
        (doc! {"$changeStream": {}}, 40602),
    ] {
        let err = run(
            &client,
            "db",
            doc! {"aggregate": "c", "pipeline": [{"$changeStream": {}}, stage], "cursor": {}},
        )
        .await
        .unwrap_err();
        assert_eq!(code(&err), want);
    }
    let mut renaming = coll
        .watch()
        .pipeline(vec![doc! {"$project": {"_id": 0}}])
        .await
        .unwrap();
    coll.insert_one(doc! {"_id": 3}).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(5), renaming.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(code(&err), 280);
}

#[tokio::test]
async fn start_at_operation_time_replays_from_that_change() {
    let server = replica_set().await;
    let client = server.client().await;
    let coll = client.database("db").collection::<Document>("c");
    let mut first = coll.watch().await.unwrap();
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    let first_time: Timestamp = next(&mut first).await.cluster_time.unwrap();
    coll.insert_one(doc! {"_id": 2}).await.unwrap();
    let mut stream = coll
        .watch()
        .start_at_operation_time(first_time)
        .await
        .unwrap();
    let ids = vec![
        next(&mut stream).await.document_key.unwrap(),
        next(&mut stream).await.document_key.unwrap(),
    ];
    assert_eq!(ids, vec![doc! {"_id": 1}, doc! {"_id": 2}]);
}

#[tokio::test]
async fn a_resume_point_that_left_the_log_is_286() {
    let server = TestServer::start_with(|c| {
        c.replication.set_name = Some("rs0".into());
        c.replication.oplog_size_bytes = 2_048;
    })
    .await;
    let client = server.client().await;
    let coll = client.database("db").collection::<Document>("c");
    let mut stream = coll.watch().await.unwrap();
    coll.insert_one(doc! {"_id": 0}).await.unwrap();
    let token = next(&mut stream).await.id;
    for i in 1..100 {
        coll.insert_one(doc! {"_id": i, "pad": "x".repeat(100)})
            .await
            .unwrap();
    }
    let err = coll.watch().resume_after(token).await.unwrap_err();
    assert_eq!(code(&err), 286);
}

#[tokio::test]
async fn a_standalone_refuses_change_streams_with_40573() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let err = client
        .database("db")
        .collection::<Document>("c")
        .watch()
        .await
        .unwrap_err();
    assert_eq!(code(&err), 40573);
}

#[tokio::test]
async fn options_are_validated_when_the_stream_opens() {
    let server = replica_set().await;
    let client = server.client().await;
    for (stage, db, want) in [
        (doc! {"$changeStream": {"bogus": 1}}, "db", 40415),
        (doc! {"$changeStream": {"fullDocument": "nope"}}, "db", 2),
        (
            doc! {"$changeStream": {"resumeAfter": {"_data": "not ours"}}},
            "db",
            260,
        ),
        (doc! {"$changeStream": {}}, "admin", 73),
    ] {
        let coll: Bson = if db == "admin" {
            Bson::Int32(1)
        } else {
            "c".into()
        };
        let err = run(
            &client,
            db,
            doc! {"aggregate": coll, "pipeline": [stage.clone()], "cursor": {}},
        )
        .await
        .unwrap_err();
        assert_eq!(code(&err), want, "{stage}");
    }
    // `$changeStream` anywhere but first.
    let err = run(
        &client,
        "db",
        doc! {"aggregate": "c", "pipeline": [{"$match": {}}, {"$changeStream": {}}], "cursor": {}},
    )
    .await
    .unwrap_err();
    assert_eq!(code(&err), 40602);
}
