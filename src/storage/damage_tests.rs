//! A data directory written, left without a clean shutdown, damaged, and opened again: a torn
//! journal tail is dropped and reported; every other damage refuses the open, naming the file,
//! and leaves the files as they were.

use super::journal::{self, Ending};
use super::*;
use std::path::Path;

/// Batches the tests write: five, one key each, with values large enough to flip bits in.
const BATCHES: usize = 5;

fn key(i: usize) -> Vec<u8> {
    format!("doc-{i}").into_bytes()
}

/// A marked directory holding [`BATCHES`] durable batches, each only in the journal (dropping
/// the backend syncs the journal but flushes no memtable, as after a kill -9 with `SyncData`).
fn written() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let backend = FjallBackend::open(dir.path()).unwrap();
    for i in 0..BATCHES {
        let mut batch = WriteBatch::new();
        batch.put(Keyspace::Documents, key(i), vec![b'a' + i as u8; 300]);
        batch.put(Keyspace::Indexes, key(i), b"i".to_vec());
        backend.commit(batch, Durability::SyncData).unwrap();
    }
    backend.mark_initialised().unwrap();
    drop(backend);
    dir
}

fn newest_journal(dir: &Path) -> PathBuf {
    journal::list(dir).unwrap().pop().unwrap().path
}

/// The byte ranges of the journal's batches, from mayfly's own reading of it.
fn batch_offsets(dir: &Path) -> Vec<(usize, usize)> {
    let bytes = std::fs::read(newest_journal(dir)).unwrap();
    let salvage = journal::salvage(&bytes, None);
    assert!(salvage.lost.is_empty(), "{:?}", salvage.lost);
    salvage.kept.iter().map(|r| (r.start, r.end)).collect()
}

fn present(backend: &FjallBackend) -> Vec<usize> {
    let snapshot = backend.snapshot();
    (0..BATCHES)
        .filter(|&i| {
            snapshot
                .get(Keyspace::Documents, &key(i))
                .unwrap()
                .is_some()
        })
        .collect()
}

