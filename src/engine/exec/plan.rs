//! What a plan is: a tree of stages, as mongod's explain shows them. The leaves reach
//! documents (IDHACK, COLLSCAN, IXSCAN with its FETCH) or, for a covered count, only index
//! entries (COUNT_SCAN); OR unites index scans, one per `$or` branch; the inner stages order
//! and cut the stream (SORT, SKIP, LIMIT).
//!
//! Owns the shape of plans and the byte ranges an index scan walks. Does not own choosing a plan
//! (`planner`) or running one (`stages`).

use super::bounds::{FieldBounds, Interval};
use crate::engine::catalog::IndexMeta;
use crate::query::filter::Filter;
use crate::query::sort::SortSpec;
use crate::storage::keys::{self, Direction};
use bson::{Bson, Document};

/// One stage of a plan.
#[derive(Debug, Clone)]
pub enum Node {
    /// Nothing can match (no collection, or contradictory bounds).
    Eof,
    /// Point lookups of these `_id`s, in `_id` order.
    IdHack {
        ids: Vec<Bson>,
    },
    /// Every document in `_id` order (or reverse).
    CollScan {
        reverse: bool,
    },
    /// An index scan; for a secondary index, with the FETCH of each document above it.
    IxScan(IndexScan),
    /// The union of index scans, one per `$or` branch, each document once. Input `i`'s leaf
    /// tests `branches[i]` and `rest` ([`crate::query::filter::OrSplit`]), which together are
    /// the whole filter for what that scan finds.
    Or {
        inputs: Vec<Node>,
        branches: Vec<Filter>,
        rest: Filter,
    },
    /// A count from index entries alone (a covered count): the bounds are exactly the filter,
    /// and the collection has no TTL, so no document needs reading. Its items are entries, not
    /// documents: only a caller that only counts (`ReadRequest::count_only`) gets this plan.
    CountScan(IndexScan),
    /// A blocking sort; with `limit`, only the best `limit` documents are kept.
    Sort {
        input: Box<Node>,
        spec: SortSpec,
        pattern: Document,
        limit: Option<u64>,
    },
    Skip {
        input: Box<Node>,
        n: u64,
    },
    Limit {
        input: Box<Node>,
        n: u64,
    },
}

impl Node {
    /// The leaf that reaches documents.
    pub fn leaf(&self) -> &Node {
        let mut node = self;
        while let Node::Sort { input, .. } | Node::Skip { input, .. } | Node::Limit { input, .. } =
            node
        {
            node = input;
        }
        node
    }

    pub fn has_sort(&self) -> bool {
        let mut node = self;
        loop {
            match node {
                Node::Sort { .. } => return true,
                Node::Skip { input, .. } | Node::Limit { input, .. } => node = input,
                _ => return false,
            }
        }
    }
}

/// A SORT stage's parts, to put it back around a replaced input.
#[derive(Debug, Clone)]
pub struct SortParts {
    pub spec: SortSpec,
    pub pattern: Document,
    pub limit: Option<u64>,
}

impl SortParts {
    pub fn around(self, input: Box<Node>) -> Node {
        Node::Sort {
            input,
            spec: self.spec,
            pattern: self.pattern,
            limit: self.limit,
        }
    }
}

/// The index an index scan reads: a secondary index, or the `_id` index, which is the
/// documents keyspace itself (no FETCH needed).
#[derive(Debug, Clone)]
pub struct ScannedIndex {
    /// `None` for the `_id` index.
    pub id: Option<u64>,
    pub name: String,
    pub key: Document,
    pub multikey: bool,
    pub unique: bool,
    pub sparse: bool,
    /// A partial index (explain's `isPartial`); the planner scans one only for queries that
    /// imply its filter.
    pub partial: bool,
    /// The index's collation (`None`: simple; always so for `_id`).
    pub collation: Option<crate::query::collation::Collation>,
}

impl ScannedIndex {
    pub fn id_index() -> ScannedIndex {
        ScannedIndex {
            id: None,
            name: "_id_".into(),
            key: bson::doc! {"_id": 1},
            multikey: false,
            unique: true,
            sparse: false,
            partial: false,
            collation: None,
        }
    }

    pub fn secondary(index: &IndexMeta) -> ScannedIndex {
        ScannedIndex {
            id: Some(index.id),
            name: index.name.clone(),
            key: index.key.clone(),
            multikey: index.multikey,
            unique: index.unique,
            sparse: index.sparse,
            partial: index.partial_filter.is_some(),
            // A collation that no longer compiles was refused when the index was created.
            collation: index.collator().ok().flatten(),
        }
    }

    /// How this index's string keys relate to `query`'s collation.
    pub fn key_strings<'a>(
        &'a self,
        query: Option<&'a crate::query::collation::Collation>,
    ) -> crate::engine::exec::bounds::KeyStrings<'a> {
        crate::engine::exec::bounds::KeyStrings {
            index: self.collation.as_ref(),
            query,
        }
    }

    /// The key pattern's fields and directions.
    pub fn fields(&self) -> Vec<(String, Direction)> {
        self.key
            .iter()
            .map(|(field, spec)| {
                (
                    field.clone(),
                    crate::engine::documents::index_keys::direction_of(spec),
                )
            })
            .collect()
    }
}

