//! The data directory's format version: one number, recorded in the marker of an initialised
//! directory ([`MARKER`]), that says whether this binary
//! may open the directory at all. It is read before fjall or any tool touches a file, so a
//! directory written by a newer mayfly, whose files this one could misread or rewrite, is
//! refused with nothing changed.
//!
//! Owns: [`CURRENT`], the marker's text, and reading the recorded version. Does not own: when
//! the marker is written (the integrity check's `mark`, at the end of a first open) or the key layout
//! inside the catalog (`engine::layout`), which an open upgrades in place.
//!
//! # Versions
//!
//! - Format 1: a fjall 3 database with mayfly's five keyspaces, keys in one of the layouts
//!   `engine::layout` reads (an open rewrites layout 1 and records layout 4).
//!
//! A change that an earlier mayfly cannot read raises [`CURRENT`]; one it reads as it is does
//! not. A marker written before format versions existed (its text without a `format` line)
//! describes format 1's files: such a directory is read as format 1, and its marker rewritten
//! with the line at the end of the open.

use super::StorageError;
use std::io::Read;
use std::path::Path;

/// The marker of an initialised data directory; its text is [`marker_text`].
pub const MARKER: &str = "mayfly.storage";

/// The format this binary writes, and the newest it reads.
pub const CURRENT: u32 = 1;

/// The marker's first line, the same in every format.
const HEADING: &str = "mayfly data directory: fjall 3 database with mayfly's keyspaces";
/// The prefix of the marker's format line.
const FORMAT_LINE: &str = "format ";
/// More than any marker holds: a larger file is not one mayfly wrote.
const MARKER_MAX_BYTES: u64 = 4096;

/// What a directory's marker records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// No marker: a new directory, or one initialised before the marker existed.
    Unmarked,
    /// A marker without a format line, written before format versions: format 1's files.
    Unversioned,
    /// A marker with its format line.
    Version(u32),
}

impl Recorded {
    /// The directory's format as far as the marker tells: `None` when unmarked.
    pub fn version(self) -> Option<u32> {
        match self {
            Recorded::Unmarked => None,
            Recorded::Unversioned => Some(1),
            Recorded::Version(v) => Some(v),
        }
    }
}

/// The marker's whole text for [`CURRENT`].
pub fn marker_text() -> String {
    format!("{HEADING}\n{FORMAT_LINE}{CURRENT}\n")
}

/// What `dir`'s marker records; a marker that cannot be read as one is damage.
pub fn recorded(dir: &Path) -> Result<Recorded, StorageError> {
    let path = dir.join(MARKER);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Recorded::Unmarked),
        Err(e) => return Err(e.into()),
    };
    let mut bytes = Vec::new();
    file.take(MARKER_MAX_BYTES + 1).read_to_end(&mut bytes)?;
    let damaged = |detail: String| StorageError::Damaged {
        path: path.clone(),
        detail,
    };
    if bytes.len() as u64 > MARKER_MAX_BYTES {
        return Err(damaged(format!(
            "longer than {MARKER_MAX_BYTES} bytes: not the marker mayfly writes"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| damaged("not text: not the marker mayfly writes".to_owned()))?;
    parse(&text).map_err(damaged)
}

/// Reads the marker's text: the format line's number, or [`Recorded::Unversioned`] without one.
fn parse(text: &str) -> Result<Recorded, String> {
    let Some(line) = text.lines().find(|l| l.starts_with(FORMAT_LINE)) else {
        return Ok(Recorded::Unversioned);
    };
    let number = line.get(FORMAT_LINE.len()..).unwrap_or_default().trim();
    match number.parse::<u32>() {
        Ok(version) if version >= 1 => Ok(Recorded::Version(version)),
        _ => Err(format!(
            "its format line {line:?} names no format version (a whole number from 1)"
        )),
    }
}

/// What `dir`'s marker records, refusing a format newer than [`CURRENT`] before anything
/// reads or writes the directory's other files.
pub fn require_readable(dir: &Path) -> Result<Recorded, StorageError> {
    let recorded = recorded(dir)?;
    if let Recorded::Version(found) = recorded {
        if found > CURRENT {
            return Err(StorageError::NewerFormat {
                dir: dir.to_path_buf(),
                found,
            });
        }
    }
    Ok(recorded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_text_reads_back_as_the_current_format() {
        assert_eq!(parse(&marker_text()), Ok(Recorded::Version(CURRENT)));
    }

    #[test]
    fn marker_texts_read_as_their_format() {
        let cases: &[(&str, Result<Recorded, ()>)] = &[
            // Written before format versions: format 1's files.
            (
                "mayfly data directory: fjall 3 database with mayfly's keyspaces\n",
                Ok(Recorded::Unversioned),
            ),
            ("", Ok(Recorded::Unversioned)),
            ("heading\nformat 1\n", Ok(Recorded::Version(1))),
            ("heading\nformat 7\nmore\n", Ok(Recorded::Version(7))),
            ("format 2", Ok(Recorded::Version(2))),
            ("heading\nformat 0\n", Err(())),
            ("heading\nformat two\n", Err(())),
            ("heading\nformat -1\n", Err(())),
            ("heading\nformat \n", Err(())),
            ("heading\nformat 99999999999\n", Err(())),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).map_err(|_| ()), *expected, "{text:?}");
        }
    }

    #[test]
    fn an_unversioned_marker_is_format_1_and_no_marker_is_none() {
        assert_eq!(Recorded::Unversioned.version(), Some(1));
        assert_eq!(Recorded::Unmarked.version(), None);
        assert_eq!(Recorded::Version(3).version(), Some(3));
    }

    #[test]
    fn a_newer_format_is_refused_naming_both_versions_and_an_older_one_is_read() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(require_readable(dir.path()).unwrap(), Recorded::Unmarked);
        let marker = dir.path().join(super::MARKER);
        std::fs::write(&marker, "heading\n").unwrap();
        assert_eq!(require_readable(dir.path()).unwrap(), Recorded::Unversioned);
        std::fs::write(&marker, marker_text()).unwrap();
        assert_eq!(
            require_readable(dir.path()).unwrap(),
            Recorded::Version(CURRENT)
        );
        std::fs::write(&marker, format!("heading\nformat {}\n", CURRENT + 1)).unwrap();
        let err = require_readable(dir.path()).unwrap_err();
        assert!(
            matches!(err, StorageError::NewerFormat { found, .. } if found == CURRENT + 1),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains(&format!("format {}", CURRENT + 1))
                && message.contains(&format!("format {CURRENT}")),
            "{message}"
        );
        std::fs::write(&marker, vec![b'x'; 5000]).unwrap();
        assert!(matches!(
            require_readable(dir.path()),
            Err(StorageError::Damaged { .. })
        ));
    }
}
