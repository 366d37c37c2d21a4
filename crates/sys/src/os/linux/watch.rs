//! Linux: with `CAP_SYS_ADMIN`, fanotify, one mark per filesystem (`FAN_MARK_FILESYSTEM`,
//! events reported by directory handle and name, `FAN_REPORT_DFID_NAME`: Linux 5.9), the
//! events kept for the directories added; else inotify, one watch per directory (bounded
//! by the user's `fs.inotify.max_user_watches`). The mount table is watched by polling
//! `/proc/self/mountinfo` (the kernel marks it readable with `POLLPRI` when a filesystem
//! is mounted or unmounted).

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::watch::{Change, WatchEvent};

/// What each directory is watched for: entries made, written and closed, removed,
/// renamed in and out, written to (a file still being written); the directory itself
/// removed, renamed, or its filesystem unmounted. No event for reads.
const MASK: u32 = libc::IN_CREATE
    | libc::IN_CLOSE_WRITE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW
    | libc::IN_EXCL_UNLINK;

/// What fanotify reports (`FAN_ONDIR`: of directories too).
const FAN_MASK: u64 = libc::FAN_CREATE
    | libc::FAN_DELETE
    | libc::FAN_MOVED_FROM
    | libc::FAN_MOVED_TO
    | libc::FAN_CLOSE_WRITE
    | libc::FAN_MODIFY
    | libc::FAN_ATTRIB
    | libc::FAN_ONDIR;

/// Directories watched for changes of their entries.
pub struct DirWatch {
    fd: OwnedFd,
    mounts: Option<File>,
    by_wd: HashMap<i32, PathBuf>,
    by_path: HashMap<PathBuf, i32>,
    buf: Vec<u8>,
    /// fanotify's state; `None` under inotify.
    fan: Option<Fan>,
}

/// fanotify: the filesystems marked (by device number: a directory on each, opened to
/// resolve handles only while resolving, so that nothing is held open on a filesystem
/// and it can be unmounted), and the directories whose entries are told.
struct Fan {
    marked: HashMap<u64, PathBuf>,
    /// The same directories by filesystem id (`statfs`'s `f_fsid`, as events carry it).
    by_fsid: HashMap<[u8; 8], PathBuf>,
    dirs: std::collections::HashSet<PathBuf>,
}

