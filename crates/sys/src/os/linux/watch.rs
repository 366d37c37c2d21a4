//! Linux: directories watched by inotify, one watch per directory (bounded by the user's
//! `fs.inotify.max_user_watches`), and the mount table watched by polling
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

/// Directories watched for changes of their entries.
pub struct DirWatch {
    fd: OwnedFd,
    mounts: Option<File>,
    by_wd: HashMap<i32, PathBuf>,
    by_path: HashMap<PathBuf, i32>,
    buf: Vec<u8>,
}

impl DirWatch {
    /// A watch of no directory yet.
    pub fn new() -> io::Result<DirWatch> {
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
        })
    }

    /// Watches `dir` (not its subdirectories). The error of a watch limit reached is
    /// `ErrorKind::QuotaExceeded` ([`crate::watch_limit`] says the limit).
    pub fn add(&mut self, dir: &Path) -> io::Result<()> {
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
        self.by_path.len()
    }

    /// Whether no directory is watched.
    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
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
            // Read to the end: the next change marks it again.
            if let Some(f) = &mut self.mounts {
                use std::io::Seek;
                let _ = f.seek(io::SeekFrom::Start(0));
                let _ = io::copy(f, &mut io::sink());
            }
        }
        if fds[0].revents & libc::POLLIN != 0 {
            self.read_events(out)?;
        }
        Ok(())
    }

    fn read_events(&mut self, out: &mut Vec<WatchEvent>) -> io::Result<()> {
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
                    io::ErrorKind::WouldBlock => Ok(()),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            let n = n as usize;
            if n == 0 {
                return Ok(());
            }
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
        let mut w = DirWatch::new().unwrap();
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
        let mut w = DirWatch::new().unwrap();
        w.add(&a).unwrap();
        std::fs::remove_dir(&a).unwrap();
        let got = drain(&mut w);
        assert!(
            got.iter()
                .any(|e| matches!(e, WatchEvent::Unwatched(p) if p == &a)),
            "{got:?}"
        );
    }
}
