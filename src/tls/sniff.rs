//! Telling a TLS client from a plain one by the first bytes it sends, without consuming them.
//!
//! A TLS client opens with a handshake record: content type 0x16, then the protocol version
//! (0x03, minor). A MongoDB message opens with its little-endian length, whose first byte can
//! also be 0x16 (a 278-byte `hello`), so on 0x16 the first 16 bytes decide as mongod decides:
//! a client's first message answers nothing, so its header's `responseTo` is 0 or -1, while in a
//! ClientHello those bytes hold part of the handshake length and the version (0x03 0x03), never
//! 0 nor -1.

use std::io;
use std::time::Duration;
use tokio::net::TcpStream;

/// The TLS record type of a handshake message.
const HANDSHAKE_RECORD: u8 = 0x16;

/// Bytes of a MongoDB message header; a ClientHello is always longer.
const HEADER_LEN: usize = 16;

/// How long a client that sent a partial first segment may take to send the rest.
const SNIFF_TIMEOUT: Duration = Duration::from_secs(10);

/// What the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hello {
    Tls,
    Plain,
}

/// Classifies the first bytes a client sent; `None` when more bytes are needed.
pub fn classify(prefix: &[u8]) -> Option<Hello> {
    match prefix.first() {
        None => None,
        Some(&first) if first != HANDSHAKE_RECORD => Some(Hello::Plain),
        Some(_) => {
            let response_to = prefix.get(8..12)?;
            let response_to = i32::from_le_bytes(response_to.try_into().ok()?);
            Some(if response_to == 0 || response_to == -1 {
                Hello::Plain
            } else {
                Hello::Tls
            })
        }
    }
}

/// Waits for the client's first bytes and classifies them, leaving them in the socket;
/// `None` when the client closed the connection before sending anything.
pub async fn peek_hello(stream: &TcpStream) -> io::Result<Option<Hello>> {
    let mut buf = [0u8; HEADER_LEN];
    let started = tokio::time::Instant::now();
    loop {
        let n = stream.peek(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(hello) = classify(buf.get(..n).unwrap_or_default()) {
            return Ok(Some(hello));
        }
        // Only a client whose first segment is shorter than 16 bytes gets here: the data
        // already queued keeps the socket readable, so wait a little instead of spinning.
        if started.elapsed() >= SNIFF_TIMEOUT {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client sent less than a message header",
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The first 16 bytes of a TLS 1.2/1.3 ClientHello (record header, handshake header,
    /// legacy version, start of the random).
    const CLIENT_HELLO: [u8; 16] = [
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x5a, 0x11, 0x22, 0x33,
        0x44,
    ];

    fn header(length: i32, request_id: i32, response_to: i32) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&length.to_le_bytes());
        h.extend_from_slice(&request_id.to_le_bytes());
        h.extend_from_slice(&response_to.to_le_bytes());
        h.extend_from_slice(&2013i32.to_le_bytes());
        h
    }

    #[test]
    fn first_bytes_decide_tls_or_plain() {
        let table: Vec<(&str, Vec<u8>, Option<Hello>)> = vec![
            ("nothing yet", vec![], None),
            ("a ClientHello", CLIENT_HELLO.to_vec(), Some(Hello::Tls)),
            ("half a ClientHello", CLIENT_HELLO[..5].to_vec(), None),
            ("a plain hello", header(300, 1, 0), Some(Hello::Plain)),
            ("a plain first byte alone", vec![0x2c], Some(Hello::Plain)),
            // 278 = 0x116: a plain message whose first byte is the handshake record type.
            (
                "a 278-byte plain message",
                header(278, 7, 0),
                Some(Hello::Plain),
            ),
            ("responseTo -1", header(278, 7, -1), Some(Hello::Plain)),
            ("0x16 and a reply id", header(278, 7, 5), Some(Hello::Tls)),
        ];
        for (name, bytes, want) in table {
            assert_eq!(classify(&bytes), want, "{name}");
        }
    }

    #[tokio::test]
    async fn peeking_leaves_the_bytes_for_the_reader() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let hello = header(300, 1, 0);
        client.write_all(&hello).await.unwrap();
        assert_eq!(peek_hello(&server).await.unwrap(), Some(Hello::Plain));
        let mut read = vec![0u8; hello.len()];
        server.read_exact(&mut read).await.unwrap();
        assert_eq!(read, hello);

        // Split across two segments: the sniff waits for the header.
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        client.write_all(&CLIENT_HELLO[..3]).await.unwrap();
        let peek = tokio::spawn(async move { peek_hello(&server).await.unwrap() });
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.write_all(&CLIENT_HELLO[3..]).await.unwrap();
        assert_eq!(peek.await.unwrap(), Some(Hello::Tls));

        // Closed before sending anything.
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        drop(client);
        assert_eq!(peek_hello(&server).await.unwrap(), None);
    }
}
