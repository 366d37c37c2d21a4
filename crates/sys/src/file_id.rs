//! The identity of a file. A leaf: imports nothing else from the crate.

use serde::Serialize;

/// The identity of a file: the device it is on and its inode number (on Windows: volume
/// serial number and file index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[non_exhaustive]
pub struct FileId {
    /// Device (`st_dev`).
    pub dev: u64,
    /// Inode number (`st_ino`).
    pub ino: u64,
}

impl FileId {
    /// The file with inode number `ino` on device `dev`.
    pub fn new(dev: u64, ino: u64) -> Self {
        Self { dev, ino }
    }
}
