//! Windows: `FSCTL_GET_RETRIEVAL_POINTERS` for extents, `GetVolumeInformationByHandleW`
//! for the filesystem, `IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS` and the seek-penalty
//! property for disks (`FILE_FLAG_SEQUENTIAL_SCAN` for reading is `seekless-sys`'s).
//!
//! Identity is the volume serial number and the file index (on NTFS, the MFT record
//! number), so "inode order" here is MFT order, which is where small files' data lives.

mod retrieval;
mod volume;

use std::fs::File;
use std::io;

use seekless_sys::ioctl;
use windows_sys::Win32::Storage::FileSystem::FILE_ATTRIBUTE_COMPRESSED;

use crate::disk::Disk;
use crate::placement::{ExtentFlags, LocateError, Placement, Strategy};

pub use volume::Volume;

/// The strategy that gives physical positions here.
pub const EXTENT_STRATEGIES: &[Strategy] = &[Strategy::RetrievalPointers];

/// Finds out about the volume `file` is on (serial number `dev`): its root, filesystem
/// and cluster geometry.
pub fn probe(file: &File, dev: u64) -> Volume {
    let serial = u32::try_from(dev)
        .ok()
        .or_else(|| ioctl::handle_info(file).ok().map(|i| i.volume_serial));
    match serial {
        Some(serial) => volume::discover(file, serial),
        None => Volume::unknown(0),
    }
}

/// Asks the filesystem where `file`'s data lies, with the given strategy. `sync` has no
/// equivalent: flushing needs write access, and NTFS allocates clusters when data is
/// written to the cache, so there is no delayed allocation to flush.
pub(crate) fn map_extents(
    file: &File,
    strategy: Strategy,
    size: u64,
    _sync: bool,
    vol: &Volume,
) -> Result<Placement, LocateError> {
    if strategy != Strategy::RetrievalPointers {
        return Err(LocateError::Unsupported(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{strategy} is not available on Windows"),
        )));
    }
    let info = ioctl::handle_info(file).map_err(LocateError::Io)?;
    let Some(geometry) = vol.geometry else {
        return Err(LocateError::Unsupported(io::Error::new(
            io::ErrorKind::Unsupported,
            "the volume's cluster size is unknown",
        )));
    };
    let flags = if info.attributes & FILE_ATTRIBUTE_COMPRESSED != 0 {
        ExtentFlags::ENCODED
    } else {
        ExtentFlags::empty()
    };
    retrieval::placement(file, size, geometry, flags)
}

/// The physical disk holding the volume, and the volume's byte offset on it (see
/// [`volume::disk_of`]).
pub fn disk_of(volume: &Volume) -> (Disk, u64) {
    volume::disk_of(volume)
}

#[cfg(test)]
mod tests;
