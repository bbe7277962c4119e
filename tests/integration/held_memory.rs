//! Blocking stages are charged with what they hold decoded, as mongod charges its sorter and
//! `$group` with the approximate in-memory size of documents, sort keys and accumulator
//! states: a workload whose BSON is far under 100 MB but whose decoded form is over it is
//! refused with 292 without `allowDiskUse`, and with it completes correctly (spilling).

use crate::common;

use bson::{doc, Bson, Document};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::Collection;

/// A sort specification of `k` descending then 9,999 fields no document has: every document
/// holds a row of 10,000 sort keys (over a megabyte decoded) while it is sorted.
fn ten_thousand_key_sort() -> Document {
    let mut spec = doc! {"k": -1};
    for i in 0..9_999 {
        spec.insert(format!("f{i}"), 1);
    }
    spec
}

async fn collection(server: &TestServer, name: &str) -> Collection<Document> {
    server
        .client()
        .await
        .database("held")
        .collection::<Document>(name)
}

fn ids(docs: &[Document]) -> Vec<i32> {
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn find_sorted(
    coll: &Collection<Document>,
    sort: Document,
    allow_disk_use: bool,
) -> Result<Vec<Document>, Option<i32>> {
    let cursor = coll
        .find(doc! {})
        .sort(sort)
        .projection(doc! {"xs": 0})
        .allow_disk_use(allow_disk_use)
        .await
        .map_err(|e| error_code(&e))?;
    cursor.try_collect().await.map_err(|e| error_code(&e))
}

/// The code of the error `pipeline` fails with (at the command or a `getMore`), without
/// `allowDiskUse`; the test fails, without printing the documents, if it succeeds.
async fn aggregate_err(coll: &Collection<Document>, pipeline: Vec<Document>) -> Option<i32> {
    let err = match coll.aggregate(pipeline).await {
        Ok(cursor) => match cursor.try_collect::<Vec<_>>().await {
            Ok(docs) => panic!("the pipeline returned {} documents", docs.len()),
            Err(e) => e,
        },
        Err(e) => e,
    };
    error_code(&err)
}

async fn aggregate_disk(coll: &Collection<Document>, pipeline: Vec<Document>) -> Vec<Document> {
    coll.aggregate(pipeline)
        .allow_disk_use(true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_sort_by_ten_thousand_keys_is_charged_for_its_sort_keys() {
    let server = TestServer::start().await;
    let coll = collection(&server, "wide_sort").await;
    // 150 documents of a few bytes each; their sort keys hold about 150 MB decoded.
    coll.insert_many((0..150).map(|i| doc! {"_id": i, "k": (i * 37) % 150}))
        .await
        .unwrap();
    let mut expected: Vec<(i32, i32)> = (0..150).map(|i| ((i * 37) % 150, i)).collect();
    expected.sort_by_key(|e| std::cmp::Reverse(e.0));
    let expected: Vec<i32> = expected.into_iter().map(|(_, id)| id).collect();
    let spec = ten_thousand_key_sort();

    // find: the executor's sort.
    assert_eq!(
        find_sorted(&coll, spec.clone(), false).await.unwrap_err(),
        Some(292)
    );
    let sorted = find_sorted(&coll, spec.clone(), true).await.unwrap();
    assert_eq!(ids(&sorted), expected);

    // aggregate: a leading $sort (the executor's), and one after another stage (the
    // pipeline's own).
    let leading = vec![doc! {"$sort": spec.clone()}];
    assert_eq!(aggregate_err(&coll, leading.clone()).await, Some(292));
    assert_eq!(ids(&aggregate_disk(&coll, leading).await), expected);
    let later = vec![doc! {"$addFields": {"copy": "$k"}}, doc! {"$sort": spec}];
    assert_eq!(aggregate_err(&coll, later.clone()).await, Some(292));
    assert_eq!(ids(&aggregate_disk(&coll, later).await), expected);
}

/// 120 documents, each with an array of 10,000 small integers: about 13 MB of BSON, over
/// 130 MB decoded (each integer is a whole value slot in memory).
async fn small_values(server: &TestServer) -> Collection<Document> {
    let coll = collection(server, "small_values").await;
    let xs: Vec<i32> = (0..10_000).collect();
    for chunk in (0..120).collect::<Vec<i32>>().chunks(20) {
        let docs = chunk
            .iter()
            .map(|&i| doc! {"_id": i, "k": (i * 7) % 120, "xs": xs.clone()});
        coll.insert_many(docs).await.unwrap();
    }
    coll
}

fn by_k(n: i32) -> Vec<i32> {
    let mut expected: Vec<(i32, i32)> = (0..n).map(|i| ((i * 7) % n, i)).collect();
    expected.sort();
    expected.into_iter().map(|(_, id)| id).collect()
}

#[tokio::test]
async fn a_sort_of_many_small_values_is_charged_decoded_in_find_and_aggregate() {
    let server = TestServer::start().await;
    let coll = small_values(&server).await;
    let stats = server
        .client()
        .await
        .database("held")
        .run_command(doc! {"collStats": "small_values"})
        .await
        .unwrap();
    let size = stats
        .get("size")
        .and_then(Bson::as_i64)
        .unwrap_or_else(|| i64::from(stats.get_i32("size").unwrap()));
    assert!(
        size < 20 * 1024 * 1024,
        "the BSON is far under 100 MB: {stats}"
    );

    assert_eq!(
        find_sorted(&coll, doc! {"k": 1}, false).await.unwrap_err(),
        Some(292)
    );
    assert_eq!(
        ids(&find_sorted(&coll, doc! {"k": 1}, true).await.unwrap()),
        by_k(120)
    );

    let leading = vec![doc! {"$sort": {"k": 1}}, doc! {"$project": {"xs": 0}}];
    assert_eq!(aggregate_err(&coll, leading.clone()).await, Some(292));
    assert_eq!(ids(&aggregate_disk(&coll, leading).await), by_k(120));
    let later = vec![
        doc! {"$addFields": {"k2": "$k"}},
        doc! {"$sort": {"k2": 1}},
        doc! {"$project": {"xs": 0}},
    ];
    assert_eq!(aggregate_err(&coll, later.clone()).await, Some(292));
    assert_eq!(ids(&aggregate_disk(&coll, later).await), by_k(120));
}

#[tokio::test]
async fn a_group_is_charged_for_its_states_and_keys_decoded() {
    let server = TestServer::start().await;
    let coll = small_values(&server).await;

    // $push keeps every array: its state holds them decoded.
    let push = vec![
        doc! {"$group": {"_id": "$_id", "all": {"$push": "$xs"}}},
        doc! {"$sort": {"_id": 1}},
    ];
    assert_eq!(aggregate_err(&coll, push.clone()).await, Some(292));
    let grouped = aggregate_disk(&coll, push).await;
    assert_eq!(ids(&grouped), (0..120).collect::<Vec<_>>());
    for g in &grouped {
        let all = g.get_array("all").unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(
            all[0].as_array().map(Vec::len),
            Some(10_000),
            "{}",
            g.get_i32("_id").unwrap()
        );
    }

    // 800,000 groups of one small integer key each: a few MB of BSON keys, over 100 MB held
    // (each key is kept twice, as the group's `_id` and in the index that finds it). Counted
    // as BSON with a fixed overhead a group, they stayed under the limit.
    let many = vec![
        doc! {"$match": {"_id": {"$lt": 80}}},
        doc! {"$project": {"xs": 1}},
        doc! {"$unwind": "$xs"},
        doc! {"$group": {"_id": {"$add": [{"$multiply": ["$_id", 10_000]}, "$xs"]}}},
    ];
    assert_eq!(aggregate_err(&coll, many.clone()).await, Some(292));
    let mut counted = many;
    counted.push(doc! {"$group": {"_id": null, "n": {"$sum": 1}, "low": {"$min": "$_id"}, "high": {"$max": "$_id"}}});
    let out = aggregate_disk(&coll, counted).await;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].get_i32("n"), Ok(800_000), "{out:?}");
    assert_eq!(out[0].get("low"), Some(&Bson::Int32(0)), "{out:?}");
    assert_eq!(out[0].get("high"), Some(&Bson::Int32(799_999)), "{out:?}");
}
