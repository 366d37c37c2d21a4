//! btrfs over several devices: FIEMAP answers in btrfs's own logical address space; the
//! chunk tree maps each logical range to one or more (device, offset) stripes.
//!
//! Read once per filesystem, and only when it has more than one device
//! (`BTRFS_IOC_FS_INFO`): the devices' paths from `BTRFS_IOC_DEV_INFO`, the chunk items
//! (tree 3, key type 228) from `BTRFS_IOC_TREE_SEARCH`, which needs `CAP_SYS_ADMIN`.
//! Structures: `include/uapi/linux/btrfs.h` and `btrfs_tree.h`
//! (<https://btrfs.readthedocs.io/en/latest/dev/On-disk-format.html#chunk-item-228>).
//! What the search returns is parsed bounds-checked: bytes from the kernel never panic us.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::fs::MetadataExt;

const IOCTL_MAGIC: libc::c_ulong = 0x94;

/// `_IOC(dir, 0x94, nr, size)`.
const fn ioc(dir: libc::c_ulong, nr: libc::c_ulong, size: libc::c_ulong) -> libc::c_ulong {
    (dir << 30) | (size << 16) | (IOCTL_MAGIC << 8) | nr
}
const IOC_READ: libc::c_ulong = 2;
const IOC_WRITE: libc::c_ulong = 1;
/// `_IOWR(0x94, 17, struct btrfs_ioctl_search_args)` (4096 bytes).
const BTRFS_IOC_TREE_SEARCH: libc::c_ulong = ioc(IOC_READ | IOC_WRITE, 17, 4096);
/// `_IOWR(0x94, 30, struct btrfs_ioctl_dev_info_args)` (4096 bytes).
const BTRFS_IOC_DEV_INFO: libc::c_ulong = ioc(IOC_READ | IOC_WRITE, 30, 4096);
/// `_IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)` (1024 bytes).
const BTRFS_IOC_FS_INFO: libc::c_ulong = ioc(IOC_READ, 31, 1024);

const CHUNK_TREE_OBJECTID: u64 = 3;
const FIRST_CHUNK_TREE_OBJECTID: u64 = 256;
const CHUNK_ITEM_KEY: u32 = 228;

/// Block group profile bits of a chunk's `type` (all of them: the mirrored ones need no
/// arithmetic, and are named only where chunks are made up, in tests).
#[allow(dead_code)]
pub(crate) mod profile {
    pub const RAID0: u64 = 1 << 3;
    pub const RAID1: u64 = 1 << 4;
    pub const DUP: u64 = 1 << 5;
    pub const RAID10: u64 = 1 << 6;
    pub const RAID5: u64 = 1 << 7;
    pub const RAID6: u64 = 1 << 8;
    pub const RAID1C3: u64 = 1 << 9;
    pub const RAID1C4: u64 = 1 << 10;
}

/// `struct btrfs_ioctl_search_key`: 104 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SearchKey {
    tree_id: u64,
    min_objectid: u64,
    max_objectid: u64,
    min_offset: u64,
    max_offset: u64,
    min_transid: u64,
    max_transid: u64,
    min_type: u32,
    max_type: u32,
    nr_items: u32,
    unused: u32,
    unused1: u64,
    unused2: u64,
    unused3: u64,
    unused4: u64,
}

const SEARCH_BUF: usize = 4096 - std::mem::size_of::<SearchKey>();

/// `struct btrfs_ioctl_search_args`: the key, then the kernel's answer.
#[repr(C)]
struct SearchArgs {
    key: SearchKey,
    buf: [u8; SEARCH_BUF],
}

/// `struct btrfs_ioctl_search_header`: 32 bytes before each item.
const SEARCH_HEADER: usize = 32;

/// One chunk: `length` bytes of the logical address space from `logical`, laid out over
/// `stripes` (device id, offset on it) by its profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub logical: u64,
    pub length: u64,
    pub stripe_len: u64,
    pub kind: u64,
    pub sub_stripes: u16,
    pub stripes: Vec<(u64, u64)>,
}

