//! Linux: a filesystem's identity from the filesystem itself (its UUID, and the btrfs
//! subvolume), else from the mount table.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::volume::{IdentitySource, VolumeIdentity, hex, mount_key};

/// `FS_IOC_GETFSUUID`: `_IOR(0x15, 0, struct fsuuid2)`, a length byte then 16 bytes
/// (Linux 6.5; ext4, xfs, tmpfs and most filesystems with a UUID).
const FS_IOC_GETFSUUID: libc::c_ulong = (2 << 30) | (17 << 16) | (0x15 << 8);
/// `BTRFS_IOC_FS_INFO`: `_IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)` (1,024 bytes;
/// the fsid at offset 16). Needs no privilege.
const BTRFS_IOC_FS_INFO: libc::c_ulong = (2 << 30) | (1024 << 16) | (0x94 << 8) | 31;
/// `BTRFS_IOC_INO_LOOKUP`: `_IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args)` (4,096
/// bytes: tree id, object id, name). With tree id 0 and object id 256 it is unprivileged
/// and fills in the id of the subvolume holding the descriptor.
pub(super) const BTRFS_IOC_INO_LOOKUP: libc::c_ulong = (3 << 30) | (4096 << 16) | (0x94 << 8) | 18;
/// `BTRFS_FIRST_FREE_OBJECTID`: a subvolume's root directory.
pub(super) const BTRFS_FIRST_FREE_OBJECTID: u64 = 256;

