//! TLS for client connections (rustls): the server's certificate and key, the optional
//! client-certificate check, development certificates, and telling TLS clients from plain ones
//! on one port.
//!
//! Owns the TLS configuration built once at start ([`ServerTls`]) and the opening of each
//! connection ([`accept::open`]: sniff, refuse or handshake). Does not own the listener
//! (`server`) nor the request loop (`session`), which runs the same over either stream.

pub mod accept;
pub mod ca_root;
pub mod generated;
pub mod keys;
pub mod mismatch;
pub mod sniff;

use crate::config::{Config, StorageKind, TlsConfig, TlsMode};
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

pub use generated::DevCertificates;

/// Why TLS could not be set up; the server does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(pub String);

/// The TLS side of a running server: how to handshake, and where its certificates came from.
pub struct ServerTls {
    pub mode: TlsMode,
    pub acceptor: TlsAcceptor,
    /// The certificate file served (the user's, or the generated `server.pem`).
    pub certificate_file: PathBuf,
    /// Set when the certificates were generated for development.
    pub dev: Option<DevCertificates>,
    /// Whether clients must present a certificate.
    pub client_certificates_required: bool,
    /// The directory of development certificates of a `--storage memory` server, removed when
    /// the server is dropped.
    _temporary: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mode", &self.mode)
            .field("certificate_file", &self.certificate_file)
            .field("dev", &self.dev)
            .finish()
    }
}

/// Builds the TLS side from the configuration; `None` when `--tlsMode disabled`. Generates
/// (or reuses) development certificates when no certificate file is given: the CA in the
/// per-user CA directory (`ca_root`; the server's own directory when there is no home), the
/// server certificate under `<dbpath>/tls/`, or with `--storage memory` in a temporary
/// directory.
pub fn setup(config: &Config) -> Result<Option<ServerTls>, TlsError> {
    let tls = &config.tls;
    tls.validate().map_err(|e| TlsError(e.to_string()))?;
    if tls.mode == TlsMode::Disabled {
        return Ok(None);
    }
    let (certificate_file, dev, temporary) = match &tls.certificate_key_file {
        Some(file) => (file.clone(), None, None),
        None => {
            let (server_dir, temporary) = match config.storage {
                StorageKind::Disk => (config.dbpath.join("tls"), None),
                StorageKind::Memory => {
                    let temp = tempfile::Builder::new()
                        .prefix("mayfly-tls-")
                        .tempdir()
                        .map_err(|e| {
                            TlsError(format!("cannot create a temporary directory: {e}"))
                        })?;
                    (temp.path().to_path_buf(), Some(temp))
                }
            };
            // Certificates are dated by wall time, whatever clock the server runs on.
            let now = crate::clock::Clock::now_secs(&crate::clock::SystemClock::new());
            let ca_dir = ca_root::dir(tls.ca_dir.as_deref()).unwrap_or_else(|| server_dir.clone());
            let dev = generated::ensure(&ca_dir, &server_dir, &certificate_names(config), now)?;
            if ca_dir != server_dir {
                remove_data_directory_ca(&server_dir, &dev.ca_file);
            }
            (dev.server_file.clone(), Some(dev), temporary)
        }
    };
    let password = if dev.is_some() {
        None
    } else {
        tls.certificate_key_file_password.as_deref()
    };
    let files = keys::load(&certificate_file, password)?;
    let server_config = server_config(tls, files)?;
    Ok(Some(ServerTls {
        mode: tls.mode,
        acceptor: TlsAcceptor::from(Arc::new(server_config)),
        certificate_file,
        dev,
        client_certificates_required: tls.ca_file.is_some()
            && !tls.allow_connections_without_certificates,
        _temporary: temporary,
    }))
}

/// Removes a CA that an earlier version generated beside the server certificate: it no longer
/// signs anything, and a client told to trust it would fail its handshake.
fn remove_data_directory_ca(server_dir: &std::path::Path, ca_file: &std::path::Path) {
    for name in [generated::CA_FILE, generated::CA_KEY_FILE] {
        let stale = server_dir.join(name);
        if stale.exists() {
            match std::fs::remove_file(&stale) {
                Ok(()) => tracing::info!(
                    removed = %stale.display(),
                    ca_file = %ca_file.display(),
                    "removed the data directory's own development CA file: the server's certificate is now signed by the per-user CA"
                ),
                Err(e) => {
                    tracing::warn!(file = %stale.display(), error = %e, "cannot remove an unused development CA file")
                }
            }
        }
    }
}

/// The names a development server certificate carries: loopback, the host name, and every
/// address the server listens on except wildcards.
pub fn certificate_names(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        crate::host::hostname(),
    ];
    for ip in &config.bind_ips {
        let ip = ip.trim_start_matches('[').trim_end_matches(']');
        let wildcard = matches!(ip, "0.0.0.0" | "::" | "*" | "");
        if !wildcard && !names.iter().any(|n| n == ip) {
            names.push(ip.to_owned());
        }
    }
    names.dedup();
    names
}

fn server_config(
    tls: &TlsConfig,
    files: keys::CertifiedKeyFiles,
) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsError(format!("cannot set up TLS: {e}")))?;
    let builder = match &tls.ca_file {
        None => builder.with_no_client_auth(),
        Some(ca_file) => {
            let pem = std::fs::read(ca_file)
                .map_err(|e| TlsError(format!("cannot read {}: {e}", ca_file.display())))?;
            let roots = keys::certificates(&pem)
                .map_err(|e| TlsError(format!("{}: {e}", ca_file.display())))?;
            let mut store = rustls::RootCertStore::empty();
            for root in roots {
                store.add(root).map_err(|e| {
                    TlsError(format!(
                        "{}: unusable CA certificate: {e}",
                        ca_file.display()
                    ))
                })?;
            }
            if store.is_empty() {
                return Err(TlsError(format!(
                    "{}: no CA certificate found",
                    ca_file.display()
                )));
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(store), provider);
            let verifier = if tls.allow_connections_without_certificates {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsError(format!("cannot verify client certificates: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(files.chain, files.key)
        .map_err(|e| TlsError(format!("the certificate and key cannot be used: {e}")))
}
