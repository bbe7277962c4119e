//! Reading a date string without a format, as mongod's `$dateFromString` (timelib's
//! `strtotime`) does for the forms clients send: ISO 8601 dates and times
//! (`2017-02-08T12:10:40.787Z`, `2017-02-08 12:10`, `+02:00`, week dates `2017-W06-3`, ordinal
//! dates `2017-039`), `2017/02/08`, `02/08/2017` (month first), `08.02.2017` and `08-02-2017`
//! (day first), `20170208`, month names (`February 8th, 2017`, `8 Feb 2017`, `Feb 2017`),
//! weekday names (the date moves forward to that day, as in timelib), `am`/`pm`, and zones
//! (`Z`, `UTC`, `GMT+1`, offsets, the common abbreviations). A zone identifier inside the
//! string is refused, as mongod refuses it. timelib's relative forms ("next monday",
//! "+1 week") are not read: such strings fail with 241.

use super::scan::{check_valid, month_number, Cursor, ParseError, Parsed, StringZone};
use crate::calendar::civil::{civil_from_days, days_from_civil, days_from_iso};

/// Abbreviations read as zones, with their UTC offsets in seconds.
const ABBREVIATIONS: &[(&str, i64)] = &[
    ("UTC", 0),
    ("GMT", 0),
    ("UT", 0),
    ("Z", 0),
    ("WET", 0),
    ("WEST", 3600),
    ("BST", 3600),
    ("CET", 3600),
    ("CEST", 7200),
    ("EET", 7200),
    ("EEST", 10_800),
    ("MSK", 10_800),
    ("EST", -18_000),
    ("EDT", -14_400),
    ("CST", -21_600),
    ("CDT", -18_000),
    ("MST", -25_200),
    ("MDT", -21_600),
    ("PST", -28_800),
    ("PDT", -25_200),
    ("AKST", -32_400),
    ("AKDT", -28_800),
    ("HST", -36_000),
    ("JST", 32_400),
    ("KST", 32_400),
    ("AWST", 28_800),
    ("ACST", 34_200),
    ("AEST", 36_000),
    ("AEDT", 39_600),
    ("NZST", 43_200),
    ("NZDT", 46_800),
];

const WEEKDAYS: [&str; 7] = [
    "sunday",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
];

fn weekday_number(word: &str) -> Option<i64> {
    let lower = word.to_ascii_lowercase();
    WEEKDAYS.iter().zip(1..).find_map(|(name, n)| {
        (lower == *name || (lower.len() == 3 && name.starts_with(&lower))).then_some(n)
    })
}

/// A two-digit year as timelib reads it: 00–69 are 2000–2069, 70–99 are 1970–1999.
fn year_of(n: i64, digits: usize) -> i64 {
    match digits {
        1 | 2 if n < 70 => 2000 + n,
        1 | 2 => 1900 + n,
        _ => n,
    }
}

pub(super) fn parse(s: &str) -> Result<Parsed, ParseError> {
    let mut c = Cursor {
        bytes: s.as_bytes(),
        pos: 0,
    };
    let mut p = Parsed::default();
    loop {
        while c
            .peek()
            .is_some_and(|b| b.is_ascii_whitespace() || b == b',')
        {
            c.pos += 1;
        }
        let Some(b) = c.peek() else { break };
        if b.is_ascii_digit() {
            number_token(&mut c, &mut p)?;
        } else if (b == b'T' || b == b't') && c.peek_at(1).is_some_and(|d| d.is_ascii_digit()) {
            c.pos += 1;
            time(&mut c, &mut p)?;
        } else if b.is_ascii_alphabetic() || b == b'+' || b == b'-' {
            word_token(&mut c, &mut p)?;
        } else {
            return Err(c.error("Unexpected character"));
        }
    }
    check_valid(&p).map_err(|m| c.error(m))?;
    Ok(p)
}

fn set_date(c: &Cursor<'_>, p: &mut Parsed, y: i64, m: i64, d: i64) -> Result<(), ParseError> {
    if p.day.is_some() {
        return Err(c.error("Double date specification"));
    }
    (p.year, p.month, p.day) = (Some(y), Some(m), Some(d));
    Ok(())
}

