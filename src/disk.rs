//! A physical disk, as the planner groups files by it. A leaf: imports nothing else from
//! the crate.

use serde::Serialize;

/// A physical disk (or the closest thing to one that could be found).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
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
