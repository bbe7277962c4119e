//! `mayfly ca-path`: prints the development CA file clients trust (`tlsCAFile`), so scripts and
//! CI find it without reading the server's log. Owns only the printing; the directory is
//! `tls::ca_root`'s choice and the file `tls::generated`'s.

use super::ToolError;
use crate::tls::{ca_root, generated};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct CaPathArgs {
    /// The CA directory, as given to the server. [default: $XDG_DATA_HOME/mayfly/ca or
    /// ~/.local/share/mayfly/ca; macOS ~/Library/Application Support/mayfly/ca]
    #[arg(long = "tls-ca-dir", env = ca_root::ENV, value_name = "DIR")]
    pub tls_ca_dir: Option<PathBuf>,
}

/// Prints the CA file's path on standard output (a note on standard error while no server has
/// created it yet); fails only when there is no home directory and no directory was given.
pub fn run(args: &CaPathArgs) -> Result<(), ToolError> {
    let file = ca_file(args.tls_ca_dir.as_deref())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", file.display()).map_err(|source| ToolError::File {
        path: file.clone(),
        source,
    })?;
    if !file.exists() {
        eprintln!(
            "mayfly: {} does not exist yet: the first server started with TLS on creates it",
            file.display()
        );
    }
    Ok(())
}

/// The CA file under the chosen directory.
pub fn ca_file(explicit: Option<&Path>) -> Result<PathBuf, ToolError> {
    ca_root::dir(explicit)
        .map(|dir| dir.join(generated::CA_FILE))
        .ok_or_else(|| {
            ToolError::Refused(
                "no home directory is known (HOME is not set): give --tls-ca-dir or MAYFLY_CAROOT"
                    .to_owned(),
            )
        })
}