/// A token that starts with a digit: a date in one of the numeric forms, or a time.
fn number_token(c: &mut Cursor<'_>, p: &mut Parsed) -> Result<(), ParseError> {
    let start = c.pos;
    let Some(n) = c.digits(8) else {
        return Err(c.error("Unexpected character"));
    };
    let len = c.pos - start;
    match (len, c.peek()) {
        (1 | 2, Some(b':')) => {
            c.pos = start;
            time(c, p)
        }
        (4, Some(b'-')) => {
            c.pos += 1;
            if c.peek() == Some(b'W') {
                c.pos += 1;
                let week = c.digits(2).ok_or_else(|| c.error("Unexpected character"))?;
                let day = match c.peek() {
                    Some(b'-') => {
                        c.pos += 1;
                        c.digits(1).ok_or_else(|| c.error("Unexpected character"))?
                    }
                    _ => 1,
                };
                let days = days_from_iso(n, week, day);
                let (y, m, d) = civil_from_days(days);
                return set_date(c, p, y, m, d);
            }
            if c.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
                let month =
                    month_number(c.word()).ok_or_else(|| c.error("Unexpected character"))?;
                let day = separated_number(c, b'-', 2)?;
                return set_date(c, p, n, month, day);
            }
            let m_start = c.pos;
            let m = c.digits(3).ok_or_else(|| c.error("Unexpected character"))?;
            if c.pos - m_start == 3 {
                // An ordinal date: the day of the year.
                let days = days_from_civil(n, 1, m);
                let (y, mo, d) = civil_from_days(days);
                return set_date(c, p, y, mo, d);
            }
            let d = separated_number(c, b'-', 2)?;
            set_date(c, p, n, m, d)
        }
        (4, Some(b'/')) => {
            let m = separated_number(c, b'/', 2)?;
            let d = separated_number(c, b'/', 2)?;
            set_date(c, p, n, m, d)
        }
        (8, _) => set_date(c, p, n / 10_000, n / 100 % 100, n % 100),
        (1 | 2, Some(b'/')) => {
            let d = separated_number(c, b'/', 2)?;
            match c.peek() {
                Some(b'/') => {
                    c.pos += 1;
                    let y_start = c.pos;
                    let y = c.digits(4).ok_or_else(|| c.error("Unexpected character"))?;
                    set_date(c, p, year_of(y, c.pos - y_start), n, d)
                }
                // A month and day without a year: the date stays incomplete.
                _ => {
                    p.month = Some(n);
                    p.day = Some(d);
                    Ok(())
                }
            }
        }
        (1 | 2, Some(sep @ (b'.' | b'-'))) if c.peek_at(1).is_some_and(|b| b.is_ascii_digit()) => {
            let m = separated_number(c, sep, 2)?;
            let y = separated_year(c, sep)?;
            set_date(c, p, y, m, n)
        }
        (1 | 2, _) => {
            // A day before a month name: `8 Feb 2017`, `08-Feb-2017`, `8th February 2017`.
            let day = n;
            skip_ordinal(c);
            while c
                .peek()
                .is_some_and(|b| matches!(b, b' ' | b'-' | b'.' | b'\t'))
            {
                c.pos += 1;
            }
            let month_start = c.pos;
            let Some(month) = month_number(c.word()) else {
                c.pos = month_start;
                return Err(c.error("Unexpected character"));
            };
            while c
                .peek()
                .is_some_and(|b| matches!(b, b' ' | b'-' | b'.' | b'\t' | b','))
            {
                c.pos += 1;
            }
            let y_start = c.pos;
            let y = c.digits(4).ok_or_else(|| c.error("Unexpected character"))?;
            set_date(c, p, year_of(y, c.pos - y_start), month, day)
        }
        _ => {
            c.pos = start;
            Err(c.error("Unexpected character"))
        }
    }
}

/// `sep` then up to `max` digits.
fn separated_number(c: &mut Cursor<'_>, sep: u8, max: usize) -> Result<i64, ParseError> {
    if c.peek() != Some(sep) {
        return Err(c.error("Unexpected character"));
    }
    c.pos += 1;
    c.digits(max).ok_or_else(|| c.error("Unexpected character"))
}

fn separated_year(c: &mut Cursor<'_>, sep: u8) -> Result<i64, ParseError> {
    if c.peek() != Some(sep) {
        return Err(c.error("Unexpected character"));
    }
    c.pos += 1;
    let start = c.pos;
    let y = c.digits(4).ok_or_else(|| c.error("Unexpected character"))?;
    Ok(year_of(y, c.pos - start))
}

fn skip_ordinal(c: &mut Cursor<'_>) {
    let rest = c.bytes.get(c.pos..c.pos + 2).unwrap_or_default();
    if [b"st", b"nd", b"rd", b"th"]
        .iter()
        .any(|s| rest.eq_ignore_ascii_case(*s))
    {
        c.pos += 2;
    }
}

