//! Devices: one registry of what is known about each filesystem's device, found once and
//! shared by the walk (directory read-ahead), the planner (strategy, disk) and the reader
//! (prefetch cap).
//!
//! Files are grouped per physical disk so each disk gets one sweep, and disks are swept in
//! parallel. The mapping goes through the operating system's device tree (sysfs on Linux,
//! volume disk extents on Windows), never by guessing from device names.

use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::disk::{Disk, DiskIndex};
use crate::fs_kind::FsKind;
use crate::os;
use crate::sync::{lock, read, write};

/// What is known about one device (a filesystem's `st_dev`; a volume's serial number on
/// Windows).
#[derive(Debug)]
pub(crate) struct Device {
    /// The device number files on it report.
    pub(crate) dev: u64,
    /// What the platform found out about the filesystem (kind, prefetch cap, and its own
    /// facts: the volume root and cluster geometry on Windows).
    pub(crate) volume: os::Volume,
    /// The physical disk it is on (a filesystem over several disks that is not split
    /// into them: one disk standing for them all, `Disk::pool`).
    pub(crate) disk: DiskIndex,
    /// Its first byte on that disk (a partition's start), so files of several partitions
    /// of one disk sort into one sweep.
    pub(crate) base: u64,
    /// Whether the disk spins (`None`: unknown).
    pub(crate) rotational: Option<bool>,
    /// A filesystem over several devices (btrfs): each member's disk and its first byte
    /// on it, in the order `os::place_on_member` numbers them; empty for one device.
    pub(crate) members: Vec<(DiskIndex, u64)>,
    /// The block device, open for directory read-ahead, where that applies; opened on
    /// first use.
    block_device: OnceLock<Option<os::BlockDevice>>,
}

impl Device {
    /// The filesystem's kind.
    pub(crate) fn kind(&self) -> FsKind {
        self.volume.kind()
    }

    /// The most one prefetch request brings in on this device, when the operating system
    /// caps it (Linux: `readahead(2)` reads at most the larger of the device's
    /// `max_sectors_kb` and `read_ahead_kb` per call and silently drops the rest).
    pub(crate) fn max_prefetch(&self) -> Option<u64> {
        self.volume.max_prefetch()
    }

    /// The block device for directory read-ahead, if it applies here (Linux, ext2/3/4, a
    /// rotational or unknown disk, the device readable). Decided once.
    pub(crate) fn block_device(&self) -> Option<&os::BlockDevice> {
        self.block_device
            .get_or_init(|| os::open_block_device(&self.volume, self.rotational))
            .as_ref()
    }
}

/// The registry: each device probed once, on first sight, whoever sees it first.
#[derive(Debug, Default)]
pub(crate) struct Devices {
    /// Read for every file, written once per device.
    by_dev: RwLock<HashMap<u64, Arc<Device>>>,
    disks: Mutex<Vec<Disk>>,
}

impl Devices {
    /// The device `dev`, probed through `file` (any open file or directory on it) the
    /// first time it is asked for.
    pub(crate) fn device(&self, dev: u64, file: &File) -> Arc<Device> {
        if let Some(d) = read(&self.by_dev).get(&dev) {
            return d.clone();
        }
        let mut map = write(&self.by_dev);
        map.entry(dev)
            .or_insert_with(|| {
                let volume = os::probe(file, dev);
                let (disk, base) = os::disk_of(&volume);
                let rotational = disk.rotational;
                let mut disks = lock(&self.disks);
                // By name: the devices followed to reach a disk differ between
                // filesystems on one disk (two LVM volumes, two volumes of one Windows
                // disk, loop devices at offsets), yet they share its head.
                let mut index_of = |disk: Disk| -> DiskIndex {
                    let i = match disks.iter().position(|d| d.name == disk.name) {
                        Some(i) => i,
                        None => {
                            disks.push(disk);
                            disks.len() - 1
                        }
                    };
                    i as DiskIndex
                };
                let index = index_of(disk);
                let members = os::pool_members(&volume)
                    .into_iter()
                    .map(|(disk, base)| (index_of(disk), base))
                    .collect();
                Arc::new(Device {
                    dev,
                    volume,
                    disk: index,
                    base,
                    rotational,
                    members,
                    block_device: OnceLock::new(),
                })
            })
            .clone()
    }

    /// The device `dev`, if it was probed already.
    pub(crate) fn known(&self, dev: u64) -> Option<Arc<Device>> {
        read(&self.by_dev).get(&dev).cloned()
    }

    /// Disk `index` as seen so far.
    pub(crate) fn disk(&self, index: DiskIndex) -> Disk {
        lock(&self.disks)[index as usize].clone()
    }

    /// The disks seen so far, in the order they were first seen ([`DiskIndex`] order).
    pub(crate) fn disks(&self) -> Vec<Disk> {
        lock(&self.disks).clone()
    }
}
