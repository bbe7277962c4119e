//! The calendar's edges as tables: leap days, month ends, DST gaps and overlaps in a named
//! zone, the years around 0 and 9999, and the ends of the range of dates.

use super::civil::{civil_from_days, days_from_civil, days_from_iso, days_in_month, is_leap};
use super::civil::{local_millis, Local};
use super::unit::{add, checked_add, diff, truncate, TimeUnit, SUNDAY};
use super::{iso, Zone};
use crate::error::ErrorCode;

fn ms(s: &str) -> i64 {
    bson::DateTime::parse_rfc3339_str(s)
        .unwrap()
        .timestamp_millis()
}

fn ny() -> Zone {
    Zone::parse("America/New_York").unwrap()
}

#[test]
fn leap_years_and_month_lengths() {
    let cases = [
        (2024, 2, true, 29),
        (2023, 2, false, 28),
        (2000, 2, true, 29),
        (1900, 2, false, 28),
        (0, 2, true, 29),
        (-1, 2, false, 28),
        (-4, 2, true, 29),
        (-100, 2, false, 28),
        (-400, 2, true, 29),
        (9999, 12, false, 31),
        (2023, 4, false, 30),
    ];
    for (year, month, leap, days) in cases {
        assert_eq!(is_leap(year), leap, "{year}");
        assert_eq!(days_in_month(year, month), days, "{year}-{month}");
    }
}

#[test]
fn civil_dates_round_trip_from_year_minus_one_to_past_9999() {
    // (days since 1970-01-01, year, month, day)
    let cases = [
        (0, 1970, 1, 1),
        (-1, 1969, 12, 31),
        (10_957, 2000, 1, 1),
        (11_016, 2000, 2, 29),
        (-719_528, 0, 1, 1),
        (-719_469, 0, 2, 29),
        (-719_529, -1, 12, 31),
        (2_932_896, 9999, 12, 31),
        (2_932_897, 10_000, 1, 1),
    ];
    for (days, y, m, d) in cases {
        assert_eq!(civil_from_days(days), (y, m, d), "{days}");
        assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
    }
    for days in [-1_000_000_000_i64, -719_468, 1_000_000_000] {
        let (y, m, d) = civil_from_days(days);
        assert_eq!(days_from_civil(y, m, d), days, "{days}");
    }
    // Day 0 is the last day of the month before.
    assert_eq!(days_from_civil(2021, 3, 0), days_from_civil(2021, 2, 28));
    assert_eq!(days_from_civil(2020, 3, 0), days_from_civil(2020, 2, 29));
    assert_eq!(local_millis(1, 0, 0, 0, 0), 86_400_000);
    assert_eq!(local_millis(0, 25, -1, 0, 1), 89_940_001);
}

#[test]
fn civil_fields_of_instants_at_the_ends_of_mongods_years() {
    // (instant, offset seconds, year, month, day, hour, minute, second, millisecond)
    let cases = [
        (ms("0000-01-01T00:00:00Z"), 0, 0, 1, 1, 0, 0, 0, 0),
        (-62_167_219_200_001, 0, -1, 12, 31, 23, 59, 59, 999),
        (
            ms("9999-12-31T23:59:59.999Z"),
            0,
            9999,
            12,
            31,
            23,
            59,
            59,
            999,
        ),
        (
            ms("9999-12-31T23:59:59.999Z") + 1,
            0,
            10_000,
            1,
            1,
            0,
            0,
            0,
            0,
        ),
        (
            ms("2021-01-01T02:00:00Z"),
            -18_000,
            2020,
            12,
            31,
            21,
            0,
            0,
            0,
        ),
        (-1, 0, 1969, 12, 31, 23, 59, 59, 999),
    ];
    for (at, offset, y, mo, d, h, mi, s, milli) in cases {
        let l = Local::at(at, offset);
        assert_eq!(
            (
                l.year,
                l.month,
                l.day,
                l.hour,
                l.minute,
                l.second,
                l.millisecond
            ),
            (y, mo, d, h, mi, s, milli),
            "{at} at {offset}"
        );
    }
    // The far ends of BSON dates are still civil dates.
    assert_eq!(Local::at(i64::MAX, 0).year, 292_278_994);
    assert_eq!(Local::at(i64::MIN, 0).year, -292_275_055);
}

