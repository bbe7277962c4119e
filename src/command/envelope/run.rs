//! The order of the steps every command goes through, in one place: [`execute`] turns a
//! command's outcome into its reply (error labels, `$clusterTime`), and `run` takes the
//! generic fields once, checks `$db`, the command's row, the session fields, the `failCommand`
//! fail point, the concerns, `maxTimeMS`, authorization and the Cosmos gate, admits the
//! request units, registers the operation, enters its session and transaction, and hands the
//! command to `dispatch`.
//!
//! Owns the order (mongod's, where it is observable: a command with two faults gets mongod's
//! error). Does not own any step's rule: each lives in its own file of `envelope/` or
//! `state/`.

use super::super::generic::GenericArgs;
use super::super::{
    args, cluster_fields, dispatch, failpoint, operation_session, replset, retryable, session_id,
    session_registry, transactions, CommandName, Connection, Fact, Outcome, ParsedCommand, Request,
    Scope, Shared,
};
use super::{authz, cosmos, error_labels, fail_command};
use crate::clock::Deadline;
use crate::engine::Interrupt;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::{RawDocuments, Reply};
use crate::status::OpKind;
use bson::{Bson, Document};
use std::sync::Arc;

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

/// Runs one command and returns what to do: reply with success or
/// `{ok: 0, errmsg, code, codeName}`, or close the connection. `legacy_db` is the database of
/// an OP_QUERY namespace, `None` for OP_MSG. `interrupt` is the operation's: the caller may
/// kill it (the client went away); `maxTimeMS` sets its deadline. Returned with the command's
/// name and its parse, when it got that far (the profiler's namespace reads it).
pub async fn execute(
    shared: &Arc<Shared>,
    conn: &mut Connection,
    body: Arc<Document>,
    documents: Option<Arc<RawDocuments>>,
    legacy_db: Option<&str>,
    interrupt: Arc<Interrupt>,
) -> (String, Outcome, Option<ParsedCommand<'static>>) {
    let name = body.keys().next().cloned().unwrap_or_default();
    // Taken once; every envelope step below reads its generic field from here.
    let generic = GenericArgs::take(&body);
    let mut parsed = None;
    let run = run(
        shared,
        conn,
        (&name, &generic),
        (&body, documents.as_ref()),
        (legacy_db, &mut parsed),
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
    (name, outcome, parsed)
}

async fn run(
    shared: &Arc<Shared>,
    conn: &mut Connection,
    (name, generic): (&str, &GenericArgs<'_>),
    (body, documents): (&Arc<Document>, Option<&Arc<RawDocuments>>),
    (legacy_db, parsed_out): (Option<&str>, &mut Option<ParsedCommand<'static>>),
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
    // The command read once: every step below and the handler read this value.
    let parsed = ParsedCommand::parse(command, body, documents.is_some())?;
    *parsed_out = parsed.detached();
    let session = operation_session::parse(
        generic,
        parsed.stages().as_ref(),
        command,
        &conn.authenticated,
        shared.config.replication.enabled(),
    )?;
    // Where mongod evaluates `failCommand`: after the session fields, before maxTimeMS.
    match fail_command::before(shared, conn, command, db, (body, &parsed), &interrupt).await {
        fail_command::Before::Run => {}
        fail_command::Before::Fail(failure) => return Ok(Outcome::Reply(Reply::Document(failure))),
        fail_command::Before::Close => return Ok(Outcome::Close),
    }
    let replicated = shared.replica_set.is_some();
    args::check_write_concern(generic.write_concern, replicated)?;
    cluster_fields::check(name, body)?;
    if let Some(rs) = &shared.replica_set {
        replset::check_gossip(generic.cluster_time)?;
        let now = rs.last_op_time(shared.engine.optimes());
        match session.transaction {
            Some(statement) => replset::check_transaction_concerns(command, generic, statement)?,
            None => replset::check_read_concern(command, generic, now)?,
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
        parsed,
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
    // Cosmos ignores write concerns (always quorum): no concern goes unmet there.
    let concerns_judged = !shared
        .config
        .profile
        .enforces(crate::profile::Rule::WriteConcerns);
    if replicated && concerns_judged {
        if let (Some(error), Reply::Document(reply)) =
            (replset::write_concern_error(command, generic), &mut reply)
        {
            // Before `ok`, where mongod puts it: the write is applied, its concern unmet.
            let ok = reply.remove("ok").unwrap_or(Bson::Double(1.0));
            reply.insert("writeConcernError", error);
            reply.insert("ok", ok);
        }
    }
    let reply = fail_command::after(shared, conn, command, db, (body, &request.parsed), reply);
    Ok(Outcome::Reply(match access {
        authz::Access::Allowed => reply,
        authz::Access::OnlyDatabasesOf(roles) => authz::only_databases_of(&roles, reply),
    }))
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
/// ([`crate::command::state::operations::watch_request_time`]); any other outcome as it is.
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
