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

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};

use crate::fs_kind::FsKind;

use super::{Volume, fiemap, sysfs};
use seekless_sys as hints;

/// The most asked for one directory (larger ones are rare; readdir reads the rest).
const MAX_DIR_BYTES: u64 = 64 << 20;

/// The block device of a filesystem where directory read-ahead applies, open for reading,
/// and the most one `readahead(2)` call reads on it.
#[derive(Debug)]
pub struct BlockDevice {
    file: File,
    max_call: u64,
}

/// Opens the block device of `volume` for directory read-ahead, where it applies: ext2/3/4
/// on a disk that is rotational or unknown, with a device node we may read. `None`
/// otherwise; the device registry asks once per device.
pub fn open_block_device(volume: &Volume, rotational: Option<bool>) -> Option<BlockDevice> {
    let dev = volume.dev;
    if volume.kind != FsKind::Ext4 || libc::major(dev) == 0 || rotational == Some(false) {
        return None;
    }
    sysfs::device_nodes(dev)
        .iter()
        .find_map(|node| {
            let device = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(node)
                .ok()?;
            // The node must be the filesystem's own device: its page cache is the one ext4
            // uses.
            let meta = device.metadata().ok()?;
            (meta.file_type().is_block_device() && meta.rdev() == dev).then_some(device)
        })
        .map(|file| BlockDevice {
            file,
            max_call: volume.max_prefetch.unwrap_or(128 << 10),
        })
}

/// Starts reading the blocks of directory `dir`, `size` bytes long when the walk found it,
/// into `device`'s page cache and returns at once. Returns whether it did.
pub fn read_dir_ahead(dir: &File, size: u64, device: &BlockDevice) -> bool {
    let size = size.min(MAX_DIR_BYTES);
    let Ok(placement) = fiemap::placement(dir, size, false) else {
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
