//! The command layer: one `match` on the command name, then a module per family. Each command
//! reads its typed arguments from the command document and returns its reply document (or an
//! [`Error`], turned into `{ok: 0, ...}` in exactly one place, [`execute`]).
//!
//! Owns: envelope rules shared by all commands (`$db`, `maxTimeMS`, admin-only and test-only
//! commands, the session fields `lsid`/`txnNumber` and the session each command touches, the
//! legacy OP_QUERY allow-list), the list of running operations, and where a command runs:
//! commands that read storage run on tokio's blocking pool, never on an async worker; commands
//! that wait for the writer stay async and stop waiting when interrupted; and the
//! `failCommand` fail point's two hooks around each command, whose outcome may be to close the
//! connection ([`Outcome::Close`]). Does not own: sockets, framing or compression (`session`,
//! `wire`).

mod admin;
mod aggregate;
mod args;
mod auth;
mod auth_failures;
mod batch;
mod change_stream;
mod cluster_fields;
mod context;
mod cosmos_custom;
mod cursor;
mod ddl;
mod envelope;
mod explain;
mod find;
mod generic;
mod handshake;
mod index;
mod insert;
mod introspection;
mod oplog_reads;
mod read;
pub mod replset;
mod sasl;
pub mod secrets;
mod sessions;
mod spec;
mod state;
mod stats;
mod table;
mod testing;
mod users;
mod users_account;
mod users_info;
mod validate;
mod values;
mod write;

use envelope::{authz, cosmos, error_labels};
pub use envelope::{latencies, profiler, request_units, top};
pub(crate) use state::operation_session;
use state::{failpoint, operations, retryable, session_id, session_registry, transactions};

pub use authz::startup_warnings;
pub use context::{Connection, Shared};
pub use introspection::MONGODB_VERSION;
pub use operations::watch_request_time;
pub use replset::{exhaust_next, is_awaitable_hello};
pub use session_registry::SessionRegistry;
pub use table::{CommandName, Fact, Scope, Target};
pub use users_account::ensure_account;

use crate::clock::Deadline;
use crate::engine::Interrupt;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::RawDocuments;
pub use crate::protocol::Reply;
use crate::query::guard;
use crate::status::OpKind;
use bson::{Bson, Document};
use generic::GenericArgs;
use std::future::Future;
use std::sync::Arc;

/// How a command reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OP_MSG: the database comes from `$db`.
    Msg,
    /// Legacy OP_QUERY on `<db>.$cmd`: the database comes from the namespace.
    Query,
}

/// A command ready to run: its name, its database and its document.
pub struct Request<'a> {
    pub name: CommandName,
    pub db: &'a str,
    /// Shared, so work moved to another thread (the blocking pool) takes the body along
    /// without copying it.
    pub body: &'a Arc<Document>,
    /// An `insert`'s documents when they came as a document sequence: the bytes they came in
    /// (the body then has no `documents`).
    pub documents: Option<&'a Arc<RawDocuments>>,
    /// Checked by long-running work: `maxTimeMS`, `killOp`, a closed connection.
    pub interrupt: Arc<Interrupt>,
    /// Its session (`lsid`) and, for a retryable write, its `txnNumber`.
    pub session: operation_session::OperationSession,
    /// The multi-document transaction it runs in, if any: its reads and writes go there.
    pub transaction: Option<transactions::TransactionHandle>,
}

/// Commands a legacy OP_QUERY may carry (mongod's `check_allowed_op_query_cmd.cpp`).
const OP_QUERY_COMMANDS: &[&str] = &[
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "buildinfo",
    "buildInfo",
    "authenticate",
    "_isSelf",
];

/// What the connection does once a command is done.
#[derive(Debug)]
pub enum Outcome {
    /// Send the reply (unless the request asked for none).
    Reply(Reply),
    /// Close the connection without a reply (the `failCommand` fail point's `closeConnection`).
    Close,
}

