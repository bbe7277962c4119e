//! Query filters: a filter document is compiled once into a [`Filter`] tree, then evaluated
//! per document with MongoDB's matching semantics (array traversal, null-matches-missing, type
//! brackets for comparisons).
//!
//! Owns: filter parsing (`compile.rs`), evaluation (here) and the equality fields an upsert seeds
//! its document from (`equality_fields`). A filter compiled with a collation compares strings
//! through it in equality, `$in`/`$nin`, `$ne`, ranges and `$elemMatch` (never in `$regex`).
//! `$expr` is an aggregation expression (`query::expr`), compiled with the command's variables
//! and true when its value is. The bit-test operators live in `bits.rs`. Does not own: `$where`,
//! `$text` and geo operators (refused at compile time with a clear error), parsing collations,
//! or index use.

mod bits;
#[cfg(test)]
mod bits_jstests;
#[cfg(test)]
mod bits_tests;
mod compile;
mod in_set;
mod or_split;
#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::query::collation::Collation;
use crate::query::compare::{compare_values_with, type_bracket, values_equal_with, Number};
use crate::query::expr::value::Comparator;
use crate::query::expr::{Expression, Variables};
use crate::query::path::{self, PathValues};
use crate::query::regex::Regex;
use bson::{Bson, Document, RawDocument};
pub(crate) use in_set::InSet;
use std::cmp::Ordering;
use std::sync::Arc;

pub(crate) use crate::query::decimal::integral as integral_value;
pub use compile::equality_fields;
pub use or_split::OrSplit;

/// A compiled query filter.
#[derive(Debug, Clone)]
pub struct Filter {
    /// Shared: every leaf of a plan holds the filter, and a `$or` plan has a leaf per branch,
    /// so a copy per leaf would cost the square of the branches.
    root: Arc<Expr>,
    /// The top-level fields the filter looks at: matching depends on nothing else (`None`: it
    /// may look at any, through `$expr`).
    fields: Option<Vec<String>>,
    /// Strings compare through this; `None` is the simple collation (bytes).
    collation: Option<Collation>,
    /// Units of the operation's work one match costs ([`crate::query::guard`]): one per
    /// 256 bytes of the filter as given, so a filter of thousands of clauses is checked on
    /// as often as the work it makes.
    work: u32,
}

impl Filter {
    /// Compiles a filter document; errors carry mongod's codes and messages.
    pub fn compile(filter: &Document) -> Result<Filter> {
        Filter::compile_with(filter, None)
    }

    /// Compiles a filter whose string comparisons go through `collation` (`None`: simple).
    pub fn compile_with(filter: &Document, collation: Option<&Collation>) -> Result<Filter> {
        Filter::compile_full(filter, collation, &Variables::default())
    }

    /// Compiles a filter whose `$expr`s see `vars` (the command's `let` and `$$NOW`) and whose
    /// string comparisons go through `collation`.
    pub fn compile_full(
        filter: &Document,
        collation: Option<&Collation>,
        vars: &Variables,
    ) -> Result<Filter> {
        let vars = vars
            .clone()
            .with_comparator(Comparator::with_collation(collation.cloned()));
        let mut root = compile::document_with(filter, Some(&vars))?;
        if let Some(c) = collation {
            collate(&mut root, c);
        }
        let fields = top_level_fields(&root);
        let work = crate::query::size::document_size(filter) / 256;
        Ok(Filter {
            root: Arc::new(root),
            fields,
            collation: collation.cloned(),
            work: u32::try_from(work).unwrap_or(u32::MAX).max(1),
        })
    }

    /// The collation strings compare under (`None`: simple).
    pub fn collation(&self) -> Option<&Collation> {
        self.collation.as_ref()
    }

    /// Whether `doc` satisfies the filter; an error when a `$regex` could not decide.
    pub fn matches(&self, doc: &Document) -> Result<bool> {
        crate::query::guard::tick_n(self.work)?;
        regex_failure::watch(|| self.root.matches(doc, self.collation()))
    }

