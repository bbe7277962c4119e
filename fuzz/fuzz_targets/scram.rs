//! The server side of a SCRAM conversation over hostile client messages. The input is the
//! client-first message, then (after a 0 byte) the client-final message, then (after another)
//! a third message. Every message either parses or is refused; nothing panics, and a proof
//! the fuzzer did not compute from the password is never accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mayfly::auth::scram::{ClientFirst, Conversation};
use mayfly::auth::{Mechanism, ScramCredential};
use std::sync::OnceLock;

/// Keys for password "pencil" (derived once: PBKDF2 is deliberately slow).
fn credential(mechanism: Mechanism) -> &'static ScramCredential {
    static KEYS: OnceLock<[ScramCredential; 2]> = OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        let derive = |m| {
            ScramCredential::derive(m, "user", "pencil", b"fuzz-salt-16byte", 4096)
                .unwrap_or_else(|e| panic!("derive: {e:?}"))
        };
        [derive(Mechanism::ScramSha1), derive(Mechanism::ScramSha256)]
    });
    match mechanism {
        Mechanism::ScramSha1 => &keys[0],
        Mechanism::ScramSha256 => &keys[1],
    }
}

fn run(data: &[u8]) {
    let Some((&selector, data)) = data.split_first() else {
        return;
    };
    let mechanism = if selector & 1 == 0 {
        Mechanism::ScramSha1
    } else {
        Mechanism::ScramSha256
    };
    let mut messages = data.split(|b| *b == 0);
    let Some(first) = messages.next() else {
        return;
    };
    let Ok(first) = ClientFirst::parse(first) else {
        return;
    };
    let (mut conversation, _) = Conversation::start(
        mechanism,
        first,
        credential(mechanism),
        "fuzzServerNonce",
        selector & 2 == 0,
    );
    for message in messages {
        if let Ok(reply) = conversation.step(message) {
            // A proof matches only when computed from the password; random bytes never do.
            assert!(
                !reply.payload.starts_with("v=") || message.windows(2).any(|w| w == b"p="),
                "a final message without a proof was accepted: {message:?}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
