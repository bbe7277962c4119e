//! Development certificates: when a TLS mode is on and no `--tlsCertificateKeyFile` is given,
//! a self-signed CA and a server certificate it signs, reused while they are good.
//!
//! The CA lives in the per-user CA directory (`ca_root`), shared by every server of that user:
//! `ca.pem` (the certificate clients trust with `tlsCAFile`) and `ca-key.pem` (its key). The
//! server certificate lives with the server (`<dbpath>/tls/server.pem`, or a temporary
//! directory with `--storage memory`): the certificate, the CA certificate, the server key.
//! Key files are mode 0600. They are reused on later starts while the CA has more than
//! [`RENEW_BEFORE`] left and the server certificate verifies under it for every name it must
//! carry for that long; otherwise the server certificate (and, when the CA itself is missing,
//! unreadable or expiring, the CA) is generated again. Servers starting together take turns
//! through a lock file in the CA directory, so two never write a CA and a key that do not
//! belong together. Owns no sockets and no configuration.

use super::TlsError;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const DAY: i64 = crate::calendar::civil::DAY_SECONDS;
/// The CA lives ten years.
const CA_VALIDITY: i64 = 3650 * DAY;
/// The server certificate lives 825 days: the longest validity macOS and iOS accept for a TLS
/// server certificate.
const SERVER_VALIDITY: i64 = 825 * DAY;
/// Certificates with less than this left are replaced at start.
const RENEW_BEFORE: i64 = 30 * DAY;
/// Issued a day back, so a client whose clock is a little behind still accepts them.
const BACKDATE: i64 = DAY;

pub const CA_FILE: &str = "ca.pem";
pub const CA_KEY_FILE: &str = "ca-key.pem";
pub const SERVER_FILE: &str = "server.pem";
/// Held (an exclusive file lock) while a server reads or writes the CA.
pub const LOCK_FILE: &str = "ca.lock";

/// Where the development certificates are, and what happened to them at this start.
#[derive(Debug, Clone)]
pub struct DevCertificates {
    /// The directory of the server certificate.
    pub dir: PathBuf,
    /// The CA directory.
    pub ca_dir: PathBuf,
    pub ca_file: PathBuf,
    pub server_file: PathBuf,
    /// Generated now rather than reused.
    pub generated_ca: bool,
    pub generated_server: bool,
}

/// Makes sure `ca_dir` holds a good CA and `server_dir` a server certificate it signs naming
/// every one of `names` (host names and IP addresses), valid at `now` (Unix seconds) for a
/// while yet. The two directories may be the same.
pub fn ensure(
    ca_dir: &Path,
    server_dir: &Path,
    names: &[String],
    now: i64,
) -> Result<DevCertificates, TlsError> {
    for dir in [ca_dir, server_dir] {
        std::fs::create_dir_all(dir)
            .map_err(|e| TlsError(format!("cannot create {}: {e}", dir.display())))?;
    }
    let lock_file = ca_dir.join(LOCK_FILE);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_file)
        .map_err(|e| TlsError(format!("cannot open {}: {e}", lock_file.display())))?;
    // Released when `lock` is closed, at return.
    #[cfg(unix)]
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| TlsError(format!("cannot lock {}: {e}", lock_file.display())))?;
    let ca_file = ca_dir.join(CA_FILE);
    let ca_key_file = ca_dir.join(CA_KEY_FILE);
    let server_file = server_dir.join(SERVER_FILE);
    let mut certs = DevCertificates {
        dir: server_dir.to_path_buf(),
        ca_dir: ca_dir.to_path_buf(),
        ca_file: ca_file.clone(),
        server_file: server_file.clone(),
        generated_ca: false,
        generated_server: false,
    };
    let ca = match read_ca(&ca_file, &ca_key_file, now) {
        Some(ca) => ca,
        None => {
            certs.generated_ca = true;
            generate_ca(&ca_file, &ca_key_file, now)?
        }
    };
    if !certs.generated_ca && server_is_good(&server_file, &ca.cert_pem, names, now) {
        return Ok(certs);
    }
    certs.generated_server = true;
    generate_server(&server_file, &ca, names, now)?;
    if server_is_good(&server_file, &ca.cert_pem, names, now) {
        return Ok(certs);
    }
    // The CA key on disk does not belong to the CA certificate: start over.
    certs.generated_ca = true;
    let ca = generate_ca(&ca_file, &ca_key_file, now)?;
    generate_server(&server_file, &ca, names, now)?;
    Ok(certs)
}

struct Ca {
    cert_pem: String,
    key: KeyPair,
}

