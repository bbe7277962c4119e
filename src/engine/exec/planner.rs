//! Choosing a plan: a `hint` decides alone; an `_id` pinned to values is a point lookup
//! (IDHACK); otherwise every ready index whose leading field the filter bounds (a hashed field
//! only by equality or `$in`: `hashed`), or that provides the requested sort, is a candidate,
//! and when several are, they race as in mongod's multi-planner: each runs until it has produced a first batch (101 documents), reached its
//! end, or done 10,000 units of work, and the most productive wins (results per unit of work,
//! with a bonus for finishing and for needing no blocking sort). No candidate means a
//! collection scan.

use super::bounds::{self, FieldBounds, Interval};
use super::cache::{self, PlanCache};
use super::plan::{scan_ranges, IndexScan, Node, ScannedIndex};
use super::source::Source;
use super::stages::{self, RunContext, StageStats, WorkBudget};
use super::{keyed, partial, Hint, ReadRequest};
use crate::engine::catalog::{CollectionMeta, IndexMeta};
use crate::engine::documents;
use crate::error::{Error, ErrorCode, Result};
use crate::query::compare::compare_documents;
use crate::query::filter::{Expr, Pred};
use crate::storage::keys::{self, Direction};
use bson::{Bson, Document};
use std::collections::BTreeMap;
use std::sync::Arc;

/// mongod's `internalQueryPlanEvaluationWorks`.
const TRIAL_WORKS: u64 = 10_000;
/// mongod's `internalQueryPlanEvaluationMaxResults`.
const TRIAL_RESULTS: u64 = 101;

/// The chosen plan, and the candidates it beat with what they did in the race.
#[derive(Debug, Clone)]
pub struct Choice {
    pub winner: Node,
    /// What the winner did in the race, when there was one.
    pub winner_trial: Option<StageStats>,
    pub rejected: Vec<(Node, StageStats)>,
}

/// Chooses the plan for `req` on `meta`, racing candidates over `ctx`'s source.
pub fn choose<'r, S: Source<'r>>(
    meta: &CollectionMeta,
    req: &ReadRequest,
    ctx: &RunContext<S>,
    cache: Option<&PlanCache>,
) -> Result<Choice> {
    let mut candidates = candidates(meta, req)?;
    if candidates.len() <= 1 {
        let winner = candidates.pop().unwrap_or(Node::Eof);
        return Ok(Choice {
            winner: covered_count(meta, req, wrap(winner, req)),
            winner_trial: None,
            rejected: Vec::new(),
        });
    }
    let key = cache.map(|_| cache::key(meta, req));
    if let (Some(cache), Some(key)) = (cache, &key) {
        if let Some(choice) = cached(meta, cache, key, &mut candidates, req, ctx)? {
            return Ok(choice);
        }
    }
    let mut scored: Vec<(f64, Node, StageStats, u64)> = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        let node = wrap(candidate, req);
        let (score, stats, works) = trial(&node, req, ctx, TRIAL_WORKS)?;
        scored.push((score, node, stats, works));
    }
    // Highest score first; among equals the earlier candidate (fewer key fields) stays first.
    let best = scored
        .iter()
        .enumerate()
        .fold(0usize, |best, (i, (score, ..))| match scored.get(best) {
            Some((top, ..)) if score > top => i,
            _ => best,
        });
    let (_, winner, winner_stats, works) = scored.remove(best);
    let winner = covered_count(meta, req, winner);
    if let (Some(cache), Some(key)) = (cache, key) {
        let plan = cache::signature(&winner);
        cache.put(key, cache::Entry { plan, works });
    }
    Ok(Choice {
        winner,
        winner_trial: Some(winner_stats),
        rejected: scored.into_iter().map(|(_, n, s, _)| (n, s)).collect(),
    })
}

