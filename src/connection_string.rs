//! The connection string the start-up log suggests: what a client on this machine pastes to
//! reach this server as configured — the Cosmos DB account's credentials when `--auth` or the
//! Cosmos profile is on (the key only when it is the emulator's published one; otherwise a
//! `<key>` placeholder, since a configured key is never logged), the replica set, TLS with the
//! generated CA file when TLS is required or preferred, and `retrywrites=false` when the
//! Cosmos profile refuses retryable writes (drivers retry writes by default).

use crate::config::{Config, TlsMode, EMULATOR_COSMOS_KEY};
use crate::profile::Rule;
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
    // The account user exists whenever it is configured; the Cosmos profile's string names it
    // as the portal's does, and with `--auth` nothing connects without it.
    let log_in = config.auth || config.profile.is_cosmos();
    let credentials = match (&config.cosmos_account, log_in) {
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
    if config.profile.enforces(Rule::RetryableWrites) {
        options.push("retrywrites=false".to_owned());
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

    #[test]
    fn the_cosmos_profile_suggests_a_string_to_paste_as_is() {
        use clap::Parser;
        let addr: SocketAddr = "127.0.0.1:10255".parse().unwrap();
        let ca = Path::new("/home/ann/.local/share/mayfly/ca/ca.pem");
        let config = |args: &[&str]| {
            let cli = crate::config::Cli::try_parse_from(
                ["mayfly", "--compat", "cosmos"].iter().chain(args),
            )
            .unwrap();
            Config::resolve(cli, crate::config::FileConfig::default(), vec![])
        };
        let emulator_key = "C2y6yDjf5%2FR%2Bob0N8A7Cgv30VRDJIWEHLM%2B4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw%2FJw%3D%3D";
        // (flags, suggestion)
        let table: [(&[&str], String); 5] = [
            (
                &[],
                format!("mongodb://localhost:{emulator_key}@localhost:10255/?replicaSet=globaldb&tls=true&tlsCAFile={}&retrywrites=false", ca.display()),
            ),
            (
                &["--cosmos-retryable-writes", "--auth"],
                format!("mongodb://localhost:{emulator_key}@localhost:10255/?replicaSet=globaldb&tls=true&tlsCAFile={}", ca.display()),
            ),
            (
                &["--cosmos-allow", "retryable-writes", "--tlsMode", "allowTLS"],
                format!("mongodb://localhost:{emulator_key}@localhost:10255/?replicaSet=globaldb"),
            ),
            (
                &["--tlsMode", "disabled", "--cosmos-account", "acct", "--cosmos-key", "k"],
                "mongodb://acct:<key>@localhost:10255/?replicaSet=globaldb&retrywrites=false".to_owned(),
            ),
            (
                &["--cosmos-account", "", "--replSet", "rs0"],
                format!("mongodb://localhost:10255/?replicaSet=rs0&tls=true&tlsCAFile={}&retrywrites=false", ca.display()),
            ),
        ];
        for (args, want) in table {
            assert_eq!(suggest(addr, &config(args), Some(ca)), want, "{args:?}");
        }
    }
}
