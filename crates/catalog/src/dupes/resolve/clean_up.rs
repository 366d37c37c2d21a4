//! [`clean_up`]: what an ended run left behind (hard links' temporaries, `.trashinfo`
//! files whose file never went to the trash).

use std::fs::{self, File};
use std::io;
use std::path::Path;

use super::journal::parse_journal;
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_jobs::destructive::acts::{self, Leftover};
use seekless_sys as os;

/// What a killed run left behind and the next run or undo removed: only what its journal
/// names, once its lock proves that run ended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cleaned {
    /// Hard links' temporaries (`.NAME.seekless-tmp-RUN-N` beside a file).
    pub temps: u64,
    /// `.trashinfo` files whose file never went to the trash.
    pub infos: u64,
}

/// Opens the journal at `path` and takes its lock: proof that the run that wrote it has
/// ended (its lock is released with it, however it ended). The lock is held while the
/// returned file is open. `None` where the filesystem has no locks: nothing proves the
/// run ended, nor that it goes on.
pub(super) fn open_ended(path: &Path) -> Result<Option<File>, Error> {
    let file = fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(fs::TryLockError::WouldBlock) => Err(Error::io(
            path,
            io::Error::other("its run is still going (its journal is locked)"),
        )),
        Err(fs::TryLockError::Error(_)) => Ok(None),
    }
}

/// Removes what a run of the journal at `path` left behind when it was killed, once that
/// run has provably ended (the journal's lock is free; else an error, nothing touched):
///
/// - a hard link's temporary, named in its act's intent: removed when it is a name of
///   the keeper that was checked (with another name left), or the file the act replaced
///   (the one checked, the same bytes as its keeper, whose own path now names the keeper);
///   anything else under that name is left, with a message;
/// - a trash's `.trashinfo` whose file is not in the trash (it never went): removed if it
///   names the act's file, as each is written, or is empty (killed as it was written).
///
/// Nothing else is touched: every path comes from the journal, and a name alone proves
/// nothing.
pub fn clean_up(path: &Path, reporter: &dyn Reporter) -> Result<Cleaned, Error> {
    // Without locks nothing is taken for a dead run's (an undo still puts files back).
    let Some(_lock) = open_ended(path)? else {
        return Ok(Cleaned::default());
    };
    let text = fs::read(path).map_err(|e| Error::io(path, e))?;
    let read = parse_journal(&text).map_err(|why| Error::io(path, io::Error::other(why)))?;
    let mut out = Cleaned::default();
    for e in &read.acts {
        match e.act.as_str() {
            "hardlink" => {
                let (Some(temp), Some(keeper)) = (&e.temp, &e.keeper_file) else {
                    continue;
                };
                let (temp, from) = (temp.path(), e.from.path());
                let (keeper, file) = (keeper.known(temp.clone()), e.file.known(from.clone()));
                match acts::remove_leftover_link(&temp, &from, &keeper, &file) {
                    Leftover::Removed => out.temps += 1,
                    Leftover::Nothing => {}
                    Leftover::Failed(err) => reporter.error(&Error::io(&temp, err)),
                    Leftover::Kept(why) => reporter.warning(Some(&temp), &why),
                }
            }
            "trash" => {
                let (Some(info), Some(to)) = (&e.info, &e.to) else {
                    continue;
                };
                let (info, to, from) = (info.path(), to.path(), e.from.path());
                let in_trash = os::symlink_metadata(&to).is_ok();
                if !in_trash && os::symlink_metadata(&info).is_ok() {
                    acts::forget_trash_info(&info, &from);
                    if os::symlink_metadata(&info).is_err() {
                        out.infos += 1;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}
