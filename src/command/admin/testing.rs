//! Test-only commands, present only with `--enable-test-commands`.

use crate::clock::Deadline;
use crate::command::args::{optional_i64, optional_str, type_name};
use crate::command::{Request, Shared};
use crate::error::{Error, Result};
use bson::{doc, Bson, Document};
use std::time::Duration;

/// How long `sleep` sleeps between two checks of its interrupt.
const SLEEP_STEP: Duration = Duration::from_millis(5);

/// `{sleep: 1, millis: N}` or `{sleep: 1, secs: N}` (mongod's test command): holds this
/// connection and a blocking thread for that long, as a long scan would, e.g. to test shutdown
/// with a command in flight. It checks its interrupt every few milliseconds, so `maxTimeMS`,
/// `killOp` and a closed connection end it early.
pub fn sleep(_shared: &Shared, req: &Request<'_>) -> Result<Document> {
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
    let end = Deadline::after_millis(millis);
    loop {
        req.interrupt.check()?;
        let left = end.remaining();
        if left.is_zero() {
            return Ok(doc! {"ok": 1.0});
        }
        std::thread::sleep(left.min(SLEEP_STEP));
    }
}

/// `{advanceClock: <seconds>}` (TTL-23): moves the server's one clock forward by a non-negative
/// whole number of seconds and replies with the new server time; `0` just reports it.
pub fn advance_clock(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let value = req.body.get("advanceClock").unwrap_or(&Bson::Null);
    let seconds = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => *n as i64,
        other => {
            return Err(Error::bad_value(format!(
                "advanceClock takes a whole number of seconds, got {other} of type {}",
                type_name(other)
            )))
        }
    };
    let seconds = u64::try_from(seconds)
        .map_err(|_| Error::bad_value("advanceClock cannot move the clock backwards"))?;
    shared.clock.advance(Duration::from_secs(seconds));
    Ok(doc! {"ok": 1.0, "now": shared.clock.now_secs()})
}

/// `{reaper: "pause" | "resume" | "runOnce"}` (TTL-23). A paused reaper still runs a pass on
/// `runOnce`, which replies with the number of documents it deleted.
pub async fn reaper(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let reaper = &shared.engine.reaper;
    match optional_str(req.body, "reaper", "reaper")? {
        Some("pause") => {
            reaper.pause();
            Ok(doc! {"ok": 1.0})
        }
        Some("resume") => {
            reaper.resume();
            Ok(doc! {"ok": 1.0})
        }
        Some("runOnce") => {
            let reaped = reaper.run_pass().await?;
            Ok(doc! {"ok": 1.0, "reaped": i64::try_from(reaped).unwrap_or(i64::MAX)})
        }
        _ => Err(Error::bad_value(
            "reaper takes one of 'pause', 'resume', 'runOnce'",
        )),
    }
}
