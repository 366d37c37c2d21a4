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
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::locate::FsKind;

use super::{fiemap, hints, statfs, sysfs};

/// The most asked for one directory (larger ones are rare; readdir reads the rest).
const MAX_DIR_BYTES: u64 = 64 << 20;

/// The block device of a filesystem where directory read-ahead applies, and the most one
/// `readahead(2)` call reads on it.
struct Device {
    file: File,
    max_call: u64,
}

/// Reads directories' blocks ahead, per device; decides once per device whether it can.
#[derive(Default)]
pub(crate) struct DirReadahead {
    devices: Mutex<HashMap<u64, Option<Arc<Device>>>>,
}

impl DirReadahead {
    /// Starts reading the blocks of the directory at `path`, on device `dev`, `size` bytes
    /// long when the walk found it, into the page cache and returns at once. Returns
    /// whether it did (false where it does not apply). Costs no system call for a
    /// directory of one page or less, nor on a device already ruled out.
    pub(crate) fn start(&self, path: &Path, dev: u64, size: u64) -> bool {
        if size <= 4096 {
            return false; // one block (or inside its inode): nothing to gain
        }
        let known = self.lock().get(&dev).cloned();
        if let Some(None) = known {
            return false;
        }
        let Ok(dir) = super::sys_path(path).and_then(|p| File::open(&*p)) else {
            return false;
        };
        let device = match known {
            Some(device) => device,
            None => self
                .lock()
                .entry(dev)
                .or_insert_with(|| open_device(&dir, dev).map(Arc::new))
                .clone(),
        };
        let Some(device) = device else {
            return false;
        };
        let size = size.min(MAX_DIR_BYTES);
        let Ok(placement) = fiemap::placement(&dir, size, false) else {
            return false;
        };
        let mut started = false;
        for e in placement.extents().iter().filter(|e| e.needs_read()) {
            if e.logical >= size {
                break;
            }
            // In pieces the kernel reads whole (it drops the rest of a longer call).
            let end = e.physical + e.length.min(size - e.logical);
            let mut at = e.physical;
            while at < end {
                let len = (end - at).min(device.max_call);
                started |= hints::prefetch(&device.file, at, len).is_ok();
                at += len;
            }
        }
        started
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Option<Arc<Device>>>> {
        self.devices.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn open_device(dir: &File, dev: u64) -> Option<Device> {
    if statfs::kind(dir) != FsKind::Ext4 || libc::major(dev) == 0 {
        return None;
    }
    if sysfs::disk_of(dev).0.rotational == Some(false) {
        return None;
    }
    sysfs::device_nodes(dev)
        .iter()
        .find_map(|node| {
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
        .map(|file| Device {
            file,
            max_call: sysfs::prefetch_limit(dev).unwrap_or(128 << 10),
        })
}