/// The CA on disk, if both files parse and it has more than [`RENEW_BEFORE`] left.
fn read_ca(cert_file: &Path, key_file: &Path, now: i64) -> Option<Ca> {
    let cert_pem = std::fs::read_to_string(cert_file).ok()?;
    let key = KeyPair::from_pem(&std::fs::read_to_string(key_file).ok()?).ok()?;
    let der = super::keys::certificates(cert_pem.as_bytes()).ok()?;
    let (_, parsed) = x509_parser::parse_x509_certificate(der.first()?).ok()?;
    let validity = parsed.validity();
    if validity.not_before.timestamp() > now
        || validity.not_after.timestamp() < now.saturating_add(RENEW_BEFORE)
    {
        return None;
    }
    Some(Ca { cert_pem, key })
}

/// Whether `server.pem` holds a certificate and key that `ca_pem` verifies for every name, now
/// and [`RENEW_BEFORE`] from now.
fn server_is_good(server_file: &Path, ca_pem: &str, names: &[String], now: i64) -> bool {
    let Ok(pem) = std::fs::read(server_file) else {
        return false;
    };
    let Ok(files) = super::keys::parse(&pem, None) else {
        return false;
    };
    let Ok(roots) = super::keys::certificates(ca_pem.as_bytes()) else {
        return false;
    };
    let mut store = rustls::RootCertStore::empty();
    for root in roots {
        if store.add(root).is_err() {
            return false;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let Ok(verifier) =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
            .build()
    else {
        return false;
    };
    let Some((leaf, intermediates)) = files.chain.split_first() else {
        return false;
    };
    let intermediates: Vec<CertificateDer<'static>> = intermediates.to_vec();
    let at = |secs: i64| UnixTime::since_unix_epoch(Duration::from_secs(secs.max(0) as u64));
    names.iter().all(|name| {
        let Ok(server_name) = ServerName::try_from(name.as_str()) else {
            // A name no client can ask for (an odd host name) cannot be checked.
            return true;
        };
        [now, now.saturating_add(RENEW_BEFORE)].iter().all(|&t| {
            verifier
                .verify_server_cert(leaf, &intermediates, &server_name, &[], at(t))
                .is_ok()
        })
    })
}

fn validity(params: &mut CertificateParams, now: i64, lifetime: i64) -> Result<(), TlsError> {
    let time = |secs: i64| {
        time::OffsetDateTime::from_unix_timestamp(secs)
            .map_err(|e| TlsError(format!("cannot date a certificate: {e}")))
    };
    params.not_before = time(now.saturating_sub(BACKDATE))?;
    params.not_after = time(now.saturating_add(lifetime))?;
    Ok(())
}

fn generate_ca(cert_file: &Path, key_file: &Path, now: i64) -> Result<Ca, TlsError> {
    let key = KeyPair::generate().map_err(rcgen_error)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "mayfly");
    dn.push(
        DnType::CommonName,
        format!("mayfly development CA ({})", crate::host::hostname()),
    );
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.serial_number = Some(serial()?);
    validity(&mut params, now, CA_VALIDITY)?;
    let cert = params.self_signed(&key).map_err(rcgen_error)?;
    write_file(key_file, key.serialize_pem().as_bytes(), true)?;
    write_file(cert_file, cert.pem().as_bytes(), false)?;
    Ok(Ca {
        cert_pem: cert.pem(),
        key,
    })
}

fn generate_server(file: &Path, ca: &Ca, names: &[String], now: i64) -> Result<(), TlsError> {
    let key = KeyPair::generate().map_err(rcgen_error)?;
    let mut params = CertificateParams::new(names.to_vec()).map_err(rcgen_error)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "mayfly");
    dn.push(
        DnType::CommonName,
        names.first().cloned().unwrap_or_default(),
    );
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(serial()?);
    validity(&mut params, now, SERVER_VALIDITY)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, &ca.key).map_err(rcgen_error)?;
    let cert = params.signed_by(&key, &issuer).map_err(rcgen_error)?;
    let pem = format!("{}{}{}", cert.pem(), ca.cert_pem, key.serialize_pem());
    write_file(file, pem.as_bytes(), true)
}

/// A random positive 16-byte serial number (RFC 5280 allows up to 20).
fn serial() -> Result<rcgen::SerialNumber, TlsError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| TlsError(format!("no randomness: {e}")))?;
    if let Some(first) = bytes.first_mut() {
        *first &= 0x7f;
    }
    Ok(rcgen::SerialNumber::from_slice(&bytes))
}

fn rcgen_error(e: rcgen::Error) -> TlsError {
    TlsError(format!("cannot generate a development certificate: {e}"))
}

