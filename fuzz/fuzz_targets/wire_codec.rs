//! The wire codec on arbitrary bytes: framing (the length prefix, checked before buffering),
//! the header, OP_MSG sections and checksums, OP_QUERY, and OP_COMPRESSED with each compressor.
//! Nothing may panic or allocate past the declared limits, and a command body the server
//! accepted must encode again and decode to the same bytes.
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
        let bytes = client::op_msg(1, body, &client::MsgOptions::default())
            .unwrap_or_else(|e| panic!("an accepted body does not encode again: {e}"));
        let mut again = BytesMut::from(&bytes[..]);
        let round = match MessageCodec::default().decode(&mut again) {
            Ok(Some(round)) => round,
            other => panic!("a re-encoded OP_MSG does not decode: {other:?}"),
        };
        let Request::Msg(round) = round.request else {
            panic!("an OP_MSG decoded as another opcode");
        };
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

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
