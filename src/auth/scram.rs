//! The server side of a SCRAM-SHA-1 / SCRAM-SHA-256 conversation (RFC 5802, RFC 7677) as a
//! state machine over the client's messages: parse client-first, answer server-first, verify
//! client-final's proof, answer server-final, and (without `skipEmptyExchange`) take the empty
//! third message.
//!
//! Pure: the caller finds the user (the engine's catalog), supplies the random server nonce
//! ([`server_nonce`]) and decides what a failure means on the wire. Errors carry mongod's
//! internal code and detail for the server's log; mongod tells the client only
//! "Authentication failed." (18), and so does the command layer.

use super::credentials::{hash, hmac, Mechanism, ScramCredential};
use crate::error::{Error, ErrorCode, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use subtle::ConstantTimeEq;

/// Bytes of randomness in a server nonce (mongod: three 64-bit words, base64: 32 characters).
const SERVER_NONCE_BYTES: usize = 24;

/// A fresh server nonce: 24 random bytes, base64.
pub fn server_nonce() -> Result<String> {
    let mut bytes = [0u8; SERVER_NONCE_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::internal(format!("no random bytes for a nonce: {e}")))?;
    Ok(STANDARD.encode(bytes))
}

/// A parsed client-first message: `gs2-header client-first-message-bare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The user name, `=2C`/`=3D` unescaped.
    pub user: String,
    nonce: String,
    gs2_header: String,
    bare: String,
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::BadValue, message)
}

impl ClientFirst {
    /// Parses `n,,n=<user>,r=<nonce>[,<extensions>]` (RFC 5802 §7 `client-first-message`).
    /// The channel-binding flag may be `n` or `y` (the client would bind, but this server
    /// offers no `-PLUS` mechanism); `p=` asks for binding and is refused. An authorization
    /// identity must name the user itself, as mongod requires. A reserved `m=` attribute fails
    /// the authentication wherever it appears (§5.1: "if present in the first message, the
    /// server MUST fail the authentication"); other extensions must be well formed and are
    /// ignored.
    pub fn parse(payload: &[u8]) -> Result<ClientFirst> {
        let text = std::str::from_utf8(payload)
            .map_err(|_| bad("SCRAM client-first message is not valid UTF-8"))?;
        let (flag, rest) = text
            .split_once(',')
            .ok_or_else(|| bad(count_error("first", 1)))?;
        if flag.starts_with("p=") {
            return Err(bad("Server does not support channel binding"));
        }
        if flag != "n" && flag != "y" {
            return Err(bad(format!(
                "Incorrect SCRAM client message prefix: {flag}"
            )));
        }
        let (authzid, bare) = rest
            .split_once(',')
            .ok_or_else(|| bad(count_error("first", 2)))?;
        let authzid = match authzid {
            "" => None,
            a => Some(
                a.strip_prefix("a=")
                    .ok_or_else(|| bad(format!("Incorrect SCRAM authzid: {a}")))
                    .and_then(unescape_name)?,
            ),
        };
        if bare.starts_with("m=") {
            return Err(bad("SCRAM mandatory extensions are not supported"));
        }
        let mut fields = bare.split(',');
        let user = match fields.next() {
            Some(f) if f.len() > 2 && f.starts_with("n=") => {
                unescape_name(f.get(2..).unwrap_or(""))?
            }
            Some(f) => return Err(bad(format!("Invalid SCRAM user name: {f}"))),
            None => return Err(bad(count_error("first", 2))),
        };
        if let Some(authzid) = authzid {
            if authzid != user {
                return Err(bad(format!(
                    "SCRAM user name {user} does not match authzid {authzid}"
                )));
            }
        }
        let nonce = match fields.next() {
            Some(f) if f.len() >= 6 && f.starts_with("r=") && is_printable(f) => {
                f.get(2..).unwrap_or("").to_owned()
            }
            Some(f) => return Err(bad(format!("Invalid SCRAM client nonce: {f}"))),
            None => return Err(bad(count_error("first", 3))),
        };
        check_extensions(fields)?;
        Ok(ClientFirst {
            user,
            nonce,
            gs2_header: format!("{flag},{},", authzid_text(rest)),
            bare: bare.to_owned(),
        })
    }
}

/// The authzid part of the gs2 header as the client sent it (between the two commas).
fn authzid_text(after_flag: &str) -> &str {
    after_flag.split(',').next().unwrap_or("")
}

