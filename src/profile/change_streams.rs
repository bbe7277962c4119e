//! Change streams as Cosmos DB has them ([`Rule::ChangeStreams`]): on one collection only, the
//! pipeline exactly a `$match` then a `$project`, and only inserts, updates and replacements
//! reported (deletes are not: Microsoft's change-stream page; users keep "soft deletes" for it).

use super::refusal::refuse;
use super::Rule;
use crate::error::{ErrorCode, Result};
use bson::{doc, Document};

/// Cosmos's text for any other pipeline.
pub const MATCH_THEN_PROJECT: &str =
    "Change stream must be followed by a match and then a project stage";
/// What Cosmos answered a database-level `watch` (`aggregate: 1`).
pub const NOT_A_COLLECTION: &str = "Expected type string but found int.";

/// Checks a change stream on `collection` (`None`: a database or the cluster) with the stages
/// after `$changeStream`, and adds the stage that keeps only what Cosmos reports.
pub fn restrict(collection: Option<&str>, stages: &mut Vec<Document>) -> Result<()> {
    if collection.is_none() {
        return Err(refuse(
            Rule::ChangeStreams,
            ErrorCode::BadValue,
            NOT_A_COLLECTION,
        ));
    }
    let shape_ok = matches!(
        stages.as_slice(),
        [first, second] if is_stage(first, "$match") && is_stage(second, "$project")
    );
    if !shape_ok {
        return Err(refuse(
            Rule::ChangeStreams,
            ErrorCode::BadValue,
            MATCH_THEN_PROJECT,
        ));
    }
    stages.insert(
        0,
        doc! {"$match": {"operationType": {"$in": ["insert", "update", "replace"]}}},
    );
    Ok(())
}

fn is_stage(stage: &Document, name: &str) -> bool {
    stage.len() == 1 && stage.contains_key(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(
        collection: Option<&str>,
        mut stages: Vec<Document>,
    ) -> std::result::Result<Vec<Document>, String> {
        restrict(collection, &mut stages)
            .map(|()| stages)
            .map_err(|e| e.message.lines().next().unwrap_or_default().to_owned())
    }

    #[test]
    fn only_match_then_project_on_a_collection() {
        let matching = doc! {"$match": {"operationType": {"$in": ["insert", "update", "replace"]}}};
        let project = doc! {"$project": {"_id": 1, "fullDocument": 1, "ns": 1, "documentKey": 1}};
        let kept = outcome(Some("c"), vec![matching.clone(), project.clone()]).unwrap();
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[1], matching);
        let refusals = [
            (Some("c"), vec![]),
            (Some("c"), vec![matching.clone()]),
            (Some("c"), vec![project.clone(), matching.clone()]),
            (
                Some("c"),
                vec![matching.clone(), project.clone(), doc! {"$limit": 1}],
            ),
        ];
        for (collection, stages) in refusals {
            assert_eq!(outcome(collection, stages).unwrap_err(), MATCH_THEN_PROJECT);
        }
        assert_eq!(
            outcome(None, vec![matching, project]).unwrap_err(),
            NOT_A_COLLECTION
        );
    }
}
