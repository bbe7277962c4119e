//! The data of mongod's `failCommand` fail point, parsed once when the fail point is configured,
//! and the rule of which commands it applies to (mongod's
//! `CommandHelpers::shouldActivateFailCommandFailPoint`).
//!
//! Owns: the fields mayfly supports and their types, and the match of one command against them.
//! Does not own: the fail point's mode (`failpoint`), nor what the session does with a closed
//! connection.

use super::super::super::args::type_name;
use super::super::super::{CommandName, ParsedCommand};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};
use std::time::Duration;

/// The `data` fields of `failCommand` mayfly knows. mongod ignores fields it does not read;
/// mayfly refuses them, so that a misspelt field does not leave a test silently passing.
const FIELDS: &[&str] = &[
    "failCommands",
    "failAllCommands",
    "errorCode",
    "closeConnection",
    "blockConnection",
    "blockTimeMS",
    "writeConcernError",
    "errorLabels",
    "appName",
    "threadName",
    "namespace",
    "failInternalCommands",
    "failLocalClients",
];

/// Which commands the fail point names.
#[derive(Debug, Clone, PartialEq)]
enum Commands {
    /// `failCommands`: these names (each also matching its command's other spellings).
    Named(Vec<String>),
    /// `failAllCommands`: every command but `configureFailPoint`.
    All,
}

/// `failCommand`'s data, as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct FailCommand {
    commands: Commands,
    /// `errorCode`: the command fails with this code.
    pub error_code: Option<i32>,
    /// `closeConnection`: the connection closes without a reply.
    pub close_connection: bool,
    /// `blockConnection` with its `blockTimeMS`: how long the command waits before it goes on.
    pub block: Option<Duration>,
    /// `writeConcernError`: added to the reply of a command that succeeded.
    pub write_concern_error: Option<Document>,
    /// `errorLabels`: the labels of the failure, in place of those mongod would add.
    pub error_labels: Option<Vec<Bson>>,
    app_name: Option<String>,
    thread_name: Option<String>,
    namespace: Option<String>,
}

/// The client and command a fail point is asked about.
pub struct Caller<'a> {
    pub command: CommandName,
    /// The command's namespace as mongod's `invocation->ns()` gives it ([`namespace_of`]).
    pub namespace: &'a str,
    /// `application.name` of the client's handshake ("" without one, as in mongod).
    pub app_name: &'a str,
    /// The connection's `desc` in `currentOp`: `conn<id>`.
    pub thread_name: &'a str,
}

impl Default for FailCommand {
    /// The data of a fail point never configured: it applies to nothing.
    fn default() -> Self {
        FailCommand {
            commands: Commands::Named(Vec::new()),
            error_code: None,
            close_connection: false,
            block: None,
            write_concern_error: None,
            error_labels: None,
            app_name: None,
            thread_name: None,
            namespace: None,
        }
    }
}