/// The cached choice for `key`, if it is among the candidates and still produces its first
/// batch within ten times the work it took to win; otherwise the entry is evicted.
fn cached<'r, S: Source<'r>>(
    meta: &CollectionMeta,
    cache: &PlanCache,
    key: &cache::Key,
    candidates: &mut Vec<Node>,
    req: &ReadRequest,
    ctx: &RunContext<S>,
) -> Result<Option<Choice>> {
    let Some(entry) = cache.get(key) else {
        return Ok(None);
    };
    let Some(pos) = candidates
        .iter()
        .position(|c| cache::signature(c) == entry.plan)
    else {
        cache.evict(key);
        return Ok(None);
    };
    let node = wrap(candidates.swap_remove(pos), req);
    let budget = entry.works.saturating_mul(10).max(TRIAL_RESULTS);
    let (score, stats, _) = trial(&node, req, ctx, budget)?;
    // A trial that neither finished nor filled its first batch scores below 2.
    if score < 2.0 {
        cache.evict(key);
        candidates.push(node.leaf().clone());
        return Ok(None);
    }
    Ok(Some(Choice {
        winner: covered_count(meta, req, node),
        winner_trial: Some(stats),
        rejected: Vec::new(),
    }))
}

/// A count whose index scan's bounds are exactly its filter counts the scan's entries instead
/// of fetching documents (mongod's COUNT_SCAN): only for callers that only count, on a collection
/// without TTL of either model (an expired document's entries stay until it is reaped), through a ready,
/// dense, non-hashed index that no document gave an array.
fn covered_count(meta: &CollectionMeta, req: &ReadRequest, plan: Node) -> Node {
    if !req.count_only || !meta.ttl_model().never_expires() {
        return plan;
    }
    let (node, wrappers) = unwrap_leaf(plan);
    let node = match node {
        Node::IxScan(scan)
            if scan.index.id.is_some()
                && !documents::hashed::is_hashed(&scan.index.key)
                && !scan.index.multikey
                && !scan.index.sparse
                && bounds_are_the_filter(&scan, req) =>
        {
            Node::CountScan(scan)
        }
        other => other,
    };
    wrappers
        .into_iter()
        .rev()
        .fold(node, |inner, w| w.around(inner))
}

/// What wraps a leaf: its skip and limit (a count has no sort).
enum Wrapper {
    Skip(u64),
    Limit(u64),
    Sort(super::plan::SortParts),
}

impl Wrapper {
    fn around(self, input: Node) -> Node {
        let input = Box::new(input);
        match self {
            Wrapper::Skip(n) => Node::Skip { input, n },
            Wrapper::Limit(n) => Node::Limit { input, n },
            Wrapper::Sort(parts) => parts.around(input),
        }
    }
}

/// The leaf of `plan` and the stages above it, outermost first.
fn unwrap_leaf(plan: Node) -> (Node, Vec<Wrapper>) {
    let mut wrappers = Vec::new();
    let mut node = plan;
    loop {
        node = match node {
            Node::Skip { input, n } => {
                wrappers.push(Wrapper::Skip(n));
                *input
            }
            Node::Limit { input, n } => {
                wrappers.push(Wrapper::Limit(n));
                *input
            }
            Node::Sort {
                input,
                spec,
                pattern,
                limit,
            } => {
                wrappers.push(Wrapper::Sort(super::plan::SortParts {
                    spec,
                    pattern,
                    limit,
                }));
                *input
            }
            leaf => return (leaf, wrappers),
        };
    }
}

