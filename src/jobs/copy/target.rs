//! The destination side of a copy: metadata, and leftovers of interrupted runs (files are
//! put in place through [`AtomicFile`](crate::AtomicFile)).

use std::fs::{self, File};
use std::io;
use std::path::Path;

use crate::atomic::is_temp;
use crate::jobs::stat::{NodeKind, Stat};
use crate::os;

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
