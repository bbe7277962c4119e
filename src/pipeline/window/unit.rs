//! Time units, as `$setWindowFields` range windows, `$derivative`/`$integral` and `$densify`
//! name them: parsing mongod's unit names, and adding a whole number of units to a date.
//!
//! Owns: the unit names and date stepping (UTC; months, quarters and years step the calendar
//! as `$dateAdd` does, clamping the day to the month's last). Does not own: the date
//! expression operators (`query::expr`), which have their own time zone rules.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

const MS_PER_DAY: i64 = 86_400_000;

impl TimeUnit {
    /// mongod's `parseTimeUnit`.
    pub fn parse(name: &str) -> Result<TimeUnit> {
        Ok(match name {
            "millisecond" => TimeUnit::Millisecond,
            "second" => TimeUnit::Second,
            "minute" => TimeUnit::Minute,
            "hour" => TimeUnit::Hour,
            "day" => TimeUnit::Day,
            "week" => TimeUnit::Week,
            "month" => TimeUnit::Month,
            "quarter" => TimeUnit::Quarter,
            "year" => TimeUnit::Year,
            other => {
                return Err(Error::failed_to_parse(format!(
                    "unknown time unit value: {other}"
                )))
            }
        })
    }

    /// The unit's length in milliseconds, for the units of fixed length (week and smaller).
    pub fn millis(self) -> Option<i64> {
        Some(match self {
            TimeUnit::Millisecond => 1,
            TimeUnit::Second => 1_000,
            TimeUnit::Minute => 60_000,
            TimeUnit::Hour => 3_600_000,
            TimeUnit::Day => MS_PER_DAY,
            TimeUnit::Week => 7 * MS_PER_DAY,
            TimeUnit::Month | TimeUnit::Quarter | TimeUnit::Year => return None,
        })
    }

    /// `date` (milliseconds since the epoch) plus `amount` units; `None` past the range of
    /// dates.
    pub fn add(self, date: i64, amount: i64) -> Option<i64> {
        if let Some(ms) = self.millis() {
            return date.checked_add(ms.checked_mul(amount)?);
        }
        let months = match self {
            TimeUnit::Month => amount,
            TimeUnit::Quarter => amount.checked_mul(3)?,
            _ => amount.checked_mul(12)?,
        };
        let days = date.div_euclid(MS_PER_DAY);
        let time_of_day = date.rem_euclid(MS_PER_DAY);
        let (y, m, d) = civil_from_days(days);
        let index = y.checked_mul(12)?.checked_add(m - 1)?.checked_add(months)?;
        let (y, m) = (index.div_euclid(12), index.rem_euclid(12) + 1);
        let d = d.min(days_in_month(y, m));
        days_from_civil(y, m, d)
            .checked_mul(MS_PER_DAY)?
            .checked_add(time_of_day)
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        bson::DateTime::parse_rfc3339_str(s)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn units_step_dates_as_date_add_does() {
        let cases = [
            (
                TimeUnit::Hour,
                "2021-05-18T00:00:00Z",
                3,
                "2021-05-18T03:00:00Z",
            ),
            (
                TimeUnit::Week,
                "2021-05-18T00:00:00Z",
                -1,
                "2021-05-11T00:00:00Z",
            ),
            (
                TimeUnit::Month,
                "2021-01-31T10:00:00Z",
                1,
                "2021-02-28T10:00:00Z",
            ),
            (
                TimeUnit::Month,
                "2020-01-31T00:00:00Z",
                1,
                "2020-02-29T00:00:00Z",
            ),
            (
                TimeUnit::Quarter,
                "2021-11-15T00:00:00Z",
                1,
                "2022-02-15T00:00:00Z",
            ),
            (
                TimeUnit::Year,
                "2020-02-29T00:00:00Z",
                1,
                "2021-02-28T00:00:00Z",
            ),
            (
                TimeUnit::Month,
                "1969-12-31T23:00:00Z",
                2,
                "1970-02-28T23:00:00Z",
            ),
        ];
        for (unit, from, n, to) in cases {
            assert_eq!(unit.add(ms(from), n), Some(ms(to)), "{unit:?} {from} + {n}");
        }
        assert_eq!(
            TimeUnit::parse("fortnight").unwrap_err().message,
            "unknown time unit value: fortnight"
        );
        assert_eq!(TimeUnit::Day.add(i64::MAX, 1), None);
    }
}