/// Whether the entries `scan` walks are exactly the documents the filter matches: the filter is
/// a conjunction of exact predicates (equality, `$in` of values, ranges within a type bracket)
/// on fields the scan bounds with exactly those predicates' intervals.
fn bounds_are_the_filter(scan: &IndexScan, req: &ReadRequest) -> bool {
    let expr = req.filter.expr();
    if !conjunction_of_fields(expr) {
        return false;
    }
    let conjuncts = bounds::conjuncts(expr);
    let fields = scan.index.fields();
    // Fields past the first one bounded to more than single values are not bounded by the scan.
    let bounded = scan
        .bounds
        .iter()
        .position(|(_, b)| !b.iter().all(Interval::is_point))
        .map_or(scan.bounds.len(), |i| i + 1);
    let key_strings = scan.index.key_strings(req.collation.as_ref());
    conjuncts.iter().all(|(path, preds)| {
        let Some(position) = fields.iter().position(|(f, _)| f == path) else {
            return false;
        };
        position < bounded
            && preds.iter().all(|p| bounds::is_exact(p))
            // A predicate the index cannot bound (a string compared under another collation
            // than the index's) is left out of the bounds, so they no longer are the filter.
            && preds
                .iter()
                .all(|p| bounds::field_bounds(&[*p], false, key_strings).is_some())
            && bounds::field_bounds(preds, false, key_strings)
                .is_some_and(|b| {
                    scan.bounds
                        .get(position)
                        .is_some_and(|(_, shown)| *shown == b)
                })
    })
}

/// Whether `expr` is an `$and` (at any depth) of field predicates only.
fn conjunction_of_fields(expr: &Expr) -> bool {
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::And(children) => stack.extend(children),
            Expr::Field { .. } => {}
            Expr::Or(_) | Expr::Nor(_) | Expr::Expression(_) => return false,
        }
    }
    true
}

/// Runs `node` for a bounded amount of work; its productivity and what it did.
fn trial<'r, S: Source<'r>>(
    node: &Node,
    req: &ReadRequest,
    ctx: &RunContext<S>,
    works: u64,
) -> Result<(f64, StageStats, u64)> {
    let budget = WorkBudget::new(works);
    let mut trial_ctx = ctx.clone();
    trial_ctx.budget = Some(Arc::clone(&budget));
    let (docs, stats) = stages::run(node, &trial_ctx);
    let wanted = req
        .limit
        .map_or(TRIAL_RESULTS, |l| l.min(TRIAL_RESULTS))
        .max(1);
    let mut produced = 0u64;
    let mut finished = true;
    for doc in docs {
        match doc {
            Ok(_) => produced += 1,
            Err(_) if budget.is_exhausted() => {
                finished = false;
                break;
            }
            Err(e) => return Err(e),
        }
        if produced >= wanted {
            finished = false;
            break;
        }
    }
    let works = budget.used().max(1) as f64;
    let mut score = 1.0 + produced as f64 / works;
    if finished || produced >= wanted {
        score += 1.0;
    }
    if !node.has_sort() {
        score += 0.0001;
    }
    Ok((score, stats, budget.used()))
}

/// Adds the blocking sort (when the leaf does not provide the order), skip and limit.
fn wrap(leaf: Node, req: &ReadRequest) -> Node {
    let mut node = leaf;
    let sorted_by_leaf = match &node {
        Node::IxScan(scan) => provided_order(scan, req).is_some(),
        _ => false,
    };
    if !req.sort.is_empty() && !sorted_by_leaf && !matches!(node, Node::Eof) {
        node = Node::Sort {
            input: Box::new(node),
            spec: req.sort.clone(),
            pattern: req.sort_pattern.clone(),
            limit: req.limit.map(|l| l.saturating_add(req.skip)),
        };
    }
    if req.skip > 0 {
        node = Node::Skip {
            input: Box::new(node),
            n: req.skip,
        };
    }
    if let Some(n) = req.limit {
        node = Node::Limit {
            input: Box::new(node),
            n,
        };
    }
    node
}

