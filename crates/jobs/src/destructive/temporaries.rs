//! Temporaries: this run's own (`OwnTemp`), made beside their destination and put in
//! place or removed; another run's, removed only once that run has provably ended.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::evidence::{Clearance, Durable};
use super::tree::{Lies, remove_tree};
use crate::temp::{TempState, is_temp, is_temp_of, temp_beside, temp_state};
use seekless_core::Error;
use seekless_sys as os;
use seekless_sys::{exchange_unsupported, rename_exchange};

/// A temporary this run made beside its destination, under a name only seekless makes. A
/// regular file is locked (`flock`) while its descriptor is open, so another run can tell
/// it is alive. Dropped without being put in place, it is removed.
#[derive(Debug)]
pub(crate) struct OwnTemp {
    path: PathBuf,
    dest: PathBuf,
    placed: bool,
}

impl OwnTemp {
    fn new(path: PathBuf, dest: &Path) -> OwnTemp {
        OwnTemp {
            path,
            dest: dest.to_path_buf(),
            placed: false,
        }
    }

    /// A new, empty regular file beside `dest` (created exclusively; `mode` where given,
    /// else the usual one for a new file), locked while the returned descriptor is open.
    /// Another run can see it unlocked for an instant after it is made; a caller in a
    /// destination no other run writes into (`copy`, under its [`DestinationLock`]) needs
    /// no more. [`create_file_locked`](Self::create_file_locked) closes that instant.
    pub(crate) fn create_file(dest: &Path, mode: Option<u32>) -> io::Result<(OwnTemp, File)> {
        let path = temp_name(dest)?;
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        if let Some(mode) = mode {
            os::set_create_mode(&mut opts, mode);
        }
        let file = os::with_path(&path, |t| opts.open(t))?;
        let temp = OwnTemp::new(path, dest);
        // The lock says "alive" to other runs. Where there are no locks (some network
        // filesystems) it cannot be taken; the temporary then never looks dead to anyone,
        // which only leaves it behind after a crash.
        let _ = file.try_lock();
        Ok((temp, file))
    }

    /// [`create_file`](Self::create_file), never seen unlocked by another run: where it can
    /// be (Linux) the file is made without a name (`O_TMPFILE`), locked, and only then
    /// linked under its name; where that cannot be done, as `create_file`. For outputs, where another run
    /// may be writing the same file at the same time.
    pub(crate) fn create_file_locked(
        dest: &Path,
        mode: Option<u32>,
    ) -> io::Result<(OwnTemp, File)> {
        let path = temp_name(dest)?;
        match os::create_locked_then_named(&path, mode.unwrap_or(0o666)) {
            Ok(file) => Ok((OwnTemp::new(path, dest), file)),
            Err(e) if os::is_unsupported(&e) => Self::create_file(dest, mode),
            Err(e) => Err(e),
        }
    }

    /// A symlink to `target` beside `dest`.
    pub(crate) fn symlink(target: &Path, dest: &Path) -> io::Result<OwnTemp> {
        let path = temp_beside(dest);
        os::with_path(&path, |t| os::make_symlink(target, t))?;
        Ok(OwnTemp::new(path, dest))
    }

    /// A FIFO or device node beside `dest` (`mode`: type and permission bits).
    pub(crate) fn node(dest: &Path, mode: u32, rdev: u64) -> io::Result<OwnTemp> {
        let path = temp_beside(dest);
        os::make_node(&path, mode, rdev)?;
        Ok(OwnTemp::new(path, dest))
    }

    /// A hard link to `first` beside `dest`.
    pub(crate) fn hard_link(first: &Path, dest: &Path) -> io::Result<OwnTemp> {
        Self::hard_link_named(first, temp_beside(dest), dest)
    }

