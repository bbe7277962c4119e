//! `$dateAdd`, `$dateSubtract`, `$dateDiff` and `$dateTrunc`: the reference pages' examples,
//! DST changes in a zone, and every error with mongod's code.

use super::tests::{check, check_errors, date};
use crate::error::ErrorCode;
use bson::{bson, doc, Bson, DateTime, Timestamp};

#[test]
fn date_add_and_subtract() {
    let d = doc! {
        "jan31": date("2021-01-31T10:00:00Z"),
        "oct31": date("2020-10-31T12:00:00Z"),
        "fall": date("2020-11-01T05:50:02Z"),
        "spring": date("2021-03-13T17:00:00Z"),
    };
    let ny = "America/New_York";
    check(
        &d,
        vec![
            // Month ends clamp to the last day of the month.
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "month", "amount": 1}}),
                date("2021-02-28T10:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$oct31", "unit": "month", "amount": 1}}),
                date("2020-11-30T12:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "quarter", "amount": 1}}),
                date("2021-04-30T10:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "year", "amount": -1}}),
                date("2020-01-31T10:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "week", "amount": 2}}),
                date("2021-02-14T10:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "day", "amount": 1.0}}),
                date("2021-02-01T10:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "minute", "amount": Bson::Int64(90)}}),
                date("2021-01-31T11:30:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "millisecond", "amount": 5}}),
                date("2021-01-31T10:00:00.005Z"),
            ),
            // Hours are elapsed time, even across the fall-back hour (mongod's own example).
            (
                bson!({"$dateAdd": {"startDate": "$fall", "unit": "hour", "amount": 1, "timezone": ny}}),
                date("2020-11-01T06:50:02Z"),
            ),
            // A day in a zone keeps the wall-clock time across a DST change: 23 hours here.
            (
                bson!({"$dateAdd": {"startDate": "$spring", "unit": "day", "amount": 1, "timezone": ny}}),
                date("2021-03-14T16:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$spring", "unit": "day", "amount": 1}}),
                date("2021-03-14T17:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$spring", "unit": "hour", "amount": 24, "timezone": ny}}),
                date("2021-03-14T17:00:00Z"),
            ),
            (
                bson!({"$dateSubtract": {"startDate": date("2021-03-31T12:00:00Z"), "unit": "month", "amount": 1}}),
                date("2021-02-28T12:00:00Z"),
            ),
            (
                bson!({"$dateSubtract": {"startDate": "$spring", "unit": "day", "amount": -1, "timezone": ny}}),
                date("2021-03-14T16:00:00Z"),
            ),
            (
                bson!({"$dateAdd": {"startDate": "$nope", "unit": "day", "amount": 1}}),
                Bson::Null,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": null, "amount": 1}}),
                Bson::Null,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "day", "amount": null}}),
                Bson::Null,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "day", "amount": 1, "timezone": null}}),
                Bson::Null,
            ),
        ],
    );
    check_errors(
        &d,
        vec![
            (bson!({"$dateAdd": 1}), ErrorCode::Location5166400),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "day", "amount": 1, "x": 1}}),
                ErrorCode::Location5166401,
            ),
            (
                bson!({"$dateSubtract": {"startDate": "$jan31", "unit": "day"}}),
                ErrorCode::Location5166402,
            ),
            (
                bson!({"$dateAdd": {"startDate": "x", "unit": "day", "amount": 1}}),
                ErrorCode::Location5166403,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": 1, "amount": 1}}),
                ErrorCode::Location5166404,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "century", "amount": 1}}),
                ErrorCode::FailedToParse,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "day", "amount": 1.5}}),
                ErrorCode::Location5166405,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "year", "amount": Bson::Int64(1_000_000_000)}}),
                ErrorCode::Location5976500,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "day", "amount": Bson::Int64(200_000_000_000)}}),
                ErrorCode::Location5166406,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "millisecond", "amount": Bson::Int64(i64::MAX)}}),
                ErrorCode::Location5166406,
            ),
            (
                bson!({"$dateSubtract": {"startDate": "$jan31", "unit": "millisecond", "amount": Bson::Int64(i64::MIN)}}),
                ErrorCode::Location6045000,
            ),
            (
                bson!({"$dateAdd": {"startDate": "$jan31", "unit": "day", "amount": 1, "timezone": "X"}}),
                ErrorCode::Location40485,
            ),
        ],
    );
}

