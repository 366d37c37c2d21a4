//! An entry's attributes as `stat` reports them, and giving them to another file: kind,
//! permission bits, owner, times. Where a platform has no such field (Windows: no owner,
//! no permission bits beyond read-only, no device numbers), a plain default; where it
//! cannot set one, nothing is done.

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// What a filesystem entry is. Off Unix [`attrs`] reports only files, directories and
/// symlinks: the other kinds are matched but never made there.
#[cfg_attr(not(unix), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A named pipe.
    Fifo,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// What the platform did not say.
    Unknown,
}

/// An entry's metadata as the platform reports it: what archivers and copiers keep
/// (`jobs::stat::Stat`); where a platform has no such field, a plain default.
#[derive(Clone, Debug)]
pub struct Attrs {
    /// What the entry is.
    pub kind: NodeKind,
    /// Permission bits, set-id and sticky.
    pub mode: u32,
    /// Owner.
    pub uid: u64,
    /// Group.
    pub gid: u64,
    /// Seconds and nanoseconds.
    pub atime: (i64, u32),
    /// Modification time: seconds and nanoseconds.
    pub mtime: (i64, u32),
    /// Device number of a device node, and its major and minor parts.
    pub rdev: u64,
    /// `rdev`'s major and minor parts.
    pub device: (u32, u32),
    /// Size in bytes.
    pub size: u64,
    /// Bytes allocated on disk, where known.
    pub allocated: Option<u64>,
}

impl Attrs {
    /// The attributes in `meta` ([`attrs`]).
    pub fn of(meta: &Metadata) -> Attrs {
        attrs(meta)
    }

    /// Whether the file has fewer bytes on disk than its size: it has holes.
    pub fn has_holes(&self) -> bool {
        self.allocated.is_some_and(|a| a < self.size)
    }
}

/// The attributes in `meta`.
#[cfg(unix)]
pub fn attrs(meta: &Metadata) -> Attrs {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let ft = meta.file_type();
    let kind = if ft.is_file() {
        NodeKind::File
    } else if ft.is_dir() {
        NodeKind::Dir
    } else if ft.is_symlink() {
        NodeKind::Symlink
    } else if ft.is_fifo() {
        NodeKind::Fifo
    } else if ft.is_char_device() {
        NodeKind::CharDevice
    } else if ft.is_block_device() {
        NodeKind::BlockDevice
    } else if ft.is_socket() {
        NodeKind::Socket
    } else {
        NodeKind::Unknown
    };
    let rdev = meta.rdev() as libc::dev_t;
    Attrs {
        kind,
        mode: meta.mode() & 0o7777,
        uid: u64::from(meta.uid()),
        gid: u64::from(meta.gid()),
        atime: (meta.atime(), meta.atime_nsec() as u32),
        mtime: (meta.mtime(), meta.mtime_nsec() as u32),
        rdev: meta.rdev(),
        device: (libc::major(rdev) as u32, libc::minor(rdev) as u32),
        size: meta.len(),
        allocated: super::allocated_bytes(meta),
    }
}

/// The attributes in `meta`: a directory, a symlink or a file; mode 0755 for a directory,
/// 0444 or 0644 for the rest as the file is read-only or not; owner 0; the change time is
/// the modification time.
#[cfg(not(unix))]
pub fn attrs(meta: &Metadata) -> Attrs {
    let ft = meta.file_type();
    let kind = if ft.is_dir() {
        NodeKind::Dir
    } else if ft.is_symlink() {
        NodeKind::Symlink
    } else {
        NodeKind::File
    };
    let mode = match kind {
        NodeKind::Dir => 0o755,
        _ if meta.permissions().readonly() => 0o444,
        _ => 0o644,
    };
    let since = |t: io::Result<std::time::SystemTime>| match t
        .ok()
        .map(|t| t.duration_since(std::time::UNIX_EPOCH))
    {
        Some(Ok(d)) => (d.as_secs() as i64, d.subsec_nanos()),
        _ => (0, 0),
    };
    let mtime = since(meta.modified());
    Attrs {
        kind,
        mode,
        uid: 0,
        gid: 0,
        atime: since(meta.accessed()),
        mtime,
        rdev: 0,
        device: (0, 0),
        size: meta.len(),
        allocated: super::allocated_bytes(meta),
    }
}

