//! Proleptic Gregorian calendar arithmetic on plain integers: days since the epoch to and from
//! year/month/day, and the week numbers mongod computes. Pure and total over the whole range of
//! BSON dates (±292 million years); knows nothing of time zones.

/// Milliseconds in a day.
pub(super) const DAY_MS: i64 = 86_400_000;

/// Days from 1970-01-01 to `year-month-day`; `month` in 1..=12, `day` may run past the month
/// (day 0 is the last day of the month before).
pub(super) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + (day - 1)
}

/// The year, month (1..=12) and day (1..=31) of a day counted from 1970-01-01.
pub(super) fn civil_from_days(days: i64) -> (i64, i64, i64) {
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
pub(super) fn normalize_month(year: i64, month: i64) -> (i64, i64) {
    let m0 = month - 1;
    (year + m0.div_euclid(12), m0.rem_euclid(12) + 1)
}

pub(super) fn is_leap(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

pub(super) fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The civil fields of an instant seen at some UTC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Local {
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
    pub(super) fn at(ms: i64, offset: i64) -> Local {
        let secs = ms.div_euclid(1000) + offset;
        let days = secs.div_euclid(86_400);
        let in_day = secs.rem_euclid(86_400);
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

    pub(super) fn days(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// Day of the year, 1..=366.
    pub(super) fn day_of_year(&self) -> i64 {
        self.days() - days_from_civil(self.year, 1, 1) + 1
    }

    /// Day of the week, 1 (Sunday) ..= 7 (Saturday).
    pub(super) fn day_of_week(&self) -> i64 {
        // 1970-01-01 was a Thursday (5).
        (self.days() + 4).rem_euclid(7) + 1
    }

    /// ISO day of the week, 1 (Monday) ..= 7 (Sunday).
    pub(super) fn iso_day_of_week(&self) -> i64 {
        (self.days() + 3).rem_euclid(7) + 1
    }

    /// Week of the year, 0..=53, weeks starting on Sunday (mongod's `$week`).
    pub(super) fn week(&self) -> i64 {
        let prev_sunday = self.day_of_year() - self.day_of_week();
        (prev_sunday + 7) / 7
    }

    /// The ISO 8601 week-numbering year and week (1..=53).
    pub(super) fn iso_week(&self) -> (i64, i64) {
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
pub(super) fn days_from_iso(iso_year: i64, iso_week: i64, iso_day: i64) -> i64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips() {
        for days in [
            -1_000_000_000_i64,
            -719_468,
            -1,
            0,
            1,
            10_957,
            2_932_896,
            1_000_000_000,
        ] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{days}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(days_from_civil(2021, 3, 0), days_from_civil(2021, 2, 28));
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
    }
}
