//! Time zones as mongod names them: `UTC`, an Olson identifier (matched exactly, case
//! included), or a fixed offset `+hh`, `+hhmm`, `+hh:mm`; anything else is 40485. This is the
//! one place a user's `timezone` string becomes a zone. Olson zones come from the IANA
//! database compiled into the binary (jiff's bundled copy), so no system tzdata is read.
//! Owns: an instant's UTC offset in a zone, its civil fields there, and the instant of a civil
//! time (a time in a DST gap is read at the offset before the gap, so it lands that much
//! later; an ambiguous one takes the earlier instant, as timelib does). Does not own: the
//! calendar (`civil`), nor how an operator reads its `timezone` operand (`query::expr`).

use super::civil::{civil_from_days, Local, DAY_SECONDS};
use crate::error::{Error, ErrorCode, Result};
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// A time zone an operator works in.
#[derive(Debug, Clone)]
pub enum Zone {
    /// UTC: no zone given, `"UTC"`, or a zero offset.
    Utc,
    /// A fixed offset from UTC, in seconds east.
    Offset(i64),
    /// An Olson zone.
    Named(TimeZone),
}

impl Zone {
    /// Resolves a time zone name with mongod's rules.
    pub fn parse(name: &str) -> Result<Zone> {
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

    /// Whether this is UTC itself (a string naming its own offset may only meet UTC).
    pub fn is_utc(&self) -> bool {
        matches!(self, Zone::Utc)
    }

    /// The UTC offset (seconds east) in effect at the instant `ms`.
    pub fn offset_at(&self, ms: i64) -> i64 {
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
    pub fn local(&self, ms: i64) -> Local {
        Local::at(ms, self.offset_at(ms))
    }

    /// The instant (milliseconds since the epoch) of the civil time `local_ms` (milliseconds
    /// since the local epoch) in this zone; `None` when it is not a representable date.
    pub fn instant(&self, local_ms: i128) -> Option<i64> {
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
    let days = i64::try_from(local_secs.div_euclid(i128::from(DAY_SECONDS))).ok()?;
    let in_day = i64::try_from(local_secs.rem_euclid(i128::from(DAY_SECONDS))).ok()?;
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