/// Writes through a temporary file renamed into place, so a crash never leaves half a file;
/// `secret` files are created mode 0600.
fn write_file(path: &Path, bytes: &[u8], secret: bool) -> Result<(), TlsError> {
    let fail = |e: std::io::Error| TlsError(format!("cannot write {}: {e}", path.display()));
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    let _ = std::fs::remove_file(&tmp);
    let mut file = options.open(&tmp).map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn names() -> Vec<String> {
        ["localhost", "127.0.0.1", "::1", "db.example"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn certificates_are_generated_once_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path(), dir.path(), &names(), NOW).unwrap();
        assert!(first.generated_ca && first.generated_server);
        let ca = std::fs::read(&first.ca_file).unwrap();
        let server = std::fs::read(&first.server_file).unwrap();
        assert!(server_is_good(
            &first.server_file,
            std::str::from_utf8(&ca).unwrap(),
            &names(),
            NOW
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for file in [SERVER_FILE, CA_KEY_FILE] {
                let mode = std::fs::metadata(dir.path().join(file))
                    .unwrap()
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o777, 0o600, "{file}");
            }
        }
        let again = ensure(dir.path(), dir.path(), &names(), NOW + DAY).unwrap();
        assert!(!again.generated_ca && !again.generated_server);
        assert_eq!(std::fs::read(&again.ca_file).unwrap(), ca);
        assert_eq!(std::fs::read(&again.server_file).unwrap(), server);
    }

    #[test]
    fn what_is_missing_expiring_or_lacking_a_name_is_generated_again() {
        let dir = tempfile::tempdir().unwrap();
        ensure(dir.path(), dir.path(), &names(), NOW).unwrap();
        let ca = std::fs::read(dir.path().join(CA_FILE)).unwrap();

        // A new bind address: a new server certificate under the same CA.
        let mut more = names();
        more.push("10.1.2.3".to_owned());
        let c = ensure(dir.path(), dir.path(), &more, NOW).unwrap();
        assert!(!c.generated_ca && c.generated_server);
        assert_eq!(std::fs::read(dir.path().join(CA_FILE)).unwrap(), ca);

        // The server certificate near its end: renewed, same CA.
        let c = ensure(dir.path(), dir.path(), &more, NOW + SERVER_VALIDITY - DAY).unwrap();
        assert!(!c.generated_ca && c.generated_server);

        // The server file unreadable: generated again.
        std::fs::write(dir.path().join(SERVER_FILE), "garbage").unwrap();
        let c = ensure(dir.path(), dir.path(), &more, NOW).unwrap();
        assert!(!c.generated_ca && c.generated_server);

        // The CA near its end, or gone: everything again.
        let c = ensure(dir.path(), dir.path(), &more, NOW + CA_VALIDITY - DAY).unwrap();
        assert!(c.generated_ca && c.generated_server);
        std::fs::remove_file(dir.path().join(CA_KEY_FILE)).unwrap();
        let c = ensure(dir.path(), dir.path(), &more, NOW).unwrap();
        assert!(c.generated_ca && c.generated_server);
        assert_ne!(std::fs::read(dir.path().join(CA_FILE)).unwrap(), ca);
    }

    #[test]
    fn the_server_certificate_names_every_address() {
        let dir = tempfile::tempdir().unwrap();
        let c = ensure(dir.path(), dir.path(), &names(), NOW).unwrap();
        let ca = std::fs::read_to_string(&c.ca_file).unwrap();
        for name in names() {
            assert!(
                server_is_good(&c.server_file, &ca, std::slice::from_ref(&name), NOW),
                "{name}"
            );
        }
        assert!(!server_is_good(
            &c.server_file,
            &ca,
            &["other.example".to_owned()],
            NOW
        ));
    }

    #[test]
    fn servers_of_one_user_share_one_ca_and_race_safely() {
        let ca_dir = tempfile::tempdir().unwrap();
        let servers: Vec<tempfile::TempDir> =
            (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
        // Four servers start at once on a fresh CA directory: one generates the CA, the
        // others wait for the lock and sign with it.
        let made: Vec<DevCertificates> = std::thread::scope(|scope| {
            let handles: Vec<_> = servers
                .iter()
                .map(|server| {
                    let ca_dir = ca_dir.path();
                    scope.spawn(move || ensure(ca_dir, server.path(), &names(), NOW).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(made.iter().filter(|c| c.generated_ca).count(), 1);
        let ca = std::fs::read_to_string(ca_dir.path().join(CA_FILE)).unwrap();
        for (certs, server) in made.iter().zip(&servers) {
            assert_eq!(certs.ca_file, ca_dir.path().join(CA_FILE));
            assert_eq!(certs.server_file, server.path().join(SERVER_FILE));
            assert!(certs.generated_server);
            assert!(server_is_good(&certs.server_file, &ca, &names(), NOW));
            assert!(
                !server.path().join(CA_FILE).exists(),
                "no CA beside the server"
            );
        }
        // A later start of any of them reuses everything.
        let again = ensure(ca_dir.path(), servers[0].path(), &names(), NOW + DAY).unwrap();
        assert!(!again.generated_ca && !again.generated_server);
        assert_eq!(
            std::fs::read_to_string(ca_dir.path().join(CA_FILE)).unwrap(),
            ca
        );
    }
}
