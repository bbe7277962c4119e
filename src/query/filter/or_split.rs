//! A filter split at its top-level `$or`, for a plan that scans one index range per branch.
//!
//! A document that branch `i`'s scan finds matches the whole filter exactly when it matches
//! branch `i` and the rest of the filter (the filter with that `$or` taken out): the `$or`
//! is then satisfied by branch `i`. So each branch's scan tests only its branch and the rest,
//! and a filter of `n` branches costs each document one branch, not up to all `n` of them;
//! explain shows each branch's filter, not the whole one `n` times.

use super::{top_level_fields, Expr, Filter};
use std::sync::Arc;

/// [`Filter::split_or`]'s result.
#[derive(Debug, Clone)]
pub struct OrSplit {
    /// The filter without its `$or` (empty when the `$or` was all of it).
    pub rest: Filter,
    /// Each branch of the `$or`, as a filter of its own, in order.
    pub branches: Vec<Filter>,
}

impl Filter {
    /// The first `$or` among the filter's top-level conjuncts (through nested `$and`s, in
    /// document order) and the rest of the filter; `None` when there is no such `$or`.
    pub fn split_or(&self) -> Option<OrSplit> {
        let mut rest = (*self.root).clone();
        let branches = take_top_level_or(&mut rest)?;
        let count = u32::try_from(branches.len()).unwrap_or(u32::MAX).max(1);
        // The filter's work is mostly its branches': each one is charged its share.
        let share = (self.work / count).max(1);
        let part = |root: Expr, work: u32| Filter {
            fields: top_level_fields(&root),
            root: Arc::new(root),
            collation: self.collation.clone(),
            work,
        };
        let branches = branches.into_iter().map(|b| part(b, share)).collect();
        let rest_work = self.work.saturating_sub(share.saturating_mul(count)).max(1);
        Some(OrSplit {
            rest: part(rest, rest_work),
            branches,
        })
    }

    /// The branches of the first `$or` among the top-level conjuncts, without the rest.
    pub(crate) fn top_level_or(&self) -> Option<&[Expr]> {
        let mut stack = vec![&*self.root];
        while let Some(e) = stack.pop() {
            match e {
                Expr::And(children) => stack.extend(children.iter().rev()),
                Expr::Or(branches) => return Some(branches),
                _ => {}
            }
        }
        None
    }
}

/// Takes the first top-level `$or` out of `root` (the one [`Filter::top_level_or`] finds)
/// and out of the conjunction that holds it. Iterative: the nesting of `$and`s is client
/// input.
fn take_top_level_or(root: &mut Expr) -> Option<Vec<Expr>> {
    // The child indexes from the root to the `$or`, found in the order `top_level_or` walks.
    let mut stack: Vec<(&Expr, Vec<usize>)> = vec![(root, Vec::new())];
    let mut path = loop {
        let (e, path) = stack.pop()?;
        match e {
            Expr::Or(_) => break path,
            Expr::And(children) => {
                for (i, child) in children.iter().enumerate().rev() {
                    let mut inner = path.clone();
                    inner.push(i);
                    stack.push((child, inner));
                }
            }
            _ => {}
        }
    };
    drop(stack);
    let last = path.pop()?;
    let mut parent = root;
    for i in path {
        let Expr::And(children) = parent else {
            return None;
        };
        parent = children.get_mut(i)?;
    }
    let Expr::And(children) = parent else {
        return None;
    };
    match children.remove(last) {
        Expr::Or(branches) => Some(branches),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn split(filter: bson::Document) -> Option<OrSplit> {
        Filter::compile(&filter).unwrap().split_or()
    }

    #[test]
    fn a_document_matches_the_filter_exactly_when_it_matches_a_branch_and_the_rest() {
        let filters = [
            doc! {"$or": [{"a": 1}, {"b": 2}]},
            doc! {"c": 3, "$or": [{"a": 1}, {"b": 2}]},
            doc! {"$and": [{"c": {"$gt": 0}}, {"$or": [{"a": 1}, {"a": {"$gte": 5}}]}]},
            doc! {"$and": [{"$and": [{"$or": [{"a": 1}, {"b": 2}]}]}], "c": 3},
            doc! {"$or": [{"a": 1}, {"b": 2}], "$and": [{"$or": [{"c": 3}, {"c": 4}]}]},
        ];
        let docs = [
            doc! {"a": 1, "c": 3},
            doc! {"b": 2, "c": 3},
            doc! {"a": 1, "b": 2},
            doc! {"a": 6, "c": 4},
            doc! {"c": 3},
            doc! {"a": 1, "c": 4},
            doc! {},
        ];
        for filter in filters {
            let whole = Filter::compile(&filter).unwrap();
            let parts = split(filter.clone()).unwrap();
            for d in &docs {
                let by_parts = parts
                    .branches
                    .iter()
                    .any(|b| b.matches(d).unwrap() && parts.rest.matches(d).unwrap());
                assert_eq!(whole.matches(d).unwrap(), by_parts, "{filter} on {d}");
            }
        }
    }

    #[test]
    fn the_split_is_at_the_or_the_planner_scans() {
        let filter =
            Filter::compile(&doc! {"c": 3, "$and": [{"$or": [{"a": 1}, {"b": 2}, {"d": 4}]}]})
                .unwrap();
        let parts = filter.split_or().unwrap();
        assert_eq!(parts.branches.len(), filter.top_level_or().unwrap().len());
        assert!(parts.rest.tests_field("c"));
        assert!(!parts.rest.tests_field("a") && !parts.rest.tests_field("d"));
        assert!(parts.branches[2].tests_field("d"));
        assert!(split(doc! {"$or": [{"a": 1}]}).unwrap().rest.is_empty());
    }

    #[test]
    fn a_filter_without_a_top_level_or_does_not_split() {
        assert!(split(doc! {"a": 1}).is_none());
        assert!(split(doc! {"$nor": [{"$or": [{"a": 1}]}]}).is_none());
        assert!(split(doc! {"a": {"$elemMatch": {"$or": [{"b": 1}]}}}).is_none());
    }

    #[test]
    fn thousands_of_branches_split_in_linear_time() {
        let branches: Vec<bson::Document> = (0..20_000)
            .map(|i| doc! {"a": {"$gte": i, "$lt": i + 1}})
            .collect();
        let parts = split(doc! {"$or": branches, "b": 1}).unwrap();
        assert_eq!(parts.branches.len(), 20_000);
        assert!(parts.branches.iter().all(|b| b.work >= 1));
    }
}
