use super::*;
use crate::pipeline::Row;
use bson::{doc, DateTime};

fn date(s: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(s).unwrap())
}

/// The `cakeSales` collection of mongod's `$setWindowFields` reference page.
fn cake_sales() -> Vec<Document> {
    vec![
        doc! {"_id": 0, "type": "chocolate", "orderDate": date("2020-05-18T14:10:30Z"), "state": "CA", "price": 13, "quantity": 120},
        doc! {"_id": 1, "type": "chocolate", "orderDate": date("2021-03-20T11:30:05Z"), "state": "WA", "price": 14, "quantity": 140},
        doc! {"_id": 2, "type": "vanilla", "orderDate": date("2021-01-11T06:31:15Z"), "state": "CA", "price": 12, "quantity": 145},
        doc! {"_id": 3, "type": "vanilla", "orderDate": date("2020-02-08T13:13:23Z"), "state": "WA", "price": 13, "quantity": 104},
        doc! {"_id": 4, "type": "strawberry", "orderDate": date("2019-05-18T16:09:01Z"), "state": "CA", "price": 41, "quantity": 162},
        doc! {"_id": 5, "type": "strawberry", "orderDate": date("2019-01-08T06:12:03Z"), "state": "WA", "price": 43, "quantity": 134},
    ]
}

fn parse(spec: Document) -> Result<SetWindowFields> {
    SetWindowFields::parse(&Bson::Document(spec), &Variables::default())
}

fn run_stage(stage: SetWindowFields, docs: Vec<Document>) -> Result<Vec<Document>> {
    let rows: Rows = Box::new(docs.into_iter().map(|d| Ok(Row::computed(d))));
    stage
        .apply(rows, &StageLimits::default(), None)?
        .map(|r| r.map(|r| r.doc))
        .collect()
}

fn run(spec: Document, docs: Vec<Document>) -> Result<Vec<Document>> {
    run_stage(parse(spec)?, docs)
}

/// `(_id, field)` of each output document, in output order.
fn column(out: &[Document], field: &str) -> Vec<(i32, Option<Bson>)> {
    out.iter()
        .map(|d| (d.get_i32("_id").unwrap(), d.get(field).cloned()))
        .collect()
}

fn ints(pairs: &[(i32, i32)]) -> Vec<(i32, Option<Bson>)> {
    pairs
        .iter()
        .map(|(id, v)| (*id, Some(Bson::Int32(*v))))
        .collect()
}

#[test]
fn reference_examples_compute_as_mongod() {
    // "Use Documents Window to Obtain Cumulative Quantity for Each State".
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "cumulativeQuantityForState": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "cumulativeQuantityForState"),
        ints(&[(4, 162), (0, 282), (2, 427), (5, 134), (3, 238), (1, 378)])
    );
    // "Use Documents Window to Obtain Moving Average Quantity for Each Year".
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
        "avg": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(out[1].get("avg"), Some(&Bson::Double(141.0)));
    assert_eq!(out[0].get("avg"), Some(&Bson::Double(162.0)));
    // "Use Range Window to Obtain Sum of Quantity for Similar Orders".
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"price": 1}, "output": {
        "quantityFromSimilarOrders": {"$sum": "$quantity", "window": {"range": [-10, 10]}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "quantityFromSimilarOrders"),
        ints(&[(2, 265), (0, 265), (4, 162), (3, 244), (1, 244), (5, 134)])
    );
    // "Use Time Range Window with a Positive Upper Bound".
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", 10], "unit": "month"}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        out[1].get("recentOrders"),
        Some(&Bson::Array(vec![
            date("2019-05-18T16:09:01Z"),
            date("2020-05-18T14:10:30Z"),
            date("2021-01-11T06:31:15Z")
        ]))
    );
    // "$rank" with ties, "$denseRank" and "$documentNumber".
    let mut sales = cake_sales();
    sales.push(doc! {"_id": 6, "state": "CA", "quantity": 145});
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {
        "rank": {"$rank": {}}, "dense": {"$denseRank": {}}, "n": {"$documentNumber": {}}}},
        sales,
    )
    .unwrap();
    assert_eq!(
        column(&out, "rank"),
        ints(&[(4, 1), (2, 2), (6, 2), (0, 4), (1, 1), (5, 2), (3, 3)])
    );
    assert_eq!(
        column(&out, "dense"),
        ints(&[(4, 1), (2, 2), (6, 2), (0, 3), (1, 1), (5, 2), (3, 3)])
    );
    assert_eq!(
        column(&out, "n"),
        ints(&[(4, 1), (2, 2), (6, 3), (0, 4), (1, 1), (5, 2), (3, 3)])
    );
    // "$shift": the next order's quantity, with a default past the partition's end.
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {
        "shift": {"$shift": {"output": "$quantity", "by": 1, "default": "Not available"}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "shift"),
        vec![
            (4, Some(Bson::Int32(145))),
            (2, Some(Bson::Int32(120))),
            (0, Some(Bson::String("Not available".into()))),
            (1, Some(Bson::Int32(134))),
            (5, Some(Bson::Int32(104))),
            (3, Some(Bson::String("Not available".into()))),
        ]
    );
}

