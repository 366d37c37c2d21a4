//! The acts themselves: a rename that never replaces (a move, the trash, the way back),
//! a hard link over a checked duplicate, shared extents; and the removals a run of them
//! may leave to do (its own `.trashinfo`s, its hard links' temporaries, the folders it
//! made). Each takes its evidence.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::check::{Checked, Ctime, Known, identity, is_the_file};
use super::trash_info::TrashInfo;
use crate::destructive::{Durable, OwnTemp, through_a_link};
use seekless_core::Error;
use seekless_sys as os;
use seekless_sys::describe_io;

/// A file an act of this run moved away (a move, the trash), confirmed at its new path:
/// made only by [`move_checked`] and [`trash_checked`].
///
/// ```compile_fail
/// let forged = seekless_jobs::destructive::acts::Moved { from: "/a".into(), to: "/b".into() };
/// ```
#[derive(Debug)]
pub struct Moved {
    from: PathBuf,
    to: PathBuf,
}

impl Moved {
    /// Where it was.
    pub fn from(&self) -> &Path {
        &self.from
    }

    /// Where it is.
    pub fn to(&self) -> &Path {
        &self.to
    }
}

/// Moves the checked file to `to` (a name that must be free: never over another file),
/// once it and its keeper (whose status-change time should be `keeper_ctime`) are looked
/// at again and found as checked; afterwards `to` must hold the file checked, else it is
/// put back.
pub fn move_checked(c: &Checked, keeper_ctime: Ctime, to: PathBuf) -> io::Result<Moved> {
    c.look_again(keeper_ctime)?;
    let path = c.path();
    #[cfg(feature = "test-hooks")]
    seekless_core::test_hooks::at_start(path);
    match rename_noreplace(path, &to) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(io::Error::other(format!(
                "{} is there already: not moved (never over another file)",
                to.display()
            )));
        }
        Err(e) => return Err(e),
    }
    confirm_moved(path, &to, c.known_file())?;
    Ok(Moved {
        from: path.to_path_buf(),
        to,
    })
}

/// Puts the checked file in the trash at `files` (its `.trashinfo`, `info`, written and on
/// the disk already), as [`move_checked`] moves it; the info stays only if the file went.
pub fn trash_checked(
    c: &Checked,
    keeper_ctime: Ctime,
    info: TrashInfo,
    files: PathBuf,
) -> io::Result<Moved> {
    c.look_again(keeper_ctime)?;
    let path = c.path();
    #[cfg(feature = "test-hooks")]
    seekless_core::test_hooks::at_start(path);
    rename_noreplace(path, &files)?;
    confirm_moved(path, &files, c.known_file())?;
    info.keep();
    Ok(Moved {
        from: path.to_path_buf(),
        to: files,
    })
}

/// Replaces the checked file with a hard link to its keeper: the link is made beside it
/// under `name` (a temporary name for the file, [`Checked::link_name`], recorded in the
/// journal first), confirmed to be the keeper checked, then renamed over the file, which
/// must still be the file checked at that instant (else it is left, and the temporary
/// goes). `keeper_changed` is told each path where the keeper was just linked (each link
/// moves its status-change time: the run's own change).
pub fn link_over(
    c: &Checked,
    keeper_ctime: Ctime,
    name: PathBuf,
    mut keeper_changed: impl FnMut(&Path),
) -> io::Result<()> {
    c.look_again(keeper_ctime)?;
    let path = c.path();
    let temp = OwnTemp::hard_link_named(c.keeper(), name, path)?;
    #[cfg(feature = "test-hooks")]
    seekless_core::test_hooks::at_start(path);
    keeper_changed(temp.path());
    // The link is to the file that was read as the keeper (its name could have been
    // given to another file since it was looked at).
    is_the_file(temp.path(), c.known_keeper())
        .map_err(|why| io::Error::other(format!("its keeper {}: {why}", c.keeper().display())))?;
    let replaced = temp.replace_confirmed(Durable::no_data(), |at| is_the_file(at, c.known_file()));
    keeper_changed(path);
    replaced
}

/// Shares the keeper's extents with the checked file, range by range (`FIDEDUPERANGE`):
/// the kernel compares the bytes under its locks and shares only what is the same. Both
/// are looked at again first, and opened anew must be the very files checked.
pub fn reflink(c: &Checked, keeper_ctime: Ctime) -> io::Result<()> {
    c.look_again(keeper_ctime)?;
    #[cfg(feature = "test-hooks")]
    seekless_core::test_hooks::at_start(c.path());
    let same = |path: &Path, m: &fs::Metadata, k: &Known| {
        m.is_file()
            && os::file_id(path, None, m).is_ok_and(|id| (id.dev, id.ino) == (k.dev, k.ino))
            && m.len() == k.size
    };
    os::share_extents(c.keeper(), c.path(), c.known_file().size, |a, b| {
        same(c.keeper(), a, c.known_keeper()) && same(c.path(), b, c.known_file())
    })
}

/// Puts back a file an act moved to `to`: to `back` (its old path `from`, resolved through
/// no link), a name that must be free, and afterwards `back` must hold `expect` (the file
/// as the act found it), else it goes back to `to`. The error names the path it is about.
pub fn put_back(to: &Path, back: &Path, from: &Path, expect: &Known) -> Result<(), Error> {
    if let Err(err) = rename_noreplace(to, back) {
        let why = if err.kind() == io::ErrorKind::AlreadyExists {
            io::Error::other(format!(
                "a file is at its old path {} now: left where it is",
                from.display()
            ))
        } else {
            err
        };
        return Err(Error::io(to, why));
    }
    // What went back is the file checked (another put at `to` since would not be).
    if let Err(why) = is_the_file(back, expect) {
        let again = rename_noreplace(back, to);
        return Err(Error::io(
            from,
            io::Error::other(match again {
                Ok(()) => format!("{why}: put back at {}", to.display()),
                Err(e) => format!("{why}: left here ({})", describe_io(&e)),
            }),
        ));
    }
    sync_parents(to, from);
    Ok(())
}

