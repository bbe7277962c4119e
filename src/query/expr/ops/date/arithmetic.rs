//! Calendar arithmetic: `$dateAdd`, `$dateSubtract`, `$dateDiff`, `$dateTrunc`, in mongod's
//! units (`year`, `quarter`, `month`, `week`, `day`, `hour`, `minute`, `second`,
//! `millisecond`). Units of a day or more count in the zone's calendar (a day across a DST
//! change is 23 or 25 hours; a month added to the 31st ends on the month's last day); smaller
//! units are fixed lengths of time, as in mongod.

use super::super::super::value::{integral_i64, type_name};
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use super::civil::{days_from_civil, days_in_month, normalize_month, Local, DAY_MS};
use super::timezone::Zone;
use super::{date_millis, present, shown, Fields, ZoneArg};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
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

impl Unit {
    fn parse(name: &str) -> Option<Unit> {
        Some(match name {
            "year" => Unit::Year,
            "quarter" => Unit::Quarter,
            "month" => Unit::Month,
            "week" => Unit::Week,
            "day" => Unit::Day,
            "hour" => Unit::Hour,
            "minute" => Unit::Minute,
            "second" => Unit::Second,
            "millisecond" => Unit::Millisecond,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Year => "year",
            Unit::Quarter => "quarter",
            Unit::Month => "month",
            Unit::Week => "week",
            Unit::Day => "day",
            Unit::Hour => "hour",
            Unit::Minute => "minute",
            Unit::Second => "second",
            Unit::Millisecond => "millisecond",
        }
    }

    /// The length of a unit shorter than a day.
    fn fixed_millis(self) -> Option<i64> {
        match self {
            Unit::Hour => Some(3_600_000),
            Unit::Minute => Some(60_000),
            Unit::Second => Some(1000),
            Unit::Millisecond => Some(1),
            _ => None,
        }
    }
}

/// `$dateDiff`'s and `$dateTrunc`'s `unit`: 5439013 if not a string, 5439014 if unknown.
fn unit_of(value: &Bson, name: &str) -> Result<Unit> {
    let Bson::String(s) = value else {
        return Err(Error::new(
            ErrorCode::Location5439013,
            format!(
                "{name} requires 'unit' to be a string, but got {}",
                crate::query::path::type_name(value)
            ),
        ));
    };
    Unit::parse(s).ok_or_else(|| {
        Error::new(
            ErrorCode::Location5439014,
            format!("{name} parameter 'unit' value cannot be recognized as a time unit: {s}"),
        )
    })
}

/// `startOfWeek`, as mongod's ISO day number (1 = Monday … 7 = Sunday).
fn start_of_week(value: &Bson, name: &str) -> Result<i64> {
    let Bson::String(s) = value else {
        return Err(Error::new(
            ErrorCode::Location5439015,
            format!(
                "{name} requires 'startOfWeek' to be a string, but got {}",
                crate::query::path::type_name(value)
            ),
        ));
    };
    const DAYS: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    let lower = s.to_lowercase();
    DAYS.iter()
        .zip(1..)
        .find_map(|(d, n)| (lower == *d || Some(lower.as_str()) == d.get(..3)).then_some(n))
        .ok_or_else(|| {
            Error::new(
                ErrorCode::Location5439016,
                format!(
                    "{name} parameter 'startOfWeek' value cannot be recognized as a day of a \
                     week: {s}"
                ),
            )
        })
}

const SUNDAY: i64 = 7;

/// Whether `unit` is the string `"week"` (only then does `startOfWeek` count).
fn is_week(unit: &Bson) -> bool {
    matches!(unit, Bson::String(s) if s == "week")
}

// ---- $dateAdd / $dateSubtract ----

fn overflowed(message: &str, code: ErrorCode) -> Error {
    Error::new(code, message)
}

/// mongod's bound on `amount` for each unit: roughly what fits in a date.
fn amount_in_range(amount: i64, unit: Unit) -> bool {
    const MAX_DAYS: i64 = (u64::MAX / 86_400_000) as i64 + 1;
    const MAX_YEARS: i64 = MAX_DAYS / 365 + 1;
    let max = match unit {
        Unit::Year => MAX_YEARS,
        Unit::Quarter => MAX_YEARS * 4,
        Unit::Month => MAX_YEARS * 12,
        Unit::Week => MAX_DAYS / 7,
        Unit::Day => MAX_DAYS,
        Unit::Hour => MAX_DAYS * 24,
        Unit::Minute => MAX_DAYS * 24 * 60,
        Unit::Second => MAX_DAYS * 24 * 60 * 60,
        Unit::Millisecond => return true,
    };
    -max < amount && amount < max
}

/// `date` plus `amount` `unit`s in `zone`, as mongod's `dateAdd`.
fn date_add(date: i64, unit: Unit, amount: i64, zone: &Zone) -> Result<i64> {
    let overflow = || overflowed("dateAdd overflowed", ErrorCode::Location5166406);
    if unit == Unit::Millisecond {
        return date.checked_add(amount).ok_or_else(overflow);
    }
    if !amount_in_range(amount, unit) {
        return Err(Error::new(
            ErrorCode::Location5976500,
            format!(
                "invalid dateAdd 'amount' parameter value: {amount} {}",
                unit.name()
            ),
        ));
    }
    if let Some(len) = unit.fixed_millis() {
        let sum = i128::from(date) + i128::from(amount) * i128::from(len);
        return i64::try_from(sum).map_err(|_| overflow());
    }
    // Calendar units move the civil date in the zone and keep the time of day.
    let l = zone.local(date);
    let days = match unit {
        Unit::Day => l.days() + amount,
        Unit::Week => l.days() + amount * 7,
        _ => {
            let months = match unit {
                Unit::Year => amount * 12,
                Unit::Quarter => amount * 3,
                _ => amount,
            };
            let (y, m) = normalize_month(l.year, l.month + months);
            days_from_civil(y, m, l.day.min(days_in_month(y, m)))
        }
    };
    let time_of_day = ((l.hour * 60 + l.minute) * 60 + l.second) * 1000 + l.millisecond;
    zone.instant(i128::from(days) * i128::from(DAY_MS) + i128::from(time_of_day))
        .ok_or_else(overflow)
}

#[derive(Debug)]
struct DateAdd {
    name: &'static str,
    subtract: bool,
    start: Node,
    unit: Node,
    amount: Node,
    zone: ZoneArg,
}

fn compile_add(name: &'static str, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location5166400,
            format!("{name} expects an object as its argument"),
        ));
    };
    let mut f = Fields::compile(d, &["startDate", "unit", "amount", "timezone"], c, |k| {
        Error::new(
            ErrorCode::Location5166401,
            format!(
                "Unrecognized argument to {name}: {k}. Expected arguments are startDate, unit, \
                 amount, and optionally timezone."
            ),
        )
    })?;
    let missing = || {
        Error::new(
            ErrorCode::Location5166402,
            format!("{name} requires startDate, unit, and amount to be present"),
        )
    };
    let (Some(start), Some(unit), Some(amount)) =
        (f.take("startDate"), f.take("unit"), f.take("amount"))
    else {
        return Err(missing());
    };
    Ok(op(DateAdd {
        name,
        subtract: name == "$dateSubtract",
        start,
        unit,
        amount,
        zone: ZoneArg::new(f.take("timezone")),
    }))
}