/// An index scan: the index, the bounds of each of its fields (for explain) and the byte ranges
/// they come to, ordered and disjoint in key order.
#[derive(Debug, Clone)]
pub struct IndexScan {
    pub index: ScannedIndex,
    /// Per key-pattern field, the intervals scanned (`[MinKey, MaxKey]` where unbounded).
    pub bounds: Vec<(String, FieldBounds)>,
    /// `[start, end)` ranges of full keys, in key order.
    pub ranges: KeyRanges,
    pub reverse: bool,
}

/// `[start, end)` ranges of full keys.
pub type KeyRanges = Vec<(Vec<u8>, Vec<u8>)>;

/// How many equality combinations a compound scan expands into before the remaining fields are
/// left unbounded.
const MAX_POINT_PREFIXES: usize = 4096;

/// The byte ranges that cover `fields` bounds (in key-pattern order) under `prefix`: the
/// leading fields bounded to single values expand into one prefix per combination, the next
/// field's intervals become ranges under each prefix, and later fields are left unbounded (the
/// filter is applied to every fetched document anyway). Returns the ranges and the bounds
/// actually scanned, for explain.
pub fn scan_ranges(
    prefix: Vec<u8>,
    fields: &[(String, Direction, Option<FieldBounds>)],
) -> (KeyRanges, Vec<(String, FieldBounds)>) {
    let mut prefixes = vec![prefix];
    let mut shown: Vec<(String, FieldBounds)> = Vec::with_capacity(fields.len());
    let mut ranges: Option<KeyRanges> = None;
    for (name, direction, bounds) in fields {
        if ranges.is_some() {
            shown.push((name.clone(), vec![Interval::full()]));
            continue;
        }
        let bounds = bounds.clone().unwrap_or_else(|| vec![Interval::full()]);
        let all_points = !bounds.is_empty() && bounds.iter().all(Interval::is_point);
        if all_points && prefixes.len().saturating_mul(bounds.len()) <= MAX_POINT_PREFIXES {
            let mut next = Vec::with_capacity(prefixes.len() * bounds.len());
            for p in &prefixes {
                for interval in ordered(&bounds, *direction) {
                    let mut key = p.clone();
                    key.extend(directed(&interval.low.class, *direction));
                    next.push(key);
                }
            }
            prefixes = next;
        } else {
            let mut out = Vec::new();
            for p in &prefixes {
                for interval in ordered(&bounds, *direction) {
                    out.push(interval_range(p, interval, *direction));
                }
            }
            ranges = Some(out);
        }
        shown.push((name.clone(), bounds));
    }
    let ranges = ranges.unwrap_or_else(|| {
        prefixes
            .into_iter()
            .map(|p| {
                let end = keys::prefix_end(&p).unwrap_or_else(|| vec![0xFF; p.len() + 1]);
                (p, end)
            })
            .collect()
    });
    let ranges = ranges.into_iter().filter(|(s, e)| s < e).collect();
    (ranges, shown)
}

/// Intervals in key order: ascending value order, reversed for a descending field.
fn ordered(bounds: &[Interval], direction: Direction) -> Box<dyn Iterator<Item = &Interval> + '_> {
    match direction {
        Direction::Ascending => Box::new(bounds.iter()),
        Direction::Descending => Box::new(bounds.iter().rev()),
    }
}

fn directed(class: &[u8], direction: Direction) -> Vec<u8> {
    match direction {
        Direction::Ascending => class.to_vec(),
        Direction::Descending => class.iter().map(|b| !b).collect(),
    }
}

fn after(key: &[u8]) -> Vec<u8> {
    keys::prefix_end(key).unwrap_or_else(|| vec![0xFF; key.len() + 1])
}

/// The `[start, end)` keys under `prefix` whose next field lies in `interval`.
fn interval_range(prefix: &[u8], interval: &Interval, direction: Direction) -> (Vec<u8>, Vec<u8>) {
    let with = |class: &[u8]| {
        let mut key = prefix.to_vec();
        key.extend(directed(class, direction));
        key
    };
    match direction {
        Direction::Ascending => {
            let low = with(&interval.low.class);
            let high = with(&interval.high.class);
            let start = if interval.low.inclusive {
                low
            } else {
                after(&low)
            };
            let end = if interval.high.inclusive {
                after(&high)
            } else {
                high
            };
            (start, end)
        }
        // Inverted bytes reverse the order: the high end comes first.
        Direction::Descending => {
            let high = with(&interval.high.class);
            let low = with(&interval.low.class);
            let start = if interval.high.inclusive {
                high
            } else {
                after(&high)
            };
            let end = if interval.low.inclusive {
                after(&low)
            } else {
                low
            };
            (start, end)
        }
    }
}
