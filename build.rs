//! Build script: records the git commit the binary is built from and the build date, read by
//! `src/version.rs` (`mayfly --version`, `buildInfo.gitVersion`).
//!
//! - Commit: `MAYFLY_GIT_COMMIT` when set (a build from a source archive or a container build
//!   context without `.git` can name it), else `git rev-parse HEAD`, else "unknown". No commit
//!   is ever guessed.
//! - Date: `SOURCE_DATE_EPOCH` when set (reproducible builds), else now; UTC, to the second.
//!
//! Runs again when the checked-out commit moves (the git `HEAD`, the branch's ref and
//! `packed-refs`), when the sources change, or when either variable changes; not on every
//! build, so an unchanged tree is not recompiled.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    println!("cargo:rerun-if-env-changed=MAYFLY_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=src");
    let commit = match std::env::var("MAYFLY_GIT_COMMIT") {
        Ok(commit) if !commit.trim().is_empty() => commit.trim().to_owned(),
        _ => {
            for path in git_files() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            git(&["rev-parse", "HEAD"])
                .filter(|hash| hash.len() == 40 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
                .unwrap_or_else(|| "unknown".to_owned())
        }
    };
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    println!("cargo:rustc-env=MAYFLY_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=MAYFLY_BUILD_DATE={}", utc(seconds));
}

/// The trimmed standard output of a successful `git` command run in the package directory.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_owned())
}

/// The files whose change moves `HEAD`: `HEAD` itself (a checkout), the branch's ref (a
/// commit) and `packed-refs`, wherever this checkout (a worktree too) keeps them. Only files
/// that exist: Cargo runs a script again on every build while a named file is missing.
fn git_files() -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        names.push(branch);
    }
    names
        .iter()
        .filter_map(|name| git(&["rev-parse", "--git-path", name]))
        .map(PathBuf::from)
        .filter(|path| Path::new(path).is_file())
        .collect()
}

/// `seconds` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (the proleptic Gregorian calendar;
/// days to a civil date as in Howard Hinnant's `civil_from_days`).
fn utc(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