impl DirWatch {
    /// A watch of no directory yet: fanotify where it may be used (`CAP_SYS_ADMIN`,
    /// Linux 5.9), else inotify.
    pub fn new() -> io::Result<DirWatch> {
        let flags = libc::FAN_CLASS_NOTIF
            | libc::FAN_CLOEXEC
            | libc::FAN_NONBLOCK
            | libc::FAN_REPORT_DFID_NAME;
        // SAFETY: fanotify_init takes flags only; a negative result is checked.
        let fd = unsafe { libc::fanotify_init(flags, (libc::O_RDONLY | libc::O_CLOEXEC) as u32) };
        if fd >= 0 {
            // SAFETY: `fd` was just returned open and is owned by nobody else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            return Ok(DirWatch {
                fd,
                mounts: File::open("/proc/self/mountinfo").ok(),
                by_wd: HashMap::new(),
                by_path: HashMap::new(),
                buf: vec![0; 64 * 1024],
                fan: Some(Fan {
                    marked: HashMap::new(),
                    by_fsid: HashMap::new(),
                    dirs: Default::default(),
                }),
            });
        }
        Self::inotify()
    }

    /// A watch by inotify (one per directory), whatever fanotify could do.
    pub fn inotify() -> io::Result<DirWatch> {
        // SAFETY: inotify_init1 takes flags only; a negative result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned open by inotify_init1 and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(DirWatch {
            fd,
            mounts: File::open("/proc/self/mountinfo").ok(),
            by_wd: HashMap::new(),
            by_path: HashMap::new(),
            buf: vec![0; 64 * 1024],
            fan: None,
        })
    }

    /// `fanotify (N filesystems)` or `inotify (N directories)`.
    pub fn describe(&self) -> String {
        match &self.fan {
            Some(f) => {
                let n = f.marked.len();
                format!("fanotify ({n} filesystem{})", if n == 1 { "" } else { "s" })
            }
            None => {
                let n = self.by_path.len();
                format!("inotify ({n} director{})", if n == 1 { "y" } else { "ies" })
            }
        }
    }

    /// Watches `dir` (not its subdirectories). The error of a watch limit reached is
    /// `ErrorKind::QuotaExceeded` ([`crate::watch_limit`] says the limit).
    pub fn add(&mut self, dir: &Path) -> io::Result<()> {
        if let Some(fan) = &mut self.fan {
            use std::os::unix::fs::MetadataExt;
            let meta = crate::metadata(dir)?;
            if !meta.is_dir() {
                return Err(io::Error::from(io::ErrorKind::NotADirectory));
            }
            let dev = meta.dev();
            if let std::collections::hash_map::Entry::Vacant(v) = fan.marked.entry(dev) {
                let c = CString::new(dir.as_os_str().as_bytes())?;
                // SAFETY: `c` is NUL-terminated and lives across the call; the
                // descriptor is open.
                let r = unsafe {
                    libc::fanotify_mark(
                        self.fd.as_raw_fd(),
                        libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM,
                        FAN_MASK,
                        libc::AT_FDCWD,
                        c.as_ptr(),
                    )
                };
                if r != 0 {
                    let e = io::Error::last_os_error();
                    // Not allowed to mark a filesystem (no CAP_SYS_ADMIN: fanotify itself
                    // is open to everyone since Linux 5.13, its filesystem marks are not),
                    // or the filesystem cannot report handles: inotify instead, if
                    // nothing was marked yet.
                    if fan.marked.is_empty() && fan.dirs.is_empty() {
                        *self = DirWatch::inotify()?;
                        return self.add(dir);
                    }
                    return Err(e);
                }
                v.insert(dir.to_path_buf());
                if let Some(fsid) = fsid_of(dir) {
                    fan.by_fsid.insert(fsid, dir.to_path_buf());
                }
            }
            fan.dirs.insert(dir.to_path_buf());
            return Ok(());
        }
        let c = CString::new(dir.as_os_str().as_bytes())?;
        // SAFETY: `c` is NUL-terminated and lives across the call; the descriptor is open.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), MASK) };
        if wd < 0 {
            let e = io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::ENOSPC) {
                io::Error::new(io::ErrorKind::QuotaExceeded, e)
            } else {
                e
            });
        }
        // The same directory under another name gets the same descriptor: the last name.
        if let Some(old) = self.by_wd.insert(wd, dir.to_path_buf()) {
            self.by_path.remove(&old);
        }
        self.by_path.insert(dir.to_path_buf(), wd);
        Ok(())
    }

    /// Stops watching `dir` and every directory under it (moved out of the watched
    /// trees, or about to be watched under its new name).
    pub fn remove_tree(&mut self, dir: &Path) {
        if let Some(fan) = &mut self.fan {
            fan.dirs.retain(|p| !p.starts_with(dir));
            return;
        }
        let gone: Vec<PathBuf> = self
            .by_path
            .keys()
            .filter(|p| p.starts_with(dir))
            .cloned()
            .collect();
        for p in gone {
            if let Some(wd) = self.by_path.remove(&p) {
                self.by_wd.remove(&wd);
                // SAFETY: plain integers; a watch the kernel dropped already is EINVAL.
                unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
            }
        }
    }

    /// How many directories are watched.
    pub fn len(&self) -> usize {
        match &self.fan {
            Some(f) => f.dirs.len(),
            None => self.by_path.len(),
        }
    }

    /// Whether no directory is watched.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits up to `timeout` for changes, and appends those that came to `out`.
    pub fn wait(&mut self, timeout: Duration, out: &mut Vec<WatchEvent>) -> io::Result<()> {
        let mut fds = [
            libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.mounts.as_ref().map_or(-1, |f| f.as_raw_fd()),
                events: libc::POLLPRI,
                revents: 0,
            },
        ];
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is an array of two pollfd live across the call (a negative fd is
        // ignored by poll).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        if fds[1].revents & (libc::POLLPRI | libc::POLLERR) != 0 {
            out.push(WatchEvent::MountsChanged);
            // A filesystem mounted again is another superblock: marked afresh as the
            // caller adds its directories again. The filesystems' ids stay known, so
            // that the events of the meantime are still resolved (an edit in place that
            // put the mtime back is known by its event alone).
            if let Some(fan) = &mut self.fan {
                fan.marked.clear();
            }
            // Read to the end: the next change marks it again.
            if let Some(f) = &mut self.mounts {
                use std::io::Seek;
                let _ = f.seek(io::SeekFrom::Start(0));
                let _ = io::copy(f, &mut io::sink());
            }
        }
        if fds[0].revents & libc::POLLIN != 0 {
            if self.fan.is_some() {
                self.read_fan_events(out)?;
            } else {
                self.read_events(out)?;
            }
        }
        Ok(())
    }

    /// Reads what the descriptor has into `buf` (whole events only): the bytes read, or
    /// `None` when there is nothing more for now.
    fn read_some(&mut self) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: `buf` is valid for writes of its length for the call; the kernel
            // writes whole events only.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            return Ok((n > 0).then_some(n as usize));
        }
    }

    fn read_events(&mut self, out: &mut Vec<WatchEvent>) -> io::Result<()> {
        while let Some(n) = self.read_some()? {
            let header = std::mem::size_of::<libc::inotify_event>();
            let mut at = 0;
            while at + header <= n {
                // SAFETY: the kernel wrote a whole `inotify_event` at `at` (checked to fit
                // in the `n` bytes read); read unaligned, as the buffer is bytes.
                let ev: libc::inotify_event = unsafe {
                    std::ptr::read_unaligned(
                        self.buf.as_ptr().add(at).cast::<libc::inotify_event>(),
                    )
                };
                let name_end = (at + header + ev.len as usize).min(n);
                let raw = &self.buf[at + header..name_end];
                let name = raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())].to_vec();
                at = name_end;
                self.translate(&ev, &name, out);
            }
        }
        Ok(())
    }

    fn read_fan_events(&mut self, out: &mut Vec<WatchEvent>) -> io::Result<()> {
        while let Some(n) = self.read_some()? {
            for (mask, fsid, handle, name) in fan_events(&self.buf[..n]) {
                self.translate_fan(mask, fsid, &handle, &name, out);
            }
        }
        Ok(())
    }

    /// One fanotify event: the directory its handle names (resolved on a marked
    /// filesystem, and kept only if that directory was added), the entry's name.
    fn translate_fan(
        &mut self,
        mask: u64,
        fsid: [u8; 8],
        handle: &[u8],
        name: &[u8],
        out: &mut Vec<WatchEvent>,
    ) {
        let Some(fan) = &self.fan else { return };
        if mask & libc::FAN_Q_OVERFLOW != 0 {
            out.push(WatchEvent::Overflow);
            return;
        }
        let Some(dir) = fan
            .by_fsid
            .get(&fsid)
            .and_then(|on| crate::open_directory(on).ok())
            .and_then(|mount| resolve_handle(&mount, handle))
        else {
            return;
        };
        if !fan.dirs.contains(&dir) {
            return;
        }
        let is_dir = mask & libc::FAN_ONDIR != 0;
        // An event about the directory itself (no name, or "."): of its parent's entry.
        let path = if name.is_empty() || name == b"." {
            dir
        } else {
            dir.join(OsStr::from_bytes(name))
        };
        // fanotify merges the events of one entry not yet read into one: each is told,
        // in the order they can happen in.
        let changes = [
            (libc::FAN_CREATE, Change::Created),
            (libc::FAN_MODIFY, Change::Writing),
            (libc::FAN_CLOSE_WRITE, Change::Closed),
            (libc::FAN_ATTRIB, Change::Attributes),
            (libc::FAN_MOVED_FROM, Change::MovedFrom(0)),
            (libc::FAN_MOVED_TO, Change::MovedTo(0)),
            (libc::FAN_DELETE, Change::Removed),
        ];
        for (bit, change) in changes {
            if mask & bit != 0 {
                out.push(WatchEvent::Entry {
                    path: path.clone(),
                    is_dir,
                    change,
                });
            }
        }
    }

    fn translate(&mut self, ev: &libc::inotify_event, name: &[u8], out: &mut Vec<WatchEvent>) {
        if ev.mask & libc::IN_Q_OVERFLOW != 0 {
            out.push(WatchEvent::Overflow);
            return;
        }
        let Some(dir) = self.by_wd.get(&ev.wd).cloned() else {
            return;
        };
        if ev.mask & libc::IN_IGNORED != 0 {
            // The kernel dropped the watch (the directory removed, or unmounted).
            self.by_wd.remove(&ev.wd);
            if self.by_path.get(&dir) == Some(&ev.wd) {
                self.by_path.remove(&dir);
            }
            out.push(WatchEvent::Unwatched(dir));
            return;
        }
        if ev.mask & libc::IN_UNMOUNT != 0 {
            out.push(WatchEvent::Unmounted(dir));
            return;
        }
        if ev.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
            out.push(WatchEvent::Unwatched(dir));
            return;
        }
        let is_dir = ev.mask & libc::IN_ISDIR != 0;
        let change = if ev.mask & libc::IN_MODIFY != 0 {
            Change::Writing
        } else if ev.mask & libc::IN_CLOSE_WRITE != 0 {
            Change::Closed
        } else if ev.mask & libc::IN_CREATE != 0 {
            Change::Created
        } else if ev.mask & libc::IN_DELETE != 0 {
            Change::Removed
        } else if ev.mask & libc::IN_MOVED_FROM != 0 {
            Change::MovedFrom(ev.cookie)
        } else if ev.mask & libc::IN_MOVED_TO != 0 {
            Change::MovedTo(ev.cookie)
        } else if ev.mask & libc::IN_ATTRIB != 0 {
            Change::Attributes
        } else {
            return;
        };
        out.push(WatchEvent::Entry {
            path: dir.join(OsStr::from_bytes(name)),
            is_dir,
            change,
        });
    }
}

