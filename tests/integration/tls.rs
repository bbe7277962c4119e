//! TLS through the driver (`tls=true` in the connection string): development certificates
//! generated and reused, the four modes, a user's certificate and key file (also with an
//! encrypted PKCS#8 key), client certificates required with `--tlsCAFile`, and the request
//! loop over TLS (pipelined requests, a disconnect that stops its operation).

use crate::common;

use common::bson::{doc, Document};
use common::TestServer;
use mayfly::clock::SystemClock;
use mayfly::config::{Config, StorageKind, TlsMode};
use mayfly::server::Server;
use mayfly::wire::client::{self, MsgOptions};
use mongodb::options::ClientOptions;
use mongodb::Client;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server on disk (the generated certificates live under its dbpath) in `mode`.
async fn start(mode: TlsMode, adjust: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::start_with(|c| {
        c.storage = StorageKind::Disk;
        c.tls.mode = mode;
        adjust(c);
    })
    .await
}

/// The development CA: in the CA directory `Config::for_tests` puts under the dbpath.
fn generated_ca(server: &TestServer) -> PathBuf {
    server.dbpath().join("ca").join("ca.pem")
}

/// A driver client for `server` with `params` appended to the connection string; server
/// selection gives up after two seconds, so a refused connection fails the test quickly.
async fn client(server: &TestServer, params: &str) -> Client {
    let uri = format!("mongodb://{}/?directConnection=true{params}", server.addr);
    let mut options = ClientOptions::parse(uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(2));
    Client::with_options(options).unwrap()
}

async fn ping(client: &Client) -> mongodb::error::Result<Document> {
    client.database("admin").run_command(doc! {"ping": 1}).await
}

fn ca_param(path: &Path) -> String {
    format!("&tls=true&tlsCAFile={}", path.display())
}

