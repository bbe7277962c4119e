//! The date part operators (`$year`, `$month`, `$dayOfMonth`, `$hour`, `$minute`, `$second`,
//! `$millisecond`, `$dayOfYear`, `$dayOfWeek`, `$week`, `$isoWeek`, `$isoWeekYear`,
//! `$isoDayOfWeek`), and `$dateToParts` / `$dateFromParts`.

use super::super::super::value::{integral_i64, nullish, type_name};
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use super::{coerce_to_date, eval_opt, object_arg, present, shown, Fields, ZoneArg};
use crate::calendar::civil::{
    days_from_civil, days_from_iso, local_millis, normalize_month, Local,
};
use crate::calendar::Zone;
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson};

/// What a date part operator extracts from the civil fields.
type Part = fn(&Local) -> Bson;

fn int(v: i64) -> Bson {
    Bson::Int32(i32::try_from(v).unwrap_or(i32::MAX))
}

fn part(name: &str) -> Option<(&'static str, Part)> {
    Some(match name {
        "$year" => ("$year", |l| int(l.year)),
        "$month" => ("$month", |l| int(l.month)),
        "$dayOfMonth" => ("$dayOfMonth", |l| int(l.day)),
        "$hour" => ("$hour", |l| int(l.hour)),
        "$minute" => ("$minute", |l| int(l.minute)),
        "$second" => ("$second", |l| int(l.second)),
        "$millisecond" => ("$millisecond", |l| int(l.millisecond)),
        "$dayOfYear" => ("$dayOfYear", |l| int(l.day_of_year())),
        "$dayOfWeek" => ("$dayOfWeek", |l| int(l.day_of_week())),
        "$week" => ("$week", |l| int(l.week())),
        "$isoWeek" => ("$isoWeek", |l| int(l.iso_week().1)),
        // mongod answers the ISO year as a 64-bit integer, every other part as a 32-bit one.
        "$isoWeekYear" => ("$isoWeekYear", |l| Bson::Int64(l.iso_week().0)),
        "$isoDayOfWeek" => ("$isoDayOfWeek", |l| int(l.iso_day_of_week())),
        _ => return None,
    })
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    if let Some((name, part)) = part(name) {
        return Some(compile_part(name, part, arg, c));
    }
    Some(match name {
        "$dateToParts" => compile_to_parts(arg, c),
        "$dateFromParts" => compile_from_parts(arg, c),
        _ => return None,
    })
}

/// `{$year: <date>}`, `{$year: [<date>]}` or `{$year: {date, timezone}}`.
fn compile_part(name: &'static str, part: Part, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let (date, zone) = match arg {
        Bson::Document(d) if !d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            let mut fields = Fields::compile(d, &["date", "timezone"], c, |k| {
                Error::new(
                    ErrorCode::Location40535,
                    format!("unrecognized option to {name}: \"{k}\""),
                )
            })?;
            let date = fields.require("date", || {
                Error::new(
                    ErrorCode::Location40539,
                    format!(
                        "missing 'date' argument to {name}, provided: {name}: {}",
                        shown(&Some(arg.clone()))
                    ),
                )
            })?;
            (date, fields.take("timezone"))
        }
        Bson::Array(items) => match items.as_slice() {
            [only] => (c.compile(only)?, None),
            _ => {
                return Err(Error::new(
                    ErrorCode::Location40536,
                    format!(
                        "{name} accepts exactly one argument if given an array, but was given {}",
                        items.len()
                    ),
                ))
            }
        },
        other => (c.compile(other)?, None),
    };
    Ok(op(DatePart {
        name,
        part,
        date,
        zone,
    }))
}

#[derive(Debug)]
struct DatePart {
    name: &'static str,
    part: Part,
    date: Node,
    zone: Option<Node>,
}

