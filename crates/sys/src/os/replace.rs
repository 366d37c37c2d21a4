//! Renames that never replace blindly (`renameat2`'s `RENAME_EXCHANGE` and
//! `RENAME_NOREPLACE`) and sharing two files' equal extents (`FIDEDUPERANGE`): Linux's;
//! elsewhere each says it cannot, and the caller does without.

use std::fs::Metadata;
use std::io;
use std::path::Path;

/// Swaps the names `a` and `b` atomically (Linux `renameat2(RENAME_EXCHANGE)`; elsewhere
/// unsupported).
pub fn rename_exchange(a: &Path, b: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return renameat2(a, b, libc::RENAME_EXCHANGE);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Whether a failed [`rename_exchange`] says the filesystem or system cannot do it (rather
/// than that a name is missing or not allowed).
pub fn exchange_unsupported(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    if matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
    ) {
        return true;
    }
    e.kind() == io::ErrorKind::Unsupported
}

/// Renames `from` to `to`, failing if `to` exists (Linux `renameat2(RENAME_NOREPLACE)`).
/// `None` where the system or filesystem has no such rename (elsewhere than Linux;
/// `EINVAL`, `ENOSYS`): nothing was done, and the caller does it another way.
pub fn rename_no_replace(from: &Path, to: &Path) -> Option<io::Result<()>> {
    #[cfg(target_os = "linux")]
    match renameat2(from, to, libc::RENAME_NOREPLACE) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => None,
        done => Some(done),
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to);
        None
    }
}

/// `renameat2(2)` of `from` to `to` with `flags` (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`):
/// the one call behind the renames that must not replace blindly.
#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let (from, to) = (super::sys_path(from)?, super::sys_path(to)?);
    let a = CString::new(from.as_os_str().as_bytes())?;
    let b = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both are NUL-terminated strings that live across the call; AT_FDCWD makes
    // them relative to the working directory, as std's paths are.
    // Allowed here (clippy.toml holds renames to seekless-jobs' destructive owner): with
    // either flag nothing is replaced, an exchange keeps both files and RENAME_NOREPLACE
    // fails where the name is taken; which files are renamed is the caller's decision.
    #[allow(clippy::disallowed_methods)]
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Shares the extents of the regular file at `keeper` with the file at `file`, the first
/// `len` bytes, range by range (Linux `FIDEDUPERANGE`): the kernel compares the bytes
/// under its locks and shares only what is the same. Both are opened without following a
/// link or waiting on a FIFO (`file` for writing, as the kernel asks it of a non-owner,
/// never truncated nor written); `unchanged` is given their metadata, as opened, and
/// nothing is shared unless it says they are the files meant. Elsewhere unsupported,
/// and nothing is opened.
pub fn share_extents(
    keeper: &Path,
    file: &Path,
    len: u64,
    unchanged: impl FnOnce(&Metadata, &Metadata) -> bool,
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return dedupe_range(keeper, file, len, unchanged);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (keeper, file, len, unchanged);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "sharing extents (FIDEDUPERANGE) is Linux only",
        ))
    }
}

#[cfg(target_os = "linux")]
fn dedupe_range(
    keeper: &Path,
    file: &Path,
    len: u64,
    unchanged: impl FnOnce(&Metadata, &Metadata) -> bool,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    // Neither follows a link nor waits on a FIFO swapped in since the check; what is opened
    // must be the very files checked.
    let open = |path: &Path, write: bool| {
        std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
    };
    let src: std::fs::File = open(keeper, false)?;
    // Opened for writing (the kernel asks it of a non-owner), never truncated nor written.
    let dst: std::fs::File = open(file, true)?;
    let (a, b) = (src.metadata()?, dst.metadata()?);
    if !unchanged(&a, &b) {
        return Err(io::Error::other("changed just now"));
    }
    #[repr(C)]
    struct Info {
        dest_fd: i64,
        dest_offset: u64,
        bytes_deduped: u64,
        status: i32,
        reserved: u32,
    }
    #[repr(C)]
    struct Range {
        src_offset: u64,
        src_length: u64,
        dest_count: u16,
        reserved1: u16,
        reserved2: u32,
        info: [Info; 1],
    }
    // _IOWR(0x94, 54, struct file_dedupe_range): linux/fs.h.
    const FIDEDUPERANGE: libc::c_ulong = 0xC018_9436;
    const SAME: i32 = 0;
    const DIFFERS: i32 = 1;
    // Filesystems cap one call (btrfs at 16 MiB); the loop goes on from what was shared.
    const CHUNK: u64 = 16 << 20;
    let mut at = 0;
    while at < len {
        let mut r = Range {
            src_offset: at,
            src_length: CHUNK.min(len - at),
            dest_count: 1,
            reserved1: 0,
            reserved2: 0,
            info: [Info {
                dest_fd: i64::from(dst.as_raw_fd()),
                dest_offset: at,
                bytes_deduped: 0,
                status: 0,
                reserved: 0,
            }],
        };
        // SAFETY: `r` is a `struct file_dedupe_range` with one `file_dedupe_range_info`, laid
        // out as linux/fs.h says (repr(C)); both descriptors are open for the call.
        let rc = unsafe { libc::ioctl(src.as_raw_fd(), FIDEDUPERANGE as _, &mut r as *mut Range) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        match r.info[0].status {
            SAME if r.info[0].bytes_deduped > 0 => at += r.info[0].bytes_deduped,
            SAME => return Err(io::Error::other("the kernel shared nothing")),
            DIFFERS => {
                return Err(io::Error::other(
                    "the kernel found its bytes differ from its keeper's: nothing shared",
                ));
            }
            e => return Err(io::Error::from_raw_os_error(-e)),
        }
    }
    Ok(())
}
