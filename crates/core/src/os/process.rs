//! What this process may do to a file, and who holds a lock: for replacing a file the way
//! a program writing it in place would be allowed to, and for naming the run that holds a
//! destination.

use std::io;
use std::path::Path;

/// Whether this process could open the existing file `path` for writing (its effective
/// ids, as `open` would judge: `faccessat(…, W_OK, AT_EACCESS)`, which also honours ACLs,
/// read-only mounts and immutable files). `Ok` for a path that does not exist.
#[cfg(unix)]
pub fn check_writable(path: &Path) -> io::Result<()> {
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
pub fn check_writable(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.permissions().readonly() => {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        }
        _ => Ok(()),
    }
}

/// Whether process `pid` exists here (`kill(pid, 0)` succeeds, or fails only for want of
/// permission). Anything unclear (pid 0, a number beyond `pid_t`) counts as running.
#[cfg(unix)]
pub fn process_exists(pid: u32) -> bool {
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

/// Elsewhere every process counts as running.
#[cfg(not(unix))]
pub fn process_exists(_pid: u32) -> bool {
    true
}

/// Whether a file's locks are mandatory here (Windows): a byte range another handle has
/// locked cannot be read through this one. Elsewhere (Unix) locks are advisory.
pub const MANDATORY_LOCKS: bool = cfg!(not(unix));

/// This process's standard output as a file of its own (a duplicate of descriptor 1), if
/// `path` names the same file: an output named `/dev/stdout` (or the file it was
/// redirected to) is written through the descriptor the shell gave, so its offset and
/// append mode hold.
#[cfg(unix)]
pub fn stdout_if_same(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: fd 1 is borrowed for the duration of this call only, never closed here.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(1) };
    let stdout = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let (a, b) = (stdout.metadata().ok()?, std::fs::metadata(path).ok()?);
    (a.dev() == b.dev() && a.ino() == b.ino()).then_some(stdout)
}

/// Who holds an `flock` lock on `path`, as far as the system says (Linux: `/proc/locks`
/// gives the process, `/proc/PID/cmdline` its command): "process PID (COMMAND)".
#[cfg(target_os = "linux")]
pub fn lock_holder(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let id = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid: u32 = locks.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 7785 fe:00:246951 0 EOF"
        (f.len() >= 6 && f[1] == "FLOCK" && f[5] == id)
            .then(|| f[4].parse().ok())
            .flatten()
    })?;
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|c| {
            c.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|c| !c.is_empty());
    Some(match command {
        Some(c) => format!("process {pid} ({c})"),
        None => format!("process {pid}"),
    })
}

#[cfg(not(target_os = "linux"))]
pub fn lock_holder(_path: &Path) -> Option<String> {
    None
}