impl Operator for DatePart {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let Some(date) = present(self.date.eval(cx)?) else {
            return Ok(Some(Bson::Null));
        };
        let ms = coerce_to_date(&date)?;
        let zone = match &self.zone {
            None => Zone::Utc,
            Some(node) => match node.eval(cx)? {
                v if nullish(&v) => return Ok(Some(Bson::Null)),
                Some(Bson::String(s)) => Zone::parse(&s)?,
                other => {
                    return Err(Error::new(
                        ErrorCode::Location40533,
                        format!(
                            "{} requires a string for the timezone argument, but was given a {} \
                             ({})",
                            self.name,
                            type_name(&other),
                            shown(&other)
                        ),
                    ))
                }
            },
        };
        Ok(Some((self.part)(&zone.local(ms))))
    }
}

#[derive(Debug)]
struct ToParts {
    date: Node,
    zone: ZoneArg,
    iso8601: Option<Node>,
}

fn compile_to_parts(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let d = object_arg(
        arg,
        ErrorCode::Location40524,
        "$dateToParts only supports an object as its argument",
    )?;
    let mut fields = Fields::compile(d, &["date", "timezone", "iso8601"], c, |k| {
        Error::new(
            ErrorCode::Location40520,
            format!("Unrecognized argument to $dateToParts: {k}"),
        )
    })?;
    let date = fields.require("date", || {
        Error::new(
            ErrorCode::Location40522,
            "Missing 'date' parameter to $dateToParts",
        )
    })?;
    Ok(op(ToParts {
        date,
        zone: ZoneArg::new(fields.take("timezone")),
        iso8601: fields.take("iso8601"),
    }))
}

impl Operator for ToParts {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let date = self.date.eval(cx)?;
        let Some(zone) = self.zone.eval(cx)? else {
            return Ok(Some(Bson::Null));
        };
        let iso = match eval_opt(&self.iso8601, cx)? {
            None => false,
            Some(v) if nullish(&v) => return Ok(Some(Bson::Null)),
            Some(Some(Bson::Boolean(b))) => b,
            Some(other) => {
                return Err(Error::new(
                    ErrorCode::Location40521,
                    format!(
                        "iso8601 must evaluate to a bool, found {}",
                        type_name(&other)
                    ),
                ))
            }
        };
        let Some(date) = present(date) else {
            return Ok(Some(Bson::Null));
        };
        let l = zone.local(coerce_to_date(&date)?);
        let parts = if iso {
            let (year, week) = l.iso_week();
            doc! {
                "isoWeekYear": int(year),
                "isoWeek": int(week),
                "isoDayOfWeek": int(l.iso_day_of_week()),
                "hour": int(l.hour),
                "minute": int(l.minute),
                "second": int(l.second),
                "millisecond": int(l.millisecond),
            }
        } else {
            doc! {
                "year": int(l.year),
                "month": int(l.month),
                "day": int(l.day),
                "hour": int(l.hour),
                "minute": int(l.minute),
                "second": int(l.second),
                "millisecond": int(l.millisecond),
            }
        };
        Ok(Some(Bson::Document(parts)))
    }
}

/// `$dateFromParts`: the calendar fields (`year`, `month`, `day`) or the ISO ones
/// (`isoWeekYear`, `isoWeek`, `isoDayOfWeek`), then the time of day.
#[derive(Debug)]
struct FromParts {
    iso: bool,
    /// year, month, day, or isoWeekYear, isoWeek, isoDayOfWeek.
    date: [Option<Node>; 3],
    /// hour, minute, second, millisecond.
    time: [Option<Node>; 4],
    zone: ZoneArg,
}

const MIN_PART: i64 = -32_768;
const MAX_PART: i64 = 32_767;