/// The leaf plans worth considering for `req`.
fn candidates(meta: &CollectionMeta, req: &ReadRequest) -> Result<Vec<Node>> {
    let conjuncts = bounds::conjuncts(req.filter.expr());
    if req.min.is_some() || req.max.is_some() {
        return min_max(meta, req).map(|n| vec![n]);
    }
    if let Some(hint) = &req.hint {
        return hinted(meta, req, hint, &conjuncts).map(|n| vec![n]);
    }
    if let Some(reverse) = req.natural_sort {
        return Ok(vec![Node::CollScan { reverse }]);
    }
    if let Some(ids) = conjuncts
        .get("_id")
        .and_then(|p| pinned_ids(p, req.collation.is_some()))
    {
        return Ok(vec![Node::IdHack { ids }]);
    }
    let mut out = Vec::new();
    let mut indexes = vec![ScannedIndex::id_index()];
    for index in meta.stored_indexes() {
        if plannable(index, req, None)? {
            indexes.push(ScannedIndex::secondary(index));
        }
    }
    // Fewer key fields first: among equally productive plans the simpler one wins.
    indexes.sort_by_key(|i| i.key.len());
    for index in indexes {
        let scan = index_scan(meta, index, &conjuncts, req);
        let bounded = scan.bounds.first().is_some_and(|(_, b)| !is_full(b));
        let sorts = !req.sort.is_empty() && provided_order(&scan, req).is_some();
        if scan.index.sparse && (!bounded || contains_null(&scan)) {
            // A sparse index lacks documents without the field, which the query may want.
            continue;
        }
        if bounded || sorts {
            if scan.ranges.is_empty() {
                return Ok(vec![Node::Eof]);
            }
            out.push(Node::IxScan(scan));
        }
    }
    if let Some(or) = or_plan(meta, req)? {
        out.push(or);
    }
    if out.is_empty() {
        out.push(Node::CollScan { reverse: false });
    }
    Ok(out)
}

/// A top-level `$or` whose every branch can use an index becomes the union of one index scan
/// per branch (the branch's bounded index with the fewest key fields).
fn or_plan(meta: &CollectionMeta, req: &ReadRequest) -> Result<Option<Node>> {
    let Some(branches) = req.filter.top_level_or() else {
        return Ok(None);
    };
    // A branch may use a partial index that the whole query, or the branch alone, implies.
    let mut indexes = vec![(ScannedIndex::id_index(), None)];
    for index in meta.stored_indexes().filter(|i| !i.sparse) {
        if plannable(index, req, None)? {
            indexes.push((ScannedIndex::secondary(index), None));
        } else if index.partial_filter.is_some() && !index.building && !index.hidden {
            indexes.push((ScannedIndex::secondary(index), Some(index)));
        }
    }
    indexes.sort_by_key(|(i, _)| i.key.len());
    // Each branch's scan is unordered with respect to the others: no sort is asked of them.
    let unsorted = ReadRequest {
        sort: Default::default(),
        ..req.clone()
    };
    let mut inputs = Vec::with_capacity(branches.len());
    for branch in branches {
        // Planning a branch is a unit of the operation's work (thousands of branches).
        crate::query::guard::tick()?;
        let conjuncts = bounds::conjuncts(branch);
        let mut found = None;
        for (index, partial) in &indexes {
            if let Some(partial) = partial {
                if !plannable(partial, req, Some(branch))? {
                    continue;
                }
            }
            let scan = index_scan(meta, index.clone(), &conjuncts, &unsorted);
            if scan.bounds.first().is_some_and(|(_, b)| !is_full(b)) {
                found = Some(scan);
                break;
            }
        }
        let Some(scan) = found else {
            return Ok(None);
        };
        inputs.push(Node::IxScan(scan));
    }
    // Each branch's scan tests its branch and the rest of the filter, not the whole `$or`.
    let Some(split) = req.filter.split_or() else {
        return Ok(None);
    };
    Ok(Some(Node::Or {
        inputs,
        branches: split.branches,
        rest: split.rest,
    }))
}

/// Whether the planner may scan `index` for `req` (or, with `branch`, for that branch of its
/// `$or`): a ready index that is not hidden, and, when partial, whose filter the query (or the
/// branch) implies (`partial`), so that it holds every document the scan must find.
fn plannable(index: &IndexMeta, req: &ReadRequest, branch: Option<&Expr>) -> Result<bool> {
    if index.building || index.hidden {
        return Ok(false);
    }
    let Some(filter) = crate::engine::documents::partial::filter_of(index)? else {
        return Ok(true);
    };
    let simple = req.collation.is_none() && index.collation.is_none();
    Ok(partial::implies(
        branch.unwrap_or(req.filter.expr()),
        filter.expr(),
        simple,
    ))
}

