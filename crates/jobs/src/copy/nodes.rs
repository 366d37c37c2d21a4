//! The entries of a copy that are not file content: directories, symlinks, FIFOs and
//! device nodes, hard links, and the metadata of unchanged entries brought up to date.

use std::fs;
use std::io;
use std::path::Path;

use super::target;
use crate::destructive::{self, Durable, OwnTemp};
use crate::stat::{NodeKind, Stat};
use seekless_core::Error;
use seekless_core::Other;
use seekless_core::Reporter;
use seekless_sys as os;

/// Makes directory `dest` (its parents exist), the copy of the source directory `source`.
/// Returns whether it existed already. A non-directory in its place is replaced, given a
/// clearance.
pub(super) fn make_dir(
    dest: &Path,
    source: &Other,
    clearance: Option<&destructive::Clearance>,
) -> io::Result<bool> {
    match destructive::make_directory(dest, source, clearance) {
        Ok(made) => Ok(!made),
        Err(e)
            if e.kind() == io::ErrorKind::AlreadyExists
                && os::metadata(dest).is_ok_and(|m| m.is_dir()) =>
        {
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

/// What [`make_other`] did.
pub(super) enum Made {
    /// Made it.
    New,
    /// The same was there; its metadata was brought up to date.
    Refreshed,
    /// The same was there, as it should be (or nothing could be made).
    Same,
}

impl Made {
    fn refreshed(changed: bool) -> Made {
        if changed { Made::Refreshed } else { Made::Same }
    }
}

/// Recreates a symlink, FIFO or device node at `dest` (through a temporary name), unless
/// the same is there already (then its metadata is brought up to date).
pub(super) fn make_other(
    other: &Other,
    dest: &Path,
    as_root: bool,
    xattrs: bool,
    reporter: &dyn Reporter,
) -> Result<Made, Error> {
    let st = Stat::of(&other.metadata);
    let existing = os::symlink_metadata(dest).ok().map(|m| Stat::of(&m));
    let io = |e| Error::io(dest, e);
    let temp = match st.kind {
        NodeKind::Symlink => {
            let link = os::read_link(&other.path).map_err(|e| Error::io(&*other.path, e))?;
            if let Some(d) = existing.as_ref().filter(|d| d.kind == NodeKind::Symlink)
                && os::read_link(dest).is_ok_and(|t| t == link)
            {
                return refresh(&other.path, false, dest, d, as_root, xattrs).map(Made::refreshed);
            }
            OwnTemp::symlink(&link, dest).map_err(io)?
        }
        NodeKind::Fifo | NodeKind::CharDevice | NodeKind::BlockDevice => {
            if let Some(d) = existing
                .as_ref()
                .filter(|d| d.kind == st.kind && d.rdev == st.rdev)
            {
                return refresh(&other.path, false, dest, d, as_root, xattrs).map(Made::refreshed);
            }
            if st.kind != NodeKind::Fifo && !as_root {
                reporter.warning(Some(&other.path), "device node not copied (needs root)");
                return Ok(Made::Same);
            }
            let type_bits = match st.kind {
                NodeKind::Fifo => 0o010000,
                NodeKind::CharDevice => 0o020000,
                _ => 0o060000,
            };
            OwnTemp::node(dest, type_bits | st.mode, st.rdev).map_err(io)?
        }
        _ => {
            reporter.warning(Some(&other.path), "socket ignored");
            return Ok(Made::Same);
        }
    };
    // Dropped on an error, the temporary is removed.
    if xattrs {
        target::sync_xattrs(&other.path, temp.path())?;
    }
    target::apply(temp.path(), None, &st, as_root).map_err(io)?;
    temp.put_in_place(Durable::no_data()).map_err(io)?;
    Ok(Made::New)
}

/// Brings an unchanged destination entry `dest` (whose metadata is `d`) up to date with
/// its source (mode, owner as root, mtime and atime, extended attributes and ACLs, removals
/// included), as rsync does. `follow`: the source's own metadata through a symlink (a file
/// copied by `-L`). Returns whether anything changed; an error names the side it
/// happened on.
pub(super) fn refresh(
    src: &Path,
    follow: bool,
    dest: &Path,
    d: &Stat,
    as_root: bool,
    xattrs: bool,
) -> Result<bool, Error> {
    let s = Stat::of(
        &if follow {
            os::metadata(src)
        } else {
            os::symlink_metadata(src)
        }
        .map_err(|e| Error::io(src, e))?,
    );
    let mut changed = false;
    let owner = as_root && (s.uid, s.gid) != (d.uid, d.gid);
    let mode = s.kind != NodeKind::Symlink && s.mode != d.mode;
    if owner || mode || s.mtime != d.mtime {
        target::apply(dest, None, &s, as_root).map_err(|e| Error::io(dest, e))?;
        changed = true;
    }
    if xattrs && target::sync_xattrs(src, dest)? {
        changed = true;
    }
    Ok(changed)
}

/// Makes `dest` a hard link to `first` (through a temporary name), unless it is one.
pub(super) fn link_in_place(first: &Path, dest: &Path) -> io::Result<bool> {
    let a = os::metadata(first)?;
    if let Ok(b) = os::symlink_metadata(dest) {
        let id = |m: &fs::Metadata, p: &Path| os::file_id(p, None, m).ok();
        if id(&a, first).is_some() && id(&a, first) == id(&b, dest) {
            return Ok(false);
        }
    }
    OwnTemp::hard_link(first, dest)?.put_in_place(Durable::no_data())?;
    Ok(true)
}
