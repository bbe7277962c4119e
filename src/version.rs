//! What this binary is: its version, the git commit and date it was built from (recorded by
//! `build.rs`), and the data directory format it writes (`storage::format`), for
//! `mayfly --version`, `buildInfo` and `explain`'s `serverInfo`.
//!
//! Owns: those facts and the text `--version` prints. Does not own: how the commit and date
//! are found (`build.rs`: `git rev-parse HEAD` when the source is a git checkout, the
//! `MAYFLY_GIT_COMMIT` environment variable over it, "unknown" otherwise; the date from
//! `SOURCE_DATE_EPOCH` when set, for reproducible builds, else the time of the build).

use std::sync::LazyLock;

/// mayfly's own version (Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The full git commit the binary was built from, or "unknown".
pub const GIT_COMMIT: &str = env!("MAYFLY_GIT_COMMIT");
/// When it was built, UTC, as `YYYY-MM-DDTHH:MM:SSZ`.
pub const BUILD_DATE: &str = env!("MAYFLY_BUILD_DATE");

/// What `mayfly --version` prints after the program's name.
pub fn long_version() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "{VERSION}\ncommit: {GIT_COMMIT}\nbuilt: {BUILD_DATE}\ndata directory format: {}",
            crate::storage::format::CURRENT
        )
    });
    TEXT.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_long_version_names_the_version_commit_date_and_format() {
        let lines: Vec<&str> = long_version().lines().collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(lines.first(), Some(&VERSION));
        assert_eq!(
            lines.get(1),
            Some(&format!("commit: {GIT_COMMIT}").as_str())
        );
        assert_eq!(lines.get(2), Some(&format!("built: {BUILD_DATE}").as_str()));
        assert_eq!(
            lines.get(3),
            Some(&format!("data directory format: {}", crate::storage::format::CURRENT).as_str())
        );
    }

    #[test]
    fn the_commit_is_a_full_hash_or_unknown_and_the_date_is_utc() {
        assert!(
            GIT_COMMIT == "unknown"
                || (GIT_COMMIT.len() == 40 && GIT_COMMIT.bytes().all(|b| b.is_ascii_hexdigit())),
            "{GIT_COMMIT}"
        );
        let date = BUILD_DATE.as_bytes();
        assert_eq!(date.len(), 20, "{BUILD_DATE}");
        for (i, byte) in date.iter().enumerate() {
            let expected_separator = match i {
                4 | 7 => Some(b'-'),
                10 => Some(b'T'),
                13 | 16 => Some(b':'),
                19 => Some(b'Z'),
                _ => None,
            };
            match expected_separator {
                Some(sep) => assert_eq!(*byte, sep, "{BUILD_DATE}"),
                None => assert!(byte.is_ascii_digit(), "{BUILD_DATE}"),
            }
        }
    }
}
