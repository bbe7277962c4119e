//! The date operators against the worked examples of MongoDB's reference pages, and every
//! error with mongod's code.

use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, oid::ObjectId, Bson, DateTime, Document, Timestamp};

pub(super) fn date(s: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(s).unwrap())
}

pub(super) fn check(d: &Document, cases: Vec<(Bson, Bson)>) {
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), d), Ok(Some(want)), "{spec}");
    }
}

pub(super) fn check_errors(d: &Document, cases: Vec<(Bson, ErrorCode)>) {
    for (spec, code) in cases {
        assert_eq!(eval(spec.clone(), d), Err(code), "{spec}");
    }
}

#[test]
fn date_parts_in_utc_and_zones() {
    // The $year … $week reference pages: 2014-01-01T08:15:39.736Z, a Wednesday.
    let d = doc! {"d": date("2014-01-01T08:15:39.736Z")};
    check(
        &d,
        vec![
            (bson!({"$year": "$d"}), bson!(2014)),
            (bson!({"$month": "$d"}), bson!(1)),
            (bson!({"$dayOfMonth": "$d"}), bson!(1)),
            (bson!({"$hour": "$d"}), bson!(8)),
            (bson!({"$minute": "$d"}), bson!(15)),
            (bson!({"$second": "$d"}), bson!(39)),
            (bson!({"$millisecond": "$d"}), bson!(736)),
            (bson!({"$dayOfYear": "$d"}), bson!(1)),
            (bson!({"$dayOfWeek": "$d"}), bson!(4)),
            (bson!({"$week": "$d"}), bson!(0)),
            (bson!({"$isoWeek": "$d"}), bson!(1)),
            (bson!({"$isoWeekYear": "$d"}), Bson::Int64(2014)),
            (bson!({"$isoDayOfWeek": "$d"}), bson!(3)),
            (bson!({"$year": ["$d"]}), bson!(2014)),
            (bson!({"$hour": {"date": "$d"}}), bson!(8)),
            (
                bson!({"$hour": {"date": "$d", "timezone": "America/New_York"}}),
                bson!(3),
            ),
            (
                bson!({"$hour": {"date": "$d", "timezone": "+04:30"}}),
                bson!(12),
            ),
            (
                bson!({"$minute": {"date": "$d", "timezone": "+04:30"}}),
                bson!(45),
            ),
            (
                bson!({"$year": {"date": "$d", "timezone": "-0900"}}),
                bson!(2013),
            ),
            (
                bson!({"$dayOfWeek": {"date": "$d", "timezone": "-09"}}),
                bson!(3),
            ),
            (
                bson!({"$year": {"$literal": date("2015-06-01T00:00:00Z")}}),
                bson!(2015),
            ),
            (bson!({"$year": "$nope"}), Bson::Null),
            (bson!({"$year": null}), Bson::Null),
            (
                bson!({"$year": {"date": "$d", "timezone": null}}),
                Bson::Null,
            ),
        ],
    );
    // 2016-01-01 is a Friday: $week 0, ISO week 53 of 2015; 2016-01-03 starts $week 1.
    let d = doc! {"a": date("2016-01-01T00:00:00Z"), "b": date("2016-01-03T00:00:00Z")};
    check(
        &d,
        vec![
            (bson!({"$week": "$a"}), bson!(0)),
            (bson!({"$isoWeek": "$a"}), bson!(53)),
            (bson!({"$isoWeekYear": "$a"}), Bson::Int64(2015)),
            (bson!({"$week": "$b"}), bson!(1)),
            (bson!({"$dayOfWeek": "$b"}), bson!(1)),
            (bson!({"$isoDayOfWeek": "$b"}), bson!(7)),
        ],
    );
    // Timestamps and ObjectIds count from their seconds.
    let oid = ObjectId::parse_str("5a0b1c2d0000000000000000").unwrap();
    let d = doc! {"t": Timestamp {time: 1_510_677_549, increment: 3}, "o": oid};
    check(
        &d,
        vec![
            (bson!({"$year": "$t"}), bson!(2017)),
            (bson!({"$second": "$t"}), bson!(9)),
            (bson!({"$month": "$o"}), bson!(11)),
            (bson!({"$dayOfMonth": "$o"}), bson!(14)),
        ],
    );
}

#[test]
fn date_part_errors() {
    let d = doc! {"d": date("2014-01-01T08:15:39.736Z"), "s": "x"};
    check_errors(
        &d,
        vec![
            (bson!({"$year": "$s"}), ErrorCode::Location16006),
            (bson!({"$year": 5}), ErrorCode::Location16006),
            (
                bson!({"$year": {"date": "$d", "timezone": 5}}),
                ErrorCode::Location40533,
            ),
            (
                bson!({"$year": {"date": "$d", "timezone": "Mars/Base"}}),
                ErrorCode::Location40485,
            ),
            (
                bson!({"$year": {"date": "$d", "timezone": "america/new_york"}}),
                ErrorCode::Location40485,
            ),
            (
                bson!({"$year": {"date": "$d", "zone": "UTC"}}),
                ErrorCode::Location40535,
            ),
            (
                bson!({"$year": {"timezone": "UTC"}}),
                ErrorCode::Location40539,
            ),
            (bson!({"$year": {}}), ErrorCode::Location40539),
            (bson!({"$year": ["$d", "$d"]}), ErrorCode::Location40536),
            (bson!({"$year": []}), ErrorCode::Location40536),
        ],
    );
}