fn is_full(bounds: &FieldBounds) -> bool {
    bounds.len() == 1 && bounds.first().is_some_and(Interval::is_full)
}

fn contains_null(scan: &IndexScan) -> bool {
    // A hashed field's entries hold `null`'s hash where the field is missing.
    let null = match scan.bounds.first() {
        Some((field, _)) if documents::hashed::is_hashed_field(&scan.index.key, field) => {
            super::hashed::null_point()
        }
        _ => Interval::point(&Bson::Null),
    };
    scan.bounds.first().is_some_and(|(_, b)| {
        b.iter()
            .any(|i| i.start() <= null.start() && i.end() >= null.end())
    })
}

/// `min`/`max` scan exactly the key range they give of the index the hint names.
fn min_max(meta: &CollectionMeta, req: &ReadRequest) -> Result<Node> {
    let index = match &req.hint {
        None | Some(Hint::Natural { .. }) => {
            return Err(Error::new(
                ErrorCode::Location51173,
                "When using min()/max() a hint of which index to use must be provided",
            ))
        }
        Some(hint) => hinted_index(meta, req, hint)?,
    };
    let mut scan = keyed::min_max_scan(
        meta,
        index,
        req.min.as_ref(),
        req.max.as_ref(),
        req.collation.as_ref(),
    )?;
    scan.reverse = provided_order(&scan, req).unwrap_or(false);
    Ok(Node::IxScan(scan))
}

/// The index a hint names by name or key pattern.
fn hinted_index(meta: &CollectionMeta, req: &ReadRequest, hint: &Hint) -> Result<ScannedIndex> {
    let index = match hint {
        Hint::Natural { .. } => None,
        Hint::Name(name) if name == "_id_" => Some(ScannedIndex::id_index()),
        // A hidden index is not there for a hint, as on mongod; nor is a partial index whose
        // filter the query does not imply (a scan of it would miss documents).
        Hint::Name(name) => match meta.index(name).filter(|i| i.is_stored()) {
            Some(i) if plannable(i, req, None)? => Some(ScannedIndex::secondary(i)),
            _ => None,
        },
        Hint::Key(key) if is_id_pattern(key) => Some(ScannedIndex::id_index()),
        // Field by field, in order (`{b: 1, a: 1}` is not `{a: 1, b: 1}`), numbers by value.
        Hint::Key(key) => match meta
            .stored_indexes()
            .find(|i| compare_documents(&i.key, key).is_eq())
        {
            Some(i) if plannable(i, req, None)? => Some(ScannedIndex::secondary(i)),
            _ => None,
        },
    };
    index.ok_or_else(|| {
        Error::new(
            ErrorCode::BadValue,
            "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index",
        )
    })
}

/// The plan a hint names: `{$natural: ±1}`, or an index by name or key pattern.
fn hinted(
    meta: &CollectionMeta,
    req: &ReadRequest,
    hint: &Hint,
    conjuncts: &BTreeMap<String, Vec<&Pred>>,
) -> Result<Node> {
    if let Hint::Natural { reverse } = hint {
        return Ok(Node::CollScan { reverse: *reverse });
    }
    let index = hinted_index(meta, req, hint)?;
    Ok(Node::IxScan(index_scan(meta, index, conjuncts, req)))
}

fn is_id_pattern(key: &Document) -> bool {
    key.len() == 1
        && key.get("_id").is_some_and(|v| {
            matches!(v, Bson::Int32(1) | Bson::Int64(1) | Bson::Double(_))
                && crate::engine::documents::index_keys::direction_of(v) == Direction::Ascending
        })
}