/// One piece of a logical range, on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// The device id (`devid`).
    pub devid: u64,
    /// Its offset on that device.
    pub physical: u64,
    pub length: u64,
}

/// The chunks of one filesystem, sorted by logical address.
#[derive(Debug, Default)]
pub(crate) struct ChunkMap {
    chunks: Vec<Chunk>,
}

impl ChunkMap {
    pub(crate) fn new(mut chunks: Vec<Chunk>) -> ChunkMap {
        chunks.sort_by_key(|c| c.logical);
        ChunkMap { chunks }
    }

    /// Whether some data chunk is mirrored over several devices (RAID1, RAID1C3/C4, and
    /// RAID10's pairs): the kernel sends each read to the copy its read policy picks
    /// (`read_policy`), not to the one a sweep was planned on.
    pub(crate) fn has_mirrored_data(&self) -> bool {
        const DATA: u64 = 1;
        const MIRRORED: u64 =
            profile::RAID10 | profile::RAID1 | profile::RAID1C3 | profile::RAID1C4;
        self.chunks
            .iter()
            .any(|c| c.kind & DATA != 0 && c.kind & MIRRORED != 0)
    }

    /// Whether some chunk has parity (RAID5/6), whose map this does not follow.
    pub(crate) fn has_parity(&self) -> bool {
        self.chunks
            .iter()
            .any(|c| c.kind & (profile::RAID5 | profile::RAID6) != 0)
    }

    /// Where logical address `logical` lies: its device and offset there (mirrors on
    /// their first copy), the rest of its stripe as the length. `None` outside the map.
    #[cfg(test)]
    pub(crate) fn place(&self, logical: u64) -> Option<Piece> {
        let (c, _) = self.chunk_at(logical)?;
        let (devid, physical, length) = c.locate(logical - c.logical)?;
        Some(Piece {
            devid,
            physical,
            length,
        })
    }

    /// The chunk holding logical address `logical`, and where it ends.
    fn chunk_at(&self, logical: u64) -> Option<(&Chunk, u64)> {
        let i = self
            .chunks
            .partition_point(|c| c.logical <= logical)
            .checked_sub(1)?;
        let c = &self.chunks[i];
        let end = c.logical.checked_add(c.length)?;
        (logical < end).then_some((c, end))
    }

    /// The pieces of the logical range `[logical, logical + length)`, in logical order,
    /// one per stripe (RAID0: 64 KiB at most, alternating devices) or per chunk (SINGLE,
    /// DUP: the chunk's one copy). The walk ends early where the range leaves the map or
    /// enters a chunk with parity: the rest has no known place.
    pub(crate) fn walk(&self, logical: u64, length: u64) -> Walk<'_> {
        Walk {
            map: self,
            start: logical,
            at: logical,
            end: logical.saturating_add(length),
        }
    }

    /// [`walk`](Self::walk), device-contiguous neighbours merged; `None` when part of the
    /// range has no known place. For the tests of the stripe arithmetic.
    #[cfg(test)]
    pub(crate) fn map(&self, logical: u64, length: u64) -> Option<Vec<Piece>> {
        let mut pieces: Vec<Piece> = Vec::new();
        let mut covered = 0;
        for (_, _, piece) in self.walk(logical, length) {
            covered += piece.length;
            match pieces.last_mut() {
                Some(last)
                    if last.devid == piece.devid
                        && last.physical.checked_add(last.length) == Some(piece.physical) =>
                {
                    last.length += piece.length
                }
                _ => pieces.push(piece),
            }
        }
        (covered == length).then_some(pieces)
    }
}

/// The pieces of a logical range, as [`ChunkMap::walk`] gives them: (bytes from the
/// range's start, whether the chunk is striped, the piece). Cloning it gives the pieces
/// still to come.
#[derive(Clone, Debug)]
pub(crate) struct Walk<'a> {
    map: &'a ChunkMap,
    start: u64,
    at: u64,
    end: u64,
}

