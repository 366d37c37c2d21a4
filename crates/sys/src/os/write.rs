//! What a copier asks of the system beyond writing bytes: sharing blocks within one
//! filesystem (`FICLONE`, `copy_file_range`), making device nodes and FIFOs, times of
//! symlinks, extended attributes, and flushing a whole filesystem. Elsewhere than Linux
//! the fast paths report "unsupported" and the portable path is taken.

use std::fs::File;
use std::io;
use std::path::Path;

/// Makes `dst` share `src`'s blocks (a reflink: btrfs, XFS with reflink, …). Fails with
/// `Unsupported` (or the system's error) where it cannot; `dst` is then unchanged.
#[cfg(target_os = "linux")]
pub fn clone_file(src: &File, dst: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // FICLONE = _IOW(0x94, 9, int)
    const FICLONE: libc::c_ulong = 0x4004_9409;
    // SAFETY: FICLONE takes the source descriptor as its argument; both descriptors are
    // open for the duration of the call.
    let rc = unsafe { libc::ioctl(dst.as_raw_fd(), FICLONE as _, src.as_raw_fd()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Copies `len` bytes from `src` to `dst` (both from offset 0) inside the kernel. Returns
/// the bytes copied: fewer than `len` if `src` shrank.
#[cfg(target_os = "linux")]
pub fn copy_range(src: &File, dst: &File, len: u64) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    let mut off_in: libc::loff_t = 0;
    let mut off_out: libc::loff_t = 0;
    let mut done = 0u64;
    while done < len {
        let want = (len - done).min(1 << 30) as usize;
        // SAFETY: both descriptors are open; the offsets are ours and advanced by the call.
        let n = unsafe {
            libc::copy_file_range(
                src.as_raw_fd(),
                &mut off_in,
                dst.as_raw_fd(),
                &mut off_out,
                want,
                0,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            break;
        }
        done += n as u64;
    }
    Ok(done)
}

/// Shares `src`'s data with `dst` (a reflink): unsupported here.
#[cfg(not(target_os = "linux"))]
pub fn clone_file(_src: &File, _dst: &File) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Copies `len` bytes in the kernel: unsupported here (the caller copies through memory).
#[cfg(not(target_os = "linux"))]
pub fn copy_range(_src: &File, _dst: &File, _len: u64) -> io::Result<u64> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(unix)]
fn c_path(path: &Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// `op` with `path` as a C string the kernel takes, whatever the path's length.
#[cfg(unix)]
fn with_c_path<T>(path: &Path, op: impl FnOnce(&std::ffi::CStr) -> io::Result<T>) -> io::Result<T> {
    super::with_path(path, |p| op(&c_path(p)?))
}

/// Makes a FIFO or device node at `path` with `mode` (type and permission bits) and
/// device number `rdev`.
#[cfg(unix)]
pub fn make_node(path: &Path, mode: u32, rdev: u64) -> io::Result<()> {
    with_c_path(path, |c| {
        // SAFETY: `c` is a NUL-terminated path; mknod only creates the node.
        let rc = unsafe { libc::mknod(c.as_ptr(), mode as libc::mode_t, rdev as libc::dev_t) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })
}

/// Makes a special file: unsupported here.
#[cfg(not(unix))]
pub fn make_node(_path: &Path, _mode: u32, _rdev: u64) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Sets access and modification times (seconds, nanoseconds) of `path` itself, not
/// following a symlink (for [`set_times`](super::set_times) on Unix).
#[cfg(unix)]
pub fn set_times_nofollow(path: &Path, atime: (i64, i64), mtime: (i64, i64)) -> io::Result<()> {
    with_c_path(path, |c| {
        let ts = |(sec, nsec): (i64, i64)| libc::timespec {
            tv_sec: sec as libc::time_t,
            tv_nsec: nsec as _,
        };
        let times = [ts(atime), ts(mtime)];
        // SAFETY: `c` is a NUL-terminated path and `times` two timespecs, as utimensat reads.
        let rc = unsafe {
            libc::utimensat(
                libc::AT_FDCWD,
                c.as_ptr(),
                times.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })
}

/// Sets extended attribute `name` of `path` itself (not following a symlink).
#[cfg(target_os = "linux")]
pub fn set_xattr(path: &Path, name: &[u8], value: &[u8]) -> io::Result<()> {
    with_c_path(path, |c| {
        let n = std::ffi::CString::new(name)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c` and `n` are NUL-terminated; `value` is read for its length.
        let rc = unsafe {
            libc::lsetxattr(
                c.as_ptr(),
                n.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })
}

/// Sets an extended attribute: unsupported here.
#[cfg(not(target_os = "linux"))]
pub fn set_xattr(_path: &Path, _name: &[u8], _value: &[u8]) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Removes extended attribute `name` of `path` itself (not following a symlink); one
/// already gone is no error.
#[cfg(target_os = "linux")]
pub fn remove_xattr(path: &Path, name: &[u8]) -> io::Result<()> {
    with_c_path(path, |c| {
        let n = std::ffi::CString::new(name)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c` and `n` are NUL-terminated strings we own.
        let rc = unsafe { libc::lremovexattr(c.as_ptr(), n.as_ptr()) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ENODATA) {
            Ok(())
        } else {
            Err(err)
        }
    })
}

/// Removes an extended attribute: unsupported here.
#[cfg(not(target_os = "linux"))]
pub fn remove_xattr(_path: &Path, _name: &[u8]) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Whether [`sync_filesystem_of`] flushes a whole filesystem in one call here.
pub const HAS_SYNCFS: bool = cfg!(target_os = "linux");

/// Flushes everything written to the filesystem `file` is on, in one call (`syncfs`);
/// where there is no such call ([`HAS_SYNCFS`]), that one file.
#[cfg(target_os = "linux")]
pub fn sync_filesystem_of(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: syncfs on a descriptor we hold open.
    if unsafe { libc::syncfs(file.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes the filesystem `file` is on to disk: here `file` itself (`fsync`).
#[cfg(not(target_os = "linux"))]
pub fn sync_filesystem_of(file: &File) -> io::Result<()> {
    file.sync_all()
}

/// Makes a directory's entries durable (a rename or a new name in it survives a power
/// cut): `fsync` on the directory. Elsewhere (Windows cannot open a directory as a file,
/// and NTFS journals its directory changes) nothing to do.
#[cfg(target_os = "linux")]
pub fn sync_directory(dir: &Path) -> io::Result<()> {
    File::open(&*super::sys_path(dir)?)?.sync_all()
}

/// Writes the directory `dir` (its entries) to disk.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn sync_directory(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes a directory's entries to disk: nothing to do here (NTFS journals them).
#[cfg(not(unix))]
pub fn sync_directory(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Flushes everything written to the filesystem `path` is on (`syncfs` on the directory
/// or file); elsewhere, the whole system's buffers as far as the platform offers.
#[cfg(target_os = "linux")]
pub fn sync_filesystem(path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let file = File::open(&*super::sys_path(path)?)?;
    // SAFETY: syncfs on a descriptor we hold open.
    if unsafe { libc::syncfs(file.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere a directory cannot always be opened as a file (Windows): nothing to open.
#[cfg(not(target_os = "linux"))]
pub fn sync_filesystem(_path: &Path) -> io::Result<()> {
    super::sync_filesystems();
    Ok(())
}

/// Makes a symlink at `at` pointing to `target` (on Windows, a file symlink).
#[cfg(unix)]
pub fn make_symlink(target: &Path, at: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

/// Makes a symbolic link at `at` to `target`: a file link (`symlink_file`), whatever
/// `target` is.
#[cfg(windows)]
pub fn make_symlink(target: &Path, at: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, at)
}

#[cfg(not(any(unix, windows)))]
pub fn make_symlink(_target: &Path, _at: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Writes all of `data` at offset `at` of `file`.
#[cfg(unix)]
pub fn write_all_at(file: &File, data: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, at)
}

/// Writes all of `data` at offset `at` of `file`.
#[cfg(windows)]
pub fn write_all_at(file: &File, mut data: &[u8], mut at: u64) -> io::Result<()> {
    while !data.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, data, at)?;
        data = &data[n..];
        at += n as u64;
    }
    Ok(())
}

/// Elsewhere than Linux there are no unnamed files: always `Unsupported`, and nothing is
/// made.
#[cfg(not(target_os = "linux"))]
pub fn create_locked_then_named(path: &Path, mode: u32) -> io::Result<File> {
    let _ = (path, mode);
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Makes a regular file at `path` (which must not exist) that no one sees unlocked: made
/// without a name in its directory (`O_TMPFILE`), locked (`flock`), then linked under
/// `path`. `Unsupported` where the kernel or filesystem cannot make unnamed files (or
/// `/proc` is missing); nothing is left behind then.
#[cfg(target_os = "linux")]
pub fn create_locked_then_named(path: &Path, mode: u32) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let unsupported = |e: io::Error| match e.raw_os_error() {
        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOENT) => {
            io::Error::new(io::ErrorKind::Unsupported, e)
        }
        _ => e,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let file = super::with_path(dir, |d| {
        std::fs::OpenOptions::new()
            .write(true)
            .mode(mode)
            .custom_flags(libc::O_TMPFILE)
            .open(d)
    })
    .map_err(unsupported)?;
    let _ = file.try_lock();
    let proc_name = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    with_c_path(path, |c| {
        // SAFETY: both paths are NUL-terminated strings that outlive the call; linkat only
        // gives the open file a name.
        let rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc_name.as_ptr(),
                libc::AT_FDCWD,
                c.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            let e = io::Error::last_os_error();
            // No /proc: the file had no name and goes with its descriptor.
            Err(
                if e.raw_os_error() == Some(libc::ENOENT) && !Path::new("/proc/self").exists() {
                    io::Error::new(io::ErrorKind::Unsupported, e)
                } else {
                    e
                },
            )
        }
    })?;
    Ok(file)
}
