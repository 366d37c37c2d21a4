//! What the user sees on stderr while a job runs: errors as they happen, and a progress
//! line when stderr is a terminal.

use std::io::{IsTerminal, Write};
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
    /// Names in messages quoted for the shell as GNU coreutils quotes them
    /// ([`shell_quoted`](crate::output::shell_quoted)), for `hash`, which stands in for
    /// `sha256sum`; else as they are with their control characters escaped.
    quote_names: bool,
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
            quote_names: false,
        }
    }

    /// A console that names files in its messages as GNU coreutils does, quoted for
    /// the shell (`seekless: 'd/new'$'\n''line': No such file or directory`).
    pub fn quoting_names(verbose: bool) -> Self {
        Self {
            quote_names: true,
            ..Self::new(verbose)
        }
    }

    /// `seekless: PATH: what`, the path as this console names files.
    pub fn about(&self, path: &Path, what: &str) {
        if self.quote_names {
            eprint_quoted(path, what);
        } else {
            eprint_about(path, what);
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

/// `seekless: PATH: what` on stderr in one write, the path as its bytes (a name that is
/// not UTF-8 comes out as it is, as in the outputs, not as `\u{FFFD}`), its control
/// characters and the message's escaped ([`terminal_safe`](crate::output::terminal_safe)).
pub fn eprint_about(path: &Path, what: &str) {
    let mut line = b"seekless: ".to_vec();
    line.extend_from_slice(&crate::output::terminal_safe(&crate::output::path_bytes(
        path,
    )));
    line.extend_from_slice(b": ");
    line.extend_from_slice(&crate::output::terminal_safe(what.as_bytes()));
    line.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&line);
}

/// [`eprint_about`] with the path quoted as GNU coreutils quotes it
/// ([`shell_quoted`](crate::output::shell_quoted)).
pub fn eprint_quoted(path: &Path, what: &str) {
    let mut line = b"seekless: ".to_vec();
    let name = crate::output::shell_quoted(&crate::output::path_bytes(path));
    line.extend_from_slice(name.as_bytes());
    line.extend_from_slice(b": ");
    line.extend_from_slice(&crate::output::terminal_safe(what.as_bytes()));
    line.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&line);
}

impl Reporter for Console {
    fn error(&self, err: &Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.bar.suspend(|| self.about(err.path(), &err.message()));
    }

    fn skipped(&self, path: &Path, why: &str) {
        if self.verbose {
            self.bar
                .suspend(|| self.about(path, &format!("skipped: {why}")));
        }
    }

    fn warning(&self, path: Option<&Path>, what: &str) {
        self.bar.suspend(|| match path {
            Some(path) => self.about(path, what),
            None => eprintln!("seekless: {what}"),
        });
    }

    fn planned(&self, files: u64, bytes: u64) {
        self.bar.set_prefix("planning");
        self.bar
            .set_message(format!("{files} files, {}", indicatif::HumanBytes(bytes)));
    }
}

/// The read phase as the user sees it: a byte progress bar on a terminal, and with
/// `--summary` the plan's summary before reading and the read phase's line after it.
/// `hash`, `hash --check` (once per round) and `index` share it.
pub struct ReadProgress<'a> {
    console: &'a Console,
    summary: bool,
    /// Whether the read's line says what bound the run (not where the job says it).
    verdict: bool,
    bar: ProgressBar,
    started: std::time::Instant,
    /// Files read whole and their bytes, in this phase.
    files: u64,
    bytes: u64,
}

impl<'a> ReadProgress<'a> {
    pub fn new(console: &'a Console, summary: bool) -> Self {
        Self {
            console,
            summary,
            verdict: true,
            bar: ProgressBar::hidden(),
            started: std::time::Instant::now(),
            files: 0,
            bytes: 0,
        }
    }

    /// No verdict on the read's line: the job gives its own (`index`: its phases').
    pub fn without_verdict(self) -> Self {
        Self {
            verdict: false,
            ..self
        }
    }

    /// The read of `plan` starts.
    fn start(&mut self, plan: &seekless::Plan) {
        if self.summary {
            crate::output::print_summary(plan);
        }
        if self.console.is_terminal() {
            self.console.finish();
            self.bar = ProgressBar::new(plan.summary().bytes);
            self.bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            self.bar
                .set_message(format!("{} files", plan.summary().files));
        }
        self.started = std::time::Instant::now();
        (self.files, self.bytes) = (0, 0);
    }

    /// One file of `size` bytes is done: read whole (`read`), or failed.
    fn file(&mut self, size: u64, read: bool) {
        self.bar.inc(size);
        if read {
            self.files += 1;
            self.bytes += size;
        }
    }

    /// The read is over.
    fn finish(&mut self, consumed: &seekless::read::Consumed) {
        self.bar.finish_and_clear();
        if self.summary {
            crate::output::print_read_summary(
                self.files,
                self.bytes,
                self.started.elapsed(),
                consumed,
                self.verdict.then(|| consumed.bound()),
            );
        }
    }
}

/// The one adapter from a read's events to the progress bar and `--summary`.
impl seekless::read::Events for ReadProgress<'_> {
    fn reading(&mut self, plan: &std::sync::Arc<seekless::Plan>) {
        self.start(plan);
    }

    fn file_done(&mut self, file: &seekless::PlannedFile, ok: bool) {
        self.file(file.entry.size, ok);
    }

    fn read_done(&mut self, consumed: &seekless::read::Consumed) {
        self.finish(consumed);
    }
}

/// Implements a read's events for a job's printer by handing them to its
/// [`ReadProgress`] field (the job's own events are implemented beside it).
macro_rules! read_events_through {
    ($printer:ident, $field:ident) => {
        impl seekless::read::Events for $printer<'_> {
            fn reading(&mut self, plan: &std::sync::Arc<seekless::Plan>) {
                self.$field.reading(plan);
            }

            fn file_done(&mut self, file: &seekless::PlannedFile, ok: bool) {
                self.$field.file_done(file, ok);
            }

            fn read_done(&mut self, consumed: &seekless::read::Consumed) {
                self.$field.read_done(consumed);
            }
        }
    };
}
pub(crate) use read_events_through;
