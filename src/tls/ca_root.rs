//! Where the development CA lives: one directory per user, the same for every data directory,
//! every restart and `--storage memory`, so a user (or a CI job) trusts it once — mkcert's
//! `CAROOT`, for mayfly.
//!
//! The directory is `--tls-ca-dir` (or `MAYFLY_CAROOT`) when given, else
//! `$XDG_DATA_HOME/mayfly/ca`, else `~/.local/share/mayfly/ca`; on macOS
//! `~/Library/Application Support/mayfly/ca`. Owns choosing the path only: the files in it are
//! `generated`'s.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that names the directory (read by the flag's parser).
pub const ENV: &str = "MAYFLY_CAROOT";

/// The CA directory: `explicit` (the flag or [`ENV`]) made absolute, or the per-user default;
/// `None` when neither is given and no home directory is known.
pub fn dir(explicit: Option<&Path>) -> Option<PathBuf> {
    let chosen = match explicit {
        Some(path) => Some(path.to_path_buf()),
        None => default_dir(
            cfg!(target_os = "macos"),
            std::env::var_os("XDG_DATA_HOME"),
            std::env::var_os("HOME"),
        ),
    }?;
    // A connection string's tlsCAFile must not depend on the client's working directory.
    Some(std::path::absolute(&chosen).unwrap_or(chosen))
}

/// The per-user default from the environment's values (the XDG base directory rules: a
/// relative or empty `XDG_DATA_HOME` is ignored).
pub fn default_dir(
    macos: bool,
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let home = home.filter(|h| !h.is_empty()).map(PathBuf::from);
    if macos {
        return home.map(|h| h.join("Library/Application Support/mayfly/ca"));
    }
    let xdg = xdg_data_home.map(PathBuf::from).filter(|p| p.is_absolute());
    match xdg {
        Some(data) => Some(data.join("mayfly/ca")),
        None => home.map(|h| h.join(".local/share/mayfly/ca")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_follows_the_platform_and_xdg_data_home() {
        let s = |v: &str| Some(OsString::from(v));
        /// (macOS, XDG_DATA_HOME, HOME, directory)
        type Case = (
            bool,
            Option<OsString>,
            Option<OsString>,
            Option<&'static str>,
        );
        let table: [Case; 8] = [
            (
                false,
                None,
                s("/home/ann"),
                Some("/home/ann/.local/share/mayfly/ca"),
            ),
            (
                false,
                s("/data/xdg"),
                s("/home/ann"),
                Some("/data/xdg/mayfly/ca"),
            ),
            (
                false,
                s("relative/xdg"),
                s("/home/ann"),
                Some("/home/ann/.local/share/mayfly/ca"),
            ),
            (
                false,
                s(""),
                s("/home/ann"),
                Some("/home/ann/.local/share/mayfly/ca"),
            ),
            (false, s("/data/xdg"), None, Some("/data/xdg/mayfly/ca")),
            (false, None, None, None),
            (false, None, s(""), None),
            (
                true,
                s("/data/xdg"),
                s("/Users/ann"),
                Some("/Users/ann/Library/Application Support/mayfly/ca"),
            ),
        ];
        for (macos, xdg, home, want) in table {
            let got = default_dir(macos, xdg.clone(), home.clone());
            assert_eq!(
                got,
                want.map(PathBuf::from),
                "macOS {macos}, {xdg:?}, {home:?}"
            );
        }
    }

    #[test]
    fn an_explicit_directory_wins_and_is_made_absolute() {
        assert_eq!(
            dir(Some(Path::new("/ca/here"))),
            Some(PathBuf::from("/ca/here"))
        );
        let relative = dir(Some(Path::new("ca"))).unwrap();
        assert!(relative.is_absolute(), "{}", relative.display());
        assert!(relative.ends_with("ca"));
    }
}