impl Operator for DateAdd {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let null = Ok(Some(Bson::Null));
        let Some(start) = present(self.start.eval(cx)?) else {
            return null;
        };
        let Some(unit) = present(self.unit.eval(cx)?) else {
            return null;
        };
        let Some(amount) = present(self.amount.eval(cx)?) else {
            return null;
        };
        let Some(zone) = self.zone.eval(cx)? else {
            return null;
        };
        let name = self.name;
        let start = date_millis(&start).ok_or_else(|| {
            Error::new(
                ErrorCode::Location5166403,
                format!("{name} requires startDate to be convertible to a date"),
            )
        })?;
        let Bson::String(unit) = unit else {
            return Err(Error::new(
                ErrorCode::Location5166404,
                format!("{name} expects string defining the time unit"),
            ));
        };
        let unit = Unit::parse(&unit)
            .ok_or_else(|| Error::failed_to_parse(format!("unknown time unit value: {unit}")))?;
        let mut amount = integral_i64(&amount).ok_or_else(|| {
            Error::new(
                ErrorCode::Location5166405,
                format!("{name} expects integer amount of time units"),
            )
        })?;
        if self.subtract {
            amount = amount.checked_neg().ok_or_else(|| {
                Error::new(
                    ErrorCode::Location6045000,
                    format!("invalid $dateSubtract 'amount' parameter value: {amount}"),
                )
            })?;
        }
        let ms = date_add(start, unit, amount, &zone)?;
        Ok(Some(Bson::DateTime(bson::DateTime::from_millis(ms))))
    }
}

// ---- $dateDiff ----

/// Whole weeks between two local dates, weeks starting on `start_of_week` (ISO day number).
fn week_diff(a: &Local, b: &Local, start_of_week: i64) -> i64 {
    let dow = |l: &Local| (l.iso_day_of_week() - start_of_week + 7) % 7;
    (b.days() - a.days() + dow(a) - dow(b)) / 7
}

