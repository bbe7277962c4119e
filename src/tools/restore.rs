//! `mayfly restore`: an archive (`archive`) back into a data directory, through the engine's
//! writer like any write, each record with the `_ts` it was dumped with, so every document
//! expires exactly when it would have where it came from.
//!
//! The archive is read twice: once to check all of it (header, every entry, counts, checksum)
//! and to list what it holds, before anything is written; then to write it, 1,000 records a
//! commit. Collections and users the directory already has are refused, all named, before
//! anything is written, unless `--drop` (then each is dropped or replaced just before its own
//! restore). A restore that fails while writing leaves what it wrote; run it again with
//! `--drop`.

use super::archive::{ArchiveReader, CollectionEntry, Counts, DocumentEntry, Entry};
use super::progress_line::ProgressLine;
use super::ToolError;
use crate::auth::User;
use crate::clock::SystemClock;
use crate::engine::documents::new_document::NewDocument;
use crate::engine::{ddl, documents::collection, users, Catalog, Engine, IndexMeta, WriteHandle};
use crate::error::{Error, Result};
use crate::profile::account::CollectionSettings;
use bson::{Bson, Document};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Records written per commit: a big restore neither holds everything nor commits per record.
const BATCH_RECORDS: usize = 1_000;
/// Body bytes per commit, so a batch of large documents stays small too.
const BATCH_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The data directory to restore into, created if missing; no server may be running on it.
    #[arg(long, value_name = "DIR")]
    pub dbpath: PathBuf,
    /// The archive `mayfly dump` wrote.
    #[arg(long = "in", value_name = "FILE")]
    pub input: PathBuf,
    /// Drop each collection (and replace each user) the archive holds that the directory
    /// already has, instead of refusing to restore.
    #[arg(long)]
    pub drop: bool,
}

pub fn run(args: &RestoreArgs) -> Result<(), ToolError> {
    let open = || {
        File::open(&args.input)
            .map(BufReader::new)
            .map_err(|source| ToolError::File {
                path: args.input.clone(),
                source,
            })
    };
    let contents = survey(open()?)?;
    let engine = Engine::open(&args.dbpath, Arc::new(SystemClock::new()))?;
    refuse_conflicts(&contents, &*engine.catalog()?, args.drop, &args.dbpath)?;
    let mut progress = ProgressLine::stderr();
    let counts = restore(&engine, open()?, args.drop, &mut progress)?;
    progress.finish();
    eprintln!(
        "mayfly restore: {} collections, {} documents, {} users restored into {}",
        counts.collections,
        counts.documents,
        counts.users,
        args.dbpath.display()
    );
    Ok(())
}

/// What an archive holds, by name.
#[derive(Debug, Default)]
pub struct Contents {
    pub collections: Vec<(String, String)>,
    pub users: Vec<(String, String)>,
}

/// Reads all of an archive, checking it, and lists its collections and users.
pub fn survey<R: Read>(input: R) -> Result<Contents, ToolError> {
    let (mut reader, _) = ArchiveReader::open(input)?;
    let mut contents = Contents::default();
    while let Some(entry) = reader.next_entry()? {
        match entry {
            Entry::Collection(c) => {
                for spec in &c.indexes {
                    index_of(spec)?;
                }
                contents.collections.push((c.db, c.name));
            }
            Entry::User(u) => {
                let user = user_of(u)?;
                contents.users.push((user.db, user.name));
            }
            Entry::Document(_) => {}
        }
    }
    Ok(contents)
}

/// Refuses, naming them all, the collections and users of `contents` that `catalog` already
/// has, unless they are to be dropped.
pub(super) fn refuse_conflicts(
    contents: &Contents,
    catalog: &Catalog,
    drop: bool,
    dbpath: &Path,
) -> Result<(), ToolError> {
    let mut taken: Vec<String> = contents
        .collections
        .iter()
        .filter(|(db, name)| catalog.get(db, name).is_some())
        .map(|(db, name)| format!("collection {db}.{name}"))
        .collect();
    taken.extend(
        contents
            .users
            .iter()
            .filter(|(db, name)| catalog.user(db, name).is_some())
            .map(|(db, name)| format!("user {name}@{db}")),
    );
    if taken.is_empty() || drop {
        return Ok(());
    }
    Err(ToolError::Refused(format!(
        "{} already has {}: nothing was restored; restore with --drop to replace them",
        dbpath.display(),
        taken.join(", ")
    )))
}

/// Writes every entry of the archive `input` into `engine`; with `drop`, a collection or user
/// that exists is dropped or replaced first, showing its progress on `progress`. Returns what
/// was restored.
pub fn restore<R: Read>(
    engine: &Engine,
    input: R,
    drop: bool,
    progress: &mut ProgressLine,
) -> Result<Counts, ToolError> {
    let (mut reader, _) = ArchiveReader::open(input)?;
    let handle = engine.write_handle();
    let mut batch = Batch::default();
    while let Some(entry) = reader.next_entry()? {
        match entry {
            Entry::Collection(c) => {
                batch.flush(&handle)?;
                batch.namespace = Some((c.db.clone(), c.name.clone()));
                create(&handle, c, drop)?;
            }
            Entry::Document(d) => {
                batch.push(d)?;
                if batch.is_full() {
                    batch.flush(&handle)?;
                }
                progress
                    .update(|| format!("mayfly restore: {} documents", reader.counts().documents));
            }
            Entry::User(u) => {
                let user = user_of(u)?;
                handle.write_blocking(true, move |txn, _| users::put_user(txn, user))??;
            }
        }
    }
    batch.flush(&handle)?;
    Ok(reader.counts())
}