    /// Like [`Filter::matches`] inside an evaluation that [`watch_regex`] wraps (a projection,
    /// an update): a `$regex` failure reads as false here and is returned by the `watch_regex`.
    pub(crate) fn matches_within(&self, doc: &Document) -> bool {
        self.root.matches(doc, self.collation())
    }

    /// Whether the stored document `raw` satisfies the filter, decoding only the top-level
    /// fields the filter looks at (a scan rejects most documents without decoding them).
    pub fn matches_raw(&self, raw: &RawDocument) -> Result<bool> {
        if self.is_empty() {
            return Ok(true);
        }
        crate::query::guard::tick_n(self.work)?;
        let mut partial = Document::new();
        // Elements are walked without parsing the values the filter does not look at.
        for element in raw.iter_elements() {
            let element = element.map_err(corrupt)?;
            let key = element.key();
            if self
                .fields
                .as_ref()
                .is_none_or(|fields| fields.iter().any(|f| f == key))
            {
                check_value_depth(&element)?;
                let value = Bson::try_from(element.value().map_err(corrupt)?).map_err(corrupt)?;
                partial.insert(key, value);
            }
        }
        regex_failure::watch(|| self.root.matches(&partial, self.collation()))
    }

    /// Whether some field predicate of the filter, under any `$and`/`$or`/`$nor`, tests a path
    /// whose first component is `field`: what mongod asks of a query before it accepts a
    /// positional projection on `field` (`$expr` tests no path).
    pub fn tests_field(&self, field: &str) -> bool {
        let mut stack = vec![&*self.root];
        while let Some(e) = stack.pop() {
            match e {
                Expr::And(children) | Expr::Or(children) | Expr::Nor(children) => {
                    stack.extend(children)
                }
                Expr::Field { path, .. } => {
                    if path.first().is_some_and(|f| f == field) {
                        return true;
                    }
                }
                Expr::Expression(_) => {}
            }
        }
        false
    }

    /// The array index the positional `$` operator (of an update, or of a find projection)
    /// refers to: the first element of the first array a field predicate traverses that
    /// satisfies that predicate, as mongod records while matching. `None` when no predicate goes through an array.
    /// It is asked after [`Filter::matches`] answered for the same document, so any `$regex`
    /// here has already decided on these values; a failure is not kept for a later evaluation.
    pub fn positional_match(&self, doc: &Document) -> Option<usize> {
        regex_failure::watch(|| self.root.positional_match(doc, self.collation()))
            .ok()
            .flatten()
    }

    /// The compiled tree, for the planner to derive index bounds from.
    pub(crate) fn expr(&self) -> &Expr {
        &self.root
    }

    /// Whether the filter is empty (matches everything without looking).
    pub fn is_empty(&self) -> bool {
        matches!(&*self.root, Expr::And(children) if children.is_empty())
    }
}

fn corrupt(e: impl std::fmt::Display) -> crate::error::Error {
    crate::error::Error::internal(format!("corrupt stored document: {e}"))
}

/// Orders every `$in` list of the tree by the collation, so lookups agree with its equality.
/// The tree's depth was bounded when it was compiled.
fn collate(expr: &mut Expr, c: &Collation) {
    match expr {
        Expr::And(children) | Expr::Or(children) | Expr::Nor(children) => {
            children.iter_mut().for_each(|e| collate(e, c))
        }
        Expr::Field { preds, .. } => preds.iter_mut().for_each(|p| collate_pred(p, c)),
        // Compiled with the collation's comparator already.
        Expr::Expression(_) => {}
    }
}

fn collate_pred(pred: &mut Pred, c: &Collation) {
    match pred {
        Pred::In { values, .. } => values.collate(c),
        Pred::All(preds) | Pred::ElemMatchValue(preds) | Pred::Not(preds) => {
            preds.iter_mut().for_each(|p| collate_pred(p, c))
        }
        Pred::ElemMatchObject(expr) => collate(expr, c),
        _ => {}
    }
}

