//! Reading the server's certificate chain and private key from a PEM file, as mongod takes
//! `--tlsCertificateKeyFile`: certificates (leaf first) and one private key in the same file.
//!
//! Keys: PKCS#8 (`PRIVATE KEY`), PKCS#1 (`RSA PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`), and
//! password-protected PKCS#8 (`ENCRYPTED PRIVATE KEY`, PBES2). OpenSSL's legacy encrypted PEM
//! (`Proc-Type: 4,ENCRYPTED`) is refused with the command that converts it.

use super::TlsError;
use pkcs8::der::pem::PemLabel;
use pkcs8::EncryptedPrivateKeyInfoRef;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::path::Path;

/// A certificate chain (leaf first) and its private key.
pub struct CertifiedKeyFiles {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

const LEGACY_ENCRYPTED: &str = "the private key is encrypted in OpenSSL's legacy format \
     (Proc-Type: 4,ENCRYPTED), which is not supported: convert it to PKCS#8 with \
     `openssl pkcs8 -topk8 -v2 aes-256-cbc -in OLD.pem -out NEW.pem` and give its password \
     with --tlsCertificateKeyFilePassword";

const ENCRYPTED_LABEL: &str = EncryptedPrivateKeyInfoRef::PEM_LABEL;

/// Reads `path`; `password` decrypts an encrypted PKCS#8 key and is refused for a plain one.
pub fn load(path: &Path, password: Option<&str>) -> Result<CertifiedKeyFiles, TlsError> {
    let text = std::fs::read(path)
        .map_err(|e| TlsError(format!("cannot read {}: {e}", path.display())))?;
    parse(&text, password).map_err(|e| TlsError(format!("{}: {e}", path.display())))
}

/// Parses PEM text holding certificates and one private key.
pub fn parse(pem: &[u8], password: Option<&str>) -> Result<CertifiedKeyFiles, String> {
    if String::from_utf8_lossy(pem).contains("Proc-Type: 4,ENCRYPTED") {
        return Err(LEGACY_ENCRYPTED.to_owned());
    }
    let chain = certificates(pem)?;
    if chain.is_empty() {
        return Err("no certificate (-----BEGIN CERTIFICATE-----) found".to_owned());
    }
    let key = private_key(pem, password)?;
    Ok(CertifiedKeyFiles { chain, key })
}

/// Every `CERTIFICATE` block, in file order.
pub fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("invalid PEM: {e}"))
}

fn private_key(pem: &[u8], password: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let text = String::from_utf8_lossy(pem);
    if let Some(block) = pem_block(&text, ENCRYPTED_LABEL) {
        let Some(password) = password else {
            return Err("the private key is encrypted: give its password with \
                 --tlsCertificateKeyFilePassword"
                .to_owned());
        };
        return decrypt(block, password);
    }
    if password.is_some() {
        return Err(
            "--tlsCertificateKeyFilePassword was given but the private key is not \
             encrypted"
                .to_owned(),
        );
    }
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => "no private key found (PRIVATE KEY, \
             RSA PRIVATE KEY, EC PRIVATE KEY or ENCRYPTED PRIVATE KEY)"
            .to_owned(),
        e => format!("invalid private key: {e}"),
    })
}

fn decrypt(block: &str, password: &str) -> Result<PrivateKeyDer<'static>, String> {
    let (_, der) = pkcs8::der::pem::decode_vec(block.as_bytes())
        .map_err(|e| format!("invalid encrypted private key: {e}"))?;
    let info = EncryptedPrivateKeyInfoRef::try_from(der.as_slice())
        .map_err(|e| format!("invalid encrypted private key: {e}"))?;
    let plain = info.decrypt(password).map_err(|_| {
        "cannot decrypt the private key: wrong password, or an encryption scheme other than \
         PBES2 (PBKDF2 or scrypt with AES-CBC)"
            .to_owned()
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        plain.as_bytes().to_vec(),
    )))
}

/// The first `-----BEGIN label-----` ... `-----END label-----` block of `text`, both lines
/// included.
fn pem_block<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)?;
    let rest = text.get(start..)?;
    let stop = rest.find(&end)? + end.len();
    rest.get(..stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed() -> (String, rcgen::KeyPair) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key)
    }

    fn encrypted(key: &rcgen::KeyPair, password: &str) -> String {
        use pkcs8::der::EncodePem;
        let info = pkcs8::PrivateKeyInfoRef::try_from(key.serialized_der()).unwrap();
        let params = pkcs8::pkcs5::pbes2::Parameters::generate_pbkdf2_sha256_aes256cbc(
            2048, &[7u8; 16], [9u8; 16],
        )
        .unwrap();
        let doc = info.encrypt_with_params(params, password).unwrap();
        let enc = EncryptedPrivateKeyInfoRef::try_from(doc.as_bytes()).unwrap();
        enc.to_pem(pkcs8::der::pem::LineEnding::LF).unwrap()
    }

    #[test]
    fn keys_in_every_supported_form_load_and_the_rest_are_refused() {
        let (cert, key) = self_signed();
        let plain = format!("{cert}{}", key.serialize_pem());
        let locked = format!("{cert}{}", encrypted(&key, "pw"));
        let legacy = format!(
            "{cert}-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"
        );
        // (case, PEM, password, Ok or a part of the refusal)
        type Case<'a> = (&'a str, String, Option<&'a str>, Result<(), &'a str>);
        let table: Vec<Case> = vec![
            ("plain PKCS#8", plain.clone(), None, Ok(())),
            (
                "password for a plain key",
                plain,
                Some("pw"),
                Err("not encrypted"),
            ),
            (
                "encrypted, right password",
                locked.clone(),
                Some("pw"),
                Ok(()),
            ),
            (
                "encrypted, wrong password",
                locked.clone(),
                Some("nope"),
                Err("wrong password"),
            ),
            ("encrypted, no password", locked, None, Err("is encrypted")),
            ("legacy encrypted", legacy, Some("pw"), Err("legacy format")),
            ("no key", cert.clone(), None, Err("no private key")),
            (
                "no certificate",
                key.serialize_pem(),
                None,
                Err("no certificate"),
            ),
        ];
        for (name, pem, password, want) in table {
            match (parse(pem.as_bytes(), password), want) {
                (Ok(files), Ok(())) => {
                    assert_eq!(files.chain.len(), 1, "{name}");
                    assert_eq!(files.key.secret_der(), key.serialized_der(), "{name}");
                }
                (Err(e), Err(text)) => assert!(e.contains(text), "{name}: {e}"),
                (Ok(_), Err(text)) => panic!("{name}: loaded, expected {text:?}"),
                (Err(e), Ok(())) => panic!("{name}: {e}"),
            }
        }
    }
}
