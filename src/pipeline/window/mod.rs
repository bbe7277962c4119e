//! `$setWindowFields`: documents grouped into partitions by `partitionBy`, ordered by `sortBy`,
//! and each given the `output` fields its window functions compute over a frame of its
//! partition.
//!
//! Owns: parsing the stage, sorting and partitioning its input, and writing the outputs as the
//! cursor pulls them. Does not own: a partition's rows, their spilling and the partition's
//! budget (`partition.rs`), frames (`frames.rs`), the functions (`functions.rs`), time units and
//! their arithmetic (`crate::calendar`, shared with `$densify`), the accumulators (`query::accumulator`).
//!
//! Like mongod, the stage sorts its whole input by partition key, then `sortBy` (a sort that
//! holds at most 100 MB and spills with `allowDiskUse` as `$sort` does, 292 without), then
//! computes one partition at a time as the cursor pulls its output; a partition (its documents
//! and what its functions hold) may hold at most 100 MB
//! (`internalDocumentSourceSetWindowFieldsMaxMemoryBytes`). Past it, without `allowDiskUse`
//! the stage fails with mongod's 5414201 error; with it, the partition's documents go to a
//! spill file read back in order (`partition.rs`), and only what the functions hold must fit.
//!
//! Expiry (TTL-18): an output row is its input document with fields added, so it keeps that
//! document's expiry and disappears from a cursor once it expires, like a `$set` row. The
//! values computed from other documents of the partition are a result computed when the
//! stage ran, like a `$group` row; a later expiry of those other documents does not change
//! them (mongod has no expiry rule to follow here, and recomputing a window per batch would
//! make a cursor's rows disagree with each other).

mod frames;
mod functions;
mod partition;
mod series;

use super::memory::{
    entry_row, row_fields, Blocking, Entries, SpillingSort, StageLimits, StageMemory,
};
use super::{Row, Rows};
use crate::engine::exec::spill::{DocOrder, SpillDir};
use crate::engine::exec::stages::MAX_BLOCKING_SORT_BYTES;
use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::compare::compare_values_with;
use crate::query::expr::{Expression, Value, Variables};
use crate::query::size::held_value;
use crate::query::sort::SortSpec;
use bson::{doc, Bson, Document};
use functions::{Function, Partition};
use partition::{collect, PartitionRows, RowsBack, WindowMemory};
use std::cmp::Ordering;
use std::sync::Arc;

/// A compiled `sortBy`.
#[derive(Debug)]
pub struct SortBy {
    spec: SortSpec,
    /// The fields, in order.
    fields: Vec<(String, bool)>,
    /// The field's value, when there is exactly one.
    single: Option<Expression>,
    ascending: bool,
}

impl SortBy {
    /// Compiles `spec`; strings order under `collation` (the operation's).
    pub fn compile(spec: &Document, collation: Option<&Collation>) -> Result<SortBy> {
        let compiled = SortSpec::compile_with(spec, collation)?;
        let fields: Vec<(String, bool)> = compiled.fields().collect();
        let single = match fields.as_slice() {
            [(field, _)] => Some(Expression::compile(
                &Bson::String(format!("${field}")),
                &Variables::default(),
            )?),
            _ => None,
        };
        let ascending = fields.first().is_none_or(|(_, up)| *up);
        Ok(SortBy {
            spec: compiled,
            fields,
            single,
            ascending,
        })
    }
}

/// A parsed `$setWindowFields`.
#[derive(Debug)]
pub struct SetWindowFields {
    partition_by: Option<Expression>,
    sort: Option<SortBy>,
    outputs: Vec<(Vec<String>, Function)>,
    /// Partition keys and ranks compare under this (the operation's collation).
    collation: Option<Collation>,
    /// The budget of one partition (mongod's 100 MB; smaller in tests).
    limit: usize,
    /// The budget of the stage's sort (as a `$sort`'s; smaller in tests).
    sort_limit: usize,
}

fn wrong_type(stage: &str, field: &str, value: &Bson, expected: &str) -> Error {
    Error::type_mismatch(format!(
        "BSON field '{stage}.{field}' is the wrong type '{}', expected type '{expected}'",
        crate::query::path::type_name(value)
    ))
}

