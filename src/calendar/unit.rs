//! Time units as mongod names them (`year`, `quarter`, `month`, `week`, `day`, `hour`,
//! `minute`, `second`, `millisecond`) and the arithmetic on them that `$dateAdd`,
//! `$dateSubtract`, `$dateDiff`, `$dateTrunc`, `$setWindowFields` ranges and `$densify` share:
//! units of a day or more count in the zone's calendar (a day across a DST change is 23 or 25
//! hours; a month added to the 31st ends on the month's last day), smaller units are fixed
//! lengths of time, as in mongod's `date_time_support`.
//!
//! Owns: the unit names, adding units (total: `None` past the range of dates), counting unit
//! boundaries between two instants, and the start of an instant's bin. Does not own: how an
//! operator reads its arguments or which of its errors a bad argument gets (`query::expr`,
//! `pipeline`).

use super::civil::{days_from_civil, days_in_month, Local, DAY_MS};
use super::zone::Zone;
use crate::error::{Error, ErrorCode, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
}

/// ISO day number of Sunday, the first day of a week unless `startOfWeek` says otherwise.
pub const SUNDAY: i64 = 7;

/// Years either side of 1970 past which no BSON date lies (±292,277,026 years): a date moved
/// further is not representable, and stopping there keeps the civil arithmetic (and a named
/// zone's lookup of the result) inside `i64`.
const MAX_YEARS_FROM_EPOCH: i64 = 300_000_000;

impl TimeUnit {
    /// The unit `name` names, as mongod's `parseTimeUnit`.
    pub fn named(name: &str) -> Option<TimeUnit> {
        Some(match name {
            "year" => TimeUnit::Year,
            "quarter" => TimeUnit::Quarter,
            "month" => TimeUnit::Month,
            "week" => TimeUnit::Week,
            "day" => TimeUnit::Day,
            "hour" => TimeUnit::Hour,
            "minute" => TimeUnit::Minute,
            "second" => TimeUnit::Second,
            "millisecond" => TimeUnit::Millisecond,
            _ => return None,
        })
    }

    /// As [`TimeUnit::named`], with mongod's FailedToParse for an unknown name (what
    /// `$dateAdd`, window ranges and `$densify` answer).
    pub fn parse(name: &str) -> Result<TimeUnit> {
        TimeUnit::named(name)
            .ok_or_else(|| Error::failed_to_parse(format!("unknown time unit value: {name}")))
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Year => "year",
            TimeUnit::Quarter => "quarter",
            TimeUnit::Month => "month",
            TimeUnit::Week => "week",
            TimeUnit::Day => "day",
            TimeUnit::Hour => "hour",
            TimeUnit::Minute => "minute",
            TimeUnit::Second => "second",
            TimeUnit::Millisecond => "millisecond",
        }
    }

    /// The length of a unit shorter than a day: the same in every zone.
    pub fn fixed_millis(self) -> Option<i64> {
        match self {
            TimeUnit::Hour => Some(3_600_000),
            TimeUnit::Minute => Some(60_000),
            TimeUnit::Second => Some(1000),
            TimeUnit::Millisecond => Some(1),
            _ => None,
        }
    }

    /// The length of a unit in UTC, where days and weeks are fixed too (`$derivative` and
    /// `$integral` take week or smaller); `None` for months, quarters and years.
    pub fn utc_millis(self) -> Option<i64> {
        match self {
            TimeUnit::Week => Some(7 * DAY_MS),
            TimeUnit::Day => Some(DAY_MS),
            other => other.fixed_millis(),
        }
    }

    /// The months a unit of the month family spans.
    fn months(self) -> Option<i64> {
        match self {
            TimeUnit::Year => Some(12),
            TimeUnit::Quarter => Some(3),
            TimeUnit::Month => Some(1),
            _ => None,
        }
    }
}

/// `date` plus `amount` `unit`s in `zone`, as mongod's `dateAdd`: the calendar units move the
/// civil date in the zone and keep the time of day, clamping the day to the target month's
/// last. `None` when the result is not a representable date.
pub fn add(date: i64, unit: TimeUnit, amount: i64, zone: &Zone) -> Option<i64> {
    if let Some(len) = unit.fixed_millis() {
        let sum = i128::from(date) + i128::from(amount) * i128::from(len);
        return i64::try_from(sum).ok();
    }
    let l = zone.local(date);
    let days = match unit.months() {
        None => {
            let per = if unit == TimeUnit::Week { 7 } else { 1 };
            i128::from(l.days()) + i128::from(amount) * per
        }
        Some(per) => {
            let months = i128::from(amount) * i128::from(per) + i128::from(l.month);
            let year = i128::from(l.year) + (months - 1).div_euclid(12);
            if year.abs() > i128::from(MAX_YEARS_FROM_EPOCH) {
                return None;
            }
            let y = i64::try_from(year).ok()?;
            let m = i64::try_from((months - 1).rem_euclid(12) + 1).ok()?;
            i128::from(days_from_civil(y, m, l.day.min(days_in_month(y, m))))
        }
    };
    if days.abs() > i128::from(MAX_YEARS_FROM_EPOCH) * 366 {
        return None;
    }
    let local = days.checked_mul(i128::from(DAY_MS))? + i128::from(l.time_of_day_millis());
    zone.instant(local)
}

/// Whole weeks between two local dates, weeks starting on `start_of_week` (ISO day number).
fn week_diff(a: &Local, b: &Local, start_of_week: i64) -> i64 {
    let dow = |l: &Local| (l.iso_day_of_week() - start_of_week + 7) % 7;
    (b.days() - a.days() + dow(a) - dow(b)) / 7
}