fn flip(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

fn refused_naming(dir: &Path, file: &Path) -> String {
    match FjallBackend::open(dir) {
        Err(StorageError::Damaged { path, detail }) => {
            assert_eq!(path, file, "{detail}");
            let message = StorageError::Damaged { path, detail }.to_string();
            assert!(message.contains("mayfly repair"), "{message}");
            message
        }
        Err(other) => panic!("expected Damaged naming {}, got {other}", file.display()),
        Ok(_) => panic!("a damaged directory opened: {}", file.display()),
    }
}

#[test]
fn a_clean_journal_reopens_with_every_batch_and_no_torn_tail() {
    let dir = written();
    let backend = FjallBackend::open(dir.path()).unwrap();
    assert_eq!(backend.preflight().torn, None);
    assert!(backend.preflight().marked);
    assert_eq!(backend.preflight().batches, BATCHES as u64);
    assert_eq!(present(&backend), vec![0, 1, 2, 3, 4]);
}

#[test]
fn a_journal_torn_inside_its_last_batch_opens_without_it_and_says_so() {
    // Cut (file ends there) or cut and zero-filled (the preallocated rest of a journal).
    for zero_filled in [false, true] {
        let dir = written();
        let (last_start, last_end) = *batch_offsets(dir.path()).last().unwrap();
        let cut = last_start + (last_end - last_start) / 2;
        let path = newest_journal(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        if zero_filled {
            bytes[cut..].fill(0);
        } else {
            bytes.truncate(cut);
        }
        std::fs::write(&path, &bytes).unwrap();

        let backend = FjallBackend::open(dir.path()).unwrap();
        let (file, tail) = backend.preflight().torn.clone().expect("a torn tail");
        assert_eq!(file, path);
        assert_eq!(tail.offset, last_start as u64);
        assert!(
            tail.bytes > 0 && tail.bytes <= (cut - last_start) as u64,
            "{tail:?}"
        );
        assert_eq!(tail.items, Some(2));
        assert_eq!(
            present(&backend),
            vec![0, 1, 2, 3],
            "zero filled: {zero_filled}"
        );
        drop(backend);
        // fjall cut the torn batch off: the next open finds a clean journal.
        let backend = FjallBackend::open(dir.path()).unwrap();
        assert_eq!(backend.preflight().torn, None);
        assert_eq!(present(&backend), vec![0, 1, 2, 3]);
    }
}

#[test]
fn a_flipped_bit_before_the_tail_refuses_to_open_naming_the_journal() {
    // Offsets within the second batch: the start tag, the item count, the seqno (not covered
    // by the checksum), an item's tag, its value type, its key length, its value length, a
    // value byte, the checksum and the trailer.
    let fields = [
        ("start tag", 0),
        ("item count", 1),
        ("seqno high byte", 12),
        ("item tag", 13),
        ("value type", 14),
        ("key length", 24),
        ("value length high byte", 29),
        ("value byte", 60),
    ];
    for (field, relative) in fields {
        let dir = written();
        let (start, end) = batch_offsets(dir.path())[1];
        let path = newest_journal(dir.path());
        flip(&path, start + relative);
        let before = std::fs::read(&path).unwrap();
        let message = refused_naming(dir.path(), &path);
        assert!(message.contains("damaged at offset"), "{field}: {message}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{field}: file changed"
        );
        // The end of the batch: its checksum and its trailer.
        let dir = written();
        let path = newest_journal(dir.path());
        flip(&path, end - 1 - relative % 12);
        refused_naming(dir.path(), &path);
    }
}

#[test]
fn a_flipped_bit_in_the_last_whole_batch_is_damage_not_a_torn_tail() {
    let dir = written();
    let (start, end) = *batch_offsets(dir.path()).last().unwrap();
    let path = newest_journal(dir.path());
    flip(&path, (start + end) / 2);
    let message = refused_naming(dir.path(), &path);
    assert!(message.contains("fails its checksum"), "{message}");
}

#[test]
fn a_corrupted_length_that_runs_past_the_end_is_not_taken_for_a_torn_tail() {
    let dir = written();
    let (start, _) = batch_offsets(dir.path())[1];
    let path = newest_journal(dir.path());
    // The value length's high byte: the item now claims gigabytes, past the written data.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[start + 13 + 20] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let scan = journal::scan(&bytes, None, true);
    assert!(matches!(scan.ending, Ending::Damaged(_)), "{scan:?}");
    refused_naming(dir.path(), &path);
}

#[test]
fn missing_metadata_refuses_to_open_instead_of_starting_empty() {
    type FileOf = fn(&Path) -> PathBuf;
    let cases: [(&str, FileOf); 4] = [
        ("fjall's keyspace catalog pointer", |d| {
            d.join("keyspaces/0/current")
        }),
        ("a keyspace's version pointer", |d| {
            d.join("keyspaces/1/current")
        }),
        ("fjall's version marker", |d| d.join("version")),
        ("the journal", newest_journal),
    ];
    for (what, file) in cases {
        let dir = written();
        let path = file(dir.path());
        std::fs::remove_file(&path).unwrap();
        let expected = if what == "the journal" {
            dir.path().to_path_buf()
        } else {
            path
        };
        let message = refused_naming(dir.path(), &expected);
        assert!(message.contains("missing"), "{what}: {message}");
    }
}

#[test]
fn a_missing_keyspace_directory_refuses_to_open() {
    let dir = written();
    std::fs::remove_dir_all(dir.path().join("keyspaces/2")).unwrap();
    match FjallBackend::open(dir.path()) {
        Err(StorageError::Damaged { detail, .. }) => {
            assert!(detail.contains("keyspace is missing"), "{detail}")
        }
        Err(other) => panic!("expected Damaged, got {other}"),
        Ok(_) => panic!("opened without a keyspace"),
    }
}

#[test]
fn a_fresh_directory_and_an_unmarked_one_open() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FjallBackend::open(dir.path()).unwrap();
    assert!(backend.preflight().fresh);
    drop(backend);
    // Initialised before markers existed: opens, checked as far as fjall's files allow.
    let backend = FjallBackend::open(dir.path()).unwrap();
    assert!(!backend.preflight().fresh && !backend.preflight().marked);
}

#[test]
fn a_version_file_that_fails_its_checksum_refuses_to_open() {
    let dir = written();
    let tree = dir.path().join("keyspaces/0");
    let current = tree_files::check_current(&tree).unwrap();
    let version = tree.join(format!("v{}", current.version));
    flip(&version, 3);
    refused_naming(dir.path(), &version);
}
