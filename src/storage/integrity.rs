//! What a data directory must hold before fjall may open it, checked at every open: the start
//! refuses a damaged directory instead of letting fjall recover it into a silently smaller one.
//!
//! Owns: telling a never-initialised directory from an initialised one (the marker file
//! [`MARKER`]), the metadata that must be present, the `current` checksums, and the journal
//! check ([`journal`](super::journal)) with its torn-tail report. Does not own: the formats
//! (`journal`, `tree_files`), opening fjall, or repairing (`tools::repair`).
//!
//! # Never initialised, or initialised then damaged
//!
//! fjall creates a database wherever it finds no `version` file, and recreates a keyspace (or
//! its whole keyspace catalog, deleting every keyspace it no longer knows) wherever a tree's
//! `current` file is missing. So a missing file is indistinguishable from a new directory unless
//! mayfly records that it initialised one: [`MARKER`] is written (and fsynced, file and
//! directory) once fjall's database, mayfly's keyspaces and the catalog's layout record are all
//! durable, at the end of the first open. Its presence makes every check strict. A directory
//! without it but with fjall's `version` was initialised by a mayfly from before the marker:
//! it is checked as far as fjall's own files allow, and marked at the end of the open. A
//! directory with neither, but with fjall's files, is refused: its first start was cut short
//! (nothing was stored) or its `version` file was deleted, and mayfly cannot tell which.
//!
//! The marker also records the directory's format version ([`format`](super::format)),
//! checked first: a directory of a newer format is refused before any other file is read.

use super::format::{self, Recorded};
use super::journal::{self, Ending, TornTail};
use super::tree_files;
use super::StorageError;
use std::path::{Path, PathBuf};

pub use super::format::MARKER;
/// fjall's own marker (it writes it last when creating a database).
const FJALL_VERSION: &str = "version";

/// What the checks found: enough to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// The directory was never initialised: fjall will create the database.
    pub fresh: bool,
    /// The directory carries [`MARKER`].
    pub marked: bool,
    /// Journals read and the valid batches in them.
    pub journals: usize,
    pub batches: u64,
    /// The newest journal's torn last batch, which fjall's replay drops.
    pub torn: Option<(PathBuf, TornTail)>,
}

fn damaged(path: PathBuf, detail: impl Into<String>) -> StorageError {
    StorageError::Damaged {
        path,
        detail: detail.into(),
    }
}

/// Whether `dir` holds any of fjall's files.
fn has_fjall_files(dir: &Path) -> Result<bool, StorageError> {
    if dir.join("keyspaces").exists() || dir.join("lock").exists() {
        return Ok(true);
    }
    Ok(!journal::list(dir)?.is_empty())
}

/// Checks `dir` before fjall opens it; refuses it when damaged.
pub fn check(dir: &Path) -> Result<Preflight, StorageError> {
    let marked = format::require_readable(dir)? != Recorded::Unmarked;
    let has_version = dir.join(FJALL_VERSION).is_file();
    if !marked && !has_version {
        if has_fjall_files(dir)? {
            return Err(damaged(
                dir.join(FJALL_VERSION),
                "missing, yet the directory holds fjall's files: either its first start was \
                 cut short (nothing was stored; empty the directory) or the file was deleted",
            ));
        }
        return Ok(Preflight {
            fresh: true,
            marked: false,
            journals: 0,
            batches: 0,
            torn: None,
        });
    }
    if !has_version {
        return Err(damaged(
            dir.join(FJALL_VERSION),
            "missing: the storage engine would create a new, empty database here",
        ));
    }
    check_trees(dir, marked)?;
    let (journals, batches, torn) = check_journals(dir)?;
    Ok(Preflight {
        fresh: false,
        marked,
        journals,
        batches,
        torn,
    })
}

/// Every tree's `current` and version file; fjall's keyspace catalog (`keyspaces/0`) must be
/// there, and in a marked directory every tree must be complete.
fn check_trees(dir: &Path, marked: bool) -> Result<(), StorageError> {
    let catalog = dir.join("keyspaces").join("0");
    if !catalog.join(tree_files::CURRENT).is_file() {
        return Err(damaged(
            catalog.join(tree_files::CURRENT),
            "missing: without it the storage engine would forget every keyspace and delete them",
        ));
    }
    for tree in tree_files::trees(dir)? {
        if !tree.join(tree_files::CURRENT).is_file() && !marked {
            // Unmarked: a keyspace whose creation a crash cut short; fjall discards it.
            continue;
        }
        if let Err(bad) = tree_files::check_current(&tree) {
            return Err(damaged(bad.path, bad.detail));
        }
    }
    Ok(())
}

type JournalCheck = (usize, u64, Option<(PathBuf, TornTail)>);

/// Every journal, oldest first: numbered without gaps, seqnos rising through them, and no
/// damage; only the newest may end torn.
fn check_journals(dir: &Path) -> Result<JournalCheck, StorageError> {
    let files = journal::list(dir)?;
    let Some(newest) = files.last().map(|f| f.id) else {
        return Err(damaged(
            dir.to_path_buf(),
            "the journal (<n>.jnl) is missing: fjall always keeps one, and writes not yet \
             flushed to tables would be lost",
        ));
    };
    let mut expected = files.first().map_or(newest, |f| f.id);
    let (mut batches, mut last, mut torn) = (0u64, None, None);
    for file in &files {
        if file.id != expected {
            return Err(damaged(
                dir.join(format!("{expected}.jnl")),
                "missing: the journals around it are there",
            ));
        }
        expected = file.id.saturating_add(1);
        let bytes = journal::read(&file.path)?;
        let scan = journal::scan(&bytes, last, file.id == newest);
        batches += scan.batches;
        last = scan.last_seqno;
        match scan.ending {
            Ending::Clean => {}
            Ending::Torn(tail) => torn = Some((file.path.clone(), tail)),
            Ending::Damaged(damage) => {
                return Err(damaged(
                    file.path.clone(),
                    format!(
                        "damaged at offset {} after {} valid batches: {}",
                        damage.offset, scan.batches, damage.detail
                    ),
                ))
            }
        }
    }
    Ok((files.len(), batches, torn))
}

/// Marks `dir` initialised in the current format, durably; a no-op when it is already. A
/// marker from before format versions is rewritten with its format line (its files are the
/// current format's: [`format`]).
pub fn mark(dir: &Path) -> Result<(), StorageError> {
    if format::require_readable(dir)? == Recorded::Version(format::CURRENT) {
        return Ok(());
    }
    let path = dir.join(MARKER);
    let tmp = dir.join(format!("{MARKER}.tmp"));
    std::fs::write(&tmp, format::marker_text())?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}
