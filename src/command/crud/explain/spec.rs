//! `explain`'s own fields (`explain`, `verbosity`) read once, and the explained command read
//! with its own spec: what authorization, the Cosmos gate and the handler read of an explain.
//!
//! Owns: which commands explain can run and the order of its parse errors (its unknown
//! fields, then the inner command's shape, the verbosity, the inner command's own fields).
//! Does not own: the inner command's fields (their specs) or the plans (`explain`, `plan`).

use super::plan::Verbosity;
use crate::command::args::check_fields;
use crate::command::CommandName;
use crate::error::{Error, Result};
use bson::{Bson, Document};

/// The commands explain runs. Another known command is refused when explain runs
/// (`Explain failed due to unknown command`).
const EXPLAINED: &[CommandName] = &[
    CommandName::Find,
    CommandName::Count,
    CommandName::Distinct,
    CommandName::Aggregate,
    CommandName::Update,
    CommandName::Delete,
    CommandName::FindAndModify,
    CommandName::FindAndModifyLower,
];

/// `explain` as the command carries it, with its inner command parsed. The parse's type `P`
/// is the caller's (`ParsedCommand`, which holds this spec in turn): this module reads
/// `explain`'s fields and needs nothing of the parse but the function that makes it.
#[derive(Debug)]
pub struct ExplainSpec<P> {
    pub verbosity: Verbosity,
    /// The explained command as sent (the reply echoes it).
    pub command: Document,
    /// The explained command read by its spec; `None` for a command explain does not run.
    pub inner: Option<P>,
}

impl<P> ExplainSpec<P> {
    /// Reads `cmd`; `parse` reads a command explain runs with that command's spec.
    pub fn read(
        cmd: &Document,
        parse: impl FnOnce(CommandName, &Document) -> Result<P>,
    ) -> Result<ExplainSpec<P>> {
        check_fields(cmd, "explain", &["verbosity"])?;
        let command = match cmd.get("explain") {
            Some(Bson::Document(d)) => d.clone(),
            _ => {
                return Err(Error::failed_to_parse(
                    "explain command requires a nested object",
                ))
            }
        };
        let verbosity = Verbosity::parse(cmd.get("verbosity"))?;
        let inner = match command
            .keys()
            .next()
            .and_then(|name| CommandName::from_name(name))
        {
            Some(name) if EXPLAINED.contains(&name) => Some(parse(name, &command)?),
            _ => None,
        };
        Ok(ExplainSpec {
            verbosity,
            command,
            inner,
        })
    }

    /// The explained command's name as sent.
    pub fn name(&self) -> &str {
        self.command.keys().next().map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::ParsedCommand;
    use crate::error::ErrorCode;
    use bson::doc;

    /// As `ParsedCommand::parse` reads an explain.
    fn read(body: &Document) -> Result<ExplainSpec<ParsedCommand<'static>>> {
        ParsedCommand::parse(CommandName::Explain, body, false).map(|parsed| {
            parsed.explain().map(|spec| ExplainSpec {
                verbosity: spec.verbosity,
                command: spec.command.clone(),
                inner: spec.inner.clone(),
            })
        })?
    }

    #[test]
    fn the_inner_command_is_read_by_its_own_spec() {
        let body = doc! {"explain": {"aggregate": "c", "pipeline": [{"$out": "o"}], "cursor": {}},
        "verbosity": "queryPlanner"};
        let spec = read(&body).unwrap();
        assert_eq!(spec.verbosity, Verbosity::QueryPlanner);
        assert_eq!(spec.name(), "aggregate");
        let stages = spec.inner.as_ref().and_then(ParsedCommand::stages);
        assert_eq!(stages.and_then(|s| s.last()), Some("$out"));
        let update =
            doc! {"explain": {"update": "c", "updates": [{"q": {}, "u": {}, "upsert": true}]}};
        let spec = read(&update).unwrap();
        assert_eq!(spec.verbosity, Verbosity::AllPlansExecution);
        assert!(spec.inner.as_ref().is_some_and(|p| p.update().is_ok()));
        // A command explain does not run is kept as sent, for the handler to refuse.
        let insert = doc! {"explain": {"insert": "c", "documents": [{}]}};
        let spec = read(&insert).unwrap();
        assert!(spec.inner.is_none() && spec.name() == "insert");
    }

    #[test]
    fn the_first_error_is_explains_then_the_inner_commands() {
        let cases = [
            (
                doc! {"explain": 1, "bogus": 1},
                ErrorCode::IDLUnknownField,
                "BSON field 'explain.bogus' is an unknown field.",
            ),
            (
                doc! {"explain": 1},
                ErrorCode::FailedToParse,
                "explain command requires a nested object",
            ),
            (
                doc! {"explain": {"find": "c", "bogus": 1}, "verbosity": 1},
                ErrorCode::FailedToParse,
                "explain verbosity must be a string",
            ),
            (
                doc! {"explain": {"find": "c", "bogus": 1}},
                ErrorCode::IDLUnknownField,
                "BSON field 'find.bogus' is an unknown field.",
            ),
            (
                doc! {"explain": {"delete": "c", "deletes": [{"q": {}}]}},
                ErrorCode::Location40414,
                "BSON field 'delete.deletes.limit' is missing but a required field",
            ),
        ];
        for (body, code, message) in cases {
            let err = read(&body).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (code, message), "{body}");
        }
    }
}
