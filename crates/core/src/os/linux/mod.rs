//! Linux: FIEMAP and FIBMAP for extents, statfs for the filesystem type, sysfs for disks,
//! `readahead(2)`/`posix_fadvise` for reading.

mod btrfs;
mod dirahead;
mod direct;
mod dirents;
mod fibmap;
mod fiemap;
mod hints;
mod longpath;
mod memory;
mod pool;
mod statfs;
mod sysfs;

use std::ffi::{CStr, CString, OsStr};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use super::MemberPiece;
use crate::disk::Disk;
use crate::fs_kind::FsKind;
use crate::placement::{LocateError, Placement, Strategy};

pub use super::unix::{
    allocated_bytes, await_prefetch, change_time, dir_entry_ino, file_id, open_file_limit,
    raise_open_file_limit, sync_filesystems,
};
pub use dirahead::{BlockDevice, open_block_device, read_dir_ahead};
pub(crate) use direct::{DIRECT_BLOCK, DirectReader, disk_identity, disk_node};
pub use dirents::list_open_dir;
pub use hints::{drop_all_caches, drop_cache, prefetch};
pub use longpath::{
    metadata, open_directory, pinned_no_links, read_dir, symlink_metadata, sys_path, with_path,
    with_paths,
};
pub use memory::free_memory;
pub use pool::branch_path;

/// Opens a file to ask where it lies. Never blocks (a FIFO swapped in after the directory
/// was read cannot hang us), never updates atime, and does not follow a final symlink
/// unless asked.
pub fn open_to_locate(path: &Path, follow: bool) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    open_noatime(path, flags)
}

/// A directory's descriptor, for opening its files by name ([`open_to_locate_in`]), or
/// `None` where it cannot be had (then files are opened by their whole path).
pub fn open_dir_for_names(path: &Path) -> Option<File> {
    open_directory(path).ok()
}

/// [`open_to_locate`] for the file `name` of the directory open as `dir` (whose path
/// joined with `name` is `path`, used when there is no `dir`). Resolving one name relative
/// to its directory spares the kernel a lookup of every component of the whole path: on a
/// warm cache that lookup was the largest single cost of planning a deep tree.
pub fn open_to_locate_in(
    dir: Option<&File>,
    name: &OsStr,
    path: &Path,
    follow: bool,
) -> io::Result<File> {
    let Some(dir) = dir else {
        return open_to_locate(path, follow);
    };
    let mut flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    // The name NUL-terminated on the stack: one allocation less per file planned.
    let mut short = [0u8; 256];
    let long;
    let bytes = name.as_bytes();
    let name: &CStr = if bytes.len() < short.len() {
        short[..bytes.len()].copy_from_slice(bytes);
        CStr::from_bytes_with_nul(&short[..=bytes.len()])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?
    } else {
        long = CString::new(bytes)?;
        &long
    };
    let open = |flags: i32| {
        // SAFETY: `dir` is an open descriptor for the duration of the call and `name` is
        // NUL-terminated; openat does not keep either.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: `fd` was just returned by openat, is valid and owned by no one else.
            Ok(unsafe { File::from_raw_fd(fd) })
        }
    };
    // O_NOATIME only for the owner (or CAP_FOWNER), as in `open_noatime`.
    match open(flags | libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(flags),
        other => other,
    }
}

/// Opens a file for reading its contents, without updating atime where permitted.
pub fn open_to_read(path: &Path) -> io::Result<File> {
    open_noatime(path, libc::O_NOCTTY | libc::O_NONBLOCK)
}

fn open_noatime(path: &Path, flags: i32) -> io::Result<File> {
    let path = &*sys_path(path)?;
    // O_NOATIME is only allowed to the file's owner (or CAP_FOWNER): atime updates are
    // writes, and writes are seeks. Fall back silently when refused.
    match OpenOptions::new()
        .read(true)
        .custom_flags(flags | libc::O_NOATIME)
        .open(path)
    {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            OpenOptions::new().read(true).custom_flags(flags).open(path)
        }
        other => other,
    }
}

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

    /// Number of members.
    pub fn members(&self) -> usize {
        self.members.len()
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

/// Whether we run with root's powers (FIBMAP needs CAP_SYS_RAWIO; drop_caches needs root).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The mount `path` (not followed if it is a symlink) is reached through: `statx`'s
/// `stx_mnt_id` (Linux 5.8+), which tells apart two mounts of one filesystem (a bind
/// mount) where the device number cannot. On an older kernel, the device number.
/// Removals compare it with their tree's, so that nothing on another mount is emptied.
pub fn mount_id(path: &Path) -> io::Result<u64> {
    // Held to the end: a long path is reached through a directory it keeps open.
    let sys = sys_path(path)?;
    let path = CString::new(sys.as_os_str().as_bytes())?;
    // SAFETY: statx is plain integers, for which all zeroes is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `stx` a statx buffer, both live across the
    // call; the kernel writes only into `stx`.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT | libc::AT_STATX_DONT_SYNC,
            libc::STATX_MNT_ID,
            &mut stx,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    if stx.stx_mask & libc::STATX_MNT_ID != 0 {
        // Mount ids are small numbers; the top bit keeps them apart from device numbers.
        Ok(stx.stx_mnt_id | 1 << 63)
    } else {
        Ok(libc::makedev(stx.stx_dev_major, stx.stx_dev_minor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_file_opened_by_name_in_its_directory_is_that_file_and_links_are_not_followed() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f"), b"data").unwrap();
        std::os::unix::fs::symlink("f", t.path().join("link")).unwrap();
        let dir = open_dir_for_names(t.path()).expect("a directory opens");
        let open = |name: &str, follow| {
            open_to_locate_in(Some(&dir), OsStr::new(name), &t.path().join(name), follow)
        };
        let mut got = String::new();
        open("f", false).unwrap().read_to_string(&mut got).unwrap();
        assert_eq!(got, "data");
        // As by path: a final symlink is refused unless followed.
        assert_eq!(
            open("link", false).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        assert!(open("link", true).is_ok());
        assert_eq!(
            open("missing", false).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        // Without a directory, the whole path is used.
        assert!(open_to_locate_in(None, OsStr::new("f"), &t.path().join("f"), false).is_ok());
    }
}