#[test]
fn weeks_match_mongod() {
    // 2016-01-01 is a Friday: $week 0, ISO week 53 of 2015.
    let l = Local::at(1_451_606_400_000, 0);
    assert_eq!((l.day_of_week(), l.iso_day_of_week(), l.week()), (6, 5, 0));
    assert_eq!(l.iso_week(), (2015, 53));
    assert_eq!(days_from_iso(2015, 53, 5), l.days());
    // 2014-12-29 (Monday) is ISO week 1 of 2015.
    assert_eq!(days_from_iso(2015, 1, 1), days_from_civil(2014, 12, 29));
    // 0000-01-01 was a Saturday; 9999-12-31 a Friday, in ISO week 52 of 9999.
    let l = Local::at(ms("0000-01-01T00:00:00Z"), 0);
    assert_eq!((l.day_of_week(), l.day_of_year()), (7, 1));
    let l = Local::at(ms("9999-12-31T00:00:00Z"), 0);
    assert_eq!((l.iso_day_of_week(), l.iso_week()), (5, (9999, 52)));
    assert_eq!(l.day_of_year(), 365);
}

#[test]
fn zone_names_and_offsets_resolve_as_mongod() {
    assert!(matches!(Zone::parse("UTC"), Ok(Zone::Utc)));
    assert!(matches!(Zone::parse("+00:00"), Ok(Zone::Utc)));
    assert!(matches!(Zone::parse("-0530"), Ok(Zone::Offset(-19_800))));
    assert!(matches!(Zone::parse("+03"), Ok(Zone::Offset(10_800))));
    assert!(matches!(Zone::parse("+04:45"), Ok(Zone::Offset(17_100))));
    assert!(matches!(
        Zone::parse("America/New_York"),
        Ok(Zone::Named(_))
    ));
    assert!(matches!(Zone::parse("Europe/London"), Ok(Zone::Named(_))));
    assert!(matches!(Zone::parse("GMT"), Ok(Zone::Named(_))));
    for bad in [
        "america/new_york",
        "Mars/Olympus",
        "+1",
        "+123",
        "05:00",
        "",
        "+ab",
    ] {
        let err = Zone::parse(bad).err().unwrap();
        assert_eq!(err.code, ErrorCode::Location40485, "{bad}");
        assert_eq!(
            err.message,
            format!("unrecognized time zone identifier: \"{bad}\"")
        );
    }
}

#[test]
fn civil_times_in_dst_gaps_and_overlaps_resolve_as_timelib() {
    let ny = ny();
    // (local civil time in New York, the instant it names)
    let cases = [
        // 02:30 does not exist on 2021-03-14: read at the offset before the gap (EST).
        ("2021-03-14T02:30:00Z", "2021-03-14T07:30:00Z"),
        ("2021-03-14T01:59:59Z", "2021-03-14T06:59:59Z"),
        ("2021-03-14T03:00:00Z", "2021-03-14T07:00:00Z"),
        // 01:30 happens twice on 2021-11-07: the earlier (EDT).
        ("2021-11-07T01:30:00Z", "2021-11-07T05:30:00Z"),
        ("2021-11-07T02:00:00Z", "2021-11-07T07:00:00Z"),
    ];
    for (local, instant) in cases {
        assert_eq!(
            ny.instant(i128::from(ms(local))),
            Some(ms(instant)),
            "{local}"
        );
    }
    assert_eq!(ny.offset_at(ms("2021-11-07T05:30:00Z")), -14_400);
    assert_eq!(ny.offset_at(ms("2021-11-07T06:30:00Z")), -18_000);
    // Outside jiff's years, the rules of its ends hold; nothing overflows.
    assert_eq!(
        ny.offset_at(i64::MAX),
        ny.offset_at(ms("9999-12-31T00:00:00Z"))
    );
    assert!(ny.instant(i128::from(i64::MAX) * 2).is_none());
}

