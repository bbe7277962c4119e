//! Codec tests: round trips of every opcode and section kind, captured driver handshakes, and
//! every malformed input the issue names, none of which may panic.

use super::client::{self, MsgOptions};
use super::codec::decode_frame;
use super::*;
use bson::{doc, Document};
use bytes::BytesMut;
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

fn decode_all(bytes: &[u8]) -> Result<Option<Incoming>, WireError> {
    let mut buf = BytesMut::from(bytes);
    MessageCodec::default().decode(&mut buf)
}

fn msg_body(incoming: Incoming) -> Document {
    match incoming.request {
        Request::Msg(m) => m.body.unwrap(),
        other => panic!("expected OP_MSG, got {other:?}"),
    }
}

fn hex(s: &str) -> Vec<u8> {
    let clean: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..clean.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn op_msg_body_round_trips() {
    let body = doc! {"ping": 1, "$db": "admin"};
    let bytes = client::op_msg(7, &body, &MsgOptions::default()).unwrap();
    let incoming = decode_all(&bytes).unwrap().unwrap();
    assert_eq!(incoming.header.request_id, 7);
    assert_eq!(incoming.compressor, None);
    assert_eq!(msg_body(incoming), body);
}

#[test]
fn kind_1_sequences_are_merged_into_the_body() {
    let body = doc! {"update": "c", "$db": "test"};
    let updates = vec![doc! {"q": {}, "u": {"$set": {"a": 1}}}];
    let opts = MsgOptions {
        sequences: vec![("updates", updates.clone())],
        ..Default::default()
    };
    let bytes = client::op_msg(1, &body, &opts).unwrap();
    let merged = msg_body(decode_all(&bytes).unwrap().unwrap());
    assert_eq!(merged.get_array("updates").unwrap().len(), 1);
    assert_eq!(merged.get_str("update").unwrap(), "c");
}

#[test]
fn an_inserts_document_sequence_is_kept_as_bytes() {
    let body = doc! {"insert": "c", "$db": "test"};
    let docs = vec![doc! {"_id": 1, "a": [1, {"b": "x"}]}, doc! {"_id": 2}];
    let opts = MsgOptions {
        sequences: vec![("documents", docs.clone())],
        ..Default::default()
    };
    let bytes = client::op_msg(1, &body, &opts).unwrap();
    let Request::Msg(msg) = decode_all(&bytes).unwrap().unwrap().request else {
        panic!("not an OP_MSG");
    };
    assert_eq!(msg.body.unwrap(), body);
    let kept = msg.documents.unwrap();
    let kept: Vec<Vec<u8>> = kept.iter().map(<[u8]>::to_vec).collect();
    let sent: Vec<Vec<u8>> = docs.iter().map(|d| bson::to_vec(d).unwrap()).collect();
    assert_eq!(kept, sent);
}

/// An insert whose document sequence holds `doc`'s bytes as they are, decoded.
fn insert_of_bytes(doc: &[u8]) -> op_msg::OpMsg {
    let body = doc! {"insert": "c", "$db": "test"};
    let mut bytes = client::op_msg(1, &body, &MsgOptions::default()).unwrap();
    // Append a kind-1 section holding `doc`, and fix the message length.
    let mut section = vec![1u8];
    let size = 4 + "documents".len() + 1 + doc.len();
    section.extend_from_slice(&(size as i32).to_le_bytes());
    section.extend_from_slice(b"documents\0");
    section.extend_from_slice(doc);
    bytes.extend_from_slice(&section);
    let total = bytes.len() as i32;
    bytes[..4].copy_from_slice(&total.to_le_bytes());
    let Request::Msg(msg) = decode_all(&bytes).unwrap().unwrap().request else {
        panic!("not an OP_MSG");
    };
    msg
}

/// A document with `levels` levels below it, each an embedded document, an array or a
/// code-with-scope's scope in turn, encoded by hand (no recursion).
fn nested_levels(levels: usize) -> Vec<u8> {
    let mut inner = vec![5u8, 0, 0, 0, 0];
    for level in (0..levels).rev() {
        let value = match level % 3 {
            0 => [&[0x03u8, b'a', 0][..], &inner].concat(),
            1 => [&[0x04u8, b'0', 0][..], &inner].concat(),
            _ => {
                // Code with scope: total length, the code string, the scope.
                let code = [&2i32.to_le_bytes()[..], b"f\0"].concat();
                let total = (4 + code.len() + inner.len()) as i32;
                [&[0x0fu8, b'c', 0][..], &total.to_le_bytes(), &code, &inner].concat()
            }
        };
        let len = (4 + value.len() + 1) as i32;
        inner = [&len.to_le_bytes()[..], &value, &[0]].concat();
    }
    inner
}

/// A kept document's depth is checked in the walk that validates it, and counted as
/// `depth::check_request` counts a request's: up to 200 levels below it, of every kind.
#[test]
fn a_kept_document_may_be_nested_200_levels_below_it() {
    for levels in [0, 1, 2, 3, 199, 200, 201, 202, 1_000] {
        let doc = nested_levels(levels);
        let reference = crate::query::depth::check_request(&doc).map_err(|e| e.code);
        let msg = insert_of_bytes(&doc);
        let got = msg.body.map(|_| ()).map_err(|e| e.code);
        assert_eq!(got, reference, "{levels} levels");
        assert_eq!(got.is_ok(), levels <= 200, "{levels} levels");
        if levels > 200 {
            assert_eq!(got, Err(crate::error::ErrorCode::Overflow));
        }
    }
}

#[test]
fn a_kept_document_is_validated_as_a_decoded_one_would_be() {
    // A string whose bytes are not UTF-8, deep inside an array.
    let mut bad = bson::to_vec(&doc! {"a": [{"s": "xy"}]}).unwrap();
    let at = bad.windows(2).position(|w| w == b"xy").unwrap();
    bad[at] = 0xff;
    let msg = insert_of_bytes(&bad);
    let error = msg.body.unwrap_err();
    assert_eq!(
        error.code,
        crate::error::ErrorCode::InvalidBSON,
        "{error:?}"
    );
    assert_eq!(msg.documents, None);
}

#[test]
fn a_sequence_that_repeats_a_body_field_is_a_command_error() {
    let body = doc! {"insert": "c", "documents": [], "$db": "test"};
    let opts = MsgOptions {
        sequences: vec![("documents", vec![doc! {"_id": 1}])],
        ..Default::default()
    };
    let bytes = client::op_msg(1, &body, &opts).unwrap();
    match decode_all(&bytes).unwrap().unwrap().request {
        Request::Msg(m) => assert_eq!(m.body.unwrap_err().code, crate::error::ErrorCode::BadValue),
        other => panic!("{other:?}"),
    }
}

#[test]
fn flags_are_reported() {
    let body = doc! {"insert": "c", "$db": "test"};
    let opts = MsgOptions {
        flags: MsgFlags::MORE_TO_COME | MsgFlags::EXHAUST_ALLOWED,
        ..Default::default()
    };
    let bytes = client::op_msg(1, &body, &opts).unwrap();
    match decode_all(&bytes).unwrap().unwrap().request {
        Request::Msg(m) => {
            assert!(m.flags.more_to_come());
            assert!(m.flags.exhaust_allowed());
            assert!(!m.flags.checksum_present());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_valid_checksum_is_accepted() {
    let body = doc! {"ping": 1, "$db": "admin"};
    let opts = MsgOptions {
        checksum: true,
        ..Default::default()
    };
    let bytes = client::op_msg(3, &body, &opts).unwrap();
    assert_eq!(msg_body(decode_all(&bytes).unwrap().unwrap()), body);
}

#[test]
fn a_bad_checksum_is_a_framing_error() {
    let body = doc! {"ping": 1, "$db": "admin"};
    let opts = MsgOptions {
        checksum: true,
        ..Default::default()
    };
    let mut bytes = client::op_msg(3, &body, &opts).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    assert!(matches!(
        decode_all(&bytes),
        Err(WireError::ChecksumMismatch { .. })
    ));
}

#[test]
fn every_compressor_round_trips_a_request() {
    let body = doc! {"insert": "c", "$db": "test", "pad": "x".repeat(10_000)};
    for c in Compressor::ALL {
        let opts = MsgOptions {
            compressor: Some(c),
            checksum: true,
            ..Default::default()
        };
        let bytes = client::op_msg(9, &body, &opts).unwrap();
        assert!(bytes.len() < 2_000, "{} did not compress", c.name());
        let incoming = decode_all(&bytes).unwrap().unwrap();
        assert_eq!(incoming.compressor, Some(c));
        assert_eq!(msg_body(incoming), body);
    }
}

#[test]
fn noop_compression_is_accepted() {
    let plain = client::op_msg(1, &doc! {"ping": 1, "$db": "a"}, &MsgOptions::default()).unwrap();
    let payload = &plain[HEADER_LEN..];
    let mut wrapped = Vec::new();
    wrapped.extend_from_slice(&2013i32.to_le_bytes());
    wrapped.extend_from_slice(&(payload.len() as i32).to_le_bytes());
    wrapped.push(0);
    wrapped.extend_from_slice(payload);
    let bytes = frame(2012, &wrapped);
    let incoming = decode_all(&bytes).unwrap().unwrap();
    assert_eq!(msg_body(incoming).get_i32("ping").unwrap(), 1);
}

#[test]
fn replies_round_trip_through_the_encoder() {
    let doc = doc! {"ok": 1.0, "n": 3};
    for compressor in [
        None,
        Some(Compressor::Snappy),
        Some(Compressor::Zlib),
        Some(Compressor::Zstd),
    ] {
        let mut buf = BytesMut::new();
        let mut codec = MessageCodec::default();
        codec
            .encode(
                Outgoing {
                    response_to: 42,
                    body: ReplyBody::Msg(doc.clone()),
                    compressor,
                },
                &mut buf,
            )
            .unwrap();
        assert_eq!(codec.bytes_encoded, buf.len() as u64);
        let reply = client::read_reply(&buf).unwrap();
        assert_eq!(reply.header.response_to, 42);
        assert_eq!(reply.op_code, 2013);
        assert_eq!(reply.compressed, compressor.is_some());
        assert_eq!(reply.document, doc);
    }
}

#[test]
fn op_msg_replies_have_no_flags_and_one_body_section() {
    let mut buf = BytesMut::new();
    MessageCodec::default()
        .encode(
            Outgoing {
                response_to: 1,
                body: ReplyBody::Msg(doc! {"ok": 1.0}),
                compressor: None,
            },
            &mut buf,
        )
        .unwrap();
    assert_eq!(&buf[16..20], &[0, 0, 0, 0], "flagBits must be 0");
    assert_eq!(buf[20], 0, "one kind-0 section");
    let doc_len = i32::from_le_bytes(buf[21..25].try_into().unwrap()) as usize;
    assert_eq!(
        buf.len(),
        21 + doc_len,
        "nothing after the body: no checksum"
    );
}

#[test]
fn op_query_round_trips_and_op_reply_answers_it() {
    let query = doc! {"isMaster": 1, "helloOk": true};
    let bytes = client::op_query(5, "admin.$cmd", &query).unwrap();
    let incoming = decode_all(&bytes).unwrap().unwrap();
    match incoming.request {
        Request::Query(q) => {
            assert_eq!(q.command_database(), Some("admin"));
            assert_eq!(q.number_to_return, -1);
            assert_eq!(q.query.unwrap(), query);
        }
        other => panic!("{other:?}"),
    }
    let mut buf = BytesMut::new();
    MessageCodec::default()
        .encode(
            Outgoing {
                response_to: 5,
                body: ReplyBody::Reply(doc! {"ismaster": true, "ok": 1.0}),
                compressor: None,
            },
            &mut buf,
        )
        .unwrap();
    let reply = client::read_reply(&buf).unwrap();
    assert_eq!(reply.op_code, 1);
    assert_eq!(reply.header.response_to, 5);
    assert!(reply.document.get_bool("ismaster").unwrap());
    // responseFlags 0, cursorID 0, startingFrom 0, numberReturned 1.
    assert_eq!(
        &buf[16..36],
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    );
}

#[test]
fn op_query_outside_cmd_has_no_command_database() {
    let bytes = client::op_query(5, "test.users", &doc! {"a": 1}).unwrap();
    match decode_all(&bytes).unwrap().unwrap().request {
        Request::Query(q) => assert_eq!(q.command_database(), None),
        other => panic!("{other:?}"),
    }
}

/// A frame with a header for `op_code` around `payload`.
fn frame(op_code: i32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((16 + payload.len()) as i32).to_le_bytes());
    out.extend_from_slice(&1i32.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&op_code.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

#[test]
fn a_truncated_frame_waits_for_more_bytes_and_never_allocates_its_length() {
    let bytes = client::op_msg(1, &doc! {"ping": 1, "$db": "a"}, &MsgOptions::default()).unwrap();
    for cut in 0..bytes.len() {
        assert!(decode_all(&bytes[..cut]).unwrap().is_none(), "cut at {cut}");
    }
    // A declared 40 MB message with 20 bytes present: nothing is decoded (the buffer's growth
    // is tested beside the codec).
    let mut huge = frame(2013, &[0; 4]);
    huge[..4].copy_from_slice(&40_000_000i32.to_le_bytes());
    let mut buf = BytesMut::from(&huge[..]);
    assert!(MessageCodec::default().decode(&mut buf).unwrap().is_none());
}

#[test]
fn a_stream_that_ends_mid_frame_is_an_error() {
    let bytes = client::op_msg(1, &doc! {"ping": 1, "$db": "a"}, &MsgOptions::default()).unwrap();
    let mut buf = BytesMut::from(&bytes[..bytes.len() - 3]);
    assert!(MessageCodec::default().decode_eof(&mut buf).is_err());
}

#[test]
fn lengths_outside_16_to_48mb_are_framing_errors() {
    for len in [0i32, 15, -1, i32::MIN, 48_000_001, i32::MAX] {
        let mut bytes = frame(2013, &[0; 8]);
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        assert!(
            matches!(decode_all(&bytes), Err(WireError::BadLength(_))),
            "length {len}"
        );
    }
}

#[test]
fn a_sequence_whose_size_overruns_is_a_framing_error() {
    let mut payload = Vec::new();
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.push(0);
    doc! {"insert": "c", "$db": "t"}
        .to_writer(&mut payload)
        .unwrap();
    payload.push(1);
    payload.extend_from_slice(&1000i32.to_le_bytes());
    payload.extend_from_slice(b"documents\0");
    let bytes = frame(2013, &payload);
    assert!(matches!(
        decode_all(&bytes),
        Err(WireError::Malformed { .. })
    ));
    // A size below its own four bytes, too.
    let mut payload2 = payload.clone();
    let at = payload2.len() - 14;
    payload2[at..at + 4].copy_from_slice(&2i32.to_le_bytes());
    assert!(decode_all(&frame(2013, &payload2)).is_err());
}

#[test]
fn an_unknown_section_kind_is_a_framing_error() {
    let mut payload = 0u32.to_le_bytes().to_vec();
    payload.push(7);
    payload.extend_from_slice(&[5, 0, 0, 0, 0]);
    assert!(matches!(
        decode_all(&frame(2013, &payload)),
        Err(WireError::Malformed { .. })
    ));
}

#[test]
fn unknown_required_flag_bits_are_a_framing_error() {
    let mut payload = (1u32 << 5).to_le_bytes().to_vec();
    payload.push(0);
    doc! {"ping": 1}.to_writer(&mut payload).unwrap();
    assert!(decode_all(&frame(2013, &payload)).is_err());
    // Unknown optional (high) bits are ignored.
    let mut payload = (1u32 << 20).to_le_bytes().to_vec();
    payload.push(0);
    doc! {"ping": 1}.to_writer(&mut payload).unwrap();
    assert!(decode_all(&frame(2013, &payload)).is_ok());
}

#[test]
fn garbage_bson_is_a_command_error_not_a_framing_error() {
    let mut payload = 0u32.to_le_bytes().to_vec();
    payload.push(0);
    // Declares 12 bytes: an element of unknown type 0x7f.
    payload.extend_from_slice(&[12, 0, 0, 0, 0x7f, b'a', 0, 1, 2, 3, 4, 0]);
    let incoming = decode_all(&frame(2013, &payload)).unwrap().unwrap();
    match incoming.request {
        Request::Msg(m) => assert_eq!(
            m.body.unwrap_err().code,
            crate::error::ErrorCode::InvalidBSON
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_body_section_is_a_command_error() {
    let payload = 0u32.to_le_bytes().to_vec();
    match decode_all(&frame(2013, &payload)).unwrap().unwrap().request {
        Request::Msg(m) => assert!(m.body.is_err()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_compressor_id_is_a_framing_error() {
    let mut payload = 2013i32.to_le_bytes().to_vec();
    payload.extend_from_slice(&10i32.to_le_bytes());
    payload.push(9);
    payload.extend_from_slice(&[0; 10]);
    assert!(matches!(
        decode_all(&frame(2012, &payload)),
        Err(WireError::UnknownCompressor(9))
    ));
}

#[test]
fn a_decompressed_size_that_lies_is_a_framing_error() {
    let plain = client::op_msg(1, &doc! {"ping": 1, "$db": "a"}, &MsgOptions::default()).unwrap();
    let inner = &plain[HEADER_LEN..];
    for c in Compressor::ALL {
        for declared in [
            inner.len() as i32 - 1,
            inner.len() as i32 + 1,
            40_000_000,
            -5,
        ] {
            let data = c.compress(inner).unwrap();
            let mut payload = 2013i32.to_le_bytes().to_vec();
            payload.extend_from_slice(&declared.to_le_bytes());
            payload.push(c.id());
            payload.extend_from_slice(&data);
            assert!(
                decode_all(&frame(2012, &payload)).is_err(),
                "{} declared {declared}",
                c.name()
            );
        }
    }
}

#[test]
fn corrupt_compressed_data_is_a_framing_error() {
    for c in Compressor::ALL {
        let mut payload = 2013i32.to_le_bytes().to_vec();
        payload.extend_from_slice(&100i32.to_le_bytes());
        payload.push(c.id());
        payload.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5]);
        assert!(decode_all(&frame(2012, &payload)).is_err(), "{}", c.name());
    }
}

#[test]
fn a_compressed_reply_opcode_inside_op_compressed_is_refused() {
    let mut payload = 2012i32.to_le_bytes().to_vec();
    payload.extend_from_slice(&0i32.to_le_bytes());
    payload.push(0);
    assert!(decode_all(&frame(2012, &payload)).is_err());
}

/// The first message of real drivers, captured on the wire against mayfly
/// (tests/fixtures/handshakes/*.hex).
#[test]
fn captured_driver_handshakes_decode() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/handshakes");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("hex") {
            continue;
        }
        let bytes = hex(&std::fs::read_to_string(&path).unwrap());
        let incoming = decode_frame(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let command = match incoming.request {
            Request::Msg(m) => m.body.unwrap(),
            Request::Query(q) => {
                assert_eq!(q.command_database(), Some("admin"), "{}", path.display());
                q.query.unwrap()
            }
            Request::Legacy(op) => panic!("{}: {op:?}", path.display()),
        };
        let name = command.keys().next().unwrap().as_str();
        assert!(
            ["isMaster", "ismaster", "hello"].contains(&name),
            "{}: first command {name}",
            path.display()
        );
        assert!(
            command.get_document("client").is_ok(),
            "{}: no client metadata",
            path.display()
        );
        seen += 1;
    }
    assert!(
        seen >= 3,
        "expected captured handshakes in {}",
        dir.display()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Arbitrary bytes never panic the decoder.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_all(&bytes);
        let _ = decode_frame(&bytes);
    }

    /// Arbitrary payloads behind a well-formed header of each opcode never panic either.
    #[test]
    fn arbitrary_payloads_never_panic(
        op in prop::sample::select(vec![2013, 2004, 2012, 1, 2001, 2002, 2005, 2006, 2007, 2010]),
        payload in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let _ = decode_all(&frame(op, &payload));
    }

    /// Mutating one byte of a valid message never panics.
    #[test]
    fn mutated_messages_never_panic(at in 0usize..200, value in any::<u8>(), compress in 0usize..4) {
        let body = doc! {"insert": "c", "$db": "t", "pad": "abcdefgh"};
        let opts = MsgOptions {
            sequences: vec![("documents", vec![doc! {"_id": 1, "x": "y"}])],
            checksum: compress % 2 == 0,
            compressor: Compressor::ALL.get(compress).copied(),
            ..Default::default()
        };
        let mut bytes = client::op_msg(1, &body, &opts).unwrap();
        let i = at % bytes.len();
        bytes[i] = value;
        let _ = decode_all(&bytes);
    }
}
