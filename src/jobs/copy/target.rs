//! The destination side of a copy: temporary names, putting files in place atomically,
//! metadata, leftovers of interrupted runs.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::jobs::stat::{NodeKind, Stat};
use crate::os;

/// What marks a temporary: `.NAME.seekless-tmp-PID-N`, in the directory of NAME.
const TEMP_MARK: &str = ".seekless-tmp-";

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Longest file name most filesystems take (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// A fresh temporary name beside `dest`: `.NAME.seekless-tmp-PID-N`, NAME cut short where
/// the whole would be longer than a file name may be.
pub fn temp_beside(dest: &Path) -> PathBuf {
    let name = dest.file_name().unwrap_or_default();
    let suffix = format!(
        "{TEMP_MARK}{}-{}",
        std::process::id(),
        NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
    );
    let mut temp = std::ffi::OsString::from(".");
    temp.push(shortened(name, NAME_MAX - 1 - suffix.len()));
    temp.push(suffix);
    dest.with_file_name(temp)
}

/// `name`, cut to at most `max` bytes (Unix: bytes; elsewhere names are left whole).
fn shortened(name: &std::ffi::OsStr, max: usize) -> std::ffi::OsString {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = name.as_bytes();
        std::ffi::OsStr::from_bytes(&bytes[..bytes.len().min(max)]).to_os_string()
    }
    #[cfg(not(unix))]
    {
        let _ = max;
        name.to_os_string()
    }
}

/// Whether `name` is one of our temporaries (from any run).
pub fn is_temp(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    let Some(at) = name.rfind(TEMP_MARK) else {
        return false;
    };
    let tail = &name[at + TEMP_MARK.len()..];
    name.starts_with('.')
        && !tail.is_empty()
        && tail
            .split('-')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Removes temporaries an interrupted run left in `dir`. Returns how many.
pub fn remove_leftovers(dir: &Path) -> u64 {
    let Ok(entries) = os::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if is_temp(&entry.file_name()) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// A file being written under a temporary name; removed when dropped unless committed.
pub struct TempFile {
    pub path: PathBuf,
    pub file: Option<File>,
}

impl TempFile {
    pub fn create(dest: &Path) -> io::Result<TempFile> {
        let path = temp_beside(dest);
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let file = opts.open(&path)?;
        Ok(TempFile {
            path,
            file: Some(file),
        })
    }

    pub fn file(&self) -> &File {
        self.file.as_ref().expect("open until committed")
    }

    /// Renames the file to `dest`, replacing what is there.
    pub fn commit(mut self, dest: &Path) -> io::Result<()> {
        drop(self.file.take());
        fs::rename(&self.path, dest)?;
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Gives the file at `path` (open as `file`, if it is a regular file) the source's owner
/// (when root), mode and times. Owner first: `chown` clears set-id bits.
pub fn apply(path: &Path, file: Option<&File>, st: &Stat, as_root: bool) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if as_root {
            let (uid, gid) = (st.uid as u32, st.gid as u32);
            match file {
                Some(f) => std::os::unix::fs::fchown(f, Some(uid), Some(gid))?,
                None => std::os::unix::fs::lchown(path, Some(uid), Some(gid))?,
            }
        }
        if st.kind != NodeKind::Symlink {
            let perms = fs::Permissions::from_mode(st.mode);
            match file {
                Some(f) => f.set_permissions(perms)?,
                None => fs::set_permissions(path, perms)?,
            }
        }
        let ns = |(s, n): (i64, u32)| (s, i64::from(n));
        os::set_times_nofollow(path, ns(st.atime), ns(st.mtime))
    }
    #[cfg(not(unix))]
    {
        let _ = (as_root, st.kind == NodeKind::Symlink);
        let to_time = |(s, n): (i64, u32)| {
            std::time::UNIX_EPOCH + std::time::Duration::new(s.max(0) as u64, n)
        };
        let times = fs::FileTimes::new()
            .set_accessed(to_time(st.atime))
            .set_modified(to_time(st.mtime));
        match file {
            Some(f) => f.set_times(times),
            None => Ok(()),
        }
    }
}

/// Copies the extended attributes of `src` to `dst`; a destination that has none to
/// offer (`ENOTSUP`) is no error.
pub fn copy_xattrs(src: &Path, dst: &Path) -> io::Result<()> {
    for (name, value) in os::xattrs(src)? {
        match os::set_xattr(dst, &name, &value) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Unsupported => return Ok(()),
            #[cfg(unix)]
            Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_are_recognised_by_name() {
        let t = temp_beside(Path::new("/x/photo.jpg"));
        assert!(is_temp(t.file_name().unwrap()), "{t:?}");
        for not in [
            "photo.jpg",
            ".photo.jpg",
            ".a.seekless-tmp-",
            ".a.seekless-tmp-x1",
            "a.seekless-tmp-1-2",
        ] {
            assert!(!is_temp(not.as_ref()), "{not}");
        }
        assert!(is_temp(".a.seekless-tmp-12".as_ref()));
        let long = "x".repeat(255);
        let t = temp_beside(&Path::new("/d").join(&long));
        let name = t.file_name().unwrap();
        assert!(is_temp(name), "{name:?}");
        // Unix names are bytes and are cut to fit; elsewhere they are left whole.
        #[cfg(unix)]
        assert!(name.len() <= 255, "{name:?}");
    }
}
