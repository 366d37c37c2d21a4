//! What this process may do to a file, and whether another process still runs: for
//! replacing a file the way a program writing it in place would be allowed to, and for
//! telling a killed run's leftovers from a running one's files.

use std::io;
use std::path::Path;

/// Whether this process could open the existing file `path` for writing (its effective
/// ids, as `open` would judge: `faccessat(…, W_OK, AT_EACCESS)`, which also honours ACLs,
/// read-only mounts and immutable files). `Ok` for a path that does not exist.
#[cfg(unix)]
pub(crate) fn check_writable(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    // SAFETY: a NUL-terminated path that outlives the call; no other pointers.
    let rc = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            libc::W_OK,
            libc::AT_EACCESS,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    match io::Error::last_os_error() {
        e if e.kind() == io::ErrorKind::NotFound => Ok(()),
        e => Err(e),
    }
}

/// Whether `path` may be written: a file marked read-only may not (Windows).
#[cfg(not(unix))]
pub(crate) fn check_writable(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.permissions().readonly() => {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        }
        _ => Ok(()),
    }
}

/// Whether process `pid` exists (`kill(pid, 0)` succeeds, or fails only for want of
/// permission). Anything unclear (pid 0, a number beyond `pid_t`) counts as running.
#[cfg(unix)]
pub(crate) fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 sends nothing; it only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Elsewhere every process counts as running: nothing is ever taken for a leftover.
#[cfg(not(unix))]
pub(crate) fn process_exists(_pid: u32) -> bool {
    true
}

/// Whether a file's locks are mandatory here (Windows): a byte range another handle has
/// locked cannot be read through this one. Elsewhere (Unix) locks are advisory.
pub(crate) const MANDATORY_LOCKS: bool = cfg!(not(unix));
