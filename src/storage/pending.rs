//! The pending writes of one keyspace: what a commit group or a transaction has written and not
//! committed, each key held once, readable by key and in key order.
//!
//! A bulk insert writes its keys in ascending order (a batch's `_id`s, then the expiry entries
//! of the same moment), and a group holds a few such batches side by side. So writes that come
//! in ascending order are appended to a sorted *run* (a `Vec`), and only writes out of order go
//! into a `BTreeMap`: appending costs one comparison where a tree insert costs a search and its
//! node allocations. Ordered reads merge a few runs instead of walking a tree, and the group's
//! batch takes the runs as they are ([`Pending::into_runs`]). A bulk insert announces how many
//! ascending writes it brings ([`Pending::reserve`]), and the run they go to is given room for
//! them at once instead of growing, and being copied, as they come.
//!
//! Invariants: every key is in exactly one place (the map or one run), so a write to a key
//! already pending replaces it where it is and no source shadows another; each run is strictly
//! ascending; the last run is *open* — a key above its last and pending nowhere is appended to
//! it. Keys between the open run's last and the next key pending elsewhere are known to be
//! pending nowhere, so a batch's keys are appended and looked up with two comparisons each. A key
//! below the open run's last starts a new run when the open run has at least [`MIN_RUN`] entries
//! (another batch begins), and goes into the map otherwise (keys in no order). Past
//! [`MAX_CLOSED_RUNS`] closed runs they are merged into one, so a read checks a bounded number
//! of runs.
//!
//! Owns: where a pending write is kept, and the merged order. Does not own: what the writes mean
//! or how they are read together with a snapshot ([`super::overlay`]).

use super::bounds_are_empty;
use std::collections::BTreeMap;
use std::ops::Bound;

/// A pending write: `None` is a delete.
pub type Write = Option<Vec<u8>>;

/// A key and its pending write.
pub type Entry = (Vec<u8>, Write);

/// A run shorter than this is not worth closing: a key out of its order goes into the map.
const MIN_RUN: usize = 32;
/// Closed runs kept apart before they are merged into one.
const MAX_CLOSED_RUNS: usize = 8;

/// Pending writes of one keyspace.
#[derive(Default, Clone, Debug)]
pub struct Pending {
    map: BTreeMap<Vec<u8>, Write>,
    /// Strictly ascending runs; the last one is open.
    runs: Vec<Vec<Entry>>,
    /// A key such that none pending outside the open run lies between the open run's last key
    /// and it (`None`: none above the last). Appending or reading a key in that gap needs no
    /// other check, so each later key of a batch costs two comparisons.
    above_open: Option<Vec<u8>>,
    len: usize,
    /// Room to make for the writes [`Pending::reserve`] announced, where the next write lands.
    announced: usize,
}

impl Pending {
    pub const fn new() -> Pending {
        Pending {
            map: BTreeMap::new(),
            runs: Vec::new(),
            above_open: None,
            len: 0,
            announced: 0,
        }
    }

    /// Announces `writes` writes in ascending order to come (a bulk insert's keys): the run the
    /// next write goes to is given room for them at once, instead of growing as they come.
    pub fn reserve(&mut self, writes: usize) {
        self.announced = writes;
    }

    /// Whether `key` lies between the open run's last key and [`Pending::above_open`], where
    /// nothing is pending.
    fn in_open_gap(&self, key: &[u8]) -> bool {
        let after_open = self
            .runs
            .last()
            .and_then(|run| run.last())
            .is_some_and(|(last, _)| last.as_slice() < key);
        after_open
            && self
                .above_open
                .as_ref()
                .is_none_or(|limit| key < limit.as_slice())
    }

    /// The least pending key above `key`.
    fn least_above(&self, key: &[u8]) -> Option<Vec<u8>> {
        let in_map = self
            .map
            .range::<[u8], _>((Bound::Excluded(key), Bound::Unbounded))
            .next()
            .map(|(k, _)| k);
        let in_runs = self.runs.iter().filter_map(|run| {
            let at = run.partition_point(|(k, _)| k.as_slice() <= key);
            run.get(at).map(|(k, _)| k)
        });
        in_map.into_iter().chain(in_runs).min().cloned()
    }

    /// Starts a new open run with `key`, pending nowhere yet, with room for `room` writes.
    fn open_run(&mut self, key: Vec<u8>, write: Write, room: usize) {
        self.above_open = self.least_above(&key);
        let mut run = Vec::with_capacity(room.max(1));
        run.push((key, write));
        self.runs.push(run);
    }

    /// The pending write of `key`: `Some(None)` when it is deleted, `None` when untouched.
    pub fn get(&self, key: &[u8]) -> Option<&Write> {
        if self.in_open_gap(key) {
            return None;
        }
        if let Some(write) = self.map.get(key) {
            return Some(write);
        }
        self.runs
            .iter()
            .find_map(|run| position(run, key).and_then(|at| run.get(at)))
            .map(|(_, write)| write)
    }