#[test]
fn units_add_with_month_end_clamping_and_dst() {
    let utc = Zone::Utc;
    let ny = ny();
    // (unit, from, amount, zone, to)
    let cases = [
        (
            TimeUnit::Hour,
            "2021-05-18T00:00:00Z",
            3,
            &utc,
            "2021-05-18T03:00:00Z",
        ),
        (
            TimeUnit::Week,
            "2021-05-18T00:00:00Z",
            -1,
            &utc,
            "2021-05-11T00:00:00Z",
        ),
        (
            TimeUnit::Month,
            "2021-01-31T10:00:00Z",
            1,
            &utc,
            "2021-02-28T10:00:00Z",
        ),
        (
            TimeUnit::Month,
            "2020-01-31T00:00:00Z",
            1,
            &utc,
            "2020-02-29T00:00:00Z",
        ),
        (
            TimeUnit::Month,
            "2021-03-31T00:00:00Z",
            -1,
            &utc,
            "2021-02-28T00:00:00Z",
        ),
        (
            TimeUnit::Month,
            "1969-12-31T23:00:00Z",
            2,
            &utc,
            "1970-02-28T23:00:00Z",
        ),
        (
            TimeUnit::Quarter,
            "2021-11-30T00:00:00Z",
            1,
            &utc,
            "2022-02-28T00:00:00Z",
        ),
        (
            TimeUnit::Year,
            "2020-02-29T00:00:00Z",
            1,
            &utc,
            "2021-02-28T00:00:00Z",
        ),
        (
            TimeUnit::Year,
            "2020-02-29T00:00:00Z",
            4,
            &utc,
            "2024-02-29T00:00:00Z",
        ),
        (
            TimeUnit::Year,
            "0000-02-29T00:00:00Z",
            -1,
            &utc,
            "-0001-02-28T00:00:00Z",
        ),
        (
            TimeUnit::Year,
            "9999-12-31T12:00:00Z",
            1,
            &utc,
            "+10000-12-31T12:00:00Z",
        ),
        // Across New York's spring-forward a day is 23 hours, an hour is an hour.
        (
            TimeUnit::Day,
            "2021-03-13T17:00:00Z",
            1,
            &ny,
            "2021-03-14T16:00:00Z",
        ),
        (
            TimeUnit::Hour,
            "2021-03-13T17:00:00Z",
            24,
            &ny,
            "2021-03-14T17:00:00Z",
        ),
        // A day that lands in the gap moves on by the gap; one in the overlap takes EDT.
        (
            TimeUnit::Day,
            "2021-03-13T07:30:00Z",
            1,
            &ny,
            "2021-03-14T07:30:00Z",
        ),
        (
            TimeUnit::Day,
            "2021-11-06T05:30:00Z",
            1,
            &ny,
            "2021-11-07T05:30:00Z",
        ),
        // Fall-back: a day is 25 hours.
        (
            TimeUnit::Day,
            "2021-11-06T16:00:00Z",
            1,
            &ny,
            "2021-11-07T17:00:00Z",
        ),
        (
            TimeUnit::Month,
            "2021-01-31T17:00:00Z",
            2,
            &ny,
            "2021-03-31T16:00:00Z",
        ),
    ];
    for (unit, from, n, zone, to) in cases {
        let to = bson_ms(to);
        assert_eq!(
            add(bson_ms(from), unit, n, zone),
            Some(to),
            "{unit:?} {from} + {n}"
        );
    }
    // Past the range of dates: nothing, never a panic.
    for (date, unit, n, zone) in [
        (i64::MAX, TimeUnit::Day, 1, &utc),
        (i64::MAX, TimeUnit::Millisecond, 1, &utc),
        (0, TimeUnit::Year, 300_000_000, &utc),
        (0, TimeUnit::Month, i64::MAX, &utc),
        (0, TimeUnit::Quarter, i64::MIN, &ny),
        (0, TimeUnit::Day, i64::MAX, &ny),
        (i64::MIN, TimeUnit::Week, -1, &ny),
    ] {
        assert_eq!(add(date, unit, n, zone), None, "{date} + {n} {unit:?}");
    }
    let err = checked_add(0, TimeUnit::Day, i64::MAX, &utc).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5976500);
    assert_eq!(
        err.message,
        format!("invalid dateAdd 'amount' parameter value: {} day", i64::MAX)
    );
    let err = checked_add(i64::MAX, TimeUnit::Day, 1, &utc).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (ErrorCode::Location5166406, "dateAdd overflowed")
    );
}

