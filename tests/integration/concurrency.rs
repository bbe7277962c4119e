//! Many clients at once: 32 connections writing and reading concurrently see their own writes and
//! end with exact counts; unacknowledged (`w: 0`) and non-journaled (`j: false`) writes are
//! applied in order with the connection's other writes.

use crate::common;

use common::bson::{doc, Document};
use common::TestServer;
use futures::TryStreamExt;
use mayfly::wire::client::{self, MsgOptions};
use mayfly::wire::MsgFlags;
use mongodb::options::WriteConcern;
use mongodb::Collection;

const CLIENTS: i32 = 32;
const DOCS_PER_CLIENT: i32 = 200;

fn id_of(client: i32, n: i32) -> String {
    format!("t{client:02}-{n:04}")
}

fn document_of(client: i32, n: i32) -> Document {
    doc! {"_id": id_of(client, n), "client": client, "n": n, "text": format!("{client}/{n}")}
}

async fn collect(coll: &Collection<Document>, filter: Document) -> Vec<Document> {
    coll.find(filter)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// One client's work: 200 writes (single inserts, and every tenth step a batch of four), each
/// followed by reads of what it wrote before, by `_id` and by filter.
async fn client_work(coll: Collection<Document>, client: i32) {
    let mut n = 0;
    while n < DOCS_PER_CLIENT {
        if n % 10 == 9 && n + 4 <= DOCS_PER_CLIENT {
            let batch: Vec<Document> = (n..n + 4).map(|k| document_of(client, k)).collect();
            let result = coll.insert_many(batch).await.unwrap();
            assert_eq!(result.inserted_ids.len(), 4);
            n += 4;
        } else {
            coll.insert_one(document_of(client, n)).await.unwrap();
            n += 1;
        }
        // Read-your-writes by `_id`: the latest and an earlier one.
        for k in [n - 1, (n - 1) / 2] {
            let found = coll.find_one(doc! {"_id": id_of(client, k)}).await.unwrap();
            assert_eq!(
                found,
                Some(document_of(client, k)),
                "client {client} doc {k}"
            );
        }
        // A filtered scan sees exactly this client's documents written so far.
        if n % 16 == 0 {
            let mine = collect(&coll, doc! {"client": client, "n": {"$lt": n}}).await;
            assert_eq!(mine.len() as i32, n, "client {client} after {n} writes");
            assert!(mine.iter().all(|d| d.get_i32("client") == Ok(client)));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_clients_write_and_read_at_once() {
    let server = TestServer::start().await;
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        // Half the tasks have their own driver client, half share one with a large pool.
        let coll = if client % 2 == 0 {
            server.client().await
        } else {
            server.client_with(|o| o.max_pool_size = Some(64)).await
        }
        .database("concurrency")
        .collection::<Document>("docs");
        tasks.push(tokio::spawn(client_work(coll, client)));
    }
    for task in tasks {
        task.await.unwrap();
    }

    let coll = server
        .client()
        .await
        .database("concurrency")
        .collection::<Document>("docs");
    for client in 0..CLIENTS {
        let mine = collect(&coll, doc! {"client": client}).await;
        assert_eq!(mine.len() as i32, DOCS_PER_CLIENT, "client {client}");
        let mut ns: Vec<i32> = mine.iter().map(|d| d.get_i32("n").unwrap()).collect();
        ns.sort_unstable();
        assert_eq!(ns, (0..DOCS_PER_CLIENT).collect::<Vec<_>>());
    }
    let all = collect(&coll, doc! {}).await;
    assert_eq!(all.len() as i32, CLIENTS * DOCS_PER_CLIENT);
}

#[tokio::test]
async fn unacknowledged_writes_are_applied_in_order() {
    let server = TestServer::start().await;
    // The Rust driver refuses `w: 0` on its CRUD helpers, so the unacknowledged inserts go as
    // other drivers send them: OP_MSG with `moreToCome` (no reply), `writeConcern: {w: 0}`.
    let mut conn = server.raw().await;
    let fire_and_forget = MsgOptions {
        flags: MsgFlags::MORE_TO_COME,
        ..Default::default()
    };
    for n in 0..100 {
        let insert = doc! {
            "insert": "w0", "documents": [{"_id": n, "n": n}],
            "writeConcern": {"w": 0}, "$db": "concurrency",
        };
        conn.send(&client::op_msg(n + 1, &insert, &fire_and_forget).unwrap())
            .await;
    }
    let batch = MsgOptions {
        flags: MsgFlags::MORE_TO_COME,
        sequences: vec![(
            "documents",
            (100..150).map(|n| doc! {"_id": n, "n": n}).collect(),
        )],
        ..Default::default()
    };
    let insert = doc! {"insert": "w0", "writeConcern": {"w": 0}, "$db": "concurrency"};
    conn.send(&client::op_msg(200, &insert, &batch).unwrap())
        .await;
    // The writer applies a connection's writes in order: once this acknowledged write is
    // answered, the unacknowledged ones sent before it are applied.
    let reply = conn
        .command(
            201,
            &doc! {"insert": "w0", "documents": [{"_id": "last"}], "$db": "concurrency"},
        )
        .await;
    assert_eq!(reply.document.get_i32("n"), Ok(1), "{:?}", reply.document);

    let coll = server
        .client()
        .await
        .database("concurrency")
        .collection::<Document>("w0");
    let all = collect(&coll, doc! {"n": {"$gte": 0}}).await;
    assert_eq!(all.len(), 150);
    for n in [0, 57, 99, 100, 149] {
        let found = coll.find_one(doc! {"_id": n}).await.unwrap();
        assert_eq!(found, Some(doc! {"_id": n, "n": n}));
    }
}

#[tokio::test]
async fn w0_write_concern_without_more_to_come_is_applied() {
    let server = TestServer::start().await;
    let db = server.client().await.database("concurrency");
    for n in 0..20 {
        db.run_command(doc! {
            "insert": "w0_reply", "documents": [{"_id": n}], "writeConcern": {"w": 0},
        })
        .await
        .unwrap();
        let found = db
            .collection::<Document>("w0_reply")
            .find_one(doc! {"_id": n})
            .await
            .unwrap();
        assert_eq!(found, Some(doc! {"_id": n}));
    }
}

#[tokio::test]
async fn non_journaled_writes_are_readable_at_once() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let coll = client
        .database("concurrency")
        .collection_with_options::<Document>(
            "j_false",
            mongodb::options::CollectionOptions::builder()
                .write_concern(WriteConcern::builder().journal(false).build())
                .build(),
        );
    for n in 0..50 {
        coll.insert_one(doc! {"_id": n, "n": n}).await.unwrap();
        // Read on whichever connection the pool hands out: the write is committed already.
        let found = coll.find_one(doc! {"_id": n}).await.unwrap();
        assert_eq!(found, Some(doc! {"_id": n, "n": n}));
    }
    coll.insert_many((50..80).map(|n| doc! {"_id": n, "n": n}))
        .await
        .unwrap();
    assert_eq!(collect(&coll, doc! {}).await.len(), 80);
}
