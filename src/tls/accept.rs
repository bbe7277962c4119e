//! Opening a client connection under the TLS mode: sniff whether the client starts a TLS
//! handshake, then refuse it, serve it plain, or complete the handshake (with a deadline, in the
//! connection's own task, so a slow client never holds up the listener).
//!
//! The log lines are mongod's wording followed by what to change. A refusal (a transport the
//! server does not serve, a failed handshake) is logged at warn once per client address and
//! reason, a plain client of a `preferTLS` server at info once per address: a driver retries
//! for its whole server selection timeout, and the operator needs the explanation once, not a
//! line a retry. Repeats go to debug.

use super::mismatch::ReportedClients;
use super::sniff::{self, Hello};
use super::ServerTls;
use crate::config::TlsMode;
use crate::status::TlsVersion;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// How long a client has to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The counter a negotiated protocol version is reported under.
fn version_of(version: Option<rustls::ProtocolVersion>) -> TlsVersion {
    match version {
        Some(rustls::ProtocolVersion::TLSv1_0) => TlsVersion::V1_0,
        Some(rustls::ProtocolVersion::TLSv1_1) => TlsVersion::V1_1,
        Some(rustls::ProtocolVersion::TLSv1_2) => TlsVersion::V1_2,
        Some(rustls::ProtocolVersion::TLSv1_3) => TlsVersion::V1_3,
        _ => TlsVersion::Unknown,
    }
}

/// A connection ready for the request loop, or why it was closed.
pub enum Opened {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>, TlsVersion),
    Closed(&'static str),
}

/// How connections are opened: the TLS side (`None` with `--tlsMode disabled`) and the
/// clients already told why theirs were refused.
#[derive(Debug, Default)]
pub struct Transport {
    pub tls: Option<ServerTls>,
    pub reported: ReportedClients,
}

/// What a refused or downgraded client is told, in the log.
const TLS_TO_PLAIN: &str = "SSL handshake received but server is started without SSL support";
const PLAIN_TO_TLS: &str = "The server is configured to only allow SSL connections";
const PLAIN_PREFERRED: &str = "SSL mode is set to 'preferred' and connection is not using SSL";
const HANDSHAKE_FAILED: &str = "TLS handshake failed";

/// Logs `message` for `peer`: at warn (`refusal`) or info the first time for its address,
/// at debug after that.
fn report(
    reported: &ReportedClients,
    peer: SocketAddr,
    refusal: bool,
    message: &'static str,
    advice: &str,
    error: Option<&dyn std::fmt::Display>,
) {
    let error = error.map(ToString::to_string);
    if !reported.first_report(peer.ip(), message) {
        tracing::debug!(remote = %peer, error, "{message}");
    } else if refusal {
        tracing::warn!(remote = %peer, error, "{message}: {advice} (logged once per client address)");
    } else {
        tracing::info!(remote = %peer, "{message}: {advice} (logged once per client address)");
    }
}

/// Decides how `stream` is served under the transport's TLS mode.
pub async fn open(stream: TcpStream, peer: SocketAddr, transport: &Transport) -> Opened {
    let tls = transport.tls.as_ref();
    let reported = &transport.reported;
    let hello = match sniff::peek_hello(&stream).await {
        Ok(Some(hello)) => hello,
        Ok(None) => return Opened::Closed("client closed the connection"),
        Err(e) => {
            tracing::info!(remote = %peer, error = %e, "closing a connection that sent no message header");
            return Opened::Closed("no message header");
        }
    };
    match (hello, tls) {
        (Hello::Plain, None) => Opened::Plain(stream),
        (Hello::Tls, None) => {
            report(
                reported,
                peer,
                true,
                TLS_TO_PLAIN,
                "the client's connection string asks for TLS (tls=true or ssl=true); remove it, or start mayfly with --tlsMode preferTLS to serve TLS and plain clients on this port",
                None,
            );
            Opened::Closed("TLS handshake on a server without TLS")
        }
        (Hello::Plain, Some(tls)) => match tls.mode {
            TlsMode::RequireTls => {
                report(
                    reported,
                    peer,
                    true,
                    PLAIN_TO_TLS,
                    "add tls=true (and tlsCAFile=<the CA file the start-up log names>) to the client's connection string, or start mayfly with --tlsMode preferTLS",
                    None,
                );
                Opened::Closed("plain connection to a server that requires TLS")
            }
            TlsMode::PreferTls => {
                report(
                    reported,
                    peer,
                    false,
                    PLAIN_PREFERRED,
                    "served without TLS",
                    None,
                );
                Opened::Plain(stream)
            }
            TlsMode::AllowTls | TlsMode::Disabled => Opened::Plain(stream),
        },
        (Hello::Tls, Some(tls)) => {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    let (_, session) = stream.get_ref();
                    let version = version_of(session.protocol_version());
                    tracing::debug!(remote = %peer, version = version.name(), "TLS handshake complete");
                    Opened::Tls(Box::new(stream), version)
                }
                Ok(Err(e)) => {
                    report(
                        reported,
                        peer,
                        true,
                        HANDSHAKE_FAILED,
                        "a client that does not trust the server's certificate gives up here; give it the CA file (tlsCAFile=<path>, the path `mayfly ca-path` prints for development certificates)",
                        Some(&e),
                    );
                    Opened::Closed("TLS handshake failed")
                }
                Err(_) => {
                    tracing::info!(
                        remote = %peer,
                        timeout_s = HANDSHAKE_TIMEOUT.as_secs(),
                        "TLS handshake timed out"
                    );
                    Opened::Closed("TLS handshake timed out")
                }
            }
        }
    }
}
