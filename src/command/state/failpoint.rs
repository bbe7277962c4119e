//! Fail points, as mongod's test commands `configureFailPoint` and `waitForFailPoint` set and
//! watch them, for drivers' test suites and users' tests of their retry logic. mayfly has two of
//! mongod's: `failCommand` (chosen commands of chosen clients fail with an error code, close
//! their connection without a reply, wait before running, or succeed with a write concern
//! error) and `onPrimaryTransactionalWrite` (a retryable write fails before its commit, or its
//! connection closes after it: [`primary_write`]) and `failGetMoreAfterCursorCheckout` (a
//! `getMore` fails: [`get_more`]). Any other name is answered as mongod answers a fail point it
//! lacks (266).
//!
//! Owns: the registry (mode, data, and how many times the fail point fired) and mongod's rules
//! for each mode (`FailPoint::parseBSON` and `_evaluateByMode`). Does not own: the two hooks
//! the envelope runs around every command (`envelope::fail_command`), closing the connection
//! (the session does), nor which commands and clients the data names (`fail_command`).

mod fail_command;
mod get_more;
mod primary_write;

use super::super::args::type_name;
use super::super::{Request, Shared};
use crate::error::{Error, ErrorCode, Result};
use bson::{doc, Bson, Document};
pub use fail_command::{namespace_of, Caller, FailCommand};
pub use get_more::GetMoreFailure;
pub use primary_write::PrimaryWrite;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// mongod's fail point that fails or disconnects chosen commands.
const FAIL_COMMAND: &str = "failCommand";
/// mongod's fail point on a retryable write's commit.
const ON_PRIMARY_WRITE: &str = "onPrimaryTransactionalWrite";
/// mongod's fail point on a `getMore` that found its cursor.
const GET_MORE: &str = "failGetMoreAfterCursorCheckout";

/// How a fail point decides, each time it is reached, whether it fires.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Off,
    AlwaysOn,
    /// Fires this many more times, then turns off.
    Times(i64),
    /// Lets this many more pass, then fires every time.
    Skip(i64),
    /// Fires when a random number in `0..=i32::MAX` is below this.
    Random(i32),
}

struct State<D> {
    mode: Mode,
    data: Arc<D>,
    /// How many times the fail point fired since the server started (never reset).
    times_entered: i64,
}

/// One fail point: its mode, data and count.
struct Point<D> {
    state: Mutex<State<D>>,
}

impl<D: Default> Default for Point<D> {
    fn default() -> Self {
        Point {
            state: Mutex::new(State {
                mode: Mode::Off,
                data: Arc::new(D::default()),
                times_entered: 0,
            }),
        }
    }
}

impl<D> Point<D> {
    fn lock(&self) -> MutexGuard<'_, State<D>> {
        // Every change is a whole assignment of a value built beforehand (no step between two
        // assignments can panic), so a poisoned lock still holds a consistent state: it is
        // recovered (and counted).
        crate::sync::lock_recovering(&self.state, "fail point")
    }

    fn times_entered(&self) -> i64 {
        self.lock().times_entered
    }

    /// Sets the mode and data; returns how many times the point fired so far.
    fn set(&self, mode: Mode, data: D) -> i64 {
        let mut state = self.lock();
        state.mode = mode;
        state.data = Arc::new(data);
        state.times_entered
    }

    /// Reaches the fail point: when it is on and `applies` holds for its data, the mode decides
    /// (mongod's `shouldFail` with a predicate: a fail point that does not apply does not count
    /// down `times` or `skip`). Returns the data when it fires, after waking `entered`.
    fn reach(&self, entered: &Notify, applies: impl Fn(&D) -> bool) -> Option<Arc<D>> {
        let mut state = self.lock();
        if state.mode == Mode::Off || !applies(&state.data) {
            return None;
        }
        let fires = match state.mode {
            Mode::Off => false,
            Mode::AlwaysOn => true,
            // As mongod: the hit that brings the count to 0 (or below: `{times: 0}` fires
            // once) fires and turns the fail point off.
            Mode::Times(left) => {
                let left = left - 1;
                state.mode = if left <= 0 {
                    Mode::Off
                } else {
                    Mode::Times(left)
                };
                true
            }
            Mode::Skip(left) if left <= 0 => true,
            Mode::Skip(left) => {
                state.mode = Mode::Skip(left - 1);
                false
            }
            Mode::Random(threshold) => random_below(threshold),
        };
        if !fires {
            return None;
        }
        state.times_entered += 1;
        let data = Arc::clone(&state.data);
        drop(state);
        entered.notify_waiters();
        Some(data)
    }
}

