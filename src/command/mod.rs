//! The command layer: one `match` on the command name, then a module per family. Each command
//! reads its typed arguments from the command document and returns its reply document (or an
//! [`Error`], turned into `{ok: 0, ...}` in exactly one place, [`execute`]).
//!
//! Owns: envelope rules shared by all commands (`$db`, admin-only and test-only commands,
//! transaction fields on a standalone, the legacy OP_QUERY allow-list). Does not own: sockets,
//! framing or compression (`session`, `wire`).

mod admin;
mod aggregate;
mod args;
mod auth;
mod batch;
mod context;
mod cursor;
mod ddl;
mod explain;
mod find;
mod handshake;
mod index;
mod insert;
mod introspection;
mod read;
mod sessions;
mod stats;
mod table;
mod testing;
mod write;

pub use context::{Connection, Shared};
pub use table::{CommandName, Scope};

use crate::error::{Error, ErrorCode, Result};
use crate::status::OpKind;
use bson::Document;

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
    pub body: &'a Document,
    /// Checked by long-running work: `maxTimeMS`, `killOp`, a closed connection.
    pub interrupt: std::sync::Arc<crate::engine::Interrupt>,
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

/// Runs one command and returns its reply: success or `{ok: 0, errmsg, code, codeName}`.
/// `legacy_db` is the database of an OP_QUERY namespace, `None` for OP_MSG.
pub async fn execute(
    shared: &Shared,
    conn: &mut Connection,
    body: Document,
    legacy_db: Option<&str>,
) -> (String, Document) {
    let name = body.keys().next().cloned().unwrap_or_default();
    let reply = match run(shared, conn, &name, &body, legacy_db).await {
        Ok(reply) => reply,
        Err(err) => err.to_reply(),
    };
    (name, reply)
}

async fn run(
    shared: &Shared,
    conn: &mut Connection,
    name: &str,
    body: &Document,
    legacy_db: Option<&str>,
) -> Result<Document> {
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
    if ["txnNumber", "startTransaction", "autocommit"]
        .iter()
        .any(|f| body.contains_key(f))
    {
        return Err(Error::new(
            ErrorCode::IllegalOperation,
            "Transaction numbers are only allowed on a replica set member or mongos",
        ));
    }
    shared.counters.count(OpKind::Command, 1);
    let request = Request {
        name: command,
        db,
        body,
        interrupt: crate::engine::Interrupt::none(),
    };
    dispatch(shared, conn, &request).await
}

/// The command a name refers to, if this server has it (test commands only when enabled).
pub fn lookup(shared: &Shared, name: &str) -> Result<CommandName> {
    CommandName::from_name(name)
        .filter(|c| !c.scope().is_test() || shared.config.enable_test_commands)
        .ok_or_else(|| {
            Error::new(
                ErrorCode::CommandNotFound,
                format!("no such command: '{name}'"),
            )
        })
}

async fn dispatch(shared: &Shared, conn: &mut Connection, req: &Request<'_>) -> Result<Document> {
    use CommandName as C;
    match req.name {
        C::Hello | C::IsMaster | C::IsMasterLower => handshake::hello(shared, conn, req),
        C::Ping => Ok(admin::ping()),
        C::BuildInfo | C::BuildInfoLower => Ok(introspection::build_info()),
        C::GetParameter => admin::get_parameter(shared, req),
        C::GetLog => admin::get_log(req),
        C::GetCmdLineOpts => Ok(introspection::cmd_line_opts(shared)),
        C::HostInfo => Ok(introspection::host_info(shared)),
        C::ServerStatus => Ok(introspection::server_status(shared, req.body)),
        C::WhatsMyUri => Ok(admin::whats_my_uri(conn)),
        C::ConnectionStatus => Ok(admin::connection_status(req)),
        C::ListCommands => Ok(introspection::list_commands(shared)),
        C::StartSession => Ok(sessions::start_session()),
        C::EndSessions | C::RefreshSessions | C::KillSessions | C::KillAllSessions => {
            sessions::acknowledge(req)
        }
        C::SaslStart | C::SaslContinue => auth::sasl(req),
        C::Insert => insert::insert(shared, req).await,
        C::Find => find::find(shared, req),
        C::GetMore => cursor::get_more(shared, req),
        C::KillCursors => cursor::kill_cursors(shared, req),
        C::Update => write::update(shared, req).await,
        C::Delete => write::delete(shared, req).await,
        C::FindAndModify | C::FindAndModifyLower => write::find_and_modify(shared, req).await,
        C::Count => read::count(shared, req),
        C::Distinct => read::distinct(shared, req),
        C::Aggregate => aggregate::aggregate(shared, req),
        C::Explain => explain::explain(shared, req),
        C::Create => ddl::create(shared, req).await,
        C::Drop => ddl::drop(shared, req).await,
        C::DropDatabase => ddl::drop_database(shared, req).await,
        C::RenameCollection => ddl::rename_collection(shared, req).await,
        C::ListCollections => ddl::list_collections(shared, req),
        C::ListDatabases => ddl::list_databases(shared, req),
        C::DbStats | C::DbStatsLower => stats::db_stats(shared, req),
        C::CollStats => stats::coll_stats(shared, req),
        C::CreateIndexes => index::create_indexes(shared, req).await,
        C::ListIndexes => index::list_indexes(shared, req),
        C::DropIndexes => index::drop_indexes(shared, req).await,
        C::AdvanceClock => testing::advance_clock(shared, req),
        C::Reaper => testing::reaper(shared, req).await,
        C::CollMod => index::coll_mod(shared, req).await,
        C::Sleep => testing::sleep(req).await,
    }
}
