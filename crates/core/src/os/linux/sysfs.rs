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

pub fn disk_of(dev: u64) -> (Disk, u64) {
    let Some(block) = block_device_of(dev) else {
        return (
            Disk::unknown(format!("dev {}:{}", libc::major(dev), libc::minor(dev))),
            0,
        );
    };
    let mut chain = Vec::new();
    let mut rotational = None;
    let mut current = block;
    let mut base = 0;
    // Whether `base` still says where `current` starts on the disk: it does through
    // partitions and loop devices over block devices, not past dm, md or a file.
    let mut exact = true;
    for _ in 0..MAX_DEPTH {
        let Some(sys) = sys_block_dir(current) else {
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
        match lower_device(&whole) {
            Some(next) if next != current => {
                match loop_offset_on_block_device(&whole) {
                    Some(offset) if exact => base += offset,
                    _ => exact = false,
                }
                current = next;
            }
            _ => break,
        }
    }
    let disk = match chain.last() {
        Some(name) => Disk {
            name: name.clone(),
            rotational,
            chain,
        },
        None => Disk::unknown(format!("dev {}:{}", libc::major(block), libc::minor(block))),
    };
    (disk, base)
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
    let link = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
    fs::canonicalize(link).ok()
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

/// The single device `whole` is built on: a dm/md slave or a loop device's backing file's
/// device. `None` when there is none or more than one (a striped array is one "disk" to
/// us: its members are swept together by the array).
fn lower_device(whole: &Path) -> Option<u64> {
    if let Ok(entries) = fs::read_dir(whole.join("slaves")) {
        let slaves: Vec<_> = entries.filter_map(Result::ok).collect();
        if slaves.len() == 1 {
            let dev = fs::read_to_string(slaves[0].path().join("dev")).ok()?;
            return parse_dev(dev.trim());
        }
        if !slaves.is_empty() {
            return None;
        }
    }
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

    #[test]
    fn a_block_device_backed_filesystem_maps_through_sysfs() {
        let dev = fs::metadata("/").unwrap().dev();
        let link = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
        if libc::major(dev) == 0 || !Path::new(&link).exists() {
            crate::test_hooks::skip("block-device", "/ is not on a block device here");
            return;
        }
        let (disk, _) = disk_of(dev);
        // Found through sysfs, not the "unknown" fallback: the chain names the disk.
        assert_eq!(disk.chain.last(), Some(&disk.name));
        assert!(
            Path::new("/sys/block").join(&disk.name).exists(),
            "{disk:?}"
        );
    }
}
