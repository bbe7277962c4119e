//! Whether a query may use a partial index: only when every document the query matches is in
//! the index, that is when the query implies the index's `partialFilterExpression` (mongod's
//! `expression::isSubsetOf`). The check is sound and conservative: it proves implication
//! predicate by predicate on the same path (equality, `$in`, ranges within one type bracket,
//! `$exists: true`, `$type`), through the filter's `$and`s and `$or`s and the query's `$and`s
//! and top-level `$or`; whatever it cannot prove, it answers "no" and the planner looks
//! elsewhere.
//!
//! Owns: the implication check. Does not own: which documents the index holds
//! (`documents::partial`) or the choice among usable indexes (`planner`).
//!
//! Values are compared in the BSON order without collation, so under a non-simple collation
//! (the query's or the index's) a predicate whose value holds strings is never proven.

use crate::query::collation::has_strings;
use crate::query::compare::{compare_values, type_bracket, values_equal};
use crate::query::filter::{type_code, CmpOp, Expr, Pred, TypeSel};
use bson::Bson;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Whether every document `query` matches also matches `filter`. `simple`: both the query and
/// the index compare strings by their bytes.
pub(crate) fn implies(query: &Expr, filter: &Expr, simple: bool) -> bool {
    let facts = Facts::of(query);
    facts.prove(filter, simple, true)
}

/// What the query asserts: its field predicates under `$and`s, by path, and its `$or`s.
struct Facts<'q> {
    fields: BTreeMap<&'q [String], Vec<&'q Pred>>,
    ors: Vec<&'q [Expr]>,
}

