//! Device: which physical disk each filesystem is on, and whether it spins.
//!
//! Files are grouped per physical disk so each disk gets one sweep, and disks are swept in
//! parallel. The mapping goes through the operating system's device tree (sysfs on Linux),
//! never by guessing from device names.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use crate::os;

/// A physical disk (or the closest thing to one that could be found).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Disk {
    /// The disk's name (`sda`, `nvme0n1`, `loop3`), or a description when unknown.
    pub name: String,
    /// Whether it is rotational; `None` when unknown (network, memory, unmappable).
    pub rotational: Option<bool>,
    /// The devices followed to reach it, top first (`["dm-0", "sda"]`).
    pub chain: Vec<String>,
}

impl Disk {
    /// A disk that could not be identified.
    pub fn unknown(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            rotational: None,
            chain: Vec::new(),
        }
    }

    /// Whether reads on this disk should be swept in order (rotational or unknown) rather
    /// than issued many at once.
    pub fn wants_sweep(&self) -> bool {
        self.rotational != Some(false)
    }
}

/// Index of a disk in a [`Plan`](crate::Plan).
pub type DiskIndex = u16;

/// Caches the disk of each device number so sysfs is read once per filesystem.
#[derive(Default)]
pub(crate) struct DiskMap {
    inner: Mutex<DiskMapInner>,
}

#[derive(Default)]
struct DiskMapInner {
    by_dev: HashMap<u64, (DiskIndex, u64)>,
    disks: Vec<Disk>,
}

impl DiskMap {
    /// The disk of device `dev`, and the device's offset on it (a partition's start).
    pub(crate) fn index_of(&self, dev: u64) -> (DiskIndex, u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = inner.by_dev.get(&dev) {
            return i;
        }
        let (disk, base) = os::disk_of(dev);
        let i = match inner.disks.iter().position(|d| d == &disk) {
            Some(i) => i as DiskIndex,
            None => {
                inner.disks.push(disk);
                (inner.disks.len() - 1) as DiskIndex
            }
        };
        inner.by_dev.insert(dev, (i, base));
        (i, base)
    }

    pub(crate) fn into_disks(self) -> Vec<Disk> {
        self.inner
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .disks
    }
}
