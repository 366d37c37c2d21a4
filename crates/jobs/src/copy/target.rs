//! The destination side of a copy: metadata, and leftovers of interrupted runs (files are
//! put in place through [`AtomicFile`](crate::AtomicFile)).

use std::fs::File;
use std::io;
use std::path::Path;

use crate::destructive;
use crate::stat::{NodeKind, Stat};
use seekless_core::Error;
use seekless_sys as os;

/// Removes the temporaries that runs which ended (killed, a power cut) left in `dir`.
/// Returns how many.
pub fn remove_leftovers(dir: &Path) -> u64 {
    destructive::remove_dead_temps(dir, |_| true).len() as u64
}

/// Gives the file at `path` (open as `file`, if it is a regular file) the source's owner
/// (when root), mode and times. Owner first: `chown` clears set-id bits.
pub fn apply(path: &Path, file: Option<&File>, st: &Stat, as_root: bool) -> io::Result<()> {
    if as_root {
        os::set_owner(path, file, st.uid as u32, st.gid as u32)?;
    }
    if st.kind != NodeKind::Symlink {
        os::set_mode(path, file, st.mode)?;
    }
    os::set_times(path, file, st.atime, st.mtime)
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
        Err(e) if os::is_unsupported(&e) => return Ok(false),
        Err(e) => return Err(Error::io(dst, e)),
    };
    want.retain(|(name, _)| !is_alias(name));
    have.retain(|(name, _)| !is_alias(name));
    let mut changed = false;
    for (name, _) in &have {
        if !want.iter().any(|(n, _)| n == name) {
            match os::remove_xattr(dst, name) {
                Ok(()) => changed = true,
                Err(e) if os::is_unsupported(&e) => return Ok(changed),
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
            Err(e) if os::is_unsupported(&e) => return Ok(changed),
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
