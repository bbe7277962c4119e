//! `$group`: a key expression and accumulators (every accumulator of `query::accumulator`).
//! Keys are grouped by BSON equality (`1`, `1.0` and `NumberLong(1)` are one group) under the
//! operation's collation (under a case-insensitive one `"a"` and `"A"` are one group), and a
//! group's `_id` is the first key value seen, as mongod's. Groups are found by their collation
//! key ([`OrdBson::keyed`]: strings replaced by their sort keys), a map lookup.
//!
//! Groups live in memory against the stage's 100 MB budget, charged with what they hold
//! decoded (each key twice, the states and what the accumulators keep); groups come out in order of first
//! appearance. Past the budget, without `allowDiskUse` the stage fails (292); with it, as
//! mongod does, the groups held so far are written to an unlinked file in the engine's spill
//! directory (`<dbpath>/_tmp`, where mongod's sorter spills too) as one run
//! sorted by key, each group as its key and its accumulators' partial states, and memory starts
//! afresh. At the end the runs are merged by key, one group at a time (the partial states of a
//! key combine in the order the runs were written, so `$first`, `$push`, … keep arrival order),
//! and the spilled groups come out in key order.
//!
//! Owns: parsing `$group`, the grouping loop and its spilling (also used by `$bucket`). Does
//! not own: the accumulators' arithmetic (`query::accumulator`).

use super::memory::StageMemory;
use crate::engine::exec::spill::{bson_write_error, spill_write_error, SpillDir};
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::{Accumulator, OrdBson, State};
use crate::query::collation::Collation;
use crate::query::compare::compare_values_with;
use crate::query::expr::{Expression, Variables};
use crate::query::size::held_value;
use bson::{Bson, Document};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// Output fields and their accumulators.
pub type Outputs = Vec<(String, Accumulator)>;

#[derive(Debug)]
pub struct Group {
    id: Expression,
    accumulators: Outputs,
    /// Keys compare under this (the operation's collation; `None`: simple).
    collation: Option<Collation>,
}

/// Parses one output field `name: {$acc: arg}` of `$group`, `$bucket` or `$bucketAuto`.
pub fn parse_output(name: &str, value: &Bson, vars: &Variables) -> Result<(String, Accumulator)> {
    if name.contains('.') {
        return Err(Error::new(
            ErrorCode::Location40235,
            format!("The field name '{name}' cannot contain '.'"),
        ));
    }
    if name.starts_with('$') {
        return Err(Error::new(
            ErrorCode::Location40236,
            format!("The field name '{name}' cannot be an operator name"),
        ));
    }
    let Bson::Document(acc) = value else {
        return Err(Error::new(
            ErrorCode::Location40234,
            format!("The field '{name}' must be an accumulator object"),
        ));
    };
    let Some((op_name, arg)) = acc.iter().next().filter(|_| acc.len() == 1) else {
        return Err(Error::new(
            ErrorCode::Location40238,
            format!("The field '{name}' must specify one accumulator"),
        ));
    };
    Ok((name.to_owned(), Accumulator::compile(op_name, arg, vars)?))
}

impl Group {
    pub fn compile(spec: &Bson, vars: &Variables) -> Result<Group> {
        let Bson::Document(spec) = spec else {
            return Err(Error::new(
                ErrorCode::Location15947,
                "a group's fields must be specified in an object",
            ));
        };
        let mut id = None;
        let mut accumulators = Vec::new();
        for (name, value) in spec {
            if name == "_id" {
                id = Some(Expression::compile(value, vars)?);
                continue;
            }
            accumulators.push(parse_output(name, value, vars)?);
        }
        let id = id.ok_or_else(|| {
            Error::new(
                ErrorCode::Location15955,
                "a group specification must include an _id",
            )
        })?;
        Ok(Group {
            id,
            accumulators,
            collation: vars.collation().cloned(),
        })
    }

