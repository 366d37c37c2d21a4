//! What the user sees on stderr while a job runs: errors as they happen, and a progress
//! line when stderr is a terminal.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use seekless::{Error, Reporter};

/// Prints errors to stderr (coreutils style: `seekless: PATH: message`), counts them, and
/// drives a progress line on a terminal.
pub struct Console {
    bar: ProgressBar,
    errors: AtomicU64,
    verbose: bool,
}

impl Console {
    pub fn new(verbose: bool) -> Self {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        } else {
            ProgressBar::hidden()
        };
        Self {
            bar,
            errors: AtomicU64::new(0),
            verbose,
        }
    }

    /// Whether stderr is a terminal (summaries are printed there by default).
    pub fn is_terminal(&self) -> bool {
        !self.bar.is_hidden()
    }

    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Reporter for Console {
    fn error(&self, err: &Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.bar.suspend(|| eprintln!("seekless: {err}"));
    }

    fn skipped(&self, path: &Path, why: &str) {
        if self.verbose {
            self.bar
                .suspend(|| eprintln!("seekless: {}: skipped: {why}", path.display()));
        }
    }

    fn planned(&self, files: u64, bytes: u64) {
        self.bar.set_prefix("planning");
        self.bar
            .set_message(format!("{files} files, {}", indicatif::HumanBytes(bytes)));
    }
}
