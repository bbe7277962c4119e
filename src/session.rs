//! One task per connection: read a request, run its command, write the reply, until the client
//! leaves, a framing error makes the stream untrustworthy, or the server shuts down.
//!
//! Owns the socket and the per-request envelope of each protocol: OP_MSG replies (none when the
//! request has `moreToCome`; a stream of `moreToCome` replies for an exhaust `hello`, each
//! command of the stream run without a request), OP_REPLY answers to OP_QUERY, and compressing
//! replies the way the request was compressed. Shutdown waits for the command in flight:
//! cancellation is only observed between requests. A command whose outcome is to close the
//! connection (the `failCommand` fail point's `closeConnection`) ends the loop without a reply.
//!
//! While a command runs, the session keeps watching the stream: bytes a client pipelines are
//! read into a side buffer and handed back to the decoder afterwards (none is lost), and end of
//! stream kills the operation (`KillReason::Disconnected`) so its work stops.
//!
//! Removed and unknown opcodes are answered as mongod 7.0 answers them (`legacy`); the legacy
//! probes old drivers send on every connection fail as on mongod but are logged at debug level.
//!
//! The connection is opened by `tls::accept` (plain, or TLS after a handshake in this task);
//! the request loop is generic over the stream and reads it only through `AsyncRead`, so TLS
//! records are never read past.

mod legacy;
mod slow_op;

