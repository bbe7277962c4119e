//! A pipeline read for what it names, without parsing its stages (mongod's
//! `LiteParsedPipeline`): the names of its top-level stages, and the collections it reads and
//! writes, nested pipelines included. The command envelope reads this before the command runs
//! (authorization, the transaction allow-list, the write-concern rule, where a change stream
//! opens); the aggregate command then parses the stages in full (`Pipeline::parse`).
//!
//! Owns: where each stage names a collection. Does not own whether a stage is valid: a
//! malformed one names nothing here and fails in the full parse.

use bson::{Bson, Document};

/// The top-level stages of a pipeline, by name, with their arguments.
#[derive(Debug, Clone, Default)]
pub struct LitePipeline<'a> {
    stages: Vec<(&'a str, &'a Bson)>,
}

/// A collection a pipeline reads or writes: `db` is `None` for the command's own database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Namespace<'a> {
    pub db: Option<&'a str>,
    pub collection: &'a str,
}

/// How a stage uses a collection it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Involvement {
    /// `$lookup`, `$graphLookup`, `$unionWith` read it.
    Read,
    /// `$out` replaces it.
    Replace,
    /// `$merge` merges into it.
    Merge,
}

impl<'a> LitePipeline<'a> {
    /// The stages of a command's `pipeline` field; anything but an array of one-field
    /// documents contributes nothing (the full parse refuses it).
    pub fn of(pipeline: Option<&'a Bson>) -> LitePipeline<'a> {
        let stages = match pipeline {
            Some(Bson::Array(stages)) => stages.iter().filter_map(stage_of).collect(),
            _ => Vec::new(),
        };
        LitePipeline { stages }
    }

    /// The stages of a pipeline already read as documents (an aggregate's spec).
    pub fn of_stages(stages: &'a [Document]) -> LitePipeline<'a> {
        let stages = stages
            .iter()
            .filter_map(|stage| stage.iter().next())
            .map(|(name, arg)| (name.as_str(), arg))
            .collect();
        LitePipeline { stages }
    }

    /// The top-level stage names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.stages.iter().map(|(name, _)| *name)
    }

    pub fn first(&self) -> Option<&'a str> {
        self.names().next()
    }

    pub fn last(&self) -> Option<&'a str> {
        self.stages.last().map(|(name, _)| *name)
    }

    /// Every collection the pipeline reads or writes besides its source: `$lookup`,
    /// `$graphLookup` and `$unionWith` (their sub-pipelines and `$facet`'s included), and the
    /// targets of `$out` and `$merge`. Walked without recursion: the nesting is the client's.
    pub fn involved(&self) -> Vec<(Namespace<'a>, Involvement)> {
        let mut involved = Vec::new();
        let mut pending: Vec<(&'a str, &'a Bson)> = self.stages.clone();
        while let Some((name, arg)) = pending.pop() {
            let nested = |value: Option<&'a Bson>| -> Vec<(&'a str, &'a Bson)> {
                match value {
                    Some(Bson::Array(stages)) => stages.iter().filter_map(stage_of).collect(),
                    _ => Vec::new(),
                }
            };
            let read = |collection| {
                (
                    Namespace {
                        db: None,
                        collection,
                    },
                    Involvement::Read,
                )
            };
            match (name, arg) {
                ("$lookup" | "$graphLookup", Bson::Document(spec)) => {
                    if let Ok(from) = spec.get_str("from") {
                        involved.push(read(from));
                    }
                    pending.extend(nested(spec.get("pipeline")));
                }
                ("$unionWith", Bson::String(collection)) => involved.push(read(collection)),
                ("$unionWith", Bson::Document(spec)) => {
                    if let Ok(collection) = spec.get_str("coll") {
                        involved.push(read(collection));
                    }
                    pending.extend(nested(spec.get("pipeline")));
                }
                ("$facet", Bson::Document(facets)) => {
                    for facet in facets.values() {
                        pending.extend(nested(Some(facet)));
                    }
                }
                ("$out", target) => {
                    if let Some(ns) = target_of(target) {
                        involved.push((ns, Involvement::Replace));
                    }
                }
                ("$merge", target) => {
                    let target = match target {
                        Bson::Document(d) => d.get("into").unwrap_or(target),
                        other => other,
                    };
                    if let Some(ns) = target_of(target) {
                        involved.push((ns, Involvement::Merge));
                    }
                }
                _ => {}
            }
        }
        involved
    }
}

/// A stage's name and argument: the first field of a document.
fn stage_of(stage: &Bson) -> Option<(&str, &Bson)> {
    let stage: &Document = stage.as_document()?;
    stage.iter().next().map(|(name, arg)| (name.as_str(), arg))
}

/// `$out`'s or `$merge`'s target: a collection name, or `{db, coll}`.
fn target_of(target: &Bson) -> Option<Namespace<'_>> {
    match target {
        Bson::String(collection) => Some(Namespace {
            db: None,
            collection,
        }),
        Bson::Document(d) => d.get_str("coll").ok().map(|collection| Namespace {
            db: d.get_str("db").ok(),
            collection,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn ns<'a>(db: Option<&'a str>, collection: &'a str) -> Namespace<'a> {
        Namespace { db, collection }
    }

    #[test]
    fn stage_names_are_read_in_order_and_malformed_stages_skipped() {
        let pipeline = Bson::Array(vec![
            Bson::Document(doc! {"$changeStream": {}}),
            Bson::Int32(1),
            Bson::Document(doc! {"$match": {}}),
            Bson::Document(doc! {"$merge": "out"}),
        ]);
        let lite = LitePipeline::of(Some(&pipeline));
        assert_eq!(
            lite.names().collect::<Vec<_>>(),
            ["$changeStream", "$match", "$merge"]
        );
        assert_eq!(
            (lite.first(), lite.last()),
            (Some("$changeStream"), Some("$merge"))
        );
        assert_eq!(LitePipeline::of(Some(&Bson::Int32(1))).first(), None);
        assert_eq!(LitePipeline::of(None).last(), None);
    }

    #[test]
    fn involved_collections_include_nested_pipelines_and_targets() {
        let pipeline = Bson::Array(vec![
            Bson::Document(doc! {"$lookup": {"from": "a", "pipeline": [
                {"$unionWith": {"coll": "b", "pipeline": [{"$graphLookup": {"from": "c"}}]}}
            ]}}),
            Bson::Document(doc! {"$facet": {"x": [{"$unionWith": "d"}], "y": [{"$match": {}}]}}),
            Bson::Document(doc! {"$out": {"db": "other", "coll": "e"}}),
        ]);
        let mut involved = LitePipeline::of(Some(&pipeline)).involved();
        involved.sort_by_key(|(ns, _)| ns.collection);
        assert_eq!(
            involved,
            [
                (ns(None, "a"), Involvement::Read),
                (ns(None, "b"), Involvement::Read),
                (ns(None, "c"), Involvement::Read),
                (ns(None, "d"), Involvement::Read),
                (ns(Some("other"), "e"), Involvement::Replace),
            ]
        );
        let merge = Bson::Array(vec![Bson::Document(doc! {"$merge": {"into": "f"}})]);
        assert_eq!(
            LitePipeline::of(Some(&merge)).involved(),
            [(ns(None, "f"), Involvement::Merge)]
        );
    }
}
