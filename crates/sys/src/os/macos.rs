//! macOS: opening, root, and `F_RDADVISE` and `F_NOCACHE` for reading; the rest is what
//! every Unix shares.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub use super::unix::{
    allocated_bytes, await_prefetch, change_time, dir_entry_ino, file_id, open_file_limit,
    raise_open_file_limit, sync_filesystems,
};

/// Opens a file to ask where it lies. Never blocks (a FIFO swapped in after the directory
/// was read cannot hang us), and does not follow a final symlink unless asked.
pub fn open_to_locate(path: &Path, follow: bool) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    OpenOptions::new().read(true).custom_flags(flags).open(path)
}

/// Opens a file for reading its contents. (macOS has no `O_NOATIME`; APFS and HFS+ update
/// access times lazily, at most once a day by default.)
pub fn open_to_read(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// Whether we run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Asks the kernel to read `len` bytes at `offset` into the cache (`F_RDADVISE`), without
/// waiting for them. Counts beyond `int` are clamped; the reader asks for windows far
/// smaller.
pub fn prefetch(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let advice = libc::radvisory {
        ra_offset: libc::off_t::try_from(offset).map_err(io::Error::other)?,
        ra_count: libc::c_int::try_from(len).unwrap_or(libc::c_int::MAX),
    };
    // SAFETY: F_RDADVISE reads one `struct radvisory`: an off_t at offset 0 and an int at
    // offset 8, as in `advice` (whose trailing padding the 4-byte-packed C struct lacks;
    // the kernel reads no further than the int). `advice` lives across the call and the fd
    // is open.
    let rc = unsafe {
        libc::fcntl(
            file.as_raw_fd(),
            libc::F_RDADVISE,
            &advice as *const libc::radvisory,
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Stops this descriptor from filling the cache (`F_NOCACHE`), so a long scan does not
/// evict everything else. Unlike Linux's `POSIX_FADV_DONTNEED` it is per descriptor, not
/// per range, and pages already cached stay until memory pressure evicts them; macOS has
/// no call that drops a range of a file from the cache.
pub fn drop_cache(file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    // SAFETY: F_NOCACHE takes a plain int argument; the fd is open.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_NOCACHE, 1 as libc::c_int) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The volume holding `path` (see [`crate::volume_identity`]): from `statfs`, its mount's type,
/// source and mount point (macOS has no call that gives every filesystem's UUID without
/// linking a framework).
pub(crate) fn volume_of_path(
    path: &Path,
    meta: &std::fs::Metadata,
) -> io::Result<crate::volume::VolumeIdentity> {
    use crate::volume::{IdentitySource, VolumeIdentity, mount_key};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: statfs is plain integers and character arrays, for which all zeroes is a
    // valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` a statfs buffer, both live for the call.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let text = |chars: &[libc::c_char]| -> Vec<u8> {
        chars
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect()
    };
    let key = mount_key(
        &text(&st.f_fstypename),
        &text(&st.f_mntfromname),
        b"/",
        &text(&st.f_mntonname),
    );
    Ok(VolumeIdentity::new(
        key,
        IdentitySource::Mount,
        meta.dev() as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 100_000]).unwrap();
        let f = File::open(&path).unwrap();
        prefetch(&f, 0, 100_000).unwrap();
        drop_cache(&f, 0, 100_000).unwrap();
    }
}