/// A filesystem's id as fanotify reports it (`statfs`'s `f_fsid`, 8 bytes).
fn fsid_of(dir: &Path) -> Option<[u8; 8]> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs is plain integers, for which all zeroes is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` a statfs buffer, both live for the call.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // SAFETY: `f_fsid` is two 32-bit integers (8 bytes, no padding), read as bytes.
    Some(unsafe { std::mem::transmute::<libc::fsid_t, [u8; 8]>(st.f_fsid) })
}

/// An event of a fanotify read: its mask, its filesystem's id, its directory's
/// `struct file_handle` (bytes: size, type, handle) and the entry's name.
type FanEvent = (u64, [u8; 8], Vec<u8>, Vec<u8>);

/// The events in a fanotify read (`FAN_REPORT_DFID_NAME`). Parses bounded by the bytes
/// read: a short or odd record ends the list.
fn fan_events(buf: &[u8]) -> Vec<FanEvent> {
    let meta = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut out = Vec::new();
    let mut at = 0;
    while at + meta <= buf.len() {
        // SAFETY: `meta` bytes are in `buf` at `at` (checked just above); read unaligned.
        let m: libc::fanotify_event_metadata =
            unsafe { std::ptr::read_unaligned(buf.as_ptr().add(at).cast()) };
        let len = m.event_len as usize;
        if len < meta || at + len > buf.len() {
            break;
        }
        if m.fd >= 0 {
            // Not expected in this mode; never leaked.
            // SAFETY: the kernel gave this process a descriptor it owns.
            drop(unsafe { OwnedFd::from_raw_fd(m.fd) });
        }
        let event = &buf[at..at + len];
        let mut info = m.metadata_len as usize;
        let mut found = ([0u8; 8], Vec::new(), Vec::new());
        while info + 4 <= event.len() {
            let (kind, ilen) = (
                event[info],
                u16::from_ne_bytes([event[info + 2], event[info + 3]]) as usize,
            );
            if ilen < 4 || info + ilen > event.len() {
                break;
            }
            // header (4), fsid (8), file_handle: handle_bytes (4), handle_type (4), bytes;
            // then the name, NUL-terminated.
            let rec = &event[info..info + ilen];
            if kind == libc::FAN_EVENT_INFO_TYPE_DFID_NAME && rec.len() >= 20 {
                let hbytes = u32::from_ne_bytes([rec[12], rec[13], rec[14], rec[15]]) as usize;
                if 20 + hbytes <= rec.len() {
                    let handle = rec[12..20 + hbytes].to_vec();
                    let rest = &rec[20 + hbytes..];
                    let name =
                        rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())].to_vec();
                    let mut fsid = [0u8; 8];
                    fsid.copy_from_slice(&rec[4..12]);
                    found = (fsid, handle, name);
                }
            }
            info += ilen;
        }
        if m.mask & libc::FAN_Q_OVERFLOW != 0 || !found.1.is_empty() {
            out.push((m.mask, found.0, found.1, found.2));
        }
        at += len;
    }
    out
}

/// The path of the directory `handle` (a `struct file_handle`'s bytes) names, opened
/// through `mount` (a directory on its filesystem).
fn resolve_handle(mount: &File, handle: &[u8]) -> Option<PathBuf> {
    // A `struct file_handle` in memory aligned for its header.
    let mut words = vec![0u32; handle.len().div_ceil(4) + 1];
    // SAFETY: `words` has at least `handle.len()` bytes; the copy does not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(
            handle.as_ptr(),
            words.as_mut_ptr().cast::<u8>(),
            handle.len(),
        )
    };
    // SAFETY: `words` holds a whole `struct file_handle` (its size field says how many
    // handle bytes follow, all present); the kernel only reads it. O_PATH opens nothing's
    // contents.
    let fd = unsafe {
        libc::open_by_handle_at(
            mount.as_raw_fd(),
            words.as_mut_ptr().cast(),
            libc::O_PATH | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

/// The user's inotify watch limit, if it can be read: the lower of
/// `fs.inotify.max_user_watches` and this user namespace's `user.max_inotify_watches`.
pub fn watch_limit() -> Option<u64> {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    [
        read("/proc/sys/fs/inotify/max_user_watches"),
        read("/proc/sys/user/max_inotify_watches"),
    ]
    .into_iter()
    .flatten()
    .min()
}

#[cfg(test)]
// Tests make and remove their own files; the rule that only the destructive owner removes or
// renames binds the product.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn drain(w: &mut DirWatch) -> Vec<WatchEvent> {
        let mut out = Vec::new();
        // The events of what was done before: already queued, so no wait is needed.
        w.wait(Duration::from_millis(0), &mut out).unwrap();
        out
    }

    #[test]
    fn entries_made_written_moved_and_removed_are_told_with_their_paths() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let mut w = DirWatch::inotify().unwrap();
        w.add(&a).unwrap();
        w.add(&b).unwrap();
        assert_eq!(w.len(), 2);
        std::fs::write(a.join("x.jpg"), b"1").unwrap();
        std::fs::rename(a.join("x.jpg"), b.join("y.jpg")).unwrap();
        std::fs::remove_file(b.join("y.jpg")).unwrap();
        let got = drain(&mut w);
        let entry = |path: &Path, c: fn(&Change) -> bool| {
            got.iter().any(|e| {
                matches!(e, WatchEvent::Entry { path: p, is_dir: false, change }
                    if p == path && c(change))
            })
        };
        assert!(
            entry(&a.join("x.jpg"), |c| *c == Change::Created),
            "{got:?}"
        );
        assert!(entry(&a.join("x.jpg"), |c| *c == Change::Closed), "{got:?}");
        assert!(
            entry(&a.join("x.jpg"), |c| matches!(c, Change::MovedFrom(_))),
            "{got:?}"
        );
        assert!(
            entry(&b.join("y.jpg"), |c| matches!(c, Change::MovedTo(_))),
            "{got:?}"
        );
        assert!(
            entry(&b.join("y.jpg"), |c| *c == Change::Removed),
            "{got:?}"
        );
        // The two halves of a rename share a cookie.
        let cookies: Vec<u32> = got
            .iter()
            .filter_map(|e| match e {
                WatchEvent::Entry {
                    change: Change::MovedFrom(c) | Change::MovedTo(c),
                    ..
                } => Some(*c),
                _ => None,
            })
            .collect();
        assert_eq!(cookies.len(), 2);
        assert_eq!(cookies[0], cookies[1]);

        w.remove_tree(t.path());
        assert!(w.is_empty());
        std::fs::write(a.join("z.jpg"), b"1").unwrap();
        let got = drain(&mut w);
        assert!(
            !got.iter().any(|e| matches!(e, WatchEvent::Entry { .. })),
            "{got:?}"
        );
    }

    #[test]
    fn a_watched_directory_removed_is_told() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let mut w = DirWatch::inotify().unwrap();
        w.add(&a).unwrap();
        std::fs::remove_dir(&a).unwrap();
        let got = drain(&mut w);
        assert!(
            got.iter()
                .any(|e| matches!(e, WatchEvent::Unwatched(p) if p == &a)),
            "{got:?}"
        );
    }

    #[test]
    fn fanotify_tells_the_entries_of_the_directories_added_and_no_others() {
        // fanotify needs CAP_SYS_ADMIN: as root (CI), else inotify is what `new` gives.
        let mut w = DirWatch::new().unwrap();
        if w.fan.is_none() {
            eprintln!("fanotify not available here (not root?): inotify used");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let (a, other) = (t.path().join("a"), t.path().join("other"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&other).unwrap();
        w.add(&a).unwrap();
        assert!(
            w.describe().starts_with("fanotify (1 filesystem"),
            "{}",
            w.describe()
        );
        std::fs::write(a.join("x.jpg"), b"1").unwrap();
        std::fs::write(other.join("y.jpg"), b"1").unwrap();
        std::fs::rename(a.join("x.jpg"), a.join("z.jpg")).unwrap();
        std::fs::create_dir(a.join("sub")).unwrap();
        let got = drain(&mut w);
        let a = std::fs::canonicalize(&a).unwrap();
        let has = |p: &Path, c: Change, d: bool| {
            got.iter().any(|e| {
                matches!(e, WatchEvent::Entry { path, is_dir, change }
                    if path == p && *change == c && *is_dir == d)
            })
        };
        assert!(has(&a.join("x.jpg"), Change::Created, false), "{got:?}");
        assert!(has(&a.join("x.jpg"), Change::Closed, false), "{got:?}");
        assert!(
            has(&a.join("x.jpg"), Change::MovedFrom(0), false),
            "{got:?}"
        );
        assert!(has(&a.join("z.jpg"), Change::MovedTo(0), false), "{got:?}");
        assert!(has(&a.join("sub"), Change::Created, true), "{got:?}");
        assert!(
            !got.iter()
                .any(|e| matches!(e, WatchEvent::Entry { path, .. } if path.starts_with(&other))),
            "a directory not added: {got:?}"
        );
        // Hostile buffers: never a panic.
        let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        for cut in [0, 1, 23, 24, 25, 100, 4096] {
            let _ = fan_events(&bytes[..cut]);
        }
    }
}
