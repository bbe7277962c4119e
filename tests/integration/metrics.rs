//! The Prometheus endpoint (`--metrics-addr`) as a scraper sees it: every line of a scrape is
//! valid OpenMetrics text, every sample belongs to a declared family, histograms are
//! consistent, and the counters move with what clients do.

use crate::common::ttl::{advance, reaper, set_collection_ttl};
use crate::common::TestServer;
use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one HTTP request and returns the status line, the headers and the body.
async fn http(addr: SocketAddr, request: &str) -> (String, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_owned(), headers.to_owned(), body.to_owned())
}

/// One sample: the series (name and labels as written) and its value.
type Samples = BTreeMap<String, f64>;

/// Parses a scrape, failing on any line that is not valid OpenMetrics text, and returns its
/// samples and each family's type.
fn parse(text: &str) -> (Samples, BTreeMap<String, String>) {
    let mut samples = Samples::new();
    let mut types = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "a scrape ends with # EOF");
    assert!(text.ends_with("# EOF\n"));
    for line in &lines[..lines.len() - 1] {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (keyword, family) = (parts.next().unwrap(), parts.next().unwrap());
            let value = parts.next().unwrap_or_default();
            assert!(valid_name(family), "family name in {line:?}");
            match keyword {
                "HELP" => assert!(!value.is_empty(), "empty help: {line:?}"),
                "TYPE" => {
                    assert!(
                        ["counter", "gauge", "histogram", "info"].contains(&value),
                        "type in {line:?}"
                    );
                    assert!(
                        types.insert(family.to_owned(), value.to_owned()).is_none(),
                        "{family} declared twice"
                    );
                }
                "UNIT" => assert!(family.ends_with(&format!("_{value}")), "{line:?}"),
                other => panic!("unknown keyword {other} in {line:?}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("value in {line:?}")),
        };
        let (name, _) = split_series(series);
        assert!(valid_name(name), "sample name in {line:?}");
        let family = ["_total", "_bucket", "_sum", "_count", "_info"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).filter(|f| types.contains_key(*f)))
            .or(types.contains_key(name).then_some(name));
        assert!(family.is_some(), "{line:?} belongs to no declared family");
        assert!(
            samples.insert(series.to_owned(), value).is_none(),
            "{series} twice"
        );
    }
    (samples, types)
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `a="x",b="y"`: names valid, values quoted with only `\\`, `\"` and `\n` escapes. Returns
/// the pairs, values as written.
fn check_labels(mut labels: &str, line: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    while !labels.is_empty() {
        let (name, rest) = labels.split_once("=\"").expect("label=\"value\"");
        assert!(valid_name(name), "label name in {line:?}");
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => {
                    let (_, escaped) = chars.next().expect("an escape");
                    assert!(matches!(escaped, '\\' | '"' | 'n'), "escape in {line:?}");
                }
                Some((i, '"')) => break i,
                Some(_) => {}
                None => panic!("unterminated label value in {line:?}"),
            }
        };
        pairs.push((name.to_owned(), rest[..end].to_owned()));
        labels = rest[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&rest[end + 1..]);
    }
    pairs
}

/// A series' name and its labels, sorted.
fn split_series(series: &str) -> (&str, Vec<(String, String)>) {
    match series.split_once('{') {
        Some((name, labels)) => {
            let mut pairs = check_labels(labels.strip_suffix('}').unwrap(), series);
            pairs.sort();
            (name, pairs)
        }
        None => (series, Vec::new()),
    }
}

fn value(samples: &Samples, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no {series} in {samples:#?}"))
}

/// Each histogram's buckets rise with `le`, and the `+Inf` bucket equals the count.
fn check_histograms(samples: &Samples, types: &BTreeMap<String, String>) {
    for family in types
        .iter()
        .filter(|(_, t)| *t == "histogram")
        .map(|(f, _)| f)
    {
        let count_name = format!("{family}_count");
        let bucket_name = format!("{family}_bucket");
        for (count_series, count) in samples.iter() {
            let (name, labels) = split_series(count_series);
            if name != count_name {
                continue;
            }
            let mut buckets: Vec<(f64, f64)> = samples
                .iter()
                .filter_map(|(s, v)| {
                    let (name, mut pairs) = split_series(s);
                    let le = pairs.iter().position(|(n, _)| n == "le")?;
                    let (_, le) = pairs.remove(le);
                    (name == bucket_name && pairs == labels).then_some(())?;
                    let le = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().ok()?
                    };
                    Some((le, *v))
                })
                .collect();
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(buckets.len() > 1, "{count_series} has buckets");
            assert!(
                buckets.windows(2).all(|w| w[0].1 <= w[1].1),
                "{count_series}: buckets rise: {buckets:?}"
            );
            assert_eq!(
                buckets.last(),
                Some(&(f64::INFINITY, *count)),
                "{count_series}"
            );
        }
    }
}