    /// Groups every input document; the result is one document per distinct key.
    pub fn run(
        &self,
        docs: impl Iterator<Item = Result<Document>>,
        memory: &mut StageMemory,
    ) -> Result<Grouped> {
        let keyed = docs.map(|doc| {
            let doc = doc?;
            let key = self.id.eval(&doc)?.unwrap_or(Bson::Null);
            Ok((key, doc))
        });
        accumulate(&self.accumulators, keyed, memory, self.collation.as_ref())
    }
}

/// A grouping's result: in memory (in order of first appearance), or merged from spilled runs
/// (in key order), lazily.
pub enum Grouped {
    Memory(Vec<Document>),
    Spilled(Box<dyn Iterator<Item = Result<Document>> + Send>),
}

/// What a new group holds besides its key's two copies: its entry in the groups (the key's
/// slot and the states' vector), its entry in the index (the position; the key's slot is in
/// `held_value`), and one state slot per output. What the states then grow to is reported by
/// each state ([`State::add`]).
fn group_overhead(outputs: usize) -> usize {
    std::mem::size_of::<(Bson, Vec<State>)>() - std::mem::size_of::<Bson>()
        + std::mem::size_of::<usize>()
        + outputs.saturating_mul(std::mem::size_of::<State>())
}

/// Runs `outputs` over documents already paired with their group key; keys equal under
/// `collation` are one group.
pub fn accumulate(
    outputs: &Outputs,
    keyed: impl Iterator<Item = Result<(Bson, Document)>>,
    memory: &mut StageMemory,
    collation: Option<&Collation>,
) -> Result<Grouped> {
    let mut index: BTreeMap<OrdBson, usize> = BTreeMap::new();
    let mut groups: Vec<(Bson, Vec<State>)> = Vec::new();
    let mut runs: Vec<RunReader> = Vec::new();
    for entry in keyed {
        let (key, doc) = entry?;
        let lookup = OrdBson::keyed(&key, collation);
        let slot = match index.get(&lookup) {
            Some(slot) => *slot,
            None => {
                // The key is held twice (the index and the group), plus each state.
                memory.note(
                    held_value(&key)?
                        .saturating_add(held_value(&lookup.0)?)
                        .saturating_add(group_overhead(outputs.len())),
                );
                let states = outputs
                    .iter()
                    .map(|(_, acc)| acc.start_group(&key))
                    .collect::<Result<Vec<_>>>()?;
                groups.push((key, states));
                index.insert(lookup, groups.len() - 1);
                groups.len() - 1
            }
        };
        if let Some((_, states)) = groups.get_mut(slot) {
            for (state, (_, acc)) in states.iter_mut().zip(outputs) {
                let delta = state.add(acc.arg().eval(&doc)?)?;
                memory.note_delta(delta);
            }
        }
        if memory.over_limit() {
            if !memory.may_spill() {
                return Err(memory.exceeded());
            }
            runs.push(write_run(&mut index, &mut groups, memory.spill_dir())?);
            memory.reset();
        }
    }
    if runs.is_empty() {
        return Ok(Grouped::Memory(
            groups
                .into_iter()
                .map(|(key, states)| finish(key, states, outputs))
                .collect(),
        ));
    }
    if !groups.is_empty() {
        runs.push(write_run(&mut index, &mut groups, memory.spill_dir())?);
    }
    Ok(Grouped::Spilled(Box::new(MergeRuns {
        outputs: outputs.clone(),
        heads: Vec::new(),
        runs,
        started: false,
        budget: memory.fresh(),
        collation: collation.cloned(),
    })))
}

