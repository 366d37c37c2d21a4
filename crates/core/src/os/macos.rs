//! macOS: `fcntl(F_LOG2PHYS_EXT)` for extents, `fstatfs` for the filesystem type
//! (`F_RDADVISE` and `F_NOCACHE` for reading are `seekless-sys`'s).
//!
//! `F_LOG2PHYS_EXT` takes a file offset and a byte count and answers with the device
//! offset of that file offset and how many bytes from there are contiguous on the device;
//! calling it again after the contiguous run walks the file's extents
//! (`<sys/fcntl.h>`, `struct log2phys`, 4-byte packed).
//!
//! Disks are not mapped: going from `st_dev` to a physical disk and its rotation needs
//! IOKit (DiskArbitration), which this backend does not use. Every filesystem is an
//! unknown disk with unknown rotation, which the planner treats as "sweep in order" —
//! right for a spinning disk and harmless for an SSD.

use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;

use crate::disk::Disk;
use crate::fs_kind::FsKind;
use crate::placement::{Extent, ExtentFlags, LocateError, Placement, Strategy};

/// Runs mapped per file before assuming the rest continues the last one (enough for the
/// sort key and for per-extent scheduling of any file the reader would split).
const MAX_RUNS: usize = 4096;

/// The `f_fstypename` of the filesystem `file` is on.
fn fs_type_name(file: &File) -> Option<String> {
    let mut buf = MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: fstatfs writes one `struct statfs` into the buffer we pass, which is sized
    // and aligned for it; we read it only after a successful return.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), buf.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: fstatfs returned 0, so the struct is initialised.
    let st = unsafe { buf.assume_init() };
    let bytes: Vec<u8> = st
        .f_fstypename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The filesystem kind of an `f_fstypename`.
fn kind_of_name(name: &str) -> FsKind {
    match name {
        "apfs" => FsKind::Apfs,
        "hfs" => FsKind::Hfs,
        "msdos" => FsKind::Vfat,
        "exfat" => FsKind::Exfat,
        "ntfs" => FsKind::Ntfs,
        "zfs" => FsKind::Zfs,
        "tmpfs" => FsKind::Tmpfs,
        "nfs" => FsKind::Nfs,
        "smbfs" | "afpfs" | "webdav" | "cifs" => FsKind::Cifs,
        "devfs" | "autofs" | "fdesc" | "nullfs" => FsKind::Virtual,
        n if n.contains("fuse") => FsKind::Fuse,
        _ => FsKind::Other,
    }
}

/// The strategy that gives physical positions here.
pub const EXTENT_STRATEGIES: &[Strategy] = &[Strategy::Log2Phys];

/// What macOS tells about one filesystem: its type.
#[derive(Debug)]
pub struct Volume {
    dev: u64,
    kind: FsKind,
}

impl Volume {
    pub fn kind(&self) -> FsKind {
        self.kind
    }

    /// No known cap on one prefetch request.
    pub fn max_prefetch(&self) -> Option<u64> {
        None
    }
}

/// Finds out about the filesystem `file` is on (device `dev`): its type name.
pub fn probe(file: &File, dev: u64) -> Volume {
    Volume {
        dev,
        kind: fs_type_name(file).map_or(FsKind::Other, |n| kind_of_name(&n)),
    }
}

/// One `F_LOG2PHYS_EXT` call: the device offset of file offset `offset` and how many
/// bytes (of at most `want`) are contiguous from there.
fn log2phys(file: &File, offset: u64, want: u64) -> io::Result<(i64, i64)> {
    let mut l2p = libc::log2phys {
        l2p_flags: 0,
        l2p_contigbytes: libc::off_t::try_from(want).unwrap_or(libc::off_t::MAX),
        l2p_devoffset: libc::off_t::try_from(offset).map_err(io::Error::other)?,
    };
    // SAFETY: F_LOG2PHYS_EXT reads and writes one `struct log2phys`, which `l2p` is (libc
    // declares it 4-byte packed like <sys/fcntl.h>); it lives across the call and the fd
    // is open.
    let rc = unsafe {
        libc::fcntl(
            file.as_raw_fd(),
            libc::F_LOG2PHYS_EXT,
            &mut l2p as *mut libc::log2phys,
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    // Copy out of the packed struct before use (no references to packed fields).
    let (dev, contig) = (l2p.l2p_devoffset, l2p.l2p_contigbytes);
    Ok((dev, contig))
}

/// Whether an error means "this filesystem does not map blocks" rather than "this file
/// cannot be mapped".
fn is_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOTSUP | libc::EOPNOTSUPP | libc::ENOTTY | libc::ENOSYS)
    )
}

