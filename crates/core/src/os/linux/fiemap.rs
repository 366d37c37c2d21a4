//! `FS_IOC_FIEMAP`: the extent map of a file.
//!
//! Kernel documentation: <https://www.kernel.org/doc/html/latest/filesystems/fiemap.html>.
//! One call returns up to [`BATCH`] extents; a file with more is mapped in further calls
//! starting after the last extent returned. No `FIEMAP_FLAG_SYNC` unless asked: it writes
//! dirty data out first, and seekless never modifies what it reads.

use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;

use crate::placement::{Extent, ExtentFlags, LocateError, Placement, Strategy};

/// `_IOWR('f', 11, struct fiemap)`; the struct header is 32 bytes.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;

const FIEMAP_FLAG_SYNC: u32 = 0x0000_0001;

const FIEMAP_EXTENT_LAST: u32 = 0x0000_0001;
const FIEMAP_EXTENT_UNKNOWN: u32 = 0x0000_0002;
const FIEMAP_EXTENT_DELALLOC: u32 = 0x0000_0004;
const FIEMAP_EXTENT_ENCODED: u32 = 0x0000_0008;
const FIEMAP_EXTENT_DATA_ENCRYPTED: u32 = 0x0000_0080;
const FIEMAP_EXTENT_NOT_ALIGNED: u32 = 0x0000_0100;
const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x0000_0200;
const FIEMAP_EXTENT_DATA_TAIL: u32 = 0x0000_0400;
const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x0000_0800;
const FIEMAP_EXTENT_SHARED: u32 = 0x0000_2000;

/// Extents fetched per ioctl. 32 covers almost every file in one call; the buffer is on
/// the stack (32 + 32 × 56 bytes).
const BATCH: usize = 32;

/// `struct fiemap_extent` from `<linux/fiemap.h>`.
#[repr(C)]
#[derive(Clone, Copy)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// `struct fiemap` with its flexible array member given a fixed size.
#[repr(C)]
struct Fiemap<const N: usize> {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    /// Written by the kernel, `fm_mapped_extents` of them; not zeroed first (1.8 KB per
    /// file for 32 slots, when nearly every file has one extent).
    fm_extents: [MaybeUninit<FiemapExtent>; N],
}

impl<const N: usize> Fiemap<N> {
    fn request(start: u64, flags: u32) -> Self {
        Self {
            fm_start: start,
            fm_length: u64::MAX - start,
            fm_flags: flags,
            fm_mapped_extents: 0,
            fm_extent_count: N as u32,
            fm_reserved: 0,
            fm_extents: [const { MaybeUninit::uninit() }; N],
        }
    }

    /// The extents the kernel returned.
    fn mapped(&self) -> &[FiemapExtent] {
        let mapped = (self.fm_mapped_extents as usize).min(N);
        // SAFETY: after a successful call (and before it, when `fm_mapped_extents` is 0)
        // the kernel has written the first `fm_mapped_extents` slots, capped at the
        // `fm_extent_count` (= N) it was given; `MaybeUninit<T>` has `T`'s layout.
        unsafe { std::slice::from_raw_parts(self.fm_extents.as_ptr().cast(), mapped) }
    }

    fn call(&mut self, file: &File) -> io::Result<()> {
        // SAFETY: `self` is a properly initialised `struct fiemap` followed by exactly
        // `fm_extent_count` (= N) `struct fiemap_extent` slots, which is the buffer the
        // kernel writes into; it lives for the whole call and the fd is open.
        let rc = unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                FS_IOC_FIEMAP,
                self as *mut Self as *mut libc::c_void,
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// Counts the file's extents without fetching them (`fm_extent_count = 0`).
pub fn count(file: &File, sync: bool) -> io::Result<u32> {
    let mut req = Fiemap::<0>::request(0, if sync { FIEMAP_FLAG_SYNC } else { 0 });
    req.call(file)?;
    Ok(req.fm_mapped_extents)
}

fn flags_of(raw: u32) -> ExtentFlags {
    let mut f = ExtentFlags::empty();
    let map = [
        (FIEMAP_EXTENT_LAST, ExtentFlags::LAST),
        (FIEMAP_EXTENT_UNKNOWN, ExtentFlags::UNKNOWN),
        (FIEMAP_EXTENT_DELALLOC, ExtentFlags::DELALLOC),
        (FIEMAP_EXTENT_ENCODED, ExtentFlags::ENCODED),
        (FIEMAP_EXTENT_DATA_ENCRYPTED, ExtentFlags::ENCODED),
        (FIEMAP_EXTENT_NOT_ALIGNED, ExtentFlags::NOT_ALIGNED),
        (FIEMAP_EXTENT_DATA_INLINE, ExtentFlags::DATA_INLINE),
        (FIEMAP_EXTENT_DATA_TAIL, ExtentFlags::DATA_INLINE),
        (FIEMAP_EXTENT_UNWRITTEN, ExtentFlags::UNWRITTEN),
        (FIEMAP_EXTENT_SHARED, ExtentFlags::SHARED),
    ];
    for (bit, flag) in map {
        if raw & bit != 0 {
            f |= flag;
        }
    }
    f
}

fn extent(raw: &FiemapExtent) -> Extent {
    Extent {
        logical: raw.fe_logical,
        physical: raw.fe_physical,
        length: raw.fe_length,
        flags: flags_of(raw.fe_flags),
    }
}

fn is_last(raw: &FiemapExtent) -> bool {
    raw.fe_flags & FIEMAP_EXTENT_LAST != 0
}

/// Whether an error means "this filesystem does not do FIEMAP" rather than "this file
/// failed".
fn is_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::ENOTTY | libc::ENOSYS | libc::EBADR)
    )
}

