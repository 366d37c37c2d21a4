//! Acting on the duplicates found (`seekless dupes --act`): every file offered for removal
//! is moved away, put in the trash, replaced with a hard link to its keeper, or made to
//! share its keeper's extents, through the one owner of destructive acts
//! ([`seekless_jobs::destructive::acts`]), which reads each file and its keeper again
//! first, in physical order, and journals each act before doing it. The catalog then
//! forgets the rows of files moved away or put in the trash (they are provably gone from
//! their paths); `--undo JOURNAL` puts them back, and the next `index` finds them again.
//!
//! ```
//! use seekless_catalog::dupes::{Catalog, DupesOptions, act};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let photos = dir.path().join("photos");
//! # std::fs::create_dir_all(photos.join("copy"))?;
//! # std::fs::write(photos.join("a.gif"), b"GIF89a\x01\0\x01\0\0\0\0;")?;
//! # std::fs::write(photos.join("copy/a.gif"), b"GIF89a\x01\0\x01\0\0\0\0;")?;
//! # let db = dir.path().join("photos.db");
//! # seekless_catalog::index::index(&[photos.clone()], &Default::default(),
//! #     &seekless_catalog::index::IndexOptions::new(&db), &seekless_core::Quiet)?;
//! let dupes = Catalog::open(&db)?.find(&DupesOptions::default())?;
//! let planned = act::plan(&dupes, false);
//! let moved = dir.path().join("moved");
//! # std::fs::create_dir_all(&moved)?;
//! let journal = dir.path().join("moves.journal");
//! let report = act::run(&db, &planned, &act::Act::Move(moved.clone()), &journal, |p, outcome| {
//!     println!("{}: {outcome:?}", p.file.path);
//! })?;
//! assert_eq!(report.done, 1);
//! assert!(!photos.join("copy/a.gif").exists());
//! // And back.
//! let undone = act::undo(&journal, &seekless_core::Quiet)?;
//! assert_eq!(undone.restored, 1);
//! assert!(photos.join("copy/a.gif").exists());
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};

use seekless_core::Quiet;
use seekless_jobs::destructive::Forget;
use seekless_jobs::destructive::acts::{Candidate, Known, Moved};

use super::resolve::{self, Journal};
pub use resolve::{Act, Cleaned, Undone, undo};

use super::{Dupes, DupesError, GroupKind, Member};
use crate::index::catalog::WriterLock;

/// One act to do: a file offered for removal and its group's keeper.
#[derive(Clone, Debug)]
pub struct Planned<'a> {
    /// The file.
    pub file: &'a Member,
    /// Its keeper.
    pub keeper: &'a Member,
    /// The two have one content (an exact group, or a byte-identical copy in a similar one).
    pub identical: bool,
}

/// The acts `act` would do on `dupes`: every file offered for removal in each exact group,
/// and byte-identical copies of a similar group's keeper; with `similar_too` (only for
/// acts that keep the bytes: move, trash), the other files of similar groups too.
pub fn plan<'a>(dupes: &'a Dupes, similar_too: bool) -> Vec<Planned<'a>> {
    let mut out = Vec::new();
    for g in dupes.groups.iter().filter(|g| g.kind.is_duplicate()) {
        let keeper = &g.members[0];
        for m in g.members.iter().filter(|m| m.removable()) {
            let identical = g.kind == GroupKind::Exact || m.blake3 == keeper.blake3;
            if identical || similar_too {
                out.push(Planned {
                    file: m,
                    keeper,
                    identical,
                });
            }
        }
    }
    out
}

/// What happened to one planned file.
#[derive(Debug)]
pub enum Outcome {
    /// Done; for a move or the trash, where the file is now.
    Done(Option<PathBuf>),
    /// Left as it was, and why (it changed since it was indexed, its keeper did, …).
    Skipped(String),
}

/// What [`run`] did.
#[derive(Debug, Default)]
pub struct Report {
    /// Files acted on.
    pub done: u64,
    /// Their bytes.
    pub freed: u64,
    /// Files left as they were.
    pub skipped: u64,
    /// Catalog rows forgotten (files moved away or put in the trash).
    pub forgotten: u64,
    /// What killed runs on this catalog left behind, removed first ([`Cleaned`]): from the
    /// journals beside it named as
    /// [`default_journal`] names them, and those listed in `DB.dupes-journals`.
    pub cleaned: Cleaned,
}

/// `DB.dupes-SECONDS.journal` (`DB.dupes-SECONDS-N.journal` when a run of the same second
/// has that name), beside the catalog: where a run's journal goes unless told otherwise,
/// and where the next run looks for what a killed run left behind.
pub fn default_journal(db: &Path) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let named = |suffix: String| {
        let mut name = db.as_os_str().to_owned();
        name.push(format!(".dupes-{secs}{suffix}.journal"));
        PathBuf::from(name)
    };
    let mut path = named(String::new());
    let mut n = 2;
    while std::fs::symlink_metadata(&path).is_ok() {
        path = named(format!("-{n}"));
        n += 1;
    }
    path
}

/// `DB.dupes-journals`: the journals of the runs on `db` written elsewhere than
/// [`default_journal`] puts them (`--journal FILE`), a path a line, for the next run to
/// clean up after a killed one.
fn journal_list(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".dupes-journals");
    PathBuf::from(name)
}

