//! Index bounds: which values of one indexed field can satisfy a compiled filter, as ordered,
//! disjoint intervals of MongoDB's value order, with mongod's type bracketing (`$gt: 5` stops
//! at the end of the numbers; `null` also stands for a missing field).
//!
//! An interval's ends are *key classes*: byte prefixes of the order-preserving key encoding
//! (`storage::keys`) that every encoded value of the class starts with — one value, a whole
//! type bracket, or every string with a given prefix. Intersecting and merging intervals is
//! byte comparison on those classes, so the bounds can never disagree with the keys they scan.
//!
//! Bounds are a superset of the matching documents' keys, never a subset: the executor applies
//! the whole filter to every document it fetches. What cannot be bounded (negations, `$type`,
//! `$size`, arrays as values, `$exists`…) simply leaves the field unbounded.
//!
//! Collations ([`KeyStrings`]): an index with a collation keys strings by their sort keys, so
//! a predicate's strings are translated the same way when the query's collation is the
//! index's; under another collation a predicate on strings leaves the field unbounded, and a
//! regex (never collation-aware) bounds only an index without one.

use crate::query::collation::{has_strings, Collation};
use crate::query::compare::type_bracket;
use crate::query::decimal::Parts;
use crate::query::filter::{CmpOp, Expr, Pred, RegexPred};
use crate::query::path::render;
use crate::storage::keys;
use bson::{Bson, Regex};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The collations of an index's keys and of the query reading it (`None`: simple).
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyStrings<'a> {
    pub index: Option<&'a Collation>,
    pub query: Option<&'a Collation>,
}

impl KeyStrings<'_> {
    /// Whether the index orders strings as the query compares them.
    pub fn agree(&self) -> bool {
        self.index == self.query
    }

    /// `v` as the index keys it, or `None` when its strings cannot be bounded in this index.
    pub(crate) fn key<'v>(&self, v: &'v Bson) -> Option<Cow<'v, Bson>> {
        if !has_strings(v) {
            return Some(Cow::Borrowed(v));
        }
        if !self.agree() {
            return None;
        }
        Some(match self.index {
            Some(c) => Cow::Owned(c.key_value(v)),
            None => Cow::Borrowed(v),
        })
    }
}

/// One end of an interval: a key class, whether it belongs to the interval, and how explain
/// prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Every encoded value of the class starts with these bytes (ascending encoding).
    pub class: Vec<u8>,
    pub inclusive: bool,
    pub display: String,
}

/// Values from `low` to `high` in ascending value order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    pub low: Endpoint,
    pub high: Endpoint,
}

impl Interval {
    /// The single value `v`.
    pub fn point(v: &Bson) -> Interval {
        let class = value_class(v);
        let display = render(v);
        Interval {
            low: Endpoint {
                class: class.clone(),
                inclusive: true,
                display: display.clone(),
            },
            high: Endpoint {
                class,
                inclusive: true,
                display,
            },
        }
    }

    /// Every value: `[MinKey, MaxKey]`.
    pub fn full() -> Interval {
        Interval {
            low: value_endpoint(&Bson::MinKey, true),
            high: value_endpoint(&Bson::MaxKey, true),
        }
    }

    /// The first encoded (ascending) key that may belong to the interval.
    pub fn start(&self) -> Vec<u8> {
        if self.low.inclusive {
            self.low.class.clone()
        } else {
            after_class(&self.low.class)
        }
    }

