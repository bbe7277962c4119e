//! `$setWindowFields`: documents grouped into partitions by `partitionBy`, ordered by `sortBy`,
//! and each given the `output` fields its window functions compute over a frame of its
//! partition.
//!
//! Owns: parsing the stage, sorting and partitioning its input, the partition's memory budget,
//! and writing the outputs. Does not own: frames (`frames.rs`), the functions
//! (`functions.rs`), time units (`unit.rs`, shared with `$densify`), the accumulators
//! (`query::accumulator`).
//!
//! Like mongod, the stage sorts its whole input by partition key, then `sortBy` (a sort that
//! holds at most 100 MB, as `$sort` does), then computes one partition at a time; a partition
//! (its documents and what its functions hold) may hold at most 100 MB
//! (`internalDocumentSourceSetWindowFieldsMaxMemoryBytes`). Past it the stage fails with
//! mongod's 5414201 error; mayfly does not spill a partition to disk, so with `allowDiskUse`
//! it fails with 146 ExceededMemoryLimit and says so.
//!
//! Expiry (TTL-18): an output row is its input document with fields added, so it keeps that
//! document's expiry and disappears from a cursor once it expires, like a `$set` row. The
//! values computed from other documents of the partition are a result computed when the
//! stage ran, like a `$group` row; a later expiry of those other documents does not change
//! them (mongod has no expiry rule to follow here, and recomputing a window per batch would
//! make a cursor's rows disagree with each other).

mod frames;
mod functions;
mod series;
pub(super) mod unit;

use super::memory::{Blocking, StageLimits};
use super::{Row, Rows};
use crate::engine::exec::stages::MAX_BLOCKING_SORT_BYTES;
use crate::error::{Error, ErrorCode, Result};
use crate::query::collation::Collation;
use crate::query::compare::compare_values_with;
use crate::query::expr::{Expression, Value, Variables};
use crate::query::size::document_size;
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use functions::{Function, Partition};
use std::cmp::Ordering;

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
        })
    }

    #[cfg(test)]
    fn with_limit(mut self, limit: usize) -> SetWindowFields {
        self.limit = limit;
        self
    }

    /// Runs the stage over every input row; returns the output rows with their sizes.
    pub fn apply(&self, rows: Rows, limits: &StageLimits) -> Result<Vec<(usize, Row)>> {
        let mut sort_memory = limits.budget(Blocking::Sort);
        let mut keyed = Vec::new();
        for row in rows {
            let row = row?;
            let size = row.size.unwrap_or_else(|| document_size(&row.doc));
            sort_memory.charge(size)?;
            let partition = match &self.partition_by {
                Some(e) => match e.eval(&row.doc)? {
                    Some(Bson::Array(_)) => return Err(partition_array()),
                    key => key.unwrap_or(Bson::Null),
                },
                None => Bson::Null,
            };
            let sort_key = self
                .sort
                .as_ref()
                .map(|s| s.spec.keys_of(&row.doc))
                .unwrap_or_default();
            keyed.push((partition, sort_key, size, row));
        }
        let collation = self.collation.as_ref();
        keyed.sort_by(|a, b| {
            compare_values_with(&a.0, &b.0, collation).then_with(|| match &self.sort {
                Some(s) => s.spec.compare_keys(&a.1, &b.1),
                None => Ordering::Equal,
            })
        });
        let mut memory = WindowMemory {
            used: 0,
            limit: self.limit,
            allow_disk_use: limits.allow_disk_use,
        };
        let mut out = Vec::with_capacity(keyed.len());
        let mut keyed = keyed.into_iter().peekable();
        while let Some((key, _, size, row)) = keyed.next() {
            let mut partition = vec![(size, row)];
            while let Some((_, _, size, row)) =
                keyed.next_if(|next| compare_values_with(&next.0, &key, collation).is_eq())
            {
                partition.push((size, row));
            }
            out.extend(self.partition(partition, &mut memory)?);
        }
        Ok(out)
    }

    /// Computes the outputs of one partition.
    fn partition(
        &self,
        rows: Vec<(usize, Row)>,
        memory: &mut WindowMemory,
    ) -> Result<Vec<(usize, Row)>> {
        memory.used = 0;
        for (size, _) in &rows {
            memory.adjust(*size as isize)?;
        }
        let (docs, rows): (Vec<Document>, Vec<Row>) = rows
            .into_iter()
            .map(|(_, mut row)| (std::mem::take(&mut row.doc), row))
            .unzip();
        let keys: Vec<Value> = match self.sort.as_ref().and_then(|s| s.single.as_ref()) {
            Some(field) => docs.iter().map(|d| field.eval(d)).collect::<Result<_>>()?,
            None => vec![None; docs.len()],
        };
        let part = Partition {
            docs: &docs,
            keys: &keys,
            collation: self.collation.as_ref(),
        };
        let mut columns = Vec::with_capacity(self.outputs.len());
        for (_, function) in &self.outputs {
            let column = function.compute(&part, &mut |delta| memory.adjust(delta))?;
            let bytes: usize = column
                .iter()
                .flatten()
                .map(crate::query::size::value_size)
                .sum();
            memory.adjust(bytes as isize)?;
            columns.push(column);
        }
        let mut out = Vec::with_capacity(rows.len());
        for (i, (mut doc, row)) in docs.into_iter().zip(rows).enumerate() {
            for ((path, _), column) in self.outputs.iter().zip(&columns) {
                match column.get(i).cloned().flatten() {
                    Some(value) => crate::query::path::set(&mut doc, path, value)?,
                    None => {
                        crate::query::path::unset(&mut doc, path);
                    }
                }
            }
            let row = row.reshaped(doc)?;
            out.push((document_size(&row.doc), row));
        }
        Ok(out)
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
    crate::query::expr::field_path(name)
}

/// The bytes one partition holds, against its limit.
struct WindowMemory {
    used: usize,
    limit: usize,
    allow_disk_use: bool,
}

impl WindowMemory {
    fn adjust(&mut self, delta: isize) -> Result<()> {
        self.used = self.used.saturating_add_signed(delta);
        if self.used <= self.limit {
            return Ok(());
        }
        let (used, limit) = (self.used, self.limit);
        Err(if self.allow_disk_use {
            Error::new(
                ErrorCode::ExceededMemoryLimit,
                format!(
                    "$setWindowFields exceeded its memory limit of {limit} bytes in one \
                     partition; this server does not spill a partition to disk, so allowDiskUse \
                     cannot help it. Partition the documents more finely or filter them before \
                     the stage."
                ),
            )
        } else {
            Error::new(
                ErrorCode::Location5414201,
                format!(
                    "PlanExecutor error during aggregation :: caused by :: Exceeded memory limit \
                     in DocumentSourceSetWindowFields, used {used} bytes but max allowed is {limit}"
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests;
