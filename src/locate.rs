//! Locate: where each file's data lies on its device.
//!
//! The operating system is asked for the file's extents (Linux `FS_IOC_FIEMAP`, Windows
//! `FSCTL_GET_RETRIEVAL_POINTERS`, macOS `F_LOG2PHYS_EXT`; the calls live in
//! `src/os/`). Not every filesystem answers, so each filesystem gets a *ladder* of
//! strategies — extents → block map (`FIBMAP`, root only) → inode number → given order —
//! chosen from its type and demoted on the first "unsupported" answer. The strategy each
//! filesystem ended up with is reported in the plan's summary.

use std::fmt;
use std::fs::File;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use crate::os;

/// How a file's position was determined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Linux `FS_IOC_FIEMAP`: extents with physical byte offsets.
    Fiemap,
    /// Linux `FIBMAP`: physical block of each logical block (needs `CAP_SYS_RAWIO`).
    Fibmap,
    /// Windows `FSCTL_GET_RETRIEVAL_POINTERS`: cluster runs.
    RetrievalPointers,
    /// macOS `fcntl(F_LOG2PHYS_EXT)`: device offset of each contiguous run.
    Log2Phys,
    /// No physical positions: order by inode number (inode tables are laid out by number,
    /// and allocators place data near its inode).
    Inode,
    /// No usable positions at all: keep the order the files were given in.
    Given,
}

