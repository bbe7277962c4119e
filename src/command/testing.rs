//! Test-only commands, present only with `--enable-test-commands`.

use super::args::optional_i64;
use super::Request;
use crate::error::{Error, Result};
use bson::{doc, Document};
use std::time::Duration;

/// `{sleep: 1, millis: N}` or `{sleep: 1, secs: N}` (mongod's test command): holds this
/// connection for that long, e.g. to test shutdown with a command in flight.
pub async fn sleep(req: &Request<'_>) -> Result<Document> {
    let millis = match (
        optional_i64(req.body, "sleep", "millis")?,
        optional_i64(req.body, "sleep", "secs")?,
    ) {
        (Some(ms), _) => ms,
        (None, Some(secs)) => secs.saturating_mul(1000),
        (None, None) => 100,
    };
    let millis = u64::try_from(millis)
        .map_err(|_| Error::bad_value("sleep duration must not be negative"))?;
    tokio::time::sleep(Duration::from_millis(millis)).await;
    Ok(doc! {"ok": 1.0})
}