use crate::clock::Stopwatch;
use crate::command::profiler::Operation;
use crate::command::{self, Connection, Outcome, Shared};
use crate::engine::{Interrupt, KillReason};
use crate::protocol::RawDocuments;
use crate::protocol::Reply;
use crate::status::CompressionCounters;
use crate::tls::accept::{self, Opened, Transport};
use crate::wire::{
    Compressor, Incoming, MessageCodec, MsgFlags, OpMsg, Outgoing, ReplyBody, Request, WireError,
};
use bson::{Bson, Document};
use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use legacy::{Answer, DeprecationLog};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Pipelined bytes the watcher keeps while a command runs; past this it stops reading (and so
/// stops noticing a disconnect) until the command ends.
const MAX_PIPELINED_BYTES: usize = 1024 * 1024;

/// How long closing a TLS connection waits to send its close_notify.
const TLS_CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Commands whose replies are never compressed (the compression spec's list).
const NEVER_COMPRESSED: &[&str] = &[
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "getnonce",
    "authenticate",
    "createUser",
    "updateUser",
    "copydbSaslStart",
    "copydbgetnonce",
    "copydb",
];

/// Commands clients send on every connection although a standalone mongod 7.0 refuses them:
/// the C# and Java drivers' `getLastError` after the handshake (5739000 over OP_MSG, 352 over
/// OP_QUERY), `getnonce` (removed in 6.2: 59), and mongosh's `atlasVersion` (59 anywhere but
/// Atlas). Their failures are expected, so they are logged at debug level instead of as failed
/// commands.
const LEGACY_PROBES: &[&str] = &["getLastError", "getlasterror", "getnonce", "atlasVersion"];

/// Whether a failed command is a client's expected probe: one of [`LEGACY_PROBES`], or
/// mongosh's `{getParameter: "foo"}` at start, which mongod also answers 72 "no option found
/// to get".
fn is_expected_probe(name: &str, code: i32) -> bool {
    LEGACY_PROBES.contains(&name) || (name == "getParameter" && code == 72)
}

/// Serves one accepted connection: opens it under the TLS mode (`tls` is `None` when TLS is
/// disabled), then runs the request loop until it ends.
pub async fn serve(
    stream: TcpStream,
    shared: Arc<Shared>,
    transport: Arc<Transport>,
    shutdown: CancellationToken,
) {
    let (Ok(peer), Ok(local)) = (stream.peer_addr(), stream.local_addr()) else {
        return;
    };
    // Requests and replies are small and latency-bound.
    let _ = stream.set_nodelay(true);
    let mut conn = Connection::new(shared.next_connection_id(), peer, local);
    let span = tracing::info_span!("conn", id = conn.id);
    async move {
        tracing::info!(
            log_id = 22943,
            remote = %peer,
            connections = shared.counters.connections_current.load(Ordering::Relaxed),
            "connection accepted"
        );
        let opened = tokio::select! {
            biased;
            _ = shutdown.cancelled() => Opened::Closed("server shutting down"),
            opened = accept::open(stream, peer, &transport) => opened,
        };
        let reason = match opened {
            Opened::Closed(reason) => reason,
            Opened::Plain(stream) => serve_stream(stream, &shared, &mut conn, &shutdown).await.0,
            Opened::Tls(stream, version) => {
                conn.tls = true;
                if let Some(count) = shared.counters.transport_security.get(version.index()) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                let (reason, mut stream) =
                    serve_stream(*stream, &shared, &mut conn, &shutdown).await;
                // Tell the client the stream ended on purpose (close_notify).
                let _ = tokio::time::timeout(TLS_CLOSE_TIMEOUT, stream.shutdown()).await;
                reason
            }
        };
        tracing::info!(
            log_id = 22944,
            remote = %peer,
            client = %conn.client_summary(),
            reason,
            "connection ended"
        );
    }
    .instrument(span)
    .await;
}

/// Runs the request loop over an opened stream; hands the stream back to be closed.
async fn serve_stream<S>(
    stream: S,
    shared: &Arc<Shared>,
    conn: &mut Connection,
    shutdown: &CancellationToken,
) -> (&'static str, S)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut framed = Framed::new(stream, MessageCodec::default());
    let reason = request_loop(&mut framed, shared, conn, shutdown).await;
    (reason, framed.into_inner())
}

async fn request_loop<S>(
    framed: &mut Framed<S, MessageCodec>,
    shared: &Arc<Shared>,
    conn: &mut Connection,
    shutdown: &CancellationToken,
) -> &'static str
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut deprecations = DeprecationLog::default();
    // The next command of an exhaust stream: run without a request from the client.
    let mut streaming: Option<Incoming> = None;
    let mut idle = IdleTimer::new(shared.config.profile.idle_connection_limit());
    loop {
        let incoming = if let Some(next) = streaming.take() {
            if shutdown.is_cancelled() {
                return "server shutting down";
            }
            next
        } else {
            // Idle from here: the last reply is sent.
            idle.touch();
            let next = tokio::select! {
                biased;
                _ = shutdown.cancelled() => return "server shutting down",
                next = framed.next() => next,
                () = idle.expired() => return "idle past the profile's limit",
            };
            match next {
                None => return "client closed the connection",
                // A TLS client that closes without close_notify, or a reset.
                Some(Err(WireError::Io(e))) if is_disconnect(&e) => {
                    return "client closed the connection"
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "closing connection after a framing error");
                    return "framing error";
                }
                Some(Ok(incoming)) => {
                    count_request(shared, &incoming);
                    incoming
                }
            }
        };
        let interrupt = Interrupt::none();
        let mut peer = PeerWatch {
            stream: framed.get_mut(),
            pipelined: BytesMut::new(),
            closed: false,
        };
        let reply = {
            let work = handle(
                shared,
                conn,
                incoming,
                Arc::clone(&interrupt),
                &mut deprecations,
            );
            tokio::pin!(work);
            tokio::select! {
                biased;
                reply = &mut work => reply,
                () = peer.closed() => {
                    interrupt.kill(KillReason::Disconnected);
                    work.await
                }
            }
        };
        // Bytes read while the command ran come after those the decoder already holds. After
        // end of stream the loop still answers what was received (a half-closed client reads
        // its replies), then ends when the decoder reaches the end.
        let pipelined = peer.pipelined;
        framed.read_buffer_mut().extend_from_slice(&pipelined);
        let reply = match reply {
            Handled::Reply(reply) => reply,
            Handled::Stream(reply, next) => {
                streaming = Some(next);
                reply
            }
            Handled::Nothing => continue,
            Handled::Hangup => return "closed by the failCommand fail point",
            Handled::Close(err) => {
                tracing::warn!(
                    code = err.code.code(),
                    error = %err.message,
                    "closing connection after a removed legacy opcode"
                );
                return "removed legacy opcode";
            }
        };
        let compressor = reply.compressor;
        let before = framed.codec().bytes_encoded;
        if let Err(e) = framed.send(reply).await {
            tracing::debug!(error = %e, "could not send a reply");
            return "write failed";
        }
        let written = framed.codec().bytes_encoded - before;
        // An exhaust stream's next reply responds to this one (mongod's synthetic request).
        if let Some(next) = streaming.as_mut() {
            next.header.request_id = framed.codec().last_request_id;
        }
        shared
            .counters
            .bytes_out
            .fetch_add(written, Ordering::Relaxed);
        if let Some(c) = compressor.and_then(|c| compression_counters(shared, c)) {
            let original = framed.codec().last_original_length as u64;
            c.compressor_bytes_in.fetch_add(original, Ordering::Relaxed);
            c.compressor_bytes_out.fetch_add(written, Ordering::Relaxed);
        }
    }
}

