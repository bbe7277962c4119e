//! `$dateFromString`, with and without a format, and the parser `$toDate` shares.

use super::parse_date_string;
use crate::error::ErrorCode;
use crate::query::expr::tests::eval;
use bson::{bson, doc, Bson, DateTime};

fn date(s: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(s).unwrap())
}

fn from(s: &str) -> Result<Option<Bson>, ErrorCode> {
    eval(bson!({"$dateFromString": {"dateString": s}}), &doc! {})
}

#[test]
fn strings_without_a_format() {
    let cases = [
        ("2017-02-08T12:10:40.787Z", "2017-02-08T12:10:40.787Z"),
        ("2017-02-08T12:10:40.787", "2017-02-08T12:10:40.787Z"),
        ("2017-02-08", "2017-02-08T00:00:00Z"),
        ("2017-02-08 12:10", "2017-02-08T12:10:00Z"),
        ("2017-02-08T12:10:40+02:00", "2017-02-08T10:10:40Z"),
        ("2017-02-08T12:10:40-0530", "2017-02-08T17:40:40Z"),
        ("2017-02-08T12:10:40.5+01", "2017-02-08T11:10:40.500Z"),
        ("2017-02-08T12:10:40.123456Z", "2017-02-08T12:10:40.123Z"),
        ("2017-02-08 12:10:40 GMT+01:00", "2017-02-08T11:10:40Z"),
        ("2017-07-04 11:56:02 EDT", "2017-07-04T15:56:02Z"),
        ("2017-07-04T11:56:02 UTC", "2017-07-04T11:56:02Z"),
        ("2017/02/08", "2017-02-08T00:00:00Z"),
        ("02/08/2017", "2017-02-08T00:00:00Z"),
        ("08.02.2017", "2017-02-08T00:00:00Z"),
        ("08-02-2017 10:00", "2017-02-08T10:00:00Z"),
        ("20170208", "2017-02-08T00:00:00Z"),
        ("2017-W06-3", "2017-02-08T00:00:00Z"),
        ("2017-039", "2017-02-08T00:00:00Z"),
        ("February 8th, 2017", "2017-02-08T00:00:00Z"),
        ("Feb 8 2017 3:04 pm", "2017-02-08T15:04:00Z"),
        ("8 Feb 2017", "2017-02-08T00:00:00Z"),
        ("08-Feb-2017", "2017-02-08T00:00:00Z"),
        ("July 2017", "2017-07-01T00:00:00Z"),
        ("Tue, 04 Jul 2017 11:56:02 +0000", "2017-07-04T11:56:02Z"),
        ("12:00 am 2017-02-08", "2017-02-08T00:00:00Z"),
    ];
    for (s, want) in cases {
        assert_eq!(from(s), Ok(Some(date(want))), "{s}");
    }
    assert_eq!(
        parse_date_string("2017-02-08T12:10:40.787Z"),
        Ok(DateTime::parse_rfc3339_str("2017-02-08T12:10:40.787Z").unwrap())
    );
    for bad in [
        "",
        "garbage",
        "2017-02-30",
        "2017-13-01",
        "2017-02-08T25:00",
        "July 4",
        "12:00",
        "2017-02-08 America/New_York",
        "2017-02-08 +01:00 +02:00",
        "2017-02-08 2017-02-09",
        "next monday",
        "20177-02-09T03:35:02.055",
    ] {
        assert_eq!(from(bad), Err(ErrorCode::ConversionFailure), "{bad}");
        assert!(parse_date_string(bad).is_err(), "{bad}");
    }
}