fn compile_from_parts(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    const KNOWN: &[&str] = &[
        "year",
        "month",
        "day",
        "hour",
        "minute",
        "second",
        "millisecond",
        "isoWeekYear",
        "isoWeek",
        "isoDayOfWeek",
        "timezone",
    ];
    let d = object_arg(
        arg,
        ErrorCode::Location40519,
        "$dateFromParts only supports an object as its argument",
    )?;
    let mut f = Fields::compile(d, KNOWN, c, |k| {
        Error::new(
            ErrorCode::Location40518,
            format!("Unrecognized argument to $dateFromParts: {k}"),
        )
    })?;
    let has = |k: &str| d.contains_key(k);
    if !has("year") && !has("isoWeekYear") {
        return Err(Error::new(
            ErrorCode::Location40516,
            "$dateFromParts requires either 'year' or 'isoWeekYear' to be present",
        ));
    }
    if has("year") && (has("isoWeekYear") || has("isoWeek") || has("isoDayOfWeek")) {
        return Err(Error::new(
            ErrorCode::Location40489,
            "$dateFromParts does not allow mixing natural dates with ISO dates",
        ));
    }
    if has("isoWeekYear") && (has("year") || has("month") || has("day")) {
        return Err(Error::new(
            ErrorCode::Location40525,
            "$dateFromParts does not allow mixing ISO dates with natural dates",
        ));
    }
    let iso = !has("year");
    let date = if iso {
        [
            f.take("isoWeekYear"),
            f.take("isoWeek"),
            f.take("isoDayOfWeek"),
        ]
    } else {
        [f.take("year"), f.take("month"), f.take("day")]
    };
    Ok(op(FromParts {
        iso,
        date,
        time: [
            f.take("hour"),
            f.take("minute"),
            f.take("second"),
            f.take("millisecond"),
        ],
        zone: ZoneArg::new(f.take("timezone")),
    }))
}

/// An integral part: its default when absent, `None` when null or missing, 40515 when not an
/// integer, and 31034 outside [-32768, 32767] when `bounded`.
fn number(
    node: &Option<Node>,
    cx: &mut Context<'_>,
    field: &str,
    default: i64,
    bounded: bool,
) -> Result<Option<i64>> {
    let value = match eval_opt(node, cx)? {
        None => return Ok(Some(default)),
        Some(v) if nullish(&v) => return Ok(None),
        Some(v) => v,
    };
    let n = value.as_ref().and_then(integral_i64).ok_or_else(|| {
        Error::new(
            ErrorCode::Location40515,
            format!(
                "'{field}' must evaluate to an integer, found {} with value {}",
                type_name(&value),
                shown(&value)
            ),
        )
    })?;
    if bounded && !(MIN_PART..=MAX_PART).contains(&n) {
        return Err(Error::new(
            ErrorCode::Location31034,
            format!(
                "'{field}' must evaluate to a value in the range [{MIN_PART}, {MAX_PART}]; value \
                 {n} is not in range"
            ),
        ));
    }
    Ok(Some(n))
}

impl Operator for FromParts {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let [hour, minute, second, millisecond] = &self.time;
        let (Some(h), Some(mi), Some(s), Some(ms)) = (
            number(hour, cx, "hour", 0, true)?,
            number(minute, cx, "minute", 0, true)?,
            number(second, cx, "second", 0, false)?,
            number(millisecond, cx, "millisecond", 0, false)?,
        ) else {
            return Ok(Some(Bson::Null));
        };
        let Some(zone) = self.zone.eval(cx)? else {
            return Ok(Some(Bson::Null));
        };
        let [a, b, d] = &self.date;
        let names = match self.iso {
            true => ["isoWeekYear", "isoWeek", "isoDayOfWeek"],
            false => ["year", "month", "day"],
        };
        let [ya, yb, yd] = names;
        let (Some(year), Some(second_part), Some(third_part)) = (
            number(a, cx, ya, 1970, false)?,
            number(b, cx, yb, 1, true)?,
            number(d, cx, yd, 1, true)?,
        ) else {
            return Ok(Some(Bson::Null));
        };
        if !(1..=9999).contains(&year) {
            let code = match self.iso {
                true => ErrorCode::Location31095,
                false => ErrorCode::Location40523,
            };
            return Err(Error::new(
                code,
                format!("'{ya}' must evaluate to an integer in the range 1 to 9999, found {year}"),
            ));
        }
        let days = match self.iso {
            true => days_from_iso(year, second_part, third_part),
            false => {
                let (y, m) = normalize_month(year, second_part);
                days_from_civil(y, m, third_part)
            }
        };
        zone.instant(local_millis(days, h, mi, s, ms))
            .map(|ms| Some(Bson::DateTime(bson::DateTime::from_millis(ms))))
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Overflow,
                    "$dateFromParts: the date is outside the range of BSON dates",
                )
            })
    }
}