/// How long a connection has waited for its next request, against the idle time the profile
/// allows. One timer per connection, moved only when it fires early, so a busy connection's
/// requests do not each set a timer.
struct IdleTimer {
    /// The limit and its timer; `None` without a limit.
    timer: Option<(std::time::Duration, std::pin::Pin<Box<tokio::time::Sleep>>)>,
    last_active: tokio::time::Instant,
}

impl IdleTimer {
    fn new(limit: Option<std::time::Duration>) -> IdleTimer {
        let now = tokio::time::Instant::now();
        IdleTimer {
            timer: limit.map(|limit| (limit, Box::pin(tokio::time::sleep_until(now + limit)))),
            last_active: now,
        }
    }

    /// The connection starts waiting for its next request now.
    fn touch(&mut self) {
        if self.timer.is_some() {
            self.last_active = tokio::time::Instant::now();
        }
    }

    /// Completes once the connection has been idle for the limit; never without one.
    async fn expired(&mut self) {
        let Some((limit, timer)) = self.timer.as_mut() else {
            return std::future::pending().await;
        };
        loop {
            timer.as_mut().await;
            let due = self.last_active + *limit;
            if tokio::time::Instant::now() >= due {
                return;
            }
            timer.as_mut().reset(due);
        }
    }
}

/// Counts a request read from the client in `serverStatus` (`network`, `opcounters`).
fn count_request(shared: &Shared, incoming: &Incoming) {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let wire_length = u64::try_from(incoming.header.length).unwrap_or(0);
    shared
        .counters
        .bytes_in
        .fetch_add(wire_length, Ordering::Relaxed);
    if let Some(c) = incoming
        .compressor
        .and_then(|c| compression_counters(shared, c))
    {
        c.decompressor_bytes_in
            .fetch_add(wire_length, Ordering::Relaxed);
        c.decompressor_bytes_out
            .fetch_add(incoming.original_length as u64, Ordering::Relaxed);
    }
}

/// The client's stream, read while a command runs.
struct PeerWatch<'a, S> {
    stream: &'a mut S,
    /// Bytes of later requests, read off the stream while the command ran.
    pipelined: BytesMut,
    closed: bool,
}

impl<S: AsyncRead + Unpin> PeerWatch<'_, S> {
    /// Completes when the client has closed the connection (end of stream or a read error);
    /// otherwise keeps what the client sends and never completes. Reading is cancel-safe: when
    /// the command ends first, no byte read so far is lost.
    async fn closed(&mut self) {
        // Read into the stack first: most commands see no pipelining, so the side buffer
        // allocates only once the client sent something.
        let mut chunk = [0u8; 4096];
        while !self.closed && self.pipelined.len() < MAX_PIPELINED_BYTES {
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => self.closed = true,
                Ok(n) => self
                    .pipelined
                    .extend_from_slice(chunk.get(..n).unwrap_or_default()),
            }
        }
        if !self.closed {
            std::future::pending::<()>().await;
        }
    }
}

