//! The data directory's lock: one server per directory. An exclusive `flock` on
//! `<dbpath>/mayfly.lock`, held for as long as the backend is open and released by the kernel
//! when the process ends however it ends, so a crash never leaves a stale lock. The file holds
//! the holder's process id, so a second server can say which process it is (mongod keeps
//! `mongod.lock` the same way); it is emptied on a clean close.

use super::StorageError;
use rustix::fs::{flock, FlockOperation};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "mayfly.lock";

/// Held while a backend has the directory open.
#[derive(Debug)]
pub struct DirLock {
    file: File,
}

impl DirLock {
    /// Takes the directory's lock, or says which process holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock, StorageError> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(StorageError::Locked {
                    dir: dir.to_path_buf(),
                    holder: holder_description(text.trim().parse().ok()),
                });
            }
            Err(e) => return Err(StorageError::Io(e.into())),
        }
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{}", std::process::id())?;
        Ok(DirLock { file })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // The lock itself goes with the file; an empty file says no server holds it.
        let _ = self.file.set_len(0);
    }
}

fn holder_description(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_owned(),
    }
}

/// The lock file of a data directory.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let contents = std::fs::read_to_string(lock_path(dir.path())).unwrap();
        assert_eq!(contents.trim(), std::process::id().to_string());
        match DirLock::acquire(dir.path()) {
            Err(StorageError::Locked {
                dir: locked,
                holder,
            }) => {
                assert_eq!(locked, dir.path());
                assert_eq!(holder, format!("process {}", std::process::id()));
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(first);
        assert_eq!(std::fs::read_to_string(lock_path(dir.path())).unwrap(), "");
        let again = DirLock::acquire(dir.path()).unwrap();
        drop(again);
    }
}
