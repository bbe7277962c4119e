//! `$stdDevPop`, `$stdDevSamp`, `$median` and `$percentile`: statistics over the numeric
//! inputs (everything else is ignored), answered as doubles.
//!
//! Standard deviations use Welford's online algorithm, as mongod does. Percentiles keep every
//! value and answer the discrete percentile: the value of 0-based rank `max(0, ceil(n·p) − 1)`
//! in sorted order (`n − 1` for `p = 1`). That is what mongod 7.0's `method: "approximate"`
//! returns while its t-digest holds every value as its own centroid (small inputs); on large
//! inputs mongod's digest may answer a nearby value where mayfly stays exact. NaN inputs are
//! ignored, as in mongod's percentile algorithms.
//!
//! Owns: these states and the `$percentile`/`$median` arguments, for the accumulators and
//! their expression forms alike. Does not own: evaluating the expression forms' input
//! (`query::expr`), which folds an array's elements into [`Percentile`].

use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{format_g, Context, Node};
use bson::{doc, Bson, Document};

/// Welford's running mean and sum of squared differences.
#[derive(Debug, Clone, Default)]
pub struct StdDev {
    sample: bool,
    count: u64,
    mean: f64,
    m2: f64,
}

impl StdDev {
    pub fn new(sample: bool) -> StdDev {
        StdDev {
            sample,
            ..StdDev::default()
        }
    }

    pub fn add(&mut self, value: &Bson) {
        let Some(x) = number(value) else { return };
        self.count += 1;
        let delta = x - self.mean;
        if delta != 0.0 {
            self.mean += delta / self.count as f64;
            self.m2 += delta * (x - self.mean);
        }
    }

    pub fn finish(&self) -> Bson {
        let n = if self.sample {
            self.count.saturating_sub(1)
        } else {
            self.count
        };
        if n == 0 {
            return Bson::Null;
        }
        Bson::Double((self.m2 / n as f64).sqrt())
    }

    pub fn partial(&self) -> Bson {
        Bson::Document(doc! {
            "c": i64::try_from(self.count).unwrap_or(i64::MAX),
            "m": self.mean,
            "m2": self.m2,
        })
    }

    /// Chan et al.'s combination of two partial results.
    pub fn merge(&mut self, partial: &Document) {
        let count = u64::try_from(partial.get_i64("c").unwrap_or(0)).unwrap_or(0);
        if count == 0 {
            return;
        }
        let mean = partial.get_f64("m").unwrap_or(0.0);
        let m2 = partial.get_f64("m2").unwrap_or(0.0);
        let total = self.count + count;
        let delta = mean - self.mean;
        self.m2 += m2 + delta * delta * (self.count as f64 * count as f64) / total as f64;
        self.mean += delta * count as f64 / total as f64;
        self.count = total;
    }
}

fn number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => Some(crate::query::decimal::bson_to_f64(d)),
        _ => None,
    }
}

/// Every numeric input of a `$percentile` or `$median`.
#[derive(Debug, Clone, Default)]
pub struct Percentile {
    ps: Vec<f64>,
    /// `$median`: one value rather than an array.
    median: bool,
    values: Vec<f64>,
}

impl Percentile {
    pub fn new(ps: Vec<f64>, median: bool) -> Percentile {
        Percentile {
            ps,
            median,
            values: Vec::new(),
        }
    }

    pub fn add(&mut self, value: &Bson) -> isize {
        match number(value) {
            Some(x) if !x.is_nan() => {
                self.values.push(x);
                8
            }
            _ => 0,
        }
    }

    pub fn finish(mut self) -> Bson {
        self.values.sort_by(f64::total_cmp);
        let n = self.values.len();
        let at = |p: f64| -> Bson {
            let rank = if p >= 1.0 {
                n.saturating_sub(1)
            } else {
                ((n as f64 * p).ceil() as usize).saturating_sub(1)
            };
            self.values
                .get(rank)
                .map_or(Bson::Null, |v| Bson::Double(*v))
        };
        if self.median {
            return at(0.5);
        }
        Bson::Array(self.ps.iter().map(|p| at(*p)).collect())
    }

    pub fn partial(&self) -> Bson {
        Bson::Array(self.values.iter().map(|v| Bson::Double(*v)).collect())
    }

    /// The answer for a number given alone rather than in an array (the expression form on a
    /// scalar, as mongod answers it): that number for every percentile, NaN included. `None`
    /// when `value` is not a number.
    pub fn of_scalar(mut self, value: &Bson) -> Option<Bson> {
        self.values = vec![number(value)?];
        Some(self.finish())
    }
}