/// The server's fail points (in [`Shared`]).
#[derive(Default)]
pub struct FailPoints {
    fail_command: Point<FailCommand>,
    primary_write: Point<PrimaryWrite>,
    get_more: Point<GetMoreFailure>,
    /// Woken each time a fail point fires, for `waitForFailPoint`.
    entered: Notify,
}

impl FailPoints {
    #[cfg(test)]
    fn lock(&self) -> MutexGuard<'_, State<FailCommand>> {
        self.fail_command.lock()
    }

    #[cfg(test)]
    fn times_entered(&self) -> i64 {
        self.fail_command.times_entered()
    }

    /// Reaches `failCommand` when its data `applies`: counts the firing, and moves the mode on.
    pub fn reach(&self, applies: impl Fn(&FailCommand) -> bool) -> Option<Arc<FailCommand>> {
        self.fail_command.reach(&self.entered, applies)
    }

    /// How many times the fail point `name` fired; `None` for a name mayfly lacks.
    fn times_entered_by_name(&self, name: &str) -> Option<i64> {
        match name {
            FAIL_COMMAND => Some(self.fail_command.times_entered()),
            ON_PRIMARY_WRITE => Some(self.primary_write.times_entered()),
            GET_MORE => Some(self.get_more.times_entered()),
            _ => None,
        }
    }
}

/// Whether a uniformly random number in `0..=i32::MAX` is below `threshold`.
fn random_below(threshold: i32) -> bool {
    let drawn = getrandom::u32().unwrap_or(u32::MAX) & 0x7fff_ffff;
    i64::from(drawn) < i64::from(threshold)
}

/// `{configureFailPoint: name, mode, data}`: sets the fail point and answers how many times it
/// has fired so far, `{count: n}`.
pub fn configure(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    let name = fail_point_name(req.body, "configureFailPoint");
    if points_named(name).is_none() {
        return Err(not_found(name));
    }
    let mode = parse_mode(req.body)?;
    let data = match req.body.get("data") {
        None => None,
        Some(Bson::Document(d)) => Some(d),
        Some(_) => {
            return Err(Error::type_mismatch(
                "the 'data' option must be a JSON object",
            ))
        }
    };
    let points = &shared.fail_points;
    let count = match name {
        FAIL_COMMAND => points.fail_command.set(mode, FailCommand::parse(data)?),
        ON_PRIMARY_WRITE => points.primary_write.set(mode, PrimaryWrite::parse(data)?),
        _ => points.get_more.set(mode, GetMoreFailure::parse(data)?),
    };
    tracing::warn!(fail_point = name, mode = ?mode, "fail point set");
    Ok(doc! {"count": count_value(count), "ok": 1.0})
}

/// `{waitForFailPoint: name, timesEntered: n, maxTimeMS}`: waits until the fail point has fired
/// `n` times in all (the count `configureFailPoint` answered, plus the hits to wait for), or
/// until `maxTimeMS` (required) runs out.
pub async fn wait(shared: &Shared, req: &Request<'_>) -> Result<Document> {
    // mongod's definition is not strict: other fields are ignored.
    let target = match req.body.get("timesEntered") {
        None => {
            return Err(Error::new(
                ErrorCode::Location40414,
                "BSON field 'waitForFailPoint.timesEntered' is missing but a required field",
            ))
        }
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        Some(Bson::Double(d)) if d.fract() == 0.0 && d.abs() < 9.0e18 => *d as i64,
        Some(other) => {
            return Err(Error::type_mismatch(format!(
                "BSON field 'waitForFailPoint.timesEntered' is the wrong type '{}', expected type 'long'",
                type_name(other)
            )))
        }
    };
    if req.interrupt.deadline().is_none() {
        return Err(Error::failed_to_parse("Missing maxTimeMS"));
    }
    let name = fail_point_name(req.body, "waitForFailPoint");
    let points = &shared.fail_points;
    if points.times_entered_by_name(name).is_none() {
        return Err(not_found(name));
    }
    loop {
        // Registered before the count is read, so a hit in between is not missed.
        let entered = points.entered.notified();
        if points.times_entered_by_name(name).unwrap_or(i64::MAX) >= target {
            return Ok(doc! {"ok": 1.0});
        }
        tokio::select! {
            () = entered => {}
            err = req.interrupt.interrupted() => return Err(err),
        }
    }
}

/// The fail point a command names in its first field (mongod reads a non-string as "").
fn fail_point_name<'a>(body: &'a Document, command: &str) -> &'a str {
    body.get_str(command).unwrap_or("")
}

fn not_found(name: &str) -> Error {
    Error::new(ErrorCode::FailPointSetFailed, format!("{name} not found"))
}