/// The first component of every path `root` tests (paths inside `$elemMatch` are relative to
/// the array's elements, so only the array's own path counts); `None` when an `$expr` may look
/// at any field.
fn top_level_fields(root: &Expr) -> Option<Vec<String>> {
    let mut fields: Vec<String> = Vec::new();
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        match e {
            Expr::And(children) | Expr::Or(children) | Expr::Nor(children) => {
                stack.extend(children)
            }
            Expr::Field { path, .. } => {
                if let Some(first) = path.first() {
                    if !fields.contains(first) {
                        fields.push(first.clone());
                    }
                }
            }
            Expr::Expression(_) => return None,
        }
    }
    Some(fields)
}

/// A node of the compiled filter.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Nor(Vec<Expr>),
    /// Every predicate must hold on the values at `path`.
    Field {
        path: Vec<String>,
        preds: Vec<Pred>,
    },
    /// `$expr`: the expression's value is truthy. An evaluation error is recorded and makes
    /// the whole match fail with it.
    Expression(std::sync::Arc<Expression>),
}

type Coll<'a> = Option<&'a Collation>;

impl Expr {
    fn matches(&self, doc: &Document, c: Coll<'_>) -> bool {
        match self {
            Expr::And(children) => children.iter().all(|e| e.matches(doc, c)),
            Expr::Or(children) => children.iter().any(|e| e.matches(doc, c)),
            Expr::Nor(children) => !children.iter().any(|e| e.matches(doc, c)),
            Expr::Field { path, preds } => {
                let values = path::lookup(doc, path);
                preds.iter().all(|p| p.test(&values, c))
            }
            Expr::Expression(e) => match e.eval(doc) {
                Ok(value) => crate::query::expr::value::truthy(&value),
                Err(err) => {
                    regex_failure::record(err);
                    false
                }
            },
        }
    }
}

