//! The offline tools, subcommands of the `mayfly` binary that work on a stopped data directory:
//! `dump` (an archive of its databases), `restore` (an archive back into a directory),
//! `check` (every journal and table against its checksums, then the `validate` structure check
//! of every collection) and `repair` (salvage what is readable of a damaged directory); and
//! `ca-path`, which prints where the development CA file is (`ca_path`); and `ping`, which asks a
//! running server whether it answers (`ping`: the health check of a container image).
//!
//! Each tool on a data directory takes the data directory's lock, as a server does, so none runs beside a server on the
//! same directory. Owns: the subcommands' arguments, the archive format (`archive`), and the
//! exit status. Does not own: the checks (`engine::validate`) or how records are written
//! (`engine::collection`): the tools go through the engine like a server.

pub mod archive;
pub mod ca_path;
pub mod check;
pub mod dump;
pub mod files;
pub mod ping;
pub mod progress_line;
pub mod repair;
pub mod restore;

#[cfg(test)]
mod repair_tests;
#[cfg(test)]
mod round_trip_tests;

use crate::storage::{FjallBackend, FjallConfig, StorageError};
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A subcommand of `mayfly`; without one, `mayfly` runs the server.
#[derive(Debug, Subcommand)]
pub enum Tool {
    /// Write an archive of a stopped data directory.
    ///
    /// Collections with their options and indexes, users, and every document with its `_ts`,
    /// so a restore keeps when each document expires. Documents already expired are left out.
    Dump(dump::DumpArgs),
    /// Restore an archive written by `mayfly dump` into a data directory.
    ///
    /// The directory is created if missing. Collections and users it already has are refused
    /// unless `--drop`.
    Restore(restore::RestoreArgs),
    /// Check a stopped data directory: every journal and table against its checksums, then
    /// every collection as `validate` does.
    ///
    /// Prints a line per journal, keyspace and collection; exits 1 when one is not valid.
    Check(check::CheckArgs),
    /// Salvage what is readable of a damaged, stopped data directory, as `mongod --repair`.
    ///
    /// Keeps every valid journal batch, drops the rest (moving the original files to
    /// `repair-backup/`), restores lost version pointers, prints what was lost, then checks
    /// the directory as `check` does; exits 1 when it is still not valid. Copy the directory
    /// somewhere safe first.
    Repair(repair::RepairArgs),
    /// Print the path of the development CA file that clients trust (`tlsCAFile`).
    ///
    /// One CA per user, shared by every server that generates development certificates, in
    /// the directory `--tls-ca-dir` (or `MAYFLY_CAROOT`) names.
    CaPath(ca_path::CaPathArgs),
    /// Ask a running server whether it answers: `{ping: 1}` over plain TCP.
    ///
    /// Prints `ok` and exits 0 when it answers `ok: 1`; exits 1 with the reason otherwise. A
    /// health check that needs no shell or MongoDB client (the container image's HEALTHCHECK).
    Ping(ping::PingArgs),
}

/// Why a tool failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    Archive(#[from] archive::ArchiveError),
    #[error("{0}")]
    Storage(#[from] StorageError),
    #[error("{}", .0.message)]
    Engine(#[from] crate::error::Error),
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Refused(String),
}

/// Runs `tool`: 0 when it succeeded, 1 when it failed (the reason on standard error), as the
/// server's own failures at run time.
pub fn run(tool: Tool) -> ExitCode {
    let outcome = match tool {
        Tool::Dump(args) => dump::run(&args).map(|()| true),
        Tool::Restore(args) => restore::run(&args).map(|()| true),
        Tool::Check(args) => check::run(&args),
        Tool::Repair(args) => repair::run(&args),
        Tool::CaPath(args) => ca_path::run(&args).map(|()| true),
        Tool::Ping(args) => ping::run(&args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mayfly: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Opens the data directory at `dbpath`, which must already hold a database: a tool that reads
/// must not create an empty one where a path was mistyped, nor misread the keys of an earlier
/// layout (`engine::layout`).
pub fn open_existing(dbpath: &Path) -> Result<FjallBackend, ToolError> {
    if !FjallBackend::holds_database(dbpath) {
        return Err(ToolError::Refused(format!(
            "{} is not a mayfly data directory",
            dbpath.display()
        )));
    }
    let backend = FjallBackend::open_with(dbpath, &FjallConfig::default())?;
    crate::engine::layout::check_catalog(&backend, dbpath)?;
    if !crate::engine::layout::is_current(&crate::storage::Backend::snapshot(&backend))? {
        return Err(ToolError::Refused(format!(
            "{} was written by an earlier mayfly, whose keys a start of the server rewrites: \
             start mayfly on it once, then run this again",
            dbpath.display()
        )));
    }
    Ok(backend)
}
