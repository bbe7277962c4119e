//! `mayfly check`: the `validate` structure check (`engine::validate`) of every collection of
//! every database of a stopped data directory, read from one storage snapshot as stored:
//! nothing is repaired, discarded or counted first, as a server's start would.
//!
//! Prints one line per collection, valid or with its errors, then a total; succeeds only when
//! every collection is valid.

use super::ToolError;
use crate::engine::validate::{validate, Findings};
use crate::engine::{Catalog, Interrupt};
use crate::storage::Snapshot;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The data directory; no server may be running on it.
    #[arg(long, value_name = "DIR")]
    pub dbpath: PathBuf,
}

/// Checks the directory, printing to standard output; `Ok(false)` when a collection is invalid.
pub fn run(args: &CheckArgs) -> Result<bool, ToolError> {
    let backend = super::open_existing(&args.dbpath)?;
    let snapshot = crate::storage::Backend::snapshot(&backend);
    check(&snapshot, &mut std::io::stdout().lock())
}

/// Checks every collection of `snapshot`, a line each to `out`; whether all are valid.
pub fn check<S: Snapshot>(snapshot: &S, out: &mut impl Write) -> Result<bool, ToolError> {
    let catalog = Catalog::load(snapshot)?;
    let interrupt = Interrupt::none();
    let (mut checked, mut invalid) = (0u64, 0u64);
    for meta in catalog.all() {
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
