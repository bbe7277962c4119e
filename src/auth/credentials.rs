//! SCRAM credentials: what the server keeps of a password (RFC 5802 §3: a salt, an iteration
//! count, `StoredKey` and `ServerKey`), and how they are derived the way mongod derives them.
//!
//! SCRAM-SHA-1 hashes MongoDB's password digest, `hex(MD5(user ":mongo:" password))`;
//! SCRAM-SHA-256 hashes the SASLprep'd password (RFC 7677, RFC 4013).

use crate::error::{Error, ErrorCode, Result};
use hmac::{Hmac, KeyInit, Mac};
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use sha1::Sha1;
use sha2::Sha256;

/// A SCRAM mechanism mayfly implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    ScramSha1,
    ScramSha256,
}

impl Mechanism {
    pub const ALL: &'static [Mechanism] = &[Mechanism::ScramSha1, Mechanism::ScramSha256];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::ScramSha1 => "SCRAM-SHA-1",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// mongod's default `scramIterationCount` / `scramSHA256IterationCount`.
    pub fn default_iterations(self) -> u32 {
        match self {
            Mechanism::ScramSha1 => 10_000,
            Mechanism::ScramSha256 => 15_000,
        }
    }

    /// Length of the salt mongod generates: the hash's output length minus 4.
    fn salt_len(self) -> usize {
        match self {
            Mechanism::ScramSha1 => 16,
            Mechanism::ScramSha256 => 28,
        }
    }
}

/// What the server stores for one mechanism.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    #[serde(rename = "iterationCount")]
    pub iteration_count: u32,
    #[serde(with = "serde_bytes_b64")]
    pub salt: Vec<u8>,
    #[serde(rename = "storedKey", with = "serde_bytes_b64")]
    pub stored_key: Vec<u8>,
    #[serde(rename = "serverKey", with = "serde_bytes_b64")]
    pub server_key: Vec<u8>,
}

impl ScramCredential {
    /// New credentials for `password` with a fresh random salt and the default iteration count.
    pub fn generate(mechanism: Mechanism, user: &str, password: &str) -> Result<ScramCredential> {
        let mut salt = vec![0u8; mechanism.salt_len()];
        getrandom::fill(&mut salt)
            .map_err(|e| Error::internal(format!("no random bytes for a salt: {e}")))?;
        ScramCredential::derive(
            mechanism,
            user,
            password,
            &salt,
            mechanism.default_iterations(),
        )
    }

    /// SCRAM-SHA-1 credentials from MongoDB's password digest, `hex(MD5(user ":mongo:"
    /// password))`, as a client computes it itself (`createUser` with `digestPassword: false`).
    pub fn generate_from_digest(digest: &str) -> Result<ScramCredential> {
        let mechanism = Mechanism::ScramSha1;
        let mut salt = vec![0u8; mechanism.salt_len()];
        getrandom::fill(&mut salt)
            .map_err(|e| Error::internal(format!("no random bytes for a salt: {e}")))?;
        let iterations = mechanism.default_iterations();
        let salted = pbkdf2::pbkdf2_hmac_array::<Sha1, 20>(digest.as_bytes(), &salt, iterations);
        let client_key = hmac(mechanism, &salted, b"Client Key")?;
        let server_key = hmac(mechanism, &salted, b"Server Key")?;
        Ok(ScramCredential {
            iteration_count: iterations,
            salt,
            stored_key: hash(mechanism, &client_key),
            server_key,
        })
    }

