//! The HTTP side of `--metrics-addr`: `GET /metrics` answers the scrape, anything else 404 or
//! 405. One request per connection (`Connection: close`), as Prometheus scrapes: a scraper
//! opens a connection every interval, so keep-alive would buy nothing. This is the whole of the
//! HTTP it speaks, which is why it is a few lines over tokio rather than an HTTP framework.
//!
//! Hostile input is bounded: the request head may be 8 KiB and must arrive within 10 seconds,
//! and the body of any request is never read.

use super::{render, CONTENT_TYPE};
use crate::command::Shared;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The largest request head read (request line and headers).
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves scrapes until `stop` is cancelled.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, shared).await {
                        tracing::debug!(error = %e, "metrics request failed");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint: cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn answer(mut stream: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(head) => head?,
        Err(_) => return Ok(()),
    };
    let response = match request_target(&head) {
        Some(("GET", "/metrics")) => {
            let rendered = tokio::task::spawn_blocking(move || render(&shared)).await;
            match rendered {
                Ok(Ok(text)) => response("200 OK", CONTENT_TYPE, &text),
                _ => response(
                    "500 Internal Server Error",
                    "text/plain",
                    "cannot render metrics\n",
                ),
            }
        }
        Some((_, "/metrics")) => response("405 Method Not Allowed", "text/plain", "GET only\n"),
        Some(_) => response(
            "404 Not Found",
            "text/plain",
            "the metrics are at /metrics\n",
        ),
        None => response("400 Bad Request", "text/plain", "bad request\n"),
    };
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// Reads until the blank line that ends the head, at most [`MAX_HEAD`] bytes.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            break;
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    Ok(head)
}

/// The method and path of the request line, the query string left off.
fn request_target(head: &[u8]) -> Option<(&str, &str)> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if !version.starts_with("HTTP/1.") || parts.next().is_some() {
        return None;
    }
    let path = target.split('?').next().unwrap_or(target);
    Some((method, path))
}

fn response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[cfg(test)]
mod tests {
    use super::request_target;

    type Case = (&'static [u8], Option<(&'static str, &'static str)>);

    #[test]
    fn request_lines() {
        let cases: [Case; 6] = [
            (
                b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                Some(("GET", "/metrics")),
            ),
            (
                b"GET /metrics?x=1 HTTP/1.0\r\n\r\n",
                Some(("GET", "/metrics")),
            ),
            (
                b"POST /metrics HTTP/1.1\r\n\r\n",
                Some(("POST", "/metrics")),
            ),
            (b"GET / HTTP/1.1\r\n\r\n", Some(("GET", "/"))),
            (b"GET /metrics\r\n\r\n", None),
            (b"\xff\xfe", None),
        ];
        for (head, expected) in cases {
            assert_eq!(request_target(head), expected, "{head:?}");
        }
    }
}
