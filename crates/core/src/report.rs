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

/// A reporter that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Reporter for Quiet {}
