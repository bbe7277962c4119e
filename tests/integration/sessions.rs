//! Logical sessions: every command with an `lsid` touches its session; ending, killing or
//! expiring a session closes the cursors opened in it; a cursor continues only in its own
//! session; `$listLocalSessions` lists them.

use crate::common;

use common::bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use mayfly::clock::Clock;
use mongodb::{ClientSession, Database};
use std::time::{Duration, Instant};

/// A collection of five documents and a cursor on it opened in `session` (one document read).
async fn open_cursor(db: &Database, session: &mut ClientSession) -> i64 {
    let coll = db.collection::<Document>("c");
    if coll.estimated_document_count().await.unwrap() == 0 {
        coll.insert_many((0..5).map(|i| doc! {"_id": i}))
            .await
            .unwrap();
    }
    let reply = db
        .run_command(doc! {"find": "c", "batchSize": 1})
        .session(&mut *session)
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    assert_ne!(id, 0);
    id
}

async fn get_more(
    db: &Database,
    session: &mut ClientSession,
    id: i64,
) -> mongodb::error::Result<Document> {
    db.run_command(doc! {"getMore": id, "collection": "c", "batchSize": 1})
        .session(session)
        .await
}

#[tokio::test]
async fn ending_a_session_closes_its_cursors() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("s");
    let mut s = client.start_session().await.unwrap();
    let id = open_cursor(&db, &mut s).await;
    get_more(&db, &mut s, id).await.unwrap();
    client
        .database("admin")
        .run_command(doc! {"endSessions": [s.id().clone()]})
        .await
        .unwrap();
    let err = get_more(&db, &mut s, id).await.unwrap_err();
    assert_eq!(error_code(&err), Some(43), "{err}");
}

#[tokio::test]
async fn killing_a_session_closes_its_cursors_and_not_others() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("s");
    let mut doomed = client.start_session().await.unwrap();
    let mut kept = client.start_session().await.unwrap();
    let doomed_cursor = open_cursor(&db, &mut doomed).await;
    let kept_cursor = open_cursor(&db, &mut kept).await;
    client
        .database("admin")
        .run_command(doc! {"killSessions": [doomed.id().clone()]})
        .await
        .unwrap();
    let err = get_more(&db, &mut doomed, doomed_cursor).await.unwrap_err();
    assert_eq!(error_code(&err), Some(43), "{err}");
    get_more(&db, &mut kept, kept_cursor).await.unwrap();
}

#[tokio::test]
async fn kill_all_sessions_interrupts_operations_running_in_them() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let admin = client.database("admin");
    let mut s = client.start_session().await.unwrap();
    let sleeper = {
        let admin = admin.clone();
        tokio::spawn(async move {
            admin
                .run_command(doc! {"sleep": 1, "millis": 10_000})
                .session(&mut s)
                .await
        })
    };
    common::wait_for_ops(&client, doc! {"command.sleep": 1}, |ops| !ops.is_empty()).await;
    admin
        .run_command(doc! {"killAllSessions": []})
        .await
        .unwrap();
    let err = sleeper.await.unwrap().unwrap_err();
    assert_eq!(error_code(&err), Some(11601), "{err}");
}

#[tokio::test]
async fn a_cursor_continues_only_in_the_session_it_was_opened_in() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("s");
    let mut owner = client.start_session().await.unwrap();
    let mut other = client.start_session().await.unwrap();
    let id = open_cursor(&db, &mut owner).await;
    let err = get_more(&db, &mut other, id).await.unwrap_err();
    assert_eq!(error_code(&err), Some(50738), "{err}");
    assert!(
        err.to_string().contains(&format!(
            "Cannot run getMore on cursor {id}, which was created in session"
        )),
        "{err}"
    );
    // Without an lsid (a raw connection; a driver always sends one).
    let mut raw = server.raw().await;
    let reply = raw
        .command(1, &doc! {"getMore": id, "collection": "c", "$db": "s"})
        .await;
    assert_eq!(
        reply.document.get_i32("code"),
        Ok(50737),
        "{:?}",
        reply.document
    );
    // The refusals leave the cursor open for its own session.
    get_more(&db, &mut owner, id).await.unwrap();
}

#[tokio::test]
async fn an_idle_session_expires_and_its_cursors_close() {
    let server = TestServer::start().await;
    server
        .shared()
        .sessions
        .set_reap_interval(Duration::from_millis(20));
    let client = server.client().await;
    let db = client.database("s");
    let mut s = client.start_session().await.unwrap();
    let _id = open_cursor(&db, &mut s).await;
    let shared = server.shared();
    assert_eq!(shared.engine.cursors.open_count(), 1);
    // Not yet idle for logicalSessionTimeoutMinutes (30).
    server.clock.advance(Duration::from_secs(29 * 60));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(shared.engine.cursors.open_count(), 1, "still in use");
    server.clock.advance(Duration::from_secs(2 * 60));
    let start = Instant::now();
    while shared.engine.cursors.open_count() != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the expired session's cursor was never closed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `_id.id`s `$listLocalSessions` with `spec` lists, run in `session`.
async fn listed(
    admin: &Database,
    session: &mut ClientSession,
    spec: Document,
) -> mongodb::error::Result<Vec<Bson>> {
    let reply = admin
        .run_command(doc! {
            "aggregate": 1,
            "pipeline": [{"$listLocalSessions": spec}],
            "cursor": {},
        })
        .session(session)
        .await?;
    Ok(reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| {
            let d = d.as_document().unwrap();
            assert!(d.get_datetime("lastUse").is_ok(), "{d}");
            d.get_document("_id").unwrap().get("id").unwrap().clone()
        })
        .collect())
}

