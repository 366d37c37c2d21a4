//! The destination side of a copy: metadata, and leftovers of interrupted runs (files are
//! put in place through [`AtomicFile`](crate::AtomicFile)).

use std::fs::{self, File};
use std::io;
use std::path::Path;

use crate::atomic::is_temp;
use crate::error::Error;
use crate::jobs::stat::{NodeKind, Stat};
use crate::os;

/// Removes temporaries an interrupted run left in `dir`. Returns how many.
pub fn remove_leftovers(dir: &Path) -> u64 {
    let Ok(entries) = os::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if is_temp(&entry.file_name())
            && os::with_path(&dir.join(entry.file_name()), |p| fs::remove_file(p)).is_ok()
        {
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
                None => {
                    os::with_path(path, |p| std::os::unix::fs::lchown(p, Some(uid), Some(gid)))?
                }
            }
        }
        if st.kind != NodeKind::Symlink {
            let perms = fs::Permissions::from_mode(st.mode);
            match file {
                Some(f) => f.set_permissions(perms)?,
                None => os::with_path(path, |p| fs::set_permissions(p, perms))?,
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

/// Makes the extended attributes of `dst` (ACLs included: they are the `system.posix_acl_*`
/// attributes) those of `src`: missing ones set, different ones replaced, ones `src` does
/// not have removed (a revoked access grant must not survive in the copy). A destination
/// that has none to offer (`ENOTSUP`) is no error. Returns whether anything changed; an
/// error names the side it happened on.
pub fn sync_xattrs(src: &Path, dst: &Path) -> Result<bool, Error> {
    let mut want = os::xattrs(src).map_err(|e| Error::io(src, e))?;
    let mut have = match os::xattrs(dst) {
        Ok(have) => have,
        Err(e) if unsupported(&e) => return Ok(false),
        Err(e) => return Err(Error::io(dst, e)),
    };
    want.retain(|(name, _)| !is_alias(name));
    have.retain(|(name, _)| !is_alias(name));
    let mut changed = false;
    for (name, _) in &have {
        if !want.iter().any(|(n, _)| n == name) {
            match os::remove_xattr(dst, name) {
                Ok(()) => changed = true,
                Err(e) if unsupported(&e) => return Ok(changed),
                Err(e) => return Err(Error::io(dst, e)),
            }
        }
    }
    for (name, value) in &want {
        if have.iter().any(|(n, v)| n == name && v == value) {
            continue;
        }
        match os::set_xattr(dst, name, value) {
            Ok(()) => changed = true,
            Err(e) if unsupported(&e) => return Ok(changed),
            Err(e) => return Err(Error::io(dst, e)),
        }
    }
    Ok(changed)
}

/// A filesystem's own name for what is copied under another: XFS shows root its ACLs a
/// second time as `trusted.SGI_ACL_FILE` / `trusted.SGI_ACL_DEFAULT`. They are the
/// `system.posix_acl_*` attributes themselves: never copied (a foreign filesystem would
/// keep them as plain data) and never removed (that removes the ACL).
fn is_alias(name: &[u8]) -> bool {
    name == b"trusted.SGI_ACL_FILE" || name == b"trusted.SGI_ACL_DEFAULT"
}

/// The destination cannot hold extended attributes (or this one).
fn unsupported(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ENOTSUP) {
        return true;
    }
    e.kind() == io::ErrorKind::Unsupported
}
