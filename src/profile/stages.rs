//! The aggregation stages each Cosmos DB server version lacks ([`Rule::UnsupportedStages`]),
//! from Microsoft's feature-support tables for 3.6, 4.0, 4.2, 6.0 and 7.0: a stage the account
//! does not have is an unknown stage to it (40324 `Unrecognized pipeline stage name`), and
//! `$lookup` takes no `let` or `pipeline` ("let is not supported"; the 2025 error page gives
//! 9 FailedToParse for unsupported parameters). Checked on the command's pipeline and the
//! pipelines inside `$facet` and `$unionWith`, to [`MAX_NESTING`] levels: the walk over client
//! input is bounded (stages nested deeper are left to the pipeline's parser, as in MongoDB).

use super::refusal::refuse;
use super::{CosmosVersion, Rule};
use crate::error::{ErrorCode, Result};
use bson::{Bson, Document};

/// Cosmos's text for `$lookup` with `let` or `pipeline`.
pub const LOOKUP_LET: &str = "let is not supported";

/// Whether an account at `version` has the stage `name`.
pub fn has_stage(version: CosmosVersion, name: &str) -> bool {
    use CosmosVersion as V;
    match name {
        // In no table.
        "$bucket" | "$bucketAuto" | "$collStats" | "$currentOp" | "$indexStats"
        | "$listSessions" => false,
        // New in 4.2 (MongoDB's and Cosmos's 4.2 tables).
        "$merge" | "$set" | "$unset" | "$replaceWith" => !matches!(version, V::V3_6 | V::V4_0),
        // "Yes" in the 4.2 table, "No" in the 6.0 and 7.0 tables.
        "$graphLookup" => !matches!(version, V::V6_0 | V::V7_0),
        _ => true,
    }
}

/// How deep nested pipelines are checked.
pub const MAX_NESTING: usize = 20;

/// Checks a pipeline's stages against the account's version.
pub fn check(version: CosmosVersion, pipeline: &[Bson]) -> Result<()> {
    check_nested(version, pipeline, 0)
}

/// [`check`] for a pipeline whose stages were already read as documents (an aggregate's
/// spec).
pub fn check_stages(version: CosmosVersion, stages: &[Document]) -> Result<()> {
    stages
        .iter()
        .try_for_each(|stage| check_stage(version, stage, 0))
}

fn check_nested(version: CosmosVersion, pipeline: &[Bson], depth: usize) -> Result<()> {
    if depth > MAX_NESTING {
        return Ok(());
    }
    pipeline
        .iter()
        .filter_map(Bson::as_document)
        .try_for_each(|stage| check_stage(version, stage, depth))
}

fn check_stage(version: CosmosVersion, stage: &Document, depth: usize) -> Result<()> {
    let Some((name, spec)) = stage.iter().next() else {
        return Ok(());
    };
    if !has_stage(version, name) {
        return Err(refuse(
            Rule::UnsupportedStages,
            ErrorCode::Location40324,
            &format!("Unrecognized pipeline stage name: '{name}'"),
        ));
    }
    if name == "$lookup" && lookup_has_let(spec) {
        return Err(refuse(
            Rule::UnsupportedStages,
            ErrorCode::FailedToParse,
            LOOKUP_LET,
        ));
    }
    for inner in sub_pipelines(name, spec) {
        check_nested(version, inner, depth + 1)?;
    }
    Ok(())
}

/// The pipelines a stage holds: each of `$facet`'s, `$unionWith`'s.
fn sub_pipelines<'a>(name: &str, spec: &'a Bson) -> Vec<&'a [Bson]> {
    match (name, spec) {
        ("$facet", Bson::Document(facets)) => facets
            .values()
            .filter_map(|p| match p {
                Bson::Array(stages) => Some(stages.as_slice()),
                _ => None,
            })
            .collect(),
        ("$unionWith", Bson::Document(union)) => match union.get("pipeline") {
            Some(Bson::Array(stages)) => vec![stages.as_slice()],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn lookup_has_let(spec: &Bson) -> bool {
    matches!(spec, Bson::Document(d) if has_any(d, &["let", "pipeline"]))
}

fn has_any(doc: &Document, fields: &[&str]) -> bool {
    fields.iter().any(|f| doc.contains_key(*f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::bson;

    fn outcome(version: CosmosVersion, pipeline: Bson) -> Option<(i32, String)> {
        let Bson::Array(stages) = pipeline else {
            unreachable!()
        };
        check(version, &stages).err().map(|e| {
            (
                e.code.code(),
                e.message.lines().next().unwrap_or_default().to_owned(),
            )
        })
    }

    #[test]
    fn stages_by_version() {
        use CosmosVersion as V;
        let cases = [
            (
                V::V7_0,
                bson!([{"$match": {}}, {"$group": {"_id": null}}]),
                None,
            ),
            (
                V::V7_0,
                bson!([{"$bucket": {}}]),
                Some((40324, "Unrecognized pipeline stage name: '$bucket'")),
            ),
            (V::V4_2, bson!([{"$set": {"a": 1}}]), None),
            (
                V::V4_0,
                bson!([{"$set": {"a": 1}}]),
                Some((40324, "Unrecognized pipeline stage name: '$set'")),
            ),
            (
                V::V3_6,
                bson!([{"$replaceWith": "$a"}]),
                Some((40324, "Unrecognized pipeline stage name: '$replaceWith'")),
            ),
            (V::V4_2, bson!([{"$graphLookup": {}}]), None),
            (
                V::V7_0,
                bson!([{"$graphLookup": {}}]),
                Some((40324, "Unrecognized pipeline stage name: '$graphLookup'")),
            ),
            (
                V::V7_0,
                bson!([{"$lookup": {"from": "b", "localField": "a", "foreignField": "a", "as": "j"}}]),
                None,
            ),
            (
                V::V7_0,
                bson!([{"$lookup": {"from": "b", "let": {"x": "$a"}, "pipeline": [], "as": "j"}}]),
                Some((9, LOOKUP_LET)),
            ),
            (
                V::V7_0,
                bson!([{"$facet": {"x": [{"$match": {}}], "y": [{"$bucketAuto": {}}]}}]),
                Some((40324, "Unrecognized pipeline stage name: '$bucketAuto'")),
            ),
            (
                V::V7_0,
                bson!([{"$unionWith": {"coll": "b", "pipeline": [{"$facet": {"z": [{"$bucket": {}}]}}]}}]),
                Some((40324, "Unrecognized pipeline stage name: '$bucket'")),
            ),
        ];
        for (version, pipeline, want) in cases {
            let want = want.map(|(code, text)| (code, text.to_owned()));
            assert_eq!(
                outcome(version, pipeline.clone()),
                want,
                "{version:?} {pipeline}"
            );
        }
    }

    #[test]
    fn nesting_is_walked_to_a_bound() {
        let mut pipeline = bson!([{"$bucket": {}}]);
        for _ in 0..MAX_NESTING {
            pipeline = bson!([{"$facet": {"f": pipeline}}]);
        }
        assert!(outcome(CosmosVersion::V7_0, pipeline.clone()).is_some());
        // Past the bound the walk stops.
        let deeper = bson!([{"$facet": {"f": pipeline}}]);
        assert_eq!(outcome(CosmosVersion::V7_0, deeper), None);
    }
}
