//! The storage files' part of `mayfly check`: every journal and every table of a stopped data
//! directory read whole against their checksums, before anything opens it (opening replays
//! the journal, and fjall would cut a damaged one short).
//!
//! Owns: the lines printed for the files and whether they are all sound. Does not own: the
//! formats or the checks (`storage::journal`, `storage::tree_files`).

use super::ToolError;
use crate::storage::journal::{self, Ending};
use crate::storage::tree_files;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Checks every journal and tree of `dbpath`, a line each to `out`; whether all are sound (a
/// torn journal tail is sound: the next start drops it).
pub fn check_files(dbpath: &Path, out: &mut impl Write) -> Result<bool, ToolError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ToolError::File { path, source }
    };
    let mut sound = true;
    let journals = journal::list(dbpath).map_err(io(dbpath))?;
    if journals.is_empty() {
        sound = false;
        print(out, "journal: MISSING (no <n>.jnl file)")?;
    }
    let (newest, mut last) = (journals.last().map(|f| f.id), None);
    for file in &journals {
        let bytes = journal::read(&file.path).map_err(io(&file.path))?;
        let scan = journal::scan(&bytes, last, Some(file.id) == newest);
        last = scan.last_seqno;
        let state = match &scan.ending {
            Ending::Clean => "valid".to_owned(),
            Ending::Torn(tail) => format!(
                "valid; torn last batch at offset {} ({} bytes, never acknowledged as \
                 durable), dropped at the next start",
                tail.offset, tail.bytes
            ),
            Ending::Damaged(damage) => {
                sound = false;
                format!("DAMAGED at offset {}: {}", damage.offset, damage.detail)
            }
        };
        print(
            out,
            &format!("{}: {} batches, {state}", name(&file.path), scan.batches),
        )?;
    }
    for tree in tree_files::trees(dbpath).map_err(io(dbpath))? {
        let found = tree_files::check_tree(&tree);
        let mut line = format!(
            "{}: {} tables ({} bytes) valid",
            relative(dbpath, &tree),
            found.tables,
            found.bytes
        );
        for bad in &found.bad {
            sound = false;
            line.push_str(&format!(
                "; NOT VALID: {}: {}",
                relative(dbpath, &bad.path),
                bad.detail
            ));
        }
        print(out, &line)?;
    }
    Ok(sound)
}

fn name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

pub fn print(out: &mut impl Write, line: &str) -> Result<(), ToolError> {
    writeln!(out, "{line}").map_err(|source| ToolError::File {
        path: PathBuf::from("standard output"),
        source,
    })
}
