//! The wire codec on arbitrary bytes: framing (the length prefix, checked before buffering),
//! the header, OP_MSG sections and checksums, OP_QUERY, and OP_COMPRESSED with each compressor.
//! Nothing may panic or allocate past the declared limits, and a command body the server
//! accepted must encode again and decode to the same bytes. An `insert`'s document sequence,
//! which the server keeps as bytes after validating them without decoding, must decode (the
//! validation accepts nothing the decoder refuses) and survive the round trip too.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mayfly::wire::{client, MessageCodec, Request};
use tokio_util::codec::Decoder;

fn run(data: &[u8]) {
    let mut codec = MessageCodec::default();
    let mut buf = BytesMut::from(data);
    // A stream of messages, as a connection reads them, until one is incomplete or bad.
    while let Ok(Some(incoming)) = codec.decode(&mut buf) {
        let Request::Msg(msg) = &incoming.request else {
            continue;
        };
        let Ok(body) = &msg.body else { continue };
        let documents = kept_documents(msg.documents.as_deref());
        let options = client::MsgOptions {
            sequences: documents
                .iter()
                .map(|docs| ("documents", docs.clone()))
                .collect(),
            ..Default::default()
        };
        let bytes = client::op_msg(1, body, &options)
            .unwrap_or_else(|e| panic!("an accepted body does not encode again: {e}"));
        let mut again = BytesMut::from(&bytes[..]);
        let round = match MessageCodec::default().decode(&mut again) {
            Ok(Some(round)) => round,
            other => panic!("a re-encoded OP_MSG does not decode: {other:?}"),
        };
        let Request::Msg(round) = round.request else {
            panic!("an OP_MSG decoded as another opcode");
        };
        let round_documents = kept_documents(round.documents.as_deref());
        let encoded = |docs: &Option<Vec<bson::Document>>| {
            docs.as_ref().map(|docs| {
                docs.iter()
                    .map(|d| bson::to_vec(d).ok())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            encoded(&round_documents),
            encoded(&documents),
            "a document sequence changed in a round trip"
        );
        let round = round
            .body
            .unwrap_or_else(|e| panic!("an accepted body is refused after a round trip: {e:?}"));
        // Bytes, not values: NaN is not equal to itself.
        assert_eq!(
            bson::to_vec(&round).ok(),
            bson::to_vec(body).ok(),
            "a body changed in a round trip"
        );
    }
}

/// The documents of a sequence kept as bytes, decoded; a kept document that does not decode is
/// a finding.
fn kept_documents(raw: Option<&mayfly::protocol::RawDocuments>) -> Option<Vec<bson::Document>> {
    let raw = raw?;
    Some(
        raw.iter()
            .map(|bytes| {
                bson::RawDocument::from_bytes(bytes)
                    .and_then(bson::Document::try_from)
                    .unwrap_or_else(|e| panic!("a validated document does not decode: {e}"))
            })
            .collect(),
    )
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