fn count_error(which: &str, got: usize) -> String {
    format!("Incorrect number of arguments for {which} SCRAM client message, got {got} expected at least 3")
}

/// The attributes RFC 5802 defines (§5.1), each with its own place in a message: out of it,
/// as an extension, it is an error rather than something to ignore.
const DEFINED_ATTRIBUTES: &[u8] = b"anmrcsipve";

/// RFC 5802 `extensions`: `attr-val *("," attr-val)`, one letter, `=`, a non-empty value
/// without NUL. Unknown ones are ignored ("unrecognized attributes ... MUST be ignored"); the
/// reserved `m` fails the authentication, as at the start of the message.
fn check_extensions<'a>(fields: impl Iterator<Item = &'a str>) -> Result<()> {
    for field in fields {
        if field.starts_with("m=") {
            return Err(bad("SCRAM mandatory extensions are not supported"));
        }
        let bytes = field.as_bytes();
        let well_formed = matches!(bytes, [attr, b'=', _, ..] if attr.is_ascii_alphabetic())
            && !bytes.contains(&0);
        let defined = bytes
            .first()
            .is_some_and(|a| DEFINED_ATTRIBUTES.contains(a));
        if !well_formed || defined {
            return Err(bad(format!("Invalid SCRAM extension: {field}")));
        }
    }
    Ok(())
}