/// An instant from ISO text that may carry a sign and more than four year digits (what
/// `bson`'s RFC 3339 reader refuses).
fn bson_ms(s: &str) -> i64 {
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'-') => (-1, &s[1..]),
        Some(b'+') => (1, &s[1..]),
        _ => return ms(s),
    };
    let (year, tail) = rest.split_once('-').unwrap();
    let year: i64 = year.parse::<i64>().unwrap() * sign;
    // The same month, day and time in 2000 (a leap year), moved to `year`.
    let in_2000 = ms(&format!("2000-{tail}"));
    let (_, m, d) = civil_from_days(in_2000.div_euclid(86_400_000));
    let days = days_from_civil(year, m, d);
    days * 86_400_000 + in_2000.rem_euclid(86_400_000)
}

#[test]
fn units_count_boundaries_and_truncate_in_the_zone() {
    let ny = ny();
    // (unit, start, end, zone, boundaries crossed)
    let cases = [
        (
            TimeUnit::Year,
            "2020-12-31T23:59:59Z",
            "2021-01-01T00:00:00Z",
            &Zone::Utc,
            1,
        ),
        (
            TimeUnit::Month,
            "2020-01-31T00:00:00Z",
            "2020-02-01T00:00:00Z",
            &Zone::Utc,
            1,
        ),
        (
            TimeUnit::Quarter,
            "2020-03-31T00:00:00Z",
            "2021-04-01T00:00:00Z",
            &Zone::Utc,
            5,
        ),
        (
            TimeUnit::Day,
            "2020-02-28T12:00:00Z",
            "2020-03-01T00:00:00Z",
            &Zone::Utc,
            2,
        ),
        // Across spring-forward: 4 wall-clock hours, 3 elapsed.
        (
            TimeUnit::Hour,
            "2021-03-14T05:00:00Z",
            "2021-03-14T08:00:00Z",
            &ny,
            3,
        ),
        (
            TimeUnit::Day,
            "2021-03-14T05:00:00Z",
            "2021-03-15T04:00:00Z",
            &ny,
            1,
        ),
        // New York's 2021 began at 05:00Z.
        (
            TimeUnit::Year,
            "2021-01-01T04:59:59Z",
            "2021-01-01T05:00:00Z",
            &ny,
            1,
        ),
        (
            TimeUnit::Millisecond,
            "2021-01-01T00:00:00Z",
            "2021-01-01T00:00:01Z",
            &ny,
            1000,
        ),
    ];
    for (unit, a, b, zone, n) in cases {
        assert_eq!(
            diff(ms(a), ms(b), unit, zone, SUNDAY).unwrap(),
            n,
            "{unit:?} {a} {b}"
        );
    }
    // Weeks start on Sunday unless told: Saturday to Monday crosses one start either way.
    let (sat, mon) = (ms("2021-05-15T00:00:00Z"), ms("2021-05-17T00:00:00Z"));
    assert_eq!(
        diff(sat, mon, TimeUnit::Week, &Zone::Utc, SUNDAY).unwrap(),
        1
    );
    assert_eq!(diff(sat, mon, TimeUnit::Week, &Zone::Utc, 1).unwrap(), 1);
    assert_eq!(diff(sat, mon, TimeUnit::Week, &Zone::Utc, 2).unwrap(), 0);
    let err = diff(
        i64::MIN,
        i64::MAX,
        TimeUnit::Millisecond,
        &Zone::Utc,
        SUNDAY,
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5166308);

    // (unit, bin size, date, zone, start of its bin)
    let cases = [
        (
            TimeUnit::Day,
            1,
            "2021-03-14T12:00:00Z",
            &ny,
            "2021-03-14T05:00:00Z",
        ),
        (
            TimeUnit::Hour,
            2,
            "2021-03-14T07:30:00Z",
            &ny,
            "2021-03-14T07:00:00Z",
        ),
        (
            TimeUnit::Month,
            1,
            "2020-02-29T23:00:00Z",
            &Zone::Utc,
            "2020-02-01T00:00:00Z",
        ),
        (
            TimeUnit::Quarter,
            1,
            "2021-08-31T00:00:00Z",
            &Zone::Utc,
            "2021-07-01T00:00:00Z",
        ),
        (
            TimeUnit::Year,
            10,
            "1999-06-01T00:00:00Z",
            &Zone::Utc,
            "1990-01-01T00:00:00Z",
        ),
        (
            TimeUnit::Week,
            1,
            "2021-05-19T00:00:00Z",
            &Zone::Utc,
            "2021-05-16T00:00:00Z",
        ),
        (
            TimeUnit::Year,
            1,
            "0000-06-01T00:00:00Z",
            &Zone::Utc,
            "0000-01-01T00:00:00Z",
        ),
        (
            TimeUnit::Year,
            1,
            "9999-12-31T23:59:59Z",
            &Zone::Utc,
            "9999-01-01T00:00:00Z",
        ),
    ];
    for (unit, bin, date, zone, start) in cases {
        let got = truncate(ms(date), unit, bin, zone, SUNDAY).unwrap();
        assert_eq!(got, ms(start), "{unit:?} {bin} {date}");
    }
    let err = truncate(0, TimeUnit::Month, 100_000_000_001, &Zone::Utc, SUNDAY).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5439006);
    let err = truncate(i64::MAX, TimeUnit::Hour, i64::MAX, &Zone::Utc, SUNDAY).unwrap_err();
    assert_eq!(err.code, ErrorCode::Location5439002);
}

