//! The command layer: one `match` on the command name ([`dispatch`]), then a module per family.
//! Each command reads its typed arguments from the command document and returns its reply
//! document (or an [`Error`], turned into `{ok: 0, ...}` in exactly one place, [`execute`]).
//!
//! Rooms: `envelope/` holds the steps every command goes through and their order
//! (`envelope/run.rs`: `$db`, the session fields, fail points, concerns, `maxTimeMS`,
//! authorization, the Cosmos gate, request units, error labels, the profiler's records);
//! `state/` holds what outlives a command (sessions, transactions, running operations,
//! retryable-write records, fail points, the profiler's settings, the `top` table, the
//! request-unit meter, the replica-set member, SASL conversations) and imports nothing from
//! the envelope. Below both:
//! the command table (`table.rs`, every per-command fact), the generic fields taken once
//! (`generic.rs`) and the readers of a command's own fields (`spec.rs`, `args.rs`).
//!
//! Owns here: the request a handler receives and where a command runs: commands that read
//! storage run on tokio's blocking pool, never on an async worker; commands that wait for the
//! writer stay async and stop waiting when interrupted. Does not own: sockets, framing or
//! compression (`session`, `wire`).

mod admin;
mod args;
mod auth;
mod auth_failures;
mod catalog;
mod cluster_fields;
mod context;
mod cosmos_custom;
mod crud;
mod envelope;
mod generic;
mod handshake;
mod parsed;
pub mod replset;
mod reply_number;
mod sasl;
pub mod secrets;
mod sessions;
mod spec;
mod state;
mod table;
mod users;
mod values;

pub use admin::introspection::MONGODB_VERSION;
pub use envelope::run::{execute, lookup};
use envelope::{authz, error_labels};
pub use envelope::{latencies, profiler, request_units, top};
pub(crate) use state::operation_session;
use state::{failpoint, operations, retryable, session_id, session_registry, transactions};

pub use authz::startup_warnings;
pub use context::{Connection, Shared};
pub use operations::watch_request_time;
pub(crate) use parsed::ParsedCommand;
pub use replset::{exhaust_next, is_awaitable_hello};
pub use session_registry::SessionRegistry;
pub use table::{CommandName, Fact, Scope, Target};
pub use users::ensure_account;

use admin::{introspection, testing};
use catalog::{ddl, index, stats, validate};
use crud::{aggregate, change_stream, cursor, explain, find, insert, read, write};

use crate::engine::Interrupt;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::RawDocuments;
pub use crate::protocol::Reply;
use crate::query::guard;
use bson::Document;
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
    /// The command read once into its spec (`parsed.rs`): what every step and the handler
    /// read instead of the document.
    pub parsed: parsed::ParsedCommand<'a>,
    /// Checked by long-running work: `maxTimeMS`, `killOp`, a closed connection.
    pub interrupt: Arc<Interrupt>,
    /// Its session (`lsid`) and, for a retryable write, its `txnNumber`.
    pub session: operation_session::OperationSession,
    /// The multi-document transaction it runs in, if any: its reads and writes go there.
    pub transaction: Option<transactions::TransactionHandle>,
}

/// What the connection does once a command is done.
#[derive(Debug)]
pub enum Outcome {
    /// Send the reply (unless the request asked for none).
    Reply(Reply),
    /// Close the connection without a reply (the `failCommand` fail point's `closeConnection`).
    Close,
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
    let typed = req.parsed.detached();
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
            parsed: typed.unwrap_or(parsed::ParsedCommand::Other(&body)),
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
        C::ReplSetGetStatus => admin::replset::get_status(shared, req).map(Reply::from),
        C::ReplSetGetConfig => admin::replset::get_config(shared, req).map(Reply::from),
        C::ReplSetInitiate => admin::replset::initiate(shared).map(Reply::from),
        C::ReplSetStepDown => admin::replset::step_down(shared, req).map(Reply::from),
        C::ReplSetReconfig => admin::replset::reconfig(shared).map(Reply::from),
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
        // Each waits for its writer jobs itself: a multi-document statement stops between its
        // batches, not while one is being committed.
        C::Update => write::update(shared, req).await.map(Reply::from),
        C::Delete => write::delete(shared, req).await.map(Reply::from),
        C::FindAndModify | C::FindAndModifyLower => {
            awaiting_writer(req, write::find_and_modify(shared, req)).await
        }
        C::Count => blocking(shared, req, |s, r| read::count(s, r, r.parsed.count()?)).await,
        C::Distinct => {
            blocking(shared, req, |s, r| {
                read::distinct(s, r, r.parsed.distinct()?)
            })
            .await
        }
        C::Aggregate if change_stream::opens_stream(&req.parsed) => {
            blocking(shared, req, |s, r| {
                change_stream::aggregate(s, r, r.parsed.aggregate()?)
            })
            .await
        }
        C::Aggregate => {
            blocking(shared, req, |s, r| {
                aggregate::aggregate(s, r, r.parsed.aggregate()?)
            })
            .await
        }
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
        C::UsersInfo => users::users_info(shared, req).map(Reply::from),
        C::GrantRolesToUser => awaiting_writer(req, users::change_roles(shared, req, true)).await,
        C::RevokeRolesFromUser => {
            awaiting_writer(req, users::change_roles(shared, req, false)).await
        }
    }
}
