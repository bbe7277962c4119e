//! What start-up logs while it opens a data directory: one INFO line as each recovery step
//! begins (opening the storage engine and replaying its journal, the key layout, the catalog,
//! unfinished index builds, document counters) and one with its duration when it ends, then the
//! whole recovery's duration, so a large directory is never silent before the server listens.
//!
//! Does not own the steps themselves (`storage`, `layout`, `catalog`, `background`, `documents`).

use crate::clock::Stopwatch;

/// Runs one recovery step `what` ("replaying the journal"), logging its start and its end with
/// how long it took. A failing step logs no end: its error is what start-up reports.
pub fn step<R, E>(
    what: &'static str,
    run: impl FnOnce() -> std::result::Result<R, E>,
) -> std::result::Result<R, E> {
    tracing::info!(step = what, "Start-up recovery: {what}");
    let timer = Stopwatch::start();
    let value = run()?;
    tracing::info!(
        step = what,
        durationMillis = millis(&timer),
        "Start-up recovery: {what}: done"
    );
    Ok(value)
}

/// Logs the end of recovery, timed from `timer`.
pub fn done(timer: &Stopwatch) {
    tracing::info!(durationMillis = millis(timer), "Start-up recovery done");
}

fn millis(timer: &Stopwatch) -> u64 {
    u64::try_from(timer.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, Result};
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(run: impl FnOnce()) -> Vec<String> {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, run);
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_step_logs_its_start_and_its_end_with_a_duration() {
        let lines = logged(|| {
            assert_eq!(
                step("loading the catalog", || Result::<i32>::Ok(7)).unwrap(),
                7
            );
            done(&Stopwatch::start());
        });
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].contains("INFO")
                && lines[0].contains(
                    "Start-up recovery: loading the catalog step=\"loading the catalog\""
                ),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("Start-up recovery: loading the catalog: done")
                && lines[1].contains("durationMillis="),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].contains("Start-up recovery done durationMillis="),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn a_failing_step_logs_only_its_start() {
        let lines = logged(|| {
            let err = step("replaying the journal", || -> Result<()> {
                Err(Error::internal("broken"))
            });
            assert!(err.is_err());
        });
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("Start-up recovery: replaying the journal"));
    }
}
