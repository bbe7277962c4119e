//! `$dateToString`, and the format strings both it and `$dateFromString` take: `%` followed
//! by one of the specifiers mongod 7.0 knows (`%%` is a literal `%`).

use super::super::super::value::type_name;
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use super::{coerce_to_date, eval_opt, object_arg, present, shown, Fields, ZoneArg};
use crate::calendar::Zone;
use crate::error::{Error, ErrorCode, Result};
use bson::Bson;
use std::fmt::Write;

/// The specifiers `$dateToString` accepts.
pub(super) const TO_STRING_SPECIFIERS: &str = "bBdGHjLmMSwuUVYzZ";

/// The format used when none is given.
const DEFAULT_FORMAT: &str = "%Y-%m-%dT%H:%M:%S.%LZ";

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Checks that every `%` in `format` is followed by `%` or one of `allowed` (18535, 18536).
pub(super) fn check_format(format: &str, allowed: &str) -> Result<()> {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        match chars.next() {
            None => {
                return Err(Error::new(
                    ErrorCode::Location18535,
                    "Unmatched '%' at end of format string",
                ))
            }
            Some(s) if s == '%' || allowed.contains(s) => {}
            Some(s) => {
                return Err(Error::new(
                    ErrorCode::Location18536,
                    format!("Invalid format character '%{s}' in format string"),
                ))
            }
        }
    }
    Ok(())
}

/// `n` zero-padded to `width` digits; 18537 outside 0..=9999, as mongod.
fn padded(out: &mut String, n: i64, width: usize) -> Result<()> {
    if !(0..=9999).contains(&n) {
        return Err(Error::new(
            ErrorCode::Location18537,
            format!(
                "Could not convert date to string: date component was outside the supported \
                 range of 0-9999: {n}"
            ),
        ));
    }
    let _ = write!(out, "{n:0width$}");
    Ok(())
}

fn month_name(month: i64) -> &'static str {
    usize::try_from(month - 1)
        .ok()
        .and_then(|i| MONTHS.get(i))
        .copied()
        .unwrap_or("")
}

/// Formats the instant `ms` in `zone` with a format [`check_format`] accepted.
pub(super) fn format_date(format: &str, zone: &Zone, ms: i64) -> Result<String> {
    let l = zone.local(ms);
    let mut out = String::with_capacity(format.len() + 8);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next().unwrap_or('%') {
            'Y' => padded(&mut out, l.year, 4)?,
            'm' => padded(&mut out, l.month, 2)?,
            'd' => padded(&mut out, l.day, 2)?,
            'H' => padded(&mut out, l.hour, 2)?,
            'M' => padded(&mut out, l.minute, 2)?,
            'S' => padded(&mut out, l.second, 2)?,
            'L' => padded(&mut out, l.millisecond, 3)?,
            'j' => padded(&mut out, l.day_of_year(), 3)?,
            'w' => padded(&mut out, l.day_of_week(), 1)?,
            'U' => padded(&mut out, l.week(), 2)?,
            'G' => padded(&mut out, l.iso_week().0, 4)?,
            'V' => padded(&mut out, l.iso_week().1, 2)?,
            'u' => padded(&mut out, l.iso_day_of_week(), 1)?,
            'b' => out.extend(month_name(l.month).chars().take(3)),
            'B' => out.push_str(month_name(l.month)),
            'z' => {
                out.push(if l.offset < 0 { '-' } else { '+' });
                padded(&mut out, (l.offset / 3600).abs(), 2)?;
                padded(&mut out, (l.offset / 60).abs() % 60, 2)?;
            }
            'Z' => {
                let _ = write!(out, "{}", l.offset / 60);
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

#[derive(Debug)]
struct DateToString {
    date: Node,
    format: Option<Node>,
    zone: ZoneArg,
    on_null: Option<Node>,
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    (name == "$dateToString").then(|| compile_to_string(arg, c))
}

fn compile_to_string(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let d = object_arg(
        arg,
        ErrorCode::Location18629,
        "$dateToString only supports an object as its argument",
    )?;
    let mut f = Fields::compile(d, &["format", "date", "timezone", "onNull"], c, |k| {
        Error::new(
            ErrorCode::Location18534,
            format!("Unrecognized argument to $dateToString: {k}"),
        )
    })?;
    let date = f.require("date", || {
        Error::new(
            ErrorCode::Location18628,
            "Missing 'date' parameter to $dateToString",
        )
    })?;
    Ok(op(DateToString {
        date,
        format: f.take("format"),
        zone: ZoneArg::new(f.take("timezone")),
        on_null: f.take("onNull"),
    }))
}

impl Operator for DateToString {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let date = self.date.eval(cx)?;
        // The format is checked first, even when the date is null.
        let format = match eval_opt(&self.format, cx)? {
            None => Some(DEFAULT_FORMAT.to_owned()),
            Some(v) => match present(v.clone()) {
                None => None,
                Some(Bson::String(s)) => {
                    check_format(&s, TO_STRING_SPECIFIERS)?;
                    Some(s)
                }
                Some(_) => {
                    return Err(Error::new(
                        ErrorCode::Location18533,
                        format!(
                            "$dateToString requires that 'format' be a string, found: {} with \
                             value {}",
                            type_name(&v),
                            shown(&v)
                        ),
                    ))
                }
            },
        };
        let zone = self.zone.eval(cx)?;
        let Some(date) = present(date) else {
            return match &self.on_null {
                Some(on_null) => on_null.eval(cx),
                None => Ok(Some(Bson::Null)),
            };
        };
        let (Some(zone), Some(format)) = (zone, format) else {
            return Ok(Some(Bson::Null));
        };
        let ms = coerce_to_date(&date)?;
        format_date(&format, &zone, ms).map(|s| Some(Bson::String(s)))
    }
}
