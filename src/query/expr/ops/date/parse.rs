//! `$dateFromString`, and reading a date from a string: with a format (the specifiers
//! `%b %B %d %G %H %j %L %m %M %S %u %V %Y %z %Z %%`, as mongod 7.0) or without one (the
//! forms `free_form` knows). Every failure to read the string is 241 ConversionFailure,
//! which `onError` catches.

use super::super::super::value::type_name;
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use super::format::check_format;
use super::scan::{check_valid, month_number, Cursor, ParseError, Parsed, StringZone};
use super::{eval_opt, free_form, present, shown, Fields, ZoneArg};
use crate::calendar::civil::DAY_MS;
use crate::calendar::civil::{
    civil_from_days, days_from_civil, days_from_iso, local_millis, Local,
};
use crate::calendar::Zone;
use crate::error::{Error, ErrorCode, Result};
use bson::Bson;

/// The specifiers `$dateFromString`'s `format` accepts.
const FROM_STRING_SPECIFIERS: &str = "bBdGHjLmMSuVYzZ";

pub(super) fn conversion(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::ConversionFailure, message)
}

/// The instant `s` names, read with `format` (or without one), in `zone` unless the string
/// names its own.
pub(super) fn from_string(s: &str, zone: &Zone, format: Option<&str>) -> Result<i64> {
    let parsed = match format {
        None => free_form::parse(s),
        Some(f) => with_format(s, f),
    };
    let mut p = parsed.map_err(|e| {
        let at: String = s
            .get(e.pos..)
            .and_then(|r| r.chars().next())
            .into_iter()
            .collect();
        conversion(format!(
            "Error parsing date string '{s}'; {}: {} '{at}'",
            e.pos, e.message
        ))
    })?;
    if p.hour.is_none() && p.minute.is_none() && p.second.is_none() {
        (p.hour, p.minute, p.second, p.millis) = (Some(0), Some(0), Some(0), Some(0));
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) =
        (p.year, p.month, p.day, p.hour, p.minute, p.second)
    else {
        return Err(conversion(format!(
            "an incomplete date/time string has been found, with elements missing: \"{s}\""
        )));
    };
    if !zone.is_utc() {
        match &p.zone {
            None => {}
            Some(StringZone::Offset(_)) => {
                return Err(conversion(
                    "you cannot pass in a date/time string with GMT offset together with a \
                     timezone argument",
                ))
            }
            Some(StringZone::Abbr(abbr, _)) => {
                return Err(conversion(format!(
                    "you cannot pass in a date/time string with time zone information \
                     ('{abbr}') together with a timezone argument"
                )))
            }
        }
    }
    let mut days = days_from_civil(year, month, day);
    if let Some(weekday) = p.weekday {
        let current = Local::at(days * DAY_MS, 0).day_of_week();
        days += (weekday - current).rem_euclid(7);
    }
    let local_ms = local_millis(days, hour, minute, second, p.millis.unwrap_or(0));
    let instant = match &p.zone {
        Some(StringZone::Offset(o) | StringZone::Abbr(_, o)) => {
            i64::try_from(local_ms - i128::from(*o) * 1000).ok()
        }
        None => zone.instant(local_ms),
    };
    instant.ok_or_else(|| conversion(format!("Error parsing date string '{s}'")))
}

