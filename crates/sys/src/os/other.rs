//! Any other platform: the standard library's calls, and no hints.

use std::fs::{DirEntry, File, Metadata};
use std::io;
use std::path::Path;

use crate::file_id::FileId;

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