async fn transport_security(client: &Client) -> Document {
    client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap()
        .get_document("transportSecurity")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_driver_connects_with_the_generated_ca() {
    let server = start(TlsMode::RequireTls, |_| {}).await;
    let ca = generated_ca(&server);
    assert!(ca.exists());
    let tls = client(&server, &ca_param(&ca)).await;
    ping(&tls).await.unwrap();
    let counts = transport_security(&tls).await;
    let tls13 = counts.get_i64("1.3").unwrap();
    assert!(tls13 >= 1, "{counts}");
    for version in ["1.0", "1.1", "unknown"] {
        assert_eq!(counts.get_i64(version).unwrap(), 0, "{counts}");
    }
}

#[tokio::test]
async fn a_server_whose_ca_the_client_does_not_trust_is_refused() {
    let server = start(TlsMode::RequireTls, |_| {}).await;
    let untrusting = client(&server, "&tls=true").await;
    let err = ping(&untrusting).await.unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    let careless = client(&server, "&tls=true&tlsAllowInvalidCertificates=true").await;
    ping(&careless).await.unwrap();
    // `ssl=true` is the older spelling Cosmos DB connection strings use.
    let cosmos_style = client(&server, "&ssl=true&tlsAllowInvalidCertificates=true").await;
    ping(&cosmos_style).await.unwrap();
}

#[tokio::test]
async fn allow_tls_serves_plain_and_tls_clients_on_one_port() {
    for mode in [TlsMode::AllowTls, TlsMode::PreferTls] {
        let server = start(mode, |_| {}).await;
        let plain = client(&server, "").await;
        let tls = client(&server, &ca_param(&generated_ca(&server))).await;
        ping(&plain).await.unwrap();
        ping(&tls).await.unwrap();
        let collection = tls.database("db").collection::<Document>("c");
        collection.insert_one(doc! {"_id": 1}).await.unwrap();
        let seen = plain
            .database("db")
            .collection::<Document>("c")
            .find_one(doc! {"_id": 1})
            .await
            .unwrap();
        assert_eq!(seen, Some(doc! {"_id": 1}), "{mode:?}");
    }
}

#[tokio::test]
async fn require_tls_closes_a_plain_connection_at_once() {
    let server = start(TlsMode::RequireTls, |_| {}).await;
    let mut raw = server.raw().await;
    let hello = doc! {"hello": 1, "$db": "admin"};
    raw.send(&client::op_msg(1, &hello, &MsgOptions::default()).unwrap())
        .await;
    assert!(raw.read().await.is_none(), "a plain hello got a reply");
    let plain = client(&server, "").await;
    assert!(ping(&plain).await.is_err());
}

#[tokio::test]
async fn a_tls_client_of_a_server_without_tls_is_disconnected() {
    let server = TestServer::start().await;
    let mut raw = server.raw().await;
    // The start of a ClientHello: record type 0x16, version 3.1, then a handshake header.
    let client_hello = [
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x5a, 0x11, 0x22, 0x33,
        0x44,
    ];
    raw.send(&client_hello).await;
    assert!(raw.is_closed().await);
    let tls = client(&server, "&tls=true&tlsAllowInvalidCertificates=true").await;
    assert!(ping(&tls).await.is_err());
    // The server still serves plain clients.
    ping(&server.client().await).await.unwrap();
}

#[tokio::test]
async fn generated_certificates_are_reused_after_a_restart() {
    let server = start(TlsMode::RequireTls, |_| {}).await;
    let ca = std::fs::read(generated_ca(&server)).unwrap();
    let pem = std::fs::read(server.dbpath().join("tls").join("server.pem")).unwrap();
    let server = server.restart().await;
    assert_eq!(std::fs::read(generated_ca(&server)).unwrap(), ca);
    assert_eq!(
        std::fs::read(server.dbpath().join("tls").join("server.pem")).unwrap(),
        pem
    );
    let tls = client(&server, &ca_param(&generated_ca(&server))).await;
    ping(&tls).await.unwrap();
}

#[tokio::test]
async fn a_memory_server_keeps_its_certificates_in_a_temporary_directory() {
    let dbpath = tempfile::tempdir().unwrap();
    let mut config = Config::for_tests(dbpath.path());
    config.storage = StorageKind::Memory;
    config.tls.mode = TlsMode::RequireTls;
    let bound = Server::bind(config, Arc::new(SystemClock::new()))
        .await
        .unwrap();
    let dev = bound.tls().unwrap().dev.clone().unwrap();
    assert!(!dev.dir.starts_with(dbpath.path()));
    assert!(!dbpath.path().join("tls").exists());
    assert_eq!(dev.ca_file, dbpath.path().join("ca").join("ca.pem"));
    let ca = std::fs::read(&dev.ca_file).unwrap();
    let running = bound.spawn();
    let uri = format!(
        "mongodb://{}/?directConnection=true&tls=true&tlsCAFile={}",
        running.addr().unwrap(),
        dev.ca_file.display()
    );
    let mut options = ClientOptions::parse(uri).await.unwrap();
    options.server_selection_timeout = Some(Duration::from_secs(2));
    ping(&Client::with_options(options).unwrap()).await.unwrap();
    running.shutdown().await;
    assert!(!dev.dir.exists(), "{} was left behind", dev.dir.display());
    // The CA is the user's, not the server's: the next memory server signs with it.
    let mut config = Config::for_tests(dbpath.path());
    config.storage = StorageKind::Memory;
    config.tls.mode = TlsMode::RequireTls;
    let again = Server::bind(config, Arc::new(SystemClock::new()))
        .await
        .unwrap();
    let dev_again = again.tls().unwrap().dev.clone().unwrap();
    assert!(!dev_again.generated_ca && dev_again.generated_server);
    assert_ne!(dev_again.dir, dev.dir);
    assert_eq!(std::fs::read(&dev_again.ca_file).unwrap(), ca);
}

#[tokio::test]
async fn a_ca_an_earlier_version_left_in_the_data_directory_is_removed() {
    let dbpath = tempfile::tempdir().unwrap();
    let old = dbpath.path().join("tls");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("ca.pem"), "an old CA").unwrap();
    std::fs::write(old.join("ca-key.pem"), "its key").unwrap();
    let mut config = Config::for_tests(dbpath.path());
    config.tls.mode = TlsMode::RequireTls;
    let bound = Server::bind(config, Arc::new(SystemClock::new()))
        .await
        .unwrap();
    let dev = bound.tls().unwrap().dev.clone().unwrap();
    assert_eq!(dev.server_file, old.join("server.pem"));
    assert!(!old.join("ca.pem").exists() && !old.join("ca-key.pem").exists());
    assert!(dev.ca_file.exists());
}

