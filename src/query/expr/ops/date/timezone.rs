//! Time zones as mongod names them: `UTC`, an Olson identifier (matched exactly, case
//! included), or a fixed offset `+hh`, `+hhmm`, `+hh:mm`; anything else is 40485. Olson zones
//! come from the IANA database compiled into the binary (jiff's bundled copy), so no system
//! tzdata is read. Owns: an instant's UTC offset in a zone, its civil fields there, and the
//! instant of a civil time (a time in a DST gap moves forward, an ambiguous one takes the
//! earlier instant, as timelib does). Does not own: calendar arithmetic (`civil`).

use super::civil::{civil_from_days, Local};
use crate::error::{Error, ErrorCode, Result};
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// A time zone an operator works in.
#[derive(Debug, Clone)]
pub(super) enum Zone {
    /// UTC: no zone given, `"UTC"`, or a zero offset.
    Utc,
    /// A fixed offset from UTC, in seconds east.
    Offset(i64),
    /// An Olson zone.
    Named(TimeZone),
}

impl Zone {
    /// Resolves a time zone name with mongod's rules.
    pub(super) fn parse(name: &str) -> Result<Zone> {
        if name == "UTC" {
            return Ok(Zone::Utc);
        }
        // jiff matches names without regard to case; mongod does not.
        if let Ok(tz) = TimeZone::get(name) {
            if tz.iana_name() == Some(name) {
                return Ok(Zone::Named(tz));
            }
        }
        match parse_offset(name) {
            Some(0) => Ok(Zone::Utc),
            Some(seconds) => Ok(Zone::Offset(seconds)),
            None => Err(Error::new(
                ErrorCode::Location40485,
                format!("unrecognized time zone identifier: \"{name}\""),
            )),
        }
    }

    pub(super) fn is_utc(&self) -> bool {
        matches!(self, Zone::Utc)
    }

    /// The UTC offset (seconds east) in effect at the instant `ms`.
    pub(super) fn offset_at(&self, ms: i64) -> i64 {
        match self {
            Zone::Utc => 0,
            Zone::Offset(seconds) => *seconds,
            Zone::Named(tz) => {
                // Beyond the years jiff represents (±9999) the rules of its ends hold.
                let clamped = ms.clamp(
                    Timestamp::MIN.as_millisecond(),
                    Timestamp::MAX.as_millisecond(),
                );
                Timestamp::from_millisecond(clamped)
                    .map_or(0, |ts| i64::from(tz.to_offset(ts).seconds()))
            }
        }
    }

    /// The civil fields of the instant `ms` in this zone.
    pub(super) fn local(&self, ms: i64) -> Local {
        Local::at(ms, self.offset_at(ms))
    }

    /// The instant (milliseconds since the epoch) of the civil time `local_ms` (milliseconds
    /// since the local epoch) in this zone; `None` when it is not a representable date.
    pub(super) fn instant(&self, local_ms: i128) -> Option<i64> {
        let offset = match self {
            Zone::Utc => 0,
            Zone::Offset(seconds) => *seconds,
            Zone::Named(tz) => named_offset(tz, local_ms.div_euclid(1000))?,
        };
        i64::try_from(local_ms - i128::from(offset) * 1000).ok()
    }
}

/// The offset a civil time (seconds since the local epoch) takes in `tz`.
fn named_offset(tz: &TimeZone, local_secs: i128) -> Option<i64> {
    let days = i64::try_from(local_secs.div_euclid(86_400)).ok()?;
    let in_day = i64::try_from(local_secs.rem_euclid(86_400)).ok()?;
    let (year, month, day) = civil_from_days(days);
    let civil = (|| {
        DateTime::new(
            i16::try_from(year).ok()?,
            i8::try_from(month).ok()?,
            i8::try_from(day).ok()?,
            i8::try_from(in_day / 3600).ok()?,
            i8::try_from(in_day / 60 % 60).ok()?,
            i8::try_from(in_day % 60).ok()?,
            0,
        )
        .ok()
    })();
    let local_secs = i64::try_from(local_secs).ok()?;
    match civil.and_then(|dt| tz.to_ambiguous_timestamp(dt).compatible().ok()) {
        Some(ts) => Some(local_secs - ts.as_second()),
        // Outside jiff's years: the offset at the nearest end of its range.
        None => {
            let end = if year < 0 {
                Timestamp::MIN
            } else {
                Timestamp::MAX
            };
            Some(i64::from(tz.to_offset(end).seconds()))
        }
    }
}

/// `±HH`, `±HHMM` or `±HH:MM`, in seconds east of UTC.
fn parse_offset(spec: &str) -> Option<i64> {
    let bytes = spec.as_bytes();
    let (&sign, rest) = bytes.split_first()?;
    let bias = match sign {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = |s: &[u8]| -> Option<i64> {
        s.iter().try_fold(0_i64, |n, &b| {
            b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0'))
        })
    };
    let (hours, minutes) = match rest {
        [h1, h2] => (digits(&[*h1, *h2])?, 0),
        [h1, h2, m1, m2] => (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?),
        [h1, h2, b':', m1, m2] => (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?),
        _ => return None,
    };
    Some(bias * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_offsets_resolve_as_mongod() {
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
            let err = Zone::parse(bad).err().map(|e| e.code);
            assert_eq!(err, Some(ErrorCode::Location40485), "{bad}");
        }
    }

    #[test]
    fn civil_times_in_dst_transitions_resolve_as_timelib() {
        let ny = Zone::parse("America/New_York").unwrap();
        // 2021-03-14 02:30 does not exist in New York: it is read at the old offset (EST),
        // 07:30Z (03:30 EDT).
        let gap =
            i128::from(super::super::civil::days_from_civil(2021, 3, 14)) * 86_400_000 + 9_000_000;
        assert_eq!(ny.instant(gap), Some(1_615_707_000_000));
        // 2021-11-07 01:30 happens twice: the earlier (EDT, 05:30Z).
        let overlap =
            i128::from(super::super::civil::days_from_civil(2021, 11, 7)) * 86_400_000 + 5_400_000;
        assert_eq!(ny.instant(overlap), Some(1_636_263_000_000));
        assert_eq!(ny.offset_at(1_636_263_000_000), -14_400);
        assert_eq!(ny.offset_at(1_636_270_200_000), -18_000);
    }
}