/// Creates the collection `c` with its options, Cosmos settings and indexes, dropping any of
/// that name first when `drop`. The settings go first, while the collection is empty: a shard
/// key decides how its documents are keyed.
fn create(handle: &WriteHandle, c: CollectionEntry, drop: bool) -> Result<(), ToolError> {
    let indexes = c
        .indexes
        .iter()
        .map(index_of)
        .collect::<Result<Vec<_>, _>>()?;
    let namespace = format!("{}.{}", c.db, c.name);
    let cosmos: Option<CollectionSettings> = c
        .cosmos
        .map(bson::from_document)
        .transpose()
        .map_err(|e| ToolError::Refused(format!("{namespace}: bad Cosmos settings: {e}")))?;
    handle
        .write_blocking(true, move |txn, now| -> Result<()> {
            if drop {
                ddl::drop_collection(txn, &c.db, &c.name)?;
            }
            let mut meta = ddl::create_collection(txn, &c.db, &c.name, c.options)?;
            if let Some(settings) = cosmos {
                meta = ddl::set_cosmos_settings(txn, &c.db, &c.name, settings)?
                    .ok_or_else(|| Error::internal("a restored collection vanished"))?;
            }
            for index in indexes {
                meta = ddl::create_index(txn, &meta, index, now)?;
            }
            Ok(())
        })?
        .map_err(|e| ToolError::Refused(format!("{namespace}: {}", e.message)))
}

/// The records of the collection created last, waiting for their commit.
#[derive(Default)]
struct Batch {
    records: Vec<(NewDocument, i64)>,
    bytes: usize,
    /// The collection they go to: the one the archive named last.
    namespace: Option<(String, String)>,
}

impl Batch {
    fn push(&mut self, entry: DocumentEntry) -> Result<(), ToolError> {
        let new = NewDocument::prepare_raw(&entry.body, false)?;
        if new.own_ttl() != entry.own_ttl {
            return Err(ToolError::Refused(format!(
                "the archive's document {} has ttl {:?} beside a body that gives {:?}",
                crate::query::path::render(new.id()),
                entry.own_ttl,
                new.own_ttl()
            )));
        }
        self.bytes += new.body_len();
        self.records.push((new, entry.ts));
        Ok(())
    }

    fn is_full(&self) -> bool {
        self.records.len() >= BATCH_RECORDS || self.bytes >= BATCH_BYTES
    }

    /// Writes the waiting records, each with its own `_ts`, in one durable commit.
    fn flush(&mut self, handle: &WriteHandle) -> Result<(), ToolError> {
        self.bytes = 0;
        let mut records = std::mem::take(&mut self.records);
        if records.is_empty() {
            return Ok(());
        }
        let Some((db, name)) = self.namespace.clone() else {
            return Err(ToolError::Refused(
                "documents without their collection".into(),
            ));
        };
        handle
            .write_blocking(true, move |txn, now| -> Result<()> {
                let meta = ddl::collection(txn, &db, &name).ok_or_else(|| {
                    Error::internal(format!("{db}.{name} vanished during the restore"))
                })?;
                collection::probe_ids(txn, &meta, records.iter_mut().map(|(new, _)| new))?;
                for (new, ts) in records {
                    collection::insert_written_at(txn, &meta, new, ts, now)?;
                }
                Ok(())
            })?
            .map_err(ToolError::from)
    }
}

/// An index from its `listIndexes` entry; an option this version does not know is refused
/// rather than dropped.
fn index_of(spec: &Document) -> Result<IndexMeta, ToolError> {
    let bad = |why: &str| ToolError::Refused(format!("the archive's index {spec}: {why}"));
    let name = spec.get_str("name").map_err(|_| bad("no name"))?;
    let key = spec.get_document("key").map_err(|_| bad("no key"))?;
    let mut index = IndexMeta::new(name, key.clone());
    for (field, value) in spec {
        match (field.as_str(), value) {
            ("v" | "name" | "key", _) => {}
            ("unique", Bson::Boolean(b)) => index.unique = *b,
            ("sparse", Bson::Boolean(b)) => index.sparse = *b,
            // Validated when the dumped server created the index.
            ("partialFilterExpression", Bson::Document(f)) => {
                index.partial_filter = Some(f.clone())
            }
            ("hidden", Bson::Boolean(b)) => index.hidden = *b,
            ("expireAfterSeconds", Bson::Int32(n)) => index.expire_after_seconds = Some(*n),
            ("collation", Bson::Document(c)) => index.collation = Some(c.clone()),
            (super::dump::CUSTOM_TTL_FIELD, Bson::Boolean(b)) => index.custom_ttl = *b,
            (other, _) => return Err(bad(&format!("unknown option {other:?}"))),
        }
    }
    Ok(index)
}

fn user_of(user: Document) -> Result<User, ToolError> {
    bson::from_document(user).map_err(|e| {
        ToolError::Refused(format!(
            "the archive holds a user this mayfly cannot read: {e}"
        ))
    })
}