/// The rows of a grouping: held in memory against the cursor's gauge, or streamed from the
/// merge of spilled runs. Accumulators such as `$push` nest their inputs a level or two deeper,
/// so each result is checked against the nesting limit.
pub fn into_rows(grouped: Grouped, limits: &super::StageLimits) -> Result<super::Rows> {
    Ok(match grouped {
        Grouped::Memory(docs) => {
            let sized = docs
                .into_iter()
                .map(|d| {
                    crate::query::depth::check_document(&d)?;
                    let row = super::Row::computed(d);
                    Ok((super::memory::held_row(&row)?, row))
                })
                .collect::<Result<Vec<_>>>()?;
            Box::new(crate::engine::cursor::HeldIter::new(sized, limits.held.clone()).map(Ok))
        }
        Grouped::Spilled(docs) => Box::new(docs.map(|d| {
            let d = d?;
            crate::query::depth::check_document(&d)?;
            Ok(super::Row::computed(d))
        })),
    })
}

fn finish(key: Bson, states: Vec<State>, outputs: &Outputs) -> Document {
    let mut out = Document::new();
    out.insert("_id", key);
    for (state, (name, _)) in states.into_iter().zip(outputs) {
        out.insert(name.clone(), state.finish());
    }
    out
}

fn io(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("cannot spill a $group to disk: {e}"))
}

/// A new unlinked run file: in the engine's spill directory, or the system's temporary one.
fn run_file(dir: Option<&SpillDir>) -> Result<(File, PathBuf)> {
    match dir {
        Some(dir) => Ok((dir.file()?, dir.path().to_path_buf())),
        None => {
            let tmp = std::env::temp_dir();
            let file = tempfile::tempfile_in(&tmp).map_err(|e| spill_write_error(e, &tmp))?;
            Ok((file, tmp))
        }
    }
}

/// Writes the groups in key order (the collation's) as one run and empties them.
fn write_run(
    index: &mut BTreeMap<OrdBson, usize>,
    groups: &mut Vec<(Bson, Vec<State>)>,
    dir: Option<&SpillDir>,
) -> Result<RunReader> {
    let (file, path) = run_file(dir)?;
    let mut out = BufWriter::new(file);
    let mut slots: Vec<Option<(Bson, Vec<State>)>> = groups.drain(..).map(Some).collect();
    let mut count = 0u64;
    for (_, slot) in std::mem::take(index) {
        let Some((key, states)) = slots.get_mut(slot).and_then(Option::take) else {
            continue;
        };
        let mut entry = Document::new();
        entry.insert("k", key);
        entry.insert(
            "s",
            Bson::Array(states.iter().map(State::partial).collect()),
        );
        entry
            .to_writer(&mut out)
            .map_err(|e| bson_write_error(e, &path))?;
        count += 1;
    }
    let mut file = out
        .into_inner()
        .map_err(|e| spill_write_error(e.into_error(), &path))?;
    file.flush().map_err(|e| spill_write_error(e, &path))?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    Ok(RunReader {
        reader: BufReader::new(file),
        left: count,
    })
}

/// One spilled run, read one group at a time.
struct RunReader {
    reader: BufReader<File>,
    left: u64,
}

impl RunReader {
    fn next_group(&mut self) -> Result<Option<(Bson, Vec<Bson>)>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let mut entry = Document::from_reader(&mut self.reader).map_err(io)?;
        let key = entry.remove("k").unwrap_or(Bson::Null);
        let states = match entry.remove("s") {
            Some(Bson::Array(states)) => states,
            _ => return Err(io("a spilled group is malformed")),
        };
        Ok(Some((key, states)))
    }
}

/// Merges sorted runs by key. There are few runs (one per 100 MB), so the smallest head is
/// found by a linear search; equal keys combine in run order.
struct MergeRuns {
    outputs: Outputs,
    runs: Vec<RunReader>,
    heads: Vec<Option<(Bson, Vec<Bson>)>>,
    started: bool,
    /// What one merged group holds, against the stage's limit.
    budget: StageMemory,
    /// The order the runs are sorted in, and the keys' equality.
    collation: Option<Collation>,
}