    /// Records `write` for `key`, replacing what was pending for it.
    pub fn insert(&mut self, key: Vec<u8>, write: Write) {
        let announced = std::mem::take(&mut self.announced);
        if self.in_open_gap(&key) {
            if let Some(run) = self.runs.last_mut() {
                run.reserve(announced);
                run.push((key, write));
                self.len += 1;
                return;
            }
        }
        for run in &mut self.runs {
            if let Some((_, slot)) = position(run, &key).and_then(|at| run.get_mut(at)) {
                *slot = write;
                return;
            }
        }
        if let Some(slot) = self.map.get_mut(&key) {
            *slot = write;
            return;
        }
        self.len += 1;
        let open = self.runs.last();
        let open_len = open.map_or(0, Vec::len);
        // Whether the key comes after the open run's last; `None` when there is no run yet.
        let after_open = open.and_then(|run| run.last()).map(|(last, _)| *last < key);
        match after_open {
            Some(true) => {
                self.above_open = self.least_above(&key);
                if let Some(run) = self.runs.last_mut() {
                    run.reserve(announced);
                    run.push((key, write));
                }
            }
            None => self.open_run(key, write, announced),
            Some(false) if open_len >= MIN_RUN => {
                self.open_run(key, write, announced);
                if self.runs.len() > MAX_CLOSED_RUNS + 1 {
                    self.merge_closed_runs();
                }
            }
            Some(false) => {
                self.map.insert(key, write);
            }
        }
    }

    /// Number of keys pending.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every pending write in key order.
    pub fn iter(&self) -> Range<'_> {
        self.range((Bound::Unbounded, Bound::Unbounded), false)
    }

    /// Every pending key in key order.
    pub fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.iter().map(|(key, _)| key)
    }

    /// The pending writes between `bounds`, in key order or, when `reverse`, in reverse.
    pub fn range(&self, bounds: (Bound<&[u8]>, Bound<&[u8]>), reverse: bool) -> Range<'_> {
        let (start, end) = bounds;
        let mut sources: Vec<Source<'_>> = Vec::with_capacity(self.runs.len() + 1);
        if !bounds_are_empty(start, end) {
            let in_map = self.map.range::<[u8], _>(bounds);
            sources.push(match reverse {
                false => Box::new(in_map),
                true => Box::new(in_map.rev()),
            });
            for run in &self.runs {
                let slice = slice_within(run, start, end).iter().map(|(k, w)| (k, w));
                sources.push(match reverse {
                    false => Box::new(slice),
                    true => Box::new(slice.rev()),
                });
            }
        }
        Range(Merge::new(sources, reverse))
    }

    /// Merges every run but the open one into one run.
    fn merge_closed_runs(&mut self) {
        let Some(open) = self.runs.pop() else {
            return;
        };
        let closed = std::mem::take(&mut self.runs);
        let len = closed.iter().map(Vec::len).sum();
        let mut merged = Vec::with_capacity(len);
        merged.extend(Merge::new(
            closed.into_iter().map(Vec::into_iter).collect(),
            false,
        ));
        self.runs = vec![merged, open];
    }

    /// Every pending write, each key once, in no particular order: the map's writes, then each
    /// run's (no merge). For a batch that shares a group's writes ([`super::WriteBatch`]).
    pub fn unordered(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.map
            .iter()
            .chain(self.runs.iter().flatten().map(|(key, write)| (key, write)))
            .map(|(key, write)| (key.as_slice(), write.as_deref()))
    }

    /// Every pending write, consumed, each key once, as ascending runs in no particular order
    /// to one another: the map's writes, then each run as it is (no merge, no copy).
    pub fn into_runs(self) -> impl Iterator<Item = Vec<Entry>> {
        let map = (!self.map.is_empty()).then(|| self.map.into_iter().collect());
        map.into_iter()
            .chain(self.runs.into_iter().filter(|run| !run.is_empty()))
    }
}

impl IntoIterator for Pending {
    type Item = Entry;
    type IntoIter = Merge<Box<dyn Iterator<Item = Entry> + Send>>;

    /// Every pending write, consumed, in key order.
    fn into_iter(self) -> Self::IntoIter {
        let mut sources: Vec<Box<dyn Iterator<Item = Entry> + Send>> =
            Vec::with_capacity(self.runs.len() + 1);
        sources.push(Box::new(self.map.into_iter()));
        for run in self.runs {
            sources.push(Box::new(run.into_iter()));
        }
        Merge::new(sources, false)
    }
}

type Source<'a> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Write)> + Send + 'a>;