/// Runs one command and returns what to do: reply with success or
/// `{ok: 0, errmsg, code, codeName}`, or close the connection. `legacy_db` is the database of
/// an OP_QUERY namespace, `None` for OP_MSG. `interrupt` is the operation's: the caller may
/// kill it (the client went away); `maxTimeMS` sets its deadline.
pub async fn execute(
    shared: &Arc<Shared>,
    conn: &mut Connection,
    body: Arc<Document>,
    documents: Option<Arc<RawDocuments>>,
    legacy_db: Option<&str>,
    interrupt: Arc<Interrupt>,
) -> (String, Outcome) {
    let name = body.keys().next().cloned().unwrap_or_default();
    // Taken once; every envelope step below reads its generic field from here.
    let generic = GenericArgs::take(&body);
    let run = run(
        shared,
        conn,
        (&name, &generic),
        (&body, documents.as_ref()),
        legacy_db,
        interrupt,
    );
    let mut outcome = match run.await {
        Ok(outcome) => outcome,
        Err(err) => {
            let err = cosmos::translate(&shared.config.profile, err);
            Outcome::Reply(Reply::Document(err.to_reply()))
        }
    };
    if let (Some(rs), Outcome::Reply(reply)) = (&shared.replica_set, &mut outcome) {
        if let (Some(command), Reply::Document(doc)) = (CommandName::from_name(&name), &mut *reply)
        {
            error_labels::add(command, &generic, doc);
        }
        replset::decorate(rs, shared, reply);
    }
    (name, outcome)
}