async fn scrape(addr: SocketAddr) -> (Samples, BTreeMap<String, String>) {
    let (status, headers, body) = http(addr, "GET /metrics HTTP/1.1\r\nHost: mayfly\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        headers.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{headers}"
    );
    let parsed = parse(&body);
    check_histograms(&parsed.0, &parsed.1);
    parsed
}

#[tokio::test]
async fn a_scrape_is_valid_exposition_text_and_counters_move_with_operations() {
    let server = TestServer::start_with(|c| c.metrics_addr = Some("127.0.0.1:0".into())).await;
    let metrics = server.server.metrics_addr.expect("the endpoint listens");
    let (before, _) = scrape(metrics).await;
    let client = server.client().await;
    let db = client.database("shop");
    db.run_command(doc! {"create": "carts"}).await.unwrap();
    let carts = db.collection::<Document>("carts");
    carts
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"_ts": 1})
                .options(
                    mongodb::options::IndexOptions::builder()
                        .expire_after(std::time::Duration::from_secs(60))
                        .build(),
                )
                .build(),
        )
        .await
        .unwrap();
    carts
        .insert_many((0..5).map(|i| doc! {"_id": i, "ttl": 10}))
        .await
        .unwrap();
    carts
        .insert_many((5..8).map(|i| doc! {"_id": i}))
        .await
        .unwrap();
    let found: Vec<Document> = carts
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 8);
    let unknown = db.run_command(doc! {"noSuchCommand": 1}).await;
    assert!(unknown.is_err());

    let (during, _) = scrape(metrics).await;
    let docs = r#"mayfly_collection_documents{database="shop",collection="carts"}"#;
    assert_eq!(value(&during, docs), 8.0);
    assert_eq!(value(&during, "mayfly_ttl_backlog"), 0.0);

    advance(&client, 11).await;
    let (due, _) = scrape(metrics).await;
    assert_eq!(value(&due, "mayfly_ttl_backlog"), 5.0, "five documents due");
    assert_eq!(value(&due, docs), 3.0, "expired documents are not counted");
    reaper(&client, "runOnce").await;
    let (after, types) = scrape(metrics).await;
    assert_eq!(value(&after, "mayfly_ttl_backlog"), 0.0);
    for (family, kind) in [
        ("mayfly_commands", "counter"),
        ("mayfly_command_duration_seconds", "histogram"),
        ("mayfly_connections_current", "gauge"),
        ("mayfly_cursors_open", "gauge"),
        ("mayfly_writer_groups", "counter"),
        ("mayfly_writer_sync_duration_seconds", "histogram"),
        ("mayfly_storage_size_bytes", "gauge"),
        ("mayfly_ttl_deleted_documents", "counter"),
        ("mayfly_ttl_backlog", "gauge"),
        ("mayfly_ttl_last_pass_duration_seconds", "gauge"),
        ("mayfly_collection_documents", "gauge"),
        ("mayfly_dropped_space_deleted_entries", "counter"),
        ("mayfly_dropped_space_pending_ranges", "gauge"),
    ] {
        assert_eq!(
            types.get(family).map(String::as_str),
            Some(kind),
            "{family}"
        );
    }

    let insert_ok = r#"mayfly_commands_total{command="insert",outcome="ok"}"#;
    assert_eq!(value(&after, insert_ok), 2.0, "two insert commands");
    assert_eq!(
        value(
            &after,
            r#"mayfly_commands_total{command="unknown",outcome="error"}"#
        ),
        1.0
    );
    assert!(
        value(
            &after,
            r#"mayfly_command_duration_seconds_count{command="find"}"#
        ) >= 1.0
    );
    assert_eq!(
        value(&after, "mayfly_ttl_deleted_documents_total")
            - before
                .get("mayfly_ttl_deleted_documents_total")
                .copied()
                .unwrap_or(0.0),
        5.0
    );
    for (series, at_least) in [
        ("mayfly_connections_created_total", 1.0),
        ("mayfly_requests_total", 6.0),
        ("mayfly_writer_groups_total", 3.0),
        (r#"mayfly_opcounters_total{type="insert"}"#, 8.0),
        ("mayfly_ttl_passes_total", 1.0),
    ] {
        let grew = value(&after, series) - before.get(series).copied().unwrap_or(0.0);
        assert!(
            grew >= at_least,
            "{series} grew by {grew}, expected {at_least}"
        );
    }
    assert!(value(&after, "mayfly_connections_current") >= 1.0);
    // A counter never goes down between scrapes.
    for (series, old) in &before {
        let is_counter = series.contains("_total") || series.contains("_bucket{");
        if is_counter {
            assert!(value(&after, series) >= *old, "{series} went down");
        }
    }
}

