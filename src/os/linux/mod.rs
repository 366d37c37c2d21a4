//! Linux: FIEMAP and FIBMAP for extents, statfs for the filesystem type, sysfs for disks,
//! `readahead(2)`/`posix_fadvise` for reading.

mod dirahead;
mod fibmap;
mod fiemap;
mod hints;
mod longpath;
mod statfs;
mod sysfs;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::device::Disk;
use crate::locate::{Filesystem, LocateError, Placement, Strategy};

pub(crate) use super::unix::{
    await_prefetch, dir_entry_ino, file_id, raise_open_file_limit, sync_filesystems,
};
pub(crate) use dirahead::DirReadahead;
pub(crate) use hints::{drop_cache, prefetch};
pub(crate) use longpath::{metadata, read_dir, symlink_metadata, sys_path};

/// Opens a file to ask where it lies. Never blocks (a FIFO swapped in after the directory
/// was read cannot hang us), never updates atime, and does not follow a final symlink
/// unless asked.
pub(crate) fn open_to_locate(path: &Path, follow: bool) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    open_noatime(path, flags)
}

/// Opens a file for reading its contents, without updating atime where permitted.
pub(crate) fn open_to_read(path: &Path) -> io::Result<File> {
    open_noatime(path, libc::O_NOCTTY | libc::O_NONBLOCK)
}

fn open_noatime(path: &Path, flags: i32) -> io::Result<File> {
    let path = &*sys_path(path)?;
    // O_NOATIME is only allowed to the file's owner (or CAP_FOWNER): atime updates are
    // writes, and writes are seeks. Fall back silently when refused.
    match OpenOptions::new()
        .read(true)
        .custom_flags(flags | libc::O_NOATIME)
        .open(path)
    {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            OpenOptions::new().read(true).custom_flags(flags).open(path)
        }
        other => other,
    }
}

/// Identifies the filesystem `file` is on and the strategies to try there.
pub(crate) fn filesystem(file: &File, dev: u64) -> Filesystem {
    let kind = statfs::kind(file);
    Filesystem {
        dev,
        kind,
        ladder: statfs::ladder(kind, is_root()),
        max_prefetch: sysfs::prefetch_limit(dev),
    }
}

/// Asks the kernel where `file`'s data lies, with the given strategy.
pub(crate) fn map_extents(
    file: &File,
    strategy: Strategy,
    size: u64,
    sync: bool,
) -> Result<Placement, LocateError> {
    match strategy {
        Strategy::Fiemap => fiemap::placement(file, size, sync),
        Strategy::Fibmap => fibmap::placement(file, size),
        other => Err(LocateError::Unsupported(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{other} is not available on Linux"),
        ))),
    }
}

/// The physical disk holding device `dev`, found through sysfs, and the device's byte
/// offset on it.
pub(crate) fn disk_of(dev: u64) -> (Disk, u64) {
    sysfs::disk_of(dev)
}

/// Whether we run with root's powers (FIBMAP needs CAP_SYS_RAWIO; drop_caches needs root).
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