#[test]
fn unit_names_are_mongods() {
    for unit in [
        TimeUnit::Year,
        TimeUnit::Quarter,
        TimeUnit::Month,
        TimeUnit::Week,
        TimeUnit::Day,
        TimeUnit::Hour,
        TimeUnit::Minute,
        TimeUnit::Second,
        TimeUnit::Millisecond,
    ] {
        assert_eq!(TimeUnit::parse(unit.name()).unwrap(), unit);
    }
    let err = TimeUnit::parse("fortnight").unwrap_err();
    assert_eq!(err.code, ErrorCode::FailedToParse);
    assert_eq!(err.message, "unknown time unit value: fortnight");
    assert_eq!(TimeUnit::named("Day"), None);
    assert_eq!(TimeUnit::Week.utc_millis(), Some(604_800_000));
    assert_eq!(TimeUnit::Week.fixed_millis(), None);
    assert_eq!(TimeUnit::Month.utc_millis(), None);
}

#[test]
fn iso_text_of_instants() {
    // (instant, date string, log timestamp)
    let cases = [
        (
            0,
            Some("1970-01-01T00:00:00.000Z"),
            Some("1970-01-01T00:00:00.000+00:00"),
        ),
        (
            1_706_702_400_123,
            Some("2024-01-31T12:00:00.123Z"),
            Some("2024-01-31T12:00:00.123+00:00"),
        ),
        (
            -1,
            Some("1969-12-31T23:59:59.999Z"),
            Some("1969-12-31T23:59:59.999+00:00"),
        ),
        (
            ms("0000-01-01T00:00:00Z"),
            Some("0000-01-01T00:00:00.000Z"),
            Some("0000-01-01T00:00:00.000+00:00"),
        ),
        (
            ms("9999-12-31T23:59:59.999Z"),
            Some("9999-12-31T23:59:59.999Z"),
            Some("9999-12-31T23:59:59.999+00:00"),
        ),
        (ms("9999-12-31T23:59:59.999Z") + 1, None, None),
        (i64::MIN, None, None),
    ];
    for (at, date, log) in cases {
        assert_eq!(iso::date_string(at).as_deref(), date, "{at}");
        assert_eq!(iso::log_timestamp(at).as_deref(), log, "{at}");
    }
}
