//! Errors that name the file they happened on.
//!
//! Every error a user sees says which path failed and why. Per-file errors never stop a
//! run: the pipeline reports them through a [`Reporter`](crate::Reporter) and goes on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What went wrong with one path.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// An operating-system error (missing file, permission denied, EIO, …).
    #[error("{0}")]
    Io(#[source] io::Error),
    /// Following symlinks led back to a directory that is already being walked.
    #[error("symbolic link loop (leads back to {})", .ancestor.display())]
    SymlinkLoop {
        /// The directory the link leads back to.
        ancestor: PathBuf,
    },
    /// The file changed (size or modification time) while it was being read, or vanished.
    #[error("file changed while being read ({0})")]
    Changed(String),
}

/// An error tied to the path it happened on.
#[derive(Debug)]
pub struct Error {
    path: PathBuf,
    kind: ErrorKind,
}

impl Error {
    /// An error for `path`.
    pub fn new(path: impl Into<PathBuf>, kind: ErrorKind) -> Self {
        Self {
            path: path.into(),
            kind,
        }
    }

    /// An I/O error for `path`.
    pub fn io(path: impl Into<PathBuf>, err: io::Error) -> Self {
        Self::new(path, ErrorKind::Io(err))
    }

    /// The path the error happened on.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The underlying I/O error, if there is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Like coreutils: "PATH: message". io::Error's Display adds "(os error N)", which
        // users do not need; print the OS description alone.
        match &self.kind {
            ErrorKind::Io(e) => write!(f, "{}: {}", self.path.display(), describe_io(e)),
            other => write!(f, "{}: {}", self.path.display(), other),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        let kind = match &err.kind {
            ErrorKind::Io(e) => e.kind(),
            ErrorKind::SymlinkLoop { .. } => io::ErrorKind::Other,
            ErrorKind::Changed(_) => io::ErrorKind::Other,
        };
        io::Error::new(kind, err)
    }
}

/// The operating system's description of an I/O error, without "(os error N)".
pub(crate) fn describe_io(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
