//! `$dateAdd`, `$dateSubtract`, `$dateDiff`, `$dateTrunc`: their arguments, with mongod's
//! codes and messages, and their null rules. Owns: reading the operands. Does not own: the
//! unit arithmetic itself (`crate::calendar::unit`, shared with window ranges and `$densify`).

use super::super::super::value::{integral_i64, type_name};
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use super::{date_millis, present, shown, Fields, ZoneArg};
use crate::calendar::unit::{self, TimeUnit, SUNDAY};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// `$dateDiff`'s and `$dateTrunc`'s `unit`: 5439013 if not a string, 5439014 if unknown.
fn unit_of(value: &Bson, name: &str) -> Result<TimeUnit> {
    let Bson::String(s) = value else {
        return Err(Error::new(
            ErrorCode::Location5439013,
            format!(
                "{name} requires 'unit' to be a string, but got {}",
                crate::query::path::type_name(value)
            ),
        ));
    };
    TimeUnit::named(s).ok_or_else(|| {
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

/// Whether `unit` is the string `"week"` (only then does `startOfWeek` count).
fn is_week(unit: &Bson) -> bool {
    matches!(unit, Bson::String(s) if s == "week")
}

// ---- $dateAdd / $dateSubtract ----

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
        let unit = TimeUnit::parse(&unit)?;
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
        let ms = unit::checked_add(start, unit, amount, &zone)?;
        Ok(Some(Bson::DateTime(bson::DateTime::from_millis(ms))))
    }
}

// ---- $dateDiff ----

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
        unit::diff(start, end, unit, &zone, week_start).map(|n| Some(Bson::Int64(n)))
    }
}

// ---- $dateTrunc ----

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
        let ms = unit::truncate(date, unit, bin_size, &zone, week_start)?;
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
