//! `mayfly check`: every journal and table of a stopped data directory read against its
//! checksums (`files`), then the `validate` structure check (`engine::validate`) of every
//! collection of every database, read from one storage snapshot as stored: nothing is
//! repaired, discarded or counted first, as a server's start would.
//!
//! Prints the data directory's format version (refusing one newer than this binary reads),
//! then one line per journal, per keyspace's tables and per collection, valid or with its
//! errors, then a total; succeeds only when all are valid. A directory whose files are damaged
//! is not opened (opening would replay the journal): the collections are not checked.

use super::progress_line::ProgressLine;
use super::ToolError;
use crate::engine::documents::validate::{validate, Findings};
use crate::engine::{Catalog, Interrupt};
use crate::storage::format::{self, Recorded};
use crate::storage::Snapshot;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The data directory; no server may be running on it.
    #[arg(long, value_name = "DIR")]
    pub dbpath: PathBuf,
}

/// Checks the directory, printing to standard output; `Ok(false)` when a collection is invalid.
pub fn run(args: &CheckArgs) -> Result<bool, ToolError> {
    let mut progress = ProgressLine::stderr();
    let valid = check_directory(&args.dbpath, &mut std::io::stdout().lock(), &mut progress);
    progress.finish();
    valid
}

/// Checks the files of `dbpath`, then, when they are sound, every collection.
pub fn check_directory(
    dbpath: &Path,
    out: &mut impl Write,
    progress: &mut ProgressLine,
) -> Result<bool, ToolError> {
    if !crate::storage::FjallBackend::holds_database(dbpath) {
        return Err(ToolError::Refused(format!(
            "{} is not a mayfly data directory",
            dbpath.display()
        )));
    }
    let lock = crate::storage::lock::DirLock::acquire(dbpath)?;
    print(out, &describe_format(format::require_readable(dbpath)?))?;
    let files_sound = super::files::check_files(dbpath, out)?;
    drop(lock);
    if !files_sound {
        print(
            out,
            "storage files damaged: collections not checked; see `mayfly repair`",
        )?;
        return Ok(false);
    }
    let backend = super::open_existing(dbpath)?;
    let snapshot = crate::storage::Backend::snapshot(&backend);
    check(&snapshot, out, progress)
}

/// Checks every collection of `snapshot`, a line each to `out`, showing which one it is at on
/// `progress`; whether all are valid.
pub fn check<S: Snapshot>(
    snapshot: &S,
    out: &mut impl Write,
    progress: &mut ProgressLine,
) -> Result<bool, ToolError> {
    let catalog = Catalog::load(snapshot)?;
    let interrupt = Interrupt::none();
    let (mut checked, mut invalid) = (0u64, 0u64);
    let total = catalog.all().count();
    for meta in catalog.all() {
        progress.update(|| {
            format!(
                "mayfly check: collection {}/{total} ({})",
                checked + 1,
                meta.namespace()
            )
        });
        let found = validate(snapshot, meta, &interrupt)?;
        checked += 1;
        if !found.valid() {
            invalid += 1;
        }
        print(out, &format!("{}: {}", meta.namespace(), describe(&found)))?;
    }
    print(
        out,
        &format!("{checked} collections checked, {invalid} not valid"),
    )?;
    Ok(invalid == 0)
}

fn print(out: &mut impl Write, line: &str) -> Result<(), ToolError> {
    writeln!(out, "{line}").map_err(|source| ToolError::File {
        path: PathBuf::from("standard output"),
        source,
    })
}

/// The line naming the directory's format version (a newer one was refused before).
fn describe_format(recorded: Recorded) -> String {
    let current = format::CURRENT;
    match recorded {
        Recorded::Version(version) => format!("data directory format: {version}"),
        Recorded::Unversioned => format!(
            "data directory format: {current} (its marker predates format versions; the next \
             start of the server records the number)"
        ),
        Recorded::Unmarked => format!(
            "data directory format: {current} (initialised before the marker; the next start \
             of the server records it)"
        ),
    }
}

/// "valid", or "NOT VALID" and every error, with the record count and any warnings.
fn describe(found: &Findings) -> String {
    let mut errors = found.errors.clone();
    errors.extend(found.indexes.iter().flat_map(|i| i.errors.iter().cloned()));
    let mut line = if errors.is_empty() {
        format!("valid ({} records)", found.records)
    } else {
        format!(
            "NOT VALID ({} records): {}",
            found.records,
            errors.join("; ")
        )
    };
    for warning in &found.warnings {
        line.push_str(&format!("; warning: {warning}"));
    }
    line
}
