//! What a copy is asked ([`CopyRoot`], [`CopyOptions`]) and what it reports
//! ([`CopySummary`], [`Method`], [`CopyEvents`], [`CopyError`]).

use std::io;
use std::path::PathBuf;

use super::ResolveError;
use crate::digest::Algorithm;
use seekless_core::PlannedFile;
use seekless_core::read::{Events, NoEvents, ReadOptions};

/// One source and where it goes: `source` itself becomes `dest` (a directory's contents
/// go under `dest`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CopyRoot {
    /// A file or directory to copy.
    pub source: PathBuf,
    /// What it becomes.
    pub dest: PathBuf,
}

impl CopyRoot {
    /// `source` copied as `dest`.
    pub fn new(source: impl Into<PathBuf>, dest: impl Into<PathBuf>) -> CopyRoot {
        CopyRoot {
            source: source.into(),
            dest: dest.into(),
        }
    }
}

/// How to copy.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CopyOptions {
    /// How to read.
    pub read: ReadOptions,
    /// Threads writing files.
    pub workers: usize,
    /// Copy extended attributes (where the destination has none, silently not).
    pub xattrs: bool,
    /// `fsync` each file before renaming it into place (more than `sync` needs: one
    /// flush per file instead of one per batch).
    pub fsync: bool,
    /// Durable before trusted: each file's data reaches the disk before the file gets its
    /// final name (a batch of files at a time, one `syncfs` per destination filesystem
    /// per batch), and the destination is flushed again at the end, so a power cut never
    /// leaves a file under its final name with the right size and mtime but not its
    /// data. Off (`--no-sync`): files are renamed as soon as written and nothing is
    /// flushed; after a power cut a copied file may hold zeros that the next run's quick
    /// check takes for unchanged.
    pub sync: bool,
    /// Compare content, not size and mtime, to decide what is unchanged.
    pub checksum: bool,
    /// Remove destination entries that the source does not have. Nothing is removed after
    /// an error anywhere in the run (a directory that could not be listed, a file that
    /// could not be read: what the plan lacks may still exist), unless `ignore_errors`.
    pub delete: bool,
    /// With `delete`: delete even after errors, but never at or under a path that failed
    /// or was left out (another filesystem, walked under another name).
    pub ignore_errors: bool,
    /// With `delete`: a source root that is an empty directory empties its destination
    /// too. Off: an empty source directory (what a drive that is not mounted looks like)
    /// deletes nothing from a destination that has entries, and is reported as a failure.
    pub allow_empty_source: bool,
    /// After the copy, read each file copied back from the destination (its cache dropped
    /// first) and compare its BLAKE3 hash with the source's.
    pub verify: bool,
    /// Hash every source file (skipped ones too: they are read, not written) with this
    /// algorithm and report it ([`CopyEvents::hashed`]): a manifest as a by-product.
    pub hash: Option<Algorithm>,
    /// Within one filesystem, share blocks or copy in the kernel where possible.
    pub fast_path: bool,
    /// What this run writes itself (its manifest: [`AtomicFile::identity`](crate::AtomicFile::identity)): where the
    /// walk meets it, it is left out, with a message, as an unseen path (`delete` keeps
    /// what the destination has there).
    pub outputs: Vec<crate::OutputIdentity>,
}

impl Default for CopyOptions {
    fn default() -> Self {
        Self {
            read: ReadOptions::default(),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            xattrs: true,
            fsync: false,
            sync: true,
            checksum: false,
            delete: false,
            ignore_errors: false,
            allow_empty_source: false,
            verify: false,
            hash: None,
            fast_path: true,
            outputs: Vec::new(),
        }
    }
}

/// How a file's content was put in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Method {
    /// Read (in physical order) and written.
    ReadWrite,
    /// Blocks shared with the source (`FICLONE`).
    Clone,
    /// Copied inside the kernel (`copy_file_range`).
    CopyRange,
}

/// What a copy did.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct CopySummary {
    /// Files the destination did not have.
    pub copied: u64,
    /// Files the destination had, different.
    pub updated: u64,
    /// Files the destination had, the same (not written).
    pub skipped: u64,
    /// Unchanged files, links and special files whose mode, owner, times or extended
    /// attributes were brought up to date (as rsync does).
    pub refreshed: u64,
    /// Destination entries removed (`delete`).
    pub deleted: u64,
    /// Paths that failed.
    pub failed: u64,
    /// Content bytes written.
    pub bytes: u64,
    /// Content bytes shared with the source (`FICLONE`): not written.
    pub cloned: u64,
    /// Directories made or brought up to date.
    pub dirs: u64,
    /// Symlinks, FIFOs and device nodes made.
    pub others: u64,
    /// Hard links made.
    pub hardlinks: u64,
    /// Files compared after the copy (`verify`), and those that differed.
    pub verified: u64,
    /// Files whose copy did not match the source (`verify`).
    pub mismatched: u64,
    /// Temporaries of interrupted runs removed.
    pub leftovers_removed: u64,
    /// How each source filesystem's files were copied: (its `st_dev`, a method used for
    /// some of them), each pair once.
    pub methods: Vec<(u64, Method)>,
    /// The run stopped early (the destination is full, or cannot be written).
    pub stopped: bool,
    /// `delete` was asked for but nothing was deleted, because something failed
    /// (`ignore_errors` not given).
    pub deletion_skipped: bool,
}

/// What [`copy_with`](super::copy_with) tells its caller as it goes, beyond the read's
/// [`Events`] (the plan read, each file copied or failed, the end);
/// all optional. Called one at a time.
pub trait CopyEvents: Events {
    /// A source file's hash ([`CopyOptions::hash`]).
    fn hashed(&mut self, file: &PlannedFile, hex: &str) {
        let _ = (file, hex);
    }
}

impl CopyEvents for NoEvents {}

/// Why a copy could not run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyError {
    /// The destination cannot be written (found before anything was read).
    #[error("{}: cannot write the destination: {}", path.display(), seekless_sys::describe_io(source))]
    Destination {
        /// The directory tried.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Another run is writing into the destination (one writer at a time).
    #[error("{}: another run is writing here: {holder}", path.display())]
    Busy {
        /// The destination directory.
        path: PathBuf,
        /// Who, as far as the system says.
        holder: String,
    },
    /// A root would copy a directory to itself or into itself (see [`resolve_roots`](super::resolve_roots)).
    #[error(transparent)]
    Roots(#[from] ResolveError),
}