#[test]
fn date_diff_counts_boundaries() {
    let d = doc! {
        "sat": date("2022-01-01T10:00:00Z"),
        "sun": date("2022-01-09T10:00:00Z"),
        "a": date("2020-12-31T23:59:59Z"),
        "b": date("2021-01-01T00:00:01Z"),
        "edt": date("2021-11-07T05:00:00Z"),
        "est": date("2021-11-07T07:00:00Z"),
    };
    let ny = "America/New_York";
    let long = Bson::Int64;
    check(
        &d,
        vec![
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "year"}}),
                long(1),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "quarter"}}),
                long(1),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "month"}}),
                long(1),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "day"}}),
                long(1),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "second"}}),
                long(2),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "millisecond"}}),
                long(2000),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$b", "endDate": "$a", "unit": "day"}}),
                long(-1),
            ),
            // In New York both instants fall on 31 December.
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "day", "timezone": ny}}),
                long(0),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$sat", "endDate": "$sun", "unit": "week"}}),
                long(2),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$sat", "endDate": "$sun", "unit": "week", "startOfWeek": "monday"}}),
                long(1),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$sat", "endDate": "$sun", "unit": "week", "startOfWeek": "MON"}}),
                long(1),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$sat", "endDate": "$sun", "unit": "day", "startOfWeek": 5}}),
                long(8),
            ),
            // Across the fall-back hour: two hours elapsed though the clock moved one.
            (
                bson!({"$dateDiff": {"startDate": "$edt", "endDate": "$est", "unit": "hour", "timezone": ny}}),
                long(2),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$edt", "endDate": "$est", "unit": "minute", "timezone": ny}}),
                long(120),
            ),
            (
                bson!({"$dateDiff": {"startDate": Timestamp {time: 1_604_255_016, increment: 0}, "endDate": Timestamp {time: 1_604_260_800, increment: 0}, "unit": "minute"}}),
                long(97),
            ),
            (
                bson!({"$dateDiff": {"startDate": "$nope", "endDate": "$b", "unit": "day"}}),
                Bson::Null,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "week", "startOfWeek": null}}),
                Bson::Null,
            ),
        ],
    );
    check_errors(
        &d,
        vec![
            (bson!({"$dateDiff": 1}), ErrorCode::Location5166301),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "day", "x": 1}}),
                ErrorCode::Location5166302,
            ),
            (
                bson!({"$dateDiff": {"endDate": "$b", "unit": "day"}}),
                ErrorCode::Location5166303,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "unit": "day"}}),
                ErrorCode::Location5166304,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b"}}),
                ErrorCode::Location5166305,
            ),
            (
                bson!({"$dateDiff": {"startDate": "date", "endDate": "$b", "unit": "day"}}),
                ErrorCode::Location5166307,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": 2}}),
                ErrorCode::Location5439013,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "century"}}),
                ErrorCode::Location5439014,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "week", "startOfWeek": 1}}),
                ErrorCode::Location5439015,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "week", "startOfWeek": "someday"}}),
                ErrorCode::Location5439016,
            ),
            (
                bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "day", "timezone": "INVALID"}}),
                ErrorCode::Location40485,
            ),
            (
                bson!({"$dateDiff": {"startDate": Bson::DateTime(DateTime::MIN), "endDate": Bson::DateTime(DateTime::MAX), "unit": "millisecond"}}),
                ErrorCode::Location5166308,
            ),
        ],
    );
    let err = crate::query::expr::Expression::compile(
        &bson!({"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "day", "timezone": "INVALID"}}),
        &crate::query::expr::Variables::new(DateTime::from_millis(0)),
    )
    .and_then(|e| e.eval(&d))
    .unwrap_err();
    assert_eq!(
        err.message,
        "$dateDiff parameter 'timezone' value parsing failed :: caused by :: unrecognized time \
         zone identifier: \"INVALID\""
    );
}

#[test]
fn date_trunc_bins() {
    let d = doc! {"d": date("2020-05-18T14:10:30Z"), "old": date("1999-12-31T23:59:59.999Z")};
    check(
        &d,
        vec![
            // The $dateTrunc reference page.
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "week", "binSize": 2, "timezone": "America/Los_Angeles", "startOfWeek": "Monday"}}),
                date("2020-05-11T07:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "month", "binSize": 6}}),
                date("2020-01-01T00:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "year"}}),
                date("2020-01-01T00:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "quarter"}}),
                date("2020-04-01T00:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day"}}),
                date("2020-05-18T00:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day", "timezone": "+05"}}),
                date("2020-05-17T19:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "week"}}),
                date("2020-05-17T00:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "hour", "binSize": 5}}),
                date("2020-05-18T13:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "minute", "binSize": 15}}),
                date("2020-05-18T14:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "second", "binSize": 7}}),
                date("2020-05-18T14:10:25Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$old", "unit": "millisecond", "binSize": 1000}}),
                date("1999-12-31T23:59:59Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$old", "unit": "year", "binSize": 3}}),
                date("1997-01-01T00:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day", "startOfWeek": "bad"}}),
                date("2020-05-18T00:00:00Z"),
            ),
            (
                bson!({"$dateTrunc": {"date": "$nope", "unit": "day"}}),
                Bson::Null,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day", "binSize": null}}),
                Bson::Null,
            ),
        ],
    );
    check_errors(
        &d,
        vec![
            (bson!({"$dateTrunc": "$d"}), ErrorCode::Location5439007),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day", "x": 1}}),
                ErrorCode::Location5439008,
            ),
            (
                bson!({"$dateTrunc": {"unit": "day"}}),
                ErrorCode::Location5439009,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d"}}),
                ErrorCode::Location5439010,
            ),
            (
                bson!({"$dateTrunc": {"date": 1, "unit": "day"}}),
                ErrorCode::Location5439012,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "eon"}}),
                ErrorCode::Location5439014,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day", "binSize": 1.5}}),
                ErrorCode::Location5439017,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day", "binSize": 0}}),
                ErrorCode::Location5439018,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "week", "startOfWeek": "bad"}}),
                ErrorCode::Location5439016,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "day", "binSize": Bson::Int64(100_000_000_001)}}),
                ErrorCode::Location5439006,
            ),
            (
                bson!({"$dateTrunc": {"date": "$d", "unit": "hour", "binSize": Bson::Int64(i64::MAX)}}),
                ErrorCode::Location5439002,
            ),
        ],
    );
}
