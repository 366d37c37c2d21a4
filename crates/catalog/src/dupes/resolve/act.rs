//! Acting: [`resolve`], batch by batch, each act journalled before it is done and
//! confirmed after.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::journal::{Intent, Journal, JournalPath, Stamp};
use super::places::Places;
use super::prepare::{Prepared, prepare};
use seekless_core::Error;
use seekless_jobs::destructive::acts::{self, Candidate, Checked, Moved, check};
use seekless_sys as os;
use seekless_sys::describe_io;

/// What to do with each duplicate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Act {
    /// Move it under this folder, at its absolute path (`/p/a.jpg` to `DIR/p/a.jpg`).
    Move(PathBuf),
    /// Put it in the trash.
    Trash,
    /// Replace it with a hard link to its keeper: only where the two have the same owner,
    /// group, permissions and extended attributes (ACLs among them), unless
    /// `metadata_may_differ` (then the keeper's win: the duplicate's are lost).
    HardLink {
        /// Link files whose metadata differ from their keeper's.
        metadata_may_differ: bool,
    },
    /// Share its keeper's extents (`FIDEDUPERANGE`).
    Reflink,
}

impl Act {
    /// As the journal and the command line name it.
    pub fn name(&self) -> &'static str {
        match self {
            Act::Move(_) => "move",
            Act::Trash => "trash",
            Act::HardLink { .. } => "hardlink",
            Act::Reflink => "reflink",
        }
    }

    /// Whether it keeps the file's bytes somewhere (a move, the trash): the only acts
    /// allowed on files that are similar to their keeper but not identical.
    pub fn keeps_the_bytes(&self) -> bool {
        matches!(self, Act::Move(_) | Act::Trash)
    }

    /// Where a move takes `path`.
    pub fn destination(&self, path: &Path) -> Option<PathBuf> {
        match self {
            Act::Move(dir) => Some(under(dir, path)),
            _ => None,
        }
    }
}

/// `path` (absolute) under `dir`, its components kept.
pub(super) fn under(dir: &Path, path: &Path) -> PathBuf {
    let mut out = dir.to_path_buf();
    for c in path.components() {
        if let std::path::Component::Normal(part) = c {
            out.push(part);
        }
    }
    out
}

/// Acts per batch, at most: each batch is read (checked) and then acted on before the next
/// is read, so the time between a file's check and its act is one batch's read, not the
/// whole run's; one `fdatasync` makes a batch's intents durable before any of its acts,
/// and each directory the batch changed is flushed once after it.
pub(super) const BATCH: usize = 1024;

/// Bytes of files and keepers read per batch, at most (a batch of large videos is read
/// and acted on in a few seconds, not minutes).
pub(super) const BATCH_BYTES: u64 = 1 << 30;

/// What became of one candidate.
#[derive(Debug)]
pub enum Outcome {
    /// Done: where the file is now (a move, the trash), and the bytes this freed (none
    /// when it was its keeper's own file).
    Done {
        /// Where it went, for a move or the trash: the evidence that its path is empty
        /// because of this act
        /// ([`Forget::moved_away`](seekless_jobs::destructive::Forget::moved_away)).
        to: Option<Moved>,
        /// Bytes freed.
        frees: u64,
    },
    /// Left as it was, and why (it changed since it was indexed, its keeper did, …).
    Skipped(String),
}

