//! A plan described as mongod 7.0's explain describes it: `winningPlan`/`rejectedPlans` stage
//! trees (`stage`, `inputStage`, `indexName`, `keyPattern`, `indexBounds`, `direction`…) and,
//! with counters, the `executionStages` tree (`nReturned`, `works`, `keysExamined`,
//! `docsExamined`…). The command layer puts these into the explain reply.
//!
//! Owns: rendering the executor's plans and counters as explain documents. Does not own:
//! planning or running (`exec`), which produces the plans and counters and knows nothing of
//! this rendering.

use crate::engine::exec::plan::{IndexScan, Node};
use crate::engine::exec::stages::{Counters, StageStats, MAX_BLOCKING_SORT_BYTES};
use bson::{doc, Bson, Document};

/// The stage tree of `node`; with `stats`, each stage carries its counters. `filter` is shown on
/// the stage that applies it (the leaf).
pub fn describe(node: &Node, stats: Option<&StageStats>, filter: &Document) -> Document {
    let counters = stats.map(|s| s.counters.as_ref());
    let child = stats.and_then(|s| s.child.as_deref());
    let mut out = match node {
        Node::Eof => doc! {"stage": "EOF"},
        Node::IdHack { .. } => doc! {"stage": "IDHACK"},
        Node::CollScan { reverse } => {
            let mut d = doc! {"stage": "COLLSCAN"};
            if !filter.is_empty() {
                d.insert("filter", filter.clone());
            }
            d.insert("direction", direction(*reverse));
            d
        }
        Node::IxScan(scan) => return describe_index_scan(scan, stats, filter),
        Node::CountScan(scan) => {
            let mut d = index_stage("COUNT_SCAN", scan);
            if let Some(c) = counters {
                add_counters(&mut d, c, LeafKind::IndexScan);
            }
            return d;
        }
        Node::Or { inputs, .. } => {
            // Each input shows the branch it tests and the OR the rest of the filter, which
            // every input tests too: the whole filter once, not once per branch.
            let (rest, branches) = split_or_document(filter).unwrap_or_default();
            let shown: Vec<Bson> = inputs
                .iter()
                .enumerate()
                .map(|(i, input)| {
                    let input_stats = stats.and_then(|s| s.inputs.get(i));
                    let branch = match branches.get(i) {
                        Some(Bson::Document(branch)) => branch.clone(),
                        _ => Document::new(),
                    };
                    Bson::Document(describe(input, input_stats, &branch))
                })
                .collect();
            let mut d = doc! {"stage": "OR"};
            if !rest.is_empty() {
                d.insert("filter", rest);
            }
            if let Some(c) = counters {
                add_counters(&mut d, c, LeafKind::Inner);
                d.insert(
                    "dupsTested",
                    to_i64(Counters::get(&c.advanced) + Counters::get(&c.dups_dropped)),
                );
                d.insert("dupsDropped", to_i64(Counters::get(&c.dups_dropped)));
            }
            d.insert("inputStages", shown);
            return d;
        }
        Node::Sort {
            input,
            pattern,
            limit,
            ..
        } => {
            let mut d = doc! {
                "stage": "SORT",
                "sortPattern": pattern.clone(),
                "memLimit": MAX_BLOCKING_SORT_BYTES as i64,
            };
            if let Some(l) = limit {
                d.insert("limitAmount", to_i64(*l));
            }
            d.insert("type", "simple");
            if let Some(c) = counters {
                let spills = Counters::get(&c.spills);
                d.insert("usedDisk", spills > 0);
                d.insert("spills", to_i64(spills));
            }
            d.insert("inputStage", describe(input, child, filter));
            d
        }
        Node::Skip { input, n } => doc! {
            "stage": "SKIP",
            "skipAmount": to_i64(*n),
            "inputStage": describe(input, child, filter),
        },
        Node::Limit { input, n } => doc! {
            "stage": "LIMIT",
            "limitAmount": to_i64(*n),
            "inputStage": describe(input, child, filter),
        },
    };
    if let Some(c) = counters {
        add_counters(&mut out, c, leaf_kind(node));
    }
    out
}