#[test]
fn whole_partition_accumulators_and_nested_outputs() {
    let out = run(
        doc! {"partitionBy": "$state", "output": {
        "stats.total": {"$sum": "$quantity"}, "stats.n": {"$count": {}},
        "types": {"$addToSet": "$type"}, "lo": {"$min": "$price"}, "first": {"$first": "$_id"}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(out.len(), 6);
    let ca = &out[0];
    assert_eq!(ca.get_str("state").unwrap(), "CA");
    assert_eq!(
        ca.get_document("stats").unwrap(),
        &doc! {"total": 427, "n": 3}
    );
    assert_eq!(ca.get("lo"), Some(&Bson::Int32(12)));
    assert_eq!(
        ca.get("first"),
        Some(&Bson::Int32(0)),
        "input order kept without sortBy"
    );
    // Without partitionBy everything is one partition.
    let out = run(
        doc! {"output": {"all": {"$sum": "$quantity"}}},
        cake_sales(),
    )
    .unwrap();
    assert!(out.iter().all(|d| d.get("all") == Some(&Bson::Int32(805))));
}

#[test]
fn bad_stages_have_mongod_codes() {
    let cases = [
        (doc! {"sortBy": {"a": 1}}, ErrorCode::Location40414),
        (doc! {"output": {}, "foo": 1}, ErrorCode::IDLUnknownField),
        (doc! {"output": 1}, ErrorCode::TypeMismatch),
        (doc! {"sortBy": 1, "output": {}}, ErrorCode::TypeMismatch),
        (
            doc! {"partitionBy": {"$literal": [1]}, "output": {}},
            ErrorCode::TypeMismatch,
        ),
        (
            doc! {"output": {"a": {"$sum": 1}, "a.b": {"$sum": 1}}},
            ErrorCode::Location6307900,
        ),
        (
            doc! {"output": {"$a": {"$sum": 1}}},
            ErrorCode::Location16410,
        ),
        (doc! {"output": {"a": 1}}, ErrorCode::FailedToParse),
        (
            doc! {"output": {"a": {"$summ": 1}}},
            ErrorCode::FailedToParse,
        ),
        (doc! {"output": {"a": {"x": 1}}}, ErrorCode::FailedToParse),
        (
            doc! {"output": {"a": {"$sum": 1, "$max": 1}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"output": {"a": {"$sum": 1, "foo": 1}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"output": {"a": {"$rank": {}}}},
            ErrorCode::Location5371602,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$rank": 1}}},
            ErrorCode::Location5371603,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$rank": {}, "window": {}}}},
            ErrorCode::Location5371601,
        ),
        (
            doc! {"output": {"a": {"$shift": {"output": 1, "by": 1}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$shift": {"output": 1, "by": 1.5}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$shift": {"output": 1, "by": 1, "default": "$x"}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$derivative": {"input": "$x"}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"sortBy": {"a": 1, "b": 1}, "output": {"a": {"$integral": {"input": "$x"}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$integral": {"input": "$x", "unit": "month"}}}},
            ErrorCode::Location5490710,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$expMovingAvg": {"input": "$x", "N": 0}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"sortBy": {"a": 1}, "output": {"a": {"$expMovingAvg": {"input": "$x", "alpha": 1}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"output": {"a": {"$expMovingAvg": {"input": "$x", "N": 2}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"output": {"a": {"$linearFill": "$x"}}},
            ErrorCode::Location605001,
        ),
        (
            doc! {"output": {"a": {"$locf": "$x", "window": {}}}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"output": {"a": {"$sum": "$x", "window": {"documents": [-1, 0]}}}},
            ErrorCode::Location5339901,
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(parse(spec.clone()).unwrap_err().code, want, "{spec}");
    }
    assert_eq!(
        SetWindowFields::parse(&Bson::Int32(1), &Variables::default())
            .unwrap_err()
            .code,
        ErrorCode::FailedToParse
    );
    let err = run(
        doc! {"partitionBy": "$a", "output": {"n": {"$count": {}}}},
        vec![doc! {"a": [1]}],
    );
    assert_eq!(err.unwrap_err().code, ErrorCode::TypeMismatch);
}

#[test]
fn a_partition_past_its_budget_fails_with_mongods_error() {
    let stage = parse(doc! {"output": {"all": {"$push": "$quantity"}}})
        .unwrap()
        .with_limit(3_000);
    let err = run_stage(stage, cake_sales()).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5414201);
    assert!(err
        .message
        .contains("Exceeded memory limit in DocumentSourceSetWindowFields"));
    // Partitions are held one at a time: each fits alone.
    let stage = parse(doc! {"partitionBy": "$_id", "output": {"all": {"$push": "$quantity"}}})
        .unwrap()
        .with_limit(3_000);
    assert_eq!(run_stage(stage, cake_sales()).unwrap().len(), 6);
}

/// 3,000 documents: partition keys with ties, missing values and mixed types; a numeric sort
/// field with ties; values of mixed types, some missing.
/// What the rows of [`large_input`] hold decoded, for budgets that make them spill.
fn large_input_bytes() -> usize {
    large_input()
        .into_iter()
        .map(|d| crate::pipeline::memory::held_row(&Row::computed(d)).unwrap())
        .sum()
}

fn large_input() -> Vec<Document> {
    (0..3000i32)
        .map(|i| {
            let mut d = doc! {"_id": i, "t": (i * 13) % 700, "pad": "x".repeat(200 + (i % 5) as usize * 20)};
            match i % 4 {
                0 => {}
                1 => {
                    d.insert("p", "a");
                }
                2 => {
                    d.insert("p", 1.0);
                }
                _ => {
                    d.insert("p", 1);
                }
            }
            match i % 7 {
                0 => {}
                1 => {
                    d.insert("v", "text");
                }
                2 => {
                    d.insert("v", Bson::Null);
                }
                3 => {
                    d.insert("v", f64::from(i) / 4.0);
                }
                _ => {
                    d.insert("v", i % 23);
                }
            }
            d
        })
        .collect()
}

fn run_limited(
    stage: SetWindowFields,
    docs: Vec<Document>,
    disk: bool,
    dir: Option<&crate::engine::exec::spill::SpillDir>,
) -> Result<Vec<(Document, Option<i64>)>> {
    // Every other row comes from a stored document that expires (TTL-18): the output row
    // keeps that expiry, spilled or not.
    let rows: Rows = Box::new(docs.into_iter().map(|d| {
        let expires_at = d
            .get_i32("_id")
            .ok()
            .filter(|id| id % 2 == 0)
            .map(|id| i64::from(id) * 1000);
        Ok(Row {
            expires_at,
            ..Row::computed(d)
        })
    }));
    let limits = StageLimits {
        allow_disk_use: disk,
        ..StageLimits::default()
    };
    stage
        .apply(rows, &limits, dir)?
        .map(|r| r.map(|r| (r.doc, r.expires_at)))
        .collect()
}

#[test]
fn spilled_partitions_compute_what_partitions_in_memory_compute() {
    use crate::engine::exec::spill::{open_files_under, SpillDir};
    let tmp = tempfile::tempdir().unwrap();
    let dir = SpillDir::open(tmp.path()).unwrap();
    let specs = [
        doc! {"partitionBy": "$p", "sortBy": {"t": 1}, "output": {
            "near": {"$sum": "$v", "window": {"documents": [-3, 3]}},
            "ids": {"$push": "$_id", "window": {"documents": [-1, 1]}},
            "close": {"$avg": "$v", "window": {"range": [-5, 5]}},
            "before": {"$count": {}, "window": {"range": ["unbounded", "current"]}},
            "rank": {"$rank": {}},
            "dense": {"$denseRank": {}},
            "prev": {"$shift": {"output": "$v", "by": -1, "default": "none"}},
            "ema": {"$expMovingAvg": {"input": "$t", "N": 3}},
            "filled": {"$locf": "$v"},
            "area": {"$integral": {"input": "$t"}, "window": {"documents": [-2, 0]}},
        }},
        doc! {"output": {"total": {"$sum": "$t"}, "top": {"$max": "$v"}}},
        doc! {"partitionBy": {"$mod": ["$_id", 3]}, "sortBy": {"v": -1}, "output": {
            "n": {"$documentNumber": {}},
            "last": {"$last": "$_id", "window": {"documents": ["unbounded", "current"]}},
        }},
    ];
    for spec in specs {
        let held = run_limited(parse(spec.clone()).unwrap(), large_input(), false, None).unwrap();
        assert_eq!(held.len(), 3000);
        for (d, expires_at) in &held {
            let id = d.get_i32("_id").unwrap();
            assert_eq!(*expires_at, (id % 2 == 0).then_some(i64::from(id) * 1000));
        }
        let small = || {
            parse(spec.clone())
                .unwrap()
                .with_sort_limit(large_input_bytes() / 10)
                .with_limit(large_input_bytes())
        };
        // Without the disk the same limit is too small, so the spilled run did spill.
        assert!(run_limited(small(), large_input(), false, None).is_err());
        let spilled = run_limited(small(), large_input(), true, Some(&dir)).unwrap();
        assert_eq!(spilled, held, "{spec}");
    }
    assert_eq!(open_files_under(&tmp.path().join("_tmp")), 0);
}

#[test]
fn a_partition_spills_when_its_functions_need_the_room() {
    use crate::engine::exec::spill::{open_files_under, SpillDir};
    let tmp = tempfile::tempdir().unwrap();
    let dir = SpillDir::open(tmp.path()).unwrap();
    let docs: Vec<Document> = (0..200)
        .map(|i| doc! {"_id": i, "t": i, "pad": "y".repeat(2_000)})
        .collect();
    let bytes: usize = docs
        .iter()
        .map(|d| crate::pipeline::memory::held_row(&Row::computed(d.clone())).unwrap())
        .sum();
    // The documents fit the sort and the partition; with the functions' columns they do not.
    let spec = doc! {"sortBy": {"t": 1}, "output": {"w": {"$push": "$t", "window": {"documents": [-3, 3]}}}};
    let stage = || parse(spec.clone()).unwrap().with_limit(bytes + 100);
    let err = run_limited(stage(), docs.clone(), false, None).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5414201);
    assert!(err
        .message
        .contains("Exceeded memory limit in DocumentSourceSetWindowFields"));
    let held = run_limited(parse(spec.clone()).unwrap(), docs.clone(), false, None).unwrap();
    let spilled = run_limited(stage(), docs.clone(), true, Some(&dir)).unwrap();
    assert_eq!(spilled, held);
    // What the functions hold alone past the budget cannot spill: mongod's 5414201.
    let all = doc! {"output": {"w": {"$push": "$$ROOT"}}};
    let err = run_limited(
        parse(all).unwrap().with_limit(bytes + 100),
        docs,
        true,
        Some(&dir),
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5414201);
    assert_eq!(open_files_under(&tmp.path().join("_tmp")), 0);
}

#[test]
fn an_interrupted_window_leaves_no_spill_file_open() {
    use crate::engine::exec::spill::{open_files_under, SpillDir};
    let tmp = tempfile::tempdir().unwrap();
    let dir = SpillDir::open(tmp.path()).unwrap();
    let rows: Rows = Box::new(large_input().into_iter().enumerate().map(|(i, d)| {
        if i == 2500 {
            return Err(Error::new(
                ErrorCode::Interrupted,
                "operation was interrupted",
            ));
        }
        Ok(Row::computed(d))
    }));
    let limits = StageLimits {
        allow_disk_use: true,
        ..StageLimits::default()
    };
    let stage = parse(doc! {"sortBy": {"t": 1}, "output": {"r": {"$rank": {}}}})
        .unwrap()
        .with_sort_limit(large_input_bytes() / 10)
        .with_limit(large_input_bytes() / 2);
    let err = stage.apply(rows, &limits, Some(&dir)).err().unwrap();
    assert_eq!(err.code, ErrorCode::Interrupted);
    // A cursor closed part-way drops the stage's output, and its files with it.
    let rows: Rows = Box::new(large_input().into_iter().map(|d| Ok(Row::computed(d))));
    let stage = parse(doc! {"sortBy": {"t": 1}, "output": {"r": {"$rank": {}}}})
        .unwrap()
        .with_sort_limit(large_input_bytes() / 10)
        .with_limit(large_input_bytes() / 2);
    let mut out = stage.apply(rows, &limits, Some(&dir)).unwrap();
    assert!(out.next().unwrap().is_ok());
    assert!(open_files_under(&tmp.path().join("_tmp")) > 0);
    drop(out);
    assert_eq!(open_files_under(&tmp.path().join("_tmp")), 0);
}
