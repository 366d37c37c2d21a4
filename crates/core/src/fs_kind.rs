//! The kinds of filesystem seekless tells apart. A leaf: imports nothing else from the
//! crate.

use std::fmt;

use serde::Serialize;

/// The kind of filesystem a file lives on, as far as locating is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FsKind {
    /// ext2, ext3 or ext4 (one magic number).
    Ext4,
    /// XFS.
    Xfs,
    /// Btrfs: "physical" offsets are in btrfs' logical address space.
    Btrfs,
    /// F2FS.
    F2fs,
    /// FAT.
    Vfat,
    /// exFAT.
    Exfat,
    /// NTFS.
    Ntfs,
    /// ReFS.
    Refs,
    /// APFS.
    Apfs,
    /// HFS+.
    Hfs,
    /// ZFS.
    Zfs,
    /// tmpfs / ramfs: memory, no disk.
    Tmpfs,
    /// NFS.
    Nfs,
    /// CIFS / SMB.
    Cifs,
    /// A FUSE filesystem (inode numbers are made up by the daemon).
    Fuse,
    /// overlayfs (extent requests are forwarded to the layer that holds the file).
    Overlay,
    /// proc, sysfs and similar: not files on any disk, and their sizes do not say how
    /// much they hold (sizes are not lengths there).
    Virtual,
    /// Anything else.
    Other,
}

impl FsKind {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
            FsKind::F2fs => "f2fs",
            FsKind::Vfat => "vfat",
            FsKind::Exfat => "exfat",
            FsKind::Ntfs => "ntfs",
            FsKind::Refs => "refs",
            FsKind::Apfs => "apfs",
            FsKind::Hfs => "hfs",
            FsKind::Zfs => "zfs",
            FsKind::Tmpfs => "tmpfs",
            FsKind::Nfs => "nfs",
            FsKind::Cifs => "cifs",
            FsKind::Fuse => "fuse",
            FsKind::Overlay => "overlay",
            FsKind::Virtual => "virtual",
            FsKind::Other => "other",
        }
    }
}

impl FsKind {
    /// Whether a file's size says how many bytes reading it yields. Not on proc, sysfs
    /// and their kin, where a file's size is 0 or a page whatever it holds: such files are
    /// read to their end, and a difference from their size is no sign of change.
    pub(crate) fn sizes_are_lengths(self) -> bool {
        self != FsKind::Virtual
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
