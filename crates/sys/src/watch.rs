//! Changes of directories' entries as they happen ([`DirWatch`]): Linux's inotify; on
//! other systems [`DirWatch::new`] is `Unsupported` and the caller falls back to runs at
//! intervals.

use std::path::PathBuf;

/// What happened to an entry of a watched directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// Made (a file or a directory).
    Created,
    /// Written to: a file still being written (until [`Closed`](Self::Closed)).
    Writing,
    /// A file open for writing was closed.
    Closed,
    /// Removed.
    Removed,
    /// Renamed away from here; the cookie pairs it with its [`MovedTo`](Self::MovedTo),
    /// if the new name is in a watched directory.
    MovedFrom(u32),
    /// Renamed to here.
    MovedTo(u32),
    /// Its attributes changed (mode, owner, times: a `touch`).
    Attributes,
}

/// One thing a [`DirWatch`] was told.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchEvent {
    /// An entry of a watched directory changed.
    Entry {
        /// The entry's path (the watched directory's, joined with its name).
        path: PathBuf,
        /// It is a directory.
        is_dir: bool,
        /// What happened.
        change: Change,
    },
    /// A watched directory is not watched any more (removed, renamed, or the kernel
    /// dropped its watch).
    Unwatched(PathBuf),
    /// The filesystem of a watched directory was unmounted.
    Unmounted(PathBuf),
    /// A filesystem was mounted or unmounted somewhere.
    MountsChanged,
    /// Events were lost (the kernel's queue overflowed): what changed is not known.
    Overflow,
}

#[cfg(target_os = "linux")]
pub use crate::os::{DirWatch, watch_limit};

/// Where there is no watch: [`DirWatch::new`] fails with `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub struct DirWatch(());

#[cfg(not(target_os = "linux"))]
impl DirWatch {
    /// Fails: this system's watch is not implemented.
    pub fn new() -> std::io::Result<DirWatch> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "watching directories is implemented on Linux only",
        ))
    }

    /// Never reached (no watch is made).
    pub fn add(&mut self, _dir: &std::path::Path) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }

    /// Never reached (no watch is made).
    pub fn remove_tree(&mut self, _dir: &std::path::Path) {}

    /// Never reached (no watch is made).
    pub fn describe(&self) -> String {
        "nothing".to_string()
    }

    /// Never reached (no watch is made).
    pub fn len(&self) -> usize {
        0
    }

    /// Never reached (no watch is made).
    pub fn is_empty(&self) -> bool {
        true
    }

    /// Never reached (no watch is made).
    pub fn wait(
        &mut self,
        _timeout: std::time::Duration,
        _out: &mut Vec<WatchEvent>,
    ) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// The watch limit: none known here.
#[cfg(not(target_os = "linux"))]
pub fn watch_limit() -> Option<u64> {
    None
}
