//! The metadata jobs that recreate files need (tar headers, copies), from `stat`, the same
//! on every platform: where a platform has no such field, a plain default.

use std::fs::Metadata;

/// What a filesystem entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeKind {
    File,
    Dir,
    Symlink,
    Fifo,
    CharDevice,
    BlockDevice,
    Socket,
    Unknown,
}

/// An entry's metadata, as archivers and copiers keep it.
#[derive(Clone, Debug)]
pub(crate) struct Stat {
    pub kind: NodeKind,
    /// Permission bits, set-id and sticky.
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    /// Seconds and nanoseconds.
    pub atime: (i64, u32),
    pub mtime: (i64, u32),
    /// Device number of a device node, and its major and minor parts.
    pub rdev: u64,
    pub device: (u32, u32),
    pub size: u64,
    /// Bytes allocated on disk, where known.
    pub allocated: Option<u64>,
}

impl Stat {
    #[cfg(unix)]
    pub fn of(meta: &Metadata) -> Stat {
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
        Stat {
            kind,
            mode: meta.mode() & 0o7777,
            uid: u64::from(meta.uid()),
            gid: u64::from(meta.gid()),
            atime: (meta.atime(), meta.atime_nsec() as u32),
            mtime: (meta.mtime(), meta.mtime_nsec() as u32),
            rdev: meta.rdev(),
            device: (libc::major(rdev) as u32, libc::minor(rdev) as u32),
            size: meta.len(),
            allocated: Some(meta.blocks().saturating_mul(512)),
        }
    }

    #[cfg(not(unix))]
    pub fn of(meta: &Metadata) -> Stat {
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
        let since = |t: std::io::Result<std::time::SystemTime>| match t
            .ok()
            .map(|t| t.duration_since(std::time::UNIX_EPOCH))
        {
            Some(Ok(d)) => (d.as_secs() as i64, d.subsec_nanos()),
            _ => (0, 0),
        };
        let mtime = since(meta.modified());
        Stat {
            kind,
            mode,
            uid: 0,
            gid: 0,
            atime: since(meta.accessed()),
            mtime,
            rdev: 0,
            device: (0, 0),
            size: meta.len(),
            allocated: None,
        }
    }

    /// Whether the file has fewer bytes on disk than its size: it has holes.
    pub fn has_holes(&self) -> bool {
        self.allocated.is_some_and(|a| a < self.size)
    }
}
