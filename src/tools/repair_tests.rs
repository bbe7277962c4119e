//! `mayfly repair` and `mayfly check` on damaged directories written through the engine: a
//! flipped bit in the journal refuses the start; repair keeps every batch it can read, says
//! what it dropped, and the server opens; `check` names damaged journals and tables.

use super::progress_line::ProgressLine;
use super::{check, repair};
use crate::clock::{Clock, ManualClock};
use crate::engine::{ddl, documents::collection, Engine};
use crate::storage::journal;
use crate::storage::{Keyspace, Snapshot};
use bson::doc;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const WRITES: i64 = 5;
const DOCS_PER_WRITE: i64 = 100;

fn open(dir: &Path) -> crate::error::Result<Engine> {
    Engine::open(
        dir,
        Arc::new(ManualClock::starting_at_secs(1_000)) as Arc<dyn Clock>,
    )
}

/// Five durable writes of a hundred documents each, one journal batch each; the engine is
/// dropped without flushing its memtables, so the journal alone holds them.
async fn written() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path()).unwrap();
    for w in 0..WRITES {
        engine
            .write(true, move |txn, now| {
                let (meta, _) = ddl::ensure_collection(txn, "db", "c").unwrap();
                for i in 0..DOCS_PER_WRITE {
                    let id = w * DOCS_PER_WRITE + i;
                    let doc = doc! {"_id": id, "payload": "x".repeat(40)};
                    collection::insert(txn, &meta, &doc, now).unwrap();
                }
            })
            .await
            .unwrap();
    }
    drop(engine);
    dir
}

fn documents(engine: &Engine) -> usize {
    engine
        .reader()
        .latest_snapshot()
        .range(
            Keyspace::Documents,
            Bound::Unbounded,
            Bound::Unbounded,
            false,
        )
        .count()
}

fn newest_journal(dir: &Path) -> PathBuf {
    journal::list(dir).unwrap().pop().unwrap().path
}

/// Flips a bit in the middle of the third of the five insert batches (the largest batches).
fn flip_a_middle_insert(dir: &Path) -> PathBuf {
    let path = newest_journal(dir);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut batches = journal::salvage(&bytes, None).kept;
    batches.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let mut inserts = batches[..WRITES as usize].to_vec();
    inserts.sort_by_key(|r| r.start);
    let target = &inserts[2];
    bytes[(target.start + target.end) / 2] ^= 0x04;
    std::fs::write(&path, bytes).unwrap();
    path
}

fn repaired(dir: &Path) -> (bool, String) {
    let mut out = Vec::new();
    let valid = repair::repair(dir, &mut out).unwrap();
    (valid, String::from_utf8(out).unwrap())
}

#[tokio::test]
async fn repair_salvages_the_batches_around_a_flipped_bit_and_reports_the_loss() {
    let dir = written().await;
    let journal = flip_a_middle_insert(dir.path());
    let refused = open(dir.path())
        .err()
        .expect("a damaged journal refuses the start");
    assert!(
        refused.message.contains(&journal.display().to_string()),
        "{}",
        refused.message
    );

    let (valid, report) = repaired(dir.path());
    assert!(valid, "{report}");
    assert!(
        report.contains("MAY HAVE HELD ACKNOWLEDGED WRITES"),
        "{report}"
    );
    assert!(report.contains("batch seqno"), "{report}");
    assert!(report.contains("repair-backup"), "{report}");
    assert!(report.contains("document counts recounted"), "{report}");
    // The original journal is kept, byte for byte damaged.
    let backup = dir
        .path()
        .join(repair::BACKUP_DIR)
        .join(journal.file_name().unwrap());
    assert!(backup.is_file());

    let engine = open(dir.path()).unwrap();
    // The damaged write's documents are gone; the writes before and after it are there.
    assert_eq!(documents(&engine), ((WRITES - 1) * DOCS_PER_WRITE) as usize);
    let mut out = Vec::new();
    drop(engine);
    assert!(check::check_directory(dir.path(), &mut out, &mut ProgressLine::off()).unwrap());
}

#[tokio::test]
async fn repair_rewrites_a_deleted_current_from_the_newest_version_file() {
    let dir = written().await;
    let current = dir.path().join("keyspaces/0/current");
    std::fs::remove_file(&current).unwrap();
    let refused = open(dir.path()).err().expect("refused");
    assert!(
        refused.message.contains("keyspaces/0/current"),
        "{}",
        refused.message
    );

    let (valid, report) = repaired(dir.path());
    assert!(valid, "{report}");
    assert!(
        report.contains("rewritten to name version file"),
        "{report}"
    );
    let engine = open(dir.path()).unwrap();
    assert_eq!(documents(&engine), (WRITES * DOCS_PER_WRITE) as usize);
}

#[tokio::test]
async fn repair_of_a_deleted_journal_reports_an_unknown_loss_and_what_cannot_open() {
    let dir = written().await;
    std::fs::remove_file(newest_journal(dir.path())).unwrap();
    assert!(open(dir.path()).is_err());
    let (valid, report) = repaired(dir.path());
    assert!(report.contains("journal: MISSING"), "{report}");
    // Only the journal held the catalog's records too: what is left is not opened as a new,
    // empty database, and the report says why.
    assert!(!valid, "{report}");
    assert!(report.contains("catalog has lost its records"), "{report}");
    assert!(open(dir.path()).is_err());
}

#[tokio::test]
async fn check_names_a_damaged_journal_and_a_damaged_table() {
    let dir = written().await;
    let mut out = Vec::new();
    assert!(check::check_directory(dir.path(), &mut out, &mut ProgressLine::off()).unwrap());
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(".jnl: "), "{text}");
    assert!(text.contains("keyspaces/0: "), "{text}");

    flip_a_middle_insert(dir.path());
    let mut out = Vec::new();
    assert!(!check::check_directory(dir.path(), &mut out, &mut ProgressLine::off()).unwrap());
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("DAMAGED at offset"), "{text}");
    assert!(text.contains("collections not checked"), "{text}");

    // fjall's keyspace catalog is written as tables at once: damage one of them.
    let dir = written().await;
    let tables = dir.path().join("keyspaces/0/tables");
    let table = std::fs::read_dir(&tables)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[0] ^= 0x01;
    std::fs::write(&table, bytes).unwrap();
    let mut out = Vec::new();
    assert!(!check::check_directory(dir.path(), &mut out, &mut ProgressLine::off()).unwrap());
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("NOT VALID") && text.contains("fails the checksum"),
        "{text}"
    );
}
