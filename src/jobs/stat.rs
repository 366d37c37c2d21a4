//! The metadata jobs that recreate files need (tar headers, copies), from `stat`, the same
//! on every platform: where a platform has no such field, a plain default.

use std::fs::Metadata;

use crate::os;
pub(crate) use crate::os::NodeKind;

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
    /// The metadata in `meta`: its size and what the platform reports ([`os::attrs`]).
    pub fn of(meta: &Metadata) -> Stat {
        let a = os::attrs(meta);
        Stat {
            kind: a.kind,
            mode: a.mode,
            uid: a.uid,
            gid: a.gid,
            atime: a.atime,
            mtime: a.mtime,
            rdev: a.rdev,
            device: a.device,
            size: meta.len(),
            allocated: a.allocated,
        }
    }

    /// Whether the file has fewer bytes on disk than its size: it has holes.
    pub fn has_holes(&self) -> bool {
        self.allocated.is_some_and(|a| a < self.size)
    }
}