    /// The first encoded (ascending) key past the interval.
    pub fn end(&self) -> Vec<u8> {
        if self.high.inclusive {
            after_class(&self.high.class)
        } else {
            self.high.class.clone()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.start() >= self.end()
    }

    /// Whether the interval is exactly one value.
    pub fn is_point(&self) -> bool {
        self.low.inclusive && self.high.inclusive && self.low.class == self.high.class && {
            // A bracket or prefix class spans many values; a value class is a full encoding.
            self.low.display == self.high.display
        }
    }

    /// Whether the interval contains every value (`[MinKey, MaxKey]`).
    pub fn is_full(&self) -> bool {
        self.start() <= value_class(&Bson::MinKey) && self.end() > value_class(&Bson::MaxKey)
    }

    /// mongod's rendering: `[1, 1]`, `(5, inf.0]`, `["a", {})`.
    pub fn render(&self) -> String {
        format!(
            "{}{}, {}{}",
            if self.low.inclusive { '[' } else { '(' },
            self.low.display,
            self.high.display,
            if self.high.inclusive { ']' } else { ')' },
        )
    }
}

/// The ordered, disjoint intervals of one field; `None` stands for "unbounded".
pub type FieldBounds = Vec<Interval>;

/// The smallest key above every key starting with `class` (tags never reach `FF`).
fn after_class(class: &[u8]) -> Vec<u8> {
    keys::prefix_end(class).unwrap_or_else(|| vec![0xFF; class.len() + 1])
}

fn value_class(v: &Bson) -> Vec<u8> {
    let mut out = Vec::new();
    keys::encode_value(v, &mut out);
    out
}

pub(crate) fn value_endpoint(v: &Bson, inclusive: bool) -> Endpoint {
    Endpoint {
        class: value_class(v),
        inclusive,
        display: render(v),
    }
}

/// The start of `example`'s type bracket: below every value of it.
fn bracket_start(example: &Bson) -> Endpoint {
    Endpoint {
        class: vec![keys::type_tag(example)],
        inclusive: true,
        display: bracket_display(example, true),
    }
}

/// The end of `example`'s type bracket: above every value of it.
fn bracket_end(example: &Bson) -> Endpoint {
    Endpoint {
        class: vec![keys::type_tag(example)],
        inclusive: true,
        display: bracket_display(example, false),
    }
}

/// How mongod prints a bracket's ends: numbers run from `-inf.0` to `inf.0`, strings from `""`
/// to `{}`; other brackets by their type's name.
fn bracket_display(example: &Bson, start: bool) -> String {
    match (type_bracket(example), start) {
        (10, true) => "-inf.0".into(),
        (10, false) => "inf.0".into(),
        (15, true) => "\"\"".into(),
        (15, false) => "{}".into(),
        (20, true) => "{}".into(),
        (20, false) => "[]".into(),
        (_, true) => format!("min {}", crate::query::path::type_name(example)),
        (_, false) => format!("max {}", crate::query::path::type_name(example)),
    }
}

/// Intersection of two interval lists (each ordered and disjoint).
pub fn intersect(a: &[Interval], b: &[Interval]) -> FieldBounds {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            let low = if x.start() >= y.start() {
                &x.low
            } else {
                &y.low
            };
            let high = if x.end() <= y.end() { &x.high } else { &y.high };
            let i = Interval {
                low: low.clone(),
                high: high.clone(),
            };
            if !i.is_empty() {
                out.push(i);
            }
        }
    }
    normalize(out)
}

/// Sorts intervals and merges those that overlap or touch; drops empty ones.
pub fn normalize(mut intervals: Vec<Interval>) -> FieldBounds {
    intervals.retain(|i| !i.is_empty());
    intervals.sort_by_key(Interval::start);
    let mut out: Vec<Interval> = Vec::with_capacity(intervals.len());
    for i in intervals {
        match out.last_mut() {
            Some(last) if i.start() <= last.end() => {
                if i.end() > last.end() {
                    last.high = i.high;
                }
            }
            _ => out.push(i),
        }
    }
    out
}

/// The predicates a conjunctive filter places on each path (`a.b` joined), from its top level
/// and nested `$and`s. `$or`/`$nor` branches are not conjuncts and are left out.
pub(crate) fn conjuncts(expr: &Expr) -> BTreeMap<String, Vec<&Pred>> {
    let mut out: BTreeMap<String, Vec<&Pred>> = BTreeMap::new();
    // Iterative: the filter's nesting is client input.
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::And(children) => stack.extend(children.iter().rev()),
            Expr::Field { path, preds } => out.entry(path.join(".")).or_default().extend(preds),
            Expr::Or(_) | Expr::Nor(_) | Expr::Expression(_) => {}
        }
    }
    out
}

/// The bounds `preds` (all on one field) give that field. `multikey`: the field may hold
/// arrays, so each predicate may be satisfied by a different element and bounds of two
/// predicates cannot be intersected; the first boundable one is used alone.
pub(crate) fn field_bounds(
    preds: &[&Pred],
    multikey: bool,
    ks: KeyStrings<'_>,
) -> Option<FieldBounds> {
    let mut result: Option<FieldBounds> = None;
    for pred in preds {
        let Some(bounds) = pred_bounds(pred, ks) else {
            continue;
        };
        result = Some(match result {
            None => bounds,
            Some(_) if multikey => return result,
            Some(current) => intersect(&current, &bounds),
        });
    }
    result
}

