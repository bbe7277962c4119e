//! External sorting: a blocking sort over more than its 100 MB, when the client allowed it
//! (`allowDiskUse`), writes sorted runs to anonymous temporary files under the data directory
//! (`<dbpath>/_tmp`) and merges them. Files are unlinked when created, so nothing outlives the
//! sort, even a crash.
//!
//! A run of the executor's sort holds each document's storage key and record; the merge
//! decodes one document per run at a time, so its memory is one document per run.
//!
//! The pipeline's blocking stages that sort their own entries (`$bucketAuto`, `$sample`,
//! `$setWindowFields`) spill through the same directory: [`SpillDir::write_docs`] writes a run
//! of BSON documents, which [`DocMerge`] merges by the stage's order, and a [`DocFile`] holds
//! documents appended once and read back in order as often as needed (a window partition).
//! `$group` writes its own runs of partial groups in the same directory ([`SpillDir::file`]).
//!
//! A write that fails fails the one operation with mongod's sorter errors
//! ([`spill_write_error`]): 14031 `OutOfDiskSpace` on a full disk, 5642403 otherwise. Nothing
//! else is affected: the files are the operation's own, and the server goes on serving.

use crate::engine::documents::record::Record;
use crate::engine::documents::record::StoredDoc;
use crate::error::{Error, Result};
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

    /// A new unlinked file in the directory, for a stage that writes its own run format.
    pub fn file(&self) -> Result<File> {
        tempfile::tempfile_in(&self.0).map_err(|e| spill_write_error(e, &self.0))
    }

    /// The directory the files are in.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `docs` (already in order) as one run.
    pub fn write_run(&self, docs: impl Iterator<Item = StoredDoc>) -> Result<Run> {
        let mut out = BufWriter::new(self.file()?);
        let written = |e| spill_write_error(e, &self.0);
        let mut count = 0u64;
        for doc in docs {
            let record = doc.record.encode();
            for part in [&doc.key, &record] {
                let len = u32::try_from(part.len())
                    .map_err(|_| Error::internal("spilled document too large"))?;
                out.write_all(&len.to_le_bytes()).map_err(written)?;
                out.write_all(part).map_err(written)?;
            }
            count += 1;
        }
        let mut file = out.into_inner().map_err(|e| written(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(Run {
            reader: BufReader::new(file),
            left: count,
        })
    }
}

impl SpillDir {
    /// Writes `docs` (already in the stage's order) as one run.
    pub fn write_docs<'a>(&self, docs: impl Iterator<Item = &'a Document>) -> Result<DocRun> {
        let mut file = self.doc_file()?;
        for doc in docs {
            file.push(doc)?;
        }
        let count = file.len();
        let mut file = file
            .out
            .into_inner()
            .map_err(|e| spill_write_error(e.into_error(), &self.0))?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(DocRun {
            reader: BufReader::new(file),
            left: count,
        })
    }

    /// An empty file of documents, unlinked already.
    pub fn doc_file(&self) -> Result<DocFile> {
        Ok(DocFile {
            out: BufWriter::new(self.file()?),
            count: 0,
            dir: self.0.clone(),
        })
    }
}

fn io(e: std::io::Error) -> Error {
    Error::internal(format!("cannot spill a sort to disk: {e}"))
}

/// A document's failed write to a spill file: the file system's error as
/// [`spill_write_error`] reports it; anything else is the document's own fault.
pub fn bson_write_error(e: bson::ser::Error, dir: &Path) -> Error {
    match e {
        bson::ser::Error::Io(io) => {
            spill_write_error(std::io::Error::new(io.kind(), io.to_string()), dir)
        }
        other => Error::internal(format!("cannot spill a document to disk: {other}")),
    }
}

/// A failed write (or creation) of a spill file, as mongod's sorter reports it (`File::write`
/// in `sorter.cpp`): a full disk is 14031 `OutOfDiskSpace` ("<system error>: <path>"), any other
/// failure 5642403 ("Error writing to file <path>: <system error>"). The files are unlinked
/// when created, so the directory stands for the path.
pub fn spill_write_error(e: std::io::Error, dir: &Path) -> Error {
    if e.kind() == std::io::ErrorKind::StorageFull {
        return Error::new(
            crate::error::ErrorCode::OutOfDiskSpace,
            format!("{e}: {}", dir.display()),
        );
    }
    Error::new(
        crate::error::ErrorCode::Location5642403,
        format!("Error writing to file {}: {e}", dir.display()),
    )
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

/// A stage's order of its spilled documents; it must be total and consistent, as a sort's is.
pub type DocOrder = Arc<dyn Fn(&Document, &Document) -> Ordering + Send + Sync>;

/// One sorted run of a stage's documents.
pub struct DocRun {
    reader: BufReader<File>,
    left: u64,
}

impl DocRun {
    fn next_doc(&mut self) -> Result<Option<Document>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        Document::from_reader(&mut self.reader)
            .map(Some)
            .map_err(|e| Error::internal(format!("cannot read a spilled document back: {e}")))
    }
}

/// Merges runs of a stage's documents (and the sorted rest still in memory) by the stage's
/// order. Sources are the runs in the order they were written, then the part in memory; ties
/// go to the earlier one, so the merge is as stable as an in-memory stable sort of the input.
pub struct DocMerge {
    order: DocOrder,
    runs: Vec<DocRun>,
    memory: std::vec::IntoIter<Document>,
    heads: Vec<Option<Document>>,
    started: bool,
}

impl DocMerge {
    pub fn new(order: DocOrder, runs: Vec<DocRun>, memory: Vec<Document>) -> DocMerge {
        DocMerge {
            order,
            runs,
            memory: memory.into_iter(),
            heads: Vec::new(),
            started: false,
        }
    }

