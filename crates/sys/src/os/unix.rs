//! What Linux and macOS share: identity from `stat`, the open-file limit, `sync`.

use std::fs::{DirEntry, File, Metadata};
use std::io;
use std::os::unix::fs::{DirEntryExt, FileExt, MetadataExt};
use std::path::Path;

use crate::file_id::FileId;

/// When the file's status last changed (`st_ctime`: content, mode, owner, links), in
/// seconds and nanoseconds: what a writer that restores the modification time still moves.
pub fn change_time(meta: &Metadata) -> Option<(i64, i64)> {
    Some((meta.ctime(), meta.ctime_nsec()))
}

/// Bytes allocated to the file on its disk (`st_blocks` × 512): fewer than its size means
/// it has holes.
pub fn allocated_bytes(meta: &Metadata) -> Option<u64> {
    Some(meta.blocks().saturating_mul(512))
}

/// The identity of a file: device and inode number, both in its metadata (`path` and the
/// open file are only needed on Windows).
pub fn file_id(_path: &Path, _open: Option<&File>, meta: &Metadata) -> io::Result<FileId> {
    Ok(FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// The inode number readdir reported, without a `stat`.
pub fn dir_entry_ino(entry: &DirEntry) -> u64 {
    entry.ino()
}

/// The soft open-file limit (`RLIMIT_NOFILE`), as it is.
pub fn open_file_limit() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `struct rlimit` into `lim`, which we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1024;
    }
    usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
}

/// Raises the soft open-file limit to the hard limit and returns the resulting soft limit.
/// The reader keeps a descriptor per file it is prefetching.
pub fn raise_open_file_limit() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `struct rlimit` into `lim`, which we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1024;
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max.min(1 << 20),
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads one `struct rlimit` we own; failure leaves the old limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            lim.rlim_cur = want.rlim_cur;
        }
    }
    usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
}

/// Writes all dirty data to disk (`sync(2)`), so a following cache drop can drop it all.
pub fn sync_filesystems() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() }
}

/// Waits until the page at `offset` is in the cache: blocks while a prefetch of it is in
/// flight (and reads it, if the prefetch was dropped). Reads one byte through the cache
/// without moving the file position; end of file is not an error.
pub fn await_prefetch(file: &File, offset: u64) -> io::Result<()> {
    let mut byte = [0u8; 1];
    loop {
        match file.read_at(&mut byte, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other.map(drop),
        }
    }
}
