//! Directory read-ahead through the block device, for ext2/3/4 on rotational disks.
//!
//! ext4 reads an indexed (htree) directory one block at a time, each read waiting for the
//! one before, and issues no read-ahead for it: on a cold spinning disk every block of a
//! 500-entry directory costs a rotation or a seek back from wherever the other walk
//! threads moved the head. ext4 keeps directory blocks in the block device's page cache,
//! so asking for them there first (FIEMAP on the directory gives their positions) turns
//! that chain into one request; the readdir then finds them in memory.
//!
//! Only where that holds and helps: the filesystem is ext2/3/4 (XFS and btrfs cache
//! metadata elsewhere, so the same read would be wasted), the disk is rotational or
//! unknown, and the block device can be opened for reading (root, or the `disk` group).
//! Opening the device read-only and reading ahead into its cache changes nothing on it.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::locate::FsKind;

use super::{fiemap, hints, statfs, sysfs};

/// The most read ahead for one directory: larger directories are rare and their first
/// blocks still arrive in one request.
const MAX_DIR_BYTES: u64 = 64 << 20;

/// Reads directories' blocks ahead, per device; decides once per device whether it can.
#[derive(Default)]
pub(crate) struct DirReadahead {
    devices: Mutex<HashMap<u64, Option<Arc<File>>>>,
}

impl DirReadahead {
    /// Starts reading the blocks of the directory at `path`, on device `dev`, into the page
    /// cache and returns at once. Returns whether it did (false where it does not apply).
    pub(crate) fn start(&self, path: &Path, dev: u64) -> bool {
        let Ok(dir) = File::open(path) else {
            return false;
        };
        let Some(device) = self.device(&dir, dev) else {
            return false;
        };
        let size = match dir.metadata() {
            Ok(m) if m.is_dir() => m.len().min(MAX_DIR_BYTES),
            _ => return false,
        };
        // A one-block directory (or one inside its inode) gains nothing.
        if size <= 4096 {
            return false;
        }
        let Ok(placement) = fiemap::placement(&dir, size, false) else {
            return false;
        };
        let mut started = false;
        for e in placement.extents().iter().filter(|e| e.needs_read()) {
            if e.logical >= size {
                break;
            }
            let len = e.length.min(size - e.logical);
            started |= hints::prefetch(&device, e.physical, len).is_ok();
        }
        started
    }

    /// The block device to read through, opened once per device; `None` where directory
    /// read-ahead does not apply.
    fn device(&self, dir: &File, dev: u64) -> Option<Arc<File>> {
        let mut devices = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        devices
            .entry(dev)
            .or_insert_with(|| open_device(dir, dev).map(Arc::new))
            .clone()
    }
}

fn open_device(dir: &File, dev: u64) -> Option<File> {
    if statfs::kind(dir) != FsKind::Ext4 || libc::major(dev) == 0 {
        return None;
    }
    if sysfs::disk_of(dev).0.rotational == Some(false) {
        return None;
    }
    // udev links every block device under /dev/block; without udev, sysfs names the node.
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mut nodes = vec![PathBuf::from(format!("/dev/block/{major}:{minor}"))];
    if let Ok(uevent) = fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/uevent")) {
        if let Some(name) = uevent.lines().find_map(|l| l.strip_prefix("DEVNAME=")) {
            nodes.push(Path::new("/dev").join(name));
        }
    }
    nodes.iter().find_map(|node| {
        let device = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(node)
            .ok()?;
        // The node must be the filesystem's own device: its page cache is the one ext4
        // uses.
        let meta = device.metadata().ok()?;
        (meta.file_type().is_block_device() && meta.rdev() == dev).then_some(device)
    })
}