/// The volume of the directory or regular file open as `file` (`path` is its name, for
/// the mount table).
pub(crate) fn volume_of_open(file: &File, path: &Path) -> io::Result<VolumeIdentity> {
    let meta = file.metadata()?;
    let dev = meta.dev();
    let fd = file.as_raw_fd();
    // SAFETY: statfs is plain integers, for which all zeroes is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open for the call (`file` is borrowed) and `st` a statfs buffer the
    // kernel writes into.
    if unsafe { libc::fstatfs(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // f_type is an i64 here, 32 bits on some architectures: compared as the 32 bits it is.
    if (st.f_type as u64 & 0xffff_ffff) == libc::BTRFS_SUPER_MAGIC as u64
        && let Some(key) = btrfs_key(fd)
    {
        return Ok(VolumeIdentity::new(key, IdentitySource::Uuid, dev));
    }
    if let Some(uuid) = fs_uuid(fd) {
        return Ok(VolumeIdentity::new(
            format!("uuid:{}", hex(&uuid)),
            IdentitySource::Uuid,
            dev,
        ));
    }
    let mountinfo = std::fs::read("/proc/self/mountinfo").unwrap_or_default();
    let at = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    match mount_entry(&mountinfo, dev, &at) {
        Some(key) => Ok(VolumeIdentity::new(key, IdentitySource::Mount, dev)),
        None => Ok(VolumeIdentity::new(
            format!("dev:{dev}"),
            IdentitySource::DeviceNumber,
            dev,
        )),
    }
}

/// The volume of the device `dev`, a file of which is at `path`, looked at through the
/// mount point of `dev` above `path` (from the mount table), so that nothing under the
/// mount point is opened; `None` where no mount point of `dev` is above `path` (a btrfs
/// subvolume has a device number of its own, not the mount's).
pub(crate) fn volume_of_device(dev: u64, path: &Path) -> Option<io::Result<VolumeIdentity>> {
    let mountinfo = std::fs::read("/proc/self/mountinfo").ok()?;
    let point = mount_point(&mountinfo, dev, path.as_os_str().as_bytes())?;
    let point = Path::new(std::ffi::OsStr::from_bytes(&point));
    let file = match crate::open_directory(point) {
        Ok(f) => f,
        Err(e) => return Some(Err(e)),
    };
    match file.metadata() {
        Ok(m) if m.dev() == dev => Some(volume_of_open(&file, point)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    }
}

/// The deepest mount point of `dev` at or above `path` in `/proc/self/mountinfo`'s text.
fn mount_point(mountinfo: &[u8], dev: u64, path: &[u8]) -> Option<Vec<u8>> {
    let wanted = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let mut best: Option<Vec<u8>> = None;
    for line in mountinfo.split(|&b| b == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        if fields.len() < 5 || fields[2] != wanted.as_bytes() {
            continue;
        }
        let point = unescape(fields[4]);
        let under = path.starts_with(&point)
            && (point == b"/" || path.len() == point.len() || path.get(point.len()) == Some(&b'/'));
        if under && best.as_ref().is_none_or(|b| point.len() > b.len()) {
            best = Some(point);
        }
    }
    best
}

/// The mount points strictly under `path` (as `/proc/self/mountinfo` names them), sorted.
pub(crate) fn mount_points_under(path: &Path) -> io::Result<Vec<std::path::PathBuf>> {
    let mountinfo = std::fs::read("/proc/self/mountinfo")?;
    let path = path.as_os_str().as_bytes();
    let mut found: Vec<std::path::PathBuf> = mountinfo
        .split(|&b| b == b'\n')
        .filter_map(|line| line.split(|&b| b == b' ').nth(4))
        .map(unescape)
        .filter(|point| {
            point.len() > path.len()
                && point.starts_with(path)
                && (path == b"/" || point[path.len()] == b'/')
        })
        .map(|point| std::path::PathBuf::from(OsStr::from_bytes(&point)))
        .collect();
    found.sort();
    found.dedup();
    Ok(found)
}

/// The filesystem's UUID by `FS_IOC_GETFSUUID`, unless it has none (or an all-zero one).
fn fs_uuid(fd: i32) -> Option<[u8; 16]> {
    let mut buf = [0u8; 17];
    // SAFETY: `buf` is the 17-byte `struct fsuuid2` the request writes, live for the call.
    if unsafe { libc::ioctl(fd, FS_IOC_GETFSUUID as _, buf.as_mut_ptr()) } != 0 {
        return None;
    }
    let len = usize::from(buf[0]).min(16);
    let mut uuid = [0u8; 16];
    uuid[..len].copy_from_slice(&buf[1..=len]);
    (len > 0 && uuid.iter().any(|&b| b != 0)).then_some(uuid)
}

/// `uuid:FSID/subvol:ID` of a btrfs filesystem: one filesystem holds many subvolumes,
/// each its own tree of inodes (and its own device number).
fn btrfs_key(fd: i32) -> Option<String> {
    let mut info = vec![0u8; 1024];
    // SAFETY: `info` is the 1,024-byte argument the request reads and writes, live for
    // the call.
    if unsafe { libc::ioctl(fd, BTRFS_IOC_FS_INFO as _, info.as_mut_ptr()) } != 0 {
        return None;
    }
    let fsid = &info[16..32];
    if fsid.iter().all(|&b| b == 0) {
        return None;
    }
    let mut lookup = vec![0u8; 4096];
    lookup[8..16].copy_from_slice(&BTRFS_FIRST_FREE_OBJECTID.to_ne_bytes());
    // SAFETY: `lookup` is the 4,096-byte argument (tree id 0, object id 256) the request
    // reads and writes, live for the call.
    if unsafe { libc::ioctl(fd, BTRFS_IOC_INO_LOOKUP as _, lookup.as_mut_ptr()) } != 0 {
        return None;
    }
    let tree = u64::from_ne_bytes(lookup[..8].try_into().ok()?);
    Some(format!("uuid:{}/subvol:{tree}", hex(fsid)))
}

/// The key of the mount of `dev` that holds `path` (the deepest mount point above it of
/// those with that device number), from `/proc/self/mountinfo`'s text.
pub(crate) fn mount_entry(mountinfo: &[u8], dev: u64, path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let wanted = format!("{major}:{minor}");
    let path = path.as_os_str().as_bytes();
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.split(|&b| b == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        // id parent major:minor root mount-point options [optional...] - fstype source ...
        let Some(dash) = fields.iter().position(|f| *f == b"-") else {
            continue;
        };
        if fields.len() < dash + 3 || dash < 5 || fields[2] != wanted.as_bytes() {
            continue;
        }
        let (root, point) = (unescape(fields[3]), unescape(fields[4]));
        let (fstype, source) = (unescape(fields[dash + 1]), unescape(fields[dash + 2]));
        let under = path.starts_with(&point)
            && (point == b"/" || path.len() == point.len() || path.get(point.len()) == Some(&b'/'));
        let depth = if under { point.len() + 1 } else { 0 };
        if best.as_ref().is_none_or(|(d, _)| depth > *d) {
            best = Some((depth, mount_key(&fstype, &source, &root, &point)));
        }
    }
    best.map(|(_, key)| key)
}

/// A mountinfo field with its octal escapes (`\040` for a space) undone.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\'
            && let Some(d) = field.get(i + 1..i + 4)
            && d.iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((d[0] - b'0') << 6 | (d[1] - b'0') << 3 | (d[2] - b'0'));
            i += 4;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &[u8] = b"\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
48 27 0:40 / /mnt/photo\\040disk rw shared:3 - fuse.faultfs faultfs rw
49 48 0:40 /sub /mnt/photo\\040disk/sub rw - fuse.faultfs faultfs rw
";

    #[test]
    fn the_deepest_mount_of_the_device_above_the_path_names_it() {
        let dev = libc::makedev(0, 40);
        assert_eq!(
            mount_entry(MOUNTINFO, dev, Path::new("/mnt/photo disk/a.jpg")).as_deref(),
            Some("mount:fuse.faultfs:faultfs:/:/mnt/photo disk")
        );
        assert_eq!(
            mount_entry(MOUNTINFO, dev, Path::new("/mnt/photo disk/sub/b/c.jpg")).as_deref(),
            Some("mount:fuse.faultfs:faultfs:/sub:/mnt/photo disk/sub")
        );
        // Not a prefix by name only: /mnt/photo disk/subway is under the first mount.
        assert_eq!(
            mount_entry(MOUNTINFO, dev, Path::new("/mnt/photo disk/subway")).as_deref(),
            Some("mount:fuse.faultfs:faultfs:/:/mnt/photo disk")
        );
        assert_eq!(
            mount_entry(MOUNTINFO, libc::makedev(254, 0), Path::new("/home/a")).as_deref(),
            Some("mount:ext4:/dev/vda:/:/")
        );
        assert_eq!(
            mount_entry(MOUNTINFO, libc::makedev(9, 9), Path::new("/")),
            None
        );
        assert_eq!(
            mount_point(MOUNTINFO, dev, b"/mnt/photo disk/sub/x").as_deref(),
            Some(b"/mnt/photo disk/sub".as_slice())
        );
        assert_eq!(mount_point(MOUNTINFO, dev, b"/elsewhere"), None);
        // Hostile text: never a panic.
        for cut in 0..MOUNTINFO.len() {
            let _ = mount_entry(&MOUNTINFO[..cut], dev, Path::new("/mnt"));
        }
        assert_eq!(unescape(b"a\\04"), b"a\\04");
        assert_eq!(unescape(b"a\\134b"), b"a\\b");
    }

    #[test]
    fn a_directory_here_has_an_identity_that_a_second_look_repeats() {
        let dir = std::env::temp_dir();
        let file = File::open(&dir).unwrap();
        let a = volume_of_open(&file, &dir).unwrap();
        let b = volume_of_open(&File::open(&dir).unwrap(), &dir).unwrap();
        assert_eq!(a, b);
        assert!(!a.key().is_empty());
    }
}