/// Where `$percentile`/`$median` is parsed: mongod gives each form its own code for an
/// argument that is not an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Accumulator,
    Expression,
}

/// `$percentile: {input, p, method}` or (`median`) `$median: {input, method}`, in either
/// form: the fields as mongod's IDL parser checks them (not an object: 7429703/7436100 for
/// the accumulators, 7436200/7436201 for the expressions; unknown field 40415, missing field
/// 40414, a non-string method 14, a method other than `approximate` 2), then `input` and `p`
/// compiled by `compile`, in that order, and `p`'s values checked. Returns the compiled input
/// and the percentiles (`[0.5]` for `$median`).
pub fn parse<T>(
    op: &str,
    arg: &Bson,
    (form, median): (Form, bool),
    mut compile: impl FnMut(&Bson) -> Result<T>,
    node: impl Fn(&T) -> &Node,
) -> Result<(T, Vec<f64>)> {
    let Bson::Document(spec) = arg else {
        let code = match (form, median) {
            (Form::Accumulator, false) => ErrorCode::Location7429703,
            (Form::Accumulator, true) => ErrorCode::Location7436100,
            (Form::Expression, false) => ErrorCode::Location7436200,
            (Form::Expression, true) => ErrorCode::Location7436201,
        };
        return Err(Error::new(
            code,
            format!(
                "specification must be an object; found {op}: {}",
                crate::query::path::render(arg)
            ),
        ));
    };
    let name = op.trim_start_matches('$');
    let (mut input, mut p, mut method) = (None, None, None);
    for (k, v) in spec {
        match k.as_str() {
            "input" => input = Some(v),
            "p" if !median => p = Some(v),
            "method" => method = Some(v),
            other => {
                return Err(Error::new(
                    ErrorCode::IDLUnknownField,
                    format!("BSON field '${name}.{other}' is an unknown field."),
                ))
            }
        }
    }
    let missing = |field: &str| {
        Error::new(
            ErrorCode::Location40414,
            format!("BSON field '${name}.{field}' is missing but a required field"),
        )
    };
    let input = input.ok_or_else(|| missing("input"))?;
    if !median && p.is_none() {
        return Err(missing("p"));
    }
    match method.ok_or_else(|| missing("method"))? {
        Bson::String(m) if m == "approximate" => {}
        Bson::String(_) => {
            return Err(Error::bad_value(
                "Currently only 'approximate' can be used as percentile 'method'.",
            ))
        }
        other => {
            return Err(Error::new(
                ErrorCode::TypeMismatch,
                format!(
                    "BSON field '${name}.method' is the wrong type '{}', expected type 'string'",
                    crate::query::path::type_name(other)
                ),
            ))
        }
    }
    let input = compile(input)?;
    let ps = match p {
        Some(p) => percentiles(node(&compile(p)?), p)?,
        None => vec![0.5],
    };
    Ok((input, ps))
}

/// `p` (compiled to `node` from `spec`): a constant array of numbers in [0, 1] (constants,
/// `let` variables and literals).
fn percentiles(node: &Node, spec: &Bson) -> Result<Vec<f64>> {
    if !constant(node) {
        return Err(Error::new(
            ErrorCode::Location7750300,
            format!(
                "The $percentile 'p' field must be an array of constant values, but found \
                 value: {}.",
                crate::query::path::render(spec)
            ),
        ));
    }
    let value = node
        .eval(&mut Context::new(&Document::new(), 0))?
        .unwrap_or(Bson::Null);
    const MSG: &str =
        "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: ";
    let items = match &value {
        Bson::Array(items) if !items.is_empty() => items,
        other => {
            return Err(Error::new(
                ErrorCode::Location7750301,
                format!("{MSG}{}", crate::query::path::render(other)),
            ))
        }
    };
    let mut ps = Vec::with_capacity(items.len());
    for item in items {
        let Some(p) = number(item) else {
            return Err(Error::new(
                ErrorCode::Location7750302,
                format!("{MSG}{}", crate::query::path::render(item)),
            ));
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::new(
                ErrorCode::Location7750303,
                format!("{MSG}{}", format_g(p)),
            ));
        }
        ps.push(p);
    }
    Ok(ps)
}

/// Whether a compiled node is made of constants only.
pub fn constant(node: &Node) -> bool {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n {
            Node::Const(_) => {}
            Node::Array(items) => stack.extend(items),
            Node::Doc(fields) => stack.extend(fields.iter().map(|(_, v)| v)),
            _ => return false,
        }
    }
    true
}
