//! `FIBMAP`: the physical block of each logical block, one ioctl per block.
//!
//! The rung below FIEMAP for filesystems that only implement `bmap` (needs
//! `CAP_SYS_RAWIO`). Mapping is capped at [`MAX_BLOCKS`] blocks: enough for the sort key
//! and the extents of any file the reader would prefetch piecewise; the tail of a larger
//! file is assumed to continue its last run.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use crate::placement::{Extent, ExtentFlags, LocateError, Placement, Strategy};

/// `_IO(0x00, 1)`.
const FIBMAP: libc::c_ulong = 1;
/// `_IO(0x00, 2)`: the filesystem block size FIBMAP counts in.
const FIGETBSZ: libc::c_ulong = 2;

const MAX_BLOCKS: u64 = 1 << 16;

fn ioctl_int(file: &File, request: libc::c_ulong, value: &mut libc::c_int) -> io::Result<()> {
    // SAFETY: FIBMAP and FIGETBSZ take a pointer to one `int`, which `value` is, valid and
    // writable for the duration of the call.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), request, value as *mut libc::c_int) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub fn placement(file: &File, size: u64) -> Result<Placement, LocateError> {
    let unsupported = |e: io::Error| match e.raw_os_error() {
        Some(libc::EPERM | libc::EINVAL | libc::ENOTTY | libc::EOPNOTSUPP) => {
            LocateError::Unsupported(e)
        }
        _ => LocateError::Io(e),
    };
    let mut bsz: libc::c_int = 0;
    ioctl_int(file, FIGETBSZ, &mut bsz).map_err(unsupported)?;
    let bsz = u64::try_from(bsz).unwrap_or(0);
    if bsz == 0 {
        return Err(LocateError::Unsupported(io::Error::other(
            "filesystem reports block size 0",
        )));
    }
    let blocks = size.div_ceil(bsz);
    let mut extents: Vec<Extent> = Vec::new();
    for block in 0..blocks.min(MAX_BLOCKS) {
        let mut b = libc::c_int::try_from(block)
            .map_err(|_| LocateError::Io(io::Error::other("block number beyond FIBMAP's range")))?;
        ioctl_int(file, FIBMAP, &mut b).map_err(unsupported)?;
        if b == 0 {
            continue; // a hole
        }
        let physical = u64::try_from(b).unwrap_or(0) * bsz;
        let logical = block * bsz;
        match extents.last_mut() {
            Some(last)
                if last.physical + last.length == physical
                    && last.logical + last.length == logical =>
            {
                last.length += bsz;
            }
            _ => extents.push(Extent {
                logical,
                physical,
                length: bsz,
                flags: ExtentFlags::empty(),
            }),
        }
    }
    if blocks > MAX_BLOCKS
        && let Some(last) = extents.last_mut()
    {
        last.length += (blocks - MAX_BLOCKS) * bsz;
    }
    if let Some(last) = extents.last_mut() {
        last.flags |= ExtentFlags::LAST;
    }
    Ok(Placement::from_extents(Strategy::Fibmap, &extents, size))
}
