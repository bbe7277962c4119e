//! Opening a client connection under the TLS mode: sniff whether the client starts a TLS
//! handshake, then refuse it, serve it plain, or complete the handshake (with a deadline, in the
//! connection's own task, so a slow client never holds up the listener).
//!
//! The log lines are mongod's wording, at info level, once per connection.

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

/// Decides how `stream` is served under `tls` (`None`: `--tlsMode disabled`).
pub async fn open(stream: TcpStream, peer: SocketAddr, tls: Option<&ServerTls>) -> Opened {
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
            tracing::info!(
                remote = %peer,
                "SSL handshake received but server is started without SSL support"
            );
            Opened::Closed("TLS handshake on a server without TLS")
        }
        (Hello::Plain, Some(tls)) => match tls.mode {
            TlsMode::RequireTls => {
                tracing::info!(
                    remote = %peer,
                    "The server is configured to only allow SSL connections"
                );
                Opened::Closed("plain connection to a server that requires TLS")
            }
            TlsMode::PreferTls => {
                tracing::info!(
                    remote = %peer,
                    "SSL mode is set to 'preferred' and connection is not using SSL"
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
                    tracing::info!(remote = %peer, error = %e, "TLS handshake failed");
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
