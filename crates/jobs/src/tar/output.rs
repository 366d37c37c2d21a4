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
//!   removed: those whose run provably ended (their lock is free). While another run is
//!   writing ARCHIVE, a second one is refused, naming the first;
//! - a link named ARCHIVE is written through: its target is replaced, the link stays;
//! - a device, a FIFO or standard output (`/dev/null`, a tape, `/dev/stdout`) is written
//!   into, never replaced.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::AtomicFile;
use seekless_core::{FileId, os};

/// The archive being written ([`AtomicFile::create`]): under a temporary name beside
/// ARCHIVE (beside the target of a link named ARCHIVE), or, where ARCHIVE is a device, a
/// FIFO or standard output (`/dev/null`, a tape, a pipe, `/dev/stdout`), straight into it,
/// as every tar does (renaming over a device node would replace it with a regular file).
#[derive(Debug)]
pub struct ArchiveFile {
    file: AtomicFile,
}

impl ArchiveFile {
    /// Starts writing the archive `path`: checks that it may be written, that no other run
    /// is writing it, removes the temporaries of ended runs writing it, and creates its
    /// temporary.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("a.tar");
    /// let archive = seekless_jobs::tar::ArchiveFile::create(&path)?;
    /// assert!(archive.removed().is_empty() && !path.exists());
    /// archive.commit()?;
    /// assert!(path.exists());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn create(path: &Path) -> io::Result<ArchiveFile> {
        Ok(ArchiveFile {
            file: AtomicFile::create(path)?,
        })
    }

    /// The archive's name.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The file the archive becomes: its name, or the target of the link it names.
    pub fn final_path(&self) -> &Path {
        self.file.final_path()
    }

    /// The temporary name it is written under, if it is (not for a device or FIFO).
    pub fn temp_path(&self) -> Option<&Path> {
        self.file.temp_path()
    }

    /// The file to write to (`&File` is `Write`).
    pub fn file(&self) -> &fs::File {
        self.file.file()
    }

    /// Temporaries of ended runs that were removed.
    pub fn removed(&self) -> &[PathBuf] {
        self.file.removed()
    }

    /// What the walk may meet of this archive, never to be stored in it
    /// ([`TarOptions::archive`](super::TarOptions::archive)): the file being written (its
    /// temporary, or the device or FIFO written into), the file it replaces, and the
    /// archive's name. Identities are taken as the walk takes them ([`os::file_id`]: device
    /// and inode; on Windows volume serial number and file index); a file that cannot be
    /// looked at is not among them.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("a.tar");
    /// std::fs::write(&path, b"the previous archive")?;
    /// let archive = seekless_jobs::tar::ArchiveFile::create(&path)?;
    /// let own = archive.identity();
    /// assert_eq!(own.ids.len(), 2); // the temporary, and the file it replaces
    /// assert_eq!(own.name.as_deref(), Some("a.tar".as_ref()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn identity(&self) -> ArchiveIdentity {
        let written = self.file().metadata().and_then(|m| {
            let path = self.temp_path().unwrap_or(self.path());
            os::file_id(path, Some(self.file()), &m)
        });
        let replaced =
            os::metadata(self.final_path()).and_then(|m| os::file_id(self.final_path(), None, &m));
        let mut ids = Vec::new();
        for id in [written, replaced].into_iter().flatten() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ArchiveIdentity {
            ids,
            name: self.final_path().file_name().map(ToOwned::to_owned),
        }
    }

    /// Puts the archive in place, durably ([`AtomicFile::commit`]); written into a device
    /// or FIFO, it is there already.
    pub fn commit(self) -> io::Result<()> {
        self.file.commit()
    }
}

/// The archive a run writes, as its walk may meet it ([`ArchiveFile::identity`]): never
/// stored in itself. GNU tar's rule ("file is the archive; not dumped"), kept in the
/// library so that every caller archiving into a file it names gets it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveIdentity {
    /// The files that are the archive: the one being written and the one it replaces.
    pub ids: Vec<FileId>,
    /// The archive's file name, to name it by where the walk meets it under its temporary
    /// name (see [`AtomicFile`]).
    pub name: Option<OsString>,
}

impl ArchiveIdentity {
    /// Whether the file `id` is the archive.
    pub fn is_archive(&self, id: &FileId) -> bool {
        self.ids.contains(id)
    }

    /// The name to report the archive by where the walk met it at `path`: the archive's
    /// own name where `path` is its temporary, else `path`.
    pub fn shown_as(&self, path: &Path) -> PathBuf {
        match (&self.name, path.file_name()) {
            (Some(archive), Some(name)) if crate::atomic::is_temp(name) => {
                path.with_file_name(archive)
            }
            _ => path.to_path_buf(),
        }
    }
}