/// The filter without its first top-level `$or` (through nested `$and`s, in document order:
/// where [`crate::query::filter::Filter::split_or`] splits the compiled filter), and that
/// `$or`'s branches. Iterative: the nesting of `$and`s is client input.
fn split_or_document(filter: &Document) -> Option<(Document, Vec<Bson>)> {
    enum Item<'a> {
        Doc(&'a Document, Vec<usize>),
        Found(&'a [Bson], Vec<usize>),
    }
    let mut stack = vec![Item::Doc(filter, Vec::new())];
    let (branches, path) = loop {
        match stack.pop()? {
            Item::Found(branches, path) => break (branches, path),
            Item::Doc(doc, path) => {
                let mut items = Vec::new();
                for (key, value) in doc {
                    match (key.as_str(), value) {
                        ("$or", Bson::Array(branches)) => {
                            items.push(Item::Found(branches, path.clone()))
                        }
                        ("$and", Bson::Array(conjuncts)) => {
                            for (i, c) in conjuncts.iter().enumerate() {
                                if let Bson::Document(c) = c {
                                    let mut inner = path.clone();
                                    inner.push(i);
                                    items.push(Item::Doc(c, inner));
                                }
                            }
                        }
                        _ => {}
                    }
                }
                stack.extend(items.into_iter().rev());
            }
        }
    };
    let branches = branches.to_vec();
    let mut rest = filter.clone();
    let mut at = &mut rest;
    for i in path {
        match at.get_mut("$and") {
            Some(Bson::Array(conjuncts)) => match conjuncts.get_mut(i) {
                Some(Bson::Document(inner)) => at = inner,
                _ => return None,
            },
            _ => return None,
        }
    }
    at.remove("$or");
    Some((rest, branches))
}

/// An index-reading stage: its index and the bounds it scans.
fn index_stage(stage: &str, scan: &IndexScan) -> Document {
    let bounds: Document = scan
        .bounds
        .iter()
        .map(|(field, intervals)| {
            let shown: Vec<Bson> = intervals.iter().map(|i| Bson::String(i.render())).collect();
            (field.clone(), Bson::Array(shown))
        })
        .collect();
    let multikey_paths: Document = scan
        .index
        .key
        .keys()
        .map(|k| (k.clone(), Bson::Array(Vec::new())))
        .collect();
    let mut stage = doc! {
        "stage": stage,
        "keyPattern": scan.index.key.clone(),
        "indexName": scan.index.name.as_str(),
        "isMultiKey": scan.index.multikey,
        "multiKeyPaths": multikey_paths,
        "isUnique": scan.index.unique,
        "isSparse": scan.index.sparse,
        "isPartial": scan.index.partial,
        "indexVersion": 2,
        "direction": direction(scan.reverse),
        "indexBounds": bounds,
    };
    // mongod shows the collation of an index that has one.
    if let Some(collation) = &scan.index.collation {
        stage.insert("collation", collation.to_document());
    }
    stage
}

/// FETCH (when the index is not the documents themselves, or a filter remains) over IXSCAN.
fn describe_index_scan(
    scan: &IndexScan,
    stats: Option<&StageStats>,
    filter: &Document,
) -> Document {
    let mut ixscan = index_stage("IXSCAN", scan);
    let mut fetch = doc! {"stage": "FETCH"};
    if !filter.is_empty() {
        fetch.insert("filter", filter.clone());
    }
    if let Some(stats) = stats {
        // The `_id` index's entries are the documents: one set of counters serves both stages.
        let scan_counters = stats
            .child
            .as_deref()
            .map_or(&stats.counters, |c| &c.counters);
        add_counters(&mut ixscan, scan_counters, LeafKind::IndexScan);
        add_counters(&mut fetch, &stats.counters, LeafKind::Fetch);
    }
    fetch.insert("inputStage", ixscan);
    fetch
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeafKind {
    Inner,
    CollScan,
    IdHack,
    IndexScan,
    Fetch,
}

fn leaf_kind(node: &Node) -> LeafKind {
    match node {
        Node::CollScan { .. } => LeafKind::CollScan,
        Node::IdHack { .. } => LeafKind::IdHack,
        _ => LeafKind::Inner,
    }
}

fn add_counters(out: &mut Document, c: &Counters, kind: LeafKind) {
    let advanced = to_i64(Counters::get(&c.advanced));
    out.insert("nReturned", advanced);
    out.insert("executionTimeMillisEstimate", 0i64);
    let works = Counters::get(&c.works).max(Counters::get(&c.advanced));
    out.insert("works", to_i64(works + 1));
    out.insert("advanced", advanced);
    out.insert(
        "needTime",
        to_i64(works.saturating_sub(Counters::get(&c.advanced))),
    );
    out.insert("needYield", 0i64);
    out.insert("saveState", 0i64);
    out.insert("restoreState", 0i64);
    out.insert("isEOF", 1i64);
    match kind {
        LeafKind::CollScan => {
            out.insert("docsExamined", to_i64(Counters::get(&c.docs_examined)));
        }
        LeafKind::IdHack => {
            out.insert("keysExamined", to_i64(Counters::get(&c.keys_examined)));
            out.insert("docsExamined", to_i64(Counters::get(&c.docs_examined)));
        }
        LeafKind::IndexScan => {
            out.insert("keysExamined", to_i64(Counters::get(&c.keys_examined)));
            out.insert("seeks", 1i64);
            out.insert("dupsTested", to_i64(Counters::get(&c.keys_examined)));
            out.insert("dupsDropped", to_i64(Counters::get(&c.dups_dropped)));
        }
        LeafKind::Fetch => {
            out.insert("docsExamined", to_i64(Counters::get(&c.docs_examined)));
            out.insert("alreadyHasObj", 0i64);
        }
        LeafKind::Inner => {}
    }
}

fn direction(reverse: bool) -> &'static str {
    if reverse {
        "backward"
    } else {
        "forward"
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_or_is_taken_where_the_compiled_filter_splits() {
        let split = |d: Document| split_or_document(&d);
        assert_eq!(split(doc! {"a": 1}), None);
        assert_eq!(
            split(doc! {"c": 3, "$or": [{"a": 1}, {"b": 2}]}),
            Some((
                doc! {"c": 3},
                vec![doc! {"a": 1}.into(), doc! {"b": 2}.into()]
            ))
        );
        assert_eq!(
            split(doc! {"$and": [{"c": 3}, {"$and": [{"$or": [{"a": 1}]}]}], "$or": [{"b": 2}]}),
            Some((
                doc! {"$and": [{"c": 3}, {"$and": [{}]}], "$or": [{"b": 2}]},
                vec![doc! {"a": 1}.into()]
            ))
        );
    }
}