#[tokio::test]
async fn the_endpoint_answers_only_get_metrics() {
    let server = TestServer::start_with(|c| c.metrics_addr = Some("127.0.0.1:0".into())).await;
    let metrics = server.server.metrics_addr.unwrap();
    for (request, expected) in [
        ("GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
        (
            "POST /metrics HTTP/1.1\r\n\r\n",
            "HTTP/1.1 405 Method Not Allowed",
        ),
        ("nonsense\r\n\r\n", "HTTP/1.1 400 Bad Request"),
    ] {
        assert_eq!(http(metrics, request).await.0, expected, "{request:?}");
    }
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
        "a".repeat(100_000)
    );
    let mut stream = TcpStream::connect(metrics).await.unwrap();
    // The server stops reading at 8 KiB and answers from what it has: a scrape, or an error,
    // never a hang or a crash. Writing the rest may fail once it has closed.
    let _ = stream.write_all(huge.as_bytes()).await;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    assert!(
        response.starts_with(b"HTTP/1.1 "),
        "{:?}",
        String::from_utf8_lossy(&response[..response.len().min(100)])
    );
    assert_eq!(
        http(metrics, "GET /metrics HTTP/1.1\r\n\r\n").await.0,
        "HTTP/1.1 200 OK",
        "still serving"
    );
}

#[tokio::test]
async fn no_endpoint_unless_asked_for() {
    let server = TestServer::start().await;
    assert_eq!(server.server.metrics_addr, None);
}

/// Every sample of `family` by its `namespace` label.
fn by_namespace(samples: &Samples, family: &str) -> BTreeMap<String, f64> {
    samples
        .iter()
        .filter_map(|(series, value)| {
            let (name, labels) = split_series(series);
            if name != family {
                return None;
            }
            let namespace = labels
                .into_iter()
                .find(|(k, _)| k == "namespace")
                .map(|(_, v)| v)?;
            Some((namespace, *value))
        })
        .collect()
}

/// TTL-24 per collection: the reaper's deletions and the documents expired and not yet reaped,
/// labelled by namespace for at most 50 collections (the most deletions first), the rest summed
/// under `namespace="other"`; a dropped collection's series go away.
#[tokio::test]
async fn ttl_metrics_are_labelled_by_namespace_with_a_bounded_label_set() {
    let server = TestServer::start_with(|c| c.metrics_addr = Some("127.0.0.1:0".into())).await;
    let metrics = server.server.metrics_addr.expect("the endpoint listens");
    let client = server.client().await;
    reaper(&client, "pause").await;
    let db = client.database("m");
    // `big` has three documents; n00..n51 one each: 53 collections with a TTL index.
    let mut names = vec!["big".to_owned()];
    names.extend((0..52).map(|i| format!("n{i:02}")));
    for name in &names {
        set_collection_ttl(&db, name, 10).await;
        let docs = if name == "big" { 3 } else { 1 };
        db.collection::<Document>(name)
            .insert_many((0..docs).map(|i| doc! {"_id": i}))
            .await
            .unwrap();
    }
    let deleted = "mayfly_ttl_namespace_deleted_documents_total";
    let expired = "mayfly_ttl_namespace_expired_not_reaped";

    let (before, types) = scrape(metrics).await;
    assert_eq!(
        types
            .get(deleted.trim_end_matches("_total"))
            .map(String::as_str),
        Some("counter")
    );
    assert_eq!(types.get(expired).map(String::as_str), Some("gauge"));
    let series = by_namespace(&before, expired);
    assert_eq!(series.len(), 51, "50 namespaces and other: {series:?}");
    assert!(series.values().all(|v| *v == 0.0), "nothing expired yet");

    advance(&client, 10).await;
    let (due, _) = scrape(metrics).await;
    let series = by_namespace(&due, expired);
    // No deletions yet: the largest backlog first, then names; n49, n50, n51 are summed.
    assert_eq!(series.get("m.big"), Some(&3.0));
    assert_eq!(series.get("m.n48"), Some(&1.0));
    assert_eq!(series.get("m.n49"), None);
    assert_eq!(series.get("other"), Some(&3.0));
    assert_eq!(
        series.values().sum::<f64>(),
        value(&due, "mayfly_ttl_backlog")
    );

    reaper(&client, "runOnce").await;
    let (after, _) = scrape(metrics).await;
    let counts = by_namespace(&after, deleted);
    assert_eq!(counts.len(), 51);
    assert_eq!(counts.get("m.big"), Some(&3.0));
    assert_eq!(counts.get("m.n00"), Some(&1.0));
    assert_eq!(counts.get("other"), Some(&3.0));
    assert_eq!(counts.values().sum::<f64>(), 55.0);
    assert!(by_namespace(&after, expired).values().all(|v| *v == 0.0));

    // Dropping collections takes their series away; with 50 left, no `other`.
    for name in ["big", "n50", "n51"] {
        db.collection::<Document>(name).drop().await.unwrap();
    }
    let (dropped, _) = scrape(metrics).await;
    let counts = by_namespace(&dropped, deleted);
    assert_eq!(counts.len(), 50, "{counts:?}");
    assert_eq!(counts.get("m.big"), None);
    assert_eq!(counts.get("other"), None);
    assert_eq!(counts.values().sum::<f64>(), 50.0);
}
