//! The vocabulary of where file data lies: extents, their flags, a file's placement and
//! the strategy that found it. A leaf: imports nothing else from the crate, so the
//! platform backends (`src/os/`) and the portable stages share it without a cycle.

use std::fmt;
use std::io;

use serde::Serialize;

/// How a file's position was determined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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
    pub(crate) fn is_physical(self) -> bool {
        !matches!(self, Strategy::Inode | Strategy::Given)
    }

    /// Whether it needs privileges to work at all (`FIBMAP` needs `CAP_SYS_RAWIO`).
    pub(crate) fn needs_privilege(self) -> bool {
        self == Strategy::Fibmap
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
#[non_exhaustive]
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
    /// `length` bytes of the file from `logical` on, stored at `physical` on the device.
    pub fn new(logical: u64, physical: u64, length: u64, flags: ExtentFlags) -> Self {
        Self {
            logical,
            physical,
            length,
            flags,
        }
    }

    /// Whether the extent's bytes must be read from the device at `physical` (as opposed to
    /// unknown positions, inline data and unwritten preallocations).
    pub(crate) fn needs_read(&self) -> bool {
        !self.flags.intersects(
            ExtentFlags::UNKNOWN
                | ExtentFlags::DELALLOC
                | ExtentFlags::DATA_INLINE
                | ExtentFlags::UNWRITTEN,
        )
    }
}

/// "No position": no byte can start at the last offset of a 64-bit device.
const NO_KEY: u64 = u64::MAX;

/// A placement's data extents. Most files have one: it is held inline, not as a boxed
/// slice of one (48 bytes of heap per file, a fifth of what a plan held per file at a
/// million files).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Extents {
    None,
    One(Extent),
    Many(Box<[Extent]>),
}

impl Extents {
    fn as_slice(&self) -> &[Extent] {
        match self {
            Extents::None => &[],
            Extents::One(e) => std::slice::from_ref(e),
            Extents::Many(v) => v,
        }
    }
}

/// Where one file's data is: the answer of the locate stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// How the position was found.
    pub strategy: Strategy,
    /// Data extents with known device positions, in file order, physically contiguous
    /// neighbours merged. None for empty and all-hole files and when no physical strategy
    /// applied.
    extents: Extents,
    /// The device offset to sort by: the first extent's, or the inline data's position;
    /// [`NO_KEY`] when unknown (a plain `u64`: an `Option` costs 8 more bytes per file).
    key: u64,
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
            extents: Extents::None,
            key: NO_KEY,
            extent_count: 0,
            flags: ExtentFlags::empty(),
        }
    }

    /// Builds a placement from the extents an OS backend reported, in file order.
    ///
    /// `size` is the file's size: bytes of it not covered by any extent are holes.
    pub fn from_extents(strategy: Strategy, raw: &[Extent], size: u64) -> Self {
        let mut flags = ExtentFlags::empty();
        // The data extents, merged: the first apart, so that a file of one extent (nearly
        // every file) is placed without a list allocated and freed for it.
        let mut first: Option<Extent> = None;
        let mut more: Vec<Extent> = Vec::new();
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
            match more.last_mut().or(first.as_mut()) {
                // Checked: a backend's extent may end past u64::MAX (a corrupt map);
                // such a run is kept as an extent of its own, never merged.
                Some(last)
                    if last.physical.checked_add(last.length) == Some(e.physical)
                        && last.logical.checked_add(last.length) == Some(e.logical)
                        && last.length.checked_add(e.length).is_some() =>
                {
                    last.length += e.length;
                    last.flags |= e.flags;
                }
                _ => match first {
                    None => first = Some(*e),
                    Some(_) => more.push(*e),
                },
            }
        }
        if covered < size && !flags.contains(ExtentFlags::DATA_INLINE) {
            flags |= ExtentFlags::SPARSE;
        }
        Self {
            strategy,
            extents: match first {
                None => Extents::None,
                Some(one) if more.is_empty() => Extents::One(one),
                Some(first) => {
                    more.insert(0, first);
                    Extents::Many(more.into_boxed_slice())
                }
            },
            key: key.unwrap_or(NO_KEY),
            extent_count: count,
            flags,
        }
    }

    /// This placement sorted by `key` instead (a pooled filesystem's file, by its first
    /// byte's offset on the member holding it, its extents in the filesystem's own
    /// addresses).
    pub(crate) fn with_key(mut self, key: u64) -> Self {
        self.key = key.min(NO_KEY - 1);
        self
    }

    /// The device offset to sort this file by, if its position is known.
    pub fn physical(&self) -> Option<u64> {
        (self.key != NO_KEY).then_some(self.key)
    }

    /// Data extents that must be read from the device, in file order.
    pub fn extents(&self) -> &[Extent] {
        self.extents.as_slice()
    }

    /// Whether the file's data lies in more than one place on the device.
    pub(crate) fn is_fragmented(&self) -> bool {
        matches!(self.extents, Extents::Many(_))
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
    fn an_extent_ending_past_the_largest_offset_is_kept_apart_without_overflow() {
        let p = Placement::from_extents(
            Strategy::Fiemap,
            &[
                ext(0, u64::MAX - 4095, 4096),
                ext(4096, 0, 4096),
                ext(8192, 4096, u64::MAX),
            ],
            3 * 4096,
        );
        // Counted as filefrag counts (the third continues the second on the device), but
        // not merged: one length could not hold both.
        assert_eq!(p.extents().len(), 3);
        assert_eq!(p.extent_count, 2);
        assert_eq!(p.physical(), Some(u64::MAX - 4095));
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
