//! The reader `$dateFromString`'s two parsers share: a cursor over the string's bytes, the
//! fields a string gave, the zone it named, and timelib's checks of the fields. Owns: the
//! reading primitives. Does not own: either grammar (`parse` for formats, `free_form` without
//! one), nor turning the fields into an instant (`parse`, through `crate::calendar`).

use super::format::MONTHS;
use crate::calendar::civil::days_in_month;

/// A zone the date string names itself.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum StringZone {
    /// A UTC offset (`+02:00`, `GMT-5`), in seconds.
    Offset(i64),
    /// An abbreviation (`Z`, `UTC`, `EDT`) and its offset in seconds.
    Abbr(String, i64),
}

/// What a string gave; `None` for what it did not.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub year: Option<i64>,
    pub month: Option<i64>,
    pub day: Option<i64>,
    pub hour: Option<i64>,
    pub minute: Option<i64>,
    pub second: Option<i64>,
    pub millis: Option<i64>,
    pub zone: Option<StringZone>,
    /// A weekday name: the date moves forward to it (1 = Sunday).
    pub weekday: Option<i64>,
}

/// A failure to read a string: where, and why.
pub(super) struct ParseError {
    pub pos: usize,
    pub message: &'static str,
}

/// Checks the parsed fields as timelib does: a time of day and a calendar date that exist.
pub(super) fn check_valid(p: &Parsed) -> std::result::Result<(), &'static str> {
    if let (Some(h), Some(i), Some(s)) = (p.hour, p.minute, p.second) {
        if !(0..=23).contains(&h) || !(0..=59).contains(&i) || !(0..=59).contains(&s) {
            return Err("The parsed time was invalid");
        }
    }
    if let (Some(y), Some(m), Some(d)) = (p.year, p.month, p.day) {
        if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
            return Err("The parsed date was invalid");
        }
    }
    Ok(())
}

/// A month name, full or its first three letters, any case; its number.
pub(super) fn month_number(word: &str) -> Option<i64> {
    let lower = word.to_ascii_lowercase();
    MONTHS.iter().zip(1..).find_map(|(name, n)| {
        let name = name.to_ascii_lowercase();
        (lower == name
            || (lower.len() == 3 && name.starts_with(&lower))
            || lower == "sept" && n == 9)
            .then_some(n)
    })
}

/// A cursor over the bytes of a date string.
pub(super) struct Cursor<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
}

impl Cursor<'_> {
    pub fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    pub fn error(&self, message: &'static str) -> ParseError {
        ParseError {
            pos: self.pos,
            message,
        }
    }

    /// Up to `max` digits; `None` when there is none.
    pub fn digits(&mut self, max: usize) -> Option<i64> {
        let start = self.pos;
        let mut n: i64 = 0;
        while self.pos - start < max {
            match self.peek() {
                Some(b) if b.is_ascii_digit() => {
                    n = n * 10 + i64::from(b - b'0');
                    self.pos += 1;
                }
                _ => break,
            }
        }
        (self.pos > start).then_some(n)
    }

    /// timelib's number reading: skips anything before the first digit.
    pub fn number(&mut self, max: usize) -> Option<i64> {
        while self.peek().is_some_and(|b| !b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.digits(max)
    }

    /// A run of ASCII letters.
    pub fn word(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
            self.pos += 1;
        }
        std::str::from_utf8(self.bytes.get(start..self.pos).unwrap_or_default()).unwrap_or("")
    }

    /// Milliseconds from the digits of a fraction of a second.
    pub fn fraction_millis(&mut self) -> i64 {
        let start = self.pos;
        let mut millis = 0;
        while let Some(b) = self.peek().filter(u8::is_ascii_digit) {
            if self.pos - start < 3 {
                millis = millis * 10 + i64::from(b - b'0');
            }
            self.pos += 1;
        }
        let read = (self.pos - start).min(3);
        millis * 10_i64.pow(3 - u32::try_from(read).unwrap_or(3))
    }

    /// A zone offset after its sign: `H`, `HH`, `HHMM`, `HMM`, `HH:MM`; in seconds.
    pub fn offset(&mut self, negative: bool) -> Option<i64> {
        let start = self.pos;
        let n = self.digits(4)?;
        let (hours, minutes) = match self.pos - start {
            1 | 2 if self.peek() == Some(b':') => {
                self.pos += 1;
                (n, self.digits(2)?)
            }
            1 | 2 => (n, 0),
            _ => (n / 100, n % 100),
        };
        let seconds = hours * 3600 + minutes * 60;
        Some(if negative { -seconds } else { seconds })
    }
}