/// The number of `unit` boundaries crossed from `a` to `b` in `zone`, as mongod's
/// `dateDiff`; `start_of_week` (ISO day number) counts only for weeks. 5166308 when the
/// milliseconds between them do not fit.
pub fn diff(a: i64, b: i64, unit: TimeUnit, zone: &Zone, start_of_week: i64) -> Result<i64> {
    if unit == TimeUnit::Millisecond {
        return b
            .checked_sub(a)
            .ok_or_else(|| Error::new(ErrorCode::Location5166308, "dateDiff overflowed"));
    }
    let (s, e) = (zone.local(a), zone.local(b));
    let days = e.days() - s.days();
    let hours = e.hour - s.hour + days * 24;
    let minutes = e.minute - s.minute + hours * 60;
    // Offsets differ across a DST change: count elapsed time, not wall-clock time.
    let correction = s.offset - e.offset;
    Ok(match unit {
        TimeUnit::Year => e.year - s.year,
        TimeUnit::Quarter => (e.month - 1) / 3 - (s.month - 1) / 3 + (e.year - s.year) * 4,
        TimeUnit::Month => e.month - s.month + (e.year - s.year) * 12,
        TimeUnit::Week => week_diff(&s, &e, start_of_week),
        TimeUnit::Day => days,
        TimeUnit::Hour => hours + correction / 3600,
        TimeUnit::Minute => minutes + correction / 60,
        _ => e.second - s.second + minutes * 60 + correction,
    })
}

/// mongod's bound on a `$dateAdd` `amount` for each unit: roughly what fits in a date.
fn amount_in_range(amount: i64, unit: TimeUnit) -> bool {
    const MAX_DAYS: i64 = (u64::MAX / 86_400_000) as i64 + 1;
    const MAX_YEARS: i64 = MAX_DAYS / 365 + 1;
    let max = match unit {
        TimeUnit::Year => MAX_YEARS,
        TimeUnit::Quarter => MAX_YEARS * 4,
        TimeUnit::Month => MAX_YEARS * 12,
        TimeUnit::Week => MAX_DAYS / 7,
        TimeUnit::Day => MAX_DAYS,
        TimeUnit::Hour => MAX_DAYS * 24,
        TimeUnit::Minute => MAX_DAYS * 24 * 60,
        TimeUnit::Second => MAX_DAYS * 24 * 60 * 60,
        TimeUnit::Millisecond => return true,
    };
    -max < amount && amount < max
}

/// [`add`] with the checks and errors of mongod's `$dateAdd`: 5976500 for an amount no date
/// could move by, 5166406 when the result is not a date.
pub fn checked_add(date: i64, unit: TimeUnit, amount: i64, zone: &Zone) -> Result<i64> {
    if !amount_in_range(amount, unit) {
        return Err(Error::new(
            ErrorCode::Location5976500,
            format!(
                "invalid dateAdd 'amount' parameter value: {amount} {}",
                unit.name()
            ),
        ));
    }
    add(date, unit, amount, zone)
        .ok_or_else(|| Error::new(ErrorCode::Location5166406, "dateAdd overflowed"))
}

/// 2000-01-01T00:00:00Z, the reference point bins are aligned to.
const REFERENCE_MS: i64 = 946_684_800_000;

/// The start of the `bin_size`-`unit` bin `date` falls in, in `zone`, as mongod's
/// `truncateDate` (`$dateTrunc`); `bin_size` is positive. Bins are counted from 2000-01-01
/// 00:00 in the zone (for weeks, from the first `start_of_week` on or after it).
pub fn truncate(
    date: i64,
    unit: TimeUnit,
    bin_size: i64,
    zone: &Zone,
    start_of_week: i64,
) -> Result<i64> {
    let overflow = |code| Error::new(code, "dateTrunc overflowed");
    let mut reference = REFERENCE_MS - zone.offset_at(REFERENCE_MS) * 1000;
    if let Some(len) = unit.fixed_millis() {
        let bin = bin_size
            .checked_mul(len)
            .ok_or_else(|| overflow(ErrorCode::Location5439002))?;
        let shifted = date
            .checked_sub(reference)
            .ok_or_else(|| overflow(ErrorCode::Location5439000))?;
        return date
            .checked_sub(shifted.rem_euclid(bin))
            .ok_or_else(|| overflow(ErrorCode::Location5439001));
    }
    if bin_size > 100_000_000_000 {
        return Err(Error::new(
            ErrorCode::Location5439006,
            "dateTrunc unsupported binSize value",
        ));
    }
    let mut ref_day = 1;
    if unit == TimeUnit::Week {
        // 2000-01-01 was a Saturday, ISO day 6.
        let ref_dow = (6 - start_of_week + 7) % 7;
        let adjust = (7 - ref_dow) % 7;
        reference += adjust * DAY_MS;
        ref_day += adjust;
    }
    let r = Local {
        year: 2000,
        month: 1,
        day: ref_day,
        ..Local::at(0, 0)
    };
    let l = zone.local(date);
    let distance = match unit {
        TimeUnit::Day => l.days() - r.days(),
        TimeUnit::Week => week_diff(&r, &l, start_of_week),
        TimeUnit::Month => l.month - r.month + (l.year - r.year) * 12,
        TimeUnit::Quarter => (l.month - 1) / 3 + (l.year - r.year) * 4,
        _ => l.year - r.year,
    };
    let lower = distance - distance.rem_euclid(bin_size);
    checked_add(reference, unit, lower, zone)
}
