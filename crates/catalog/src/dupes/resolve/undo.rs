//! [`undo`]: the moves and trashes of a journal reversed, last first.

use std::fs;
use std::io;
use std::path::Path;

use super::clean_up::{Cleaned, clean_up};
use super::journal::{JournalPath, JournalRead, parse_journal};
use super::places::make_folders_on;
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_jobs::destructive::acts::{self, identity, same_file};
use seekless_jobs::destructive::{Lies, through_a_link};
use seekless_sys as os;
use seekless_sys::describe_io;

/// What [`undo`] did.
#[derive(Debug, Default)]
pub struct Undone {
    /// Files put back.
    pub restored: u64,
    /// Acts already undone by an earlier `--undo`.
    pub already: u64,
    /// Acts that cannot be undone (hard links, reflinks): nothing to put back.
    pub kept: u64,
    /// Acts whose file could not be put back (reported).
    pub failed: u64,
    /// What the run left behind when it was killed, removed first.
    pub cleaned: Cleaned,
}

/// Reverses the moves and trashes of the journal at `path`, last first: each file goes
/// back to its old path if it is still where the act put it, unchanged (device, inode,
/// size, modification time), and nothing is at its old path; a trashed file's
/// `.trashinfo` goes with it. An act begun but not recorded as done (a crash) is undone if
/// its file is found moved. Each undo is recorded in the journal, so a second `--undo`
/// does nothing.
pub fn undo(path: &Path, reporter: &dyn Reporter) -> Result<Undone, Error> {
    // Never while its run goes on; what a killed run left goes first.
    let cleaned = clean_up(path, reporter)?;
    let text = fs::read(path).map_err(|e| Error::io(path, e))?;
    let JournalRead {
        acts: entries,
        undone,
        failed,
        passed_over,
        made,
        ..
    } = parse_journal(&text).map_err(|why| Error::io(path, io::Error::other(why)))?;
    for line in passed_over {
        reporter.warning(Some(path), &format!("line {line}: not JSON, passed over"));
    }
    let mut out = Undone {
        cleaned,
        ..Undone::default()
    };
    let mut journal = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    for e in entries.iter().rev() {
        let n = e.n;
        if failed.contains(&n) {
            continue;
        }
        if undone.contains(&n) {
            out.already += 1;
            continue;
        }
        let act = e.act.as_str();
        if act != "move" && act != "trash" {
            out.kept += 1;
            continue;
        }
        let (from, Some(to)) = (e.from.path(), e.to.as_ref().map(JournalPath::path)) else {
            out.failed += 1;
            reporter.warning(Some(path), &format!("act {n}: no paths, passed over"));
            continue;
        };
        let expect = e.file.known(to.clone());
        // Every folder on the way back as recorded: a link put in place of one since would
        // take the file elsewhere. (Where it went, its identity is checked below.)
        if let Some(link) = through_a_link(&from) {
            out.failed += 1;
            reporter.error(&Error::io(
                &to,
                io::Error::other(format!(
                    "{} is a symbolic link now: not put back through it",
                    link.display()
                )),
            ));
            continue;
        }
        match identity(&to) {
            Ok((now, _)) if same_file(&to, &expect, &now).is_ok() => {}
            Ok(_) => {
                out.failed += 1;
                reporter.error(&Error::io(
                    &to,
                    io::Error::other(format!(
                        "not the file moved from {} (changed since): left where it is",
                        from.display()
                    )),
                ));
                continue;
            }
            Err(err)
                if err.kind() == io::ErrorKind::NotFound && os::symlink_metadata(&from).is_ok() =>
            {
                // Begun but not done (a crash before the rename): nothing to undo.
                continue;
            }
            Err(err) => {
                out.failed += 1;
                reporter.error(&Error::io(&to, err));
                continue;
            }
        }
        // Its old folder made again where it went, on the file's own mount, through no
        // link.
        if let Some(dir) = from.parent()
            && let Err(why) = Lies::at(&to)
                .map_err(|e| describe_io(&e))
                .and_then(|mount| make_folders_on(dir, mount))
        {
            out.failed += 1;
            reporter.error(&Error::io(dir, io::Error::other(why)));
            continue;
        }
        #[cfg(feature = "test-hooks")]
        seekless_core::test_hooks::before_put_back(&to, &from);
        // The way back resolved through no link (Linux: its folder held open, so that a
        // link put on the way from now on cannot take the file elsewhere).
        let back = match os::pinned_no_links(&from) {
            Ok(back) => back,
            Err(err) => {
                out.failed += 1;
                reporter.error(&Error::io(
                    &to,
                    io::Error::other(format!(
                        "the way back to {} is not folders only (a symbolic link on it?): {}; \
                         left where it is",
                        from.display(),
                        describe_io(&err)
                    )),
                ));
                continue;
            }
        };
        // Never over a name; afterwards what went back must be the file checked (another
        // put at `to` since would not be).
        if let Err(err) = acts::put_back(&to, &back, &from, &expect) {
            out.failed += 1;
            reporter.error(&err);
            continue;
        }
        if act == "trash"
            && let Some(info) = e.info.as_ref().map(JournalPath::path)
        {
            acts::forget_trash_info(&info, &from);
        }
        out.restored += 1;
        super::journal::undone(&mut journal, n)
            .and_then(|()| journal.sync_data())
            .map_err(|e| Error::io(path, e))?;
    }
    // The folders the run made for its moves, deepest first, once empty (a folder with
    // anything in it stays).
    for folder in made.iter().rev() {
        acts::remove_made_folder(folder);
    }
    Ok(out)
}
