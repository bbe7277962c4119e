//! `mayfly ping`: sends `{ping: 1}` to a running server and exits 0 when it answers `ok: 1`, 1
//! otherwise — a health check that needs no shell and no MongoDB client, so a container image
//! that holds nothing but the binary can run it (`HEALTHCHECK`).
//!
//! Owns: the target's address (from `--uri`, or 127.0.0.1 and the port the server's own
//! `--port`/`MAYFLY_PORT` names) and one OP_MSG round trip over plain TCP with a deadline.
//! Does not own: the message encoding (`wire::client`). TLS is not spoken: a connection string
//! asking for it (`tls=true`/`ssl=true`) or an SRV one is refused rather than pinged in the
//! clear; a server under `--tlsMode requireTLS` is checked with a client that speaks TLS.
//! `ping` needs no authentication in MongoDB, so no credentials are sent (any in the string
//! are skipped).

use super::ToolError;
use crate::wire::client::{op_msg, read_reply, MsgOptions};
use crate::wire::{HEADER_LEN, MAX_MESSAGE_SIZE};
use bson::{doc, Bson};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The port a connection string's host defaults to, as in every MongoDB driver.
const DEFAULT_PORT: u16 = 27017;

#[derive(Debug, clap::Args)]
pub struct PingArgs {
    /// The server, as a `mongodb://` connection string; its first host is pinged. [default:
    /// mongodb://127.0.0.1:PORT]
    #[arg(long, value_name = "URI")]
    pub uri: Option<String>,
    /// The port on 127.0.0.1 to ping when no --uri is given: the server's own setting, so a
    /// container's MAYFLY_PORT serves both.
    #[arg(long, env = "MAYFLY_PORT", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Give up after this many seconds (connecting, sending and waiting for the answer each).
    #[arg(long = "timeout-secs", value_name = "SECONDS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout_secs: u64,
}

/// Pings the server; prints `ok` and returns true when it answered `ok: 1`, returns an error
/// saying why otherwise.
pub fn run(args: &PingArgs) -> Result<bool, ToolError> {
    let (host, port) = match &args.uri {
        Some(uri) => first_host(uri)?,
        None => ("127.0.0.1".to_owned(), args.port),
    };
    ping(&host, port, Duration::from_secs(args.timeout_secs))?;
    println!("ok");
    Ok(true)
}

/// One `{ping: 1}` on `admin` to `host:port`; Ok when the reply says `ok: 1`.
pub fn ping(host: &str, port: u16, timeout: Duration) -> Result<(), ToolError> {
    let target = format!("{host}:{port}");
    let unreachable = |e: std::io::Error| ToolError::Refused(format!("{target}: {e}"));
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(unreachable)?
        .collect();
    let mut last = None;
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut stream = stream.ok_or_else(|| {
        unreachable(last.unwrap_or_else(|| std::io::Error::other("the name has no address")))
    })?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(unreachable)?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(unreachable)?;
    let request = op_msg(1, &doc! {"ping": 1, "$db": "admin"}, &MsgOptions::default())
        .map_err(|e| ToolError::Refused(e.to_string()))?;
    stream.write_all(&request).map_err(unreachable)?;
    let mut frame = vec![0u8; HEADER_LEN];
    stream.read_exact(&mut frame).map_err(unreachable)?;
    let length = frame
        .get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .unwrap_or_default();
    // The declared length is checked before anything is allocated for it.
    let length = usize::try_from(i32::from_le_bytes(length))
        .ok()
        .filter(|n| (HEADER_LEN..=MAX_MESSAGE_SIZE).contains(n))
        .ok_or_else(|| {
            ToolError::Refused(format!(
                "{target}: not a MongoDB reply (bad message length)"
            ))
        })?;
    frame.resize(length, 0);
    stream
        .read_exact(frame.get_mut(HEADER_LEN..).unwrap_or_default())
        .map_err(unreachable)?;
    let reply = read_reply(&frame).map_err(|e| ToolError::Refused(format!("{target}: {e}")))?;
    let ok = match reply.document.get("ok") {
        Some(Bson::Double(v)) => *v == 1.0,
        Some(Bson::Int32(v)) => *v == 1,
        Some(Bson::Int64(v)) => *v == 1,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ToolError::Refused(format!(
            "{target} answered ping with {}",
            reply.document
        )))
    }
}

