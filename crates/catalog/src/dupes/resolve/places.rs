//! Where the acts of a run put files: each folder's mount, the trash of each folder's
//! files, the folders made for a move.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::trash;
use seekless_jobs::destructive::Lies;
use seekless_jobs::destructive::acts::{Checked, Ctime, identity};
use seekless_sys as os;
use seekless_sys::describe_io;

/// What the acts of a run share, looked up once: each folder's mount (a move's
/// destination and the folders made under it), the trash of each folder's files, and the
/// keepers' status-change times as this run's own acts left them.
#[derive(Default)]
pub(super) struct Places {
    pub(super) mounts: HashMap<PathBuf, Lies>,
    /// By the folder a trashed file is in (the same device can be mounted twice, and a
    /// file goes to the trash of the mount it is reached through).
    pub(super) trashes: HashMap<PathBuf, Result<trash::Place, String>>,
    /// By keeper (device, inode): its status-change time after this run linked to it
    /// (each link moves it).
    pub(super) keepers: HashMap<(u64, u64), Ctime>,
    /// Folders made for moves and not yet journalled.
    pub(super) made: Vec<PathBuf>,
}

/// Makes `dir` and the folders missing above it, one at a time from the nearest one that
/// exists, which must lie where `mount` says (a rename never crosses a mount, not even a
/// bind mount of the same filesystem, nor a btrfs subvolume) and, like every folder made, a real
/// directory (not a link): returns the folders made, outermost first. Nothing is made
/// where that fails.
pub(super) fn make_folders_on(dir: &Path, mount: Lies) -> Result<Vec<PathBuf>, String> {
    let say = |at: &Path, e: io::Error| format!("{}: {}", at.display(), describe_io(&e));
    let mut missing = Vec::new();
    let mut at = dir;
    let existing = loop {
        match os::symlink_metadata(at) {
            Ok(meta) => break (at, meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing.push(at.to_path_buf());
                at = at.parent().ok_or_else(|| say(at, e))?;
            }
            Err(e) => return Err(say(at, e)),
        }
    };
    let on_dev = |at: &Path, meta: &fs::Metadata| -> Result<(), String> {
        if !meta.is_dir() {
            return Err(format!(
                "{}: not a folder (a link or a file): nothing made or moved there",
                at.display()
            ));
        }
        match Lies::of(at, meta) {
            Ok(here) if here == mount => Ok(()),
            Ok(_) => Err(format!(
                "{} is on another filesystem or mount: not moved (a move here is a rename, \
                 never a copy)",
                at.display()
            )),
            Err(e) => Err(say(at, e)),
        }
    };
    on_dev(existing.0, &existing.1)?;
    let mut made = Vec::new();
    for folder in missing.into_iter().rev() {
        match os::with_path(&folder, |p| fs::create_dir(p)) {
            Ok(()) => made.push(folder.clone()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(say(&folder, e)),
        }
        let meta = os::symlink_metadata(&folder).map_err(|e| say(&folder, e))?;
        on_dev(&folder, &meta)?;
    }
    Ok(made)
}

impl Places {
    /// Makes the folder `dir` and those missing above it, each on the mount `mount` and none
    /// a symbolic link; nothing is made when the nearest folder that exists is elsewhere
    /// or a link (a move never leaves its filesystem, nor goes through a mount or a link
    /// below its folder). Folders known on `mount` from earlier calls are not looked at
    /// again; the folders made are remembered in `made` (the journal lists them, and an
    /// undo removes them once empty).
    pub(super) fn folder_on(&mut self, dir: &Path, mount: Lies) -> Result<(), String> {
        if self.mounts.get(dir) == Some(&mount) {
            return Ok(());
        }
        let made = make_folders_on(dir, mount)?;
        self.mounts.insert(dir.to_path_buf(), mount);
        self.made.extend(made);
        Ok(())
    }

    /// The status-change time `c`'s keeper should have now: as checked, or as this run's
    /// last link to it left it.
    pub(super) fn keeper_ctime(&self, c: &Checked) -> Ctime {
        let id = (c.known_keeper().dev, c.known_keeper().ino);
        self.keepers.get(&id).copied().unwrap_or(c.keeper_ctime())
    }

    /// This run just linked to `c`'s keeper (the link is at `at`): remembers the keeper's
    /// status-change time as that left it, if `at` is still the keeper.
    pub(super) fn keeper_changed(&mut self, c: &Checked, at: &Path) {
        let id = (c.known_keeper().dev, c.known_keeper().ino);
        match identity(at) {
            Ok((now, ctime)) if (now.dev, now.ino) == id => {
                self.keepers.insert(id, ctime);
            }
            // Not the keeper's there: whatever it is now, nothing links to it unseen.
            _ => {}
        }
    }
}