    /// The credentials for `password` with the given salt and iteration count.
    pub fn derive(
        mechanism: Mechanism,
        user: &str,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<ScramCredential> {
        let salted = salted_password(mechanism, user, password, salt, iterations)?;
        let client_key = hmac(mechanism, &salted, b"Client Key")?;
        let server_key = hmac(mechanism, &salted, b"Server Key")?;
        Ok(ScramCredential {
            iteration_count: iterations,
            salt: salt.to_vec(),
            stored_key: hash(mechanism, &client_key),
            server_key,
        })
    }
}

/// The string SCRAM hashes for this mechanism: MongoDB's digest for SHA-1, the SASLprep'd
/// password for SHA-256 (18 AuthenticationFailed-free: a password SASLprep rejects is a bad
/// value when a user is created).
pub fn password_input(mechanism: Mechanism, user: &str, password: &str) -> Result<String> {
    match mechanism {
        Mechanism::ScramSha1 => Ok(mongo_password_digest(user, password)),
        Mechanism::ScramSha256 => stringprep::saslprep(password)
            .map(|p| p.into_owned())
            .map_err(|e| {
                Error::new(
                    ErrorCode::BadValue,
                    format!("Error preparing password with SASLprep: {e}"),
                )
            }),
    }
}

/// `hex(MD5(user ":mongo:" password))`: what SCRAM-SHA-1 treats as the password.
pub fn mongo_password_digest(user: &str, password: &str) -> String {
    let digest = Md5::digest(format!("{user}:mongo:{password}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `Hi(Normalize(password), salt, i)` (RFC 5802 §2.2): PBKDF2 with HMAC of the mechanism's hash.
pub fn salted_password(
    mechanism: Mechanism,
    user: &str,
    password: &str,
    salt: &[u8],
    iterations: u32,
) -> Result<Vec<u8>> {
    let input = password_input(mechanism, user, password)?;
    Ok(match mechanism {
        Mechanism::ScramSha1 => {
            pbkdf2::pbkdf2_hmac_array::<Sha1, 20>(input.as_bytes(), salt, iterations).to_vec()
        }
        Mechanism::ScramSha256 => {
            pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(input.as_bytes(), salt, iterations).to_vec()
        }
    })
}

/// `HMAC(key, message)` with the mechanism's hash.
pub fn hmac(mechanism: Mechanism, key: &[u8], message: &[u8]) -> Result<Vec<u8>> {
    let bad_key = |_| Error::internal("HMAC key rejected");
    Ok(match mechanism {
        Mechanism::ScramSha1 => {
            let mut mac = Hmac::<Sha1>::new_from_slice(key).map_err(bad_key)?;
            mac.update(message);
            mac.finalize().into_bytes().to_vec()
        }
        Mechanism::ScramSha256 => {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).map_err(bad_key)?;
            mac.update(message);
            mac.finalize().into_bytes().to_vec()
        }
    })
}

/// `H(data)` with the mechanism's hash.
pub fn hash(mechanism: Mechanism, data: &[u8]) -> Vec<u8> {
    match mechanism {
        Mechanism::ScramSha1 => Sha1::digest(data).to_vec(),
        Mechanism::ScramSha256 => Sha256::digest(data).to_vec(),
    }
}

/// Keys are stored as base64 strings, as mongod stores them in `system.users`.
mod serde_bytes_b64 {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;

    #[test]
    fn the_sha1_password_digest_is_mongods() {
        // The auth specification's SCRAM-SHA-1 example: user "user", password "pencil".
        assert_eq!(
            mongo_password_digest("user", "pencil"),
            "1c33006ec1ffd90f9cadcbcc0e118200"
        );
    }

    #[test]
    fn sha256_keys_match_rfc_7677() {
        // RFC 7677 §3: password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations.
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let cred =
            ScramCredential::derive(Mechanism::ScramSha256, "user", "pencil", &salt, 4096).unwrap();
        let salted =
            salted_password(Mechanism::ScramSha256, "user", "pencil", &salt, 4096).unwrap();
        let client_key = hmac(Mechanism::ScramSha256, &salted, b"Client Key").unwrap();
        assert_eq!(cred.stored_key, hash(Mechanism::ScramSha256, &client_key));
        // ServerSignature of the RFC's exchange, computed from ServerKey.
        let auth_message = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let signature = hmac(
            Mechanism::ScramSha256,
            &cred.server_key,
            auth_message.as_bytes(),
        )
        .unwrap();
        assert_eq!(
            STANDARD.encode(signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn sha1_keys_match_the_auth_specification() {
        // The auth specification's SCRAM-SHA-1 conversation: salt rQ9ZY3MntBeuP3E1TDVC4w==,
        // 10000 iterations, server signature UMWeI25JD1yNYZRMpZ4VHvhZ9e0=.
        let salt = STANDARD.decode("rQ9ZY3MntBeuP3E1TDVC4w==").unwrap();
        let cred =
            ScramCredential::derive(Mechanism::ScramSha1, "user", "pencil", &salt, 10_000).unwrap();
        let auth_message = "n=user,r=fyko+d2lbbFgONRv9qkxdawL,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000,c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE";
        let signature = hmac(
            Mechanism::ScramSha1,
            &cred.server_key,
            auth_message.as_bytes(),
        )
        .unwrap();
        assert_eq!(STANDARD.encode(signature), "UMWeI25JD1yNYZRMpZ4VHvhZ9e0=");
    }

    #[test]
    fn credentials_survive_a_bson_round_trip() {
        let cred = ScramCredential::generate(Mechanism::ScramSha256, "u", "p").unwrap();
        assert_eq!(cred.salt.len(), 28);
        assert_eq!(cred.iteration_count, 15_000);
        let bytes = bson::to_vec(&cred).unwrap();
        let back: ScramCredential = bson::from_slice(&bytes).unwrap();
        assert_eq!(back, cred);
    }

    #[test]
    fn saslprep_is_applied_for_sha256_only() {
        // RFC 4013: U+00AD (soft hyphen) maps to nothing; U+2168 (ROMAN NUMERAL NINE) to "IX".
        assert_eq!(
            password_input(Mechanism::ScramSha256, "u", "I\u{00AD}X").unwrap(),
            "IX"
        );
        assert_eq!(
            password_input(Mechanism::ScramSha256, "u", "\u{2168}").unwrap(),
            "IX"
        );
        assert!(password_input(Mechanism::ScramSha256, "u", "a\u{0007}").is_err());
        assert_eq!(
            password_input(Mechanism::ScramSha1, "u", "\u{2168}").unwrap(),
            mongo_password_digest("u", "\u{2168}")
        );
    }
}