impl SetWindowFields {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<SetWindowFields> {
        const STAGE: &str = "$setWindowFields";
        let Bson::Document(spec) = arg else {
            return Err(Error::failed_to_parse(format!(
                "the {STAGE} stage specification must be an object, found {}",
                crate::query::path::type_name(arg)
            )));
        };
        let (mut partition_by, mut sort, mut output) = (None, None, None);
        for (k, v) in spec {
            match k.as_str() {
                "partitionBy" => partition_by = Some(v),
                "sortBy" => match v {
                    Bson::Document(d) => sort = Some(d),
                    other => return Err(wrong_type(STAGE, k, other, "object")),
                },
                "output" => match v {
                    Bson::Document(d) => output = Some(d),
                    other => return Err(wrong_type(STAGE, k, other, "object")),
                },
                other => {
                    return Err(Error::new(
                        ErrorCode::IDLUnknownField,
                        format!("BSON field '{STAGE}.{other}' is an unknown field."),
                    ))
                }
            }
        }
        let output = output.ok_or_else(|| {
            Error::new(
                ErrorCode::Location40414,
                format!("BSON field '{STAGE}.output' is missing but a required field"),
            )
        })?;
        let sort = sort
            .map(|s| SortBy::compile(s, vars.collation()))
            .transpose()?;
        let partition_by = partition_by
            .map(|p| Expression::compile(p, vars))
            .transpose()?;
        if let Some(Bson::Array(_)) = partition_by.as_ref().and_then(Expression::as_const) {
            return Err(partition_array());
        }
        let mut outputs: Vec<(Vec<String>, Function)> = Vec::new();
        for (name, value) in output {
            let path = output_path(name)?;
            let conflicts = outputs.iter().any(|(other, _)| {
                let common = other.len().min(path.len());
                other.get(..common) == path.get(..common)
            });
            if conflicts {
                return Err(Error::new(
                    ErrorCode::Location6307900,
                    "$setWindowFields 'output' specification contains two conflicting paths",
                ));
            }
            let Bson::Document(f) = value else {
                return Err(Error::failed_to_parse(format!(
                    "The field '{name}' must be an object"
                )));
            };
            outputs.push((path, Function::parse(f, sort.as_ref(), vars)?));
        }
        Ok(SetWindowFields {
            partition_by,
            sort,
            outputs,
            collation: vars.collation().cloned(),
            limit: MAX_BLOCKING_SORT_BYTES,
            sort_limit: MAX_BLOCKING_SORT_BYTES,
        })
    }

    #[cfg(test)]
    fn with_limit(mut self, limit: usize) -> SetWindowFields {
        self.limit = limit;
        self
    }

    #[cfg(test)]
    fn with_sort_limit(mut self, limit: usize) -> SetWindowFields {
        self.sort_limit = limit;
        self
    }

    /// Runs the stage: sorts its whole input by partition key, then `sortBy` (spilling as a
    /// `$sort` does), then streams the output partition by partition.
    pub fn apply(self, rows: Rows, limits: &StageLimits, spill: Option<&SpillDir>) -> Result<Rows> {
        let spec = self.sort.as_ref().map(|s| s.spec.clone());
        let collation = self.collation.clone();
        let order: DocOrder = Arc::new(move |a: &Document, b: &Document| {
            let null = Bson::Null;
            compare_values_with(
                a.get("p").unwrap_or(&null),
                b.get("p").unwrap_or(&null),
                collation.as_ref(),
            )
            .then_with(|| match (&spec, a.get("s"), b.get("s")) {
                (Some(spec), Some(Bson::Array(x)), Some(Bson::Array(y))) => spec.compare_keys(x, y),
                _ => Ordering::Equal,
            })
        });
        let budget =
            StageMemory::with_limit(Blocking::Sort, limits.allow_disk_use, self.sort_limit);
        let mut sorter = SpillingSort::new(budget, order, spill);
        for row in rows {
            let row = row?;
            let partition = match &self.partition_by {
                Some(e) => match e.eval(&row.doc)? {
                    Some(Bson::Array(_)) => return Err(partition_array()),
                    key => key.unwrap_or(Bson::Null),
                },
                None => Bson::Null,
            };
            let mut entry = doc! {"p": partition};
            if let Some(s) = &self.sort {
                entry.insert("s", Bson::Array(s.spec.keys_of(&row.doc)));
            }
            row_fields(&mut entry, row);
            sorter.push(entry)?;
        }
        let input = sorter.finish(&limits.held);
        Ok(Box::new(Windows {
            limit: self.limit,
            stage: self,
            input,
            pending: None,
            spill: spill.filter(|_| limits.allow_disk_use).cloned(),
            current: None,
        }))
    }