#[test]
fn date_from_string_options() {
    let d = doc! {"s": "2017-02-08T12:10:40.787", "z": "2017-02-08T12:10:40Z", "n": 5};
    let ny = "America/New_York";
    let cases = [
        (
            bson!({"$dateFromString": {"dateString": "$s", "timezone": ny}}),
            date("2017-02-08T17:10:40.787Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "$s", "timezone": "+01:00"}}),
            date("2017-02-08T11:10:40.787Z"),
        ),
        // A string naming its own zone may go with the UTC zone only.
        (
            bson!({"$dateFromString": {"dateString": "$z", "timezone": "UTC"}}),
            date("2017-02-08T12:10:40Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "06-15-2018", "format": "%m-%d-%Y"}}),
            date("2018-06-15T00:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "15-06-2018", "format": "%d-%m-%Y"}}),
            date("2018-06-15T00:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "2018-06-15 10:20:30.400", "format": "%Y-%m-%d %H:%M:%S.%L"}}),
            date("2018-06-15T10:20:30.400Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "2018-06-15 10", "format": "%Y-%m-%d %H", "timezone": ny}}),
            date("2018-06-15T14:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "15 Jun 2018", "format": "%d %b %Y"}}),
            date("2018-06-15T00:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "15 june 2018", "format": "%d %B %Y"}}),
            date("2018-06-15T00:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "2017-W06-3", "format": "%G-W%V-%u"}}),
            date("2017-02-08T00:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "2018-06-15 +0200", "format": "%Y-%m-%d %z"}}),
            date("2018-06-14T22:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "2018-06-15 -60", "format": "%Y-%m-%d %Z"}}),
            date("2018-06-15T01:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "100% 2018-06-15", "format": "100%% %Y-%m-%d"}}),
            date("2018-06-15T00:00:00Z"),
        ),
        // %j counts from 0, as timelib's day of year does.
        (
            bson!({"$dateFromString": {"dateString": "2020 100", "format": "%Y %j"}}),
            date("2020-04-10T00:00:00Z"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "$nope"}}),
            Bson::Null,
        ),
        (
            bson!({"$dateFromString": {"dateString": null, "onNull": "none"}}),
            bson!("none"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "bad", "onError": "err"}}),
            bson!("err"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "$n", "onError": "err"}}),
            bson!("err"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "$z", "timezone": ny, "onError": "err"}}),
            bson!("err"),
        ),
        (
            bson!({"$dateFromString": {"dateString": "$s", "format": null}}),
            Bson::Null,
        ),
        (
            bson!({"$dateFromString": {"dateString": "$s", "timezone": null}}),
            Bson::Null,
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(eval(spec.clone(), &d), Ok(Some(want)), "{spec}");
    }
    let errors = [
        (bson!({"$dateFromString": "x"}), ErrorCode::Location40540),
        (
            bson!({"$dateFromString": {"dateString": "$s", "x": 1}}),
            ErrorCode::Location40541,
        ),
        (
            bson!({"$dateFromString": {"format": "%Y"}}),
            ErrorCode::Location40542,
        ),
        (
            bson!({"$dateFromString": {"dateString": "$s", "format": 1}}),
            ErrorCode::Location40684,
        ),
        (
            bson!({"$dateFromString": {"dateString": "$s", "format": "%w"}}),
            ErrorCode::Location18536,
        ),
        (
            bson!({"$dateFromString": {"dateString": null, "format": "%"}}),
            ErrorCode::Location18535,
        ),
        (
            bson!({"$dateFromString": {"dateString": "$s", "timezone": "Nowhere", "onError": 1}}),
            ErrorCode::Location40485,
        ),
        (
            bson!({"$dateFromString": {"dateString": "$n"}}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$dateFromString": {"dateString": "$z", "timezone": ny}}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$dateFromString": {"dateString": "2018-06-15", "format": "%Y/%m/%d"}}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$dateFromString": {"dateString": "2018-06-15x", "format": "%Y-%m-%d"}}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$dateFromString": {"dateString": "10:20", "format": "%H:%M"}}),
            ErrorCode::ConversionFailure,
        ),
        (
            bson!({"$dateFromString": {"dateString": "2018-02-30", "format": "%Y-%m-%d"}}),
            ErrorCode::ConversionFailure,
        ),
    ];
    for (spec, code) in errors {
        assert_eq!(eval(spec.clone(), &d), Err(code), "{spec}");
    }
    let message = |spec: Bson| {
        crate::query::expr::Expression::compile(
            &spec,
            &crate::query::expr::Variables::new(DateTime::from_millis(0)),
        )
        .and_then(|e| e.eval(&d))
        .unwrap_err()
        .message
    };
    assert_eq!(
        message(bson!({"$dateFromString": {"dateString": "$z", "timezone": ny}})),
        "you cannot pass in a date/time string with time zone information ('Z') together with a \
         timezone argument"
    );
    assert_eq!(
        message(bson!({"$dateFromString": {"dateString": "2017-02-08 +01", "timezone": ny}})),
        "you cannot pass in a date/time string with GMT offset together with a timezone argument"
    );
    assert_eq!(
        message(bson!({"$dateFromString": {"dateString": "July 4"}})),
        "an incomplete date/time string has been found, with elements missing: \"July 4\""
    );
}
