//! From a filesystem's `st_dev` to the physical disk under it, through sysfs.
//!
//! `/sys/dev/block/MAJ:MIN` links to the block device; a partition's parent directory is
//! its disk; a device-mapper or md device lists what it is built on in `slaves/`; a loop
//! device names its backing file in `loop/backing_file`. We follow these while the chain
//! leads to exactly one device, and read `queue/rotational` on the way. Filesystems on
//! anonymous devices (major 0: btrfs, overlay, tmpfs, NFS) are looked up in
//! `/proc/self/mountinfo` by their `MAJ:MIN` to find the block device they were mounted
//! from.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::disk::Disk;

/// How many levels of dm/md/loop we follow before giving up (guards against cycles).
const MAX_DEPTH: usize = 8;

/// The sysfs tree to read: the live `/sys`, or a recorded copy of another machine's in
/// tests (device-mapper and md stacks cannot be built where the kernel has neither).
#[derive(Clone, Debug)]
pub(crate) struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    /// The running kernel's.
    pub(crate) fn live() -> Sysfs {
        Sysfs {
            root: PathBuf::from("/sys"),
        }
    }

    /// A tree laid out as `/sys` under `root`.
    #[cfg(test)]
    pub(crate) fn at(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    /// The device directory of block device `dev` (`/sys/dev/block/MAJ:MIN` resolved).
    fn block_dir(&self, dev: u64) -> Option<PathBuf> {
        let link =
            self.root
                .join("dev/block")
                .join(format!("{}:{}", libc::major(dev), libc::minor(dev)));
        fs::canonicalize(link).ok()
    }

    /// The disk under block device `block` and where `block` starts on it: see
    /// [`disk_of`].
    pub(crate) fn disk_under(&self, block: u64) -> (Disk, u64) {
        self.disk_under_from(block, 0)
    }

    /// [`disk_under`](Self::disk_under), `depth` levels down already (members of an
    /// array are followed with what is left: a cycle in a hostile tree ends).
    fn disk_under_from(&self, block: u64, mut depth: usize) -> (Disk, u64) {
        let mut chain = Vec::new();
        let mut rotational = None;
        let mut current = block;
        let mut base = 0;
        // Whether `base` still says where `current` starts on the disk: it does through
        // partitions and loop devices over block devices, not past dm, md or a file.
        let mut exact = true;
        let mut array = None;
        while depth < MAX_DEPTH {
            depth += 1;
            let Some(sys) = self.block_dir(current) else {
                break;
            };
            let whole = whole_disk(&sys);
            if exact && whole != sys {
                base += partition_start(&sys);
            }
            let name = file_name(&whole);
            if let Some(r) = read_rotational(&whole) {
                rotational = Some(rotational.unwrap_or(false) || r);
            }
            chain.push(name);
            match self.lower(&whole) {
                Lower::One(next) if next != current => {
                    match loop_offset_on_block_device(&whole) {
                        Some(offset) if exact => base += offset,
                        _ => exact = false,
                    }
                    current = next;
                }
                Lower::Several(members) => {
                    array = Some(members);
                    break;
                }
                _ => break,
            }
        }
        let Some(name) = chain.last().cloned() else {
            return (
                Disk::unknown(format!("dev {}:{}", libc::major(block), libc::minor(block))),
                0,
            );
        };
        if let Some(members) = array {
            // An array over several devices (md raid, an LVM volume over several PVs, a
            // dm stripe): one disk to us, its own layout deciding which member serves a
            // block (we cannot see md's or dm's maps from sysfs). It seeks if any member
            // does; its chain goes on with the member disks.
            for member in members {
                let (disk, _) = self.disk_under_from(member, depth);
                if disk.rotational == Some(true) {
                    rotational = Some(true);
                } else if rotational.is_none() {
                    rotational = disk.rotational;
                }
                for d in disk.chain {
                    if !chain.contains(&d) {
                        chain.push(d);
                    }
                }
            }
            base = 0;
        }
        (
            Disk {
                name,
                rotational,
                chain,
                members: Vec::new(),
            },
            base,
        )
    }

    /// What the whole device `whole` is built on: its dm/md slaves, or a loop device's
    /// backing file's device.
    fn lower(&self, whole: &Path) -> Lower {
        if let Ok(entries) = fs::read_dir(whole.join("slaves")) {
            let mut slaves: Vec<u64> = entries
                .filter_map(Result::ok)
                .filter_map(|e| fs::read_to_string(e.path().join("dev")).ok())
                .filter_map(|dev| parse_dev(dev.trim()))
                .collect();
            // readdir order is the kernel's: sort so the chain reads the same every time.
            slaves.sort_unstable();
            match slaves.len() {
                0 => {}
                1 => return Lower::One(slaves[0]),
                _ => return Lower::Several(slaves),
            }
        }
        match loop_backing_device(whole) {
            Some(dev) => Lower::One(dev),
            None => Lower::None,
        }
    }
}