    /// Computes the output columns of one partition. Past the budget with its rows still in
    /// memory, the rows are spilled (when allowed) and the columns computed again.
    fn columns(
        &self,
        rows: PartitionRows,
        held: usize,
        memory: &mut WindowMemory,
        spill: Option<&SpillDir>,
    ) -> Result<(PartitionRows, Vec<Vec<Value>>)> {
        let mut rows = rows;
        let mut held = held;
        loop {
            memory.used = held;
            match self.try_columns(&rows, memory) {
                Ok(columns) => return Ok((rows, columns)),
                Err(e) if e.code == ErrorCode::Location5414201 && !rows.is_spilled() => {
                    let Some(dir) = spill else { return Err(e) };
                    rows = rows.spill(dir)?.finish()?;
                    held = 0;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn try_columns(
        &self,
        rows: &PartitionRows,
        memory: &mut WindowMemory,
    ) -> Result<Vec<Vec<Value>>> {
        let keys: Vec<Value> = match self.sort.as_ref().and_then(|s| s.single.as_ref()) {
            Some(field) => rows.eval_all(field)?,
            None => vec![None; rows.len()],
        };
        let part = Partition {
            rows,
            keys: &keys,
            collation: self.collation.as_ref(),
        };
        let mut columns = Vec::with_capacity(self.outputs.len());
        for (_, function) in &self.outputs {
            let column = function.compute(&part, &mut |delta| memory.adjust(delta))?;
            let bytes = column
                .iter()
                .flatten()
                .map(held_value)
                .sum::<Result<usize>>()?;
            memory.adjust(bytes as isize)?;
            columns.push(column);
        }
        Ok(columns)
    }
}

/// The stage's output, computed one partition at a time as the cursor pulls it.
struct Windows {
    stage: SetWindowFields,
    input: Entries,
    /// The first row of the next partition, with its partition key.
    pending: Option<(Bson, Row)>,
    /// The budget of one partition.
    limit: usize,
    /// Where partitions past the budget spill (`allowDiskUse`).
    spill: Option<SpillDir>,
    current: Option<Output>,
}

/// One partition's rows read back beside its output columns.
struct Output {
    rows: RowsBack,
    columns: std::vec::IntoIter<Vec<Value>>,
    /// Per output, the column's values in order.
    values: Vec<std::vec::IntoIter<Value>>,
}

impl Windows {
    fn pull(&mut self) -> Result<Option<(Bson, Row)>> {
        let Some(entry) = self.input.next() else {
            return Ok(None);
        };
        let mut entry = entry?;
        let key = entry.remove("p").unwrap_or(Bson::Null);
        Ok(Some((key, entry_row(&mut entry)?)))
    }

    /// Collects and computes the next partition; `false` when the input is over.
    fn next_partition(&mut self) -> Result<bool> {
        let first = match self.pending.take() {
            Some(first) => first,
            None => match self.pull()? {
                Some(first) => first,
                None => return Ok(false),
            },
        };
        let (key, first) = first;
        let mut memory = WindowMemory {
            used: 0,
            limit: self.limit,
        };
        let spill = self.spill.clone();
        let collation = self.stage.collation.clone();
        let mut more = || -> Result<Option<Row>> {
            match self.pull()? {
                Some((k, row))
                    if compare_values_with(&k, &key, collation.as_ref()) == Ordering::Equal =>
                {
                    Ok(Some(row))
                }
                other => {
                    self.pending = other;
                    Ok(None)
                }
            }
        };
        let (rows, held) = collect(first, &mut more, &mut memory, spill.as_ref())?;
        let (rows, columns) = self
            .stage
            .columns(rows, held, &mut memory, spill.as_ref())?;
        self.current = Some(Output {
            rows: rows.into_rows(),
            values: Vec::new(),
            columns: columns.into_iter(),
        });
        Ok(true)
    }

    fn next_row(&mut self) -> Result<Option<Row>> {
        loop {
            if let Some(out) = &mut self.current {
                if out.values.is_empty() {
                    out.values = out.columns.by_ref().map(Vec::into_iter).collect();
                }
                if let Some(row) = out.rows.next() {
                    let mut row = row?;
                    let mut doc = std::mem::take(&mut row.doc);
                    for ((path, _), values) in self.stage.outputs.iter().zip(&mut out.values) {
                        match values.next().flatten() {
                            Some(value) => crate::query::path::set(&mut doc, path, value)?,
                            None => {
                                crate::query::path::unset(&mut doc, path);
                            }
                        }
                    }
                    return row.reshaped(doc).map(Some);
                }
                self.current = None;
            }
            if !self.next_partition()? {
                return Ok(None);
            }
        }
    }
}

impl Iterator for Windows {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}

fn partition_array() -> Error {
    Error::type_mismatch("An expression used to partition cannot evaluate to value of type array")
}

/// A field's path (`a.b`, not `$a`), with mongod's field path rules.
pub(super) fn output_path(name: &str) -> Result<Vec<String>> {
    if name.starts_with('$') {
        return Err(Error::new(
            ErrorCode::Location16410,
            format!(
                "FieldPath field names may not start with '$'. Consider using $getField or \
                 $setField. (field: {name})"
            ),
        ));
    }
    crate::query::expr::plain_field_path(name)
}

#[cfg(test)]
mod tests;