/// RFC 5802 §5.1: `=2C` is `,` and `=3D` is `=`; any other `=` fails the authentication, and
/// so does NUL (a `saslname` holds no NUL).
fn unescape_name(escaped: &str) -> Result<String> {
    if escaped.contains('\0') {
        return Err(bad(format!(
            "Invalid SCRAM user name: {}",
            escaped.replace('\0', "\\0")
        )));
    }
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(at) = rest.find('=') {
        out.push_str(rest.get(..at).unwrap_or(""));
        let after = rest.get(at..).unwrap_or("");
        if let Some(r) = after.strip_prefix("=2C") {
            out.push(',');
            rest = r;
        } else if let Some(r) = after.strip_prefix("=3D") {
            out.push('=');
            rest = r;
        } else {
            return Err(bad(format!("Invalid SCRAM user name escape in: {escaped}")));
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// RFC 5802 `printable`: the nonce's characters, `,` excluded by the split.
fn is_printable(field: &str) -> bool {
    field.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// What a step answers: the payload, and whether the conversation is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub payload: String,
    pub done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Server-first sent; client-final expected.
    AwaitingProof,
    /// Server-final sent with `done: false`; the client's empty message completes it.
    AwaitingEmpty,
    /// Succeeded or failed: no further message is accepted.
    Over,
}

/// One server-side SCRAM conversation after its first step.
#[derive(Clone)]
pub struct Conversation {
    mechanism: Mechanism,
    gs2_header: String,
    nonce: String,
    auth_message: String,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
    skip_empty_exchange: bool,
    state: State,
}

impl Conversation {
    /// Step 1: answers the client-first message with `r=<cnonce><snonce>,s=<salt>,i=<n>`.
    pub fn start(
        mechanism: Mechanism,
        first: ClientFirst,
        credential: &ScramCredential,
        server_nonce: &str,
        skip_empty_exchange: bool,
    ) -> (Conversation, Reply) {
        let nonce = format!("{}{server_nonce}", first.nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            STANDARD.encode(&credential.salt),
            credential.iteration_count
        );
        let conversation = Conversation {
            mechanism,
            gs2_header: first.gs2_header,
            nonce,
            auth_message: format!("{},{server_first}", first.bare),
            stored_key: credential.stored_key.clone(),
            server_key: credential.server_key.clone(),
            skip_empty_exchange,
            state: State::AwaitingProof,
        };
        let reply = Reply {
            payload: server_first,
            done: false,
        };
        (conversation, reply)
    }

    /// The mechanism this conversation speaks.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The client's next message. Any error ends the conversation.
    pub fn step(&mut self, payload: &[u8]) -> Result<Reply> {
        let result = match self.state {
            State::AwaitingProof => self.verify_proof(payload),
            State::AwaitingEmpty => Ok(Reply {
                payload: String::new(),
                done: true,
            }),
            State::Over => Err(Error::new(
                ErrorCode::AuthenticationFailed,
                "Invalid SCRAM authentication step: the conversation is over",
            )),
        };
        self.state = match (&result, self.state) {
            (Ok(reply), State::AwaitingProof) if !reply.done => State::AwaitingEmpty,
            _ => State::Over,
        };
        result
    }

    /// Step 2: `c=<gs2 header b64>,r=<nonce>[,ext],p=<proof>` → `v=<ServerSignature>`
    /// (RFC 5802 §7 `client-final-message`): the fields in that order, `p=` last, `c=` the
    /// base64 of the gs2 header the first message had (no channel-binding data: this server
    /// binds none), the nonce exactly server-first's, extensions as in the first message. No
    /// error message repeats the proof: they are logged.
    fn verify_proof(&self, payload: &[u8]) -> Result<Reply> {
        let text = std::str::from_utf8(payload)
            .map_err(|_| bad("SCRAM client-final message is not valid UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(',')
            .ok_or_else(|| bad(count_error("second", 1)))?;
        let proof = proof
            .strip_prefix("p=")
            .filter(|p| !p.is_empty())
            .ok_or_else(|| bad("Incorrect SCRAM ClientProof"))?;
        let mut fields = without_proof.split(',');
        let binding = match fields.next() {
            Some(f) if f.len() > 2 && f.starts_with("c=") => f.get(2..).unwrap_or(""),
            Some(f) => return Err(bad(format!("Incorrect SCRAM channel binding: {f}"))),
            None => return Err(bad(count_error("second", 1))),
        };
        let binding = STANDARD
            .decode(binding)
            .map_err(|_| bad(format!("Incorrect SCRAM channel binding: c={binding}")))?;
        if binding != self.gs2_header.as_bytes() {
            return Err(bad(
                "SCRAM channel binding does not match the client-first message's gs2 header",
            ));
        }
        let nonce = match fields.next() {
            Some(f) if f.len() >= 6 && f.starts_with("r=") => f.get(2..).unwrap_or(""),
            Some(f) => return Err(bad(format!("Incorrect SCRAM client|server nonce: {f}"))),
            None => return Err(bad(count_error("second", 2))),
        };
        if nonce != self.nonce {
            return Err(bad(format!(
                "Unmatched SCRAM nonce received from client in second step, expected {} but received {nonce}",
                self.nonce
            )));
        }
        check_extensions(fields)?;
        let proof = STANDARD
            .decode(proof)
            .map_err(|_| bad("Incorrect SCRAM ClientProof"))?;
        let auth_message = format!("{},{without_proof}", self.auth_message);
        let signature = hmac(self.mechanism, &self.stored_key, auth_message.as_bytes())?;
        if proof.len() != signature.len() {
            return Err(mismatch());
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(signature.iter())
            .map(|(p, s)| p ^ s)
            .collect();
        let candidate = hash(self.mechanism, &client_key);
        if !bool::from(candidate.ct_eq(&self.stored_key)) {
            return Err(mismatch());
        }
        let server_signature = hmac(self.mechanism, &self.server_key, auth_message.as_bytes())?;
        Ok(Reply {
            payload: format!("v={}", STANDARD.encode(server_signature)),
            done: self.skip_empty_exchange,
        })
    }
}

/// Shows where the conversation is, never the user's keys.
impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("mechanism", &self.mechanism)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

fn mismatch() -> Error {
    Error::new(
        ErrorCode::AuthenticationFailed,
        "SCRAM authentication failed, storedKey mismatch",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One example conversation, with the server's salt, iterations and nonce.
    struct Example {
        mechanism: Mechanism,
        salt: &'static str,
        iterations: u32,
        client_first: &'static str,
        server_nonce: &'static str,
        server_first: &'static str,
        client_final: &'static str,
        server_final: &'static str,
    }

    /// The auth specification's SCRAM-SHA-1 conversation and RFC 7677's SCRAM-SHA-256 one.
    const EXAMPLES: &[Example] = &[
        Example {
            mechanism: Mechanism::ScramSha1,
            salt: "rQ9ZY3MntBeuP3E1TDVC4w==",
            iterations: 10_000,
            client_first: "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
            server_nonce: "Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE",
            server_first: "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
            client_final: "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
            server_final: "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=",
        },
        Example {
            mechanism: Mechanism::ScramSha256,
            salt: "W22ZaJ0SNY7soEsUEjb6gQ==",
            iterations: 4096,
            client_first: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            server_nonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
            server_first: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            client_final: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            server_final: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
        },
    ];

    fn credential(mechanism: Mechanism, salt: &str, iterations: u32) -> ScramCredential {
        let salt = STANDARD.decode(salt).unwrap();
        ScramCredential::derive(mechanism, "user", "pencil", &salt, iterations).unwrap()
    }

    /// A conversation of an example, after its first step.
    fn started(example: usize, skip_empty_exchange: bool) -> Conversation {
        let e = &EXAMPLES[example];
        let cred = credential(e.mechanism, e.salt, e.iterations);
        let first = ClientFirst::parse(e.client_first.as_bytes()).unwrap();
        Conversation::start(
            e.mechanism,
            first,
            &cred,
            e.server_nonce,
            skip_empty_exchange,
        )
        .0
    }

    #[test]
    fn the_specification_conversations_succeed() {
        for e in EXAMPLES {
            let (mechanism, first, snonce) = (e.mechanism, e.client_first, e.server_nonce);
            let (server_first, final_, server_final) =
                (e.server_first, e.client_final, e.server_final);
            let cred = credential(mechanism, e.salt, e.iterations);
            let parsed = ClientFirst::parse(first.as_bytes()).unwrap();
            assert_eq!(parsed.user, "user");
            let (mut conv, reply) = Conversation::start(mechanism, parsed, &cred, snonce, true);
            assert_eq!(reply.payload, server_first, "{mechanism:?}");
            assert!(!reply.done);
            let reply = conv.step(final_.as_bytes()).unwrap();
            assert_eq!(reply.payload, server_final, "{mechanism:?}");
            assert!(reply.done);
            assert!(conv.step(b"").is_err(), "nothing follows the last step");
        }
    }

    #[test]
    fn without_skip_empty_exchange_an_empty_third_message_completes() {
        let mut conv = started(1, false);
        let reply = conv.step(EXAMPLES[1].client_final.as_bytes()).unwrap();
        assert_eq!(reply.payload, EXAMPLES[1].server_final);
        assert!(!reply.done);
        let reply = conv.step(b"").unwrap();
        assert_eq!(
            reply,
            Reply {
                payload: String::new(),
                done: true
            }
        );
        assert!(conv.step(b"").is_err());
    }

    #[test]
    fn a_wrong_password_fails_with_a_storedkey_mismatch() {
        let Example {
            mechanism,
            salt,
            iterations,
            client_first: first,
            server_nonce: snonce,
            ..
        } = EXAMPLES[1];
        let salt_bytes = STANDARD.decode(salt).unwrap();
        let other =
            ScramCredential::derive(mechanism, "user", "pencils", &salt_bytes, iterations).unwrap();
        let first = ClientFirst::parse(first.as_bytes()).unwrap();
        let (mut conv, _) = Conversation::start(mechanism, first, &other, snonce, true);
        let err = conv.step(EXAMPLES[1].client_final.as_bytes()).unwrap_err();
        assert_eq!(err.code, ErrorCode::AuthenticationFailed);
        assert!(
            conv.step(EXAMPLES[1].client_final.as_bytes()).is_err(),
            "a failed conversation stays failed"
        );
    }

    #[test]
    fn malformed_client_first_messages_are_refused() {
        for (payload, message) in [
            (&b""[..], "Incorrect number of arguments for first SCRAM client message, got 1 expected at least 3"),
            (b"n", "Incorrect number of arguments for first SCRAM client message, got 1 expected at least 3"),
            (b"n,", "Incorrect number of arguments for first SCRAM client message, got 2 expected at least 3"),
            (b"p=tls-unique,,n=user,r=abcdefgh", "Server does not support channel binding"),
            (b"x,,n=user,r=abcdefgh", "Incorrect SCRAM client message prefix: x"),
            (b"n,b=other,n=user,r=abcdefgh", "Incorrect SCRAM authzid: b=other"),
            (b"n,a=other,n=user,r=abcdefgh", "SCRAM user name user does not match authzid other"),
            (b"n,,m=ext,n=user,r=abcdefgh", "SCRAM mandatory extensions are not supported"),
            (b"n,,", "Invalid SCRAM user name: "),
            (b"n,,n=,r=abcdefgh", "Invalid SCRAM user name: n="),
            (b"n,,u=user,r=abcdefgh", "Invalid SCRAM user name: u=user"),
            (b"n,,n=us=er,r=abcdefgh", "Invalid SCRAM user name escape in: us=er"),
            (b"n,,n=us=2,r=abcdefgh", "Invalid SCRAM user name escape in: us=2"),
            (b"n,,n=user", "Incorrect number of arguments for first SCRAM client message, got 3 expected at least 3"),
            (b"n,,n=user,r=abc", "Invalid SCRAM client nonce: r=abc"),
            (b"n,,n=user,s=abcdefgh", "Invalid SCRAM client nonce: s=abcdefgh"),
            (b"n,,n=user,r=abc\x01defg", "Invalid SCRAM client nonce: r=abc\u{1}defg"),
            (b"n,,n=user,r=\xff\xfeabcd", "SCRAM client-first message is not valid UTF-8"),
            // RFC 5802 §5.1: a reserved m= fails the authentication wherever it is.
            (b"n,,n=user,r=abcdefgh,m=ext", "SCRAM mandatory extensions are not supported"),
            (b"n,,n=user,r=abcdefgh,x=1,m=", "SCRAM mandatory extensions are not supported"),
            (b"y,a=user,m=,n=user,r=abcdefgh", "SCRAM mandatory extensions are not supported"),
            // Extensions are attr-val: one letter, '=', a value.
            (b"n,,n=user,r=abcdefgh,", "Invalid SCRAM extension: "),
            (b"n,,n=user,r=abcdefgh,x", "Invalid SCRAM extension: x"),
            (b"n,,n=user,r=abcdefgh,x=", "Invalid SCRAM extension: x="),
            (b"n,,n=user,r=abcdefgh,xy=1", "Invalid SCRAM extension: xy=1"),
            (b"n,,n=user,r=abcdefgh,1=1", "Invalid SCRAM extension: 1=1"),
            (b"n,,n=user,r=abcdefgh,x=a\0b", "Invalid SCRAM extension: x=a\0b"),
            // Attributes the RFC places elsewhere are not extensions.
            (b"n,,n=user,r=abcdefgh,r=again", "Invalid SCRAM extension: r=again"),
            (b"n,,n=user,r=abcdefgh,p=abcd", "Invalid SCRAM extension: p=abcd"),
            // The fields in the RFC's order, and a saslname holds no NUL.
            (b"n,,r=abcdefgh,n=user", "Invalid SCRAM user name: r=abcdefgh"),
            (b"n,,n=us\0er,r=abcdefgh", "Invalid SCRAM user name: us\\0er"),
            (b"n,a=us\0er,n=user,r=abcdefgh", "Invalid SCRAM user name: us\\0er"),
            (b"n,,n=user,,r=abcdefgh", "Invalid SCRAM client nonce: "),
            (b"n,,,n=user,r=abcdefgh", "Invalid SCRAM user name: "),
        ] {
            let err = ClientFirst::parse(payload).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadValue, "{payload:?}");
            assert_eq!(err.message, message, "{payload:?}");
        }
    }

    #[test]
    fn user_names_are_unescaped_and_flags_y_and_authzid_accepted() {
        for (payload, user, header) in [
            ("n,,n=a=2Cb=3Dc,r=abcdefgh", "a,b=c", "n,,"),
            ("y,,n=user,r=abcdefgh", "user", "y,,"),
            ("n,a=user,n=user,r=abcdefgh", "user", "n,a=user,"),
            ("n,,n=user,r=abcdefgh,x=ignored", "user", "n,,"),
            ("n,,n=user,r=abcdefgh,x=ignored,Z=a=b", "user", "n,,"),
            ("n,,n=\u{e9}l\u{e8}ve,r=abcd", "\u{e9}l\u{e8}ve", "n,,"),
        ] {
            let first = ClientFirst::parse(payload.as_bytes()).unwrap();
            assert_eq!(first.user, user, "{payload}");
            assert_eq!(first.gs2_header, header, "{payload}");
        }
    }

    #[test]
    fn the_channel_binding_must_repeat_the_gs2_header() {
        let Example {
            mechanism,
            salt,
            iterations,
            ..
        } = EXAMPLES[1];
        let cred = credential(mechanism, salt, iterations);
        // "y,," is "eSws" in base64; a client that sent y must say so in c=.
        let first = ClientFirst::parse(b"y,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        let (mut conv, _) = Conversation::start(
            mechanism,
            first,
            &cred,
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
            true,
        );
        let err = conv.step(EXAMPLES[1].client_final.as_bytes()).unwrap_err();
        assert_eq!(
            err.message,
            "SCRAM channel binding does not match the client-first message's gs2 header"
        );
    }

    #[test]
    fn malformed_client_final_messages_are_refused() {
        let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        for (payload, code, message) in [
            ("".to_owned(), ErrorCode::BadValue, "Incorrect number of arguments for second SCRAM client message, got 1 expected at least 3".to_owned()),
            ("c=biws".to_owned(), ErrorCode::BadValue, "Incorrect number of arguments for second SCRAM client message, got 1 expected at least 3".to_owned()),
            (format!("c=biws,r={nonce},p="), ErrorCode::BadValue, "Incorrect SCRAM ClientProof".to_owned()),
            (format!("c=biws,r={nonce},q=abcd"), ErrorCode::BadValue, "Incorrect SCRAM ClientProof".to_owned()),
            ("c=biws,p=abcd".to_owned(), ErrorCode::BadValue, "Incorrect number of arguments for second SCRAM client message, got 2 expected at least 3".to_owned()),
            (format!("x=biws,r={nonce},p=abcd"), ErrorCode::BadValue, "Incorrect SCRAM channel binding: x=biws".to_owned()),
            (format!("c=!!!!,r={nonce},p=abcd"), ErrorCode::BadValue, "Incorrect SCRAM channel binding: c=!!!!".to_owned()),
            (format!("c=eSws,r={nonce},p=abcd"), ErrorCode::BadValue, "SCRAM channel binding does not match the client-first message's gs2 header".to_owned()),
            ("c=biws,r=abc,p=abcd".to_owned(), ErrorCode::BadValue, "Incorrect SCRAM client|server nonce: r=abc".to_owned()),
            ("c=biws,r=rOprNGfwEbeRWgbNEkqO,p=abcd".to_owned(), ErrorCode::BadValue, format!("Unmatched SCRAM nonce received from client in second step, expected {nonce} but received rOprNGfwEbeRWgbNEkqO")),
            (format!("c=biws,r={nonce},p=not base64"), ErrorCode::BadValue, "Incorrect SCRAM ClientProof".to_owned()),
            (format!("c=biws,r={nonce},p=AAAA"), ErrorCode::AuthenticationFailed, "SCRAM authentication failed, storedKey mismatch".to_owned()),
            // RFC 5802 §5.1: m= is reserved in the final message too.
            (format!("c=biws,r={nonce},m=ext,p=abcd"), ErrorCode::BadValue, "SCRAM mandatory extensions are not supported".to_owned()),
            (format!("c=biws,r={nonce},x,p=abcd"), ErrorCode::BadValue, "Invalid SCRAM extension: x".to_owned()),
            (format!("c=biws,r={nonce},,p=abcd"), ErrorCode::BadValue, "Invalid SCRAM extension: ".to_owned()),
            // The order: c=, r=, extensions, p= last.
            (format!("r={nonce},c=biws,p=abcd"), ErrorCode::BadValue, format!("Incorrect SCRAM channel binding: r={nonce}")),
            (format!("c=biws,p=abcd,r={nonce}"), ErrorCode::BadValue, "Incorrect SCRAM ClientProof".to_owned()),
            (format!("c=biws,r={nonce},p=abcd,p=abcd"), ErrorCode::BadValue, "Invalid SCRAM extension: p=abcd".to_owned()),
            (format!("c=biws,r={nonce},r={nonce},p=abcd"), ErrorCode::BadValue, format!("Invalid SCRAM extension: r={nonce}")),
            // c= carries the gs2 header and nothing more (no channel-binding data is bound).
            (format!("c=biwsAAAA,r={nonce},p=abcd"), ErrorCode::BadValue, "SCRAM channel binding does not match the client-first message's gs2 header".to_owned()),
            (format!("c=biws,r={nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVA="), ErrorCode::AuthenticationFailed, "SCRAM authentication failed, storedKey mismatch".to_owned()),
        ] {
            let mut conv = started(1, true);
            let err = conv.step(payload.as_bytes()).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message.as_str()), "{payload}");
        }
        let mut conv = started(1, true);
        assert!(conv.step(b"\xff,p=abcd").is_err());
    }

    #[test]
    fn debug_output_hides_the_keys() {
        let conv = started(1, true);
        let shown = format!("{conv:?}");
        assert!(shown.contains("ScramSha256"), "{shown}");
        assert!(
            !shown.contains("stored_key") && !shown.contains("server_key"),
            "{shown}"
        );
    }

    #[test]
    fn server_nonces_are_fresh_and_long() {
        let a = server_nonce().unwrap();
        let b = server_nonce().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