/// What a block device is built on.
enum Lower {
    /// Nothing we can follow (a disk, or a loop device over a file we cannot place).
    None,
    /// One device (a partition's or a LUKS/LVM volume's, a loop device's backing device).
    One(u64),
    /// Several (md raid, an LVM volume over several PVs): sorted device numbers.
    Several(Vec<u64>),
}

/// The physical disk under the filesystem on device `dev` and the device's first byte on
/// it.
///
/// `/sys/dev/block/MAJ:MIN` leads to the device; a partition's disk is its parent; a
/// device-mapper or md device over one device (LUKS, an LVM volume on one PV) is followed
/// down its `slaves/`; over several (md raid, LVM over several PVs) it is the disk, named
/// after itself, seeking if any member seeks, its members named at the end of its chain.
pub fn disk_of(dev: u64) -> (Disk, u64) {
    match block_device_of(dev) {
        Some(block) => Sysfs::live().disk_under(block),
        None => (
            Disk::unknown(format!("dev {}:{}", libc::major(dev), libc::minor(dev))),
            0,
        ),
    }
}

/// The most one `readahead(2)` call reads on the filesystem of device `dev`: the kernel
/// caps each call at the larger of the block device's largest request (`max_sectors_kb`)
/// and its read-ahead window (`read_ahead_kb`), and drops the rest without a word.
/// Read from the device the filesystem is mounted from (a partition's limits are its
/// disk's). `None` when there is no block device to ask.
pub fn prefetch_limit(dev: u64) -> Option<u64> {
    let queue = whole_disk(&sys_block_dir(block_device_of(dev)?)?).join("queue");
    let limit = read_number(&queue.join("max_sectors_kb"))?
        .max(read_number(&queue.join("read_ahead_kb")).unwrap_or(0));
    // Whole pages; a device reporting less than one page would still read one.
    Some((limit * 1024).max(4096) / 4096 * 4096)
}

/// Paths that may be device `dev`'s node: udev's `/dev/block/MAJ:MIN` link, then `/dev/`
/// and the kernel's name for it (`DEVNAME` in sysfs `uevent`) for systems without udev.
/// The caller checks what it opens.
pub fn device_nodes(dev: u64) -> Vec<PathBuf> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mut nodes = vec![PathBuf::from(format!("/dev/block/{major}:{minor}"))];
    if let Some(sys) = sys_block_dir(dev)
        && let Ok(uevent) = fs::read_to_string(sys.join("uevent"))
        && let Some(name) = uevent.lines().find_map(|l| l.strip_prefix("DEVNAME="))
    {
        nodes.push(Path::new("/dev").join(name));
    }
    nodes
}

/// The device node of the whole disk `name` (as [`disk_of`] names it), checked to be that
/// block device.
pub fn disk_node(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let dev = fs::read_to_string(Path::new("/sys/block").join(name).join("dev")).ok()?;
    let dev = parse_dev(dev.trim())?;
    device_nodes(dev)
        .into_iter()
        .find(|p| fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device() && m.rdev() == dev))
}

