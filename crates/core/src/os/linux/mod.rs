//! Linux: FIEMAP and FIBMAP for extents, statfs for the filesystem type, sysfs for disks,
//! `readahead(2)`/`posix_fadvise` for reading.

mod btrfs;
mod dirahead;
mod direct;
mod fibmap;
mod fiemap;
mod pool;
mod statfs;
mod sysfs;

use std::fs::File;
use std::io;
use std::sync::Arc;

use super::MemberPiece;
use crate::disk::Disk;
use crate::fs_kind::FsKind;
use crate::placement::{LocateError, Placement, Strategy};

pub use dirahead::{BlockDevice, open_block_device, read_dir_ahead};
pub(crate) use direct::{DIRECT_BLOCK, DirectReader, disk_identity, disk_node};
pub use pool::branch_path;

/// The strategies that give physical positions here, best first: extents, then the block
/// map (which needs `CAP_SYS_RAWIO`; see [`Strategy::needs_privilege`]).
pub const EXTENT_STRATEGIES: &[Strategy] = &[Strategy::Fiemap, Strategy::Fibmap];

/// What Linux tells about one filesystem (device number), found once per device.
#[derive(Debug)]
pub struct Volume {
    dev: u64,
    kind: FsKind,
    max_prefetch: Option<u64>,
    /// btrfs over several devices: its chunk map and members.
    pool: Option<Arc<Pool>>,
    /// Why a filesystem over several devices is not split into its members.
    pool_note: Option<String>,
    /// A filesystem over several devices that is not split (btrfs, see `pool_note`): its
    /// devices' numbers, in device-id order, whose disks it is read as together
    /// ([`disk_of`]); empty otherwise.
    whole_over: Vec<u64>,
}

/// A btrfs filesystem's devices (device id, device number), in device-id order, and the
/// map from its logical addresses to them: what places each piece of a file on the
/// member holding it, when the plan is made and again when it is read
/// ([`Striping`], [`striping`]).
#[derive(Debug)]
pub struct Pool {
    members: Vec<(u64, u64)>,
    chunks: btrfs::ChunkMap,
}

/// How a filesystem over several devices lays files out over them (btrfs SINGLE, DUP
/// and RAID0 data), for the reader: each member's sweep prefetches the pieces it holds.
pub type Striping = Pool;

impl Pool {
    /// The pieces of the filesystem's address range `[address, address + length)` (a
    /// FIEMAP extent's "physical" on btrfs): for each, the member holding it (numbered as
    /// [`pool_members`] numbers them), its distance from `address`, its offset on the
    /// member, and its length. RAID0 pieces are one stripe (64 KiB) at most, alternating
    /// members. Ends early where the range has no known place.
    pub fn pieces(
        &self,
        address: u64,
        length: u64,
    ) -> impl Iterator<Item = MemberPiece> + Clone + '_ {
        self.chunks
            .walk(address, length)
            .map_while(|(delta, striped, p)| {
                let member = self.members.iter().position(|&(id, _)| id == p.devid)?;
                Some(MemberPiece {
                    member,
                    delta,
                    offset: p.physical,
                    length: p.length,
                    striped,
                })
            })
    }
}

impl Volume {
    /// The filesystem's kind.
    pub fn kind(&self) -> FsKind {
        self.kind
    }

    /// The most one `readahead(2)` call reads on the filesystem's device (see
    /// `sysfs::prefetch_limit`); `None` without a block device.
    pub fn max_prefetch(&self) -> Option<u64> {
        self.max_prefetch
    }
}

/// Finds out about the filesystem `file` is on (device `dev`): its type (`fstatfs`) and
/// its device's prefetch cap (sysfs).
///
/// A btrfs filesystem is asked how many devices it has; over several, its chunk tree is
/// read (once, here) so each file can be placed on the member holding it.
pub fn probe(file: &File, dev: u64) -> Volume {
    let kind = statfs::kind(file);
    let (pool, pool_note, whole_over) = match kind {
        FsKind::Btrfs => btrfs_volume(file),
        _ => (None, None, Vec::new()),
    };
    Volume {
        dev,
        kind,
        max_prefetch: sysfs::prefetch_limit(dev),
        pool,
        pool_note,
        whole_over,
    }
}

/// A btrfs filesystem's pool, if it is split into its members; else why not, and the
/// devices it is read whole over (none for one device, or when they cannot be listed).
/// Listing the devices needs no privilege (`BTRFS_IOC_FS_INFO`, `BTRFS_IOC_DEV_INFO`);
/// only the chunk tree does.
fn btrfs_volume(file: &File) -> (Option<Arc<Pool>>, Option<String>, Vec<u64>) {
    let members = match btrfs::devices(file) {
        Ok(None) => return (None, None, Vec::new()),
        Ok(Some(members)) => members,
        Err(e) => {
            return (
                None,
                Some(format!("its devices not listed: {e}")),
                Vec::new(),
            );
        }
    };
    let devices = members.iter().map(|&(_, dev)| dev).collect();
    match btrfs_pool(file, members) {
        (None, note) => (None, note, devices),
        (pool, note) => (pool, note, Vec::new()),
    }
}