/// Does `act` to each candidate, telling `each` the index and the outcome of each, in
/// order. Batch by batch (at most 1,024 candidates and about a gigabyte read): each
/// candidate and its keeper are read again in physical order and compared with what the
/// catalog knew ([`Checked`]); every act of the batch is made ready (a move's folders, a
/// trash's `.trashinfo`, a hard link beside the file); the intents are written to
/// `journal` and flushed to the disk; then, just before its act, each file and its keeper
/// are looked at again (device, inode, size, modification and status-change times), the
/// act is done, and an act that moved or replaced a name confirms that the file it took
/// was the one checked (else it is put back). The directories changed are flushed after
/// the batch. A journal that cannot be written stops the run (an error, nothing more is
/// done).
pub fn resolve(
    candidates: Vec<Candidate>,
    act: &Act,
    journal: &mut Journal,
    mut each: impl FnMut(usize, Outcome),
) -> Result<(), Error> {
    let mut places = Places::default();
    let mut first = 0;
    let mut rest = candidates.into_iter().peekable();
    while rest.peek().is_some() {
        let mut batch = Vec::new();
        let mut bytes = 0u64;
        while let Some(c) = rest.next_if(|c| {
            batch.is_empty()
                || (batch.len() < BATCH && bytes + c.file.size + c.keeper.size <= BATCH_BYTES)
        }) {
            bytes += c.file.size + c.keeper.size;
            batch.push(c);
        }
        let n = batch.len();
        let mut checked = Vec::with_capacity(n);
        let mut index_of = Vec::with_capacity(n);
        for (k, c) in check(batch).into_iter().enumerate() {
            match c {
                Ok(c) => {
                    #[cfg(feature = "test-hooks")]
                    for p in [c.path(), c.keeper()] {
                        seekless_core::test_hooks::after_check(p);
                    }
                    checked.push(c);
                    index_of.push(first + k);
                }
                Err(why) => each(first + k, Outcome::Skipped(why)),
            }
        }
        act_batch(&checked, act, journal, &mut places, |k, r| {
            let outcome = match r {
                Ok(to) => Outcome::Done {
                    to,
                    frees: checked[k].frees(),
                },
                // Said of the file: its path is not repeated.
                Err(e) if e.path() == checked[k].path() => Outcome::Skipped(e.message()),
                Err(e) => Outcome::Skipped(e.to_string()),
            };
            each(index_of[k], outcome);
        })?;
        first += n;
    }
    journal
        .file
        .sync_data()
        .map_err(|e| journal_failed(journal, e))
}

pub(super) fn journal_failed(journal: &Journal, e: io::Error) -> Error {
    Error::io(
        journal.path().to_path_buf(),
        io::Error::other(format!(
            "the journal cannot be written ({}): stopped",
            describe_io(&e)
        )),
    )
}