/// The first host of a `mongodb://` connection string, with its port (27017 when it names none).
pub fn first_host(uri: &str) -> Result<(String, u16), ToolError> {
    let refuse = |why: &str| ToolError::Refused(format!("cannot ping {uri}: {why}"));
    if uri.starts_with("mongodb+srv://") {
        return Err(refuse(
            "SRV connection strings need DNS SRV look-ups and TLS, which ping does not do: give mongodb://HOST:PORT",
        ));
    }
    let rest = uri
        .strip_prefix("mongodb://")
        .ok_or_else(|| refuse("a connection string starts with mongodb://"))?;
    let (authority, options) = match rest.split_once('/') {
        Some((authority, tail)) => (authority, tail.split_once('?').map_or("", |(_, o)| o)),
        None => match rest.split_once('?') {
            Some((authority, options)) => (authority, options),
            None => (rest, ""),
        },
    };
    for option in options.split('&') {
        let (name, value) = option.split_once('=').unwrap_or((option, ""));
        let name = name.to_ascii_lowercase();
        if (name == "tls" || name == "ssl") && value.eq_ignore_ascii_case("true") {
            return Err(refuse(
                "ping does not speak TLS; ping a server that accepts plain connections (tlsMode disabled, allowTLS or preferTLS)",
            ));
        }
    }
    // Credentials end at the last `@` (a percent-encoded password holds none).
    let hosts = authority
        .rsplit_once('@')
        .map_or(authority, |(_, hosts)| hosts);
    let first = hosts.split(',').next().unwrap_or_default();
    let (host, port) = if let Some(bracketed) = first.strip_prefix('[') {
        let (host, tail) = bracketed
            .split_once(']')
            .ok_or_else(|| refuse("an IPv6 address lacks its closing ]"))?;
        (host, tail.strip_prefix(':'))
    } else {
        match first.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (first, None),
        }
    };
    if host.is_empty() {
        return Err(refuse("it names no host"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| refuse("its port is not a number from 1 to 65535"))?,
    };
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (connection string, host and port, or a part of the refusal)
    type Case = (&'static str, Result<(&'static str, u16), &'static str>);

    #[test]
    fn the_first_host_of_a_connection_string_is_pinged() {
        let table: [Case; 14] = [
            ("mongodb://localhost", Ok(("localhost", 27017))),
            ("mongodb://localhost:10255/", Ok(("localhost", 10255))),
            (
                "mongodb://db.example:27018/test?replicaSet=rs0",
                Ok(("db.example", 27018)),
            ),
            ("mongodb://a:1,b:2/?replicaSet=rs0", Ok(("a", 1))),
            ("mongodb://u:p%40ss@h:3/admin", Ok(("h", 3))),
            ("mongodb://[::1]:27019/", Ok(("::1", 27019))),
            ("mongodb://[::1]", Ok(("::1", 27017))),
            ("mongodb://h:4?retrywrites=false", Ok(("h", 4))),
            (
                "mongodb://h/?ssl=true&replicaSet=globaldb",
                Err("does not speak TLS"),
            ),
            ("mongodb://h/?TLS=TRUE", Err("does not speak TLS")),
            ("mongodb+srv://cluster.example/", Err("SRV")),
            ("http://h:1", Err("starts with mongodb://")),
            ("mongodb://h:0/", Err("port is not a number")),
            ("mongodb:///db", Err("names no host")),
        ];
        for (uri, expected) in table {
            match (first_host(uri), expected) {
                (Ok((host, port)), Ok((want_host, want_port))) => {
                    assert_eq!((host.as_str(), port), (want_host, want_port), "{uri}")
                }
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{uri}: {e}"),
                (got, want) => panic!("{uri}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn ping_fails_when_nothing_listens() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let e = ping("127.0.0.1", port, Duration::from_secs(2)).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("127.0.0.1:{port}: ")),
            "{e}"
        );
    }
}
