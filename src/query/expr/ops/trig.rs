//! Trigonometric operators: `$sin $cos $tan $asin $acos $atan $atan2 $asinh $acosh $atanh
//! $sinh $cosh $tanh $degreesToRadians $radiansToDegrees`.
//!
//! Integers compute as doubles. A decimal input gives a decimal result, as in mongod, but this
//! server computes it in double precision (libdecNumber has no trigonometry) and returns the
//! double's shortest decimal digits: about 16 significant digits where mongod gives 34. Domain
//! errors are mongod's 50989 with its message (`cannot apply $acos to -2, value must in [-1,1]`).

use super::super::value::{nullish, type_name};
use super::super::{Compiler, Node, Value};
use super::arith::{format_g, single, Num};
use super::{apply, Arity};
use crate::error::{Error, ErrorCode, Result};
use crate::query::decimal;
use bson::Bson;

#[cfg(test)]
#[path = "trig_tests.rs"]
mod tests;

/// Where a function is defined: `[lo, hi]` when inclusive, `(lo, hi)` when not.
#[derive(Clone, Copy)]
struct Domain {
    lo: f64,
    hi: f64,
    inclusive: bool,
}

const UNIT: Domain = Domain {
    lo: -1.0,
    hi: 1.0,
    inclusive: true,
};
const FINITE: Domain = Domain {
    lo: f64::NEG_INFINITY,
    hi: f64::INFINITY,
    inclusive: false,
};
const AT_LEAST_ONE: Domain = Domain {
    lo: 1.0,
    hi: f64::INFINITY,
    inclusive: true,
};

/// A function and where it is defined (`None`: everywhere).
type Function = (fn(f64) -> f64, Option<Domain>);

fn function(name: &str) -> Option<Function> {
    Some(match name {
        "$sin" => (f64::sin, Some(FINITE)),
        "$cos" => (f64::cos, Some(FINITE)),
        "$tan" => (f64::tan, Some(FINITE)),
        "$asin" => (f64::asin, Some(UNIT)),
        "$acos" => (f64::acos, Some(UNIT)),
        "$atanh" => (f64::atanh, Some(UNIT)),
        "$acosh" => (f64::acosh, Some(AT_LEAST_ONE)),
        "$atan" => (f64::atan, None),
        "$asinh" => (f64::asinh, None),
        "$sinh" => (f64::sinh, None),
        "$cosh" => (f64::cosh, None),
        "$tanh" => (f64::tanh, None),
        "$degreesToRadians" => (f64::to_radians, None),
        "$radiansToDegrees" => (f64::to_degrees, None),
        _ => return None,
    })
}

const NAMES: &[&str] = &[
    "$sin",
    "$cos",
    "$tan",
    "$asin",
    "$acos",
    "$atanh",
    "$acosh",
    "$atan",
    "$asinh",
    "$sinh",
    "$cosh",
    "$tanh",
    "$degreesToRadians",
    "$radiansToDegrees",
];

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Option<Result<Node>> {
    if name == "$atan2" {
        return Some(apply("$atan2", arg, c, Arity::Exactly(2), atan2));
    }
    let name: &'static str = NAMES.iter().find(|n| **n == name)?;
    Some(apply(name, arg, c, Arity::Exactly(1), evaluate))
}

fn evaluate(name: &'static str, values: Vec<Value>) -> Result<Value> {
    single(name, values, |n| {
        let Some((f, domain)) = function(name) else {
            return Err(Error::internal(format!("{name} has no function")));
        };
        let x = n.to_f64();
        let as_input_type = |y: f64| match n {
            Num::Decimal(_) => Bson::Decimal128(decimal::to_bson(decimal::from_f64_shortest(y))),
            _ => Bson::Double(y),
        };
        if let Some(domain) = domain {
            // NaN passes through a bounded function unchanged.
            if x.is_nan() {
                return Ok(match n {
                    Num::Decimal(d) => Bson::Decimal128(decimal::to_bson(d)),
                    _ => Bson::Double(x),
                });
            }
            check_domain(name, &n, x, domain)?;
        }
        Ok(as_input_type(f(x)))
    })
}

fn check_domain(name: &str, n: &Num, x: f64, d: Domain) -> Result<()> {
    let inside = if d.inclusive {
        x >= d.lo && x <= d.hi
    } else {
        x > d.lo && x < d.hi
    };
    if inside {
        return Ok(());
    }
    let shown = match n {
        Num::Decimal(dec) => decimal::to_bson(*dec).to_string(),
        _ => format_g(x),
    };
    let (open, close) = if d.inclusive { ('[', ']') } else { ('(', ')') };
    Err(Error::new(
        ErrorCode::Location50989,
        format!(
            "cannot apply {name} to {shown}, value must in {open}{},{}{close}",
            format_g(d.lo),
            format_g(d.hi)
        ),
    ))
}

fn atan2(name: &'static str, values: Vec<Value>) -> Result<Value> {
    let mut it = values.into_iter();
    let (y, x) = (it.next().flatten(), it.next().flatten());
    if nullish(&y) || nullish(&x) {
        return Ok(Some(Bson::Null));
    }
    let numeric = |v: &Value, code| {
        v.as_ref().and_then(Num::of).ok_or_else(|| {
            Error::new(
                code,
                format!("{name} only supports numeric types, not {}", type_name(v)),
            )
        })
    };
    let ny = numeric(&y, ErrorCode::Location51044)?;
    let nx = numeric(&x, ErrorCode::Location51045)?;
    let r = ny.to_f64().atan2(nx.to_f64());
    Ok(Some(if ny.is_decimal() || nx.is_decimal() {
        Bson::Decimal128(decimal::to_bson(decimal::from_f64_shortest(r)))
    } else {
        Bson::Double(r)
    }))
}
