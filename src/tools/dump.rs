//! `mayfly dump`: an archive (`archive`) of a stopped data directory, read from one storage
//! snapshot and streamed a record at a time.
//!
//! What goes in: every collection of every database but `local` and `config` (server state:
//! the session records of retryable writes), or of the one `--db` names (which may name them),
//! with its options, ready indexes and Cosmos DB settings; its users; and each document as stored, with its `_ts`
//! and own `ttl`. A document already expired when the dump is taken is left out, as no client
//! could read it any more (TTL-18). Not dumped: the operation log, `system.profile` (the
//! profiler's record of operations), index builds not finished
//! (a server discards them at start), sessions and cursors (memory only).
//!
//! The archive is written to `FILE.tmp` and renamed to `FILE` once complete and synced, so a
//! dump that fails never leaves a partial archive under the final name.

use super::archive::{ArchiveWriter, CollectionEntry, Counts};
use super::progress_line::ProgressLine;
use super::ToolError;
use crate::clock::{Clock, SystemClock};
use crate::engine::exec::live;
use crate::engine::Catalog;
use crate::storage::Snapshot;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Databases that hold server state, dumped only when `--db` names them.
const SERVER_DATABASES: &[&str] = &["local", "config"];

#[derive(Debug, clap::Args)]
pub struct DumpArgs {
    /// The data directory; no server may be running on it.
    #[arg(long, value_name = "DIR")]
    pub dbpath: PathBuf,
    /// The archive to write; `-` writes it to standard output.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Dump only this database.
    #[arg(long, value_name = "NAME")]
    pub db: Option<String>,
}

/// What a dump wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpSummary {
    pub counts: Counts,
    /// Documents left out because they had expired.
    pub expired: u64,
}

pub fn run(args: &DumpArgs) -> Result<(), ToolError> {
    let backend = super::open_existing(&args.dbpath)?;
    let snapshot = crate::storage::Backend::snapshot(&backend);
    let now_millis = SystemClock::new().now_millis();
    let db = args.db.as_deref();
    let to_stdout = args.out.as_os_str() == "-";
    let mut progress = ProgressLine::stderr();
    let summary = if to_stdout {
        let (mut out, summary) = dump(
            &snapshot,
            std::io::stdout().lock(),
            db,
            now_millis,
            &mut progress,
        )?;
        out.flush().map_err(|source| ToolError::File {
            path: PathBuf::from("standard output"),
            source,
        })?;
        summary
    } else {
        dump_to_file(&snapshot, &args.out, db, now_millis, &mut progress)?
    };
    progress.finish();
    let c = summary.counts;
    eprintln!(
        "mayfly dump: {} collections, {} documents, {} users written to {}; {} expired documents left out",
        c.collections,
        c.documents,
        c.users,
        if to_stdout {
            "standard output".to_owned()
        } else {
            args.out.display().to_string()
        },
        summary.expired
    );
    Ok(())
}

/// Writes the archive to `path.tmp`, then renames it to `path`.
pub(super) fn dump_to_file<S: Snapshot>(
    snapshot: &S,
    path: &Path,
    db: Option<&str>,
    now_millis: i64,
    progress: &mut ProgressLine,
) -> Result<DumpSummary, ToolError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let file_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ToolError::File { path, source }
    };
    let file = File::create(&tmp).map_err(file_error(&tmp))?;
    let written = dump(snapshot, BufWriter::new(file), db, now_millis, progress).and_then(
        |(out, summary)| {
            let file = out.into_inner().map_err(|e| ToolError::File {
                path: tmp.clone(),
                source: e.into_error(),
            })?;
            file.sync_all().map_err(file_error(&tmp))?;
            Ok(summary)
        },
    );
    let summary = match written {
        Ok(summary) => summary,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(file_error(path)(e));
    }
    // The rename itself survives a crash once the directory is synced.
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Ok(dir) = File::open(parent.unwrap_or(Path::new("."))) {
        let _ = dir.sync_all();
    }
    Ok(summary)
}

/// Writes the archive of `snapshot` (every database, or `db`) to `out`, leaving out the
/// documents expired at `now_millis`, showing its progress on `progress`; returns `out`, not
/// flushed.
pub fn dump<S: Snapshot, W: Write>(
    snapshot: &S,
    out: W,
    db: Option<&str>,
    now_millis: i64,
    progress: &mut ProgressLine,
) -> Result<(W, DumpSummary), ToolError> {
    let catalog = Catalog::load(snapshot)?;
    let wanted = |name: &str| match db {
        Some(db) => name == db,
        None => !SERVER_DATABASES.contains(&name),
    };
    if let Some(db) = db {
        if catalog.collections_in(db).next().is_none() && catalog.users_in(db).next().is_none() {
            return Err(ToolError::Refused(format!(
                "there is no database {db:?} to dump"
            )));
        }
    }
    let now = now_millis.div_euclid(1000);
    let mut archive = ArchiveWriter::start(out, bson::DateTime::from_millis(now_millis))?;
    let (mut expired, mut documents) = (0, 0u64);
    for user in catalog.all_users().filter(|u| wanted(&u.db)) {
        let user = bson::to_document(user.as_ref())
            .map_err(|e| crate::error::Error::internal(format!("cannot encode a user: {e}")))?;
        archive.user(&user)?;
    }
    // The profiler's entries are the server's record of its own operations, not data.
    let is_data = |name: &str| name != crate::command::profiler::PROFILE_COLLECTION;
    for meta in catalog.all().filter(|m| wanted(&m.db) && is_data(&m.name)) {
        archive.collection(&CollectionEntry {
            db: meta.db.clone(),
            name: meta.name.clone(),
            options: meta.options.clone(),
            indexes: meta
                .indexes
                .iter()
                .filter(|i| !i.building)
                .map(archived_index)
                .collect(),
            cosmos: meta
                .cosmos
                .as_ref()
                .map(bson::to_document)
                .transpose()
                .map_err(|e| {
                    crate::error::Error::internal(format!("cannot encode Cosmos settings: {e}"))
                })?,
        })?;
        let mut scan = live::records(snapshot, meta, now);
        for record in &mut scan {
            let record = record.map_err(|e| {
                ToolError::Refused(format!(
                    "{}: {} (run mayfly check)",
                    meta.namespace(),
                    e.message
                ))
            })?;
            archive.document(record.ts, record.own_ttl, &record.body)?;
            documents += 1;
            progress
                .update(|| format!("mayfly dump: {documents} documents ({})", meta.namespace()));
        }
        expired += scan.expired;
    }
    let (out, counts) = archive.finish()?;
    Ok((out, DumpSummary { counts, expired }))
}

/// An index as the archive holds it: its `listIndexes` entry, and for a Cosmos custom TTL path
/// (TTL-30) `cosmosCustomTtl: true`, without which a restore would make it a date TTL index
/// that reads no numbers.
fn archived_index(index: &crate::engine::catalog::IndexMeta) -> bson::Document {
    let mut entry = index.to_list_entry();
    if index.custom_ttl {
        entry.insert(CUSTOM_TTL_FIELD, true);
    }
    entry
}

/// The archive's marker of a custom TTL path index.
pub(super) const CUSTOM_TTL_FIELD: &str = "cosmosCustomTtl";
