//! `mayfly repair`: salvages what is readable of a damaged, stopped data directory so that the
//! server starts on it again, as `mongod --repair` does, and says what was lost.
//!
//! Owns: the order of the repair and its report. Does not own: the formats (`storage::journal`,
//! `storage::tree_files`) or the checks a start makes (`storage::integrity`), which decide
//! whether the repair worked: it ends by opening the directory as a server would and running
//! `mayfly check`.
//!
//! In order:
//! 1. Each keyspace's `current` that is missing or names a version file failing its checksum is
//!    rewritten to name the newest intact version file (lsm-tree keeps only the newest, so this
//!    is the state at the last flush or compaction).
//! 2. Each journal keeps its valid batches and drops the rest: a torn last batch (never
//!    acknowledged as durable), and any batch that fails its checksum, item count or order
//!    (which may have been acknowledged). After a bad batch, reading resumes at the next whole
//!    valid batch. The original file is moved to `repair-backup/` first, never deleted.
//!    Journal numbers are closed up if one is missing; with no journal at all an empty one is
//!    created (what was only in it is gone, and how much cannot be known).
//! 3. When a batch that may have been acknowledged was dropped, every collection's document
//!    counter is recounted (a later batch may have counted the lost documents).
//! 4. The directory is opened with the start's checks and every journal, table and collection
//!    is checked.
//!
//! Dropping a batch from the middle of a journal keeps every batch atomic, but later batches
//! may build on the lost one (a document updated later, an index entry): the final check says
//! whether the collections are consistent. A table that fails its checksum cannot be salvaged
//! here; restore it from a dump.

use super::files::print;
use super::ToolError;
use crate::storage::journal::{self, JournalFile};
use crate::storage::lock::DirLock;
use crate::storage::tree_files;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct RepairArgs {
    /// The data directory; no server may be running on it. Copy it somewhere safe first.
    #[arg(long, value_name = "DIR")]
    pub dbpath: PathBuf,
}

/// Where the original files a repair replaces are kept.
pub const BACKUP_DIR: &str = "repair-backup";

