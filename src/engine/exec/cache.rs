//! The plan cache: which candidate won the race for a query shape on a collection, so that the
//! next query of the same shape runs it without racing. A shape is the filter's structure
//! (paths, operators and the type brackets of their values, not the values), the sort, and
//! whether there is a limit, and the collation. Entries are keyed by the collection's index set too: creating,
//! dropping or finishing an index, or one becoming multikey, changes the key, so stale entries
//! are never used (and age out when the cache is full).
//!
//! As mongod's cached plans, a cached choice is checked before it is trusted: it must produce
//! its first batch within ten times the work it took when it won, or it is evicted and the
//! candidates race again.

use super::plan::Node;
use super::ReadRequest;
use crate::engine::catalog::CollectionMeta;
use crate::query::compare::type_bracket;
use crate::query::filter::{Expr, Pred};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::fmt::Write;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Entries kept at most; a full cache is emptied (a query shape replans once).
const MAX_ENTRIES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    collection: u64,
    indexes: u64,
    shape: String,
}

/// A cached choice: the winning plan's leaf, and the work its race trial took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub plan: String,
    pub works: u64,
}

#[derive(Debug, Default)]
pub struct PlanCache {
    entries: Mutex<HashMap<Key, Entry>>,
}

impl PlanCache {
    /// The entries. A cached plan only picks among correct plans (a wrong pick costs time,
    /// never an answer) and each entry is inserted whole, so a poisoned lock is recovered (and
    /// counted).
    fn entries(&self) -> MutexGuard<'_, HashMap<Key, Entry>> {
        crate::sync::lock_recovering(&self.entries, "plan cache")
    }

    pub fn get(&self, key: &Key) -> Option<Entry> {
        self.entries().get(key).cloned()
    }

    pub fn put(&self, key: Key, entry: Entry) {
        let mut entries = self.entries();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, entry);
    }

    pub fn evict(&self, key: &Key) {
        self.entries().remove(key);
    }

    /// The cached plans' signatures, for diagnostics and tests.
    pub fn plans(&self) -> Vec<String> {
        self.entries().values().map(|v| v.plan.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The cache key of `req` on `meta`.
pub fn key(meta: &CollectionMeta, req: &ReadRequest) -> Key {
    let mut hasher = DefaultHasher::new();
    for index in meta.stored_indexes() {
        (
            index.id,
            index.multikey,
            index.building,
            index.sparse,
            index.hidden,
            index.partial_filter.is_some(),
        )
            .hash(&mut hasher);
    }
    let mut shape = String::new();
    expr_shape(req.filter.expr(), &mut shape);
    let _ = write!(
        shape,
        "|sort{}|limit{}|collation{:?}",
        req.sort_pattern,
        req.limit.is_some(),
        req.collation.as_ref().map(|c| c.spec())
    );
    Key {
        collection: meta.id,
        indexes: hasher.finish(),
        shape,
    }
}

/// Which leaf a plan runs: the index (or indexes) it scans, or its kind.
pub fn signature(leaf: &Node) -> String {
    match leaf {
        Node::IxScan(scan) | Node::CountScan(scan) => format!("ix:{}", scan.index.name),
        Node::Or { inputs, .. } => {
            let parts: Vec<String> = inputs.iter().map(signature).collect();
            format!("or({})", parts.join(","))
        }
        Node::CollScan { reverse } => format!("collscan:{reverse}"),
        Node::IdHack { .. } => "idhack".into(),
        Node::Eof => "eof".into(),
        Node::Sort { input, .. } | Node::Skip { input, .. } | Node::Limit { input, .. } => {
            signature(input)
        }
    }
}

/// Appends the structure of `expr`: iterative, as the filter's nesting is client input.
fn expr_shape(expr: &Expr, out: &mut String) {
    enum Step<'a> {
        Enter(&'a Expr),
        Close,
    }
    let mut stack = vec![Step::Enter(expr)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Close => out.push(')'),
            Step::Enter(e) => match e {
                Expr::And(children) | Expr::Or(children) | Expr::Nor(children) => {
                    out.push_str(match e {
                        Expr::And(_) => "and(",
                        Expr::Or(_) => "or(",
                        _ => "nor(",
                    });
                    stack.push(Step::Close);
                    stack.extend(children.iter().rev().map(Step::Enter));
                }
                Expr::Field { path, preds } => {
                    let _ = write!(out, "{}[", path.join("."));
                    for p in preds {
                        pred_shape(p, out);
                        out.push(',');
                    }
                    out.push(']');
                }
                Expr::Expression(_) => out.push_str("expr"),
            },
        }
    }
}

fn pred_shape(pred: &Pred, out: &mut String) {
    let _ = match pred {
        Pred::Eq(v) => write!(out, "eq{}", type_bracket(v)),
        Pred::Cmp(op, v) => write!(out, "{op:?}{}", type_bracket(v)),
        Pred::In { values, regexes } => write!(
            out,
            "in{}{}",
            values.iter().any(|v| matches!(v, bson::Bson::Null)),
            regexes.len()
        ),
        Pred::Regex(r) => write!(
            out,
            "re{}",
            super::bounds::literal_prefix(&r.pattern, &r.options).is_some()
        ),
        Pred::Exists(b) => write!(out, "exists{b}"),
        Pred::Type(_) => write!(out, "type"),
        Pred::Size(_) => write!(out, "size"),
        Pred::All(members) => write!(out, "all{}", members.len()),
        Pred::AlwaysFalse => write!(out, "false"),
        Pred::ElemMatchValue(_) => write!(out, "emv"),
        Pred::ElemMatchObject(_) => write!(out, "emo"),
        Pred::Mod { .. } => write!(out, "mod"),
        Pred::Bits(test) => write!(out, "{}", test.name()),
        Pred::Not(_) => write!(out, "not"),
    };
}