#[test]
fn date_to_parts_examples() {
    let d = doc! {"d": date("2017-01-01T01:29:09.123Z")};
    check(
        &d,
        vec![
            (
                bson!({"$dateToParts": {"date": "$d"}}),
                bson!({"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}),
            ),
            (
                bson!({"$dateToParts": {"date": "$d", "iso8601": true}}),
                bson!({"isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}),
            ),
            (
                bson!({"$dateToParts": {"date": "$d", "timezone": "America/New_York"}}),
                bson!({"year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9, "millisecond": 123}),
            ),
            (bson!({"$dateToParts": {"date": null}}), Bson::Null),
            (
                bson!({"$dateToParts": {"date": "$d", "iso8601": null}}),
                Bson::Null,
            ),
            (
                bson!({"$dateToParts": {"date": "$d", "timezone": null}}),
                Bson::Null,
            ),
        ],
    );
    check_errors(
        &d,
        vec![
            (bson!({"$dateToParts": "$d"}), ErrorCode::Location40524),
            (
                bson!({"$dateToParts": {"date": "$d", "x": 1}}),
                ErrorCode::Location40520,
            ),
            (
                bson!({"$dateToParts": {"timezone": "UTC"}}),
                ErrorCode::Location40522,
            ),
            (
                bson!({"$dateToParts": {"date": "$d", "iso8601": 1}}),
                ErrorCode::Location40521,
            ),
            (
                bson!({"$dateToParts": {"date": "$d", "timezone": 1}}),
                ErrorCode::Location40517,
            ),
            (
                bson!({"$dateToParts": {"date": 1}}),
                ErrorCode::Location16006,
            ),
        ],
    );
}

#[test]
fn date_from_parts_examples() {
    let d = doc! {};
    check(
        &d,
        vec![
            (
                bson!({"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12}}),
                date("2017-02-08T12:00:00Z"),
            ),
            (
                bson!({"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12}}),
                date("2017-02-08T12:00:00Z"),
            ),
            (
                bson!({"$dateFromParts": {"year": 2016, "month": 12, "day": 31, "hour": 23, "minute": 46, "second": 12, "timezone": "America/New_York"}}),
                date("2017-01-01T04:46:12Z"),
            ),
            // Values past their ranges carry into the next field.
            (
                bson!({"$dateFromParts": {"year": 2017, "month": 14, "day": 1, "hour": 12}}),
                date("2018-02-01T12:00:00Z"),
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "month": 0, "day": 1}}),
                date("2016-12-01T00:00:00Z"),
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "month": 3, "day": 0}}),
                date("2017-02-28T00:00:00Z"),
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "hour": -1, "millisecond": 1500}}),
                date("2016-12-31T23:00:01.500Z"),
            ),
            (
                bson!({"$dateFromParts": {"year": 2017.0, "month": 2.0}}),
                date("2017-02-01T00:00:00Z"),
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "month": null}}),
                Bson::Null,
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "timezone": "$nope"}}),
                Bson::Null,
            ),
            // A civil time in the spring-forward gap moves forward.
            (
                bson!({"$dateFromParts": {"year": 2021, "month": 3, "day": 14, "hour": 2, "minute": 30, "timezone": "America/New_York"}}),
                date("2021-03-14T07:30:00Z"),
            ),
        ],
    );
    check_errors(
        &d,
        vec![
            (bson!({"$dateFromParts": 1}), ErrorCode::Location40519),
            (
                bson!({"$dateFromParts": {"year": 2017, "x": 1}}),
                ErrorCode::Location40518,
            ),
            (
                bson!({"$dateFromParts": {"month": 1}}),
                ErrorCode::Location40516,
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "isoWeek": 1}}),
                ErrorCode::Location40489,
            ),
            (
                bson!({"$dateFromParts": {"isoWeekYear": 2017, "month": 1}}),
                ErrorCode::Location40525,
            ),
            (
                bson!({"$dateFromParts": {"year": "2017"}}),
                ErrorCode::Location40515,
            ),
            (
                bson!({"$dateFromParts": {"year": 2017.5}}),
                ErrorCode::Location40515,
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "month": 40000}}),
                ErrorCode::Location31034,
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "hour": -32769}}),
                ErrorCode::Location31034,
            ),
            (
                bson!({"$dateFromParts": {"year": 0}}),
                ErrorCode::Location40523,
            ),
            (
                bson!({"$dateFromParts": {"year": 10000}}),
                ErrorCode::Location40523,
            ),
            (
                bson!({"$dateFromParts": {"isoWeekYear": 10000}}),
                ErrorCode::Location31095,
            ),
            (
                bson!({"$dateFromParts": {"year": 2017, "timezone": "Nowhere"}}),
                ErrorCode::Location40485,
            ),
        ],
    );
}