/// Removes `folder`, a folder a run made for its moves (its journal says so), only if it
/// is one (not a link, reached through none) and empty (`rmdir`): a folder with anything
/// in it stays.
pub fn remove_made_folder(folder: &Path) {
    if through_a_link(folder).is_none() && os::symlink_metadata(folder).is_ok_and(|m| m.is_dir()) {
        // The one place a folder a move made goes: only empty (`rmdir`).
        #[allow(clippy::disallowed_methods)]
        let _ = os::with_path(folder, |p| fs::remove_dir(p));
    }
}

/// What [`remove_leftover_link`] did.
#[derive(Debug)]
pub enum Leftover {
    /// Nothing was there.
    Nothing,
    /// Removed.
    Removed,
    /// Something else is there: left, and why.
    Kept(String),
    /// It could not be removed.
    Failed(io::Error),
}

/// Removes the temporary `temp` of a hard link act of an ended run (its journal named it,
/// for the file at `from`): only when its name is one seekless gives a temporary of
/// `from`, beside it (a journal edited by hand names nothing else), and it is a second
/// name of the keeper checked (`keeper`), or the file the act replaced (`file`, the path
/// `from` now the keeper's). The caller has proved that run ended (its journal's lock is
/// free).
pub fn remove_leftover_link(temp: &Path, from: &Path, keeper: &Known, file: &Known) -> Leftover {
    let ours = temp.parent() == from.parent()
        && temp
            .file_name()
            .is_some_and(|name| crate::temp::is_temp_of(from, name));
    match leftover_link(temp, from, keeper, file) {
        Ok(false) => Leftover::Nothing,
        Ok(true) if !ours => Leftover::Kept(format!(
            "left: not a temporary name seekless gives {} (a journal that names it was \
             not written by seekless)",
            from.display()
        )),
        Ok(true) => {
            // A temporary of this journal's run, ended: a second name of the keeper, or
            // the replaced duplicate (its bytes the keeper's).
            #[allow(clippy::disallowed_methods)]
            match os::with_path(temp, |p| fs::remove_file(p)) {
                Ok(()) => Leftover::Removed,
                Err(err) => Leftover::Failed(err),
            }
        }
        Err(why) => Leftover::Kept(why),
    }
}

/// Whether the hard link temporary `temp` of an ended run may go: `Ok(false)` when there
/// is nothing there, `Err` (why not) when something is there that is neither the keeper
/// (`keeper`, with another name) nor the replaced file (`file`, its path `from` now the
/// keeper's).
fn leftover_link(temp: &Path, from: &Path, keeper: &Known, file: &Known) -> Result<bool, String> {
    let Ok(meta) = os::symlink_metadata(temp) else {
        return Ok(false);
    };
    // Where the count is not known: never taken for a second name.
    let links = os::link_count(&meta).unwrap_or(1);
    let now = identity(temp).ok().map(|(now, _)| now);
    let is = |k: &Known| {
        now.as_ref().is_some_and(|now| {
            (now.dev, now.ino, now.size, now.mtime_ns) == (k.dev, k.ino, k.size, k.mtime_ns)
        })
    };
    if is(keeper) && links > 1 {
        return Ok(true);
    }
    let from_is_keeper =
        identity(from).is_ok_and(|(now, _)| (now.dev, now.ino) == (keeper.dev, keeper.ino));
    if is(file) && from_is_keeper {
        return Ok(true);
    }
    Err(
        "left: a temporary name of a killed `dupes --act hardlink`, holding neither the \
         keeper nor the file it replaced"
            .into(),
    )
}

/// Flushes the directories a rename changed (best effort: the rename itself is done).
fn sync_parents(from: &Path, to: &Path) {
    for p in [from.parent(), to.parent()].into_iter().flatten() {
        let _ = os::sync_directory(p);
    }
}

/// After a rename of `from` to `to`: `to` must hold the file checked; if it does not (the
/// name was given to another file between the last look and the rename), it goes back.
fn confirm_moved(from: &Path, to: &Path, file: &Known) -> io::Result<()> {
    let Err(why) = is_the_file(to, file) else {
        return Ok(());
    };
    match rename_noreplace(to, from) {
        Ok(()) => Err(io::Error::other(format!("{why}: put back"))),
        Err(e) => Err(io::Error::other(format!(
            "{why}, and it could not be put back ({}): it is at {}",
            describe_io(&e),
            to.display()
        ))),
    }
}

/// Renames `from` to `to`, failing if `to` exists (`renameat2(RENAME_NOREPLACE)`; where
/// that is missing, a hard link then the old name's removal, which fails the same way).
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    if let Some(done) = os::rename_no_replace(from, to) {
        return done;
    }
    // No RENAME_NOREPLACE here: a link fails if the name is taken; then the old name goes
    // (the file has both names for an instant, never neither).
    os::with_paths(from, to, |a, b| fs::hard_link(a, b))?;
    // The old name of a file now also at `to`: the move's second half.
    #[allow(clippy::disallowed_methods)]
    os::with_path(from, |p| fs::remove_file(p))
}
