use super::super::SortBy;
use super::*;
use bson::{doc, DateTime};

fn compute(spec: Document, sort: Document, docs: &[Document]) -> Result<Vec<Value>> {
    let sort = SortBy::compile(&sort, None).unwrap();
    let f = Function::parse(&spec, Some(&sort), &Variables::default())?;
    let keys: Vec<Value> = docs
        .iter()
        .map(|d| sort.single.as_ref().unwrap().eval(d).unwrap())
        .collect();
    let rows = PartitionRows::Memory(
        docs.iter()
            .map(|d| crate::pipeline::Row::computed(d.clone()))
            .collect(),
    );
    f.compute(
        &Partition {
            rows: &rows,
            keys: &keys,
            collation: None,
        },
        &mut |_| Ok(()),
    )
}

fn doubles(values: &[Value]) -> Vec<f64> {
    values
        .iter()
        .map(|v| match v {
            Some(Bson::Double(d)) => *d,
            other => panic!("not a double: {other:?}"),
        })
        .collect()
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-9, "{a:?} vs {b:?}");
    }
}

fn at(minute: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(1_621_333_800_000 + minute * 60_000))
}

#[test]
fn derivative_and_integral_follow_the_reference_pages() {
    // The deliveryFleet example of $derivative: miles at times, speed in miles per hour.
    let docs: Vec<Document> = [(0, 162_412), (1, 162_445), (2, 162_480), (3, 162_522)]
        .iter()
        .map(|(m, miles)| doc! {"t": at(*m), "miles": *miles})
        .collect();
    let out = compute(
        doc! {"$derivative": {"input": "$miles", "unit": "hour"}, "window": {"range": [-30, 0], "unit": "second"}},
        doc! {"t": 1},
        &docs,
    )
    .unwrap();
    assert_eq!(out.first(), Some(&Some(Bson::Null)), "one document: no run");
    let out = compute(
        doc! {"$derivative": {"input": "$miles", "unit": "hour"}, "window": {"documents": [-1, 0]}},
        doc! {"t": 1},
        &docs,
    )
    .unwrap();
    assert_eq!(out.first(), Some(&Some(Bson::Null)));
    close(
        &doubles(&out[1..]),
        &[33.0 * 60.0, 35.0 * 60.0, 42.0 * 60.0],
    );
    // $integral: kilowatts over hours, trapezoids.
    let docs: Vec<Document> = [(0, 2.95), (5, 2.7), (10, 2.6)]
        .iter()
        .map(|(m, kw)| doc! {"t": at(*m), "kw": *kw})
        .collect();
    let out = compute(
        doc! {"$integral": {"input": "$kw", "unit": "hour"}, "window": {"range": ["unbounded", "current"], "unit": "hour"}},
        doc! {"t": 1},
        &docs,
    )
    .unwrap();
    let first = (2.95 + 2.7) / 2.0 * (5.0 / 60.0);
    close(
        &doubles(&out),
        &[0.0, first, first + (2.7 + 2.6) / 2.0 * (5.0 / 60.0)],
    );
    let err = compute(doc! {"$integral": {"input": "$kw"}}, doc! {"t": 1}, &docs).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5423902);
    let err = compute(
        doc! {"$derivative": {"input": "$kw"}, "window": {"documents": [-1, 0]}},
        doc! {"t": 1},
        &docs,
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5624901);
}

#[test]
fn moving_averages_fills_and_covariance() {
    let docs: Vec<Document> = [Some(10), None, Some(20), Some(40)]
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut d = doc! {"t": i as i32};
            if let Some(v) = v {
                d.insert("x", *v);
            } else {
                d.insert("x", Bson::Null);
            }
            d
        })
        .collect();
    let out = compute(
        doc! {"$expMovingAvg": {"input": "$x", "N": 3}},
        doc! {"t": 1},
        &docs,
    )
    .unwrap();
    close(&doubles(&out), &[10.0, 10.0, 15.0, 27.5]);
    let out = compute(
        doc! {"$expMovingAvg": {"input": "$x", "alpha": 0.75}},
        doc! {"t": 1},
        &docs,
    )
    .unwrap();
    close(&doubles(&out), &[10.0, 10.0, 17.5, 34.375]);
    let out = compute(doc! {"$locf": "$x"}, doc! {"t": 1}, &docs).unwrap();
    assert_eq!(out.get(1), Some(&Some(Bson::Int32(10))));
    let out = compute(doc! {"$linearFill": "$x"}, doc! {"t": 1}, &docs).unwrap();
    assert_eq!(out.get(1), Some(&Some(Bson::Double(15.0))));
    let out = compute(doc! {"$covariancePop": ["$t", "$x"]}, doc! {"t": 1}, &docs).unwrap();
    // Pairs (0,10), (2,20), (3,40): the null pair is left out.
    let (mx, my) = (5.0 / 3.0, 70.0 / 3.0);
    let pop =
        ((0.0 - mx) * (10.0 - my) + (2.0 - mx) * (20.0 - my) + (3.0 - mx) * (40.0 - my)) / 3.0;
    close(&doubles(&out), &[pop; 4]);
    let out = compute(
        doc! {"$covarianceSamp": ["$t", "$x"], "window": {"documents": ["current", "current"]}},
        doc! {"t": 1},
        &docs,
    )
    .unwrap();
    assert!(
        out.iter().all(|v| v == &Some(Bson::Null)),
        "one pair has no sample covariance"
    );
    let err = compute(doc! {"$linearFill": "$t"}, doc! {"x": 1}, &docs).unwrap_err();
    assert_eq!(err.code, ErrorCode::TypeMismatch, "a null sort value");
}