/// Gives the entry at `path` (open as `file`, if it is a regular file) owner `uid` and
/// group `gid`; a symlink itself, not what it points to. It clears set-id bits: set the
/// mode after. Where files have no owner (Windows), nothing to do.
#[cfg(unix)]
pub fn set_owner(path: &Path, file: Option<&File>, uid: u32, gid: u32) -> io::Result<()> {
    match file {
        Some(f) => std::os::unix::fs::fchown(f, Some(uid), Some(gid)),
        None => super::with_path(path, |p| std::os::unix::fs::lchown(p, Some(uid), Some(gid))),
    }
}

/// Gives a file an owner: unsupported here.
#[cfg(not(unix))]
pub fn set_owner(_path: &Path, _file: Option<&File>, _uid: u32, _gid: u32) -> io::Result<()> {
    Ok(())
}

/// Gives the entry at `path` (open as `file`, if it is a regular file) permission bits
/// `mode` (set-id and sticky included). Not for a symlink: this follows it. Where files
/// have no such bits (Windows), nothing is done.
#[cfg(unix)]
pub fn set_mode(path: &Path, file: Option<&File>, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let perms = std::fs::Permissions::from_mode(mode);
    match file {
        Some(f) => f.set_permissions(perms),
        None => super::with_path(path, |p| std::fs::set_permissions(p, perms)),
    }
}

/// Gives a file a mode: only its read-only flag here.
#[cfg(not(unix))]
pub fn set_mode(_path: &Path, _file: Option<&File>, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Sets the access and modification times (seconds, nanoseconds) of the entry at `path`:
/// on Unix through the path, of a symlink itself; elsewhere through `file`, the entry
/// open, and not at all for one that is not (a directory, a link).
#[cfg(unix)]
pub fn set_times(
    path: &Path,
    _file: Option<&File>,
    atime: (i64, u32),
    mtime: (i64, u32),
) -> io::Result<()> {
    let ns = |(s, n): (i64, u32)| (s, i64::from(n));
    super::write::set_times_nofollow(path, ns(atime), ns(mtime))
}

/// Gives a file access and modification times.
#[cfg(not(unix))]
pub fn set_times(
    _path: &Path,
    file: Option<&File>,
    atime: (i64, u32),
    mtime: (i64, u32),
) -> io::Result<()> {
    let to_time =
        |(s, n): (i64, u32)| std::time::UNIX_EPOCH + std::time::Duration::new(s.max(0) as u64, n);
    let times = std::fs::FileTimes::new()
        .set_accessed(to_time(atime))
        .set_modified(to_time(mtime));
    match file {
        Some(f) => f.set_times(times),
        None => Ok(()),
    }
}

/// Gives the new file `file` the owner and group of the file `old` described, where the
/// system lets this process (root; a group it is in), then `old`'s permission bits
/// (set-id bits are not carried over: the new file may have another owner). Where files
/// have neither (Windows), nothing to do.
#[cfg(unix)]
pub fn keep_owner_and_mode(file: &File, old: &Metadata) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let new = file.metadata()?;
    if new.uid() != old.uid() || new.gid() != old.gid() {
        // A user cannot give a file away: then it stays theirs, as any new file would.
        let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()))
            .or_else(|_| std::os::unix::fs::fchown(file, None, Some(old.gid())));
    }
    file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o777))
}

/// Gives `file` the owner and mode `old` says: nothing to give here.
#[cfg(not(unix))]
pub fn keep_owner_and_mode(file: &File, old: &Metadata) -> io::Result<()> {
    let _ = (file, old);
    Ok(())
}

/// Whether `e` says the operation (or the thing asked for, such as an extended
/// attribute's namespace) is not supported where it was tried: `ENOTSUP`, or an error of
/// kind `Unsupported`.
pub fn is_unsupported(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ENOTSUP) {
        return true;
    }
    e.kind() == io::ErrorKind::Unsupported
}
