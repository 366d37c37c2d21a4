//! Linux: paths of any length, `getdents64` listings, `readahead(2)`/`posix_fadvise`
//! hints, opening without updating atime, and the calls every Unix shares.

mod btrfs;
mod dirents;
mod hints;
mod longpath;
mod memory;
mod volume;
mod watch;

use std::ffi::{CStr, CString, OsStr};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub use super::unix::{
    allocated_bytes, await_prefetch, change_time, dir_entry_ino, file_id, open_file_limit,
    raise_open_file_limit, sync_filesystems,
};
pub use btrfs::{btrfs_changes_since, btrfs_generation};
pub use dirents::list_open_dir;
pub use hints::{drop_all_caches, drop_cache, prefetch};
pub use longpath::{
    SysPath, metadata, open_directory, pinned_no_links, read_dir, symlink_metadata, sys_path,
    with_path, with_paths,
};
pub use memory::free_memory;
pub(crate) use volume::{mount_points_under, volume_of_device, volume_of_open};
pub use watch::{DirWatch, watch_limit};

/// Opens a file to ask where it lies. Never blocks (a FIFO swapped in after the directory
/// was read cannot hang us), never updates atime, and does not follow a final symlink
/// unless asked.
pub fn open_to_locate(path: &Path, follow: bool) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    open_noatime(path, flags)
}

/// A directory's descriptor, for opening its files by name ([`open_to_locate_in`]) and
/// listing it, or `None` where it cannot be had (then files are opened by their whole
/// path). Opened with `O_NOATIME` where permitted: listing a directory would otherwise
/// update its atime (under `relatime`, the first listing after a change), a write (a seek)
/// per directory walked, and on btrfs a change that a later catch-up would walk again.
pub fn open_dir_for_names(path: &Path) -> Option<File> {
    open_noatime(path, libc::O_DIRECTORY | libc::O_CLOEXEC).ok()
}

/// [`open_to_locate`] for the file `name` of the directory open as `dir` (whose path
/// joined with `name` is `path`, used when there is no `dir`). Resolving one name relative
/// to its directory spares the kernel a lookup of every component of the whole path: on a
/// warm cache that lookup was the largest single cost of planning a deep tree.
pub fn open_to_locate_in(
    dir: Option<&File>,
    name: &OsStr,
    path: &Path,
    follow: bool,
) -> io::Result<File> {
    let Some(dir) = dir else {
        return open_to_locate(path, follow);
    };
    let mut flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    // The name NUL-terminated on the stack: one allocation less per file planned.
    let mut short = [0u8; 256];
    let long;
    let bytes = name.as_bytes();
    let name: &CStr = if bytes.len() < short.len() {
        short[..bytes.len()].copy_from_slice(bytes);
        CStr::from_bytes_with_nul(&short[..=bytes.len()])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?
    } else {
        long = CString::new(bytes)?;
        &long
    };
    let open = |flags: i32| {
        // SAFETY: `dir` is an open descriptor for the duration of the call and `name` is
        // NUL-terminated; openat does not keep either.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: `fd` was just returned by openat, is valid and owned by no one else.
            Ok(unsafe { File::from_raw_fd(fd) })
        }
    };
    // O_NOATIME only for the owner (or CAP_FOWNER), as in `open_noatime`.
    match open(flags | libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(flags),
        other => other,
    }
}

/// Opens a file for reading its contents, without updating atime where permitted.
pub fn open_to_read(path: &Path) -> io::Result<File> {
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

/// Whether we run with root's powers (FIBMAP needs CAP_SYS_RAWIO; drop_caches needs root).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The mount `path` (not followed if it is a symlink) is reached through: `statx`'s
/// `stx_mnt_id` (Linux 5.8+), which tells apart two mounts of one filesystem (a bind
/// mount) where the device number cannot. On an older kernel, the device number.
/// Removals compare it with their tree's, so that nothing on another mount is emptied.
pub fn mount_id(path: &Path) -> io::Result<u64> {
    // Held to the end: a long path is reached through a directory it keeps open.
    let sys = sys_path(path)?;
    let path = CString::new(sys.as_os_str().as_bytes())?;
    // SAFETY: statx is plain integers, for which all zeroes is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `stx` a statx buffer, both live across the
    // call; the kernel writes only into `stx`.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT | libc::AT_STATX_DONT_SYNC,
            libc::STATX_MNT_ID,
            &mut stx,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    if stx.stx_mask & libc::STATX_MNT_ID != 0 {
        // Mount ids are small numbers; the top bit keeps them apart from device numbers.
        Ok(stx.stx_mnt_id | 1 << 63)
    } else {
        Ok(libc::makedev(stx.stx_dev_major, stx.stx_dev_minor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_file_opened_by_name_in_its_directory_is_that_file_and_links_are_not_followed() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f"), b"data").unwrap();
        std::os::unix::fs::symlink("f", t.path().join("link")).unwrap();
        let dir = open_dir_for_names(t.path()).expect("a directory opens");
        let open = |name: &str, follow| {
            open_to_locate_in(Some(&dir), OsStr::new(name), &t.path().join(name), follow)
        };
        let mut got = String::new();
        open("f", false).unwrap().read_to_string(&mut got).unwrap();
        assert_eq!(got, "data");
        // As by path: a final symlink is refused unless followed.
        assert_eq!(
            open("link", false).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        assert!(open("link", true).is_ok());
        assert_eq!(
            open("missing", false).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        // Without a directory, the whole path is used.
        assert!(open_to_locate_in(None, OsStr::new("f"), &t.path().join("f"), false).is_ok());
    }
}