/// The number of `unit` boundaries crossed from `a` to `b`, as mongod's `dateDiff`.
fn date_diff(a: i64, b: i64, unit: Unit, zone: &Zone, start_of_week: i64) -> Result<i64> {
    if unit == Unit::Millisecond {
        return b
            .checked_sub(a)
            .ok_or_else(|| overflowed("dateDiff overflowed", ErrorCode::Location5166308));
    }
    let (s, e) = (zone.local(a), zone.local(b));
    let days = e.days() - s.days();
    let hours = e.hour - s.hour + days * 24;
    let minutes = e.minute - s.minute + hours * 60;
    // Offsets differ across a DST change: count elapsed time, not wall-clock time.
    let correction = s.offset - e.offset;
    Ok(match unit {
        Unit::Year => e.year - s.year,
        Unit::Quarter => (e.month - 1) / 3 - (s.month - 1) / 3 + (e.year - s.year) * 4,
        Unit::Month => e.month - s.month + (e.year - s.year) * 12,
        Unit::Week => week_diff(&s, &e, start_of_week),
        Unit::Day => days,
        Unit::Hour => hours + correction / 3600,
        Unit::Minute => minutes + correction / 60,
        _ => e.second - s.second + minutes * 60 + correction,
    })
}

#[derive(Debug)]
struct DateDiff {
    start: Node,
    end: Node,
    unit: Node,
    zone: ZoneArg,
    start_of_week: Option<Node>,
}

fn compile_diff(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location5166301,
            "$dateDiff only supports an object as its argument",
        ));
    };
    let known = ["startDate", "endDate", "unit", "timezone", "startOfWeek"];
    let mut f = Fields::compile(d, &known, c, |k| {
        Error::new(
            ErrorCode::Location5166302,
            format!("Unrecognized argument to $dateDiff: {k}"),
        )
    })?;
    fn missing(code: ErrorCode, field: &'static str) -> impl FnOnce() -> Error {
        move || Error::new(code, format!("Missing '{field}' parameter to $dateDiff"))
    }
    let start = f.require(
        "startDate",
        missing(ErrorCode::Location5166303, "startDate"),
    )?;
    let end = f.require("endDate", missing(ErrorCode::Location5166304, "endDate"))?;
    let unit = f.require("unit", missing(ErrorCode::Location5166305, "unit"))?;
    Ok(op(DateDiff {
        start,
        end,
        unit,
        zone: ZoneArg::new(f.take("timezone")),
        start_of_week: f.take("startOfWeek"),
    }))
}

fn diff_date(value: &Bson, field: &str) -> Result<i64> {
    date_millis(value).ok_or_else(|| {
        Error::new(
            ErrorCode::Location5166307,
            format!(
                "$dateDiff requires '{field}' to be a date, but got {}",
                crate::query::path::type_name(value)
            ),
        )
    })
}

impl Operator for DateDiff {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let null = Ok(Some(Bson::Null));
        let Some(start) = present(self.start.eval(cx)?) else {
            return null;
        };
        let Some(end) = present(self.end.eval(cx)?) else {
            return null;
        };
        let Some(unit) = present(self.unit.eval(cx)?) else {
            return null;
        };
        let week_start = match (&self.start_of_week, is_week(&unit)) {
            (Some(node), true) => match present(node.eval(cx)?) {
                Some(v) => Some(v),
                None => return null,
            },
            _ => None,
        };
        let Some(zone) = self.zone.eval_in(cx, "$dateDiff")? else {
            return null;
        };
        let start = diff_date(&start, "startDate")?;
        let end = diff_date(&end, "endDate")?;
        let unit = unit_of(&unit, "$dateDiff")?;
        let week_start = match week_start {
            Some(v) => start_of_week(&v, "$dateDiff")?,
            None => SUNDAY,
        };
        date_diff(start, end, unit, &zone, week_start).map(|n| Some(Bson::Int64(n)))
    }
}

// ---- $dateTrunc ----

/// 2000-01-01T00:00:00Z, the reference point bins are aligned to.
const REFERENCE_MS: i64 = 946_684_800_000;

