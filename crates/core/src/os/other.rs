//! Any other platform: no extent queries; files are ordered by inode number.

use std::fs::{DirEntry, File, Metadata};
use std::io;
use std::path::Path;

use crate::disk::Disk;
use crate::file_id::FileId;
use crate::fs_kind::FsKind;
use crate::placement::{LocateError, Placement, Strategy};

/// The identity of the file at `path` (open as `open` when the caller has it open), whose
/// metadata is `meta`. A function of the path and handle rather than of the metadata alone
/// because on Windows the volume serial number and file index need a handle.
pub fn file_id(_path: &Path, _open: Option<&File>, meta: &Metadata) -> io::Result<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok(FileId { dev: 0, ino: 0 })
    }
}

pub fn dir_entry_ino(entry: &DirEntry) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirEntryExt;
        entry.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = entry;
        0
    }
}

pub fn open_to_locate(path: &Path, _follow: bool) -> io::Result<File> {
    File::open(path)
}

pub fn open_to_read(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// No strategy gives physical positions here.
pub const EXTENT_STRATEGIES: &[Strategy] = &[];

/// Nothing is known about filesystems here beyond their device number.
#[derive(Debug)]
pub struct Volume {
    dev: u64,
}

impl Volume {
    pub fn kind(&self) -> FsKind {
        FsKind::Other
    }

    pub fn max_prefetch(&self) -> Option<u64> {
        None
    }
}

pub fn probe(_file: &File, dev: u64) -> Volume {
    Volume { dev }
}

pub(crate) fn map_extents(
    _file: &File,
    strategy: Strategy,
    _size: u64,
    _sync: bool,
    _volume: &Volume,
) -> Result<Placement, LocateError> {
    Err(LocateError::Unsupported(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{strategy} is not available on this platform"),
    )))
}

pub fn disk_of(volume: &Volume) -> (Disk, u64) {
    (Disk::unknown(format!("dev {}", volume.dev)), 0)
}

pub fn is_root() -> bool {
    false
}

pub fn prefetch(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// Does nothing: [`prefetch`] starts no reads here, so there is nothing to wait for.
pub fn await_prefetch(_file: &File, _offset: u64) -> io::Result<()> {
    Ok(())
}

pub fn drop_cache(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

pub fn raise_open_file_limit() -> usize {
    1024
}

pub fn open_file_limit() -> usize {
    1024
}

pub fn sync_filesystems() {}

/// No status-change time here (Windows' change time is not in the standard library's
/// metadata): changes are noticed by size and modification time.
pub fn change_time(_meta: &Metadata) -> Option<(i64, i64)> {
    None
}

/// Allocated bytes are not in the standard library's metadata here: unknown.
pub fn allocated_bytes(_meta: &Metadata) -> Option<u64> {
    None
}