impl<'q> Facts<'q> {
    fn of(query: &'q Expr) -> Facts<'q> {
        let mut facts = Facts {
            fields: BTreeMap::new(),
            ors: Vec::new(),
        };
        facts.add(query);
        facts
    }

    /// Adds `expr`'s conjuncts. The tree's depth was bounded when the filter was compiled.
    fn add(&mut self, expr: &'q Expr) {
        match expr {
            Expr::And(children) => children.iter().for_each(|c| self.add(c)),
            Expr::Field { path, preds } => self
                .fields
                .entry(path.as_slice())
                .or_default()
                .extend(preds.iter()),
            Expr::Or(branches) => self.ors.push(branches),
            Expr::Nor(_) | Expr::Expression(_) => {}
        }
    }

    /// Whether these facts imply `filter`. `split`: a query `$or` may still be taken apart
    /// (once, so the work stays linear in the query's branches).
    fn prove(&self, filter: &Expr, simple: bool, split: bool) -> bool {
        if self.prove_directly(filter, simple) {
            return true;
        }
        // {$or: [A, B], rest} implies F when (A, rest) and (B, rest) each do.
        split
            && self.ors.iter().any(|branches| {
                !branches.is_empty()
                    && branches.iter().all(|branch| {
                        let mut facts = Facts {
                            fields: self.fields.clone(),
                            ors: Vec::new(),
                        };
                        facts.add(branch);
                        facts.prove(filter, simple, false)
                    })
            })
    }

    fn prove_directly(&self, filter: &Expr, simple: bool) -> bool {
        match filter {
            Expr::And(children) => children.iter().all(|c| self.prove(c, simple, true)),
            Expr::Or(children) => children.iter().any(|c| self.prove_directly(c, simple)),
            Expr::Field { path, preds } => {
                let known = self.fields.get(path.as_slice());
                preds.iter().all(|wanted| {
                    known.is_some_and(|qs| qs.iter().any(|q| pred_implies(q, wanted, simple)))
                })
            }
            Expr::Nor(_) | Expr::Expression(_) => false,
        }
    }
}

/// A value implication may rest on: not an array (equality to an array also matches an
/// element), not null/undefined (they match missing fields), not a regex, MinKey, MaxKey or NaN
/// (their comparisons span brackets or order nothing), and no strings under a collation.
fn plain(value: &Bson, simple: bool) -> bool {
    // Decimal128 is left out whole: telling its NaN apart needs its decoding.
    let nan = match value {
        Bson::Double(d) => d.is_nan(),
        Bson::Decimal128(_) => true,
        _ => false,
    };
    !nan && !matches!(
        value,
        Bson::Array(_)
            | Bson::Null
            | Bson::Undefined
            | Bson::RegularExpression(_)
            | Bson::MinKey
            | Bson::MaxKey
    ) && (simple || !has_strings(value))
}

/// Whether a path's values satisfying `q` always satisfy `p` (some value satisfying `q`
/// satisfies `p`: both read "some value at the path").
fn pred_implies(q: &Pred, p: &Pred, simple: bool) -> bool {
    match p {
        Pred::Eq(w) => match q {
            // The same equality: same meaning whatever the value (null, arrays included).
            Pred::Eq(v) => (simple || !has_strings(v)) && same(v, w),
            Pred::In { values, regexes } => {
                regexes.is_empty()
                    && !values.is_empty()
                    && values.iter().all(|v| plain(v, simple) && same(v, w))
            }
            _ => false,
        },
        Pred::In { values, regexes } => {
            let listed = |v: &Bson| values.iter().any(|w| same(v, w));
            match q {
                Pred::Eq(v) => (simple || !has_strings(v)) && listed(v),
                Pred::In {
                    values: qs,
                    regexes: qr,
                } => {
                    qr.is_empty()
                        && regexes.is_empty()
                        && qs.iter().all(|v| (simple || !has_strings(v)) && listed(v))
                }
                _ => false,
            }
        }
        Pred::Exists(true) => excludes_missing(q),
        Pred::Cmp(op, w) if plain(w, simple) => match q {
            Pred::Eq(v) => plain(v, simple) && satisfies(v, *op, w),
            Pred::In { values, regexes } => {
                regexes.is_empty()
                    && !values.is_empty()
                    && values
                        .iter()
                        .all(|v| plain(v, simple) && satisfies(v, *op, w))
            }
            Pred::Cmp(qop, v) if plain(v, simple) && type_bracket(v) == type_bracket(w) => {
                range_implies(*qop, v, *op, w)
            }
            _ => false,
        },
        Pred::Type(wanted) => match q {
            Pred::Eq(v) => plain(v, true) && has_type(v, wanted),
            Pred::In { values, regexes } => {
                regexes.is_empty()
                    && !values.is_empty()
                    && values.iter().all(|v| plain(v, true) && has_type(v, wanted))
            }
            Pred::Type(given) => given.iter().all(|s| wanted.contains(s)),
            // A numeric range holds only numbers; dates' bracket holds only dates.
            Pred::Cmp(_, v) if plain(v, true) => {
                (type_bracket(v) == type_bracket(&Bson::Int32(0))
                    && wanted.contains(&TypeSel::Number))
                    || (matches!(v, Bson::DateTime(_)) && wanted.contains(&TypeSel::Code(9)))
            }
            _ => false,
        },
        _ => false,
    }
}

/// The same value in the BSON order, in the same type bracket.
fn same(v: &Bson, w: &Bson) -> bool {
    type_bracket(v) == type_bracket(w) && values_equal(v, w)
}

/// Whether `q` can only hold of a field that exists.
fn excludes_missing(q: &Pred) -> bool {
    let present = |v: &Bson| !matches!(v, Bson::Null | Bson::Undefined);
    match q {
        Pred::Eq(v) => present(v),
        Pred::In { values, .. } => !values.is_empty() && values.iter().all(present),
        Pred::Cmp(_, v) => present(v) && !matches!(v, Bson::MinKey | Bson::MaxKey),
        Pred::Exists(true) | Pred::Type(_) => true,
        _ => false,
    }
}

fn has_type(v: &Bson, wanted: &[TypeSel]) -> bool {
    wanted.iter().any(|s| match s {
        TypeSel::Number => type_bracket(v) == type_bracket(&Bson::Int32(0)),
        TypeSel::Code(code) => type_code(v) == *code,
    })
}

/// `v op w`, within one type bracket.
fn satisfies(v: &Bson, op: CmpOp, w: &Bson) -> bool {
    if type_bracket(v) != type_bracket(w) {
        return false;
    }
    let order = compare_values(v, w);
    match op {
        CmpOp::Lt => order == Ordering::Less,
        CmpOp::Lte => order != Ordering::Greater,
        CmpOp::Gt => order == Ordering::Greater,
        CmpOp::Gte => order != Ordering::Less,
    }
}

/// Whether a value `qop v` (same bracket as `w`) is always `op w`.
fn range_implies(qop: CmpOp, v: &Bson, op: CmpOp, w: &Bson) -> bool {
    use CmpOp::*;
    let order = compare_values(v, w);
    match (qop, op) {
        (Gt, Gt) | (Gt, Gte) | (Gte, Gte) => order != Ordering::Less,
        (Gte, Gt) => order == Ordering::Greater,
        (Lt, Lt) | (Lt, Lte) | (Lte, Lte) => order != Ordering::Greater,
        (Lte, Lt) => order == Ordering::Less,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::filter::Filter;
    use bson::{doc, Document};

    fn check(query: Document, filter: Document) -> bool {
        let q = Filter::compile(&query).unwrap();
        let f = Filter::compile(&filter).unwrap();
        implies(q.expr(), f.expr(), true)
    }

    #[test]
    fn implication_table() {
        let cases = [
            // (query, partial filter, implied)
            (doc! {"a": 1, "active": true}, doc! {"active": true}, true),
            (doc! {"a": 1}, doc! {"active": true}, false),
            (doc! {"active": false}, doc! {"active": true}, false),
            (doc! {"n": 7}, doc! {"n": {"$gt": 5}}, true),
            (doc! {"n": 5}, doc! {"n": {"$gt": 5}}, false),
            (doc! {"n": 5}, doc! {"n": {"$gte": 5}}, true),
            (doc! {"n": {"$gt": 6}}, doc! {"n": {"$gt": 5}}, true),
            (doc! {"n": {"$gte": 5}}, doc! {"n": {"$gt": 5}}, false),
            (doc! {"n": {"$gt": 5}}, doc! {"n": {"$gte": 5}}, true),
            (doc! {"n": {"$lt": 3}}, doc! {"n": {"$lte": 3}}, true),
            (doc! {"n": {"$lte": 3}}, doc! {"n": {"$lt": 3}}, false),
            (doc! {"n": {"$lt": 3}}, doc! {"n": {"$gt": 0}}, false),
            (doc! {"n": "7"}, doc! {"n": {"$gt": 5}}, false),
            (doc! {"n": {"$gt": "a"}}, doc! {"n": {"$gt": 5}}, false),
            (doc! {"n": {"$in": [6, 7]}}, doc! {"n": {"$gt": 5}}, true),
            (doc! {"n": {"$in": [5, 7]}}, doc! {"n": {"$gt": 5}}, false),
            (doc! {"n": [6, 7]}, doc! {"n": {"$gt": 5}}, false),
            (doc! {"a": 1}, doc! {"a": {"$exists": true}}, true),
            (doc! {"a": null}, doc! {"a": {"$exists": true}}, false),
            (doc! {"a": {"$gt": 1}}, doc! {"a": {"$exists": true}}, true),
            (
                doc! {"a": {"$exists": false}},
                doc! {"a": {"$exists": true}},
                false,
            ),
            (doc! {"a": {"$ne": 1}}, doc! {"a": {"$exists": true}}, false),
            (doc! {"a": "x"}, doc! {"a": {"$type": "string"}}, true),
            (doc! {"a": 1}, doc! {"a": {"$type": "number"}}, true),
            (doc! {"a": 1}, doc! {"a": {"$type": "string"}}, false),
            (
                doc! {"a": {"$gt": 1}},
                doc! {"a": {"$type": "number"}},
                true,
            ),
            (doc! {"a": 2}, doc! {"a": {"$in": [1, 2]}}, true),
            (
                doc! {"a": {"$in": [1, 2]}},
                doc! {"a": {"$in": [1, 2, 3]}},
                true,
            ),
            (
                doc! {"a": {"$in": [1, 4]}},
                doc! {"a": {"$in": [1, 2, 3]}},
                false,
            ),
            (doc! {"a": null}, doc! {"a": null}, true),
            (doc! {"b": 1}, doc! {"a": null}, false),
            (
                doc! {"a": 1, "b": 2},
                doc! {"$or": [{"a": 1}, {"c": 3}]},
                true,
            ),
            (
                doc! {"$or": [{"a": 1}, {"a": 2}]},
                doc! {"a": {"$in": [1, 2]}},
                true,
            ),
            (
                doc! {"$or": [{"a": 1}, {"a": 3}]},
                doc! {"a": {"$in": [1, 2]}},
                false,
            ),
            (
                doc! {"x": 1, "a": 5, "b": {"$lt": 2}},
                doc! {"a": {"$gte": 5}, "b": {"$lte": 2}},
                true,
            ),
            (
                doc! {"x": 1, "a": 5},
                doc! {"a": {"$gte": 5}, "b": {"$lte": 2}},
                false,
            ),
            (doc! {"$expr": {"$eq": ["$a", 1]}}, doc! {"a": 1}, false),
            (doc! {"$nor": [{"a": {"$ne": 1}}]}, doc! {"a": 1}, false),
            (doc! {"a.b": 1}, doc! {"a": {"$exists": true}}, false),
            (doc! {}, doc! {"a": 1}, false),
            (doc! {"a": 1}, doc! {}, true),
        ];
        for (query, filter, expected) in cases {
            assert_eq!(
                check(query.clone(), filter.clone()),
                expected,
                "{query} => {filter}"
            );
        }
    }

    #[test]
    fn strings_are_not_proven_under_a_collation() {
        let q = Filter::compile(&doc! {"s": "abc"}).unwrap();
        let f = Filter::compile(&doc! {"s": "abc"}).unwrap();
        assert!(implies(q.expr(), f.expr(), true));
        assert!(!implies(q.expr(), f.expr(), false));
        let q = Filter::compile(&doc! {"s": "abc"}).unwrap();
        let f = Filter::compile(&doc! {"s": {"$exists": true}}).unwrap();
        assert!(implies(q.expr(), f.expr(), false));
    }
}
