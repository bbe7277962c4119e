//! External sorting: a blocking sort over more than its 100 MB, when the client allowed it
//! (`allowDiskUse`), writes sorted runs to anonymous temporary files under the data directory
//! (`<dbpath>/_tmp`) and merges them. Files are unlinked when created, so nothing outlives the
//! sort, even a crash.
//!
//! A run holds each document's storage key and record; the merge decodes one document per run
//! at a time, so its memory is one document per run.

use crate::engine::collection::StoredDoc;
use crate::engine::record::Record;
use crate::error::{Error, Result};
use crate::query::sort::SortSpec;
use bson::Bson;
use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Where sorts spill: a directory of the data directory, emptied when the engine opens.
#[derive(Debug, Clone)]
pub struct SpillDir(PathBuf);

impl SpillDir {
    /// `<dbpath>/_tmp`, created empty.
    pub fn open(dbpath: &Path) -> Result<SpillDir> {
        let dir = dbpath.join("_tmp");
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io)?;
        }
        std::fs::create_dir_all(&dir).map_err(io)?;
        Ok(SpillDir(dir))
    }

    /// Writes `docs` (already in order) as one run.
    pub fn write_run(&self, docs: impl Iterator<Item = StoredDoc>) -> Result<Run> {
        let file = tempfile::tempfile_in(&self.0).map_err(io)?;
        let mut out = BufWriter::new(file);
        let mut count = 0u64;
        for doc in docs {
            let record = doc.record.encode();
            for part in [&doc.key, &record] {
                let len = u32::try_from(part.len())
                    .map_err(|_| Error::internal("spilled document too large"))?;
                out.write_all(&len.to_le_bytes()).map_err(io)?;
                out.write_all(part).map_err(io)?;
            }
            count += 1;
        }
        let mut file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(Run {
            reader: BufReader::new(file),
            left: count,
        })
    }
}

fn io(e: std::io::Error) -> Error {
    Error::internal(format!("cannot spill a sort to disk: {e}"))
}

/// One sorted run on disk.
pub struct Run {
    reader: BufReader<File>,
    left: u64,
}

impl Run {
    fn next_doc(&mut self) -> Result<Option<StoredDoc>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let key = self.read_part()?;
        let record = Record::decode(&self.read_part()?)?;
        let doc = record.document()?;
        Ok(Some(StoredDoc { key, record, doc }))
    }

    fn read_part(&mut self) -> Result<Vec<u8>> {
        let mut len = [0u8; 4];
        self.reader.read_exact(&mut len).map_err(io)?;
        let mut part = vec![0u8; u32::from_le_bytes(len) as usize];
        self.reader.read_exact(&mut part).map_err(io)?;
        Ok(part)
    }
}

/// The next document of one source of the merge, with its sort keys.
struct Head {
    keys: Vec<Bson>,
    doc: StoredDoc,
}

/// Merges sorted runs (and the sorted rest still in memory) into one sorted stream. Sources
/// are the runs in the order they were written, then the part still in memory; ties go to the
/// earlier one, which keeps the sort stable. There are few runs (one per 100 MB), so the
/// smallest head is found by a linear search.
pub struct Merge {
    spec: SortSpec,
    runs: Vec<Run>,
    memory: std::vec::IntoIter<(Vec<Bson>, StoredDoc)>,
    heads: Vec<Option<Head>>,
    started: bool,
}

impl Merge {
    pub fn new(spec: SortSpec, runs: Vec<Run>, memory: Vec<(Vec<Bson>, StoredDoc)>) -> Merge {
        Merge {
            spec,
            runs,
            memory: memory.into_iter(),
            heads: Vec::new(),
            started: false,
        }
    }

    fn pull(&mut self, source: usize) -> Result<Option<Head>> {
        let next = match self.runs.get_mut(source) {
            Some(run) => run
                .next_doc()?
                .map(|doc| (self.spec.keys_of(&doc.doc), doc)),
            None => self.memory.next(),
        };
        Ok(next.map(|(keys, doc)| Head { keys, doc }))
    }

    fn smallest(&self) -> Option<usize> {
        let mut best: Option<(usize, &Head)> = None;
        for (source, head) in self.heads.iter().enumerate() {
            let Some(head) = head else { continue };
            let better = best
                .is_none_or(|(_, b)| self.spec.compare_keys(&head.keys, &b.keys) == Ordering::Less);
            if better {
                best = Some((source, head));
            }
        }
        best.map(|(source, _)| source)
    }
}

impl Iterator for Merge {
    type Item = Result<StoredDoc>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            for source in 0..=self.runs.len() {
                match self.pull(source) {
                    Ok(head) => self.heads.push(head),
                    Err(e) => return Some(Err(e)),
                }
            }
        }
        let source = self.smallest()?;
        let next = match self.pull(source) {
            Ok(next) => next,
            Err(e) => return Some(Err(e)),
        };
        let head = std::mem::replace(self.heads.get_mut(source)?, next)?;
        Some(Ok(head.doc))
    }
}