impl Strategy {
    /// Whether this strategy yields physical positions.
    pub fn is_physical(self) -> bool {
        !matches!(self, Strategy::Inode | Strategy::Given)
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Fiemap => "fiemap",
            Strategy::Fibmap => "fibmap",
            Strategy::RetrievalPointers => "retrieval-pointers",
            Strategy::Log2Phys => "log2phys",
            Strategy::Inode => "inode",
            Strategy::Given => "given",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of filesystem a file lives on, as far as locating is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
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
    /// much they hold ([`FsKind::sizes_are_lengths`]).
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
    pub fn sizes_are_lengths(self) -> bool {
        self != FsKind::Virtual
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Flags of an extent, in the vocabulary of Linux FIEMAP (the other backends map onto it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExtentFlags(u32);

impl ExtentFlags {
    /// The last extent of the file.
    pub const LAST: Self = Self(1 << 0);
    /// The physical location is not known (e.g. data still only in memory).
    pub const UNKNOWN: Self = Self(1 << 1);
    /// Delayed allocation: no blocks allocated yet; implies `UNKNOWN`.
    pub const DELALLOC: Self = Self(1 << 2);
    /// The data is compressed or otherwise encoded on disk.
    pub const ENCODED: Self = Self(1 << 3);
    /// The data lives inside the inode or another metadata block.
    pub const DATA_INLINE: Self = Self(1 << 4);
    /// The extent is not aligned to blocks.
    pub const NOT_ALIGNED: Self = Self(1 << 5);
    /// The blocks are shared with another file (reflink, snapshot).
    pub const SHARED: Self = Self(1 << 6);
    /// Allocated but never written: reads return zeros without disk I/O.
    pub const UNWRITTEN: Self = Self(1 << 7);
    /// The file has holes (set on a placement, not on an extent).
    pub const SPARSE: Self = Self(1 << 8);

    /// No flags.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// Whether every flag in `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag in `other` is set.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The names of the set flags, for reports.
    pub fn names(self) -> Vec<&'static str> {
        const NAMES: [(ExtentFlags, &str); 9] = [
            (ExtentFlags::LAST, "last"),
            (ExtentFlags::UNKNOWN, "unknown"),
            (ExtentFlags::DELALLOC, "delalloc"),
            (ExtentFlags::ENCODED, "encoded"),
            (ExtentFlags::DATA_INLINE, "inline"),
            (ExtentFlags::NOT_ALIGNED, "not-aligned"),
            (ExtentFlags::SHARED, "shared"),
            (ExtentFlags::UNWRITTEN, "unwritten"),
            (ExtentFlags::SPARSE, "sparse"),
        ];
        NAMES
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

impl std::ops::BitOr for ExtentFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for ExtentFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

/// A run of file bytes stored contiguously on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Offset in the file, in bytes.
    pub logical: u64,
    /// Offset on the device, in bytes.
    pub physical: u64,
    /// Length in bytes.
    pub length: u64,
    /// What the operating system said about the extent.
    pub flags: ExtentFlags,
}

impl Extent {
    /// Whether the extent's bytes must be read from the device at `physical` (as opposed to
    /// unknown positions, inline data and unwritten preallocations).
    pub fn needs_read(&self) -> bool {
        !self.flags.intersects(
            ExtentFlags::UNKNOWN
                | ExtentFlags::DELALLOC
                | ExtentFlags::DATA_INLINE
                | ExtentFlags::UNWRITTEN,
        )
    }
}

/// Where one file's data is: the answer of the locate stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// How the position was found.
    pub strategy: Strategy,
    /// Data extents with known device positions, in file order, physically contiguous
    /// neighbours merged. Empty for empty and all-hole files and when no physical strategy
    /// applied.
    extents: Box<[Extent]>,
    /// The device offset to sort by: the first extent's, or the inline data's position.
    key: Option<u64>,
    /// Number of extents, counting physically contiguous runs as one (what `filefrag` prints).
    pub extent_count: u32,
    /// Union of the flags of all extents, plus `SPARSE` when the file has holes.
    pub flags: ExtentFlags,
}

impl Placement {
    /// A placement without physical positions (the file is ordered by inode or as given).
    pub fn unmapped(strategy: Strategy) -> Self {
        Self {
            strategy,
            extents: Box::new([]),
            key: None,
            extent_count: 0,
            flags: ExtentFlags::empty(),
        }
    }

    /// Builds a placement from the extents an OS backend reported, in file order.
    ///
    /// `size` is the file's size: bytes of it not covered by any extent are holes.
    pub fn from_extents(strategy: Strategy, raw: &[Extent], size: u64) -> Self {
        let mut flags = ExtentFlags::empty();
        let mut merged: Vec<Extent> = Vec::new();
        let mut key = None;
        let mut count = 0u32;
        let mut covered = 0u64;
        let mut prev: Option<Extent> = None;
        for e in raw {
            flags |= e.flags;
            covered = covered.saturating_add(e.length);
            // Count like filefrag: a new extent starts wherever the next run does not
            // continue the previous one on the device.
            let continues = prev.is_some_and(|p| {
                p.physical.checked_add(p.length) == Some(e.physical)
                    && p.logical.checked_add(p.length) == Some(e.logical)
            });
            if !continues {
                count += 1;
            }
            prev = Some(*e);
            if key.is_none()
                && !e
                    .flags
                    .intersects(ExtentFlags::UNKNOWN | ExtentFlags::DELALLOC)
            {
                key = Some(e.physical);
            }
            if !e.needs_read() {
                continue;
            }
            match merged.last_mut() {
                Some(last)
                    if last.physical + last.length == e.physical
                        && last.logical + last.length == e.logical =>
                {
                    last.length += e.length;
                    last.flags |= e.flags;
                }
                _ => merged.push(*e),
            }
        }
        if covered < size && !flags.contains(ExtentFlags::DATA_INLINE) {
            flags |= ExtentFlags::SPARSE;
        }
        Self {
            strategy,
            extents: merged.into_boxed_slice(),
            key,
            extent_count: count,
            flags,
        }
    }

    /// The device offset to sort this file by, if its position is known.
    pub fn physical(&self) -> Option<u64> {
        self.key
    }

    /// Data extents that must be read from the device, in file order.
    pub fn extents(&self) -> &[Extent] {
        &self.extents
    }

    /// Whether the file's data lies in more than one place on the device.
    pub fn is_fragmented(&self) -> bool {
        self.extents.len() > 1
    }
}

/// What an OS backend can say about one file.
#[derive(Debug)]
pub(crate) enum LocateError {
    /// This filesystem (or this process) cannot use the strategy at all: demote.
    Unsupported(io::Error),
    /// This file failed; the strategy stays.
    Io(io::Error),
}

/// Facts about one filesystem, found once per device.
#[derive(Clone, Debug, Serialize)]
pub struct Filesystem {
    /// The `st_dev` (or volume serial number) files on it report.
    pub dev: u64,
    /// Its kind.
    pub kind: FsKind,
    /// The strategies to try, best first, as chosen from its kind.
    pub ladder: Vec<Strategy>,
    /// The most one prefetch request brings in on this filesystem, in bytes, when the
    /// operating system caps it (Linux: `readahead(2)` reads at most the larger of the
    /// device's `max_sectors_kb` and `read_ahead_kb` per call and silently drops the
    /// rest). The reader cuts prefetches to this size. `None`: no known cap.
    pub max_prefetch: Option<u64>,
}

/// A per-filesystem strategy that is demoted when the filesystem says "unsupported".
#[derive(Debug)]
pub(crate) struct Ladder {
    rungs: Vec<Strategy>,
    current: AtomicUsize,
    /// Why the ladder was demoted, for the report.
    demotions: Mutex<Vec<String>>,
}

impl Ladder {
    pub(crate) fn new(rungs: Vec<Strategy>) -> Self {
        debug_assert!(!rungs.is_empty());
        Self {
            rungs,
            current: AtomicUsize::new(0),
            demotions: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn current(&self) -> Strategy {
        self.rungs[self.current.load(Ordering::Acquire)]
    }

    pub(crate) fn demotions(&self) -> Vec<String> {
        self.demotions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Locates `file` with the current strategy, stepping down the ladder on "unsupported".
    /// The rung is read without a lock: it is consulted for every file and changes at most
    /// a few times per filesystem.
    pub(crate) fn locate(&self, file: &File, size: u64, sync: bool) -> io::Result<Placement> {
        loop {
            let at = self.current.load(Ordering::Acquire);
            let strategy = self.rungs[at];
            if !strategy.is_physical() {
                return Ok(Placement::unmapped(strategy));
            }
            match os::map_extents(file, strategy, size, sync) {
                Ok(placement) => return Ok(placement),
                Err(LocateError::Io(e)) => return Err(e),
                Err(LocateError::Unsupported(e)) => {
                    if at + 1 == self.rungs.len() {
                        return Err(e);
                    }
                    // Whichever thread demotes first records why; the others just retry.
                    let demoted = self
                        .current
                        .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok();
                    if demoted {
                        self.demotions
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(format!(
                                "{} unsupported ({}), using {}",
                                strategy,
                                crate::error::describe_io(&e),
                                self.rungs[at + 1]
                            ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(logical: u64, physical: u64, length: u64) -> Extent {
        Extent {
            logical,
            physical,
            length,
            flags: ExtentFlags::empty(),
        }
    }

    #[test]
    fn contiguous_runs_merge_into_one_extent() {
        let p = Placement::from_extents(
            Strategy::Fiemap,
            &[
                ext(0, 4096, 4096),
                ext(4096, 8192, 4096),
                ext(8192, 65536, 4096),
            ],
            12288,
        );
        assert_eq!(p.extent_count, 2);
        assert_eq!(p.extents().len(), 2);
        assert_eq!(p.extents()[0].length, 8192);
        assert_eq!(p.physical(), Some(4096));
        assert!(p.is_fragmented());
        assert!(!p.flags.contains(ExtentFlags::SPARSE));
    }

    #[test]
    fn holes_mark_the_placement_sparse() {
        let p = Placement::from_extents(Strategy::Fiemap, &[ext(1 << 20, 4096, 4096)], 4 << 20);
        assert!(p.flags.contains(ExtentFlags::SPARSE));
        assert_eq!(p.extent_count, 1);
    }

    #[test]
    fn delalloc_extents_have_no_sort_key_and_are_not_read() {
        let mut e = ext(0, 0, 4096);
        e.flags = ExtentFlags::DELALLOC | ExtentFlags::UNKNOWN;
        let p = Placement::from_extents(Strategy::Fiemap, &[e], 4096);
        assert_eq!(p.physical(), None);
        assert!(p.extents().is_empty());
        assert_eq!(p.extent_count, 1);
    }

    #[test]
    fn inline_data_sorts_by_its_position_but_needs_no_extent_read() {
        let mut e = ext(0, 123_456, 60);
        e.flags = ExtentFlags::DATA_INLINE | ExtentFlags::NOT_ALIGNED | ExtentFlags::LAST;
        let p = Placement::from_extents(Strategy::Fiemap, &[e], 60);
        assert_eq!(p.physical(), Some(123_456));
        assert!(p.extents().is_empty());
        assert!(!p.flags.contains(ExtentFlags::SPARSE));
    }
}