/// Repairs the directory, printing to standard output; `Ok(false)` when it still does not
/// check valid.
pub fn run(args: &RepairArgs) -> Result<bool, ToolError> {
    repair(&args.dbpath, &mut std::io::stdout().lock())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ToolError {
    let path = path.to_path_buf();
    move |source| ToolError::File { path, source }
}

/// Repairs `dbpath`, a line per finding to `out`; whether it checks valid afterwards.
pub fn repair(dbpath: &Path, out: &mut impl Write) -> Result<bool, ToolError> {
    if !crate::storage::FjallBackend::holds_database(dbpath) {
        return Err(ToolError::Refused(format!(
            "{} is not a mayfly data directory: nothing to repair",
            dbpath.display()
        )));
    }
    let dropped = {
        let _lock = DirLock::acquire(dbpath)?;
        // A newer format's files are not this binary's to rewrite.
        crate::storage::format::require_readable(dbpath)?;
        repair_trees(dbpath, out)?;
        repair_journals(dbpath, out)?
    };
    if dropped {
        if let Err(e) = recount(dbpath, out) {
            print(out, &format!("document counts not recounted: {e}"))?;
        }
    }
    print(out, "repair done; checking the directory as a start would")?;
    match super::check::check_directory(dbpath, out, &mut super::progress_line::ProgressLine::off())
    {
        Ok(valid) => Ok(valid),
        Err(e) => {
            print(out, &format!("the directory still does not open: {e}"))?;
            Ok(false)
        }
    }
}

fn repair_trees(dbpath: &Path, out: &mut impl Write) -> Result<(), ToolError> {
    for tree in tree_files::trees(dbpath).map_err(io(dbpath))? {
        let Err(bad) = tree_files::check_current(&tree) else {
            continue;
        };
        let line = match tree_files::rebuild_current(&tree).map_err(io(&tree))? {
            Some(version) => format!(
                "{}: {}; `current` rewritten to name version file v{version}, the newest \
                 intact one",
                bad.path.display(),
                bad.detail
            ),
            None => format!(
                "{}: {}; NOT REPAIRED: no intact version file to name",
                bad.path.display(),
                bad.detail
            ),
        };
        print(out, &line)?;
    }
    Ok(())
}

/// Document counters are derived, and a later batch may have counted the documents of a
/// dropped one: every counter is deleted, and the engine's start counts each collection again
/// (`engine::counts::backfill`).
fn recount(dbpath: &Path, out: &mut impl Write) -> Result<(), ToolError> {
    use crate::storage::{Backend, Durability, FjallBackend, WriteBatch};
    {
        let backend = FjallBackend::open(dbpath)?;
        let catalog = crate::engine::Catalog::load(&backend.snapshot())?;
        let mut batch = WriteBatch::new();
        for meta in catalog.all() {
            batch.delete(
                crate::storage::Keyspace::Catalog,
                crate::engine::documents::counts::counter_key(meta.id),
            );
        }
        backend.commit(batch, Durability::SyncData)?;
    }
    let clock = Arc::new(crate::clock::SystemClock::new());
    drop(crate::engine::Engine::open(dbpath, clock)?);
    print(
        out,
        "document counts recounted (a dropped batch may have been counted by a later one)",
    )
}

/// Salvages every journal; whether a batch was dropped that may have been acknowledged (or any
/// journal is missing).
fn repair_journals(dbpath: &Path, out: &mut impl Write) -> Result<bool, ToolError> {
    let files = journal::list(dbpath).map_err(io(dbpath))?;
    if files.is_empty() {
        let path = dbpath.join("1.jnl");
        std::fs::File::create(&path)
            .and_then(|f| f.sync_all())
            .map_err(io(&path))?;
        sync_dir(dbpath)?;
        print(
            out,
            "journal: MISSING; writes that were only in it (not yet flushed to tables) are \
             lost, how many cannot be known; an empty journal was created",
        )?;
        return Ok(true);
    }
    let mut last = None;
    let mut dropped = false;
    for file in &files {
        let bytes = journal::read(&file.path).map_err(io(&file.path))?;
        let salvage = journal::salvage(&bytes, last);
        last = salvage.last_seqno;
        if salvage.lost.is_empty() {
            continue;
        }
        for lost in &salvage.lost {
            dropped |= !lost.torn;
            let kind = if lost.torn {
                "never acknowledged as durable"
            } else {
                "MAY HAVE HELD ACKNOWLEDGED WRITES"
            };
            print(
                out,
                &format!(
                    "{}: dropped {} bytes at offset {} ({kind}): {}",
                    file.path.display(),
                    lost.bytes,
                    lost.offset,
                    lost.detail
                ),
            )?;
        }
        let kept: Vec<u8> = salvage
            .kept
            .iter()
            .flat_map(|range| bytes.get(range.clone()).unwrap_or_default())
            .copied()
            .collect();
        let backup = back_up(dbpath, &file.path)?;
        replace(&file.path, &kept)?;
        print(
            out,
            &format!(
                "{}: kept {} batches ({} bytes); the original is {}",
                file.path.display(),
                salvage.kept_batches,
                kept.len(),
                backup.display()
            ),
        )?;
    }
    Ok(close_gaps(dbpath, &files, out)? || dropped)
}

/// Renumbers journals after a missing one, keeping their order (fjall replays by number).
/// Whether one was missing.
fn close_gaps(
    dbpath: &Path,
    files: &[JournalFile],
    out: &mut impl Write,
) -> Result<bool, ToolError> {
    let Some(first) = files.first().map(|f| f.id) else {
        return Ok(false);
    };
    let mut gap = false;
    for (expected, file) in (first..).zip(files) {
        if file.id != expected {
            gap = true;
            let to = dbpath.join(format!("{expected}.jnl"));
            std::fs::rename(&file.path, &to).map_err(io(&file.path))?;
            print(
                out,
                &format!(
                    "{}: renumbered {} (a journal before it is missing: what it held is lost)",
                    file.path.display(),
                    to.display()
                ),
            )?;
        }
    }
    sync_dir(dbpath)?;
    Ok(gap)
}

/// Moves `path` into [`BACKUP_DIR`] under a name not taken yet.
fn back_up(dbpath: &Path, path: &Path) -> Result<PathBuf, ToolError> {
    let dir = dbpath.join(BACKUP_DIR);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = name.unwrap_or_else(|| "journal".to_owned());
    let target = (0u32..)
        .map(|n| match n {
            0 => dir.join(&name),
            n => dir.join(format!("{name}.{n}")),
        })
        .find(|p| !p.exists())
        .unwrap_or_else(|| dir.join(&name));
    std::fs::copy(path, &target).map_err(io(&target))?;
    std::fs::File::open(&target)
        .and_then(|f| f.sync_all())
        .map_err(io(&target))?;
    sync_dir(&dir)?;
    Ok(target)
}

/// Replaces `path` with `bytes` atomically and durably.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    let tmp = path.with_extension("repair");
    std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    match path.parent() {
        Some(dir) => sync_dir(dir),
        None => Ok(()),
    }
}

fn sync_dir(dir: &Path) -> Result<(), ToolError> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io(dir))
}
