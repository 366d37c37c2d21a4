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

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::{AtomicFile, OutputIdentity};

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
    /// archive's name. Identities are taken as the walk takes them (`os::file_id`: device
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
        self.file.identity()
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
pub type ArchiveIdentity = OutputIdentity;