/// The disk `name`'s sequence number (`diskseq`: new each time a device of that name is
/// set up, as a loop device re-attached), if the kernel has one.
pub fn disk_seq(name: &str) -> Option<u64> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    read_number(&Path::new("/sys/block").join(name).join("diskseq"))
}

/// A partition's first byte on its disk (`start` is in 512-byte sectors).
fn partition_start(sys: &Path) -> u64 {
    read_number(&sys.join("start")).map_or(0, |sectors| sectors * 512)
}

/// The block device a filesystem on `dev` was mounted from: `dev` itself, or for an
/// anonymous device (major 0: btrfs, overlay, NFS) the source in mountinfo.
fn block_device_of(dev: u64) -> Option<u64> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        mount_source_device(major, minor)
    } else {
        Some(dev)
    }
}

/// A sysfs file holding one unsigned number.
fn read_number(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn sys_block_dir(dev: u64) -> Option<PathBuf> {
    Sysfs::live().block_dir(dev)
}

/// A partition's disk is its parent directory in sysfs.
fn whole_disk(sys: &Path) -> PathBuf {
    if sys.join("partition").exists()
        && let Some(parent) = sys.parent()
    {
        return parent.to_path_buf();
    }
    sys.to_path_buf()
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read_rotational(whole: &Path) -> Option<bool> {
    let text = fs::read_to_string(whole.join("queue/rotational")).ok()?;
    match text.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// The device a loop device's backing file is on (or the backing block device itself).
fn loop_backing_device(whole: &Path) -> Option<u64> {
    let backing = fs::read_to_string(whole.join("loop/backing_file")).ok()?;
    let meta = fs::metadata(backing.trim()).ok()?;
    if meta.file_type().is_block_device() {
        return Some(meta.rdev());
    }
    let dev = meta.dev();
    if libc::major(dev) == 0 {
        let (ma, mi) = (libc::major(dev), libc::minor(dev));
        return mount_source_device(ma, mi);
    }
    Some(dev)
}

/// Where a loop device reads its backing block device from (`losetup -o`, `mount -o
/// offset=`): such a loop device is a window into that disk, as a partition is. `None`
/// for anything else (a loop device over a file, dm, md).
fn loop_offset_on_block_device(whole: &Path) -> Option<u64> {
    let backing = fs::read_to_string(whole.join("loop/backing_file")).ok()?;
    let meta = fs::metadata(backing.trim()).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    Some(read_number(&whole.join("loop/offset")).unwrap_or(0))
}

fn parse_dev(text: &str) -> Option<u64> {
    let (ma, mi) = text.split_once(':')?;
    Some(libc::makedev(ma.parse().ok()?, mi.parse().ok()?))
}

/// For a filesystem on an anonymous device, the block device it was mounted from.
///
/// The mount's own `MAJ:MIN` may differ from the `st_dev` its files report (btrfs gives
/// each subvolume its own anonymous device), so a mount whose numbers do not match is also
/// accepted when its mount point reports `st_dev`.
fn mount_source_device(major: u32, minor: u32) -> Option<u64> {
    let text = fs::read_to_string("/proc/self/mountinfo").ok()?;
    source_device_in(&text, libc::makedev(major, minor), |mount_point| {
        fs::metadata(mount_point).ok().map(|m| m.dev())
    })
}

fn source_device_in(
    mountinfo: &str,
    dev: u64,
    dev_of_mount_point: impl Fn(&Path) -> Option<u64>,
) -> Option<u64> {
    let want = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let mut fallback = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(numbers), Some(mount_point)) = (fields.get(2), fields.get(4)) else {
            continue;
        };
        // After the optional fields comes " - FSTYPE SOURCE OPTIONS".
        let Some((_, tail)) = line.split_once(" - ") else {
            continue;
        };
        let Some(source) = tail.split(' ').nth(1) else {
            continue;
        };
        if !source.starts_with("/dev/") {
            continue;
        }
        if *numbers == want {
            return block_device(source);
        }
        if fallback.is_none()
            && numbers.starts_with("0:")
            && dev_of_mount_point(&unescape(mount_point)) == Some(dev)
        {
            fallback = block_device(source);
        }
    }
    fallback
}

fn block_device(source: &str) -> Option<u64> {
    let meta = fs::metadata(unescape(source)).ok()?;
    meta.file_type().is_block_device().then(|| meta.rdev())
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> PathBuf {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_the_source_of_anonymous_devices() {
        let info = "36 35 0:45 / /mnt/b rw,relatime shared:1 - btrfs /dev/null rw\n\
                    37 35 0:46 / /mnt/t rw - tmpfs tmpfs rw\n";
        let none = |_: &Path| None;
        // /dev/null is a character device, not a block device: no disk.
        assert_eq!(source_device_in(info, libc::makedev(0, 45), none), None);
        assert_eq!(source_device_in(info, libc::makedev(0, 46), none), None);
        assert_eq!(source_device_in(info, libc::makedev(0, 47), none), None);
    }

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(unescape("/mnt/a\\040b"), PathBuf::from("/mnt/a b"));
        assert_eq!(unescape("/plain"), PathBuf::from("/plain"));
    }

    #[test]
    fn sysfs_dev_files_parse() {
        assert_eq!(parse_dev("7:3"), Some(libc::makedev(7, 3)));
        assert_eq!(parse_dev("junk"), None);
    }

    /// Builds the recorded sysfs tree `testdata/sysfs/stacks.tree` under `root`: lines `F
    /// path = content` (`\\n` for a newline), `L path -> target` (a symlink, relative as in
    /// sysfs), `D path` (an empty directory). How it was made: docs/design.md, "Disk
    /// pools".
    fn recorded_tree(root: &Path) -> Sysfs {
        let tree = include_str!("../../../testdata/sysfs/stacks.tree");
        for line in tree
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (kind, rest) = line.split_once(' ').unwrap();
            match kind {
                "F" => {
                    let (path, content) = rest.split_once(" = ").unwrap();
                    let path = root.join(path);
                    fs::create_dir_all(path.parent().unwrap()).unwrap();
                    fs::write(path, content.replace("\\n", "\n") + "\n").unwrap();
                }
                "L" => {
                    let (path, target) = rest.split_once(" -> ").unwrap();
                    let path = root.join(path);
                    fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::os::unix::fs::symlink(target, path).unwrap();
                }
                "D" => fs::create_dir_all(root.join(rest)).unwrap(),
                other => panic!("unknown line kind {other}"),
            }
        }
        Sysfs::at(root)
    }

    fn disk_in(sys: &Sysfs, major: u32, minor: u32) -> (Disk, u64) {
        sys.disk_under(libc::makedev(major, minor))
    }

    #[test]
    fn luks_and_lvm_over_one_device_reach_the_disk_beneath() {
        let root = tempfile::tempdir().unwrap();
        let sys = recorded_tree(root.path());
        // LUKS (dm-0) over nvme0n1p1.
        let (disk, _) = disk_in(&sys, 253, 0);
        assert_eq!(disk.name, "nvme0n1");
        assert_eq!(disk.rotational, Some(false));
        assert_eq!(disk.chain, ["dm-0", "nvme0n1"]);
        // An LVM volume (dm-1) on that LUKS device: two levels down.
        let (disk, _) = disk_in(&sys, 253, 1);
        assert_eq!(disk.name, "nvme0n1");
        assert_eq!(disk.chain, ["dm-1", "dm-0", "nvme0n1"]);
        // A plain partition: its disk, and where it starts (sector 2048).
        assert_eq!(
            disk_in(&sys, 8, 1),
            (
                Disk {
                    name: "sda".into(),
                    rotational: Some(true),
                    chain: vec!["sda".into()],
                    members: Vec::new(),
                },
                2048 * 512
            )
        );
    }

    #[test]
    fn an_array_over_several_devices_is_one_disk_named_after_itself_with_its_members_in_the_chain()
    {
        let root = tempfile::tempdir().unwrap();
        let sys = recorded_tree(root.path());
        // md raid1 over sdb1 and sdc1 (two spinning disks).
        let (md0, base) = disk_in(&sys, 9, 0);
        assert_eq!(md0.name, "md0");
        assert_eq!(md0.rotational, Some(true));
        assert_eq!(md0.chain, ["md0", "sdb", "sdc"]);
        assert_eq!(base, 0);
        // An LVM volume on md0 is swept with md0: one sweep for both.
        let (lv, _) = disk_in(&sys, 253, 2);
        assert_eq!(lv.name, "md0");
        assert_eq!(lv.chain, ["dm-2", "md0", "sdb", "sdc"]);
        // An LVM volume over two PVs (sda3 on a spinning disk, sdd1 on a solid-state
        // one): the volume is the disk; it seeks, since one member does.
        let (big, _) = disk_in(&sys, 253, 3);
        assert_eq!(big.name, "dm-3");
        assert_eq!(big.rotational, Some(true));
        assert_eq!(big.chain, ["dm-3", "sda", "sdd"]);
        // LUKS over an md raid0 of a spinning and a solid-state partition.
        let (crypt, _) = disk_in(&sys, 253, 4);
        assert_eq!(crypt.name, "md1");
        assert_eq!(crypt.rotational, Some(true));
        assert_eq!(crypt.chain, ["dm-4", "md1", "sda", "nvme0n1"]);
        // md raid1 over two solid-state partitions does not seek.
        let (md2, _) = disk_in(&sys, 9, 2);
        assert_eq!(md2.rotational, Some(false));
        assert_eq!(md2.chain, ["md2", "sdd", "nvme0n1"]);
    }

    #[test]
    fn an_array_whose_member_reports_rotational_seeks_though_the_array_says_not() {
        let root = tempfile::tempdir().unwrap();
        let sys = recorded_tree(root.path());
        // As if the array's own flag were wrong: the members decide.
        let queue = root
            .path()
            .join("devices/virtual/block/md1/queue/rotational");
        fs::write(&queue, "0\n").unwrap();
        assert_eq!(disk_in(&sys, 9, 1).0.rotational, Some(true));
        // And with no readable flag of its own at all.
        fs::write(&queue, "?\n").unwrap();
        assert_eq!(disk_in(&sys, 9, 1).0.rotational, Some(true));
    }

    #[test]
    fn an_unknown_device_and_a_cycle_of_slaves_end_without_a_disk_or_a_hang() {
        let root = tempfile::tempdir().unwrap();
        let sys = recorded_tree(root.path());
        let (disk, _) = disk_in(&sys, 8, 99);
        assert_eq!(disk.name, "dev 8:99");
        assert_eq!(disk.rotational, None);
        // Hostile: md0 given dm-2, which sits on md0, as a slave of its own: a cycle.
        let md0 = root.path().join("devices/virtual/block/md0/slaves");
        std::os::unix::fs::symlink("../../dm-2", md0.join("dm-2")).unwrap();
        let (disk, _) = disk_in(&sys, 253, 2);
        assert_eq!(disk.name, "md0");
        assert!(disk.chain.len() <= 2 * MAX_DEPTH, "{disk:?}");
    }

    #[test]
    fn a_block_device_backed_filesystem_maps_through_sysfs() {
        let dev = fs::metadata("/").unwrap().dev();
        let link = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
        if libc::major(dev) == 0 || !Path::new(&link).exists() {
            crate::test_hooks::skip("block-device", "/ is not on a block device here");
            return;
        }
        let (disk, _) = disk_of(dev);
        // Found through sysfs, not the "unknown" fallback: the chain names the disk (last,
        // or before its members for an array).
        assert!(disk.chain.contains(&disk.name), "{disk:?}");
        assert!(
            Path::new("/sys/block").join(&disk.name).exists(),
            "{disk:?}"
        );
    }
}
