#[cfg(any(target_os = "linux", target_os = "macos"))]
mod unix;

mod archive;
mod attrs;
mod libs;
mod names;
mod open_as;
mod paths;
mod process;
mod replace;
mod write;
pub use archive::{data_regions, group_name, read_link, user_name, xattrs};
pub use attrs::{
    Attrs, NodeKind, attrs, is_unsupported, keep_owner_and_mode, set_mode, set_owner, set_times,
};
pub use libs::{can_load_shared_libraries, executable_name, shared_library_names};
pub use names::{is_descriptor_name, local_now, name_cut_to, slashed};
pub use open_as::{
    link_count, process_uid, set_create_mode, set_dir_mode, set_no_follow, set_no_follow_no_wait,
};
pub use paths::{member_name_bytes, uri_path_bytes};
pub use process::{
    HeldLock, LockKind, MANDATORY_LOCKS, check_writable, command_of, lock_holder, locks_on,
    process_exists, stdout_if_same,
};
pub use replace::{exchange_unsupported, rename_exchange, rename_no_replace, share_extents};
pub use write::{
    HAS_SYNCFS, clone_file, copy_range, create_locked_then_named, make_node, make_symlink,
    remove_xattr, set_xattr, sync_directory, sync_filesystem, sync_filesystem_of, write_all_at,
};

/// Reads from `file`'s offset into `buf`, which need not be initialised, as
/// `Read::read` does; `buf[..n]` is initialised afterwards. On Unix one `read(2)` into
/// `buf`; elsewhere `buf` is zeroed, then read into.
pub fn read_uninit(
    file: &std::fs::File,
    buf: &mut [std::mem::MaybeUninit<u8>],
) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call, and
        // read(2) writes at most that many; the descriptor is open (`file` is borrowed).
        let n = unsafe { libc::read(file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
    #[cfg(not(unix))]
    {
        use std::io::Read;
        buf.fill(std::mem::MaybeUninit::new(0));
        // SAFETY: every element of `buf` was initialised just above, and MaybeUninit<u8>
        // has the layout of u8.
        let init = unsafe { &mut *(buf as *mut [std::mem::MaybeUninit<u8>] as *mut [u8]) };
        (&*file).read(init)
    }
}

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::journal;
#[cfg(windows)]
pub use windows::*;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub use other::*;

/// What a directory entry says it is, before anything is asked of the file itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else (FIFOs, sockets, devices), or not said (`DT_UNKNOWN`): whoever needs
    /// to know asks `lstat`.
    Unknown,
}

impl EntryType {
    /// The type of a file type.
    pub fn of(ft: std::fs::FileType) -> Self {
        if ft.is_file() {
            Self::File
        } else if ft.is_dir() {
            Self::Dir
        } else if ft.is_symlink() {
            Self::Symlink
        } else {
            Self::Unknown
        }
    }
}

/// Whether the directory at `path` has no entry but `.` and `..`. On Linux it is listed
/// without updating its atime where permitted (as the walk lists directories,
/// [`open_dir_for_names`]): looking is not a change.
pub fn is_empty_dir(path: &std::path::Path) -> std::io::Result<bool> {
    let dir = open_dir_for_names(path);
    let mut empty = true;
    list_dir(path, dir.as_ref(), &mut Vec::new(), &mut |_, _, _| {
        empty = false
    })?;
    Ok(empty)
}

/// Calls `each(name, inode, type)` for every entry of the directory at `path` but `.` and
/// `..`, in `readdir` order. With the directory open as `dir`, on Linux, it is listed
/// through that descriptor into `buf` (the caller's to reuse), without an allocation per
/// entry; otherwise through `std::fs::read_dir`. An error ends the listing after the
/// entries already handed out.
pub fn list_dir(
    path: &std::path::Path,
    dir: Option<&std::fs::File>,
    buf: &mut Vec<u8>,
    each: &mut dyn FnMut(&std::ffi::OsStr, u64, EntryType),
) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(dir) = dir {
        return linux::list_open_dir(dir, buf, each);
    }
    let _ = (dir, buf);
    for entry in read_dir(path)? {
        let entry = entry?;
        let kind = entry.file_type().map_or(EntryType::Unknown, EntryType::of);
        each(&entry.file_name(), dir_entry_ino(&entry), kind);
    }
    Ok(())
}

/// Paths of any length are Linux's concern (see `linux/longpath.rs`); elsewhere the
/// standard library's calls are used as they are.
#[cfg(not(target_os = "linux"))]
pub use std::fs::{metadata, read_dir, symlink_metadata};

/// Runs `op` on `path` (on Linux, through a short form for paths of any length).
#[cfg(not(target_os = "linux"))]
pub fn with_path<T>(
    path: &std::path::Path,
    op: impl FnOnce(&std::path::Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    op(path)
}

/// [`with_path`] for calls on two paths.
#[cfg(not(target_os = "linux"))]
pub fn with_paths<T>(
    a: &std::path::Path,
    b: &std::path::Path,
    op: impl FnOnce(&std::path::Path, &std::path::Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    op(a, b)
}

/// `path`, where no folder on the way is a symbolic link (Linux: that folder held open, so
/// that it cannot be swapped after; elsewhere each folder is looked at with `lstat`, and
/// the path is used as it is).
#[cfg(not(target_os = "linux"))]
pub fn pinned_no_links(path: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    for dir in path.ancestors().skip(1) {
        if symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(std::io::Error::other(format!(
                "{} is a symbolic link",
                dir.display()
            )));
        }
    }
    Ok(path.to_path_buf())
}

/// Opens a directory for reading (elsewhere than Linux, as the standard library does).
#[cfg(not(target_os = "linux"))]
pub fn open_directory(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// The mount `path` (not followed if it is a symlink) is reached through: here its
/// device number (Linux: its mount id, which also tells bind mounts apart).
#[cfg(not(target_os = "linux"))]
pub fn mount_id(path: &std::path::Path) -> std::io::Result<u64> {
    let meta = symlink_metadata(path)?;
    file_id(path, None, &meta).map(|id| id.dev)
}

/// Dropping the whole page cache is Linux's (see `linux/hints.rs`); elsewhere it is
/// unsupported, and a caller evicts file by file instead.
#[cfg(not(target_os = "linux"))]
pub fn drop_all_caches() -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Free memory: Linux's (see `linux/memory.rs`); elsewhere unknown.
#[cfg(not(target_os = "linux"))]
pub fn free_memory() -> Option<u64> {
    None
}

/// Opening files by name relative to their directory is Linux's (see
/// `linux::open_to_locate_in`); elsewhere files are opened by their whole path.
#[cfg(not(target_os = "linux"))]
pub fn open_dir_for_names(_path: &std::path::Path) -> Option<std::fs::File> {
    None
}

/// [`open_to_locate`] by the whole path (elsewhere than Linux, where there is no
/// directory to open relative to).
#[cfg(not(target_os = "linux"))]
pub fn open_to_locate_in(
    _dir: Option<&std::fs::File>,
    _name: &std::ffi::OsStr,
    path: &std::path::Path,
    follow: bool,
) -> std::io::Result<std::fs::File> {
    open_to_locate(path, follow)
}
