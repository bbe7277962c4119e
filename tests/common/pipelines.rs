//! Running aggregation pipelines through the driver, for the pipeline tests.
#![allow(dead_code)]

use super::bson::Document;
use super::error_code;
use futures::TryStreamExt;
use mongodb::Collection;

/// Every document the pipeline returns (through `getMore`s as needed).
pub async fn aggregate(coll: &Collection<Document>, pipeline: Vec<Document>) -> Vec<Document> {
    coll.aggregate(pipeline)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// The code of the error the pipeline fails with, at the command or at a `getMore`; `None`
/// for an error that is not a command error. Panics if it succeeds.
pub async fn aggregate_err(coll: &Collection<Document>, pipeline: Vec<Document>) -> Option<i32> {
    let err = match coll.aggregate(pipeline).await {
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await.unwrap_err(),
        Err(e) => e,
    };
    error_code(&err)
}