#[tokio::test]
async fn list_local_sessions_lists_the_sessions_in_use() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let admin = client.database("admin");
    let mut s = client.start_session().await.unwrap();
    let own = s.id().get("id").unwrap().clone();
    let started = admin.run_command(doc! {"startSession": 1}).await.unwrap();
    let started = started
        .get_document("id")
        .unwrap()
        .get("id")
        .unwrap()
        .clone();

    let mine = listed(&admin, &mut s, doc! {}).await.unwrap();
    assert!(mine.contains(&own), "{mine:?}");
    assert!(
        mine.contains(&started),
        "startSession registers it: {mine:?}"
    );
    let all = listed(&admin, &mut s, doc! {"allUsers": true})
        .await
        .unwrap();
    assert!(all.contains(&own));
    let nobody = listed(
        &admin,
        &mut s,
        doc! {"users": [{"user": "nobody", "db": "admin"}]},
    )
    .await
    .unwrap();
    assert!(nobody.is_empty(), "{nobody:?}");

    client
        .database("admin")
        .run_command(doc! {"endSessions": [{"id": started.clone()}]})
        .await
        .unwrap();
    let mine = listed(&admin, &mut s, doc! {}).await.unwrap();
    assert!(!mine.contains(&started), "ended: {mine:?}");

    let on_collection = client
        .database("s")
        .run_command(
            doc! {"aggregate": "c", "pipeline": [{"$listLocalSessions": {}}], "cursor": {}},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&on_collection), Some(73), "{on_collection}");
    let not_first = admin
        .run_command(doc! {
            "aggregate": 1,
            "pipeline": [{"$match": {}}, {"$listLocalSessions": {}}],
            "cursor": {},
        })
        .await
        .unwrap_err();
    assert_eq!(error_code(&not_first), Some(40602), "{not_first}");
    let in_facet = admin
        .run_command(doc! {
            "aggregate": 1,
            "pipeline": [{"$facet": {"a": [{"$listLocalSessions": {}}]}}],
            "cursor": {},
        })
        .await
        .unwrap_err();
    assert_eq!(error_code(&in_facet), Some(40600), "{in_facet}");
}

#[tokio::test]
async fn session_commands_refuse_malformed_arguments() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let admin = client.database("admin");
    for (cmd, code) in [
        (doc! {"endSessions": 1}, 14),
        (doc! {"endSessions": [{"x": 1}]}, 40415),
        (doc! {"refreshSessions": [{}]}, 40414),
        (doc! {"killAllSessions": [{"user": "a"}]}, 40414),
    ] {
        let err = admin.run_command(cmd.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{cmd}: {err}");
    }
}

#[tokio::test]
async fn kill_all_sessions_by_pattern_kills_the_matching_sessions() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("s");
    let admin = client.database("admin");
    let mut doomed = client.start_session().await.unwrap();
    let mut kept = client.start_session().await.unwrap();
    let doomed_cursor = open_cursor(&db, &mut doomed).await;
    let kept_cursor = open_cursor(&db, &mut kept).await;
    // The full session id ({id, uid}) as $listLocalSessions shows it.
    let reply = admin
        .run_command(doc! {
            "aggregate": 1,
            "pipeline": [
                {"$listLocalSessions": {"allUsers": true}},
                {"$match": {"_id.id": doomed.id().get("id").unwrap().clone()}},
            ],
            "cursor": {},
        })
        .await
        .unwrap();
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let lsid = batch[0].as_document().unwrap().get_document("_id").unwrap();
    admin
        .run_command(doc! {"killAllSessionsByPattern": [{"lsid": lsid.clone()}]})
        .await
        .unwrap();
    let err = get_more(&db, &mut doomed, doomed_cursor).await.unwrap_err();
    assert_eq!(error_code(&err), Some(43), "{err}");
    get_more(&db, &mut kept, kept_cursor).await.unwrap();

    let err = admin
        .run_command(doc! {"killAllSessionsByPattern": [{"users": []}]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(238), "{err}");
    admin
        .run_command(doc! {"killAllSessionsByPattern": [{}]})
        .await
        .unwrap();
    let err = get_more(&db, &mut kept, kept_cursor).await.unwrap_err();
    assert_eq!(error_code(&err), Some(43), "{err}");
}
