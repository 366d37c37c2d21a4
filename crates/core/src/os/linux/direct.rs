//! Reads that bypass the page cache (`O_DIRECT`), to time the disk itself: how the reader
//! tells a seeking disk from a solid-state one (see `measure`).

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::sysfs;
use crate::disk::Disk;
use seekless_sys::sys_path;

/// Bytes of one direct read, and their alignment in memory and in the file: `O_DIRECT`
/// wants both aligned to the device's logical block size, which is at most a page on the
/// disks this is for.
pub(crate) const DIRECT_BLOCK: u64 = 4096;

/// One page, aligned as `O_DIRECT` wants.
#[repr(C, align(4096))]
struct Page([u8; DIRECT_BLOCK as usize]);

/// A file or block device open for direct reads of one block.
pub(crate) struct DirectReader {
    file: File,
    page: Box<Page>,
}

impl DirectReader {
    /// Opens `path` for direct reads (fails with `EINVAL` where the filesystem has none).
    pub(crate) fn open(path: &Path) -> io::Result<DirectReader> {
        let path = &*sys_path(path)?;
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_NOATIME)
            .open(path)
            .or_else(|e| match e.raw_os_error() {
                // O_NOATIME is the owner's (or CAP_FOWNER's) only.
                Some(libc::EPERM) => OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECT | libc::O_NOCTTY | libc::O_NONBLOCK)
                    .open(path),
                _ => Err(e),
            })?;
        Ok(DirectReader {
            file,
            page: Box::new(Page([0; DIRECT_BLOCK as usize])),
        })
    }

    /// Its length in bytes (a block device's size too).
    pub(crate) fn len(&mut self) -> io::Result<u64> {
        self.file.seek(SeekFrom::End(0))
    }

    /// Reads the block at `offset` (rounded down to a block) from the disk, not the cache.
    pub(crate) fn read_block(&mut self, offset: u64) -> io::Result<()> {
        let offset = offset / DIRECT_BLOCK * DIRECT_BLOCK;
        loop {
            match self.file.read_at(&mut self.page.0, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other.map(drop),
            }
        }
    }
}

/// The device node of a whole disk (`/dev/sda` for the disk named `sda`), found through
/// sysfs; `None` for a disk without one (unknown, network, memory).
pub(crate) fn disk_node(disk: &Disk) -> Option<PathBuf> {
    sysfs::disk_node(&disk.name)
}

/// What tells this disk from an earlier one of the same name (a loop device detached and
/// attached again): its name and `diskseq`.
pub(crate) fn disk_identity(disk: &Disk) -> String {
    match sysfs::disk_seq(&disk.name) {
        Some(seq) => format!("{}#{seq}", disk.name),
        None => disk.name.clone(),
    }
}