impl FailCommand {
    /// Parses `data` (absent: a fail point that applies to nothing).
    pub fn parse(data: Option<&Document>) -> Result<FailCommand> {
        let empty = Document::new();
        let data = data.unwrap_or(&empty);
        if let Some(field) = data.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(Error::bad_value(format!(
                "failCommand data field '{field}' is not supported; mayfly reads {}",
                FIELDS.join(", ")
            )));
        }
        // mongod applies the fail point to every command once `failAllCommands` is present,
        // whatever its value.
        let commands = if data.contains_key("failAllCommands") {
            Commands::All
        } else {
            Commands::Named(strings(data, "failCommands")?.unwrap_or_default())
        };
        let block = if flag(data, "blockConnection")? {
            let millis = match data.get("blockTimeMS") {
                Some(value) => whole_number(value).ok_or_else(must_specify_block_time)?,
                None => return Err(must_specify_block_time()),
            };
            let millis = u64::try_from(millis).map_err(|_| {
                Error::new(
                    ErrorCode::InvalidOptions,
                    "'blockTimeMS' must be non-negative",
                )
            })?;
            Some(Duration::from_millis(millis))
        } else {
            None
        };
        let error_code = match data.get("errorCode") {
            None => None,
            Some(value) => Some(
                whole_number(value)
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| wrong(value, "errorCode", "a 32-bit whole number"))?,
            ),
        };
        let write_concern_error = match data.get("writeConcernError") {
            None => None,
            Some(Bson::Document(d)) => Some(d.clone()),
            Some(other) => return Err(wrong(other, "writeConcernError", "an object")),
        };
        let error_labels = strings(data, "errorLabels")?
            .map(|labels| labels.into_iter().map(Bson::String).collect());
        // mayfly has no internal clients (other cluster members) and no clients inside the
        // server, so these two never change what the fail point applies to; they are read
        // only to check their type.
        flag(data, "failInternalCommands")?;
        flag(data, "failLocalClients")?;
        Ok(FailCommand {
            commands,
            error_code,
            close_connection: flag(data, "closeConnection")?,
            block,
            write_concern_error,
            error_labels,
            app_name: string(data, "appName")?,
            thread_name: string(data, "threadName")?,
            namespace: string(data, "namespace")?,
        })
    }

    /// Whether the fail point applies to this client's command at all.
    pub fn applies_to(&self, caller: &Caller<'_>) -> bool {
        // Never fails its own command, even when named.
        if caller.command == CommandName::ConfigureFailPoint {
            return false;
        }
        if self
            .thread_name
            .as_deref()
            .is_some_and(|t| t != caller.thread_name)
            || self
                .app_name
                .as_deref()
                .is_some_and(|a| a != caller.app_name)
            || self
                .namespace
                .as_deref()
                .is_some_and(|n| n != caller.namespace)
        {
            return false;
        }
        match &self.commands {
            Commands::All => true,
            Commands::Named(names) => names.iter().any(|n| same_command(caller.command, n)),
        }
    }

    /// Whether, applying, it does something before the command runs (mongod enters the fail
    /// point there only then, so a `{times: n}` fail point with only a `writeConcernError`
    /// keeps its count for the write concern).
    pub fn acts_before(&self) -> bool {
        self.close_connection || self.block.is_some() || self.error_code.is_some()
    }
}

/// The namespace mongod's failCommand compares with `namespace`: the command's `invocation->ns()`.
/// A collection named as a string in the first field gives `db.collection` (`renameCollection`
/// names it in full); `getMore` names it in `collection`, `explain` in its inner command, an
/// `aggregate` on the database is `db.$cmd.aggregate`; any other command gives its database.
/// `getMore`'s collection and the command `explain` runs are read from the parse.
pub fn namespace_of(
    command: CommandName,
    db: &str,
    (body, parsed): (&Document, &ParsedCommand<'_>),
) -> String {
    let first = body.get(command.name());
    match (command, first) {
        (CommandName::RenameCollection, Some(Bson::String(full))) => full.clone(),
        (CommandName::GetMore, _) => match parsed.cursor_collection() {
            Some(c) => format!("{db}.{c}"),
            None => db.to_owned(),
        },
        (CommandName::Explain, Some(Bson::Document(inner))) => {
            match (
                inner.keys().next().and_then(|n| CommandName::from_name(n)),
                parsed.explained(),
            ) {
                (Some(inner_command), Some(explained)) => {
                    namespace_of(inner_command, db, (inner, explained))
                }
                // A command explain does not run is refused before it names anything.
                _ => db.to_owned(),
            }
        }
        (CommandName::Aggregate, Some(b)) if !matches!(b, Bson::String(_)) => {
            format!("{db}.$cmd.aggregate")
        }
        (_, Some(Bson::String(collection))) => format!("{db}.{collection}"),
        _ => db.to_owned(),
    }
}

/// Whether `listed` names `command`: its name or another spelling of the same command (mongod's
/// `Command::hasAlias`; `isMaster` and `ismaster` are one command, `hello` another).
fn same_command(command: CommandName, listed: &str) -> bool {
    CommandName::from_name(listed).is_some_and(|named| canonical(named) == canonical(command))
}

fn canonical(command: CommandName) -> CommandName {
    use CommandName as C;
    match command {
        C::IsMasterLower => C::IsMaster,
        C::BuildInfoLower => C::BuildInfo,
        C::FindAndModifyLower => C::FindAndModify,
        C::DbStatsLower => C::DbStats,
        C::GetLastErrorLower => C::GetLastError,
        other => other,
    }
}

fn must_specify_block_time() -> Error {
    Error::new(
        ErrorCode::InvalidOptions,
        "must specify 'blockTimeMS' when 'blockConnection' is true",
    )
}

fn wrong(value: &Bson, field: &str, expected: &str) -> Error {
    Error::type_mismatch(format!(
        "failCommand data field '{field}' must be {expected}, not {}",
        type_name(value)
    ))
}

/// A number with an integral value (mongod's `bsonExtractIntegerField`).
fn whole_number(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(d) if d.fract() == 0.0 && d.abs() < 9.0e18 => Some(*d as i64),
        _ => None,
    }
}

