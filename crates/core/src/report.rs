//! Reporting: how the pipeline tells its caller about errors and progress as they happen.

use crate::error::Error;

/// Receives per-file errors and progress while a plan is built or files are read.
///
/// Called from worker threads, so implementations must be `Sync`. Every method has a
/// default that does nothing; errors are also counted in the results, so ignoring them
/// here loses only the message.
pub trait Reporter: Sync {
    /// A path failed; the run goes on.
    fn error(&self, err: &Error) {
        let _ = err;
    }

    /// A path was skipped on purpose (special file, symlink, other filesystem). The default
    /// ignores it; skips are counted in the summary.
    fn skipped(&self, path: &std::path::Path, why: &str) {
        let _ = (path, why);
    }

    /// Planning progress: files found and located so far, and their bytes.
    fn planned(&self, files: u64, bytes: u64) {
        let _ = (files, bytes);
    }

    /// Something the user should hear of that is not a failure (an archive leaving itself
    /// out, a socket it cannot store, names made relative), about `path` if given.
    fn warning(&self, path: Option<&std::path::Path>, what: &str) {
        let _ = (path, what);
    }
}

/// Passes everything on to `inner`, and hands each error to `on_error` too: for a caller
/// that must know which paths failed.
pub struct Tee<'a, F> {
    /// Where everything goes.
    pub inner: &'a dyn Reporter,
    /// Called with each error as well.
    pub on_error: F,
}

impl<F: Fn(&Error) + Sync> Reporter for Tee<'_, F> {
    fn error(&self, err: &Error) {
        self.inner.error(err);
        (self.on_error)(err);
    }

    fn skipped(&self, path: &std::path::Path, why: &str) {
        self.inner.skipped(path, why);
    }

    fn planned(&self, files: u64, bytes: u64) {
        self.inner.planned(files, bytes);
    }

    fn warning(&self, path: Option<&std::path::Path>, what: &str) {
        self.inner.warning(path, what);
    }
}

/// A reporter that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Reporter for Quiet {}