/// Whether the pool over `members` (device id, device number) is split into them, from
/// its chunk tree: the pool if so, else why not.
fn btrfs_pool(file: &File, members: Vec<(u64, u64)>) -> (Option<Arc<Pool>>, Option<String>) {
    match btrfs::chunk_map(file) {
        Ok(chunks) if chunks.has_parity() => (
            None,
            Some("RAID5/6 chunks, whose parity rotates over the devices".into()),
        ),
        // Mirrored data: the kernel picks the copy each read goes to (read_policy),
        // whatever sweep it was planned in; per-member sweeps by first copy were 1.09
        // times slower (bench/hdd/btrfs-pool.sh).
        Ok(chunks) if chunks.has_mirrored_data() => (
            None,
            Some("RAID1/RAID10 data, whose reads go to the copy the kernel chooses".into()),
        ),
        // SINGLE, DUP and RAID0: every byte has one place, on one member.
        Ok(chunks) => (Some(Arc::new(Pool { members, chunks })), None),
        Err(e) => (None, Some(format!("chunk tree not readable: {e}"))),
    }
}

/// The disks of a filesystem over several devices (btrfs), each with the member's first
/// byte on it, in the order [`place_on_member`] numbers them; empty for one device.
pub fn pool_members(volume: &Volume) -> Vec<(Disk, u64)> {
    volume.pool.as_ref().map_or_else(Vec::new, |pool| {
        pool.members
            .iter()
            .map(|&(_, dev)| sysfs::disk_of(dev))
            .collect()
    })
}

/// Why a filesystem over several devices is not split into a sweep per member (it is
/// swept whole, as one disk over all its members: [`disk_of`]).
pub fn pool_note(volume: &Volume) -> Option<&str> {
    volume.pool_note.as_deref()
}

/// The member of a pooled filesystem (btrfs) a file goes with: the index of the member
/// ([`pool_members`]) holding its first data byte, and that byte's offset there, to sort
/// the file by. Its extents keep the filesystem's own addresses (what FIEMAP and
/// `filefrag` say): the reader places each of their pieces on its member ([`striping`]).
/// `None` for one device, a file without data extents, or a first extent outside the map.
pub fn place_on_member(volume: &Volume, placement: &Placement) -> Option<(usize, u64)> {
    let pool = volume.pool.as_ref()?;
    let first = placement.extents().first()?;
    let piece = pool.pieces(first.physical, first.length).next()?;
    Some((piece.member, piece.offset))
}

/// A pool of `starts.len()` devices (ids 1, 2, …) with one RAID0 data chunk of `length`
/// bytes at address `address`, its stripes at `starts` on the devices: for the tests of
/// what is made of such a layout.
#[cfg(test)]
pub(crate) fn raid0_for_tests(address: u64, length: u64, starts: &[u64]) -> Arc<Pool> {
    let ids = 1..=starts.len() as u64;
    Arc::new(Pool {
        members: ids.clone().map(|id| (id, id)).collect(),
        chunks: btrfs::ChunkMap::new(vec![btrfs::Chunk {
            logical: address,
            length,
            stripe_len: 64 << 10,
            kind: 1 | btrfs::profile::RAID0,
            sub_stripes: 1,
            stripes: ids.zip(starts.iter().copied()).collect(),
        }]),
    })
}

/// The layout of a filesystem split into its members, for the reader ([`Pool::pieces`]);
/// `None` for one device and for a pool read as one.
pub fn striping(volume: &Volume) -> Option<Arc<Striping>> {
    volume.pool.clone()
}

/// Asks the kernel where `file`'s data lies, with the given strategy.
pub(crate) fn map_extents(
    file: &File,
    strategy: Strategy,
    size: u64,
    sync: bool,
    _volume: &Volume,
) -> Result<Placement, LocateError> {
    match strategy {
        Strategy::Fiemap => fiemap::placement(file, size, sync),
        Strategy::Fibmap => fibmap::placement(file, size),
        other => Err(LocateError::Unsupported(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{other} is not available on Linux"),
        ))),
    }
}

/// The physical disk holding the volume's device, found through sysfs, and the device's
/// byte offset on it. A filesystem over several devices that is not split into them
/// ([`pool_note`]) is on all their disks at once: one disk standing for them all
/// ([`Disk::pool`], at offset 0, since its addresses are the filesystem's own), not the
/// disk of the device it was mounted from.
pub fn disk_of(volume: &Volume) -> (Disk, u64) {
    match whole_pool_disk(volume) {
        Some(disk) => (disk, 0),
        None => sysfs::disk_of(volume.dev),
    }
}

/// The one disk a filesystem over several devices that is not split is read as: its
/// members' disks together; `None` for any other filesystem.
fn whole_pool_disk(volume: &Volume) -> Option<Disk> {
    if volume.pool.is_some() || volume.whole_over.len() < 2 {
        return None;
    }
    let members = volume
        .whole_over
        .iter()
        .map(|&dev| sysfs::disk_of(dev).0)
        .collect();
    Some(Disk::pool(members))
}