/// Asks the filesystem where `file`'s data lies, with the given strategy. `sync` has no
/// equivalent here and is ignored.
pub(crate) fn map_extents(
    file: &File,
    strategy: Strategy,
    size: u64,
    _sync: bool,
    _volume: &Volume,
) -> Result<Placement, LocateError> {
    if strategy != Strategy::Log2Phys {
        return Err(LocateError::Unsupported(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{strategy} is not available on macOS"),
        )));
    }
    let mut extents: Vec<Extent> = Vec::new();
    let mut offset = 0u64;
    while offset < size {
        if extents.len() == MAX_RUNS {
            if let Some(last) = extents.last_mut() {
                last.length += size - offset;
            }
            break;
        }
        let (dev, contig) = match log2phys(file, offset, size - offset) {
            Ok(answer) => answer,
            Err(e) if is_unsupported(&e) => return Err(LocateError::Unsupported(e)),
            // The device failed: say so for this file.
            Err(e) if e.raw_os_error() == Some(libc::EIO) => return Err(LocateError::Io(e)),
            // This file has no block map (e.g. a compressed file whose data is in its
            // resource fork): it goes by inode, like files on unmappable filesystems.
            Err(_) if offset == 0 => return Ok(Placement::unmapped(Strategy::Inode)),
            // Mapped part of the way: keep what we have; the rest is read in its turn.
            Err(_) => break,
        };
        let Ok(contig) = u64::try_from(contig) else {
            break;
        };
        if contig == 0 {
            break;
        }
        let contig = contig.min(size - offset);
        // A negative device offset is a run without blocks (a hole).
        if let Ok(physical) = u64::try_from(dev) {
            extents.push(Extent {
                logical: offset,
                physical,
                length: contig,
                flags: ExtentFlags::empty(),
            });
        }
        offset += contig;
    }
    if let Some(last) = extents.last_mut() {
        last.flags |= ExtentFlags::LAST;
    }
    Ok(Placement::from_extents(Strategy::Log2Phys, &extents, size))
}

/// No disk mapping on macOS (see the module documentation): an unknown disk per
/// filesystem, rotation unknown, offset 0.
pub fn disk_of(volume: &Volume) -> (Disk, u64) {
    (Disk::unknown(format!("dev {:#x}", volume.dev)), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_map_to_kinds() {
        assert_eq!(kind_of_name("apfs"), FsKind::Apfs);
        assert_eq!(kind_of_name("hfs"), FsKind::Hfs);
        assert_eq!(kind_of_name("msdos"), FsKind::Vfat);
        assert_eq!(kind_of_name("smbfs"), FsKind::Cifs);
        assert_eq!(kind_of_name("macfuse"), FsKind::Fuse);
    }

    #[test]
    fn a_file_maps_or_says_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 100_000]).unwrap();
        let f = File::open(&path).unwrap();
        let volume = probe(&f, 0);
        match map_extents(&f, Strategy::Log2Phys, 100_000, false, &volume) {
            Ok(p) => assert!(p.physical().is_some() || p.strategy == Strategy::Inode),
            Err(LocateError::Unsupported(_)) => {}
            Err(LocateError::Io(e)) => panic!("unexpected error {e}"),
        }
    }
}
