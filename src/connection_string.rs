//! The connection string the start-up log suggests: what a client on this machine puts in its
//! URI to reach this server as configured — the Cosmos DB account's credentials when `--auth`
//! is on (the key only when it is the emulator's published one; otherwise a `<key>`
//! placeholder, since a configured key is never logged), and TLS with the generated CA file.

use crate::config::{Config, TlsMode, EMULATOR_COSMOS_KEY};
use std::net::SocketAddr;
use std::path::Path;

/// A `mongodb://` URI for `addr`. `ca_file` is the development CA clients must trust, if the
/// certificates were generated.
pub fn suggest(addr: SocketAddr, config: &Config, ca_file: Option<&Path>) -> String {
    let host = if addr.ip().is_loopback() || addr.ip().is_unspecified() {
        "localhost".to_owned()
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    let credentials = match (&config.cosmos_account, config.auth) {
        (Some(account), true) => {
            let key = config.cosmos_key.expose();
            let key = if key == EMULATOR_COSMOS_KEY {
                percent_encode(key, b"")
            } else {
                "<key>".to_owned()
            };
            format!("{}:{key}@", percent_encode(account, b""))
        }
        _ => String::new(),
    };
    let mut options = Vec::new();
    // Drivers then discover the set's primary by its advertised host (Cosmos DB's connection
    // strings name `replicaSet=globaldb`).
    if let Some(name) = &config.replication.set_name {
        options.push(format!("replicaSet={}", percent_encode(name, b"")));
    }
    if matches!(config.tls.mode, TlsMode::RequireTls | TlsMode::PreferTls) {
        options.push("tls=true".to_owned());
        if let Some(ca) = ca_file {
            options.push(format!(
                "tlsCAFile={}",
                percent_encode(&ca.display().to_string(), b"/:")
            ));
        }
    }
    let query = if options.is_empty() {
        String::new()
    } else {
        format!("?{}", options.join("&"))
    };
    format!("mongodb://{credentials}{host}:{}/{query}", addr.port())
}

/// RFC 3986 percent-encoding of everything but unreserved characters and `keep` (userinfo
/// keeps nothing else: a key's `/` must be encoded; an option value may keep `/` and `:`).
fn percent_encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'.' | b'_' | b'~')
            || keep.contains(&byte)
        {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    #[test]
    fn the_suggestion_follows_auth_tls_and_the_account() {
        let addr: SocketAddr = "127.0.0.1:10255".parse().unwrap();
        let ca = Path::new("/data/tls/ca.pem");
        let mut config = Config::default();
        assert_eq!(suggest(addr, &config, None), "mongodb://localhost:10255/");
        config.tls.mode = TlsMode::AllowTls;
        assert_eq!(
            suggest(addr, &config, Some(ca)),
            "mongodb://localhost:10255/",
            "plain clients are served too"
        );
        config.tls.mode = TlsMode::RequireTls;
        config.auth = true;
        assert_eq!(
            suggest(addr, &config, Some(ca)),
            "mongodb://localhost:C2y6yDjf5%2FR%2Bob0N8A7Cgv30VRDJIWEHLM%2B4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw%2FJw%3D%3D@localhost:10255/?tls=true&tlsCAFile=/data/tls/ca.pem"
        );
        config.cosmos_account = Some("acct".into());
        config.cosmos_key = Secret::new("s3cret/key==");
        let own = suggest("[::1]:27017".parse().unwrap(), &config, None);
        assert_eq!(own, "mongodb://acct:<key>@localhost:27017/?tls=true");
        assert!(!own.contains("s3cret"));
        config.cosmos_account = None;
        config.replication.set_name = Some("globaldb".into());
        assert_eq!(
            suggest(addr, &config, None),
            "mongodb://localhost:10255/?replicaSet=globaldb&tls=true"
        );
        config.replication.set_name = None;
        assert_eq!(
            suggest("10.1.2.3:27017".parse().unwrap(), &config, None),
            "mongodb://10.1.2.3:27017/?tls=true"
        );
    }
}