/// Whether a document's single (non-array) value satisfies `pred` exactly when its index entry
/// lies in the predicate's bounds: equality and `$in` of plain values, and ranges within a type
/// bracket. Regexes, `null` comparisons, NaN and MinKey/MaxKey targets are not.
pub(crate) fn is_exact(pred: &Pred) -> bool {
    let plain = |v: &Bson| !matches!(v, Bson::Array(_) | Bson::MinKey | Bson::MaxKey) && !is_nan(v);
    match pred {
        Pred::Eq(v) => plain(v),
        // A `$lt`/`$lte` of a number scans from the start of the numbers, where NaN sorts
        // (below -inf, as in mongod), which the comparison does not match.
        Pred::Cmp(op, v) => {
            plain(v)
                && !matches!(v, Bson::Null | Bson::Undefined)
                && !(is_number(v) && matches!(op, CmpOp::Lt | CmpOp::Lte))
        }
        Pred::In { values, regexes } => regexes.is_empty() && values.iter().all(plain),
        _ => false,
    }
}

/// The values one predicate can be satisfied by, or `None` when it cannot be bounded. Not
/// recursive: the predicates inside `$all` and `$elemMatch` are bounded one level deep only.
fn pred_bounds(pred: &Pred, ks: KeyStrings<'_>) -> Option<FieldBounds> {
    match pred {
        // `$all` holds only if its first member does.
        Pred::All(members) => members.iter().find_map(|p| leaf_bounds(p, ks)),
        // Every predicate holds on one element, which has an entry of its own: the bounds of
        // the predicates intersect, even on a multikey index.
        Pred::ElemMatchValue(members) => members
            .iter()
            .filter_map(|p| leaf_bounds(p, ks))
            .reduce(|a, b| intersect(&a, &b)),
        other => leaf_bounds(other, ks),
    }
}

/// Bounds of a predicate that holds no other predicates.
fn leaf_bounds(pred: &Pred, ks: KeyStrings<'_>) -> Option<FieldBounds> {
    // A regex matches strings by their bytes: an index keyed by sort keys cannot bound it.
    let regexes_bounded = ks.index.is_none();
    match pred {
        Pred::Eq(v) => eq_bounds(ks.key(v)?.as_ref()).map(|i| vec![i]),
        Pred::Cmp(op, v) => cmp_bounds(*op, ks.key(v)?.as_ref()),
        Pred::In { values, regexes } => {
            if !regexes.is_empty() && !regexes_bounded {
                return None;
            }
            let mut out = Vec::with_capacity(values.len() + regexes.len());
            for v in values {
                out.push(eq_bounds(ks.key(v)?.as_ref())?);
            }
            for r in regexes {
                out.extend(regex_bounds(r));
            }
            Some(normalize(out))
        }
        Pred::Regex(r) if regexes_bounded => Some(normalize(regex_bounds(r))),
        Pred::AlwaysFalse => Some(Vec::new()),
        _ => None,
    }
}

/// Equality to `v`: the point `v` (for `null` it also stands for a missing field, which the
/// index stores as `null`). An array value may match a whole array, which no entry holds.
fn eq_bounds(v: &Bson) -> Option<Interval> {
    match v {
        Bson::Array(_) => None,
        _ => Some(Interval::point(v)),
    }
}

fn cmp_bounds(op: CmpOp, v: &Bson) -> Option<FieldBounds> {
    let inclusive = matches!(op, CmpOp::Lte | CmpOp::Gte);
    let upward = matches!(op, CmpOp::Gt | CmpOp::Gte);
    let one = |i: Interval| Some(vec![i]);
    match v {
        Bson::Array(_) => None,
        // `$lte: null` and `$gte: null` are equality to null; `$lt`/`$gt` null match nothing.
        Bson::Null => Some(if inclusive {
            vec![Interval::point(v)]
        } else {
            Vec::new()
        }),
        // MinKey and MaxKey compare against every bracket, whole arrays included, which have
        // no entry of their own: an array of MinKeys is `$gt: MinKey` though its only entry is
        // MinKey. Such a predicate bounds nothing.
        Bson::MaxKey if !upward => one(Interval::full()),
        Bson::MinKey if upward => one(Interval::full()),
        Bson::MaxKey | Bson::MinKey => Some(if inclusive {
            vec![Interval::point(v)]
        } else {
            Vec::new()
        }),
        // NaN is equal to NaN and comparable to nothing else.
        _ if is_nan(v) => Some(if inclusive {
            vec![Interval::point(v)]
        } else {
            Vec::new()
        }),
        _ if upward => Some(normalize(vec![Interval {
            low: value_endpoint(v, inclusive),
            high: bracket_end(v),
        }])),
        _ => Some(normalize(vec![Interval {
            low: bracket_start(v),
            high: value_endpoint(v, inclusive),
        }])),
    }
}

fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

fn is_nan(v: &Bson) -> bool {
    match v {
        Bson::Double(d) => d.is_nan(),
        Bson::Decimal128(d) => matches!(Parts::of(d), Parts::NaN),
        _ => false,
    }
}

/// A regex matches strings (all of them, or those with its literal prefix when it is anchored
/// at the start) and a stored regex equal to it.
fn regex_bounds(r: &RegexPred) -> Vec<Interval> {
    let strings = match literal_prefix(&r.pattern, &r.options) {
        Some(prefix) => {
            let mut class = vec![keys::type_tag(&Bson::String(String::new()))];
            keys::encode_string_prefix(&prefix, &mut class);
            let past =
                successor(&prefix).map_or_else(|| "{}".to_owned(), |s| render(&Bson::String(s)));
            Interval {
                high: Endpoint {
                    class: after_class(&class),
                    inclusive: false,
                    display: past,
                },
                low: Endpoint {
                    class,
                    inclusive: true,
                    display: render(&Bson::String(prefix)),
                },
            }
        }
        None => Interval {
            low: bracket_start(&Bson::String(String::new())),
            high: bracket_end(&Bson::String(String::new())),
        },
    };
    let stored = Bson::RegularExpression(Regex {
        pattern: r.pattern.clone(),
        options: r.options.clone(),
    });
    vec![strings, Interval::point(&stored)]
}

/// The string just past every string starting with `prefix` (its last character incremented),
/// for display only.
fn successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    let last = chars.pop()?;
    let next = char::from_u32(u32::from(last) + 1)?;
    chars.push(next);
    Some(chars.into_iter().collect())
}