/// Adds `journal` to `db`'s list of journals, on the disk before any act. A path with a
/// newline cannot be listed: its run is cleaned up after by `--undo` only.
fn list_journal(db: &Path, journal: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let journal = std::path::absolute(journal)?;
    let mut line = seekless_sys::path_to_bytes(&journal).into_owned();
    if line.contains(&b'\n') {
        return Ok(());
    }
    line.push(b'\n');
    let mut list = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(journal_list(db))?;
    list.write_all(&line)?;
    list.sync_data()
}

/// The journals of runs on `db`: those beside it named as [`default_journal`] names them,
/// and those its list names.
fn journals_of(db: &Path) -> Vec<PathBuf> {
    let mut found = journals_beside(db);
    if let Ok(list) = std::fs::read(journal_list(db)) {
        found.extend(
            list.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(seekless_sys::path_from_bytes),
        );
    }
    found.sort();
    found.dedup();
    found
}

/// The journals beside `db` named as [`default_journal`] names them.
fn journals_beside(db: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (db.parent(), db.file_name()) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = seekless_sys::path_to_bytes(Path::new(name)).into_owned();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = seekless_sys::path_to_bytes(Path::new(&n));
            n.strip_prefix(&prefix[..])
                .and_then(|rest| rest.strip_prefix(b".dupes-"))
                .and_then(|rest| rest.strip_suffix(b".journal"))
                .is_some_and(|secs| {
                    secs.first().is_some_and(u8::is_ascii_digit)
                        && secs.iter().all(|b| b.is_ascii_digit() || *b == b'-')
                })
        })
        .map(|e| dir.join(e.file_name()))
        .collect();
    found.sort();
    found
}

fn known(m: &Member) -> Known {
    Known {
        path: seekless_sys::path_from_bytes(&m.path_bytes),
        dev: m.dev,
        ino: m.ino,
        size: m.size,
        mtime_ns: m.mtime_ns,
        blake3: m.blake3.clone(),
    }
}

/// Does `act` to each of `planned` (see [`plan`]), the journal at `journal_path` (a new file)
/// written first, telling `each` the outcome of each file in `planned`'s order. The
/// catalog at `db` is locked for writing for the whole run (a running `seekless index`
/// refuses it) and forgets the rows of files moved away or put in the trash.
pub fn run(
    db: &Path,
    planned: &[Planned<'_>],
    act: &Act,
    journal_path: &Path,
    mut each: impl FnMut(&Planned<'_>, &Outcome),
) -> Result<Report, DupesError> {
    let lock = WriterLock::take(db)?;
    let mut writer = lock.open_for_dupes(&|_| {})?;
    let write_err = |e: std::io::Error| DupesError::Write {
        path: journal_path.to_path_buf(),
        message: seekless_sys::describe_io(&e),
    };
    let about = resolve::About::new(
        act.name(),
        db,
        act.destination(Path::new("/")).as_deref(),
        planned.len() as u64,
    );
    // What killed runs left (each journal's own lock proves its run ended; this run's
    // lock on the catalog keeps any other from starting meanwhile).
    let mut cleaned = resolve::Cleaned::default();
    for j in journals_of(db) {
        if let Ok(c) = resolve::clean_up(&j, &Quiet) {
            cleaned.temps += c.temps;
            cleaned.infos += c.infos;
        }
    }
    let mut journal = Journal::create(journal_path, about).map_err(write_err)?;
    list_journal(db, journal_path).map_err(write_err)?;
    let candidates: Vec<Candidate> = planned
        .iter()
        .map(|p| Candidate {
            file: known(p.file),
            keeper: known(p.keeper),
            identical: p.identical,
        })
        .collect();
    let mut report = Report {
        cleaned,
        ..Report::default()
    };
    let mut outcomes: Vec<Option<Outcome>> = (0..planned.len()).map(|_| None).collect();
    let mut gone: Vec<(i64, Moved)> = Vec::new();
    let stopped = resolve::resolve(candidates, act, &mut journal, |i, r| {
        outcomes[i] = Some(match r {
            resolve::Outcome::Done { to, frees } => {
                report.freed += frees;
                let at = to.as_ref().map(|m| m.to().to_path_buf());
                if let Some(moved) = to {
                    gone.push((planned[i].file.id, moved));
                }
                Outcome::Done(at)
            }
            resolve::Outcome::Skipped(why) => Outcome::Skipped(why),
        });
    });
    for (p, outcome) in planned.iter().zip(outcomes) {
        // None: not reached (the journal could not be written).
        let outcome =
            outcome.unwrap_or_else(|| Outcome::Skipped("not done: the run stopped".into()));
        match &outcome {
            Outcome::Done(_) => report.done += 1,
            Outcome::Skipped(_) => report.skipped += 1,
        }
        each(p, &outcome);
    }
    // The rows of files no longer at their paths: proven gone, one by one.
    let forget = Forget::moved_away(gone.iter().map(|(id, moved)| (*id, moved)));
    report.forgotten = forget.len() as u64;
    writer.forget(&forget, &|_| {})?;
    stopped.map_err(|e| DupesError::Write {
        path: journal_path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(report)
}