/// A CA, and certificates it signs, made in the test as a user would bring them.
struct TestCa {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let pem = params.self_signed(&key).unwrap().pem();
        TestCa { params, key, pem }
    }

    /// A certificate and its key for `names`, for a server or (`client`) a client.
    fn issue(&self, names: &[&str], client: bool) -> (String, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        let issuer = Issuer::from_params(&self.params, &self.key);
        (params.signed_by(&key, &issuer).unwrap().pem(), key)
    }

    fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("test-ca.pem");
        std::fs::write(&path, &self.pem).unwrap();
        path
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `key` as an encrypted PKCS#8 PEM (PBES2: PBKDF2-SHA256, AES-256-CBC), as
/// `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes it.
fn encrypted_pem(key: &KeyPair, password: &str) -> String {
    use pkcs8::der::EncodePem;
    let info = pkcs8::PrivateKeyInfoRef::try_from(key.serialized_der()).unwrap();
    let params =
        pkcs8::pkcs5::pbes2::Parameters::generate_pbkdf2_sha256_aes256cbc(2048, &[3; 16], [5; 16])
            .unwrap();
    let doc = info.encrypt_with_params(params, password).unwrap();
    pkcs8::EncryptedPrivateKeyInfoRef::try_from(doc.as_bytes())
        .unwrap()
        .to_pem(pkcs8::der::pem::LineEnding::LF)
        .unwrap()
}

#[tokio::test]
async fn a_users_certificate_key_file_is_served() {
    let files = tempfile::tempdir().unwrap();
    let ca = TestCa::new("user CA");
    let (cert, key) = ca.issue(&["127.0.0.1"], false);
    let pem = write(
        files.path(),
        "server.pem",
        &format!("{cert}{}", key.serialize_pem()),
    );
    let server = start(TlsMode::RequireTls, |c| {
        c.tls.certificate_key_file = Some(pem);
    })
    .await;
    assert!(!server.dbpath().join("tls").exists(), "nothing generated");
    let tls = client(&server, &ca_param(&ca.write(files.path()))).await;
    ping(&tls).await.unwrap();
}

#[tokio::test]
async fn an_encrypted_pkcs8_key_opens_with_its_password_only() {
    let files = tempfile::tempdir().unwrap();
    let ca = TestCa::new("user CA");
    let (cert, key) = ca.issue(&["127.0.0.1"], false);
    let pem = write(
        files.path(),
        "server.pem",
        &format!("{cert}{}", encrypted_pem(&key, "open sesame")),
    );
    let mut config = Config::for_tests(files.path());
    config.tls.mode = TlsMode::RequireTls;
    config.tls.certificate_key_file = Some(pem.clone());
    for (password, refusal) in [(Some("wrong"), "wrong password"), (None, "is encrypted")] {
        let mut config = config.clone();
        config.tls.certificate_key_file_password = password.map(str::to_owned);
        let err = Server::bind(config, Arc::new(SystemClock::new()))
            .await
            .err()
            .expect("the server refuses to start");
        assert!(err.to_string().contains(refusal), "{password:?}: {err}");
    }
    let server = start(TlsMode::RequireTls, |c| {
        c.tls.certificate_key_file = Some(pem);
        c.tls.certificate_key_file_password = Some("open sesame".to_owned());
    })
    .await;
    let tls = client(&server, &ca_param(&ca.write(files.path()))).await;
    ping(&tls).await.unwrap();
}