/// The file's placement from its full extent map.
pub fn placement(file: &File, size: u64, sync: bool) -> Result<Placement, LocateError> {
    let classify = |e: io::Error| {
        if is_unsupported(&e) {
            LocateError::Unsupported(e)
        } else {
            LocateError::Io(e)
        }
    };
    let flags = if sync { FIEMAP_FLAG_SYNC } else { 0 };
    let mut extents: Vec<Extent> = Vec::new();
    let mut start = 0u64;
    loop {
        let mut req = Fiemap::<BATCH>::request(start, flags);
        req.call(file).map_err(classify)?;
        let raws = req.mapped();
        let mapped = raws.len();
        if start == 0 && mapped == 1 {
            // Nearly every file: one extent, mapped without a list allocated for it.
            let only = [extent(&raws[0])];
            return Ok(Placement::from_extents(Strategy::Fiemap, &only, size));
        }
        if mapped == BATCH && extents.is_empty() {
            // A heavily fragmented file: size the list once instead of growing it.
            if let Ok(total) = count(file, false) {
                extents.reserve(total as usize);
            }
        }
        let mut last_seen = false;
        for raw in raws {
            last_seen |= is_last(raw);
            extents.push(extent(raw));
        }
        match extents.last() {
            Some(e) if !last_seen && mapped == BATCH => {
                let next = e.logical.saturating_add(e.length);
                if next <= start || next >= size.max(1) {
                    break;
                }
                start = next;
            }
            _ => break,
        }
    }
    Ok(Placement::from_extents(Strategy::Fiemap, &extents, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_layout_matches_the_kernel_abi() {
        assert_eq!(std::mem::size_of::<FiemapExtent>(), 56);
        assert_eq!(std::mem::size_of::<Fiemap<0>>(), 32);
        // _IOWR('f', 11, 32 bytes)
        let ioc = (3u64 << 30) | (32u64 << 16) | ((b'f' as u64) << 8) | 11;
        assert_eq!(FS_IOC_FIEMAP, ioc as libc::c_ulong);
    }

    #[test]
    fn kernel_flags_map_onto_extent_flags() {
        let f = flags_of(FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_LAST);
        assert!(f.contains(ExtentFlags::DELALLOC | ExtentFlags::UNKNOWN | ExtentFlags::LAST));
        assert!(!f.contains(ExtentFlags::SHARED));
        assert!(flags_of(FIEMAP_EXTENT_DATA_INLINE).contains(ExtentFlags::DATA_INLINE));
        assert!(flags_of(FIEMAP_EXTENT_SHARED).contains(ExtentFlags::SHARED));
        assert!(flags_of(FIEMAP_EXTENT_UNWRITTEN).contains(ExtentFlags::UNWRITTEN));
        assert!(flags_of(FIEMAP_EXTENT_ENCODED).contains(ExtentFlags::ENCODED));
        assert!(flags_of(FIEMAP_EXTENT_NOT_ALIGNED).contains(ExtentFlags::NOT_ALIGNED));
    }

    #[test]
    fn a_file_on_the_build_filesystem_maps_or_says_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 100_000]).unwrap();
        let f = File::open(&path).unwrap();
        match placement(&f, 100_000, false) {
            Ok(p) => assert!(p.extent_count >= 1),
            Err(LocateError::Unsupported(_)) => {}
            Err(LocateError::Io(e)) => panic!("unexpected error {e}"),
        }
    }
}