/// The literal text every match of `pattern` starts with, when the pattern is anchored at the
/// start of the string and has no alternation: `^abc.*` → `abc`. Case-insensitive and
/// extended patterns have none; with `m`, `^` may match after a newline, so only `\A` anchors.
pub fn literal_prefix(pattern: &str, options: &str) -> Option<String> {
    if options.contains('i') || options.contains('x') || pattern.contains('|') {
        return None;
    }
    let rest = if let Some(rest) = pattern.strip_prefix("\\A") {
        rest
    } else if !options.contains('m') {
        pattern.strip_prefix('^')?
    } else {
        return None;
    };
    let mut prefix = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(&c) = chars.peek() {
        if ".^$*+?()[]{}|\\".contains(c) {
            break;
        }
        prefix.push(c);
        chars.next();
    }
    // A quantifier after the last literal makes that character optional.
    if matches!(chars.peek(), Some('*' | '?' | '{')) {
        prefix.pop();
    }
    if prefix.is_empty() || prefix.contains('\0') {
        return None;
    }
    Some(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::filter::Filter;
    use bson::doc;

    #[test]
    fn exact_bounds_leave_out_what_the_comparison_does_not_match() {
        // A count from index entries alone trusts these: `$lte: 1` scans NaN's keys too.
        for (filter, exact) in [
            (doc! {"a": 1}, true),
            (doc! {"a": {"$gte": 1}}, true),
            (doc! {"a": {"$gt": 1}}, true),
            (doc! {"a": {"$lte": 1}}, false),
            (doc! {"a": {"$lt": 1.5}}, false),
            (doc! {"a": {"$lt": "b"}}, true),
            (doc! {"a": {"$in": [1, 2]}}, true),
            (doc! {"a": {"$lte": f64::NAN}}, false),
            (doc! {"a": {"$gt": null}}, false),
        ] {
            let compiled = Filter::compile(&filter).unwrap();
            let preds = conjuncts(compiled.expr()).remove("a").unwrap();
            assert_eq!(preds.iter().all(|p| is_exact(p)), exact, "{filter}");
        }
    }

    fn bounds_of(filter: bson::Document, field: &str, multikey: bool) -> Option<Vec<String>> {
        let filter = Filter::compile(&filter).unwrap();
        let preds = conjuncts(filter.expr());
        let preds = preds.get(field).cloned().unwrap_or_default();
        field_bounds(&preds, multikey, KeyStrings::default())
            .map(|b| b.iter().map(Interval::render).collect())
    }

    #[test]
    fn equality_in_and_ranges_with_type_bracketing() {
        assert_eq!(
            bounds_of(doc! {"a": 5}, "a", false).unwrap(),
            vec!["[5, 5]"]
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$in": [3, 1, 3]}}, "a", false).unwrap(),
            vec!["[1, 1]", "[3, 3]"]
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$gt": 5}}, "a", false).unwrap(),
            vec!["(5, inf.0]"]
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$gte": 1, "$lt": 9}}, "a", false).unwrap(),
            vec!["[1, 9)"]
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$lte": "m"}}, "a", false).unwrap(),
            vec!["[\"\", \"m\"]"]
        );
        assert_eq!(bounds_of(doc! {"b": 1}, "a", false), None);
        assert_eq!(bounds_of(doc! {"a": {"$ne": 1}}, "a", false), None);
        assert_eq!(bounds_of(doc! {"a": [1, 2]}, "a", false), None);
    }

    #[test]
    fn multikey_fields_are_not_intersected() {
        assert_eq!(
            bounds_of(doc! {"a": {"$gt": 1, "$lt": 9}}, "a", true).unwrap(),
            vec!["(1, inf.0]"]
        );
        assert_eq!(
            bounds_of(
                doc! {"$and": [{"a": {"$gt": 1}}, {"a": {"$lt": 9}}]},
                "a",
                false
            )
            .unwrap(),
            vec!["(1, 9)"]
        );
    }

    #[test]
    fn elem_match_intersects_its_predicates_even_on_a_multikey_field() {
        assert_eq!(
            bounds_of(doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 9}}}, "a", true).unwrap(),
            vec!["(1, 9)"]
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$elemMatch": {"$ne": 1}}}, "a", true),
            None
        );
    }

    #[test]
    fn contradictions_and_null() {
        assert_eq!(
            bounds_of(doc! {"a": {"$gt": 9, "$lt": 1}}, "a", false).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$gt": 1, "$lt": "z"}}, "a", false).unwrap(),
            Vec::<String>::new(),
            "different brackets never overlap"
        );
        assert_eq!(
            bounds_of(doc! {"a": null}, "a", false).unwrap(),
            vec!["[null, null]"]
        );
        assert_eq!(
            bounds_of(doc! {"a": {"$lt": null}}, "a", false).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn regex_prefixes() {
        assert_eq!(literal_prefix("^abc", ""), Some("abc".into()));
        assert_eq!(literal_prefix("^abc.*x", ""), Some("abc".into()));
        assert_eq!(literal_prefix("^abc?", ""), Some("ab".into()));
        assert_eq!(literal_prefix("^a|b", ""), None);
        assert_eq!(literal_prefix("abc", ""), None);
        assert_eq!(literal_prefix("^abc", "i"), None);
        assert_eq!(literal_prefix("^abc", "m"), None);
        assert_eq!(literal_prefix("\\Aabc", "m"), Some("abc".into()));
        assert_eq!(
            bounds_of(doc! {"a": {"$regex": "^ab"}}, "a", false).unwrap(),
            vec!["[\"ab\", \"ac\")", "[/^ab/, /^ab/]"]
        );
    }

    #[test]
    fn strings_are_bounded_only_under_the_index_collation() {
        let ci = Collation::parse(&doc! {"locale": "en", "strength": 2})
            .unwrap()
            .unwrap();
        let bounds = |filter: bson::Document, index: Option<&Collation>, query| {
            let filter = Filter::compile_with(&filter, query).unwrap();
            let preds = conjuncts(filter.expr()).remove("a").unwrap_or_default();
            field_bounds(&preds, false, KeyStrings { index, query })
        };
        let (same, other) = (Some(&ci), None);
        let upper = bounds(doc! {"a": "ABC"}, same, same);
        assert!(upper.is_some());
        assert_eq!(upper, bounds(doc! {"a": "abc"}, same, same));
        assert_eq!(bounds(doc! {"a": "abc"}, same, other), None);
        assert_eq!(bounds(doc! {"a": "abc"}, other, same), None);
        assert_eq!(bounds(doc! {"a": {"$regex": "^ab"}}, same, same), None);
        assert!(bounds(doc! {"a": {"$regex": "^ab"}}, other, same).is_some());
        assert!(bounds(doc! {"a": {"$gt": 5}}, same, other).is_some());
    }
}