    /// A hard link to `first` beside `dest`, under `path`, a name [`temp_beside`] gave
    /// for `dest` (recorded before the link is made: `dupes --act hardlink`'s journal).
    pub(crate) fn hard_link_named(first: &Path, path: PathBuf, dest: &Path) -> io::Result<OwnTemp> {
        if !is_temp_of(dest, path.file_name().unwrap_or_default()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a temporary name for this file",
            ));
        }
        os::with_paths(first, &path, |a, b| fs::hard_link(a, b))?;
        Ok(OwnTemp::new(path, dest))
    }

    /// The temporary name.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The final name.
    pub(crate) fn dest(&self) -> &Path {
        &self.dest
    }

    /// Renames the temporary over its destination. A directory there stays (the rename
    /// fails: see [`put_in_place_over_dir`](Self::put_in_place_over_dir)).
    pub(crate) fn put_in_place(mut self, _durable: Durable) -> io::Result<()> {
        // The one rename over a final name: of a complete temporary of ours.
        #[allow(clippy::disallowed_methods)]
        os::with_paths(&self.path, &self.dest, |a, b| fs::rename(a, b))?;
        self.placed = true;
        Ok(())
    }

    /// Puts the temporary in place over the file at its destination once `confirm`, shown
    /// the file it replaces, accepts it; a refusal leaves the destination's file where it
    /// is, and is the error. On Linux an atomic exchange (`renameat2(RENAME_EXCHANGE)`):
    /// the replaced file stays whole, under the temporary's name, until `confirm` has
    /// looked at it there, so what is removed is exactly what was confirmed; a refusal
    /// exchanges the two back. Where the filesystem cannot exchange, `confirm` looks at
    /// the destination just before a plain rename over it.
    pub(crate) fn replace_confirmed(
        mut self,
        durable: Durable,
        confirm: impl Fn(&Path) -> Result<(), String>,
    ) -> io::Result<()> {
        match rename_exchange(&self.path, &self.dest) {
            Ok(()) => {
                // `self.path` names what was at the destination now.
                if let Err(why) = confirm(&self.path) {
                    return match rename_exchange(&self.path, &self.dest) {
                        Ok(()) => Err(io::Error::other(format!("{why}: left as it was"))),
                        Err(e) => {
                            // Never removed: it is what was at the destination.
                            self.placed = true;
                            Err(io::Error::other(format!(
                                "{why}, and it could not be put back ({}): it is at {}",
                                seekless_sys::describe_io(&e),
                                self.path.display()
                            )))
                        }
                    };
                }
                self.placed = true;
                // The replaced file, confirmed to be the one meant, under our temporary's
                // name.
                #[allow(clippy::disallowed_methods)]
                os::with_path(&self.path, |p| fs::remove_file(p))
            }
            Err(e) if exchange_unsupported(&e) => {
                confirm(&self.dest).map_err(io::Error::other)?;
                self.put_in_place(durable)
            }
            Err(e) => Err(e),
        }
    }

    /// Puts the temporary in place where a directory stands (`copy --delete`, a source
    /// file where the destination has a directory): the directory goes only with a
    /// clearance that does not shield it, and only once the replacement is on the disk.
    pub(crate) fn put_in_place_over_dir(
        self,
        durable: Durable,
        clearance: &Clearance,
    ) -> Result<(), Error> {
        if clearance.shields(&self.dest) {
            let why = "a directory is in the way of this file; kept: the run could not see \
                       everything there";
            return Err(Error::io(&self.dest, io::Error::other(why)));
        }
        if os::symlink_metadata(&self.dest).is_ok_and(|m| m.is_dir()) {
            let parent = crate::temp::parent_of(&self.dest);
            let mount = Lies::at(parent).map_err(|e| Error::io(parent, e))?;
            remove_tree(&self.dest, mount, clearance)?;
        }
        let dest = self.dest.clone();
        self.put_in_place(durable).map_err(|e| Error::io(&dest, e))
    }
}

impl Drop for OwnTemp {
    fn drop(&mut self) {
        if !self.placed {
            // Our own temporary, never put in place.
            #[allow(clippy::disallowed_methods)]
            let _ = os::with_path(&self.path, |p| fs::remove_file(p));
        }
    }
}

/// A fresh temporary name beside `dest`, which must name a file.
pub(super) fn temp_name(dest: &Path) -> io::Result<PathBuf> {
    if dest.file_name().is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name",
        ));
    }
    Ok(temp_beside(dest))
}

/// Removes, from `dir`, the temporaries that `which` names and whose run has provably
/// ended: a regular file under a name only seekless makes, whose lock is free. Returns
/// them. A temporary whose lock is held is a running program's; one whose lock cannot be
/// tried (no locks here) is never taken for dead.
pub(crate) fn remove_dead_temps(dir: &Path, which: impl Fn(&OsStr) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = os::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_temp(&name) || !which(&name) {
            continue;
        }
        let path = dir.join(&name);
        // Its lock stays held (by `_lock`) until it is gone.
        let TempState::Dead(_lock) = temp_state(&path) else {
            continue;
        };
        #[allow(clippy::disallowed_methods)]
        if os::with_path(&path, |p| fs::remove_file(p)).is_ok() {
            removed.push(path);
        }
    }
    removed
}