/// Whether a read error means the client went away rather than sent something malformed.
fn is_disconnect(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
    )
}

/// What became of one request.
enum Handled {
    Reply(Outgoing),
    /// A reply with `moreToCome`, and the command to run next without a request (exhaust).
    Stream(Outgoing, Incoming),
    /// No reply may be sent (`moreToCome`, an unknown opcode).
    Nothing,
    /// A removed write or killCursors opcode: mongod closes the connection.
    Close(crate::error::Error),
    /// The command's outcome is to close the connection without a reply.
    Hangup,
}

/// Runs one request.
async fn handle(
    shared: &Arc<Shared>,
    conn: &mut Connection,
    incoming: Incoming,
    interrupt: Arc<Interrupt>,
    deprecations: &mut DeprecationLog,
) -> Handled {
    let response_to = incoming.header.request_id;
    match incoming.request {
        Request::Msg(msg) => {
            // Only a request that allows exhaust may be answered by a stream of replies.
            let request = if msg.flags.exhaust_allowed() {
                msg.body.as_ref().ok().cloned()
            } else {
                None
            };
            let (name, reply) = match msg.body {
                Ok(body) => {
                    match run_logged(shared, conn, body, msg.documents, None, interrupt).await {
                        (name, Outcome::Reply(reply)) => (name, reply),
                        (_, Outcome::Close) => return Handled::Hangup,
                    }
                }
                Err(e) => (String::new(), Reply::Document(e.to_reply())),
            };
            if msg.flags.more_to_come() {
                return Handled::Nothing;
            }
            if let (Some(request), Reply::Document(reply)) = (&request, &reply) {
                if let Some(next) = command::exhaust_next(shared, request, reply) {
                    let next = Incoming {
                        request: Request::Msg(OpMsg {
                            documents: None,
                            flags: MsgFlags(MsgFlags::EXHAUST_ALLOWED),
                            body: Ok(next),
                        }),
                        ..incoming
                    };
                    return Handled::Stream(
                        Outgoing {
                            response_to,
                            body: ReplyBody::MsgMoreToCome(reply.clone()),
                            compressor: reply_compressor(next.compressor, &name),
                        },
                        next,
                    );
                }
            }
            let body = match reply {
                Reply::Document(d) => ReplyBody::Msg(d),
                Reply::Raw(r) => ReplyBody::RawMsg(r),
            };
            Handled::Reply(Outgoing {
                response_to,
                body,
                compressor: reply_compressor(incoming.compressor, &name),
            })
        }
        Request::Query(query) => {
            let Some(db) = query.command_database().map(str::to_owned) else {
                return Handled::Reply(Outgoing {
                    response_to,
                    body: ReplyBody::ReplyFailure(legacy::query_refused(
                        &shared.counters,
                        deprecations,
                    )),
                    compressor: None,
                });
            };
            let reply = match query.query {
                Err(e) => e.to_reply(),
                Ok(body) => {
                    let body = unwrap_query(body);
                    match run_logged(shared, conn, body, None, Some(&db), interrupt).await {
                        (_, Outcome::Reply(reply)) => reply.into_document(),
                        (_, Outcome::Close) => return Handled::Hangup,
                    }
                }
            };
            Handled::Reply(Outgoing {
                response_to,
                body: ReplyBody::Reply(reply),
                compressor: None,
            })
        }
        Request::Legacy(op) => match legacy::answer(&shared.counters, op, deprecations) {
            Answer::Failure(doc) => Handled::Reply(Outgoing {
                response_to,
                body: ReplyBody::ReplyFailure(doc),
                // mongod answers a compressed request in kind.
                compressor: incoming.compressor,
            }),
            Answer::Nothing => Handled::Nothing,
            Answer::Close(err) => Handled::Close(err),
        },
    }
}