#[tokio::test]
async fn with_a_ca_file_clients_must_present_a_certificate() {
    let files = tempfile::tempdir().unwrap();
    let clients_ca = TestCa::new("clients CA");
    let ca_file = clients_ca.write(files.path());
    let (cert, key) = clients_ca.issue(&["app"], true);
    let client_pem = write(
        files.path(),
        "client.pem",
        &format!("{cert}{}", key.serialize_pem()),
    );
    let stranger_ca = TestCa::new("another CA");
    let (cert, key) = stranger_ca.issue(&["intruder"], true);
    let stranger_pem = write(
        files.path(),
        "stranger.pem",
        &format!("{cert}{}", key.serialize_pem()),
    );

    let server = start(TlsMode::RequireTls, |c| {
        c.tls.ca_file = Some(ca_file.clone())
    })
    .await;
    let trust = ca_param(&generated_ca(&server));
    let anonymous = client(&server, &trust).await;
    assert!(ping(&anonymous).await.is_err());
    let stranger = client(
        &server,
        &format!("{trust}&tlsCertificateKeyFile={}", stranger_pem.display()),
    )
    .await;
    assert!(ping(&stranger).await.is_err());
    let known = client(
        &server,
        &format!("{trust}&tlsCertificateKeyFile={}", client_pem.display()),
    )
    .await;
    ping(&known).await.unwrap();

    let lenient = start(TlsMode::RequireTls, |c| {
        c.tls.ca_file = Some(ca_file);
        c.tls.allow_connections_without_certificates = true;
    })
    .await;
    let trust = ca_param(&generated_ca(&lenient));
    ping(&client(&lenient, &trust).await).await.unwrap();
    let stranger = client(
        &lenient,
        &format!("{trust}&tlsCertificateKeyFile={}", stranger_pem.display()),
    )
    .await;
    assert!(
        ping(&stranger).await.is_err(),
        "a certificate given is verified"
    );
}

/// A raw TLS connection to `server`, trusting its generated CA.
async fn raw_tls(server: &TestServer) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let pem = std::fs::read(generated_ca(server)).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in mayfly::tls::keys::certificates(&pem).unwrap() {
        roots.add(cert).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
    connector.connect(name, tcp).await.unwrap()
}

async fn read_reply(
    stream: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
) -> client::Reply {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await.unwrap();
    let mut frame = len.to_vec();
    frame.resize(i32::from_le_bytes(len) as usize, 0);
    stream.read_exact(&mut frame[4..]).await.unwrap();
    client::read_reply(&frame).unwrap()
}

#[tokio::test]
async fn requests_pipelined_over_tls_behind_a_long_command_are_all_answered() {
    let server = start(TlsMode::RequireTls, |_| {}).await;
    let mut stream = raw_tls(&server).await;
    let sleep = doc! {"sleep": 1, "millis": 200, "$db": "admin"};
    stream
        .write_all(&client::op_msg(1, &sleep, &MsgOptions::default()).unwrap())
        .await
        .unwrap();
    // Sent while the sleep runs: the session reads them through TLS and keeps them.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut pings = Vec::new();
    for id in 2..=4 {
        let ping = doc! {"ping": 1, "$db": "admin"};
        pings.extend(client::op_msg(id, &ping, &MsgOptions::default()).unwrap());
    }
    stream.write_all(&pings).await.unwrap();
    for id in 1..=4 {
        let reply = read_reply(&mut stream).await;
        assert_eq!(reply.header.response_to, id);
        assert_eq!(
            reply.document.get_f64("ok").unwrap(),
            1.0,
            "{}",
            reply.document
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_client_that_disconnects_stops_its_operation() {
    let server = start(TlsMode::RequireTls, |_| {}).await;
    let watcher = client(&server, &ca_param(&generated_ca(&server))).await;
    let mut stream = raw_tls(&server).await;
    let sleep = doc! {"sleep": 1, "millis": 30_000, "$db": "admin"};
    stream
        .write_all(&client::op_msg(1, &sleep, &MsgOptions::default()).unwrap())
        .await
        .unwrap();
    let sleeping = doc! {"command.sleep": {"$exists": true}};
    common::wait_for_ops(&watcher, sleeping.clone(), |ops| ops.len() == 1).await;
    drop(stream);
    common::wait_for_ops(&watcher, sleeping, |ops| ops.is_empty()).await;
}
