//! Paths of any length. The kernel refuses a path of `PATH_MAX` (4096) bytes or more in
//! one system call, but a tree may be nested far deeper than that. A long path is opened a
//! piece at a time instead, each piece shorter than `PATH_MAX` and resolved relative to
//! the directory the previous piece led to (`openat`, as `find` and fts do), and what
//! remains is named through that directory's descriptor as `/proc/self/fd/N/REST`, a
//! short path every standard-library call accepts. Paths shorter than the limit, nearly
//! all of them, are used as they are, at no cost.

use std::borrow::Cow;
use std::ffi::{CString, OsStr};
use std::fs::{self, Metadata, ReadDir};
use std::io;
use std::ops::Deref;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Longest piece handed to the kernel in one call: below `PATH_MAX` with room for the
/// `/proc/self/fd/N/` prefix.
const PIECE: usize = 4000;

/// A path that system calls accept, standing for a possibly longer one. Keeps the
/// directory it is relative to open while it lives.
pub struct SysPath<'a> {
    path: Cow<'a, Path>,
    _dir: Option<OwnedFd>,
}

impl Deref for SysPath<'_> {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

/// `path` in a form the kernel accepts, whatever its length.
pub fn sys_path(path: &Path) -> io::Result<SysPath<'_>> {
    sys_path_with(path, PIECE)
}

fn sys_path_with(path: &Path, piece: usize) -> io::Result<SysPath<'_>> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() < piece {
        return Ok(SysPath {
            path: Cow::Borrowed(path),
            _dir: None,
        });
    }
    let mut dir: Option<OwnedFd> = None;
    let mut rest = bytes;
    while rest.len() >= piece {
        // Cut at the last separator that keeps the piece short enough. A name is at most
        // 255 bytes, so there is one unless the path is malformed.
        let cut = rest[..piece]
            .iter()
            .rposition(|&b| b == b'/')
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENAMETOOLONG))?;
        let head = if cut == 0 { &rest[..1] } else { &rest[..cut] };
        dir = Some(open_dir(dir.as_ref(), head)?);
        rest = &rest[cut + 1..];
        while let [b'/', tail @ ..] = rest {
            rest = tail;
        }
    }
    let Some(dir) = dir else {
        unreachable!("the loop ran at least once: the path was at least one piece long")
    };
    let mut short = format!("/proc/self/fd/{}/", fd_number(&dir)).into_bytes();
    short.extend_from_slice(rest);
    Ok(SysPath {
        path: Cow::Owned(PathBuf::from(OsStr::from_bytes(&short))),
        _dir: Some(dir),
    })
}

fn fd_number(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}

/// Opens directory `name` relative to `at` (the working directory when `None`) as a handle
/// for resolving names only (`O_PATH`: needs search, not read, permission).
fn open_dir(at: Option<&OwnedFd>, name: &[u8]) -> io::Result<OwnedFd> {
    open_dir_flags(at, name, 0)
}

/// [`open_dir`] with more `flags`.
fn open_dir_flags(at: Option<&OwnedFd>, name: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    let name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let at = at.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    // SAFETY: `name` is a NUL-terminated string that outlives the call, `at` is a
    // descriptor we hold open (or AT_FDCWD); openat does not retain either.
    let fd = unsafe {
        libc::openat(
            at,
            name.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | flags,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `path` with its folder reached through no symbolic link and held open: a symbolic link
/// anywhere on the way (`openat2` with `RESOLVE_NO_SYMLINKS`; a walk opening each folder
/// with `O_NOFOLLOW` where the kernel has no `openat2`, before 5.6, or for a path longer
/// than one call takes) is an error (`ELOOP`, or `ENOTDIR` from the walk), and the path
/// returned names the last component through that folder's descriptor
/// (`/proc/self/fd/N/NAME`), so that a folder renamed or replaced by a link after this
/// call does not take it elsewhere. The last component itself is not resolved.
pub fn pinned_no_links(path: &Path) -> io::Result<SysPath<'static>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let held = match open_dir_no_links(dir) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS | libc::EPERM | libc::ENAMETOOLONG)
            ) =>
        {
            walk_no_links(dir)?
        }
        other => other?,
    };
    let mut short = format!("/proc/self/fd/{}/", fd_number(&held)).into_bytes();
    short.extend_from_slice(name.as_bytes());
    Ok(SysPath {
        path: Cow::Owned(PathBuf::from(OsStr::from_bytes(&short))),
        _dir: Some(held),
    })
}

