//! Errors that name the file they happened on.
//!
//! Every error a user sees says which path failed and why. Per-file errors never stop a
//! run: the pipeline reports them through a [`Reporter`](crate::Reporter) and goes on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub(crate) use seekless_sys::describe_io;

/// What went wrong with one path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The file changed while it was being read, or was replaced since it was planned.
    #[error("file changed while being read ({0})")]
    Changed(Change),
    /// A path named explicitly is not a regular file (a FIFO, socket, device or
    /// directory where a file was expected); it is skipped, never opened.
    #[error("not a regular file ({kind}), skipped")]
    NotRegular {
        /// What it is: "fifo", "socket", "block device", "character device", …
        kind: &'static str,
    },
}

/// How a file changed while it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// Its size is not what it was when planned.
    Size {
        /// When planned.
        planned: u64,
        /// After reading.
        now: u64,
    },
    /// Reading it gave another number of bytes than its size.
    Length {
        /// Bytes read.
        read: u64,
        /// Its size.
        size: u64,
    },
    /// Its modification time moved.
    Modified,
    /// Another file is at its path now.
    Replaced,
    /// Its status-change time (`ctime`) moved: written to with its modification time put
    /// back, or its mode, owner or links changed.
    Status,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Size { planned, now } => write!(f, "size {planned} → {now}"),
            Change::Length { read, size } => write!(f, "read {read} of {size} bytes"),
            Change::Modified => f.write_str("modification time changed"),
            Change::Replaced => f.write_str("replaced by another file since it was planned"),
            Change::Status => f.write_str("status change time moved"),
        }
    }
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

    /// What went wrong, without the path (`Display` writes `PATH: message`): for a
    /// caller that prints the path its own way (its bytes, when it is not UTF-8).
    pub fn message(&self) -> String {
        match &self.kind {
            ErrorKind::Io(e) => describe_io(e),
            other => other.to_string(),
        }
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
            ErrorKind::NotRegular { .. } => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, err)
    }
}
