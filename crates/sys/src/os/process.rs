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

/// Elsewhere an output is always opened by its name.
#[cfg(not(unix))]
pub fn stdout_if_same(_path: &Path) -> Option<std::fs::File> {
    None
}

/// The kind of a lock `/proc/locks` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// `flock`: seekless's own locks (destinations, temporaries, journals).
    Flock,
    /// POSIX (`fcntl`) record locks: SQLite's.
    Posix,
}

/// One lock held (not waited for) on a file, as the system lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldLock {
    /// `flock` or POSIX.
    pub kind: LockKind,
    /// A write (exclusive) lock.
    pub write: bool,
    /// The process holding it.
    pub pid: u32,
    /// The locked file's inode number.
    pub ino: u64,
    /// Where a POSIX lock's range starts ("0" for a whole-file `flock`).
    pub start: String,
}

/// The locks held on the file `path` (compared by inode number: the device `/proc/locks`
/// gives is the superblock's, which is not `st_dev` on btrfs), by processes other than
/// this one. Linux only (elsewhere: none). `/proc/locks` is a listing read in pieces, and a
/// lock taken or dropped elsewhere while it is read can hide another one for that read,
/// so it is read again (three times at most) while nothing is found.
pub fn locks_on(path: &Path) -> Vec<HeldLock> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(ino) = std::fs::metadata(path).map(|m| m.ino()) else {
            return Vec::new();
        };
        for _ in 0..3 {
            let Ok(text) = std::fs::read_to_string("/proc/locks") else {
                return Vec::new();
            };
            let found: Vec<HeldLock> = text
                .lines()
                .filter_map(parse_lock_line)
                .filter(|l| l.ino == ino)
                .collect();
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Vec::new()
    }
}

/// One line of `/proc/locks` ("1: FLOCK  ADVISORY  WRITE 7785 fe:00:246951 0 EOF"), if it
/// is a lock held (a blocked waiter's line has "->" before its kind).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_lock_line(line: &str) -> Option<HeldLock> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let kind = match *f.get(1)? {
        "FLOCK" => LockKind::Flock,
        "POSIX" => LockKind::Posix,
        _ => return None,
    };
    Some(HeldLock {
        kind,
        write: *f.get(3)? == "WRITE",
        pid: f.get(4)?.parse().ok()?,
        ino: f.get(5)?.rsplit(':').next()?.parse().ok()?,
        start: f.get(6)?.to_string(),
    })
}

/// Process `pid`'s command line, its arguments joined by spaces on one line and cut at
/// 200 characters, where the system says (Linux: `/proc/PID/cmdline`).
pub fn command_of(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let text = String::from_utf8_lossy(&cmdline).replace(|c: char| c.is_control(), " ");
    let mut command = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if command.chars().count() > 200 {
        command = command.chars().take(200).collect::<String>() + "…";
    }
    (!command.is_empty()).then_some(command)
}

/// Who holds an `flock` lock on `path`, as far as the system says: "process PID
/// (COMMAND)".
pub fn lock_holder(path: &Path) -> Option<String> {
    let pid = locks_on(path)
        .into_iter()
        .find(|l| l.kind == LockKind::Flock)?
        .pid;
    Some(match command_of(pid) {
        Some(c) => format!("process {pid} ({c})"),
        None => format!("process {pid}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_proc_locks_are_read_as_held_locks_and_waiters_are_not() {
        let flock = parse_lock_line("1: FLOCK  ADVISORY  WRITE 7785 fe:00:246951 0 EOF").unwrap();
        assert_eq!(
            flock,
            HeldLock {
                kind: LockKind::Flock,
                write: true,
                pid: 7785,
                ino: 246951,
                start: "0".into()
            }
        );
        let posix = parse_lock_line("2: POSIX  ADVISORY  READ 12 00:2d:77 120 120").unwrap();
        assert_eq!(
            (posix.kind, posix.write, posix.start.as_str()),
            (LockKind::Posix, false, "120")
        );
        assert_eq!(
            parse_lock_line("2: -> FLOCK  ADVISORY  WRITE 7786 fe:00:246951 0 EOF"),
            None
        );
        assert_eq!(
            parse_lock_line("3: OFDLCK ADVISORY  WRITE -1 fe:00:5 0 EOF"),
            None
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_lock_another_process_holds_is_named_with_its_command() {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("held");
        std::fs::write(&file, b"").unwrap();
        // flock(1) holds the lock while its command (reading its stdin) runs.
        // util-linux, on every Linux this runs on: never a silent skip.
        let mut child = Command::new("flock")
            .arg("-x")
            .arg(&file)
            .args(["sh", "-c", "echo locked; cat >/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("flock(1) of util-linux");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        let held = lock_holder(&file);
        drop(child.stdin.take());
        child.wait().unwrap();
        let held = held.expect("the holder is found");
        assert!(
            held.starts_with(&format!("process {} (flock -x ", child.id())),
            "{held}"
        );
        assert_eq!(
            lock_holder(&std::env::temp_dir()),
            None,
            "nobody locks the temporary folder"
        );
    }
}