impl MergeRuns {
    fn next_group(&mut self) -> Result<Option<Document>> {
        if !self.started {
            self.started = true;
            for run in &mut self.runs {
                self.heads.push(run.next_group()?);
            }
        }
        let collation = self.collation.as_ref();
        let mut smallest: Option<&Bson> = None;
        for (key, _) in self.heads.iter().flatten() {
            if smallest.is_none_or(|s| compare_values_with(key, s, collation).is_lt()) {
                smallest = Some(key);
            }
        }
        let Some(key) = smallest.cloned() else {
            return Ok(None);
        };
        let mut states = self
            .outputs
            .iter()
            .map(|(_, acc)| acc.start_group(&key))
            .collect::<Result<Vec<_>>>()?;
        self.budget.reset();
        for (head, run) in self.heads.iter_mut().zip(self.runs.iter_mut()) {
            let equal = head
                .as_ref()
                .is_some_and(|(k, _)| compare_values_with(k, &key, collation).is_eq());
            if !equal {
                continue;
            }
            let next = run.next_group()?;
            let Some((_, partials)) = std::mem::replace(head, next) else {
                continue;
            };
            for (state, partial) in states.iter_mut().zip(partials) {
                let delta = state.merge(partial)?;
                self.budget.note_delta(delta);
                if self.budget.over_limit() {
                    return Err(self.budget.exceeded_merging());
                }
            }
        }
        Ok(Some(finish(key, states, &self.outputs)))
    }
}

impl Iterator for MergeRuns {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_group().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::super::memory::Blocking;
    use super::*;
    use bson::doc;

    fn group_with(spec: Document, docs: Vec<Document>, memory: &mut StageMemory) -> Vec<Document> {
        let grouped = Group::compile(&Bson::Document(spec), &Variables::default())
            .unwrap()
            .run(docs.into_iter().map(Ok), memory)
            .unwrap();
        match grouped {
            Grouped::Memory(docs) => docs,
            Grouped::Spilled(docs) => docs.collect::<Result<Vec<_>>>().unwrap(),
        }
    }

    fn group(spec: Document, docs: Vec<Document>) -> Vec<Document> {
        group_with(spec, docs, &mut StageMemory::new(Blocking::Group, false))
    }

    #[test]
    fn accumulators_follow_mongod() {
        let docs = vec![
            doc! {"k": 1, "v": 2, "s": "b"},
            doc! {"k": 1.0, "v": 3.5, "s": "a"},
            doc! {"k": 2, "v": null},
            doc! {"k": 2i64, "v": i32::MAX},
            doc! {"k": 2, "v": 1},
        ];
        let out = group(
            doc! {"_id": "$k", "n": {"$sum": 1}, "t": {"$sum": "$v"}, "a": {"$avg": "$v"},
            "lo": {"$min": "$v"}, "hi": {"$max": "$s"}, "f": {"$first": "$s"},
            "l": {"$last": "$s"}, "p": {"$push": "$s"}, "u": {"$addToSet": "$k"}, "c": {"$count": {}}},
            docs,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            doc! {"_id": 1, "n": 2, "t": 5.5, "a": 2.75, "lo": 2, "hi": "b", "f": "b", "l": "a",
            "p": ["b", "a"], "u": [1], "c": 2}
        );
        assert_eq!(out[1].get("t"), Some(&Bson::Int64(i64::from(i32::MAX) + 1)));
        assert_eq!(out[1].get("lo"), Some(&Bson::Int32(1)));
        assert_eq!(out[1].get("f"), Some(&Bson::Null));
    }

