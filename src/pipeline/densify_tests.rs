use super::*;
use bson::{doc, DateTime};

fn run(spec: Document, docs: Vec<Document>) -> Result<Vec<Document>> {
    let stage = Densify::parse(&Bson::Document(spec), None)?;
    let rows: Rows = Box::new(docs.into_iter().map(|d| Ok(Row::computed(d))));
    Ok(stage
        .apply(rows, &StageLimits::default())?
        .into_iter()
        .map(|(_, r)| r.doc)
        .collect())
}

fn date(s: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(s).unwrap())
}

#[test]
fn densifies_time_series_as_the_reference_page() {
    // "Densify Time Series Data": hourly readings between the existing ones.
    let docs = vec![
        doc! {"metadata": {"sensorId": 5578}, "timestamp": date("2021-05-18T00:00:00Z"), "temp": 12},
        doc! {"metadata": {"sensorId": 5578}, "timestamp": date("2021-05-18T04:00:00Z"), "temp": 11},
        doc! {"metadata": {"sensorId": 5578}, "timestamp": date("2021-05-18T08:00:00Z"), "temp": 11},
        doc! {"metadata": {"sensorId": 5578}, "timestamp": date("2021-05-18T12:00:00Z"), "temp": 12},
    ];
    let out = run(
        doc! {"field": "timestamp", "range": {"step": 1, "unit": "hour", "bounds": [date("2021-05-18T00:00:00Z"), date("2021-05-18T08:00:00Z")]}},
        docs,
    )
    .unwrap();
    assert_eq!(out.len(), 4 + 6);
    assert_eq!(out[1], doc! {"timestamp": date("2021-05-18T01:00:00Z")});
    assert_eq!(out[4].get("temp"), Some(&Bson::Int32(11)));
    assert_eq!(
        out.last().unwrap().get("temp"),
        Some(&Bson::Int32(12)),
        "outside the bounds: kept"
    );
}

#[test]
fn densifies_partitions_over_full_and_partition_bounds() {
    // "Densification with Partitions" (coffee altitudes).
    let docs = vec![
        doc! {"altitude": 600, "variety": "Arabica Typica"},
        doc! {"altitude": 750, "variety": "Arabica Typica"},
        doc! {"altitude": 950, "variety": "Arabica Typica"},
        doc! {"altitude": 1250, "variety": "Arabica Typica"},
        doc! {"altitude": 1700, "variety": "Gesha"},
        doc! {"altitude": 1400, "variety": "Gesha"},
    ];
    let altitudes = |out: &[Document], variety: &str| -> Vec<i32> {
        out.iter()
            .filter(|d| d.get_str("variety").unwrap() == variety)
            .map(|d| d.get_i32("altitude").unwrap())
            .collect()
    };
    let out = run(
        doc! {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "full", "step": 200}},
        docs.clone(),
    )
    .unwrap();
    assert_eq!(
        altitudes(&out, "Arabica Typica"),
        vec![600, 750, 800, 950, 1000, 1200, 1250, 1400, 1600]
    );
    assert_eq!(
        altitudes(&out, "Gesha"),
        vec![600, 800, 1000, 1200, 1400, 1600, 1700]
    );
    let values: Vec<i32> = out.iter().map(|d| d.get_i32("altitude").unwrap()).collect();
    assert!(
        values.windows(2).all(|w| w[0] <= w[1]),
        "full bounds sort by the field only"
    );
    let out = run(
        doc! {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "partition", "step": 200}},
        docs,
    )
    .unwrap();
    assert_eq!(
        altitudes(&out, "Arabica Typica"),
        vec![600, 750, 800, 950, 1000, 1200, 1250]
    );
    assert_eq!(altitudes(&out, "Gesha"), vec![1400, 1600, 1700]);
    assert_eq!(out.len(), 10, "Arabica then Gesha");
    assert_eq!(out[7], doc! {"altitude": 1400, "variety": "Gesha"});
}

#[test]
fn null_and_missing_fields_pass_and_bad_values_fail() {
    let out = run(
        doc! {"field": "x", "range": {"bounds": "full", "step": 1.5}},
        vec![doc! {"x": 1.0}, doc! {"y": 1}, doc! {"x": 4.0}],
    )
    .unwrap();
    let xs: Vec<_> = out.iter().map(|d| d.get("x").cloned()).collect();
    assert_eq!(
        xs,
        vec![
            None,
            Some(Bson::Double(1.0)),
            Some(Bson::Double(2.5)),
            Some(Bson::Double(4.0))
        ]
    );
    let err = run(
        doc! {"field": "x", "range": {"bounds": "full", "step": 1}},
        vec![doc! {"x": "a"}],
    );
    assert_eq!(err.unwrap_err().code, ErrorCode::Location5733201);
    let err = run(
        doc! {"field": "x", "range": {"bounds": [0, 1_000_000], "step": 1}},
        vec![],
    );
    assert_eq!(err.unwrap_err().code, ErrorCode::Location5897900);
}

#[test]
fn bad_specs_have_mongod_codes() {
    let d = date("2021-01-01T00:00:00Z");
    let cases = [
        (
            doc! {"range": {"step": 1, "bounds": "full"}},
            ErrorCode::Location40414,
        ),
        (doc! {"field": "a"}, ErrorCode::Location40414),
        (
            doc! {"field": "a", "range": {"bounds": "full"}},
            ErrorCode::Location40414,
        ),
        (
            doc! {"field": 1, "range": {"step": 1, "bounds": "full"}},
            ErrorCode::TypeMismatch,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": "full"}, "foo": 1},
            ErrorCode::IDLUnknownField,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": "full", "foo": 1}},
            ErrorCode::IDLUnknownField,
        ),
        (
            doc! {"field": "a", "range": {"step": 0, "bounds": "full"}},
            ErrorCode::Location5733401,
        ),
        (
            doc! {"field": "a", "range": {"step": "1", "bounds": "full"}},
            ErrorCode::Location5733401,
        ),
        (
            doc! {"field": "a", "range": {"step": 1.5, "unit": "day", "bounds": "full"}},
            ErrorCode::Location6586400,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "unit": "eon", "bounds": "full"}},
            ErrorCode::FailedToParse,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": [1]}},
            ErrorCode::Location5733403,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": [2, 1]}},
            ErrorCode::Location5733402,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "unit": "day", "bounds": [1, 2]}},
            ErrorCode::Location5733409,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": [1, d.clone()]}},
            ErrorCode::Location5733406,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": [1, 2i64]}},
            ErrorCode::Location5876900,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "unit": "day", "bounds": [d.clone(), Bson::Timestamp(bson::Timestamp { time: 1, increment: 0 })]}},
            ErrorCode::Location5733405,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": [d.clone(), d.clone()]}},
            ErrorCode::Location5733410,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": ["a", "b"]}},
            ErrorCode::Location5946800,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": "all"}},
            ErrorCode::Location5946802,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": 1}},
            ErrorCode::Location5733404,
        ),
        (
            doc! {"field": "a", "range": {"step": 1, "bounds": "partition"}},
            ErrorCode::Location5733408,
        ),
        (
            doc! {"field": "$a", "range": {"step": 1, "bounds": "full"}},
            ErrorCode::Location16410,
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            Densify::parse(&Bson::Document(spec.clone()), None)
                .unwrap_err()
                .code,
            want,
            "{spec}"
        );
    }
}