    fn pull(&mut self, source: usize) -> Result<Option<Document>> {
        match self.runs.get_mut(source) {
            Some(run) => run.next_doc(),
            None => Ok(self.memory.next()),
        }
    }

    fn next_doc(&mut self) -> Result<Option<Document>> {
        if !self.started {
            self.started = true;
            for source in 0..=self.runs.len() {
                let head = self.pull(source)?;
                self.heads.push(head);
            }
        }
        // Few runs (one per 100 MB): a linear search for the smallest head.
        let mut best: Option<(usize, &Document)> = None;
        for (source, head) in self.heads.iter().enumerate() {
            let Some(head) = head else { continue };
            if best.is_none_or(|(_, b)| (self.order)(head, b) == Ordering::Less) {
                best = Some((source, head));
            }
        }
        let Some((source, _)) = best else {
            return Ok(None);
        };
        let next = self.pull(source)?;
        Ok(self
            .heads
            .get_mut(source)
            .and_then(|head| std::mem::replace(head, next)))
    }
}

impl Iterator for DocMerge {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_doc().transpose()
    }
}

/// Documents appended once, then read back in order any number of times, each pass with its
/// own position (reads do not move a shared file offset). Unlinked: it disappears when
/// dropped.
pub struct DocFile {
    out: BufWriter<File>,
    count: u64,
    /// Where it lives, for the error of a failed write.
    dir: PathBuf,
}

impl DocFile {
    pub fn push(&mut self, doc: &Document) -> Result<()> {
        doc.to_writer(&mut self.out)
            .map_err(|e| bson_write_error(e, &self.dir))?;
        self.count += 1;
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Ends the appending; the documents can be read from now on.
    pub fn finish(self) -> Result<DocFileReadable> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| spill_write_error(e.into_error(), &self.dir))?;
        Ok(DocFileReadable {
            file,
            count: self.count,
        })
    }
}

/// A [`DocFile`] whose appending is over.
pub struct DocFileReadable {
    file: File,
    count: u64,
}

impl DocFileReadable {
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// One pass over the documents, in the order they were appended.
    pub fn pass(&self) -> DocPass<&File> {
        DocPass::new(&self.file, self.count)
    }

    /// The last pass, owning the file (it is removed when the pass is dropped).
    pub fn into_pass(self) -> DocPass<File> {
        DocPass::new(self.file, self.count)
    }
}

/// A file read from a position of its own.
struct At<F> {
    file: F,
    pos: u64,
}

impl<F: std::borrow::Borrow<File>> Read for At<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.borrow().read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// One pass over a [`DocFileReadable`].
pub struct DocPass<F> {
    reader: BufReader<At<F>>,
    left: u64,
}

impl<F: std::borrow::Borrow<File>> DocPass<F> {
    fn new(file: F, count: u64) -> DocPass<F> {
        DocPass {
            reader: BufReader::new(At { file, pos: 0 }),
            left: count,
        }
    }
}

impl<F: std::borrow::Borrow<File>> Iterator for DocPass<F> {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(
            Document::from_reader(&mut self.reader)
                .map_err(|e| Error::internal(format!("cannot read a spilled document back: {e}"))),
        )
    }
}

/// How many files this process has open under `dir` (spill files are unlinked, so only their
/// open descriptors show them).
#[cfg(test)]
pub(crate) fn open_files_under(dir: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|fds| {
            fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|target| target.starts_with(dir))
                .count()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn by_k() -> DocOrder {
        Arc::new(|a: &Document, b: &Document| {
            crate::query::compare::compare_values(
                a.get("k").unwrap_or(&Bson::Null),
                b.get("k").unwrap_or(&Bson::Null),
            )
        })
    }

    #[test]
    fn runs_merge_stably_by_the_stages_order() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SpillDir::open(tmp.path()).unwrap();
        let order = by_k();
        // Three runs and a rest in memory, each sorted; equal keys keep source order.
        let chunks: Vec<Vec<Document>> = (0..4)
            .map(|run| {
                let mut docs: Vec<Document> = (0..50)
                    .map(|i| doc! {"k": (i * 7 + run) % 10, "run": run, "i": i})
                    .collect();
                docs.sort_by(|a, b| order(a, b));
                docs
            })
            .collect();
        let mut expected: Vec<Document> = chunks.iter().flatten().cloned().collect();
        expected.sort_by(|a, b| order(a, b));
        let mut chunks = chunks.into_iter();
        let rest = chunks.next_back().unwrap();
        let runs = chunks
            .map(|c| dir.write_docs(c.iter()).unwrap())
            .collect::<Vec<_>>();
        let merged: Vec<Document> = DocMerge::new(order, runs, rest)
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(merged, expected);
        assert_eq!(
            std::fs::read_dir(tmp.path().join("_tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn a_doc_file_reads_back_in_order_as_often_as_needed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SpillDir::open(tmp.path()).unwrap();
        let mut file = dir.doc_file().unwrap();
        let docs: Vec<Document> = (0..1000i32)
            .map(|i| doc! {"i": i, "s": "x".repeat((i % 50) as usize)})
            .collect();
        for d in &docs {
            file.push(d).unwrap();
        }
        let file = file.finish().unwrap();
        assert_eq!(file.len(), 1000);
        let mut first = file.pass();
        let mut second = file.pass();
        // Two passes at once keep their own positions.
        assert_eq!(first.next().unwrap().unwrap(), docs[0]);
        assert_eq!(second.next().unwrap().unwrap(), docs[0]);
        assert_eq!(first.next().unwrap().unwrap(), docs[1]);
        let all: Vec<Document> = file.into_pass().collect::<Result<_>>().unwrap();
        assert_eq!(all, docs);
    }
}