    #[test]
    fn spilled_groups_merge_to_the_same_results_in_key_order() {
        let spec = doc! {"_id": "$k", "n": {"$sum": 1}, "f": {"$first": "$v"}, "l": {"$last": "$v"},
        "p": {"$push": "$v"}, "t": {"$topN": {"n": 2, "output": "$v", "sortBy": {"v": -1}}}};
        let docs: Vec<Document> = (0..200).map(|i| doc! {"k": i % 7, "v": i}).collect();
        let mut in_memory = group(spec.clone(), docs.clone());
        in_memory.sort_by(|a, b| {
            crate::query::compare::compare_values(a.get("_id").unwrap(), b.get("_id").unwrap())
        });
        // Room for one merged group (its 29 pushed values decoded), not for all of them.
        let mut small = StageMemory::with_limit(Blocking::Group, true, 10_000);
        let spilled = group_with(spec.clone(), docs.clone(), &mut small);
        assert_eq!(spilled, in_memory);
        let mut refused = StageMemory::with_limit(Blocking::Group, false, 10_000);
        let err = Group::compile(&Bson::Document(spec), &Variables::default())
            .unwrap()
            .run(docs.into_iter().map(Ok), &mut refused)
            .err()
            .unwrap();
        assert_eq!(
            err.code,
            ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed
        );
    }

    #[test]
    fn keys_equal_under_the_collation_are_one_group_also_when_spilled() {
        let ci = crate::query::collation::Collation::parse(&doc! {"locale": "en", "strength": 2})
            .unwrap();
        let vars = Variables::default()
            .with_comparator(crate::query::expr::value::Comparator::with_collation(ci));
        let spec = Bson::Document(doc! {"_id": "$k", "n": {"$sum": 1}, "f": {"$first": "$i"}});
        let spellings = ["apple", "Apple", "APPLE", "banana", "BANANA", "cherry"];
        let docs: Vec<Document> = (0..300)
            .map(|i| doc! {"k": spellings[i % spellings.len()], "i": i as i32})
            .collect();
        let group = Group::compile(&spec, &vars).unwrap();
        let collect = |grouped: Grouped| match grouped {
            Grouped::Memory(docs) => docs,
            Grouped::Spilled(docs) => docs.collect::<Result<Vec<_>>>().unwrap(),
        };
        let mut memory = StageMemory::new(Blocking::Group, false);
        let in_memory = collect(
            group
                .run(docs.clone().into_iter().map(Ok), &mut memory)
                .unwrap(),
        );
        // The first key seen names the group.
        assert_eq!(
            in_memory,
            vec![
                doc! {"_id": "apple", "n": 150, "f": 0},
                doc! {"_id": "banana", "n": 100, "f": 3},
                doc! {"_id": "cherry", "n": 50, "f": 5},
            ]
        );
        let mut small = StageMemory::with_limit(Blocking::Group, true, 300);
        let spilled = collect(group.run(docs.into_iter().map(Ok), &mut small).unwrap());
        assert_eq!(spilled.len(), 3, "{spilled:?}");
        for (s, m) in spilled.iter().zip(&in_memory) {
            assert_eq!(s.get("n"), m.get("n"));
            assert_eq!(s.get("f"), m.get("f"));
        }
    }

    #[test]
    fn bad_specs_have_mongod_codes() {
        let vars = Variables::default();
        let code = |spec: Document| {
            Group::compile(&Bson::Document(spec), &vars)
                .unwrap_err()
                .code
        };
        assert_eq!(code(doc! {"n": {"$sum": 1}}), ErrorCode::Location15955);
        assert_eq!(code(doc! {"_id": 1, "n": 1}), ErrorCode::Location40234);
        assert_eq!(
            code(doc! {"_id": 1, "n": {"$foo": 1}}),
            ErrorCode::Location15952
        );
        assert_eq!(
            code(doc! {"_id": 1, "n": {"$sum": [1]}}),
            ErrorCode::Location40237
        );
        assert_eq!(
            code(doc! {"_id": 1, "a.b": {"$sum": 1}}),
            ErrorCode::Location40235
        );
        assert_eq!(
            code(doc! {"_id": 1, "n": {"$sum": 1, "$avg": 1}}),
            ErrorCode::Location40238
        );
    }
}
