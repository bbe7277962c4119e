//! The server under many clients: compression through the driver, 200 concurrent connections,
//! the connection limit, and graceful shutdown with a command in flight.

use crate::common;

use common::bson::{doc, Document};
use common::TestServer;
use mongodb::options::Compressor as DriverCompressor;

async fn server_status(server: &TestServer) -> Document {
    server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap()
}

#[tokio::test]
async fn each_compressor_works_through_the_driver() {
    let server = TestServer::start().await;
    let compressors = [
        ("snappy", DriverCompressor::Snappy),
        ("zlib", DriverCompressor::Zlib { level: None }),
        ("zstd", DriverCompressor::Zstd { level: None }),
    ];
    for (name, compressor) in compressors {
        let client = server
            .client_with(|o| o.compressors = Some(vec![compressor]))
            .await;
        let reply = client
            .database("admin")
            .run_command(doc! {"buildInfo": 1, "pad": "x".repeat(4096)})
            .await
            .unwrap();
        assert_eq!(reply.get_str("version").unwrap(), "7.0.0");
        let status = server_status(&server).await;
        let counters = status
            .get_document("network")
            .unwrap()
            .get_document("compression")
            .unwrap()
            .get_document(name)
            .unwrap();
        let decompressed = counters.get_document("decompressor").unwrap();
        let compressed = counters.get_document("compressor").unwrap();
        assert!(
            decompressed.get_i64("bytesIn").unwrap() > 0,
            "{name}: requests arrived compressed"
        );
        assert!(
            decompressed.get_i64("bytesOut").unwrap() > decompressed.get_i64("bytesIn").unwrap(),
            "{name}: the padded request was smaller compressed"
        );
        assert!(
            compressed.get_i64("bytesOut").unwrap() > 0,
            "{name}: replies went out compressed"
        );
    }
}

#[tokio::test]
async fn two_hundred_concurrent_connections() {
    let server = TestServer::start().await;
    let client = server.client_with(|o| o.max_pool_size = Some(200)).await;
    // Each task holds a pooled connection while the others start, so the pool must open 200
    // of them. The hold is long enough (2 s) that opening the last connection on a loaded
    // 2-core machine does not outlast the first command, which would let the pool reuse it.
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .database("admin")
                    .run_command(doc! {"sleep": 1, "millis": 2000})
                    .await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let status = server_status(&server).await;
    let created = status
        .get_document("connections")
        .unwrap()
        .get_i64("totalCreated")
        .unwrap();
    assert!(created >= 200, "totalCreated {created}");
}

#[tokio::test]
async fn the_connection_limit_refuses_extra_connections_and_reports_it() {
    let server = TestServer::start_with(|c| c.max_conns = 2).await;
    let mut a = server.raw().await;
    let mut b = server.raw().await;
    assert_eq!(
        a.command(1, &doc! {"ping": 1, "$db": "a"})
            .await
            .document
            .get_f64("ok")
            .unwrap(),
        1.0
    );
    assert_eq!(
        b.command(1, &doc! {"ping": 1, "$db": "a"})
            .await
            .document
            .get_f64("ok")
            .unwrap(),
        1.0
    );
    let mut refused = server.raw().await;
    assert!(
        refused.is_closed().await,
        "the third connection is closed at once"
    );
    drop((a, b));
    // Slots free up again: a driver (monitor + one pooled connection) fits in two.
    let client = server.client_with(|o| o.max_pool_size = Some(1)).await;
    let mut status = None;
    for _ in 0..50 {
        match client
            .database("admin")
            .run_command(doc! {"serverStatus": 1})
            .await
        {
            Ok(s) => {
                status = Some(s);
                break;
            }
            // The released slots may take a moment to be seen.
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    let status = status.expect("a client fits once slots are free");
    let conns = status.get_document("connections").unwrap();
    assert!(conns.get_i64("rejected").unwrap() >= 1);
    assert!(conns.get_i64("current").unwrap() <= 2);
    assert_eq!(
        conns.get_i64("available").unwrap(),
        2 - conns.get_i64("current").unwrap()
    );
}

#[tokio::test]
async fn graceful_shutdown_finishes_the_command_in_flight() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .database("admin")
                .run_command(doc! {"sleep": 1, "millis": 1500})
                .await
        })
    };
    // Give the request time to reach the server before shutdown begins.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let addr = server.addr;
    server.server.begin_shutdown();
    let reply = in_flight
        .await
        .unwrap()
        .expect("the command in flight completes");
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0);
    server.server.wait().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}
