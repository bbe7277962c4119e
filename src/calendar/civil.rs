//! The proleptic Gregorian calendar on plain integers: days since the epoch to and from
//! year/month/day (astronomical years: year 0 is 1 BC and
//! negative years run on before it, as mongod's `$year` reports them), leap years and month lengths, an instant's civil fields at a UTC offset, and the
//! week numbers mongod computes (`$week`, ISO 8601 weeks). Total over the whole range of BSON
//! dates (±292 million years). Does not own: time zones (`zone`), unit arithmetic (`unit`).

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// Seconds in a day.
pub const DAY_SECONDS: i64 = 86_400;

/// Days from 1970-01-01 to `year-month-day`; `month` in 1..=12, `day` may run past the month
/// (day 0 is the last day of the month before).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + (day - 1)
}

/// The year, month (1..=12) and day (1..=31) of a day counted from 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Normalises a month that may lie outside 1..=12 into the year.
pub fn normalize_month(year: i64, month: i64) -> (i64, i64) {
    let m0 = month - 1;
    (year + m0.div_euclid(12), m0.rem_euclid(12) + 1)
}

/// Whether `year` has a 29 February (proleptic Gregorian: year 0 and -4 do, 1900 does not).
pub fn is_leap(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

/// The days of `month` (1..=12) of `year`.
pub fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Milliseconds since the local epoch of a civil time: `days` since 1970-01-01 and a time of
/// day whose fields may run past their ranges (mongod's `$dateFromParts` lets them). In
/// `i128`, so no field overflows.
pub fn local_millis(days: i64, hour: i64, minute: i64, second: i64, millis: i64) -> i128 {
    ((i128::from(days) * i128::from(DAY_SECONDS)
        + i128::from(hour) * 3600
        + i128::from(minute) * 60
        + i128::from(second))
        * 1000)
        + i128::from(millis)
}

/// The civil fields of an instant seen at some UTC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Local {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub millisecond: i64,
    /// The UTC offset in seconds, east positive.
    pub offset: i64,
}

impl Local {
    /// The fields of the instant `ms` (milliseconds since the epoch) at UTC offset `offset`
    /// (seconds). Works in seconds, so no instant overflows.
    pub fn at(ms: i64, offset: i64) -> Local {
        let secs = ms.div_euclid(1000) + offset;
        let days = secs.div_euclid(DAY_SECONDS);
        let in_day = secs.rem_euclid(DAY_SECONDS);
        let (year, month, day) = civil_from_days(days);
        Local {
            year,
            month,
            day,
            hour: in_day / 3600,
            minute: in_day / 60 % 60,
            second: in_day % 60,
            millisecond: ms.rem_euclid(1000),
            offset,
        }
    }

    /// Days from 1970-01-01 to this date.
    pub fn days(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// Day of the year, 1..=366.
    pub fn day_of_year(&self) -> i64 {
        self.days() - days_from_civil(self.year, 1, 1) + 1
    }

    /// Milliseconds since midnight.
    pub fn time_of_day_millis(&self) -> i64 {
        ((self.hour * 60 + self.minute) * 60 + self.second) * 1000 + self.millisecond
    }

    /// Day of the week, 1 (Sunday) ..= 7 (Saturday).
    pub fn day_of_week(&self) -> i64 {
        // 1970-01-01 was a Thursday (5).
        (self.days() + 4).rem_euclid(7) + 1
    }

    /// ISO day of the week, 1 (Monday) ..= 7 (Sunday).
    pub fn iso_day_of_week(&self) -> i64 {
        (self.days() + 3).rem_euclid(7) + 1
    }

    /// Week of the year, 0..=53, weeks starting on Sunday (mongod's `$week`).
    pub fn week(&self) -> i64 {
        let prev_sunday = self.day_of_year() - self.day_of_week();
        (prev_sunday + 7) / 7
    }

    /// The ISO 8601 week-numbering year and week (1..=53).
    pub fn iso_week(&self) -> (i64, i64) {
        let days = self.days();
        // The Thursday of this ISO week decides its year.
        let thursday = days - self.iso_day_of_week() + 4;
        let (iso_year, _, _) = civil_from_days(thursday);
        let week = (thursday - days_from_civil(iso_year, 1, 1)) / 7 + 1;
        (iso_year, week)
    }
}

/// Days from the epoch to the day `iso_day` (1 = Monday) of week `iso_week` of `iso_year`;
/// weeks and days past their ranges run on into the next ones.
pub fn days_from_iso(iso_year: i64, iso_week: i64, iso_day: i64) -> i64 {
    let jan1 = days_from_civil(iso_year, 1, 1);
    // ISO day of the week of 1 January, 1 (Monday) ..= 7.
    let dow = (jan1 + 3).rem_euclid(7) + 1;
    let week1_monday = if dow <= 4 {
        jan1 - (dow - 1)
    } else {
        jan1 + (8 - dow)
    };
    week1_monday + (iso_week - 1) * 7 + (iso_day - 1)
}