impl Iterator for Walk<'_> {
    type Item = (u64, bool, Piece);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        let placed = self.map.chunk_at(self.at).and_then(|(c, chunk_end)| {
            let (devid, physical, run) = c.locate(self.at - c.logical)?;
            let length = run.min(self.end - self.at).min(chunk_end - self.at);
            Some((c.is_striped(), devid, physical, length))
        });
        let Some((striped, devid, physical, length)) = placed.filter(|p| p.3 > 0) else {
            // No known place for the rest: the walk ends here.
            self.end = self.at;
            return None;
        };
        let delta = self.at - self.start;
        self.at += length;
        Some((
            delta,
            striped,
            Piece {
                devid,
                physical,
                length,
            },
        ))
    }
}

impl Chunk {
    /// Whether its data alternates between devices every stripe (RAID0, RAID10).
    fn is_striped(&self) -> bool {
        self.kind & (profile::RAID0 | profile::RAID10) != 0
    }

    /// Where byte `offset` of the chunk lies: (device id, offset on it, bytes from there
    /// on the same device before the stripe ends).
    fn locate(&self, offset: u64) -> Option<(u64, u64, u64)> {
        let striped = self.is_striped();
        if self.kind & (profile::RAID5 | profile::RAID6) != 0 {
            return None;
        }
        if !striped {
            // SINGLE, DUP, RAID1, RAID1C3/C4: every copy holds the chunk contiguously;
            // the first.
            let &(devid, start) = self.stripes.first()?;
            return Some((devid, start.checked_add(offset)?, self.length - offset));
        }
        let stripe_len = self.stripe_len;
        let n = self.stripes.len() as u64;
        // The kernel's stripes are 64 KiB (BTRFS_STRIPE_LEN); far smaller ones would cut
        // an extent into millions of pieces: not ours to follow.
        if stripe_len < 4096 || n == 0 {
            return None;
        }
        // RAID10: `sub_stripes` copies of each stripe, next to one another in the list.
        let copies = if self.kind & profile::RAID10 != 0 {
            u64::from(self.sub_stripes.max(1))
        } else {
            1
        };
        let factor = n / copies;
        if factor == 0 {
            return None;
        }
        let stripe_nr = offset / stripe_len;
        let within = offset % stripe_len;
        let index = (stripe_nr % factor) * copies;
        let row = stripe_nr / factor;
        let &(devid, start) = self.stripes.get(index as usize)?;
        let physical = start
            .checked_add(row.checked_mul(stripe_len)?)?
            .checked_add(within)?;
        Some((devid, physical, stripe_len - within))
    }
}

/// Reads a little-endian integer of `N` bytes at `at`.
fn le<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    le::<2>(b, at).map(u16::from_le_bytes)
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    le::<4>(b, at).map(u32::from_le_bytes)
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    le::<8>(b, at).map(u64::from_le_bytes)
}

/// One item of a tree search: its key and data.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Item<'a> {
    pub objectid: u64,
    pub kind: u32,
    pub offset: u64,
    pub data: &'a [u8],
}

/// The items of a search buffer holding `count` of them (the kernel's `nr_items`): a
/// header (transid, objectid, offset, type, len) then `len` bytes each. Stops at the first
/// item that does not fit.
pub(crate) fn search_items(buf: &[u8], count: u32) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let mut at = 0usize;
    for _ in 0..count {
        let (Some(objectid), Some(offset), Some(kind), Some(len)) = (
            u64_at(buf, at + 8),
            u64_at(buf, at + 16),
            u32_at(buf, at + 24),
            u32_at(buf, at + 28),
        ) else {
            break;
        };
        let start = at + SEARCH_HEADER;
        let Some(data) = start
            .checked_add(len as usize)
            .and_then(|end| buf.get(start..end))
        else {
            break;
        };
        items.push(Item {
            objectid,
            kind,
            offset,
            data,
        });
        at = start + data.len();
    }
    items
}

