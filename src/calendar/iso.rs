//! ISO 8601 text of an instant in UTC, in the two forms mongod writes: a date string
//! (`2024-01-31T12:00:00.000Z`, what `$toString` of a date gives) and a log line's timestamp
//! (`2024-01-31T12:00:00.000+00:00`, extended JSON's `$date` in mongod's structured log).
//! Always with milliseconds. Owns: these two forms. Does not own: `$dateToString`'s format
//! specifiers (`query::expr`), nor the extended JSON of documents (the `bson` crate).

use super::civil::Local;
use std::fmt::Write;

/// The years these forms write: four digits, with a sign before a negative year.
const YEARS: std::ops::RangeInclusive<i64> = -9999..=9999;

/// `2024-01-31T12:00:00.000Z`; `None` for an instant outside the years -9999..=9999.
pub fn date_string(ms: i64) -> Option<String> {
    utc(ms, "Z")
}

/// `2024-01-31T12:00:00.000+00:00`; `None` for an instant outside the years -9999..=9999.
pub fn log_timestamp(ms: i64) -> Option<String> {
    utc(ms, "+00:00")
}

fn utc(ms: i64, zone: &str) -> Option<String> {
    let l = Local::at(ms, 0);
    if !YEARS.contains(&l.year) {
        return None;
    }
    let mut out = String::with_capacity(29);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{zone}",
        l.year, l.month, l.day, l.hour, l.minute, l.second, l.millisecond
    );
    Some(out)
}
