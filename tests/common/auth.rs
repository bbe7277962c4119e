//! Users for authentication tests, stored straight into the engine's catalog, and a SCRAM
//! client for tests that speak the conversation over raw wire messages.

use super::TestServer;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use mayfly::auth::credentials::{hash, hmac, salted_password};
use mayfly::auth::{Credentials, Mechanism, RoleName, ScramCredential, User};

/// Stores a user of `db` with keys for `mechanisms` and the given `(role, db)` roles.
pub async fn add_user(
    server: &TestServer,
    db: &str,
    name: &str,
    password: &str,
    roles: &[(&str, &str)],
    mechanisms: &[Mechanism],
) {
    let key = |m: Mechanism| {
        mechanisms
            .contains(&m)
            .then(|| ScramCredential::generate(m, name, password).unwrap())
    };
    let user = User {
        db: db.to_owned(),
        name: name.to_owned(),
        user_id: bson::Uuid::new(),
        credentials: Credentials {
            sha1: key(Mechanism::ScramSha1),
            sha256: key(Mechanism::ScramSha256),
        },
        roles: roles.iter().map(|(r, d)| RoleName::new(*r, *d)).collect(),
        custom_data: None,
    };
    server
        .shared()
        .engine
        .write(true, move |txn, _| {
            mayfly::engine::users::put_user(txn, user)
        })
        .await
        .unwrap()
        .unwrap();
}

/// The client side of one SCRAM conversation (RFC 5802), for raw-wire tests.
pub struct ScramClient {
    mechanism: Mechanism,
    user: String,
    password: String,
    nonce: String,
    auth_message: String,
    server_signature: Vec<u8>,
}

impl ScramClient {
    pub fn new(mechanism: Mechanism, user: &str, password: &str) -> ScramClient {
        ScramClient {
            mechanism,
            user: user.to_owned(),
            password: password.to_owned(),
            nonce: STANDARD.encode(bson::Uuid::new().bytes()),
            auth_message: String::new(),
            server_signature: Vec::new(),
        }
    }

    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    fn first_bare(&self) -> String {
        let user = self.user.replace('=', "=3D").replace(',', "=2C");
        format!("n={user},r={}", self.nonce)
    }

    /// `n,,n=<user>,r=<nonce>`.
    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.first_bare()).into_bytes()
    }

    /// The client-final message answering `server_first`.
    pub fn client_final(&mut self, server_first: &[u8]) -> Vec<u8> {
        let server_first = std::str::from_utf8(server_first).unwrap();
        let mut nonce = "";
        let mut salt = Vec::new();
        let mut iterations = 0;
        for field in server_first.split(',') {
            match field.split_at(2) {
                ("r=", r) => nonce = r,
                ("s=", s) => salt = STANDARD.decode(s).unwrap(),
                ("i=", i) => iterations = i.parse().unwrap(),
                _ => {}
            }
        }
        assert!(
            nonce.starts_with(&self.nonce),
            "the server nonce extends ours"
        );
        let without_proof = format!("c=biws,r={nonce}");
        self.auth_message = format!("{},{server_first},{without_proof}", self.first_bare());
        let m = self.mechanism;
        let salted = salted_password(m, &self.user, &self.password, &salt, iterations).unwrap();
        let client_key = hmac(m, &salted, b"Client Key").unwrap();
        let signature = hmac(m, &hash(m, &client_key), self.auth_message.as_bytes()).unwrap();
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac(m, &salted, b"Server Key").unwrap();
        self.server_signature = hmac(m, &server_key, self.auth_message.as_bytes()).unwrap();
        format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes()
    }

    /// Whether `server_final` is `v=` with the signature only the real server can compute.
    pub fn verifies(&self, server_final: &[u8]) -> bool {
        server_final == format!("v={}", STANDARD.encode(&self.server_signature)).as_bytes()
    }
}
