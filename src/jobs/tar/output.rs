//! The archive's file, as `tar -f ARCHIVE` treats it, written through an
//! [`AtomicFile`] so it appears only when complete:
//!
//! - an existing ARCHIVE this process could not have opened for writing (a read-only file
//!   of the user's own, another user's file) is refused, as GNU tar refuses it ("Cannot
//!   open: Permission denied"), instead of being replaced by a file of the directory's
//!   choosing; a directory is refused before anything is read;
//! - one that may be replaced keeps its permission bits (and, where the system allows,
//!   its owner and group): the temporary gets them before any data is written, so an
//!   archive kept private stays private while it is written;
//! - temporaries of ARCHIVE left by runs that were killed (`kill -9`, a power cut) are
//!   removed: those whose process is gone. A temporary whose process still runs is
//!   someone's archive being written and is left alone;
//! - a device or FIFO (`/dev/null`, a tape) is written into, never replaced.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::AtomicFile;
use crate::atomic::{parent_of, temp_owner};
use crate::os;

/// The archive being written: under a temporary name beside ARCHIVE, or, where ARCHIVE
/// is a device or a FIFO (`/dev/null`, a tape, a pipe), straight into it, as every tar
/// does (renaming over a device node would replace it with a regular file).
#[derive(Debug)]
pub struct ArchiveFile {
    target: Target,
    removed: Vec<PathBuf>,
}

#[derive(Debug)]
enum Target {
    Replace(AtomicFile),
    InPlace { path: PathBuf, file: fs::File },
}

impl ArchiveFile {
    /// Starts writing the archive `path`: checks that it may be written, removes the
    /// temporaries of killed runs writing it, and creates its temporary.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("a.tar");
    /// let archive = seekless::jobs::tar::ArchiveFile::create(&path)?;
    /// assert!(archive.removed().is_empty() && !path.exists());
    /// archive.commit()?;
    /// assert!(path.exists());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn create(path: &Path) -> io::Result<ArchiveFile> {
        let old = match fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        if old.as_ref().is_some_and(fs::Metadata::is_dir) {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "Is a directory",
            ));
        }
        if old.as_ref().is_some_and(|m| !m.is_file()) {
            let file = fs::OpenOptions::new().write(true).open(path)?;
            return Ok(ArchiveFile {
                target: Target::InPlace {
                    path: path.to_path_buf(),
                    file,
                },
                removed: Vec::new(),
            });
        }
        if old.is_some() {
            os::check_writable(path)?;
        }
        let removed = remove_stale_temporaries(path);
        let file = match &old {
            // Private until it has the old file's permissions.
            Some(_) => AtomicFile::create_private(path)?,
            None => AtomicFile::create(path)?,
        };
        if let Some(old) = &old {
            os::keep_owner_and_mode(file.file(), old)?;
        }
        Ok(ArchiveFile {
            target: Target::Replace(file),
            removed,
        })
    }

    /// The archive's name.
    pub fn path(&self) -> &Path {
        match &self.target {
            Target::Replace(f) => f.path(),
            Target::InPlace { path, .. } => path,
        }
    }

    /// The temporary name it is written under, if it is (not for a device or FIFO).
    pub fn temp_path(&self) -> Option<&Path> {
        match &self.target {
            Target::Replace(f) => Some(f.temp_path()),
            Target::InPlace { .. } => None,
        }
    }

    /// The file to write to (`&File` is `Write`).
    pub fn file(&self) -> &fs::File {
        match &self.target {
            Target::Replace(f) => f.file(),
            Target::InPlace { file, .. } => file,
        }
    }

    /// Temporaries of killed runs that were removed.
    pub fn removed(&self) -> &[PathBuf] {
        &self.removed
    }

    /// Puts the archive in place, durably ([`AtomicFile::commit`]); written into a device
    /// or FIFO, it is there already.
    pub fn commit(self) -> io::Result<()> {
        match self.target {
            Target::Replace(f) => f.commit(),
            Target::InPlace { .. } => Ok(()),
        }
    }
}

/// Removes the temporaries of `path` whose process is gone; returns them.
fn remove_stale_temporaries(path: &Path) -> Vec<PathBuf> {
    let Ok(dir) = fs::read_dir(parent_of(path)) else {
        // The temporary's creation will say what is wrong with the directory.
        return Vec::new();
    };
    let me = std::process::id();
    dir.flatten()
        .filter(|e| {
            temp_owner(path, &e.file_name())
                .is_some_and(|pid| pid != me && !os::process_exists(pid))
        })
        // Only regular files: never a directory or what a link points to.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| path.with_file_name(e.file_name()))
        .filter(|stale| fs::remove_file(stale).is_ok())
        .collect()
}