fn with_format(s: &str, format: &str) -> std::result::Result<Parsed, ParseError> {
    let mut c = Cursor {
        bytes: s.as_bytes(),
        pos: 0,
    };
    let mut p = Parsed::default();
    let (mut iso_year, mut iso_week, mut iso_day) = (None, None, None);
    let mut f = format.chars();
    while let Some(fc) = f.next() {
        if fc != '%' {
            let mut buf = [0; 4];
            let lit = fc.encode_utf8(&mut buf).as_bytes();
            if c.bytes.get(c.pos..c.pos + lit.len()) != Some(lit) {
                return Err(c.error(if " ;:/.,-()".contains(fc) {
                    "The separation symbol ([;:/.,-]) could not be found"
                } else {
                    "The format separator does not match"
                }));
            }
            c.pos += lit.len();
            continue;
        }
        let spec = f.next().unwrap_or('%');
        let need = |v: Option<i64>, c: &Cursor<'_>, m| v.ok_or_else(|| c.error(m));
        match spec {
            'd' => p.day = Some(need(c.number(2), &c, "A two digit day could not be found")?),
            'm' => {
                p.month = Some(need(
                    c.number(2),
                    &c,
                    "A two digit month could not be found",
                )?)
            }
            'Y' => {
                p.year = Some(need(
                    c.number(4),
                    &c,
                    "A four digit year could not be found",
                )?)
            }
            'H' => {
                p.hour = Some(need(
                    c.number(2),
                    &c,
                    "A two digit hour could not be found",
                )?)
            }
            'M' => {
                p.minute = Some(need(
                    c.number(2),
                    &c,
                    "A two digit minute could not be found",
                )?)
            }
            'S' => {
                p.second = Some(need(
                    c.number(2),
                    &c,
                    "A two digit second could not be found",
                )?)
            }
            'L' => {
                p.millis = Some(need(
                    c.number(3),
                    &c,
                    "A three digit millisecond could not be found",
                )?)
            }
            'G' => {
                iso_year = Some(need(
                    c.number(4),
                    &c,
                    "A four digit ISO year could not be found",
                )?)
            }
            'V' => {
                iso_week = Some(need(
                    c.number(2),
                    &c,
                    "A two digit ISO week could not be found",
                )?)
            }
            'u' => {
                iso_day = Some(need(
                    c.number(1),
                    &c,
                    "A single digit day of week could not be found",
                )?)
            }
            'j' => {
                let n = need(
                    c.number(3),
                    &c,
                    "A three digit day-of-year could not be found",
                )?;
                let Some(year) = p.year else {
                    return Err(
                        c.error("A 'day of year' can only come after a year has been found")
                    );
                };
                // timelib counts this day from 0, as PHP's `z`.
                let (y, m, d) = civil_from_days(days_from_civil(year, 1, 1) + n);
                (p.year, p.month, p.day) = (Some(y), Some(m), Some(d));
            }
            'b' | 'B' => {
                let start = c.pos;
                let word = c.word().to_owned();
                match month_number(&word) {
                    Some(m) => p.month = Some(m),
                    None => {
                        c.pos = start;
                        return Err(c.error("A textual month could not be found"));
                    }
                }
            }
            'z' => p.zone = Some(free_form::zone(&mut c)?),
            'Z' => {
                let negative = match c.peek() {
                    Some(b'-') => true,
                    Some(b'+') => false,
                    _ => return Err(c.error("Missing expected sign")),
                };
                c.pos += 1;
                let minutes = need(c.digits(4), &c, "A minute offset could not be found")?;
                p.zone = Some(StringZone::Offset(
                    if negative { -minutes } else { minutes } * 60,
                ));
            }
            _ => {
                if c.peek() != Some(b'%') {
                    return Err(c.error("The escaped character could not be found"));
                }
                c.pos += 1;
            }
        }
    }
    if c.pos < c.bytes.len() {
        return Err(c.error("Trailing data"));
    }
    if let Some(year) = iso_year {
        let days = days_from_iso(year, iso_week.unwrap_or(1), iso_day.unwrap_or(1));
        let (y, m, d) = civil_from_days(days);
        (p.year, p.month, p.day) = (Some(y), Some(m), Some(d));
    }
    if p.hour.is_some() || p.minute.is_some() || p.second.is_some() || p.millis.is_some() {
        p.hour = p.hour.or(Some(0));
        p.minute = p.minute.or(Some(0));
        p.second = p.second.or(Some(0));
    }
    check_valid(&p).map_err(|m| c.error(m))?;
    Ok(p)
}

#[derive(Debug)]
struct DateFromString {
    date_string: Node,
    zone: ZoneArg,
    format: Option<Node>,
    on_null: Option<Node>,
    on_error: Option<Node>,
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    (name == "$dateFromString").then(|| compile_from_string(arg, c))
}

fn compile_from_string(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location40540,
            format!(
                "$dateFromString only supports an object as an argument, found: {}",
                crate::query::path::type_name(arg)
            ),
        ));
    };
    let known = ["format", "dateString", "timezone", "onNull", "onError"];
    let mut f = Fields::compile(d, &known, c, |k| {
        Error::new(
            ErrorCode::Location40541,
            format!("Unrecognized argument to $dateFromString: {k}"),
        )
    })?;
    let date_string = f.require("dateString", || {
        Error::new(
            ErrorCode::Location40542,
            "Missing 'dateString' parameter to $dateFromString",
        )
    })?;
    Ok(op(DateFromString {
        date_string,
        zone: ZoneArg::new(f.take("timezone")),
        format: f.take("format"),
        on_null: f.take("onNull"),
        on_error: f.take("onError"),
    }))
}

impl Operator for DateFromString {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let date_string = self.date_string.eval(cx)?;
        // The format is checked first; null defers to the date string's null.
        let format = match eval_opt(&self.format, cx)? {
            None => Ok(None),
            Some(v) => match present(v.clone()) {
                None => Err(()),
                Some(Bson::String(s)) => {
                    check_format(&s, FROM_STRING_SPECIFIERS)?;
                    Ok(Some(s))
                }
                Some(_) => {
                    return Err(Error::new(
                        ErrorCode::Location40684,
                        format!(
                            "$dateFromString requires that 'format' be a string, found: {} \
                             with value {}",
                            type_name(&v),
                            shown(&v)
                        ),
                    ))
                }
            },
        };
        let zone = self.zone.eval(cx)?;
        let Some(date_string) = present(date_string) else {
            return match &self.on_null {
                Some(on_null) => on_null.eval(cx),
                None => Ok(Some(Bson::Null)),
            };
        };
        let result = (|| {
            let Bson::String(s) = &date_string else {
                return Err(conversion(format!(
                    "$dateFromString requires that 'dateString' be a string, found: {} with \
                     value {}",
                    crate::query::path::type_name(&date_string),
                    shown(&Some(date_string.clone()))
                )));
            };
            let (Some(zone), Ok(format)) = (zone, format) else {
                return Ok(None);
            };
            from_string(s, &zone, format.as_deref()).map(Some)
        })();
        match result {
            Ok(Some(ms)) => Ok(Some(Bson::DateTime(bson::DateTime::from_millis(ms)))),
            Ok(None) => Ok(Some(Bson::Null)),
            Err(e) if e.code == ErrorCode::ConversionFailure => match &self.on_error {
                Some(on_error) => on_error.eval(cx),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }
}
