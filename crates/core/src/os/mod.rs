//! Platform backends for planning and reading: where each file's data lies, which disk a
//! filesystem is on, how a pool is laid out, direct reads for timing a disk. Private: the
//! platform calls the other crates need are `seekless-sys`'s, re-exported here so that the
//! stages name one module.
//!
//! Each backend offers the same small set of functions with the same typed results, so
//! the portable pipeline (`walk`, `locate`, `device`, `plan`, `read`) reads straight
//! through without `cfg`. Backends import only the crate's leaf vocabulary (`Extent`,
//! `Placement`, `Strategy`, `FsKind`, `Disk`): they report facts and make system calls;
//! every policy (which strategy to try, what to cache) lives in the portable stages.
//!
//! - locating: [`probe`] (a [`Volume`]: what the backend knows of one filesystem),
//!   `map_extents`, [`EXTENT_STRATEGIES`];
//! - devices: [`disk_of`] (on Linux, a btrfs pool not split into its members is one
//!   [`Disk::pool`](crate::Disk::pool) over them); pools: [`branch_path`] (a mergerfs
//!   file's path on its branch), [`pool_members`], [`pool_note`], [`place_on_member`],
//!   [`striping`] (btrfs over several devices: which member holds each piece of a file,
//!   for the reader); Linux, elsewhere never;
//! - timing the disk: `DirectReader` (reads past the page cache), `disk_node`
//!   (Linux; elsewhere unsupported, and the disk is taken for what it reports);
//! - walking: [`open_block_device`] and [`read_dir_ahead`] (Linux; elsewhere never).

pub use seekless_sys::*;

/// One piece of a filesystem's address range on one member of a filesystem over several
/// devices ([`Striping::pieces`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberPiece {
    /// The member holding it (numbered as [`pool_members`] numbers them).
    pub member: usize,
    /// Its distance from the start of the range asked about.
    pub delta: u64,
    /// Its offset on the member.
    pub offset: u64,
    /// Its length.
    pub length: u64,
    /// Whether it is one stripe of data that alternates between members (RAID0).
    pub striped: bool,
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
pub use windows::*;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub use other::*;

/// Filesystems over several devices are split into their members on Linux (btrfs; see
/// `linux/btrfs.rs`); elsewhere a filesystem is on one disk.
#[cfg(not(target_os = "linux"))]
pub fn pool_members(_volume: &Volume) -> Vec<(crate::disk::Disk, u64)> {
    Vec::new()
}

/// Why a filesystem over several devices is not split: never, elsewhere than Linux.
#[cfg(not(target_os = "linux"))]
pub fn pool_note(_volume: &Volume) -> Option<&str> {
    None
}

/// How a filesystem over several devices lays files out: Linux's concern (btrfs; see
/// `linux/btrfs.rs`); elsewhere there is none.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub enum Striping {}

#[cfg(not(target_os = "linux"))]
impl Striping {
    /// The pieces of an address range on the members (none: there is no such layout).
    pub fn pieces(&self, _address: u64, _length: u64) -> std::iter::Empty<MemberPiece> {
        match *self {}
    }
}

/// The layout of a filesystem split into its members: never, elsewhere than Linux.
#[cfg(not(target_os = "linux"))]
pub fn striping(_volume: &Volume) -> Option<std::sync::Arc<Striping>> {
    None
}

/// The member of a pooled filesystem a file goes with: never, elsewhere than Linux.
#[cfg(not(target_os = "linux"))]
pub fn place_on_member(
    _volume: &Volume,
    _placement: &crate::placement::Placement,
) -> Option<(usize, u64)> {
    None
}

/// Where a pooled filesystem (mergerfs) keeps a file: Linux's concern (see
/// `linux/pool.rs`); elsewhere never.
#[cfg(not(target_os = "linux"))]
pub fn branch_path(_file: &std::fs::File) -> Option<std::path::PathBuf> {
    None
}

/// Bytes of one direct read.
#[cfg(not(target_os = "linux"))]
pub(crate) const DIRECT_BLOCK: u64 = 4096;

/// Direct reads (past the page cache) are Linux's (see `linux/direct.rs`); elsewhere
/// opening fails as unsupported, and the reader takes a disk for what it reports.
#[cfg(not(target_os = "linux"))]
pub(crate) enum DirectReader {}

#[cfg(not(target_os = "linux"))]
impl DirectReader {
    pub fn open(_path: &std::path::Path) -> std::io::Result<DirectReader> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }

    pub fn len(&mut self) -> std::io::Result<u64> {
        match *self {}
    }

    pub fn read_block(&mut self, _offset: u64) -> std::io::Result<()> {
        match *self {}
    }
}

/// What tells a disk from an earlier one of the same name: Linux's; elsewhere its name.
#[cfg(not(target_os = "linux"))]
pub(crate) fn disk_identity(disk: &crate::disk::Disk) -> String {
    disk.name.clone()
}

/// A whole disk's device node: Linux's (see `linux/direct.rs`); elsewhere none.
#[cfg(not(target_os = "linux"))]
pub(crate) fn disk_node(_disk: &crate::disk::Disk) -> Option<std::path::PathBuf> {
    None
}

/// Directory read-ahead applies to Linux only (see `linux/dirahead.rs`); elsewhere there
/// is never a block device to read through.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub enum BlockDevice {}

#[cfg(not(target_os = "linux"))]
pub fn open_block_device(_volume: &Volume, _rotational: Option<bool>) -> Option<BlockDevice> {
    None
}

#[cfg(not(target_os = "linux"))]
pub fn read_dir_ahead(_dir: &std::fs::File, _size: u64, device: &BlockDevice) -> bool {
    match *device {}
}
