//! Removing trees (`copy --delete`): never across a mount point, never a source or a
//! directory holding one, a directory only once everything in it is gone.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::evidence::Clearance;
use crate::temp::{TempState, is_temp, temp_state};
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_sys as os;

/// Removes what is under the directory `dest`, the copy of the directory `source`, but
/// neither in `wanted` nor shielded by `clearance` (`copy --delete`). Returns how many
/// entries were removed (a directory with its contents counts once); what could not be
/// removed is reported and counted in `failed`.
///
/// A `source` that is an empty directory removes nothing from a `dest` that has entries
/// (reported, counted in `failed`) unless `empty_source_allowed`: a drive that is not
/// mounted leaves an empty directory where its files were, and a backup is not to be
/// emptied because of it.
pub(crate) fn remove_extra(
    source: &Path,
    empty_source_allowed: bool,
    dest: &Path,
    wanted: &HashSet<PathBuf>,
    clearance: &Clearance,
    reporter: &dyn Reporter,
    failed: &mut u64,
) -> u64 {
    if clearance.shields(dest) {
        return 0;
    }
    if !empty_source_allowed && is_empty_dir(source) && !is_empty_dir(dest) {
        *failed += 1;
        reporter.error(&Error::io(
            dest,
            io::Error::other(format!(
                "nothing deleted: the source {} is an empty directory (a drive that is not \
                 mounted?); --allow-empty-source deletes all the same",
                source.display()
            )),
        ));
        return 0;
    }
    // Everything removed is on the destination's own mount.
    let mount = match Lies::at(dest) {
        Ok(mount) => mount,
        Err(e) => {
            *failed += 1;
            reporter.error(&Error::io(dest, e));
            return 0;
        }
    };
    let mut removed = 0;
    let mut stack = vec![dest.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let meta = match os::symlink_metadata(&dir) {
            Ok(m) => m,
            Err(e) => {
                *failed += 1;
                reporter.error(&Error::io(&dir, e));
                continue;
            }
        };
        // Another mount's contents are its own: never looked into (`--delete` must not
        // empty a filesystem, or a bind-mounted folder, mounted inside the destination).
        if dir != dest
            && let Err(e) = on_mount(&dir, &meta, mount, "nothing deleted under it")
        {
            *failed += 1;
            reporter.error(&e);
            continue;
        }
        // The contents of a source are the source's: never looked into.
        if clearance.is_source(&dir, &meta) {
            reporter.warning(
                Some(&dir),
                "nothing deleted here: it is a source of this copy",
            );
            continue;
        }
        let entries = match os::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                *failed += 1;
                reporter.error(&Error::io(&dir, e));
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    *failed += 1;
                    reporter.error(&Error::io(&dir, e));
                    break;
                }
            };
            // Not `entry.path()`: a long directory is listed through a short stand-in name.
            let path = dir.join(entry.file_name());
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if clearance.shields(&path) {
                continue;
            }
            if wanted.contains(&path) || clearance.leads_to_shield(&path) {
                if is_dir {
                    stack.push(path);
                }
                continue;
            }
            // Another run's temporary that may be alive is its own, not an extra entry.
            if is_temp(&entry.file_name()) && !matches!(temp_state(&path), TempState::Dead(_)) {
                continue;
            }
            match remove_tree(&path, mount, clearance) {
                Ok(()) => removed += 1,
                Err(e) => {
                    *failed += 1;
                    reporter.error(&e);
                }
            }
        }
    }
    removed
}

/// The folder on the way to `path` that is a symbolic link now, if one is: a path through
/// it leads elsewhere than the one recorded.
pub fn through_a_link(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .find(|dir| os::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()))
}

/// Whether `dir` is a directory that lists no entry (not one that cannot be listed).
pub(super) fn is_empty_dir(dir: &Path) -> bool {
    os::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// Where an entry lies, for a removal: its mount ([`os::mount_id`], which tells a bind
/// mount of the same filesystem apart) and its filesystem (the device number: a btrfs
/// subvolume has one of its own, on its parent's mount). A removal stays where the tree
/// it belongs to lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lies {
    mount: u64,
    dev: u64,
}

impl Lies {
    /// Where `path` lies (not following a link).
    pub fn at(path: &Path) -> io::Result<Lies> {
        Lies::of(path, &os::symlink_metadata(path)?)
    }

    /// Where `path`, whose metadata is `meta`, lies (one `statx` more).
    pub fn of(path: &Path, meta: &fs::Metadata) -> io::Result<Lies> {
        let mount = os::mount_id(path)?;
        let dev = os::file_id(path, None, meta)?.dev;
        Ok(Lies { mount, dev })
    }
}

/// Fails, naming `path` (whose metadata is `meta`), unless `path` lies where `mount` says
/// (so it is not a mount point of another filesystem, nor a bind mount, nor a btrfs
/// subvolume, nor under one): `what` says what was kept.
pub(super) fn on_mount(
    path: &Path,
    meta: &fs::Metadata,
    mount: Lies,
    what: &str,
) -> Result<(), Error> {
    let here = Lies::of(path, meta).map_err(|e| Error::io(path, e))?;
    if here == mount {
        return Ok(());
    }
    Err(Error::io(
        path,
        io::Error::other(format!(
            "{what}: a filesystem is mounted here, or another begins here (a btrfs \
             subvolume): a mount point is never removed or emptied"
        )),
    ))
}

/// Removes `path` and, if it is a directory, everything in it, all of it where `mount`
/// says (where the tree it belongs to lies), sparing what `clearance` spares. Stops at
/// the first entry it may not or cannot remove, and says which.
pub(super) fn remove_tree(path: &Path, mount: Lies, clearance: &Clearance) -> Result<(), Error> {
    let meta = os::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    remove_tree_on(path, meta, mount, clearance)
}

pub(super) fn remove_tree_on(
    path: &Path,
    meta: fs::Metadata,
    mount: Lies,
    clearance: &Clearance,
) -> Result<(), Error> {
    let kept = |why: String| Error::io(path, io::Error::other(format!("not deleted: {why}")));
    if let Some(why) = clearance.spares(path, &meta) {
        return Err(kept(why.into()));
    }
    if path.file_name().is_some_and(is_temp) && !matches!(temp_state(path), TempState::Dead(_)) {
        return Err(kept(
            "it is the temporary of a run that may be alive".into(),
        ));
    }
    // A file can be a mount point too (a bind mount of one file).
    on_mount(path, &meta, mount, "not deleted")?;
    if !meta.is_dir() {
        // The one place a copy's extra file is removed.
        #[allow(clippy::disallowed_methods)]
        return os::with_path(path, |p| fs::remove_file(p)).map_err(|e| Error::io(path, e));
    }
    let entries = os::read_dir(path).map_err(|e| Error::io(path, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(path, e))?;
        let child = path.join(entry.file_name());
        let meta = os::symlink_metadata(&child).map_err(|e| Error::io(&child, e))?;
        remove_tree_on(&child, meta, mount, clearance)?;
    }
    // The one place a copy's extra directory is removed, once empty.
    #[allow(clippy::disallowed_methods)]
    os::with_path(path, |p| fs::remove_dir(p)).map_err(|e| Error::io(path, e))
}
