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
    use std::os::fd::AsRawFd;
    let name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let at = at.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    // SAFETY: `name` is a NUL-terminated string that outlives the call, `at` is a
    // descriptor we hold open (or AT_FDCWD); openat does not retain either.
    let fd = unsafe {
        libc::openat(
            at,
            name.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
}