/// `_id` values the filter pins `_id` to: `{_id: v}`, `{_id: {$eq: v}}`, `{_id: {$in: [...]}}`
/// with values that are not arrays, regexes, null or undefined. Sorted, without duplicates.
/// Under a collation, `_id`s holding strings are not pinned: the `_id` index keys them by bytes.
fn pinned_ids(preds: &[&Pred], collated: bool) -> Option<Vec<Bson>> {
    let pinnable = |v: &Bson| {
        !matches!(
            v,
            Bson::Array(_) | Bson::RegularExpression(_) | Bson::Null | Bson::Undefined
        ) && (!collated || !crate::query::collation::has_strings(v))
    };
    let mut ids = preds.iter().find_map(|p| match p {
        Pred::Eq(v) if pinnable(v) => Some(vec![v.clone()]),
        Pred::In { values, regexes } if regexes.is_empty() && values.iter().all(pinnable) => {
            Some(values.to_vec())
        }
        _ => None,
    })?;
    ids.sort_by(crate::query::compare::compare_values);
    ids.dedup_by(|a, b| crate::query::compare::values_equal(a, b));
    Some(ids)
}

/// A scan of `index` with the bounds the filter gives each of its fields, in the direction
/// that provides the requested sort when it can.
fn index_scan(
    meta: &CollectionMeta,
    index: ScannedIndex,
    conjuncts: &BTreeMap<String, Vec<&Pred>>,
    req: &ReadRequest,
) -> IndexScan {
    let fields: Vec<(String, Direction, Option<FieldBounds>)> = index
        .fields()
        .into_iter()
        .map(|(name, direction)| {
            let ks = index.key_strings(req.collation.as_ref());
            let bounds = conjuncts.get(&name).and_then(|preds| {
                if documents::hashed::is_hashed_field(&index.key, &name) {
                    super::hashed::field_bounds(preds, ks)
                } else {
                    bounds::field_bounds(preds, index.multikey, ks)
                }
            });
            (name, direction, bounds)
        })
        .collect();
    let prefix = match index.id {
        Some(id) => keys::index_prefix(meta.id, id),
        None => keys::collection_prefix(meta.id).to_vec(),
    };
    let (ranges, shown) = scan_ranges(prefix, &fields);
    let mut scan = IndexScan {
        index,
        bounds: shown,
        ranges,
        reverse: false,
    };
    scan.reverse = provided_order(&scan, req).unwrap_or(false);
    scan
}

/// Whether scanning `scan` yields documents in `req`'s sort order: `Some(reverse)` when it
/// does forward (`false`) or backward (`true`). The sort's fields must follow the key pattern
/// after any fields bounded to one value, all in the pattern's directions or all opposite; a
/// multikey index holds a document at several places and provides no order.
fn provided_order(scan: &IndexScan, req: &ReadRequest) -> Option<bool> {
    if req.sort.is_empty() {
        return Some(false);
    }
    // A multikey index holds a document at several places; an index ordering strings under
    // another collation orders them otherwise.
    if scan.index.multikey || !scan.index.key_strings(req.collation.as_ref()).agree() {
        return None;
    }
    let fields = scan.index.fields();
    let single = |i: usize| {
        scan.bounds
            .get(i)
            .is_some_and(|(_, b)| b.len() == 1 && b.iter().all(Interval::is_point))
    };
    let mut i = 0usize;
    let mut reverse: Option<bool> = None;
    for (path, ascending) in req.sort.fields() {
        while fields.get(i).is_some_and(|(f, _)| *f != path) && single(i) {
            i += 1;
        }
        let (field, direction) = fields.get(i)?;
        // A hashed field is ordered by hash, not by value.
        if *field != path || documents::hashed::is_hashed_field(&scan.index.key, field) {
            return None;
        }
        let backward = (*direction == Direction::Ascending) != ascending;
        if reverse.is_some_and(|r| r != backward) {
            return None;
        }
        reverse = Some(backward);
        i += 1;
    }
    reverse
}