/// One batch of [`resolve`]: `checked` made ready, journalled, and acted on.
pub(super) fn act_batch(
    checked: &[Checked],
    act: &Act,
    journal: &mut Journal,
    places: &mut Places,
    mut each: impl FnMut(usize, Result<Option<Moved>, Error>),
) -> Result<(), Error> {
    let mut ready: Vec<(usize, &Checked, Prepared, Option<Intent>)> =
        Vec::with_capacity(checked.len());
    for (i, c) in checked.iter().enumerate() {
        match prepare(c, act, places) {
            Ok(Prepared::Nothing) => each(i, Ok(None)),
            Ok(p) => {
                let mut entry = Intent {
                    n: 0,
                    act: act.name().to_string(),
                    from: JournalPath::of(c.path()),
                    keeper: JournalPath::of(c.keeper()),
                    file: Stamp::of(c.known_file()),
                    to: None,
                    info: None,
                    temp: None,
                    keeper_file: None,
                };
                match &p {
                    Prepared::Move(to) => entry.to = Some(JournalPath::of(to)),
                    Prepared::Trash(info, files) => {
                        entry.to = Some(JournalPath::of(files));
                        entry.info = Some(JournalPath::of(info.path()));
                    }
                    Prepared::HardLink(temp) => {
                        entry.temp = Some(JournalPath::of(temp));
                        entry.keeper_file = Some(Stamp::of(c.known_keeper()));
                    }
                    _ => {}
                }
                ready.push((i, c, p, Some(entry)));
            }
            Err(e) => each(i, Err(e)),
        }
    }
    if ready.is_empty() {
        return Ok(());
    }
    // The folders made for moves, the intents, and the `.trashinfo`s, on the disk before
    // any act.
    for folder in std::mem::take(&mut places.made) {
        journal
            .made(&folder)
            .map_err(|e| journal_failed(journal, e))?;
    }
    let mut numbers = Vec::with_capacity(ready.len());
    for (_, _, _, entry) in &mut ready {
        let Some(entry) = entry.take() else {
            continue;
        };
        let n = journal
            .intent(entry)
            .map_err(|e| journal_failed(journal, e))?;
        numbers.push(n);
    }
    journal
        .file
        .sync_data()
        .map_err(|e| journal_failed(journal, e))?;
    // Each `.trashinfo` written now that its intent is on the disk (a kill before leaves
    // a name the journal gives, nothing written; see `clean_up`).
    let ready: Vec<(usize, &Checked, io::Result<Prepared>, u64)> = ready
        .into_iter()
        .zip(numbers)
        .map(|((i, c, p, _), n)| {
            let p = match p {
                Prepared::Trash(pending, files) => pending
                    .write()
                    .map(|info| Prepared::Trashing(info, files))
                    .map_err(io::Error::other),
                p => Ok(p),
            };
            (i, c, p, n)
        })
        .collect();
    let mut infos: Vec<&Path> = ready
        .iter()
        .filter_map(|(_, _, p, _)| match p {
            Ok(Prepared::Trashing(info, _)) => info.path().parent(),
            _ => None,
        })
        .collect();
    infos.sort();
    infos.dedup();
    for dir in infos {
        if let Err(e) = File::open(dir).and_then(|d| os::sync_filesystem_of(&d)) {
            return Err(Error::io(dir, e));
        }
    }
    let mut changed: Vec<PathBuf> = Vec::new();
    for (i, c, p, n) in ready {
        let path = c.path();
        let r = p.and_then(|p| act_now(c, p, places));
        let written = match &r {
            Ok(_) => journal.outcome(n, true, None),
            Err(e) => journal.outcome(n, false, Some(&describe_io(e))),
        };
        if let Ok(to) = &r {
            changed.extend(path.parent().map(Path::to_path_buf));
            changed.extend(
                to.as_ref()
                    .and_then(|m| m.to().parent())
                    .map(Path::to_path_buf),
            );
        }
        each(i, r.map_err(|e| Error::io(path, e)));
        written.map_err(|e| journal_failed(journal, e))?;
    }
    changed.sort();
    changed.dedup();
    // The renames on the disk (best effort: each is done; a power cut before this can
    // only leave a file at its old name, which the journal's undo copes with).
    for dir in &changed {
        let _ = os::sync_directory(dir);
    }
    Ok(())
}

/// Does the prepared act on `c`, through the owner of destructive acts, which looks at the
/// file and its keeper again first (each must be as checked, the keeper's status-change
/// time as this run's own links left it) and, for an act that moved or replaced a name,
/// confirms the file taken as the one checked afterwards (else puts it back).
pub(super) fn act_now(c: &Checked, p: Prepared, places: &mut Places) -> io::Result<Option<Moved>> {
    let keeper_ctime = places.keeper_ctime(c);
    match p {
        Prepared::Nothing => c.look_again(keeper_ctime).map(|()| None),
        Prepared::Move(to) => acts::move_checked(c, keeper_ctime, to).map(Some),
        Prepared::Trash(..) => {
            c.look_again(keeper_ctime)?;
            Err(io::Error::other(
                "its .trashinfo was not written: not put in the trash",
            ))
        }
        Prepared::Trashing(info, files) => {
            acts::trash_checked(c, keeper_ctime, info, files).map(Some)
        }
        Prepared::HardLink(name) => {
            acts::link_over(c, keeper_ctime, name, |at| places.keeper_changed(c, at)).map(|()| None)
        }
        Prepared::Reflink => acts::reflink(c, keeper_ctime).map(|()| None),
    }
}
