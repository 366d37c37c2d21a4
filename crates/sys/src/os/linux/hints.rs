//! Page-cache hints for the reader: start reading ahead, and let go after use.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Asks the kernel to start reading `len` bytes at `offset` into the page cache and
/// returns at once; the disk works while we do other things.
///
/// `readahead(2)` queues the reads without waiting (unlike `read`). One call reads at most
/// the larger of the device's `max_sectors_kb` and `read_ahead_kb` and drops the rest
/// silently, so callers cut requests to the filesystem's `max_prefetch`.
pub fn prefetch(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let off = libc::off64_t::try_from(offset).map_err(io::Error::other)?;
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    // SAFETY: readahead only reads the fd and plain integer arguments.
    let rc = unsafe { libc::readahead(file.as_raw_fd(), off, len) };
    if rc < 0 {
        // Filesystems without readahead support (some FUSE, NFS setups): fall back to the
        // advisory call, which is a no-op where unsupported.
        return fadvise(file, offset, len as u64, libc::POSIX_FADV_WILLNEED);
    }
    Ok(())
}

/// Tells the kernel the bytes are no longer needed, so a long scan does not evict
/// everything else from the page cache.
pub fn drop_cache(file: &File, offset: u64, len: u64) -> io::Result<()> {
    fadvise(file, offset, len, libc::POSIX_FADV_DONTNEED)
}

/// Drops the whole page cache, dentries and inodes (root only): `sync` first, since dirty
/// pages cannot be dropped, then `3` to `/proc/sys/vm/drop_caches`.
pub fn drop_all_caches() -> io::Result<()> {
    super::sync_filesystems();
    std::fs::write("/proc/sys/vm/drop_caches", b"3")
}

fn fadvise(file: &File, offset: u64, len: u64, advice: libc::c_int) -> io::Result<()> {
    let off = libc::off_t::try_from(offset).map_err(io::Error::other)?;
    let len = libc::off_t::try_from(len).unwrap_or(libc::off_t::MAX);
    // SAFETY: posix_fadvise only reads the fd and plain integer arguments.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), off, len, advice) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}
