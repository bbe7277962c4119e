//! The progress line `dump`, `restore` and `check` show while they work: on a terminal, one
//! line on standard error rewritten in place (`\r`) at most ten times a second and cleared at
//! the end; in a pipe or a file (standard error is not a terminal), nothing, so logs and
//! scripts see only the tools' summaries.
//!
//! Does not own what the tools count, nor their summary lines.

use crate::clock::Stopwatch;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// How often the line is rewritten at most.
const EVERY: Duration = Duration::from_millis(100);

/// One tool's progress line.
pub struct ProgressLine {
    out: Option<Box<dyn Write>>,
    every: Duration,
    last: Option<Stopwatch>,
    /// Characters of the line now shown, to blank it out.
    shown: usize,
}

impl ProgressLine {
    /// On standard error when it is a terminal; off otherwise.
    pub fn stderr() -> Self {
        let stderr = std::io::stderr();
        if stderr.is_terminal() {
            ProgressLine::to(Box::new(stderr), EVERY)
        } else {
            ProgressLine::off()
        }
    }

    /// Shows nothing.
    pub fn off() -> Self {
        ProgressLine {
            out: None,
            every: EVERY,
            last: None,
            shown: 0,
        }
    }

    /// Rewrites its line on `out` at most every `every`.
    pub fn to(out: Box<dyn Write>, every: Duration) -> Self {
        ProgressLine {
            out: Some(out),
            every,
            last: None,
            shown: 0,
        }
    }

    /// Shows `line()` in place of the line shown, unless one was shown less than the interval
    /// ago (`line` is not built then). A write that fails turns the line off: progress is not
    /// worth failing the tool for.
    pub fn update(&mut self, line: impl FnOnce() -> String) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if self.last.is_some_and(|last| last.elapsed() < self.every) {
            return;
        }
        let line = line();
        let width = line.chars().count();
        let pad = self.shown.saturating_sub(width);
        let written = write!(out, "\r{line}{:pad$}", "").and_then(|()| out.flush());
        self.shown = width + pad;
        self.last = Some(Stopwatch::start());
        if written.is_err() {
            self.out = None;
        }
    }

    /// Blanks the line, leaving the cursor at its start for the tool's summary.
    pub fn finish(&mut self) {
        let shown = std::mem::take(&mut self.shown);
        if let (Some(out), true) = (self.out.as_mut(), shown > 0) {
            let _ = write!(out, "\r{:shown$}\r", "").and_then(|()| out.flush());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn a_terminal_sees_the_line_rewritten_in_place_then_cleared() {
        let screen = Screen::default();
        let mut line = ProgressLine::to(Box::new(screen.clone()), Duration::ZERO);
        line.update(|| "mayfly dump: test.c: 1000 documents".into());
        line.update(|| "mayfly dump: t.c: 5 documents".into());
        line.finish();
        assert_eq!(
            screen.text(),
            "\rmayfly dump: test.c: 1000 documents\
             \rmayfly dump: t.c: 5 documents      \
             \r                                   \r"
        );
    }

    #[test]
    fn updates_closer_than_the_interval_are_skipped() {
        let screen = Screen::default();
        let mut line = ProgressLine::to(Box::new(screen.clone()), Duration::from_secs(3600));
        line.update(|| "first".into());
        line.update(|| unreachable!("not built within the interval"));
        assert_eq!(screen.text(), "\rfirst");
    }

    #[test]
    fn off_shows_nothing_and_builds_no_line() {
        let mut line = ProgressLine::off();
        line.update(|| unreachable!("never built when off"));
        line.finish();
    }

    #[test]
    fn nothing_shown_is_nothing_cleared() {
        let screen = Screen::default();
        ProgressLine::to(Box::new(screen.clone()), Duration::ZERO).finish();
        assert_eq!(screen.text(), "");
    }
}