/// mongod's `appendNumber`: an int when it fits, else a long.
fn count_value(count: i64) -> Bson {
    i32::try_from(count).map_or(Bson::Int64(count), Bson::Int32)
}

/// `mode`, as mongod's `FailPoint::parseBSON` reads it.
fn parse_mode(body: &Document) -> Result<Mode> {
    let mode = match body.get("mode") {
        None => {
            return Err(Error::new(
                ErrorCode::IllegalOperation,
                "When setting a failpoint, you must supply a 'mode'",
            ))
        }
        Some(Bson::String(s)) => match s.as_str() {
            "off" => Mode::Off,
            "alwaysOn" => Mode::AlwaysOn,
            other => return Err(Error::bad_value(format!("unknown mode: {other}"))),
        },
        Some(Bson::Document(m)) => {
            if m.contains_key("times") {
                Mode::Times(count_option(m, "times")?)
            } else if m.contains_key("skip") {
                Mode::Skip(count_option(m, "skip")?)
            } else if let Some(p) = m.get("activationProbability") {
                let p = match p {
                    Bson::Int32(n) => f64::from(*n),
                    Bson::Int64(n) => *n as f64,
                    Bson::Double(d) => *d,
                    Bson::Decimal128(d) => crate::query::decimal::bson_to_f64(d),
                    _ => {
                        return Err(Error::type_mismatch(
                            "the 'activationProbability' option to 'mode' must be a double between 0 and 1",
                        ))
                    }
                };
                if !(0.0..=1.0).contains(&p) {
                    return Err(Error::bad_value(format!(
                        "activationProbability must be between 0.0 and 1.0; found {p}"
                    )));
                }
                Mode::Random((f64::from(i32::MAX) * p) as i32)
            } else {
                return Err(Error::bad_value(
                    "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'",
                ));
            }
        }
        Some(_) => {
            return Err(Error::type_mismatch(
                "'mode' must be a string or JSON object",
            ))
        }
    };
    Ok(mode)
}

/// `times` or `skip`: a whole number in `0..=i32::MAX` (mongod's `bsonExtractIntegerField` and
/// its bounds).
fn count_option(mode: &Document, field: &str) -> Result<i64> {
    let value = mode.get(field).unwrap_or(&Bson::Null);
    let n = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) if d.fract() == 0.0 && d.abs() < 9.0e18 => *d as i64,
        Bson::Double(_) => {
            return Err(Error::bad_value(format!(
                "Expected field \"{field}\" to have a value exactly representable as a 64-bit integer, but found {field}: {value}"
            )))
        }
        other => {
            return Err(Error::type_mismatch(format!(
                "Expected field \"{field}\" to have numeric type, but found {}",
                type_name(other)
            )))
        }
    };
    if n < 0 {
        return Err(Error::bad_value(format!(
            "'{field}' option to 'mode' must be positive"
        )));
    }
    if n > i64::from(i32::MAX) {
        return Err(Error::bad_value(format!(
            "'{field}' option to 'mode' is too large"
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests;

/// What `onPrimaryTransactionalWrite` does to a retryable write about to run, if it fires
/// (once per command: mongod evaluates it per statement).
pub fn primary_write(shared: &Shared) -> Option<Arc<PrimaryWrite>> {
    let points = &shared.fail_points;
    points.primary_write.reach(&points.entered, |_| true)
}

/// `failGetMoreAfterCursorCheckout`'s error code, if it fires for this `getMore` (whose cursor
/// exists): 0 fails nothing.
pub fn get_more_failure(shared: &Shared) -> Option<i32> {
    let points = &shared.fail_points;
    points
        .get_more
        .reach(&points.entered, |data| data.error_code != 0)
        .map(|data| data.error_code)
}

/// The fail points mayfly has, by name.
fn points_named(name: &str) -> Option<&'static str> {
    [FAIL_COMMAND, ON_PRIMARY_WRITE, GET_MORE]
        .into_iter()
        .find(|n| *n == name)
}

/// An error reply with any code (an injected one may have no name in mayfly's table).
pub fn error_reply(code: i32, errmsg: &str) -> Document {
    let name = ErrorCode::from_code(code)
        .map(|c| c.name().to_owned())
        .unwrap_or_else(|| format!("Location{code}"));
    doc! {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": name}
}

/// The reply of a retryable write `onPrimaryTransactionalWrite` failed before its commit.
pub fn write_failure(code: i32, write: &str) -> Document {
    error_reply(
        code,
        &format!("Failing write for {write} due to failpoint. The write must not be reflected."),
    )
}
