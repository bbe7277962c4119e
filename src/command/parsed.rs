//! The command parsed once: right after `$db` is judged, the envelope reads a command that has
//! a spec into it ([`ParsedCommand::parse`]), and every later step reads that one value —
//! authorization's needs, the transaction allow-list, the Cosmos gate, the `failCommand`
//! write-concern rule, where a change stream opens, the profiler's namespace and the handler.
//! A parse error is the command's error reply.
//!
//! Owns: which commands have a spec, and handing the specs across threads. Does not own any
//! field's meaning: each spec lives beside its handler. Commands without a spec yet are
//! [`ParsedCommand::Other`], read from the document by each step.

use super::crud::aggregate::AggregateSpec;
use super::crud::cursor::GetMoreSpec;
use super::crud::find::FindSpec;
use super::crud::read::{CountSpec, DistinctSpec};
use super::CommandName;
use crate::error::{Error, Result};
use crate::pipeline::lite::LitePipeline;
use bson::Document;
use std::sync::Arc;

/// A command as every step reads it. The specs own their values and are shared, so work moved
/// to the blocking pool takes them along without copying or reading the document again.
#[derive(Debug, Clone)]
pub enum ParsedCommand<'a> {
    Find(Arc<FindSpec>),
    Aggregate(Arc<AggregateSpec>),
    Count(Arc<CountSpec>),
    Distinct(Arc<DistinctSpec>),
    GetMore(Arc<GetMoreSpec>),
    /// A command without a spec yet: its document.
    Other(&'a Document),
}

impl<'a> ParsedCommand<'a> {
    /// Reads `body`, the command `name`; the error is the command's reply.
    pub fn parse(name: CommandName, body: &'a Document) -> Result<ParsedCommand<'a>> {
        Ok(match name {
            CommandName::Find => ParsedCommand::Find(Arc::new(FindSpec::read(body)?)),
            CommandName::Aggregate => {
                ParsedCommand::Aggregate(Arc::new(AggregateSpec::read(body)?))
            }
            CommandName::Count => ParsedCommand::Count(Arc::new(CountSpec::read(body)?)),
            CommandName::Distinct => ParsedCommand::Distinct(Arc::new(DistinctSpec::read(body)?)),
            CommandName::GetMore => ParsedCommand::GetMore(Arc::new(GetMoreSpec::read(body)?)),
            _ => ParsedCommand::Other(body),
        })
    }

    /// The typed value alone, free of the document's lifetime (`None` for [`Other`], which the
    /// receiver rebuilds from its own handle on the document).
    ///
    /// [`Other`]: ParsedCommand::Other
    pub fn detached(&self) -> Option<ParsedCommand<'static>> {
        match self {
            ParsedCommand::Find(s) => Some(ParsedCommand::Find(Arc::clone(s))),
            ParsedCommand::Aggregate(s) => Some(ParsedCommand::Aggregate(Arc::clone(s))),
            ParsedCommand::Count(s) => Some(ParsedCommand::Count(Arc::clone(s))),
            ParsedCommand::Distinct(s) => Some(ParsedCommand::Distinct(Arc::clone(s))),
            ParsedCommand::GetMore(s) => Some(ParsedCommand::GetMore(Arc::clone(s))),
            ParsedCommand::Other(_) => None,
        }
    }

    /// An aggregate's stages: their names and the collections they read and write.
    pub fn stages(&self) -> Option<LitePipeline<'_>> {
        match self {
            ParsedCommand::Aggregate(spec) => Some(spec.stages()),
            _ => None,
        }
    }

    /// The collection a cursor command continues (`getMore`'s `collection`).
    pub fn cursor_collection(&self) -> Option<&str> {
        match self {
            ParsedCommand::GetMore(spec) => Some(spec.collection()),
            _ => None,
        }
    }

    pub fn find(&self) -> Result<&FindSpec> {
        match self {
            ParsedCommand::Find(spec) => Ok(spec),
            _ => Err(mismatch("find")),
        }
    }

    pub fn aggregate(&self) -> Result<&AggregateSpec> {
        match self {
            ParsedCommand::Aggregate(spec) => Ok(spec),
            _ => Err(mismatch("aggregate")),
        }
    }

    pub fn count(&self) -> Result<&CountSpec> {
        match self {
            ParsedCommand::Count(spec) => Ok(spec),
            _ => Err(mismatch("count")),
        }
    }

    pub fn distinct(&self) -> Result<&DistinctSpec> {
        match self {
            ParsedCommand::Distinct(spec) => Ok(spec),
            _ => Err(mismatch("distinct")),
        }
    }

    pub fn get_more(&self) -> Result<&GetMoreSpec> {
        match self {
            ParsedCommand::GetMore(spec) => Ok(spec),
            _ => Err(mismatch("getMore")),
        }
    }
}

/// A handler reached with another command's parse: dispatch and the parse disagree, a bug.
fn mismatch(command: &str) -> Error {
    Error::internal(format!(
        "the {command} handler was given another command's parse"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn commands_with_a_spec_are_parsed_and_the_rest_kept_as_sent() {
        let find = doc! {"find": "c", "filter": {"a": 1}};
        let aggregate = doc! {"aggregate": "c", "pipeline": [{"$out": "o"}], "cursor": {}};
        let count = doc! {"count": "c"};
        let distinct = doc! {"distinct": "c", "key": "a"};
        let get_more = doc! {"getMore": 5_i64, "collection": "c"};
        let ping = doc! {"ping": 1, "bogus": 1};
        let parsed = |name, body| ParsedCommand::parse(name, body).unwrap();
        assert!(parsed(CommandName::Find, &find).find().is_ok());
        let stages = parsed(CommandName::Aggregate, &aggregate);
        assert_eq!(stages.stages().and_then(|s| s.last()), Some("$out"));
        assert!(parsed(CommandName::Count, &count).count().is_ok());
        assert!(parsed(CommandName::Distinct, &distinct).distinct().is_ok());
        let more = parsed(CommandName::GetMore, &get_more);
        assert_eq!(more.cursor_collection(), Some("c"));
        assert!(matches!(
            parsed(CommandName::Ping, &ping),
            ParsedCommand::Other(_)
        ));
        // Another command's spec is an internal error, never a panic.
        assert!(parsed(CommandName::Count, &count).find().is_err());
        assert!(parsed(CommandName::Ping, &ping).detached().is_none());
        assert!(parsed(CommandName::Count, &count).detached().is_some());
        let err = ParsedCommand::parse(CommandName::Distinct, &doc! {"distinct": "c"}).unwrap_err();
        assert_eq!(
            err.message,
            "BSON field 'distinct.key' is missing but a required field"
        );
    }
}
