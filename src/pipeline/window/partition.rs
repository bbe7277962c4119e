//! One partition of `$setWindowFields` and its memory: its rows held in memory, or, once they
//! pass the partition's budget and the client allowed the disk, appended to an unlinked spill
//! file (`engine::exec::spill::DocFile`) that the window functions read back in order.
//!
//! Owns: collecting a partition from the sorted input, spilling its rows, reading them back,
//! and the partition's budget with mongod's 5414201 error. Does not own: the functions
//! (`functions.rs`) or writing the outputs (`mod.rs`).
//!
//! Every function evaluates its inputs over the partition in one forward pass and keeps one
//! value per document, so a spilled partition is only ever read sequentially, once per
//! function and once to write the outputs; no random access to documents is needed. What
//! stays in memory is charged: those per-document values, the functions' states and the
//! output columns. When they alone pass the budget, spilling cannot help and the stage fails
//! with 5414201, as mongod fails when its window functions' memory passes the limit.

use super::super::memory::{entry_row, held_row, row_fields};
use super::super::Row;
use crate::engine::exec::spill::{DocFile, DocFileReadable, DocPass, SpillDir};
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{Expression, Value};
use bson::{Bson, Document};
use std::fs::File;

/// The rows of one partition, in `sortBy` order.
pub enum PartitionRows {
    Memory(Vec<Row>),
    Spilled(DocFileReadable),
}

impl PartitionRows {
    pub fn len(&self) -> usize {
        match self {
            PartitionRows::Memory(rows) => rows.len(),
            PartitionRows::Spilled(file) => usize::try_from(file.len()).unwrap_or(usize::MAX),
        }
    }

    pub fn is_spilled(&self) -> bool {
        matches!(self, PartitionRows::Spilled(_))
    }

    /// Evaluates `e` on every document, in order.
    pub fn eval_all(&self, e: &Expression) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(self.len());
        match self {
            PartitionRows::Memory(rows) => {
                for row in rows {
                    out.push(e.eval(&row.doc)?);
                }
            }
            PartitionRows::Spilled(file) => {
                for entry in file.pass() {
                    let entry = entry?;
                    let doc = match entry.get("d") {
                        Some(Bson::Document(doc)) => doc,
                        _ => return Err(Error::internal("a spilled row is malformed")),
                    };
                    out.push(e.eval(doc)?);
                }
            }
        }
        Ok(out)
    }

    /// Writes rows held in memory to a spill file (the rest of the partition follows them).
    pub fn spill(self, dir: &SpillDir) -> Result<SpillingRows> {
        let mut file = dir.doc_file()?;
        if let PartitionRows::Memory(rows) = self {
            for row in rows {
                push(&mut file, row)?;
            }
        }
        Ok(SpillingRows(file))
    }

    /// The rows, in order, for writing the outputs.
    pub fn into_rows(self) -> RowsBack {
        match self {
            PartitionRows::Memory(rows) => RowsBack::Memory(rows.into_iter()),
            PartitionRows::Spilled(file) => RowsBack::Spilled(file.into_pass()),
        }
    }
}

/// A partition being written to its spill file.
pub struct SpillingRows(DocFile);

impl SpillingRows {
    pub fn push(&mut self, row: Row) -> Result<()> {
        push(&mut self.0, row)
    }

    pub fn finish(self) -> Result<PartitionRows> {
        Ok(PartitionRows::Spilled(self.0.finish()?))
    }
}

fn push(file: &mut DocFile, row: Row) -> Result<()> {
    let mut entry = Document::new();
    row_fields(&mut entry, row);
    file.push(&entry)
}

/// A partition's rows read back in order.
pub enum RowsBack {
    Memory(std::vec::IntoIter<Row>),
    Spilled(DocPass<File>),
}

impl Iterator for RowsBack {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            RowsBack::Memory(rows) => rows.next().map(Ok),
            RowsBack::Spilled(pass) => pass.next().map(|e| e.and_then(|mut e| entry_row(&mut e))),
        }
    }
}

/// The bytes one partition holds, against its limit.
pub struct WindowMemory {
    pub used: usize,
    pub limit: usize,
}

impl WindowMemory {
    pub fn adjust(&mut self, delta: isize) -> Result<()> {
        self.used = self.used.saturating_add_signed(delta);
        if self.used <= self.limit {
            return Ok(());
        }
        Err(self.exceeded())
    }

    pub fn exceeded(&self) -> Error {
        Error::new(
            ErrorCode::Location5414201,
            format!(
                "PlanExecutor error during aggregation :: caused by :: Exceeded memory limit in \
                 DocumentSourceSetWindowFields, used {} bytes but max allowed is {}",
                self.used, self.limit
            ),
        )
    }
}

/// Collects one partition: `first` and the rows `more` yields while they belong to it. Rows
/// are charged as they arrive; past the budget they go to a spill file when `spill` is given,
/// and otherwise the partition fails. Returns the rows and the bytes still held of them.
pub fn collect(
    first: Row,
    more: &mut dyn FnMut() -> Result<Option<Row>>,
    memory: &mut WindowMemory,
    spill: Option<&SpillDir>,
) -> Result<(PartitionRows, usize)> {
    let mut held = 0usize;
    let mut rows = Vec::new();
    let mut next = Some(first);
    while let Some(row) = next {
        let bytes = held_row(&row)?;
        rows.push(row);
        held += bytes;
        memory.used = memory.used.saturating_add(bytes);
        if memory.used > memory.limit {
            let Some(dir) = spill else {
                return Err(memory.exceeded());
            };
            memory.used = memory.used.saturating_sub(held);
            let mut file = PartitionRows::Memory(rows).spill(dir)?;
            while let Some(row) = more()? {
                file.push(row)?;
            }
            return Ok((file.finish()?, 0));
        }
        next = more()?;
    }
    Ok((PartitionRows::Memory(rows), held))
}