/// `HH:MM[:SS[.fff]]`, then an optional `am`/`pm`.
fn time(c: &mut Cursor<'_>, p: &mut Parsed) -> Result<(), ParseError> {
    if p.hour.is_some() {
        return Err(c.error("Double time specification"));
    }
    let mut hour = c.digits(2).ok_or_else(|| c.error("Unexpected character"))?;
    let minute = separated_number(c, b':', 2)?;
    let mut second = 0;
    let mut millis = 0;
    if c.peek() == Some(b':') {
        second = separated_number(c, b':', 2)?;
        if matches!(c.peek(), Some(b'.' | b',')) && c.peek_at(1).is_some_and(|b| b.is_ascii_digit())
        {
            c.pos += 1;
            millis = c.fraction_millis();
        }
    }
    let save = c.pos;
    while c.peek() == Some(b' ') {
        c.pos += 1;
    }
    let meridian = c.word().to_ascii_lowercase().replace('.', "");
    match meridian.as_str() {
        "am" | "pm" => {
            if !(1..=12).contains(&hour) {
                return Err(c.error("Unexpected character"));
            }
            hour = hour % 12 + if meridian == "pm" { 12 } else { 0 };
        }
        _ => c.pos = save,
    }
    (p.hour, p.minute, p.second, p.millis) = (Some(hour), Some(minute), Some(second), Some(millis));
    Ok(())
}

/// A token that starts with a letter or a sign: a month or weekday name, or a zone.
fn word_token(c: &mut Cursor<'_>, p: &mut Parsed) -> Result<(), ParseError> {
    let start = c.pos;
    if matches!(c.peek(), Some(b'+' | b'-')) {
        let z = zone(c)?;
        return set_zone(c, p, z, start);
    }
    let word = c.word().to_owned();
    if c.peek() == Some(b'/') || c.peek() == Some(b'_') {
        c.pos = start;
        return Err(c.error("passing a time zone identifier as part of the string is not allowed"));
    }
    if let Some(month) = month_number(&word) {
        // `February 8th, 2017`, `Feb 8 2017`, `February 2017`.
        while c
            .peek()
            .is_some_and(|b| matches!(b, b' ' | b'-' | b'.' | b'\t'))
        {
            c.pos += 1;
        }
        let n_start = c.pos;
        let n = c.digits(4).ok_or_else(|| c.error("Unexpected character"))?;
        if c.pos - n_start == 4 {
            return set_date(c, p, n, month, 1);
        }
        let day = n;
        skip_ordinal(c);
        while c
            .peek()
            .is_some_and(|b| matches!(b, b' ' | b',' | b'.' | b'\t'))
        {
            c.pos += 1;
        }
        let y_start = c.pos;
        return match c.digits(4) {
            // A time right after the day is not a year: `Feb 8 12:00`.
            Some(_) if c.peek() == Some(b':') => {
                c.pos = y_start;
                p.month = Some(month);
                p.day = Some(day);
                Ok(())
            }
            Some(y) => set_date(c, p, year_of(y, c.pos - y_start), month, day),
            None => {
                p.month = Some(month);
                p.day = Some(day);
                Ok(())
            }
        };
    }
    if let Some(day) = weekday_number(&word) {
        p.weekday = Some(day);
        return Ok(());
    }
    c.pos = start;
    let z = zone(c)?;
    set_zone(c, p, z, start)
}

fn set_zone(c: &Cursor<'_>, p: &mut Parsed, z: StringZone, start: usize) -> Result<(), ParseError> {
    if p.zone.is_some() {
        return Err(ParseError {
            pos: start,
            message: "Double timezone specification",
        });
    }
    let _ = c;
    p.zone = Some(z);
    Ok(())
}

/// A zone: `±offset`, `GMT±offset`, or an abbreviation.
pub(super) fn zone(c: &mut Cursor<'_>) -> Result<StringZone, ParseError> {
    let start = c.pos;
    if let Some(sign @ (b'+' | b'-')) = c.peek() {
        c.pos += 1;
        return c
            .offset(sign == b'-')
            .map(StringZone::Offset)
            .ok_or_else(|| c.error("Unexpected character"));
    }
    let word = c.word().to_ascii_uppercase();
    if c.peek() == Some(b'/') || c.peek() == Some(b'_') {
        c.pos = start;
        return Err(c.error("passing a time zone identifier as part of the string is not allowed"));
    }
    if matches!(word.as_str(), "GMT" | "UTC" | "UT") {
        if let Some(sign @ (b'+' | b'-')) = c.peek() {
            c.pos += 1;
            return c
                .offset(sign == b'-')
                .map(StringZone::Offset)
                .ok_or_else(|| c.error("Unexpected character"));
        }
    }
    match ABBREVIATIONS.iter().find(|(a, _)| *a == word) {
        Some((abbr, offset)) => Ok(StringZone::Abbr((*abbr).to_owned(), *offset)),
        None => {
            c.pos = start;
            Err(c.error("The timezone could not be found in the database"))
        }
    }
}