fn flag(data: &Document, field: &str) -> Result<bool> {
    match data.get(field) {
        None => Ok(false),
        Some(Bson::Boolean(b)) => Ok(*b),
        Some(other) => Err(wrong(other, field, "a boolean")),
    }
}

fn string(data: &Document, field: &str) -> Result<Option<String>> {
    match data.get(field) {
        None => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(wrong(other, field, "a string")),
    }
}

fn strings(data: &Document, field: &str) -> Result<Option<Vec<String>>> {
    let Some(value) = data.get(field) else {
        return Ok(None);
    };
    let Bson::Array(items) = value else {
        return Err(wrong(value, field, "an array of strings"));
    };
    items
        .iter()
        .map(|item| match item {
            Bson::String(s) => Ok(s.clone()),
            other => Err(wrong(other, field, "an array of strings")),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn caller<'a>(command: CommandName, namespace: &'a str, app_name: &'a str) -> Caller<'a> {
        Caller {
            command,
            namespace,
            app_name,
            thread_name: "conn7",
        }
    }

    #[test]
    fn data_is_parsed_with_its_types() {
        let parsed = FailCommand::parse(Some(&doc! {
            "failCommands": ["find", "insert"],
            "errorCode": 91,
            "closeConnection": false,
            "blockConnection": true,
            "blockTimeMS": 250,
            "writeConcernError": {"code": 64, "errmsg": "waiting"},
            "errorLabels": ["RetryableWriteError"],
            "appName": "app",
        }))
        .unwrap();
        assert_eq!(parsed.error_code, Some(91));
        assert_eq!(parsed.block, Some(Duration::from_millis(250)));
        assert!(!parsed.close_connection);
        assert_eq!(
            parsed.write_concern_error,
            Some(doc! {"code": 64, "errmsg": "waiting"})
        );
        assert_eq!(
            parsed.error_labels,
            Some(vec![Bson::String("RetryableWriteError".into())])
        );
        assert!(parsed.acts_before());
        let only_wce = FailCommand::parse(Some(
            &doc! {"failCommands": ["insert"], "writeConcernError": {}},
        ))
        .unwrap();
        assert!(!only_wce.acts_before());
    }

    #[test]
    fn bad_data_is_refused() {
        for (data, code, message) in [
            (
                doc! {"blockConnection": true},
                ErrorCode::InvalidOptions,
                "must specify 'blockTimeMS' when 'blockConnection' is true",
            ),
            (
                doc! {"blockConnection": true, "blockTimeMS": "1"},
                ErrorCode::InvalidOptions,
                "must specify 'blockTimeMS' when 'blockConnection' is true",
            ),
            (
                doc! {"blockConnection": true, "blockTimeMS": -1},
                ErrorCode::InvalidOptions,
                "'blockTimeMS' must be non-negative",
            ),
            (
                doc! {"errorCode": "91"},
                ErrorCode::TypeMismatch,
                "failCommand data field 'errorCode' must be a 32-bit whole number, not string",
            ),
            (
                doc! {"errorCode": 1.5},
                ErrorCode::TypeMismatch,
                "failCommand data field 'errorCode' must be a 32-bit whole number, not double",
            ),
            (
                doc! {"failCommands": "find"},
                ErrorCode::TypeMismatch,
                "failCommand data field 'failCommands' must be an array of strings, not string",
            ),
            (
                doc! {"failCommands": ["find", 1]},
                ErrorCode::TypeMismatch,
                "failCommand data field 'failCommands' must be an array of strings, not int",
            ),
            (
                doc! {"closeConnection": 1},
                ErrorCode::TypeMismatch,
                "failCommand data field 'closeConnection' must be a boolean, not int",
            ),
            (
                doc! {"writeConcernError": 1},
                ErrorCode::TypeMismatch,
                "failCommand data field 'writeConcernError' must be an object, not int",
            ),
        ] {
            let err = FailCommand::parse(Some(&data)).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{data}");
        }
        let err = FailCommand::parse(Some(&doc! {"errorExtraInfo": {}})).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadValue);
        assert!(err.message.starts_with(
            "failCommand data field 'errorExtraInfo' is not supported; mayfly reads failCommands"
        ));
    }

    #[test]
    fn applies_by_command_spelling_app_thread_and_namespace() {
        let fc = |data: Document| FailCommand::parse(Some(&data)).unwrap();
        let find = caller(CommandName::Find, "db.c", "app");
        let named = fc(doc! {"failCommands": ["find"]});
        assert!(named.applies_to(&find));
        assert!(!named.applies_to(&caller(CommandName::Insert, "db.c", "app")));
        let is_master = fc(doc! {"failCommands": ["ismaster"]});
        assert!(is_master.applies_to(&caller(CommandName::IsMaster, "admin", "")));
        assert!(is_master.applies_to(&caller(CommandName::IsMasterLower, "admin", "")));
        assert!(!is_master.applies_to(&caller(CommandName::Hello, "admin", "")));
        let all = fc(doc! {"failAllCommands": true});
        assert!(all.applies_to(&find));
        assert!(!all.applies_to(&caller(CommandName::ConfigureFailPoint, "admin", "app")));
        let app = fc(doc! {"failCommands": ["find"], "appName": "other"});
        assert!(!app.applies_to(&find));
        let no_app = fc(doc! {"failCommands": ["find"], "appName": ""});
        assert!(no_app.applies_to(&caller(CommandName::Find, "db.c", "")));
        let thread = fc(doc! {"failCommands": ["find"], "threadName": "conn7"});
        assert!(thread.applies_to(&find));
        let other_thread = fc(doc! {"failCommands": ["find"], "threadName": "conn8"});
        assert!(!other_thread.applies_to(&find));
        let ns = fc(doc! {"failCommands": ["find"], "namespace": "db.d"});
        assert!(!ns.applies_to(&find));
        assert!(ns.applies_to(&caller(CommandName::Find, "db.d", "app")));
        assert!(!fc(doc! {}).applies_to(&find));
    }

    #[test]
    fn namespaces_follow_mongod() {
        use CommandName as C;
        for (command, body, expected) in [
            (C::Find, doc! {"find": "c"}, "db.c"),
            (C::Ping, doc! {"ping": 1}, "db"),
            (
                C::Aggregate,
                doc! {"aggregate": 1, "pipeline": [], "cursor": {}},
                "db.$cmd.aggregate",
            ),
            (
                C::Aggregate,
                doc! {"aggregate": "c", "pipeline": [], "cursor": {}},
                "db.c",
            ),
            (
                C::GetMore,
                doc! {"getMore": 5_i64, "collection": "c"},
                "db.c",
            ),
            (
                C::RenameCollection,
                doc! {"renameCollection": "a.b", "to": "a.c"},
                "a.b",
            ),
            (C::Explain, doc! {"explain": {"count": "c"}}, "db.c"),
            (
                C::Explain,
                doc! {"explain": {"getMore": 5_i64, "collection": "c"}},
                "db",
            ),
        ] {
            let parsed = ParsedCommand::parse(command, &body, false).unwrap();
            assert_eq!(
                namespace_of(command, "db", (&body, &parsed)),
                expected,
                "{body}"
            );
        }
    }
}
