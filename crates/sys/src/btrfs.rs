//! What changed in a btrfs subvolume since a generation it had, asked of the subvolume's
//! own tree instead of found by a walk ([`btrfs_changes_since`]): the catch-up of an
//! incremental run (docs/index.md, "Incremental runs"). Linux only; elsewhere
//! `Unsupported`.

use std::path::PathBuf;

/// The directories of a btrfs subvolume to list again, and the generation to ask from
/// next time ([`btrfs_changes_since`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BtrfsChanges {
    /// The subvolume's generation (the last transaction that changed it), read before its
    /// tree was searched and after the filesystem was committed (`syncfs`): what changed
    /// before the call is at or below it, what changed after it, even while the search
    /// ran, is newer, so the next call given it reports that. Store it for next time.
    pub generation: u64,
    /// The directories to list again, absolute, sorted, each once: every directory
    /// holding (by any of its names) a file or directory created, written or whose
    /// metadata changed since, and every directory that itself changed since (an entry
    /// added, removed or renamed in it, its own metadata). Only those reachable under the
    /// mount the given path was on, and only this subvolume's: a subvolume inside it is
    /// a tree of its own, asked separately.
    pub dirs: Vec<PathBuf>,
    /// The files whose data was written since (an extent of theirs is newer: created or
    /// written, not only renamed or given other metadata), by each of their names under
    /// the mount, absolute, sorted: what a walk that compares sizes and modification
    /// times would miss (an edit in place that kept the size and put the time back) is
    /// here. Their directories are in `dirs`. A `nodatacow` file overwritten in place
    /// keeps its extents and is not (its directory is, when its mtime changed).
    pub files: Vec<PathBuf>,
    /// The subvolumes nested in this one that are reachable under the mount the given
    /// path was on, absolute, sorted: their changes are in trees of their own, not in
    /// `dirs`, so a caller whose directory holds one asks (or walks) it separately.
    pub subvolumes: Vec<PathBuf>,
}

#[cfg(target_os = "linux")]
pub use crate::os::btrfs_generation;

/// The generation of the btrfs subvolume holding the directory `path`: Linux only; here it
/// fails with `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn btrfs_generation(_path: &std::path::Path) -> std::io::Result<u64> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "btrfs generations are read on Linux only",
    ))
}

#[cfg(target_os = "linux")]
pub use crate::os::btrfs_changes_since;

/// What changed in the btrfs subvolume holding the directory `path` since its generation
/// was `since`: Linux only; here it fails with `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn btrfs_changes_since(_path: &std::path::Path, _since: u64) -> std::io::Result<BtrfsChanges> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "btrfs generations are read on Linux only",
    ))
}