#[test]
fn date_to_string_examples() {
    // The $dateToString reference page's document.
    let d =
        doc! {"date": date("2014-01-01T08:15:39.736Z"), "neg": date("1969-12-31T23:59:59.999Z")};
    let ny = "America/New_York";
    check(
        &d,
        vec![
            (
                bson!({"$dateToString": {"format": "%Y-%m-%d", "date": "$date"}}),
                bson!("2014-01-01"),
            ),
            (
                bson!({"$dateToString": {"format": "%H:%M:%S:%L%z", "date": "$date", "timezone": ny}}),
                bson!("03:15:39:736-0500"),
            ),
            (
                bson!({"$dateToString": {"format": "%H:%M:%S:%L%z", "date": "$date", "timezone": "+04:30"}}),
                bson!("12:45:39:736+0430"),
            ),
            (
                bson!({"$dateToString": {"format": "%Z", "date": "$date", "timezone": ny}}),
                bson!("-300"),
            ),
            (
                bson!({"$dateToString": {"format": "%Z", "date": "$date", "timezone": "+04:30"}}),
                bson!("270"),
            ),
            (
                bson!({"$dateToString": {"format": "%b", "date": "$date", "timezone": "+04"}}),
                bson!("Jan"),
            ),
            (
                bson!({"$dateToString": {"format": "%B", "date": "$date", "timezone": "+04"}}),
                bson!("January"),
            ),
            (
                bson!({"$dateToString": {"date": "$date"}}),
                bson!("2014-01-01T08:15:39.736Z"),
            ),
            (
                bson!({"$dateToString": {"date": "$date", "timezone": ny}}),
                bson!("2014-01-01T03:15:39.736Z"),
            ),
            (
                bson!({"$dateToString": {"format": "%j %w %u %U %V %G %% %z", "date": "$date"}}),
                bson!("001 4 3 00 01 2014 % +0000"),
            ),
            (
                bson!({"$dateToString": {"format": "%Y-%m-%dT%H:%M:%S.%L", "date": "$neg"}}),
                bson!("1969-12-31T23:59:59.999"),
            ),
            (
                bson!({"$dateToString": {"format": "%z", "date": "$date", "timezone": "-05:30"}}),
                bson!("-0530"),
            ),
            (bson!({"$dateToString": {"date": "$nope"}}), Bson::Null),
            (
                bson!({"$dateToString": {"date": "$nope", "onNull": "none"}}),
                bson!("none"),
            ),
            (
                bson!({"$dateToString": {"date": "$date", "format": null}}),
                Bson::Null,
            ),
            (
                bson!({"$dateToString": {"date": "$date", "timezone": null}}),
                Bson::Null,
            ),
            (
                bson!({"$dateToString": {"date": Timestamp {time: 0, increment: 1}, "format": "%Y"}}),
                bson!("1970"),
            ),
        ],
    );
    assert_eq!(
        eval(
            bson!({"$dateToString": {"date": "$nope", "onNull": "$nope"}}),
            &d
        ),
        Ok(None)
    );
    check_errors(
        &d,
        vec![
            (bson!({"$dateToString": "$date"}), ErrorCode::Location18629),
            (
                bson!({"$dateToString": {"date": "$date", "x": 1}}),
                ErrorCode::Location18534,
            ),
            (
                bson!({"$dateToString": {"format": "%Y"}}),
                ErrorCode::Location18628,
            ),
            (
                bson!({"$dateToString": {"date": "$date", "format": 1}}),
                ErrorCode::Location18533,
            ),
            (
                bson!({"$dateToString": {"date": "$date", "format": "%Y%"}}),
                ErrorCode::Location18535,
            ),
            (
                bson!({"$dateToString": {"date": "$date", "format": "%q"}}),
                ErrorCode::Location18536,
            ),
            // The format is checked even when the date is null.
            (
                bson!({"$dateToString": {"date": null, "format": "%e"}}),
                ErrorCode::Location18536,
            ),
            (
                bson!({"$dateToString": {"date": "$date", "timezone": "Nowhere"}}),
                ErrorCode::Location40485,
            ),
            (
                bson!({"$dateToString": {"date": "x"}}),
                ErrorCode::Location16006,
            ),
            (
                bson!({"$dateToString": {"date": Bson::DateTime(DateTime::from_millis(-62_198_755_200_000)), "format": "%Y"}}),
                ErrorCode::Location18537,
            ),
        ],
    );
}