impl Expr {
    fn positional_match(&self, doc: &Document, c: Coll<'_>) -> Option<usize> {
        match self {
            Expr::And(children) => children.iter().find_map(|e| e.positional_match(doc, c)),
            Expr::Or(_) | Expr::Nor(_) | Expr::Expression(_) => None,
            Expr::Field { path, preds } => {
                // The first prefix of the path that holds an array.
                let split = (1..=path.len()).find(|&k| {
                    matches!(
                        path.get(..k).and_then(|p| path::get(doc, p)),
                        Some(Bson::Array(_))
                    )
                })?;
                let (Some(prefix), Some(rest)) = (path.get(..split), path.get(split..)) else {
                    return None;
                };
                let Some(Bson::Array(items)) = path::get(doc, prefix) else {
                    return None;
                };
                items.iter().position(|item| {
                    preds.iter().all(|pred| match pred {
                        Pred::ElemMatchObject(expr) if rest.is_empty() => {
                            matches!(item, Bson::Document(d) if expr.matches(d, c))
                        }
                        Pred::ElemMatchValue(inner) if rest.is_empty() => {
                            let single = PathValues {
                                values: vec![(item, false)],
                                missing: false,
                            };
                            inner.iter().all(|p| p.test(&single, c))
                        }
                        _ => pred.test(&path::lookup_in_value(item, rest), c),
                    })
                })
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Lt,
    Lte,
    Gt,
    Gte,
}

/// A pattern plus the original text (a stored regex value equal to it also matches).
#[derive(Debug, Clone)]
pub(crate) struct RegexPred {
    pub(crate) regex: Regex,
    pub(crate) pattern: String,
    pub(crate) options: String,
}

impl RegexPred {
    fn test_value(&self, value: &Bson) -> bool {
        match value {
            Bson::String(s) | Bson::Symbol(s) => match self.regex.is_match(s) {
                Ok(found) => found,
                Err(e) => {
                    regex_failure::record(e);
                    false
                }
            },
            Bson::RegularExpression(r) => r.pattern == self.pattern && r.options == self.options,
            _ => false,
        }
    }
}

/// A type selector of `$type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeSel {
    Code(i32),
    Number,
}

/// A predicate over the values one path reaches.
#[derive(Debug, Clone)]
pub(crate) enum Pred {
    Eq(Bson),
    Cmp(CmpOp, Bson),
    In {
        values: InSet,
        regexes: Vec<RegexPred>,
    },
    Exists(bool),
    Type(Vec<TypeSel>),
    Size(usize),
    /// `$all`: every predicate holds (an empty `$all` compiles to `AlwaysFalse`).
    All(Vec<Pred>),
    AlwaysFalse,
    ElemMatchValue(Vec<Pred>),
    ElemMatchObject(Box<Expr>),
    Mod {
        divisor: i64,
        remainder: i64,
    },
    Regex(RegexPred),
    /// `$bitsAllSet`, `$bitsAllClear`, `$bitsAnySet`, `$bitsAnyClear`.
    Bits(bits::BitTest),
    /// Negation of the conjunction of the predicates (`$not`, `$ne`, `$nin`).
    Not(Vec<Pred>),
}

impl Pred {
    fn test(&self, pv: &PathValues<'_>, c: Coll<'_>) -> bool {
        match self {
            Pred::Eq(target) => eq_matches(target, pv, c),
            Pred::Cmp(op, target) => {
                if matches!(target, Bson::Null) && matches!(op, CmpOp::Lte | CmpOp::Gte) {
                    return eq_matches(target, pv, c);
                }
                pv.all().any(|v| compare_matches(*op, v, target, c))
            }
            Pred::In { values, regexes } => {
                (values.has_null() && eq_matches(&Bson::Null, pv, c))
                    || pv.all().any(|v| values.contains(v))
                    || pv.all().any(|v| regexes.iter().any(|r| r.test_value(v)))
            }
            Pred::Exists(expected) => pv.values.is_empty() != *expected,
            Pred::Type(selectors) => pv
                .all()
                .any(|v| selectors.iter().any(|s| type_matches(*s, v))),
            Pred::Size(n) => pv
                .whole()
                .any(|v| matches!(v, Bson::Array(items) if items.len() == *n)),
            Pred::All(preds) => preds.iter().all(|p| p.test(pv, c)),
            Pred::AlwaysFalse => false,
            Pred::ElemMatchValue(preds) => pv.whole().any(|v| match v {
                Bson::Array(items) => items.iter().any(|item| {
                    let single = PathValues {
                        values: vec![(item, false)],
                        missing: false,
                    };
                    preds.iter().all(|p| p.test(&single, c))
                }),
                _ => false,
            }),
            Pred::ElemMatchObject(expr) => pv.whole().any(|v| match v {
                Bson::Array(items) => items.iter().any(|item| match item {
                    Bson::Document(doc) => expr.matches(doc, c),
                    _ => false,
                }),
                _ => false,
            }),
            Pred::Mod { divisor, remainder } => {
                pv.all().any(|v| mod_matches(v, *divisor, *remainder))
            }
            Pred::Regex(re) => pv.all().any(|v| re.test_value(v)),
            Pred::Bits(test) => pv.all().any(|v| test.matches(v)),
            Pred::Not(preds) => !preds.iter().all(|p| p.test(pv, c)),
        }
    }
}

/// Equality as a query sees it: any reached value equals the target; `null` also matches a
/// missing field (but, since 6.0, not `undefined`).
fn eq_matches(target: &Bson, pv: &PathValues<'_>, c: Coll<'_>) -> bool {
    if matches!(target, Bson::Null) {
        return pv.missing || pv.values.is_empty() || pv.all().any(|v| matches!(v, Bson::Null));
    }
    pv.all().any(|v| values_equal_with(v, target, c))
}

fn is_nan(value: &Bson) -> bool {
    match Number::of(value) {
        Some(Number::Double(d)) => d.is_nan(),
        Some(Number::Decimal(d)) => d.to_f64().is_nan(),
        _ => false,
    }
}

/// `$lt/$lte/$gt/$gte`: only within one type bracket, except that MinKey/MaxKey bounds
/// compare against everything. NaN equals NaN and is otherwise incomparable.
fn compare_matches(op: CmpOp, value: &Bson, target: &Bson, c: Coll<'_>) -> bool {
    if type_bracket(value) != type_bracket(target) {
        return match target {
            Bson::MaxKey => matches!(op, CmpOp::Lt | CmpOp::Lte),
            Bson::MinKey => matches!(op, CmpOp::Gt | CmpOp::Gte),
            _ => false,
        };
    }
    if is_nan(value) || is_nan(target) {
        return is_nan(value) && is_nan(target) && matches!(op, CmpOp::Lte | CmpOp::Gte);
    }
    let ord = compare_values_with(value, target, c);
    match op {
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Lte => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Gte => ord != Ordering::Less,
    }
}

fn type_matches(sel: TypeSel, value: &Bson) -> bool {
    match sel {
        TypeSel::Number => type_bracket(value) == 10,
        TypeSel::Code(code) => type_code(value) == code,
    }
}

/// The BSON type number of a value (`$type` codes).
pub(crate) fn type_code(value: &Bson) -> i32 {
    match value {
        Bson::Double(_) => 1,
        Bson::String(_) => 2,
        Bson::Document(_) => 3,
        Bson::Array(_) => 4,
        Bson::Binary(_) => 5,
        Bson::Undefined => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Null => 10,
        Bson::RegularExpression(_) => 11,
        Bson::DbPointer(_) => 12,
        Bson::JavaScriptCode(_) => 13,
        Bson::Symbol(_) => 14,
        Bson::JavaScriptCodeWithScope(_) => 15,
        Bson::Int32(_) => 16,
        Bson::Timestamp(_) => 17,
        Bson::Int64(_) => 18,
        Bson::Decimal128(_) => 19,
        Bson::MinKey => -1,
        Bson::MaxKey => 127,
    }
}

/// `$mod`: numbers are truncated toward zero; NaN and infinities never match.
fn mod_matches(value: &Bson, divisor: i64, remainder: i64) -> bool {
    let n = match Number::of(value) {
        Some(Number::Int(i)) => i,
        Some(Number::Double(d)) => {
            if !d.is_finite() {
                return false;
            }
            d.trunc() as i64
        }
        Some(Number::Decimal(d)) => {
            let f = d.to_f64();
            if !f.is_finite() {
                return false;
            }
            f.trunc() as i64
        }
        None => return false,
    };
    n.wrapping_rem(divisor) == remainder
}

/// Refuses a stored field's value nested deeper than any request may be, before the recursive
/// decoder sees it (`query::depth`).
fn check_value_depth(element: &bson::raw::RawElement<'_>) -> Result<()> {
    let bytes = match element.value().map_err(corrupt)? {
        bson::RawBsonRef::Document(d) => d.as_bytes(),
        bson::RawBsonRef::Array(a) => a.as_bytes(),
        bson::RawBsonRef::JavaScriptCodeWithScope(c) => c.scope.as_bytes(),
        _ => return Ok(()),
    };
    crate::query::depth::check_stored_for_read(bytes)
}

pub(crate) use regex_failure::watch as watch_regex;

/// A `$regex` that ran out of its matching budget cannot answer: the predicate reads as false
/// while the tree is evaluated (so the evaluation stays a plain boolean walk), and the failure is
/// kept for the calling thread until [`Filter::matches`] turns it into the error it returns.
mod regex_failure {
    use crate::error::{Error, Result};
    use std::cell::RefCell;

    thread_local! {
        static FAILURE: RefCell<Option<Error>> = const { RefCell::new(None) };
    }

    pub(super) fn record(e: Error) {
        FAILURE.with(|f| {
            f.borrow_mut().get_or_insert(e);
        });
    }

    /// Runs one evaluation; its result, or the first regex failure recorded during it.
    pub(crate) fn watch<T>(evaluate: impl FnOnce() -> T) -> Result<T> {
        let outer = FAILURE.with(|f| f.borrow_mut().take());
        let result = evaluate();
        let failure = FAILURE.with(|f| std::mem::replace(&mut *f.borrow_mut(), outer));
        match failure {
            Some(e) => Err(e),
            None => Ok(result),
        }
    }
}