/// A chunk item (`struct btrfs_chunk`, 48 bytes, then 32 per stripe) at logical `logical`.
pub(crate) fn parse_chunk(logical: u64, data: &[u8]) -> Option<Chunk> {
    let length = u64_at(data, 0)?;
    let stripe_len = u64_at(data, 16)?;
    let kind = u64_at(data, 24)?;
    let num_stripes = u16_at(data, 44)?;
    let sub_stripes = u16_at(data, 46)?;
    let stripes = (0..usize::from(num_stripes))
        .map(|i| {
            let at = 48 + 32 * i;
            Some((u64_at(data, at)?, u64_at(data, at + 8)?))
        })
        .collect::<Option<Vec<_>>>()?;
    if length == 0 || stripes.is_empty() {
        return None;
    }
    Some(Chunk {
        logical,
        length,
        stripe_len,
        kind,
        sub_stripes,
        stripes,
    })
}

/// Device ids and their device numbers, when the filesystem `file` is on has more than
/// one device; `Ok(None)` for one device (nothing more is asked then).
pub(crate) fn devices(file: &File) -> io::Result<Option<Vec<(u64, u64)>>> {
    let mut info = [0u64; 1024 / 8];
    // SAFETY: the buffer is 1024 bytes, the size the ioctl number encodes for
    // `struct btrfs_ioctl_fs_info_args`, aligned for its u64 fields, and zeroed (its
    // `flags` asks for nothing extra); the descriptor is open for the call.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BTRFS_IOC_FS_INFO, info.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let (max_id, num_devices) = (info[0], info[1]);
    if num_devices <= 1 {
        return Ok(None);
    }
    let mut found = Vec::new();
    for devid in 1..=max_id.min(4096) {
        let mut args = [0u64; 4096 / 8];
        args[0] = devid;
        // SAFETY: 4096 bytes, the size of `struct btrfs_ioctl_dev_info_args`, aligned,
        // with the devid set and the uuid zero (match by devid alone).
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), BTRFS_IOC_DEV_INFO, args.as_mut_ptr()) };
        if rc != 0 {
            // Ids of removed devices leave gaps.
            continue;
        }
        // `path` is the last 1024 bytes, NUL-terminated.
        let bytes: Vec<u8> = args[3072 / 8..]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .take_while(|&b| b != 0)
            .collect();
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&bytes));
        if let Ok(meta) = std::fs::metadata(path)
            && meta.file_type().is_block_device()
        {
            found.push((devid, meta.rdev()));
        }
    }
    if (found.len() as u64) < num_devices {
        return Err(io::Error::other(format!(
            "{} of {num_devices} devices found",
            found.len()
        )));
    }
    Ok(Some(found))
}