/// Pending writes of a range, in order ([`Pending::range`]).
pub struct Range<'a>(Merge<Source<'a>>);

impl<'a> Iterator for Range<'a> {
    type Item = (&'a Vec<u8>, &'a Write);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

/// Where `key` is in the strictly ascending `run`, if it is there; a key outside the run's first
/// and last costs no search.
fn position(run: &[Entry], key: &[u8]) -> Option<usize> {
    let (first, last) = (run.first()?, run.last()?);
    if key < first.0.as_slice() || key > last.0.as_slice() {
        return None;
    }
    run.binary_search_by(|(k, _)| k.as_slice().cmp(key)).ok()
}

/// The part of the ascending `run` between `start` and `end`.
fn slice_within<'r>(run: &'r [Entry], start: Bound<&[u8]>, end: Bound<&[u8]>) -> &'r [Entry] {
    let from = match start {
        Bound::Included(s) => run.partition_point(|(k, _)| k.as_slice() < s),
        Bound::Excluded(s) => run.partition_point(|(k, _)| k.as_slice() <= s),
        Bound::Unbounded => 0,
    };
    let to = match end {
        Bound::Included(e) => run.partition_point(|(k, _)| k.as_slice() <= e),
        Bound::Excluded(e) => run.partition_point(|(k, _)| k.as_slice() < e),
        Bound::Unbounded => run.len(),
    };
    run.get(from..to.max(from)).unwrap_or_default()
}

/// Something with a key, to be merged.
pub trait Keyed {
    fn key(&self) -> &[u8];
}

impl Keyed for Entry {
    fn key(&self) -> &[u8] {
        &self.0
    }
}

impl Keyed for (&Vec<u8>, &Write) {
    fn key(&self) -> &[u8] {
        self.0
    }
}

/// Sources that are each in order, with no key in two of them, merged into one order. The
/// source with the first head is drained until its head passes the runner-up's, so sources that
/// do not interleave (the usual runs) cost one comparison an entry.
pub struct Merge<I: Iterator> {
    sources: Vec<I>,
    heads: Vec<Option<I::Item>>,
    reverse: bool,
    /// The source being drained, and the one whose head bounds the drain (none: it is alone).
    draining: Option<(usize, Option<usize>)>,
}

impl<I: Iterator> Merge<I>
where
    I::Item: Keyed,
{
    fn new(mut sources: Vec<I>, reverse: bool) -> Self {
        let heads = sources.iter_mut().map(Iterator::next).collect();
        Merge {
            sources,
            heads,
            reverse,
            draining: None,
        }
    }

    /// Whether `a` comes before `b` in this merge's order.
    fn before(&self, a: &[u8], b: &[u8]) -> bool {
        if self.reverse {
            a > b
        } else {
            a < b
        }
    }

    /// The source whose head comes first, and the runner-up.
    fn pick(&self) -> Option<(usize, Option<usize>)> {
        let mut first: Option<(usize, &[u8])> = None;
        let mut second: Option<(usize, &[u8])> = None;
        for (at, head) in self.heads.iter().enumerate() {
            let Some(key) = head.as_ref().map(Keyed::key) else {
                continue;
            };
            match first {
                Some((_, best)) if !self.before(key, best) => {
                    if second.is_none_or(|(_, runner)| self.before(key, runner)) {
                        second = Some((at, key));
                    }
                }
                _ => {
                    second = first;
                    first = Some((at, key));
                }
            }
        }
        first.map(|(at, _)| (at, second.map(|(at, _)| at)))
    }
}

impl<I: Iterator> Iterator for Merge<I>
where
    I::Item: Keyed,
{
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        loop {
            let (at, rival) = match self.draining {
                Some(draining) => draining,
                None => {
                    let picked = self.pick()?;
                    self.draining = Some(picked);
                    picked
                }
            };
            let head = self.heads.get(at).and_then(Option::as_ref).map(Keyed::key);
            let rival_head = rival
                .and_then(|r| self.heads.get(r))
                .and_then(Option::as_ref)
                .map(Keyed::key);
            let keeps_draining = match (head, rival_head) {
                (None, _) => false,
                (Some(_), None) => true,
                // Not `before(head, rival)`: a key in two sources, which the invariant rules
                // out, must not stop the merge.
                (Some(head), Some(rival)) => !self.before(rival, head),
            };
            if !keeps_draining {
                self.draining = None;
                if head.is_none() && rival.is_none() {
                    return None;
                }
                continue;
            }
            let next = self.sources.get_mut(at).and_then(Iterator::next);
            return self
                .heads
                .get_mut(at)
                .and_then(|slot| std::mem::replace(slot, next));
        }
    }
}

#[cfg(test)]
#[path = "pending_tests.rs"]
mod tests;