/// Runs a command, logging it if it failed or was slow.
async fn run_logged(
    shared: &Arc<Shared>,
    conn: &mut Connection,
    body: Document,
    documents: Option<Arc<RawDocuments>>,
    legacy_db: Option<&str>,
    interrupt: Arc<Interrupt>,
) -> (String, Outcome) {
    let timer = Stopwatch::start();
    // An awaitable hello waits by design: its time says nothing about the server.
    let awaitable = command::is_awaitable_hello(&body);
    let body = Arc::new(body);
    // Only the Cosmos profile charges by size, and only writes: measure the request only then.
    let charged_by_size = shared.config.profile.charges()
        && body.keys().next().is_some_and(|name| {
            crate::profile::ru::Work::of(name) == crate::profile::ru::Work::Write
        });
    let request_bytes = if charged_by_size {
        let sequence = documents.as_ref().map_or(0, |d| d.byte_len());
        sequence + bson::to_vec(&*body).map_or(0, |b| b.len())
    } else {
        0
    };
    let (name, outcome, parsed) = command::execute(
        shared,
        conn,
        Arc::clone(&body),
        documents,
        legacy_db,
        Arc::clone(&interrupt),
    )
    .await;
    let elapsed = timer.elapsed();
    let millis = elapsed.as_millis();
    let failed = matches!(&outcome, Outcome::Reply(reply) if reply.is_error());
    shared
        .latencies
        .record(&name, failed, (!awaitable).then_some(elapsed));
    if let Outcome::Reply(reply @ Reply::Document(failed)) = &outcome {
        let code = failed.get_i32("code").unwrap_or_default();
        if reply.is_error() && is_expected_probe(&name, code) {
            tracing::debug!(command = %name, code, "client probe refused");
        } else if reply.is_error() {
            tracing::info!(
                command = %name,
                code,
                errmsg = failed.get_str("errmsg").unwrap_or_default(),
                duration_ms = millis as u64,
                "command failed"
            );
        }
    }
    if awaitable {
        return (name, outcome);
    }
    let db = legacy_db
        .or_else(|| body.get_str("$db").ok())
        .unwrap_or("admin");
    let mut op = Operation {
        db,
        body: &body,
        parsed: parsed.as_ref(),
        outcome: &outcome,
        interrupt: &interrupt,
        elapsed,
        protocol: if legacy_db.is_some() {
            "op_query"
        } else {
            "op_msg"
        },
        request_charge: None,
    };
    if shared.config.profile.charges() {
        op.request_charge = shared
            .request_units
            .account(shared, conn, &op, request_bytes);
    }
    shared.top.record(shared, &op);
    let decision = shared.profiler.decide(&op, conn, shared);
    if decision.log_slow {
        slow_op::log(conn, &op);
    }
    if let Some(entry) = decision.profile {
        if let Err(e) = command::profiler::record(shared, db, entry).await {
            tracing::debug!(error = %e, "cannot write a profile entry");
        }
    }
    (name, outcome)
}

fn compression_counters(shared: &Shared, c: Compressor) -> Option<&CompressionCounters> {
    shared
        .counters
        .compression
        .get(usize::from(c.id()).checked_sub(1)?)
}

fn reply_compressor(request: Option<Compressor>, command: &str) -> Option<Compressor> {
    request.filter(|_| !NEVER_COMPRESSED.contains(&command))
}

/// Drivers wrap a command in `$query` when they add `$readPreference` over OP_QUERY.
fn unwrap_query(body: Document) -> Document {
    match body.get("$query") {
        Some(Bson::Document(inner)) if body.keys().next().map(String::as_str) == Some("$query") => {
            inner.clone()
        }
        _ => body,
    }
}
