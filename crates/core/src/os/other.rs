//! Any other platform: no extent queries; files are ordered by inode number.

use std::fs::File;
use std::io;

use crate::disk::Disk;
use crate::fs_kind::FsKind;
use crate::placement::{LocateError, Placement, Strategy};

/// No strategy gives physical positions here.
pub const EXTENT_STRATEGIES: &[Strategy] = &[];

/// Nothing is known about filesystems here beyond their device number.
#[derive(Debug)]
pub struct Volume {
    dev: u64,
}

impl Volume {
    pub fn kind(&self) -> FsKind {
        FsKind::Other
    }

    pub fn max_prefetch(&self) -> Option<u64> {
        None
    }
}

pub fn probe(_file: &File, dev: u64) -> Volume {
    Volume { dev }
}

pub(crate) fn map_extents(
    _file: &File,
    strategy: Strategy,
    _size: u64,
    _sync: bool,
    _volume: &Volume,
) -> Result<Placement, LocateError> {
    Err(LocateError::Unsupported(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{strategy} is not available on this platform"),
    )))
}

pub fn disk_of(volume: &Volume) -> (Disk, u64) {
    (Disk::unknown(format!("dev {}", volume.dev)), 0)
}