/// The start of the `bin_size`-`unit` bin `date` falls in, as mongod's `truncateDate`.
fn truncate(date: i64, unit: Unit, bin_size: i64, zone: &Zone, start_of_week: i64) -> Result<i64> {
    // The reference point: 2000-01-01 00:00 in the zone; for weeks, the first day of a week
    // on or after it (2000-01-01 was a Saturday, ISO day 6).
    let mut reference = REFERENCE_MS - zone.offset_at(REFERENCE_MS) * 1000;
    if let Some(len) = unit.fixed_millis() {
        let bin = bin_size
            .checked_mul(len)
            .ok_or_else(|| overflowed("dateTrunc overflowed", ErrorCode::Location5439002))?;
        let shifted = date
            .checked_sub(reference)
            .ok_or_else(|| overflowed("dateTrunc overflowed", ErrorCode::Location5439000))?;
        return date
            .checked_sub(shifted.rem_euclid(bin))
            .ok_or_else(|| overflowed("dateTrunc overflowed", ErrorCode::Location5439001));
    }
    if bin_size > 100_000_000_000 {
        return Err(Error::new(
            ErrorCode::Location5439006,
            "dateTrunc unsupported binSize value",
        ));
    }
    let mut ref_day = 1;
    if unit == Unit::Week {
        let ref_dow = (6 - start_of_week + 7) % 7;
        let adjust = (7 - ref_dow) % 7;
        reference += adjust * DAY_MS;
        ref_day += adjust;
    }
    let r = Local::at(0, 0);
    let r = Local {
        year: 2000,
        month: 1,
        day: ref_day,
        ..r
    };
    let l = zone.local(date);
    let distance = match unit {
        Unit::Day => l.days() - r.days(),
        Unit::Week => week_diff(&r, &l, start_of_week),
        Unit::Month => l.month - r.month + (l.year - r.year) * 12,
        Unit::Quarter => (l.month - 1) / 3 + (l.year - r.year) * 4,
        _ => l.year - r.year,
    };
    let lower = distance - distance.rem_euclid(bin_size);
    date_add(reference, unit, lower, zone)
}

#[derive(Debug)]
struct DateTrunc {
    date: Node,
    unit: Node,
    bin_size: Option<Node>,
    zone: ZoneArg,
    start_of_week: Option<Node>,
}

fn compile_trunc(arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let d: &Document = match arg {
        Bson::Document(d) => d,
        _ => {
            return Err(Error::new(
                ErrorCode::Location5439007,
                "$dateTrunc only supports an object as its argument",
            ))
        }
    };
    let known = ["date", "unit", "binSize", "timezone", "startOfWeek"];
    let mut f = Fields::compile(d, &known, c, |k| {
        Error::new(
            ErrorCode::Location5439008,
            format!(
                "Unrecognized argument to $dateTrunc: {k}. Expected arguments are date, unit, \
                 and optionally, binSize, timezone, startOfWeek"
            ),
        )
    })?;
    let date = f.require("date", || {
        Error::new(
            ErrorCode::Location5439009,
            "Missing 'date' parameter to $dateTrunc",
        )
    })?;
    let unit = f.require("unit", || {
        Error::new(
            ErrorCode::Location5439010,
            "Missing 'unit' parameter to $dateTrunc",
        )
    })?;
    Ok(op(DateTrunc {
        date,
        unit,
        bin_size: f.take("binSize"),
        zone: ZoneArg::new(f.take("timezone")),
        start_of_week: f.take("startOfWeek"),
    }))
}

impl Operator for DateTrunc {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let null = Ok(Some(Bson::Null));
        let Some(date) = present(self.date.eval(cx)?) else {
            return null;
        };
        let Some(unit) = present(self.unit.eval(cx)?) else {
            return null;
        };
        let bin_size = match &self.bin_size {
            Some(node) => match present(node.eval(cx)?) {
                Some(v) => Some(v),
                None => return null,
            },
            None => None,
        };
        let week_start = match (&self.start_of_week, is_week(&unit)) {
            (Some(node), true) => match present(node.eval(cx)?) {
                Some(v) => Some(v),
                None => return null,
            },
            _ => None,
        };
        let Some(zone) = self.zone.eval_in(cx, "$dateTrunc")? else {
            return null;
        };
        let date = date_millis(&date).ok_or_else(|| {
            Error::new(
                ErrorCode::Location5439012,
                format!(
                    "$dateTrunc requires 'date' to be a date, but got {}",
                    crate::query::path::type_name(&date)
                ),
            )
        })?;
        let unit = unit_of(&unit, "$dateTrunc")?;
        let bin_size = match bin_size {
            None => 1,
            Some(v) => {
                let n = integral_i64(&v).ok_or_else(|| {
                    let v = Some(v.clone());
                    Error::new(
                        ErrorCode::Location5439017,
                        format!(
                            "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value \
                             '{}' of type {}",
                            shown(&v),
                            type_name(&v)
                        ),
                    )
                })?;
                if n <= 0 {
                    return Err(Error::new(
                        ErrorCode::Location5439018,
                        format!(
                            "$dateTrunc requires 'binSize' to be greater than 0, but got value {n}"
                        ),
                    ));
                }
                n
            }
        };
        let week_start = match week_start {
            Some(v) => start_of_week(&v, "$dateTrunc")?,
            None => SUNDAY,
        };
        let ms = truncate(date, unit, bin_size, &zone, week_start)?;
        Ok(Some(Bson::DateTime(bson::DateTime::from_millis(ms))))
    }
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    Some(match name {
        "$dateAdd" => compile_add("$dateAdd", arg, c),
        "$dateSubtract" => compile_add("$dateSubtract", arg, c),
        "$dateDiff" => compile_diff(arg, c),
        "$dateTrunc" => compile_trunc(arg, c),
        _ => return None,
    })
}