async fn run(
    shared: &Arc<Shared>,
    conn: &mut Connection,
    (name, generic): (&str, &GenericArgs<'_>),
    (body, documents): (&Arc<Document>, Option<&Arc<RawDocuments>>),
    legacy_db: Option<&str>,
    interrupt: Arc<Interrupt>,
) -> Result<Outcome> {
    let db = match legacy_db {
        Some(db) => {
            if !OP_QUERY_COMMANDS.contains(&name) {
                return Err(Error::new(
                    ErrorCode::UnsupportedOpQueryCommand,
                    format!(
                        "Unsupported OP_QUERY command: {name}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal"
                    ),
                ));
            }
            if body.contains_key("$db") {
                return Err(Error::new(
                    ErrorCode::Location40621,
                    "$db is not allowed in OP_QUERY requests",
                ));
            }
            db
        }
        None => match body.get("$db") {
            Some(bson::Bson::String(db)) => db.as_str(),
            Some(other) => {
                return Err(Error::type_mismatch(format!(
                    "BSON field '$db' is the wrong type '{}', expected type 'string'",
                    args::type_name(other)
                )))
            }
            None => {
                return Err(Error::new(
                    ErrorCode::Location40571,
                    "OP_MSG requests require a $db argument",
                ))
            }
        },
    };
    let command = lookup(shared, name)?;
    if matches!(command.scope(), Scope::Admin | Scope::TestAdmin) && db != "admin" {
        return Err(Error::new(
            ErrorCode::Unauthorized,
            format!("{name} may only be run against the admin database."),
        ));
    }
    let session = operation_session::parse(
        generic,
        body,
        command,
        &conn.authenticated,
        shared.config.replication.enabled(),
    )?;
    // Where mongod evaluates `failCommand`: after the session fields, before maxTimeMS.
    match failpoint::before(shared, conn, command, db, body, &interrupt).await {
        failpoint::Before::Run => {}
        failpoint::Before::Fail(failure) => return Ok(Outcome::Reply(Reply::Document(failure))),
        failpoint::Before::Close => return Ok(Outcome::Close),
    }
    let replicated = shared.replica_set.is_some();
    args::check_write_concern(generic.write_concern, replicated)?;
    cluster_fields::check(name, body)?;
    if let Some(rs) = &shared.replica_set {
        replset::check_gossip(body)?;
        let now = rs.last_op_time(shared.engine.optimes());
        match session.transaction {
            Some(statement) => replset::check_transaction_concerns(command, body, statement)?,
            None => replset::check_read_concern(command, body, now)?,
        }
    }
    if let Some(millis) = generic.max_time_ms()? {
        interrupt.set_deadline(Some(Deadline::after_millis(millis)));
    }
    shared.counters.count(OpKind::Command, 1);
    let mut request = Request {
        name: command,
        db,
        body,
        documents,
        interrupt,
        session,
        transaction: None,
    };
    let access = authz::check(shared, conn, &request)?;
    cosmos::check(&shared.config.profile, &request)?;
    shared.request_units.admit(shared, &request).await?;
    let _op = shared.ops.register(shared, conn, &request);
    let _in_session = match session.session {
        Some(id) => {
            session_registry::ensure_reaper(shared);
            Some(shared.sessions.begin(
                id,
                session_id::user_name(&conn.authenticated),
                shared.clock.now_millis(),
                Arc::clone(&request.interrupt),
            )?)
        }
        None => None,
    };
    request.transaction = transactions::enter(shared, &request)?;
    // A statement the profile refuses fails, and aborts its transaction, as any statement's
    // error does.
    let refused = match request.transaction {
        Some(_) => cosmos::check_in_transaction(shared, &request).err(),
        None => None,
    };
    // `onPrimaryTransactionalWrite`, where mongod reaches it: at a retryable write's commit.
    let primary_write = retryable::RetryableWrite::of(&request)
        .and_then(|write| Some((write, failpoint::primary_write(shared)?)));
    if let Some((write, point)) = &primary_write {
        if let Some(code) = point.fail_before_commit {
            if point.close_connection {
                return Ok(Outcome::Close);
            }
            let write = format!("{}:{}", write.session, write.txn_number);
            return Ok(Outcome::Reply(Reply::Document(failpoint::write_failure(
                code, &write,
            ))));
        }
    }
    let outcome = match refused {
        Some(error) => Err(error),
        None => dispatch(shared, conn, &request).await,
    };
    let outcome = past_time_limit(&request, outcome);
    let mut reply = transactions::finish(shared, &request, outcome)?;
    if primary_write.is_some_and(|(_, point)| point.close_connection) && !reply.is_error() {
        // The write is committed; its reply is lost.
        return Ok(Outcome::Close);
    }
    if let Some(id) = session.session {
        session_registry::adopt_reply_cursor(&shared.sessions, id, &reply)?;
    }
    if replicated {
        if let (Some(error), Reply::Document(reply)) =
            (replset::write_concern_error(command, body), &mut reply)
        {
            // Before `ok`, where mongod puts it: the write is applied, its concern unmet.
            let ok = reply.remove("ok").unwrap_or(Bson::Double(1.0));
            reply.insert("writeConcernError", error);
            reply.insert("ok", ok);
        }
    }
    let reply = failpoint::after(shared, conn, command, db, body, reply);
    Ok(Outcome::Reply(match access {
        authz::Access::Allowed => reply,
        authz::Access::OnlyDatabasesOf(roles) => authz::only_databases_of(&roles, reply),
    }))
}

/// Runs a command that reads storage on the blocking pool. The closure owns what it uses: the
/// shared state, the body (shared) and the database name.
async fn blocking<R: Into<Reply> + Send + 'static>(
    shared: &Arc<Shared>,
    req: &Request<'_>,
    command: fn(&Shared, &Request<'_>) -> Result<R>,
) -> Result<Reply> {
    req.interrupt.check()?;
    let shared = Arc::clone(shared);
    let (name, db, body) = (req.name, req.db.to_owned(), Arc::clone(req.body));
    let documents = req.documents.cloned();
    let interrupt = Arc::clone(&req.interrupt);
    let session = req.session;
    let transaction = req.transaction.clone();
    tokio::task::spawn_blocking(move || {
        // The command's expressions and loops check its interrupt from here on.
        let _current = guard::install(Arc::clone(&interrupt) as Arc<dyn guard::Checkpoint>);
        let req = Request {
            name,
            db: &db,
            body: &body,
            documents: documents.as_ref(),
            interrupt,
            session,
            transaction,
        };
        command(&shared, &req).map(Into::into)
    })
    .await
    .map_err(|e| Error::internal(format!("a command's thread failed: {e}")))?
}

/// Runs a command that waits for the writer, giving up the wait when the operation is
/// interrupted. A job already queued may still commit, as a write mongod started may.
async fn awaiting_writer(
    req: &Request<'_>,
    command: impl Future<Output = Result<Document>>,
) -> Result<Reply> {
    req.interrupt.check()?;
    tokio::select! {
        reply = command => reply.map(Reply::from),
        err = req.interrupt.interrupted() => Err(err),
    }
}

/// The command a name refers to, if this server has it (test commands only when enabled).
pub fn lookup(shared: &Shared, name: &str) -> Result<CommandName> {
    match CommandName::from_name(name) {
        // Cosmos's own commands exist only in its profile: mongod has none of them.
        Some(c) if c.has(Fact::CosmosOnly) && !shared.config.profile.is_cosmos() => Err(
            Error::new(ErrorCode::CommandNotFound, format!("no such command: '{name}'")),
        ),
        Some(c) if !c.scope().is_test() || shared.config.enable_test_commands => Ok(c),
        // mongod's answer for a command it lacks, and what turns this one on.
        Some(_) => Err(Error::new(
            ErrorCode::CommandNotFound,
            format!(
                "no such command: '{name}' (a test command: start mayfly with --enable-test-commands to enable it)"
            ),
        )),
        None => Err(Error::new(
            ErrorCode::CommandNotFound,
            format!("no such command: '{name}'"),
        )),
    }
}

/// The profile's error for a command stopped at its request time limit
/// ([`operations::watch_request_time`]); any other outcome as it is.
fn past_time_limit(req: &Request<'_>, outcome: Result<Reply>) -> Result<Reply> {
    match outcome {
        Err(e)
            if e.code == ErrorCode::Interrupted
                && req.interrupt.kill_reason()
                    == Some(crate::engine::KillReason::RequestTimeLimit) =>
        {
            Err(crate::profile::limits::request_timed_out())
        }
        outcome => outcome,
    }
}

async fn dispatch(shared: &Arc<Shared>, conn: &mut Connection, req: &Request<'_>) -> Result<Reply> {
    use CommandName as C;
    match req.name {
        C::Hello | C::IsMaster | C::IsMasterLower => {
            handshake::hello(shared, conn, req).await.map(Reply::from)
        }
        C::Ping => Ok(admin::ping().into()),
        C::GetLastRequestStatistics => Ok(request_units::last_request_statistics(conn).into()),
        C::BuildInfo | C::BuildInfoLower => {
            Ok(introspection::build_info(&shared.config.profile).into())
        }
        C::GetParameter => admin::get_parameter(shared, req).map(Reply::from),
        C::GetLog => admin::get_log(shared, req).map(Reply::from),
        C::GetCmdLineOpts => Ok(introspection::cmd_line_opts(shared).into()),
        C::HostInfo => Ok(introspection::host_info(shared).into()),
        C::ServerStatus => {
            blocking(shared, req, |s, r| {
                Ok(introspection::server_status(s, r.body))
            })
            .await
        }
        C::WhatsMyUri => Ok(admin::whats_my_uri(conn).into()),
        C::ReplSetGetStatus => replset::get_status(shared, req).map(Reply::from),
        C::ReplSetGetConfig => replset::get_config(shared, req).map(Reply::from),
        C::ReplSetInitiate => replset::initiate(shared).map(Reply::from),
        C::ReplSetStepDown => replset::step_down(shared, req).map(Reply::from),
        C::ReplSetReconfig => replset::reconfig(shared).map(Reply::from),
        C::ConnectionStatus => Ok(admin::connection_status(shared, conn, req)?.into()),
        C::ListCommands => Ok(introspection::list_commands(shared).into()),
        C::StartSession => sessions::start_session(shared, conn).map(Reply::from),
        C::EndSessions => sessions::end_sessions(shared, conn, req).map(Reply::from),
        C::RefreshSessions => sessions::refresh_sessions(shared, conn, req).map(Reply::from),
        C::KillSessions => sessions::kill_sessions(shared, conn, req).map(Reply::from),
        C::KillAllSessions => sessions::kill_all_sessions(shared, req).map(Reply::from),
        C::KillAllSessionsByPattern => {
            sessions::kill_all_sessions_by_pattern(shared, req).map(Reply::from)
        }
        C::SaslStart => sasl::sasl_start(shared, conn, req).await.map(Reply::from),
        C::SaslContinue => sasl::sasl_continue(shared, conn, req)
            .await
            .map(Reply::from),
        C::Logout => auth::logout(conn, req).map(Reply::from),
        C::Authenticate => auth::authenticate(shared, conn, req).await.map(Reply::from),
        // mongod 7.0 keeps the command only to refuse it.
        C::GetLastError | C::GetLastErrorLower => Err(Error::new(
            ErrorCode::Location5739000,
            "getLastError command is not supported",
        )),
        C::Insert => awaiting_writer(req, insert::insert(shared, req)).await,
        C::CommitTransaction => awaiting_writer(req, transactions::commit(shared, req)).await,
        C::AbortTransaction => transactions::abort(shared, req).map(Reply::from),
        C::Find if find::is_point_read(shared, req) => find::find(shared, req).map(Reply::from),
        C::Find => blocking(shared, req, find::find).await,
        C::GetMore => change_stream::get_more(shared, req).await,
        C::KillCursors => cursor::kill_cursors(shared, req).map(Reply::from),
        C::Update => awaiting_writer(req, write::update(shared, req)).await,
        C::Delete => awaiting_writer(req, write::delete(shared, req)).await,
        C::FindAndModify | C::FindAndModifyLower => {
            awaiting_writer(req, write::find_and_modify(shared, req)).await
        }
        C::Count => blocking(shared, req, read::count).await,
        C::Distinct => blocking(shared, req, read::distinct).await,
        C::Aggregate if change_stream::opens_stream(req.body) => {
            blocking(shared, req, change_stream::aggregate).await
        }
        C::Aggregate => blocking(shared, req, aggregate::aggregate).await,
        C::Explain => blocking(shared, req, explain::explain).await,
        C::Create => awaiting_writer(req, ddl::create(shared, req)).await,
        C::Drop => awaiting_writer(req, ddl::drop(shared, req)).await,
        C::DropDatabase => awaiting_writer(req, ddl::drop_database(shared, req)).await,
        C::RenameCollection => awaiting_writer(req, ddl::rename_collection(shared, req)).await,
        C::ListCollections => blocking(shared, req, ddl::list_collections).await,
        C::ListDatabases => blocking(shared, req, ddl::list_databases).await,
        C::DbStats | C::DbStatsLower => blocking(shared, req, stats::db_stats).await,
        C::CollStats => blocking(shared, req, stats::coll_stats).await,
        C::Validate => blocking(shared, req, validate::validate).await,
        C::Profile => profiler::profile(shared, req).map(Reply::from),
        C::Top => Ok(top::top(shared)?.into()),
        C::CreateIndexes => awaiting_writer(req, index::create_indexes(shared, req)).await,
        C::ListIndexes => blocking(shared, req, index::list_indexes).await,
        C::DropIndexes => awaiting_writer(req, index::drop_indexes(shared, req)).await,
        C::CustomAction => awaiting_writer(req, cosmos_custom::custom_action(shared, req)).await,
        C::ShardCollection => {
            awaiting_writer(req, cosmos_custom::shard_collection(shared, req)).await
        }
        C::AdvanceClock => testing::advance_clock(shared, req).map(Reply::from),
        C::Reaper => awaiting_writer(req, testing::reaper(shared, req)).await,
        C::CollMod => awaiting_writer(req, index::coll_mod(shared, req)).await,
        C::Sleep => blocking(shared, req, testing::sleep).await,
        C::ConfigureFailPoint => failpoint::configure(shared, req).map(Reply::from),
        C::WaitForFailPoint => failpoint::wait(shared, req).await.map(Reply::from),
        C::CurrentOp => operations::current_op(shared, req).map(Reply::from),
        C::KillOp => operations::kill_op(shared, req).map(Reply::from),
        C::CreateUser => awaiting_writer(req, users::create_user(shared, req)).await,
        C::UpdateUser => awaiting_writer(req, users::update_user(shared, req)).await,
        C::DropUser => awaiting_writer(req, users::drop_user(shared, req)).await,
        C::DropAllUsersFromDatabase => {
            awaiting_writer(req, users::drop_all_users(shared, req)).await
        }
        C::UsersInfo => users_info::users_info(shared, req).map(Reply::from),
        C::GrantRolesToUser => awaiting_writer(req, users::change_roles(shared, req, true)).await,
        C::RevokeRolesFromUser => {
            awaiting_writer(req, users::change_roles(shared, req, false)).await
        }
    }
}