/// The chunk tree of the filesystem `file` is on (needs `CAP_SYS_ADMIN`).
pub(crate) fn chunk_map(file: &File) -> io::Result<ChunkMap> {
    let mut chunks = Vec::new();
    let mut min_offset = 0u64;
    loop {
        let mut args = SearchArgs {
            key: SearchKey {
                tree_id: CHUNK_TREE_OBJECTID,
                min_objectid: FIRST_CHUNK_TREE_OBJECTID,
                max_objectid: FIRST_CHUNK_TREE_OBJECTID,
                min_offset,
                max_offset: u64::MAX,
                min_transid: 0,
                max_transid: u64::MAX,
                min_type: CHUNK_ITEM_KEY,
                max_type: CHUNK_ITEM_KEY,
                nr_items: 4096,
                ..SearchKey::default()
            },
            buf: [0; SEARCH_BUF],
        };
        // SAFETY: `args` is a `struct btrfs_ioctl_search_args` (4096 bytes, the size the
        // ioctl number encodes); the kernel writes at most its buffer; the descriptor is
        // open for the call.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), BTRFS_IOC_TREE_SEARCH, &mut args) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let items = search_items(&args.buf, args.key.nr_items);
        let Some(last) = items.last().map(|i| i.offset) else {
            break;
        };
        chunks.extend(
            items
                .iter()
                .filter(|i| i.kind == CHUNK_ITEM_KEY && i.objectid == FIRST_CHUNK_TREE_OBJECTID)
                .filter_map(|i| parse_chunk(i.offset, i.data)),
        );
        match last.checked_add(1) {
            Some(next) if next > min_offset => min_offset = next,
            _ => break,
        }
    }
    Ok(ChunkMap::new(chunks))
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1024;
    const M: u64 = K * K;

    fn chunk(logical: u64, length: u64, kind: u64, stripes: &[(u64, u64)]) -> Chunk {
        Chunk {
            logical,
            length,
            stripe_len: 64 * K,
            kind,
            sub_stripes: if kind & profile::RAID10 != 0 { 2 } else { 1 },
            stripes: stripes.to_vec(),
        }
    }

    fn piece(devid: u64, physical: u64, length: u64) -> Piece {
        Piece {
            devid,
            physical,
            length,
        }
    }

    #[test]
    fn raid0_ranges_split_at_stripe_boundaries_onto_alternate_devices() {
        const DATA: u64 = 1;
        // 1 GiB at logical 1 GiB: device 1 from 20 MiB, device 2 from 30 MiB.
        let map = ChunkMap::new(vec![chunk(
            1024 * M,
            1024 * M,
            DATA | profile::RAID0,
            &[(1, 20 * M), (2, 30 * M)],
        )]);
        // 10 KiB inside the first stripe: all on device 1.
        assert_eq!(
            map.map(1024 * M + 4 * K, 10 * K),
            Some(vec![piece(1, 20 * M + 4 * K, 10 * K)])
        );
        // 200 KiB from 32 KiB: 32 KiB on 1, 64 on 2, 64 on 1 (its second row), 40 on 2.
        assert_eq!(
            map.map(1024 * M + 32 * K, 200 * K),
            Some(vec![
                piece(1, 20 * M + 32 * K, 32 * K),
                piece(2, 30 * M, 64 * K),
                piece(1, 20 * M + 64 * K, 64 * K),
                piece(2, 30 * M + 64 * K, 40 * K),
            ])
        );
        // One address: where it lies, and what is left of its stripe.
        assert_eq!(
            map.place(1024 * M + 64 * K + 10 * K),
            Some(piece(2, 30 * M + 10 * K, 54 * K))
        );
        assert_eq!(map.place(2048 * M), None);
        // Stripe 5 (an odd one): device 2, third row.
        assert_eq!(
            map.map(1024 * M + 5 * 64 * K, 4 * K),
            Some(vec![piece(2, 30 * M + 2 * 64 * K, 4 * K)])
        );
        // Outside every chunk, or running past its end: not mapped.
        assert_eq!(map.map(4 * K, 4 * K), None);
        assert_eq!(map.map(2048 * M - 4 * K, 8 * K), None);
    }

    #[test]
    fn mirrored_chunks_are_taken_on_their_first_copy_and_single_ones_contiguously() {
        let map = ChunkMap::new(vec![
            chunk(0, 8 * M, profile::RAID1, &[(2, 100 * M), (1, 7 * M)]),
            chunk(8 * M, 8 * M, 0, &[(1, 50 * M)]),
            chunk(
                16 * M,
                8 * M,
                profile::RAID1C3,
                &[(3, M), (1, 2 * M), (2, 3 * M)],
            ),
            chunk(24 * M, 8 * M, profile::DUP, &[(1, 60 * M), (1, 68 * M)]),
        ]);
        assert_eq!(map.map(M, 300 * K), Some(vec![piece(2, 101 * M, 300 * K)]));
        // Across the end of the raid1 chunk into the single one: two pieces.
        assert_eq!(
            map.map(8 * M - 4 * K, 8 * K),
            Some(vec![
                piece(2, 108 * M - 4 * K, 4 * K),
                piece(1, 50 * M, 4 * K)
            ])
        );
        assert_eq!(map.map(17 * M, 4 * K), Some(vec![piece(3, 2 * M, 4 * K)]));
        assert_eq!(map.map(25 * M, 4 * K), Some(vec![piece(1, 61 * M, 4 * K)]));
    }

    #[test]
    fn raid10_stripes_go_round_the_pairs_on_each_pairs_first_copy() {
        // Four devices: pairs (1, 2) and (3, 4).
        let map = ChunkMap::new(vec![chunk(
            0,
            M,
            profile::RAID10,
            &[(1, 10 * M), (2, 20 * M), (3, 30 * M), (4, 40 * M)],
        )]);
        assert_eq!(
            map.map(60 * K, 72 * K),
            Some(vec![
                piece(1, 10 * M + 60 * K, 4 * K),
                piece(3, 30 * M, 64 * K),
                piece(1, 10 * M + 64 * K, 4 * K),
            ])
        );
    }

    #[test]
    fn mirrored_data_is_told_apart_from_striped_data_and_from_metadata() {
        const DATA: u64 = 1;
        const METADATA: u64 = 4;
        let single = chunk(0, M, DATA, &[(1, 0)]);
        let dup = chunk(4 * M, M, DATA | profile::DUP, &[(2, 0), (2, M)]);
        let mirrored_meta = chunk(M, M, METADATA | profile::RAID1, &[(1, M), (2, M)]);
        let striped_meta = chunk(
            2 * M,
            M,
            METADATA | profile::RAID0,
            &[(1, 2 * M), (2, 2 * M)],
        );
        let map = |c: &[&Chunk]| ChunkMap::new(c.iter().map(|&c| c.clone()).collect());
        assert!(!map(&[&single, &dup, &mirrored_meta, &striped_meta]).has_mirrored_data());
        let striped = chunk(3 * M, M, DATA | profile::RAID0, &[(1, 0), (2, 0)]);
        assert!(
            !map(&[&single, &striped]).has_mirrored_data(),
            "RAID0 is not mirrored"
        );
        for spread in [
            profile::RAID10,
            profile::RAID1,
            profile::RAID1C3,
            profile::RAID1C4,
        ] {
            let data = chunk(3 * M, M, DATA | spread, &[(1, 0), (2, 0)]);
            assert!(map(&[&single, &data]).has_mirrored_data(), "{spread:#x}");
        }
    }

    #[test]
    fn parity_chunks_are_not_mapped() {
        let map = ChunkMap::new(vec![chunk(0, M, profile::RAID5, &[(1, 0), (2, 0), (3, 0)])]);
        assert!(map.has_parity());
        assert_eq!(map.map(0, 4 * K), None);
    }

    /// A search buffer of chunk items as the kernel lays it out.
    fn buffer(items: &[(u64, u32, u64, Vec<u8>)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (objectid, kind, offset, data) in items {
            b.extend(7u64.to_le_bytes()); // transid
            b.extend(objectid.to_le_bytes());
            b.extend(offset.to_le_bytes());
            b.extend(kind.to_le_bytes());
            b.extend((data.len() as u32).to_le_bytes());
            b.extend(data);
        }
        b
    }

    fn chunk_item(length: u64, kind: u64, stripes: &[(u64, u64)]) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend(length.to_le_bytes());
        d.extend(2u64.to_le_bytes()); // owner: the extent tree
        d.extend((64 * K).to_le_bytes());
        d.extend(kind.to_le_bytes());
        d.extend([0u8; 12]); // io_align, io_width, sector_size
        d.extend((stripes.len() as u16).to_le_bytes());
        d.extend(1u16.to_le_bytes());
        for (devid, offset) in stripes {
            d.extend(devid.to_le_bytes());
            d.extend(offset.to_le_bytes());
            d.extend([0xAAu8; 16]); // dev_uuid
        }
        d
    }

    #[test]
    fn a_search_buffer_of_chunk_items_parses_into_chunks() {
        let buf = buffer(&[
            (
                256,
                228,
                M,
                chunk_item(8 * M, 1 | profile::RAID0, &[(1, M), (2, 2 * M)]),
            ),
            (
                256,
                228,
                9 * M,
                chunk_item(M, 4 | profile::RAID1, &[(2, 5 * M), (1, 6 * M)]),
            ),
        ]);
        let items = search_items(&buf, 2);
        assert_eq!(items.len(), 2);
        let chunks: Vec<Chunk> = items
            .iter()
            .filter_map(|i| parse_chunk(i.offset, i.data))
            .collect();
        assert_eq!(
            chunks[0],
            Chunk {
                logical: M,
                length: 8 * M,
                stripe_len: 64 * K,
                kind: 1 | profile::RAID0,
                sub_stripes: 1,
                stripes: vec![(1, M), (2, 2 * M)],
            }
        );
        assert_eq!(chunks[1].stripes, vec![(2, 5 * M), (1, 6 * M)]);
    }

    #[test]
    fn random_search_buffers_parse_and_map_without_a_panic() {
        // A cheap stand-in for a fuzz target: seeded noise, and noise over real items.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let real = buffer(&[
            (
                256,
                228,
                M,
                chunk_item(8 * M, 1 | profile::RAID0, &[(1, M), (2, 2 * M)]),
            ),
            (
                256,
                228,
                9 * M,
                chunk_item(M, profile::RAID10, &[(1, 0), (2, 0), (3, 0)]),
            ),
        ]);
        for round in 0..5000 {
            let mut buf: Vec<u8> = if round % 2 == 0 {
                (0..next() % 600).map(|_| next() as u8).collect()
            } else {
                real.clone()
            };
            for _ in 0..next() % 8 {
                if !buf.is_empty() {
                    let at = (next() % buf.len() as u64) as usize;
                    buf[at] = next() as u8;
                }
            }
            let chunks: Vec<Chunk> = search_items(&buf, (next() % 8) as u32)
                .iter()
                .filter_map(|i| parse_chunk(i.offset, i.data))
                .collect();
            let map = ChunkMap::new(chunks);
            for _ in 0..4 {
                let logical = if round % 3 == 0 {
                    next()
                } else {
                    next() % (16 * M)
                };
                let _ = map.map(logical, next() % (4 * M));
            }
        }
    }

    #[test]
    fn truncated_or_hostile_search_buffers_yield_what_fits_and_never_panic() {
        let good = buffer(&[
            (256, 228, M, chunk_item(8 * M, 1, &[(1, M)])),
            (256, 228, 9 * M, chunk_item(M, 1, &[(2, 5 * M)])),
        ]);
        // Claims more items than there are: the ones present.
        assert_eq!(search_items(&good, 1000).len(), 2);
        // Cut anywhere: only whole items, never a panic.
        for cut in 0..good.len() {
            let items = search_items(&good[..cut], 2);
            assert!(items.len() <= 2);
            for i in &items {
                let _ = parse_chunk(i.offset, i.data);
            }
        }
        // An item whose length runs past the buffer, or to the end of the address space.
        let mut hostile = good.clone();
        hostile[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(search_items(&hostile, 2).is_empty());
        // A chunk claiming more stripes than it holds, or none, or no length.
        let mut many = chunk_item(M, 1, &[(1, 0)]);
        many[44..46].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(parse_chunk(0, &many), None);
        assert_eq!(parse_chunk(0, &chunk_item(M, 1, &[])), None);
        assert_eq!(parse_chunk(0, &chunk_item(0, 1, &[(1, 0)])), None);
        assert_eq!(parse_chunk(0, &[]), None);
        // A chunk whose stripes end past u64::MAX, or with a zero (or tiny) stripe length:
        // unmapped.
        let map = ChunkMap::new(vec![Chunk {
            logical: u64::MAX - M,
            length: M,
            stripe_len: 0,
            kind: profile::RAID0,
            sub_stripes: 0,
            stripes: vec![(1, u64::MAX)],
        }]);
        assert_eq!(map.map(u64::MAX - M, 4096), None);
        let tiny = Chunk {
            stripe_len: 1,
            ..chunk(0, 1 << 40, profile::RAID0, &[(1, 0), (2, 0)])
        };
        assert_eq!(ChunkMap::new(vec![tiny]).map(0, 1 << 30), None);
        let map = ChunkMap::new(vec![chunk(0, M, 0, &[(1, u64::MAX - 10)])]);
        assert_eq!(map.map(100, 4096), None);
    }
}