/// The directory `dir` opened (`O_PATH`) by `openat2` with `RESOLVE_NO_SYMLINKS`.
fn open_dir_no_links(dir: &Path) -> io::Result<OwnedFd> {
    let name = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // The kernel's `struct open_how` (libc's cannot be built: it is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: `name` is NUL-terminated and `how` an `open_how` of the size passed; both
    // outlive the call, which retains neither.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            name.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat2 returned a new descriptor that nothing else owns (it fits an i32).
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// [`open_dir_no_links`] by a walk: each folder opened relative to the one before with
/// `O_NOFOLLOW` (a link there fails, `ENOTDIR`).
fn walk_no_links(dir: &Path) -> io::Result<OwnedFd> {
    use std::path::Component;
    let mut at: Option<OwnedFd> = None;
    for part in dir.components() {
        let name: &[u8] = match part {
            Component::RootDir => b"/",
            Component::CurDir => b".",
            Component::ParentDir => b"..",
            Component::Normal(n) => n.as_bytes(),
            Component::Prefix(_) => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
        };
        at = Some(open_dir_flags(at.as_ref(), name, libc::O_NOFOLLOW)?);
    }
    match at {
        Some(fd) => Ok(fd),
        None => open_dir(None, b"."),
    }
}

/// Runs `op` on `path` in a form the kernel takes, whatever its length: for any call on
/// a path (`|p| fs::create_dir(p)`).
pub fn with_path<T>(path: &Path, op: impl FnOnce(&Path) -> io::Result<T>) -> io::Result<T> {
    op(&sys_path(path)?)
}

/// [`with_path`] for calls on two paths (`fs::rename`, `fs::hard_link`).
pub fn with_paths<T>(
    a: &Path,
    b: &Path,
    op: impl FnOnce(&Path, &Path) -> io::Result<T>,
) -> io::Result<T> {
    op(&sys_path(a)?, &sys_path(b)?)
}

/// [`fs::metadata`] for a path of any length.
pub fn metadata(path: &Path) -> io::Result<Metadata> {
    fs::metadata(&*sys_path(path)?)
}

/// [`fs::symlink_metadata`] for a path of any length.
pub fn symlink_metadata(path: &Path) -> io::Result<Metadata> {
    fs::symlink_metadata(&*sys_path(path)?)
}

/// Opens the directory at `path`, of any length, for reading.
pub fn open_directory(path: &Path) -> io::Result<fs::File> {
    fs::File::open(&*sys_path(path)?)
}

/// [`fs::read_dir`] for a path of any length (the listing holds its own descriptor).
pub fn read_dir(path: &Path) -> io::Result<ReadDir> {
    fs::read_dir(&*sys_path(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of directories nested deeper than PATH_MAX, each made relative to the last.
    fn deep_tree(root: &Path, levels: usize) -> PathBuf {
        let name = "d".repeat(200);
        use std::os::fd::AsRawFd;
        let mut at = open_dir(None, root.as_os_str().as_bytes()).unwrap();
        let mut path = root.to_path_buf();
        let c = CString::new(name.as_bytes()).unwrap();
        for _ in 0..levels {
            // SAFETY: `c` is NUL-terminated and `at` is an open directory.
            let rc = unsafe { libc::mkdirat(at.as_raw_fd(), c.as_ptr(), 0o755) };
            assert_eq!(rc, 0);
            at = open_dir(Some(&at), name.as_bytes()).unwrap();
            path.push(&name);
        }
        path
    }

    #[test]
    fn short_paths_are_used_as_they_are() {
        let p = Path::new("/usr/bin");
        assert_eq!(&*sys_path(p).unwrap(), p);
    }

    #[test]
    fn paths_longer_than_path_max_are_reached_piece_by_piece() {
        let t = tempfile::tempdir().unwrap();
        let deep = deep_tree(t.path(), 30); // ~6,000 bytes
        assert!(deep.as_os_str().len() > 4096);
        assert_eq!(
            fs::metadata(&deep).unwrap_err().raw_os_error(),
            Some(libc::ENAMETOOLONG),
            "the kernel refuses the whole path"
        );
        assert!(metadata(&deep).unwrap().is_dir());
        let file = deep.join("f");
        fs::write(&*sys_path(&file).unwrap(), b"bottom").unwrap();
        assert_eq!(fs::read(&*sys_path(&file).unwrap()).unwrap(), b"bottom");
        let names: Vec<_> = read_dir(&deep)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsStr::new("f")]);
        // Small pieces: each resolves from the directory the last one led to.
        let small = sys_path_with(&file, 300).unwrap();
        assert_eq!(fs::read(&*small).unwrap(), b"bottom");
        assert!(sys_path_with(Path::new("/"), 1).unwrap().is_dir());
    }

    #[test]
    fn a_pinned_path_refuses_a_link_on_the_way_and_stays_on_its_folder() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir_all(real.join("sub")).unwrap();
        std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
        // A link on the way, by openat2 and by the walk.
        for through in [t.path().join("link/sub/f"), t.path().join("link/f")] {
            let Err(e) = pinned_no_links(&through) else {
                panic!("{through:?}: not refused");
            };
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{through:?}: {e}");
            let Err(e) = walk_no_links(through.parent().unwrap()) else {
                panic!("{through:?}: not refused by the walk");
            };
            assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR), "{through:?}: {e}");
        }
        // The last component is not resolved: a link there is named, not followed.
        assert!(pinned_no_links(&t.path().join("link")).is_ok());
        assert!(walk_no_links(&real.join("sub")).is_ok());

        // Pinned, then its folder moved away and a link put in its place: the name still
        // leads into the folder that was there.
        let pinned = pinned_no_links(&real.join("sub/f")).unwrap();
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        #[allow(clippy::disallowed_methods)]
        fs::rename(real.join("sub"), t.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, real.join("sub")).unwrap();
        fs::write(&*pinned, b"x").unwrap();
        assert_eq!(fs::read(t.path().join("moved/f")).unwrap(), b"x");
        assert!(fs::read_dir(&elsewhere).unwrap().next().is_none());
    }
}
