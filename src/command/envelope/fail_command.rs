//! The `failCommand` fail point's two hooks around every command, where mongod evaluates it:
//! [`before`] the command runs (wait, fail or close the connection) and [`after`] it succeeded
//! (add a write concern error). They read the fail point registry (`state::failpoint`) and
//! change nothing but its count of firings.

use super::super::state::failpoint::{namespace_of, Caller, FailCommand};
use super::super::state::identity;
use super::super::ParsedCommand;
use super::super::{CommandName, Connection, Fact, Reply, Shared};
use crate::engine::Interrupt;
use crate::error::ErrorCode;
use bson::{doc, Bson, Document};
use std::sync::Arc;

/// The message of every failure `failCommand` injects.
const FAILED_BY_FAIL_POINT: &str = "Failing command via 'failCommand' failpoint";

/// What `failCommand` does to a command about to run.
pub enum Before {
    /// Run it (after a `blockConnection` wait, if any).
    Run,
    /// Answer this failure instead.
    Fail(Document),
    /// Close the connection without a reply.
    Close,
}

/// Consulted once per command before it runs, where mongod evaluates `failCommand`
/// (`CommandHelpers::evaluateFailCommandFailPoint`): the fail point fires only for a command
/// it applies to and only when it would do something here (wait, fail or close). A wait
/// sleeps on the timer, not on an async worker, and ends early when the operation is
/// interrupted (the client went away).
pub async fn before(
    shared: &Shared,
    conn: &Connection,
    command: CommandName,
    db: &str,
    command_read: (&Document, &ParsedCommand<'_>),
    interrupt: &Interrupt,
) -> Before {
    let Some(data) = reach(
        shared,
        conn,
        (command, db),
        command_read,
        FailCommand::acts_before,
    ) else {
        return Before::Run;
    };
    if let Some(wait) = data.block {
        tracing::info!(
            command = command.name(),
            ?wait,
            "blocking command via failCommand"
        );
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            err = interrupt.interrupted() => return Before::Fail(err.to_reply()),
        }
    }
    if data.close_connection {
        tracing::info!(
            command = command.name(),
            "failing command via failCommand: closing connection"
        );
        return Before::Close;
    }
    match data.error_code {
        Some(code) => {
            tracing::info!(
                command = command.name(),
                code,
                "failing command via failCommand"
            );
            Before::Fail(failure(code, data.error_labels.as_ref()))
        }
        None => Before::Run,
    }
}

/// Consulted after a command that supports a write concern succeeded, where mongod waits for
/// its write concern: a `failCommand` with `writeConcernError` that applies adds it to the
/// reply (and its `errorLabels`, if any); the command's work is done and stays done.
pub fn after(
    shared: &Shared,
    conn: &Connection,
    command: CommandName,
    db: &str,
    (body, parsed): (&Document, &ParsedCommand<'_>),
    reply: Reply,
) -> Reply {
    if reply.is_error() || !supports_write_concern(command, parsed) {
        return reply;
    }
    let Some(data) = reach(shared, conn, (command, db), (body, parsed), |d| {
        d.write_concern_error.is_some()
    }) else {
        return reply;
    };
    let Some(wce) = &data.write_concern_error else {
        return reply;
    };
    let mut reply = reply.into_document();
    reply.insert("writeConcernError", wce.clone());
    // Labels the fail point names replace those mongod's rules give (`error_labels`).
    if let Some(labels) = &data.error_labels {
        reply.insert("errorLabels", labels.clone());
    }
    Reply::Document(reply)
}

/// Reaches `failCommand` for this command of this connection, if it applies and `acts` holds.
fn reach(
    shared: &Shared,
    conn: &Connection,
    (command, db): (CommandName, &str),
    (body, parsed): (&Document, &ParsedCommand<'_>),
    acts: impl Fn(&FailCommand) -> bool,
) -> Option<Arc<FailCommand>> {
    let namespace = namespace_of(command, db, (body, parsed));
    let thread_name = format!("conn{}", conn.id);
    let caller = Caller {
        command,
        namespace: &namespace,
        app_name: app_name(conn, command, body),
        thread_name: &thread_name,
    };
    shared
        .fail_points
        .reach(|data| data.applies_to(&caller) && acts(data))
}

/// The client's `application.name`: from the handshake, or, on the handshake itself, from the
/// `client` document it carries (mongod reads it before evaluating the fail point).
fn app_name<'a>(conn: &'a Connection, command: CommandName, body: &'a Document) -> &'a str {
    let handshake = matches!(
        command,
        CommandName::Hello | CommandName::IsMaster | CommandName::IsMasterLower
    );
    let metadata = match &conn.client_metadata {
        Some(meta) => Some(meta),
        None if handshake => body.get_document("client").ok(),
        None => None,
    };
    metadata.and_then(identity::app_name).unwrap_or("")
}

/// The failure `failCommand` injects: `{ok: 0, errmsg, code, codeName}`, with its labels
/// ([`crate::command::state::transactions::labels`]). Built here rather than as an
/// [`crate::error::Error`]: the code is any number a test names, not only those of
/// [`ErrorCode`].
fn failure(code: i32, labels: Option<&Vec<Bson>>) -> Document {
    let name = ErrorCode::from_code(code)
        .map(|c| c.name().to_owned())
        // mongod's codeName for a code it has no name for.
        .unwrap_or_else(|| format!("Location{code}"));
    let mut reply = doc! {
        "ok": 0.0,
        "errmsg": FAILED_BY_FAIL_POINT,
        "code": code,
        "codeName": name,
    };
    // Labels the fail point names (even none) replace those mongod's rules give
    // (`error_labels`).
    if let Some(labels) = labels {
        reply.insert("errorLabels", labels.clone());
    }
    reply
}

/// Commands that take a `writeConcern` (mongod's `supportsWriteConcern`): the writes, the
/// catalog and user commands, and an `aggregate` ending in `$out` or `$merge`.
fn supports_write_concern(command: CommandName, parsed: &ParsedCommand<'_>) -> bool {
    match command {
        CommandName::Aggregate => matches!(
            parsed.stages().and_then(|stages| stages.last()),
            Some("$out" | "$merge")
        ),
        other => other.has(Fact::WriteConcern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_failures_carry_mongod_code_names_and_given_labels() {
        let plain = failure(91, None);
        assert_eq!(plain.get_str("codeName").unwrap(), "ShutdownInProgress");
        assert_eq!(plain.get_str("errmsg").unwrap(), FAILED_BY_FAIL_POINT);
        assert!(!plain.contains_key("errorLabels"));
        let unnamed = failure(1234, None);
        assert_eq!(unnamed.get_str("codeName").unwrap(), "Location1234");
        let labelled = failure(2, Some(&vec![Bson::from("RetryableWriteError")]));
        assert_eq!(
            labelled.get_array("errorLabels").unwrap(),
            &vec![Bson::from("RetryableWriteError")]
        );
    }
}
