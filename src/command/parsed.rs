//! The command parsed once: right after `$db` is judged, the envelope reads a command that has
//! a spec into it ([`ParsedCommand::parse`]), and every later step reads that one value —
//! authorization's needs, the transaction allow-list, the Cosmos gate, the `failCommand`
//! write-concern rule and namespace, where a change stream opens, the profiler's namespace and
//! the handler. A parse error is the command's error reply, before authorization, as mongod
//! parses a command before it checks its privileges.
//!
//! Owns: which commands have a spec, and handing the specs across threads. Does not own any
//! field's meaning: each spec lives beside its handler. Commands without a spec yet are
//! [`ParsedCommand::Other`], read from the document by each step.

use super::crud::aggregate::AggregateSpec;
use super::crud::cursor::GetMoreSpec;
use super::crud::explain::spec::ExplainSpec;
use super::crud::find::FindSpec;
use super::crud::insert::InsertSpec;
use super::crud::read::{CountSpec, DistinctSpec};
use super::crud::write::{DeleteSpec, FindAndModifySpec, UpdateSpec};
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
    Insert(Arc<InsertSpec>),
    Update(Arc<UpdateSpec>),
    Delete(Arc<DeleteSpec>),
    /// `findAndModify` and `findandmodify`.
    FindAndModify(Arc<FindAndModifySpec>),
    Explain(Arc<ExplainSpec<ParsedCommand<'static>>>),
    /// A command without a spec yet: its document.
    Other(&'a Document),
}

impl<'a> ParsedCommand<'a> {
    /// Reads `body`, the command `name`; the error is the command's reply. `in_sequence`: an
    /// `insert`'s documents came as a document sequence, not in the body.
    pub fn parse(
        name: CommandName,
        body: &'a Document,
        in_sequence: bool,
    ) -> Result<ParsedCommand<'a>> {
        use CommandName as C;
        Ok(match name {
            CommandName::Find => ParsedCommand::Find(Arc::new(FindSpec::read(body)?)),
            CommandName::Aggregate => {
                ParsedCommand::Aggregate(Arc::new(AggregateSpec::read(body)?))
            }
            CommandName::Count => ParsedCommand::Count(Arc::new(CountSpec::read(body)?)),
            CommandName::Distinct => ParsedCommand::Distinct(Arc::new(DistinctSpec::read(body)?)),
            CommandName::GetMore => ParsedCommand::GetMore(Arc::new(GetMoreSpec::read(body)?)),
            C::Insert => ParsedCommand::Insert(Arc::new(InsertSpec::read(body, in_sequence)?)),
            C::Update => ParsedCommand::Update(Arc::new(UpdateSpec::read(body)?)),
            C::Delete => ParsedCommand::Delete(Arc::new(DeleteSpec::read(body)?)),
            C::FindAndModify | C::FindAndModifyLower => {
                ParsedCommand::FindAndModify(Arc::new(FindAndModifySpec::read(body)?))
            }
            C::Explain => {
                // Every command explain runs has a spec: its parse owns its values.
                let spec = ExplainSpec::read(body, |name, inner| {
                    ParsedCommand::parse(name, inner, false)?
                        .detached()
                        .ok_or_else(|| Error::internal("an explained command without a spec"))
                })?;
                ParsedCommand::Explain(Arc::new(spec))
            }
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
            ParsedCommand::Insert(s) => Some(ParsedCommand::Insert(Arc::clone(s))),
            ParsedCommand::Update(s) => Some(ParsedCommand::Update(Arc::clone(s))),
            ParsedCommand::Delete(s) => Some(ParsedCommand::Delete(Arc::clone(s))),
            ParsedCommand::FindAndModify(s) => Some(ParsedCommand::FindAndModify(Arc::clone(s))),
            ParsedCommand::Explain(s) => Some(ParsedCommand::Explain(Arc::clone(s))),
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

    /// The command an `explain` runs, parsed by its own spec; `None` for any other command,
    /// and for an explained command explain does not run.
    pub fn explained(&self) -> Option<&ParsedCommand<'static>> {
        match self {
            ParsedCommand::Explain(spec) => spec.inner.as_ref(),
            _ => None,
        }
    }

    /// Whether a write may insert a document it did not find (an `update` statement or a
    /// `findAndModify` with `upsert`; a `findAndModify` that removes never does).
    pub fn upserts(&self) -> bool {
        match self {
            ParsedCommand::Update(spec) => spec.any_upsert(),
            ParsedCommand::FindAndModify(spec) => !spec.remove && spec.upsert,
            _ => false,
        }
    }

    /// The documents of a parsed command that hold its filters and expressions (filters,
    /// pipelines, projections, array filters, `let`), for the Cosmos operator check; not the
    /// documents a write stores. `None` for [`Other`], whose document is scanned whole.
    ///
    /// [`Other`]: ParsedCommand::Other
    pub fn expressions(&self) -> Option<Vec<&Document>> {
        Some(match self {
            ParsedCommand::Find(spec) => spec.expressions().collect(),
            ParsedCommand::Aggregate(spec) => spec.expressions().collect(),
            ParsedCommand::Count(spec) => spec.expressions().collect(),
            ParsedCommand::Distinct(spec) => spec.expressions().collect(),
            ParsedCommand::GetMore(_) | ParsedCommand::Insert(_) => Vec::new(),
            ParsedCommand::Update(spec) => spec.expressions().collect(),
            ParsedCommand::Delete(spec) => spec.expressions().collect(),
            ParsedCommand::FindAndModify(spec) => spec.expressions().collect(),
            ParsedCommand::Explain(spec) => match &spec.inner {
                Some(inner) => return inner.expressions(),
                None => vec![&spec.command],
            },
            ParsedCommand::Other(_) => return None,
        })
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

    pub fn insert(&self) -> Result<&InsertSpec> {
        match self {
            ParsedCommand::Insert(spec) => Ok(spec),
            _ => Err(mismatch("insert")),
        }
    }

    pub fn update(&self) -> Result<&UpdateSpec> {
        match self {
            ParsedCommand::Update(spec) => Ok(spec),
            _ => Err(mismatch("update")),
        }
    }

    pub fn delete(&self) -> Result<&DeleteSpec> {
        match self {
            ParsedCommand::Delete(spec) => Ok(spec),
            _ => Err(mismatch("delete")),
        }
    }

    pub fn find_and_modify(&self) -> Result<&FindAndModifySpec> {
        match self {
            ParsedCommand::FindAndModify(spec) => Ok(spec),
            _ => Err(mismatch("findAndModify")),
        }
    }

    pub fn explain(&self) -> Result<&ExplainSpec<ParsedCommand<'static>>> {
        match self {
            ParsedCommand::Explain(spec) => Ok(spec),
            _ => Err(mismatch("explain")),
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
        let parsed = |name, body| ParsedCommand::parse(name, body, false).unwrap();
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
        let err = ParsedCommand::parse(CommandName::Distinct, &doc! {"distinct": "c"}, false)
            .unwrap_err();
        assert_eq!(
            err.message,
            "BSON field 'distinct.key' is missing but a required field"
        );
    }

    #[test]
    fn the_writes_and_explain_are_parsed_and_read_by_every_step() {
        fn parsed(name: CommandName, body: &Document, seq: bool) -> Result<ParsedCommand<'_>> {
            ParsedCommand::parse(name, body, seq)
        }
        let insert = doc! {"insert": "c", "documents": [{}]};
        assert!(parsed(CommandName::Insert, &insert, false)
            .unwrap()
            .insert()
            .is_ok());
        // Documents that came as a sequence leave the body without `documents`.
        let sequence = doc! {"insert": "c"};
        assert!(parsed(CommandName::Insert, &sequence, true).is_ok());
        assert!(parsed(CommandName::Insert, &sequence, false).is_err());
        let update = doc! {"update": "c", "updates": [
            {"q": {"a": {"$bitsAllSet": 1}}, "u": {"$set": {"$box": 1}}},
            {"q": {}, "u": {}, "upsert": true},
        ]};
        let update = parsed(CommandName::Update, &update, false).unwrap();
        assert!(update.upserts());
        let scanned = update.expressions().unwrap();
        assert_eq!(scanned, [&doc! {"a": {"$bitsAllSet": 1}}, &doc! {}]);
        let delete = doc! {"delete": "c", "deletes": [{"q": {"b": 1}, "limit": 1}]};
        let delete = parsed(CommandName::Delete, &delete, false).unwrap();
        assert!(!delete.upserts() && delete.delete().is_ok());
        assert_eq!(delete.expressions().unwrap(), [&doc! {"b": 1}]);
        for (body, upserts) in [
            (
                doc! {"findAndModify": "c", "update": {}, "upsert": true},
                true,
            ),
            (doc! {"findandmodify": "c", "update": {}}, false),
            (doc! {"findAndModify": "c", "remove": 1}, false),
        ] {
            let name = CommandName::from_name(body.keys().next().unwrap()).unwrap();
            let fam = parsed(name, &body, false).unwrap();
            assert_eq!(fam.upserts(), upserts, "{body}");
            assert!(fam.detached().is_some_and(|d| d.find_and_modify().is_ok()));
        }
        let explain = doc! {"explain": {"aggregate": "c", "pipeline": [{"$merge": "m"}],
        "cursor": {}}, "verbosity": "queryPlanner"};
        let explain = parsed(CommandName::Explain, &explain, false).unwrap();
        let inner = explain.explained().unwrap();
        assert_eq!(inner.stages().and_then(|s| s.last()), Some("$merge"));
        assert_eq!(explain.expressions().unwrap(), [&doc! {"$merge": "m"}]);
        // A write's parse error is the command's, before any step reads it.
        let err = parsed(
            CommandName::Update,
            &doc! {"update": "c", "updates": [{"u": {}}]},
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "BSON field 'update.updates.q' is missing but a required field"
        );
        let ping = doc! {"ping": 1};
        let other = parsed(CommandName::Ping, &ping, false).unwrap();
        assert!(other.expressions().is_none() && other.explained().is_none());
    }
}
