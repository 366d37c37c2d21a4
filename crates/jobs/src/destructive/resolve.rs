//! Resolving duplicates (`seekless dupes --act`): moving a file away, putting it in the
//! trash, replacing it with a hard link to its keeper, sharing its keeper's extents.
//!
//! [`resolve`] works a batch at a time, and each act takes a [`Checked`], made only by
//! the batch's check: the file and its keeper were read just now, in physical order, each
//! found exactly as the catalog knew it (device, inode, size, modification time, and the
//! content hash of the bytes read now), its status-change time the same before and after
//! the read, the file is not its keeper under another name, and, for an exact duplicate,
//! the two read the same. Immediately before each act the file and its keeper are looked
//! at again (the status-change time too: a rewrite that puts the modification time back
//! still moves it); any difference skips it. A move, a trash or a hard link then confirms
//! that the file it took from its name is the one checked, and puts it back if not. Every
//! act is written to a [`Journal`] first (made durable before the act), so that a move or
//! a trash can be undone ([`undo`]) after anything, a `kill -9` included.
//!
//! Moves stay on the file's filesystem (a rename: nothing is copied, nothing can be half
//! done); so does the trash (the freedesktop.org Trash specification: the home trash when
//! the file is on the home's filesystem, else the trash at the top of its own). A hard link
//! replaces the file with its keeper's inode, atomically (a rename over it); a reflink
//! asks the kernel to share the keeper's extents (`FIDEDUPERANGE`), which compares the
//! bytes itself, under its locks, and changes nothing when they differ.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Durable, Lies, OwnTemp, through_a_link};
use crate::hash::{Algorithm, hash_plan};
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_core::read::ReadOptions;
use seekless_core::{Plan, PlanOptions};
use seekless_sys as os;
use seekless_sys::describe_io;
use seekless_sys::sync::lock;

mod journal;
mod trash;

pub use journal::{About, Intent, Journal, JournalPath, JournalRead, Stamp, parse_journal};

/// What the catalog knows of a file: device, inode, size, modification time (ns since the
/// epoch) and content hash (BLAKE3, hex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Known {
    /// The path.
    pub path: PathBuf,
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: i64,
    /// BLAKE3 of the content, lower-case hex.
    pub blake3: String,
}

/// A file to act on, with its keeper.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The file that may go.
    pub file: Known,
    /// The file kept in its stead.
    pub keeper: Known,
    /// They are byte-identical (an exact group): checked again now. Otherwise (a similar
    /// group) only move and trash are allowed, and only the identity of each is checked.
    pub identical: bool,
}

/// Evidence that a candidate may be acted on (made only by the check of [`resolve`]).
#[derive(Debug)]
pub struct Checked {
    file: Known,
    keeper: Known,
    identical: bool,
    /// The file is its keeper's, under another name (a hard link, a bind mount).
    same_file: bool,
    /// The file's status-change time from before it was read: a writer that puts the
    /// modification time back (`touch -r`, `exiftool -P`) still moves it.
    file_ctime: Ctime,
    /// The keeper's, likewise.
    keeper_ctime: Ctime,
}

/// A status-change time (`st_ctime`: seconds, nanoseconds), where the system keeps one.
type Ctime = Option<(i64, i64)>;

impl Checked {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Its keeper.
    pub fn keeper(&self) -> &Path {
        &self.keeper.path
    }

    /// The bytes acting on it frees (none when it is its keeper's own file).
    pub fn frees(&self) -> u64 {
        if self.same_file { 0 } else { self.file.size }
    }
}

/// Reads every candidate and its keeper now, in physical order (one sweep per disk, as
/// `hash` reads), and returns, for each candidate in order, its evidence or why it is
/// skipped. Each candidate's paths move into its evidence (one copy of each path). The
/// status-change time of each is taken before the read and must be the same after it.
fn check(candidates: Vec<Candidate>) -> Vec<Result<Checked, String>> {
    let failures = Collect::default();
    let mut before: HashMap<PathBuf, Ctime> = HashMap::new();
    let plan = {
        let mut seen: HashSet<&Path> = HashSet::new();
        let paths: Vec<&Path> = candidates
            .iter()
            .flat_map(|c| [c.file.path.as_path(), c.keeper.path.as_path()])
            .filter(|p| seen.insert(p))
            .collect();
        for p in &paths {
            if let Ok((_, ctime)) = identity(p) {
                before.insert(p.to_path_buf(), ctime);
            }
        }
        Arc::new(Plan::build(&paths, &PlanOptions::default(), &failures))
    };
    // By file (device, inode): the plan reads one name of a file with several. The path
    // is the candidate's, not kept here.
    let mut read: HashMap<(u64, u64), Result<Known, String>> = HashMap::new();
    hash_plan(
        plan,
        Algorithm::Blake3,
        &ReadOptions::default(),
        2,
        |planned, result| {
            let e = &planned.entry;
            let found = result
                .map(|blake3| Known {
                    path: PathBuf::new(),
                    dev: e.id.dev,
                    ino: e.id.ino,
                    size: e.size,
                    mtime_ns: e.modified.map_or(i64::MIN, ns),
                    blake3,
                })
                .map_err(|e| e.to_string());
            read.insert((e.id.dev, e.id.ino), found);
        },
    );
    #[cfg(feature = "test-hooks")]
    for c in &candidates {
        seekless_core::test_hooks::after_read(&c.file.path);
    }
    let failures = std::mem::take(&mut *lock(&failures.0));
    // The file at `k`'s path now (looked at without following a link), as read, and its
    // status-change time, unmoved since before the read; its path left empty.
    let now = |k: &Known| {
        let (at, ctime) =
            identity(&k.path).map_err(|e| format!("{}: {}", k.path.display(), describe_io(&e)))?;
        if before.get(&k.path) != Some(&ctime) {
            return Err(format!(
                "{}: changed while it was read (status-change time)",
                k.path.display()
            ));
        }
        match read.get(&(at.dev, at.ino)) {
            Some(Ok(found)) => Ok((found.clone(), ctime)),
            Some(Err(why)) => Err(why.clone()),
            None => Err(failures
                .get(&k.path)
                .cloned()
                .unwrap_or_else(|| format!("{}: not read", k.path.display()))),
        }
    };
    candidates
        .into_iter()
        .map(|c| {
            let (keeper, keeper_ctime) =
                now(&c.keeper).map_err(|why| format!("its keeper could not be read: {why}"))?;
            if let Some(what) = differs(&c.keeper, &keeper) {
                return Err(format!(
                    "its keeper {} changed since it was indexed ({what})",
                    c.keeper.path.display()
                ));
            }
            let (file, file_ctime) = now(&c.file)?;
            // The keeper's own file under another name (linked already, whatever the
            // catalog remembers of it).
            let same_file = (file.dev, file.ino) == (keeper.dev, keeper.ino);
            if !same_file && let Some(what) = differs(&c.file, &file) {
                return Err(format!("changed since it was indexed ({what})"));
            }
            if c.identical && file.blake3 != keeper.blake3 {
                return Err(format!(
                    "its bytes differ from its keeper's {}",
                    c.keeper.path.display()
                ));
            }
            Ok(Checked {
                file: Known {
                    path: c.file.path,
                    ..file
                },
                keeper: Known {
                    path: c.keeper.path,
                    ..keeper
                },
                identical: c.identical,
                same_file,
                file_ctime,
                keeper_ctime,
            })
        })
        .collect()
}

/// What differs between what the catalog knew and what was found, if anything.
fn differs(known: &Known, now: &Known) -> Option<&'static str> {
    if known.blake3 != now.blake3 {
        Some("content")
    } else if known.size != now.size {
        Some("size")
    } else if known.mtime_ns != now.mtime_ns {
        Some("modification time")
    } else if (known.dev, known.ino) != (now.dev, now.ino) {
        Some(ANOTHER_FILE)
    } else {
        None
    }
}

/// What [`differs`] says of a file of the same size and modification time under another
/// device or inode number.
const ANOTHER_FILE: &str = "another file at that path";

/// Whether the file `now`, found at `at`, is `k`'s (its content hash `k.blake3`, if known):
/// the same device, inode, size and modification time; or, where a filesystem gives a
/// file another inode number when it is renamed (mergerfs, some FUSE and network
/// filesystems), the same size, modification time and content, read now. Else what
/// differs.
fn same_file(at: &Path, k: &Known, now: &Known) -> Result<(), &'static str> {
    let known = Known {
        blake3: String::new(),
        ..k.clone()
    };
    match differs(&known, now) {
        None => Ok(()),
        Some(ANOTHER_FILE)
            if !k.blake3.is_empty() && content_hash(at).as_deref() == Some(&k.blake3) =>
        {
            Ok(())
        }
        Some(what) => Err(what),
    }
}

/// BLAKE3 (hex) of the regular file at `path`, read now without following a link.
fn content_hash(path: &Path) -> Option<String> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    os::set_no_follow_no_wait(&mut opts);
    let file = os::with_path(path, |p| opts.open(p)).ok()?;
    crate::hash::hash_stream(file, Algorithm::Blake3).ok()
}

/// Errors of the check's walk and reads, by path.
#[derive(Default)]
struct Collect(Mutex<HashMap<PathBuf, String>>);

impl Reporter for Collect {
    fn error(&self, err: &Error) {
        lock(&self.0).insert(err.path().to_path_buf(), err.to_string());
    }
    fn skipped(&self, path: &Path, why: &str) {
        lock(&self.0).insert(path.to_path_buf(), format!("{}: {why}", path.display()));
    }
}

/// Nanoseconds since the epoch (negative before it), as the catalog stores times.
fn ns(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

/// The file at `path` as it is now (its content hash not read: `blake3` is empty), and
/// its status-change time.
fn identity(path: &Path) -> io::Result<(Known, Ctime)> {
    let meta = os::symlink_metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file any more"));
    }
    let id = os::file_id(path, None, &meta)?;
    let known = Known {
        path: path.to_path_buf(),
        dev: id.dev,
        ino: id.ino,
        size: meta.len(),
        mtime_ns: meta.modified().map_or(i64::MIN, ns),
        blake3: String::new(),
    };
    Ok((known, os::change_time(&meta)))
}

/// Looks at `k`'s file again: it must still be the file read, its status-change time
/// still `ctime` (else why not, without its path). Returns the file as it is.
fn still(k: &Known, ctime: Ctime) -> Result<Known, String> {
    let (now, now_ctime) = identity(&k.path).map_err(|e| describe_io(&e))?;
    let known = Known {
        blake3: String::new(),
        ..k.clone()
    };
    match differs(&known, &now) {
        None if now_ctime == ctime => Ok(now),
        None => Err(
            "changed just now (its status-change time moved: rewritten with its \
                     modification time put back?)"
                .into(),
        ),
        Some(what) => Err(format!("changed just now ({what})")),
    }
}

/// Whether `at` holds the very file `k` (device, inode, size, modification time): what an
/// act that moved or replaced a name confirms afterwards. The status-change time is not
/// compared: the act itself moves it.
fn is_the_file(at: &Path, k: &Known) -> Result<(), String> {
    let (now, _) = identity(at).map_err(|e| format!("{}: {}", at.display(), describe_io(&e)))?;
    match same_file(at, k, &now) {
        Ok(()) => Ok(()),
        Err(what) => Err(format!(
            "not the file checked ({what}) was at {} when the act was done",
            k.path.display()
        )),
    }
}

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
fn under(dir: &Path, path: &Path) -> PathBuf {
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
const BATCH: usize = 1024;

/// Bytes of files and keepers read per batch, at most (a batch of large videos is read
/// and acted on in a few seconds, not minutes).
const BATCH_BYTES: u64 = 1 << 30;

/// A file this run moved away (a move, the trash), confirmed at its new path: made only
/// by [`resolve`].
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

/// What became of one candidate.
#[derive(Debug)]
pub enum Outcome {
    /// Done: where the file is now (a move, the trash), and the bytes this freed (none
    /// when it was its keeper's own file).
    Done {
        /// Where it went, for a move or the trash: the evidence that its path is empty
        /// because of this act ([`super::Forget::moved_away`]).
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
                    to: to.map(|to| Moved {
                        from: checked[k].path().to_path_buf(),
                        to,
                    }),
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

fn journal_failed(journal: &Journal, e: io::Error) -> Error {
    Error::io(
        journal.path().to_path_buf(),
        io::Error::other(format!(
            "the journal cannot be written ({}): stopped",
            describe_io(&e)
        )),
    )
}

/// An act made ready, everything it needs in place, nothing done to the file yet.
enum Prepared {
    /// Nothing to do (a hard link or reflink to the keeper's own file).
    Nothing,
    Move(PathBuf),
    /// The `.trashinfo` chosen (written once journalled), and the path in the trash.
    Trash(trash::Pending, PathBuf),
    /// The same, its `.trashinfo` written.
    Trashing(trash::Info, PathBuf),
    /// The name the link to the keeper gets beside the file (journalled before it is made).
    HardLink(PathBuf),
    Reflink,
}

/// One batch of [`resolve`]: `checked` made ready, journalled, and acted on.
fn act_batch(
    checked: &[Checked],
    act: &Act,
    journal: &mut Journal,
    places: &mut Places,
    mut each: impl FnMut(usize, Result<Option<PathBuf>, Error>),
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
                    file: Stamp::of(&c.file),
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
                        entry.keeper_file = Some(Stamp::of(&c.keeper));
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
        if let Err(e) = File::open(dir).and_then(|d| Durable::filesystem_synced(&d)) {
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
            changed.extend(to.as_deref().and_then(Path::parent).map(Path::to_path_buf));
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

/// Does the prepared act on `c`: the file and its keeper looked at again first (each
/// must be as checked, its status-change time included), and, for an act that moved or
/// replaced a name, the file taken confirmed as the one checked afterwards (else put
/// back).
fn act_now(c: &Checked, p: Prepared, places: &mut Places) -> io::Result<Option<PathBuf>> {
    let path = c.path();
    still(&c.file, c.file_ctime).map_err(io::Error::other)?;
    let keeper_ctime = places.keeper_ctime(c);
    still(&c.keeper, keeper_ctime)
        .map_err(|why| io::Error::other(format!("its keeper {}: {why}", c.keeper().display())))?;
    #[cfg(feature = "test-hooks")]
    if !matches!(p, Prepared::HardLink(_)) {
        seekless_core::test_hooks::at_start(path);
    }
    match p {
        Prepared::Nothing => Ok(None),
        Prepared::Move(to) => match rename_noreplace(path, &to) {
            Ok(()) => {
                confirm_moved(path, &to, &c.file)?;
                Ok(Some(to))
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(io::Error::other(format!(
                "{} is there already: not moved (never over another file)",
                to.display()
            ))),
            Err(e) => Err(e),
        },
        Prepared::Trash(..) => Err(io::Error::other(
            "its .trashinfo was not written: not put in the trash",
        )),
        Prepared::Trashing(info, files) => {
            rename_noreplace(path, &files)?;
            confirm_moved(path, &files, &c.file)?;
            info.keep();
            Ok(Some(files))
        }
        Prepared::HardLink(name) => {
            let temp = OwnTemp::hard_link_named(c.keeper(), name, path)?;
            #[cfg(feature = "test-hooks")]
            seekless_core::test_hooks::at_start(path);
            // Linking moves the keeper's status-change time: this run's own change.
            places.keeper_changed(c, temp.path());
            // The link is to the file that was read as the keeper (its name could have
            // been given to another file since it was looked at).
            is_the_file(temp.path(), &c.keeper).map_err(|why| {
                io::Error::other(format!("its keeper {}: {why}", c.keeper().display()))
            })?;
            let replaced =
                temp.replace_confirmed(Durable::no_data(), |at| is_the_file(at, &c.file));
            places.keeper_changed(c, path);
            replaced.map(|()| None)
        }
        Prepared::Reflink => dedupe(c).map(|()| None),
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

/// What the acts of a run share, looked up once: each folder's mount (a move's
/// destination and the folders made under it), the trash of each folder's files, and the
/// keepers' status-change times as this run's own acts left them.
#[derive(Default)]
struct Places {
    mounts: HashMap<PathBuf, Lies>,
    /// By the folder a trashed file is in (the same device can be mounted twice, and a
    /// file goes to the trash of the mount it is reached through).
    trashes: HashMap<PathBuf, Result<trash::Place, String>>,
    /// By keeper (device, inode): its status-change time after this run linked to it
    /// (each link moves it).
    keepers: HashMap<(u64, u64), Ctime>,
    /// Folders made for moves and not yet journalled.
    made: Vec<PathBuf>,
}

/// Makes `dir` and the folders missing above it, one at a time from the nearest one that
/// exists, which must lie where `mount` says (a rename never crosses a mount, not even a
/// bind mount of the same filesystem, nor a btrfs subvolume) and, like every folder made, a real
/// directory (not a link): returns the folders made, outermost first. Nothing is made
/// where that fails.
fn make_folders_on(dir: &Path, mount: Lies) -> Result<Vec<PathBuf>, String> {
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
    fn folder_on(&mut self, dir: &Path, mount: Lies) -> Result<(), String> {
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
    fn keeper_ctime(&self, c: &Checked) -> Ctime {
        let id = (c.keeper.dev, c.keeper.ino);
        self.keepers.get(&id).copied().unwrap_or(c.keeper_ctime)
    }

    /// This run just linked to `c`'s keeper (the link is at `at`): remembers the keeper's
    /// status-change time as that left it, if `at` is still the keeper.
    fn keeper_changed(&mut self, c: &Checked, at: &Path) {
        let id = (c.keeper.dev, c.keeper.ino);
        match identity(at) {
            Ok((now, ctime)) if (now.dev, now.ino) == id => {
                self.keepers.insert(id, ctime);
            }
            // Not the keeper's there: whatever it is now, nothing links to it unseen.
            _ => {}
        }
    }
}

/// Makes `act` on `checked` ready: checks what can be checked before it, and puts in place
/// what it needs, leaving the file as it is (it is looked at again just before the act).
fn prepare(checked: &Checked, act: &Act, places: &mut Places) -> Result<Prepared, Error> {
    let path = checked.path();
    let fail = |why: String| Error::io(path, io::Error::other(why));
    if !checked.identical && !act.keeps_the_bytes() {
        return Err(fail(format!(
            "not identical to its keeper: only moved or put in the trash, never {}",
            act.name()
        )));
    }
    if checked.same_file {
        return match act {
            // Done already.
            Act::HardLink { .. } | Act::Reflink => Ok(Prepared::Nothing),
            _ => Err(fail(format!(
                "it is its keeper {} under another name (a hard link or a bind mount): left, removing it would free nothing",
                checked.keeper().display()
            ))),
        };
    }
    match act {
        Act::Move(dir) => {
            let to = under(dir, path);
            let parent = to.parent().unwrap_or(dir);
            // Nothing is made under a folder on another filesystem; nor moved across a
            // mount point or a link inside it.
            let mount = Lies::at(path).map_err(|e| fail(describe_io(&e)))?;
            places.folder_on(parent, mount).map_err(fail)?;
            Ok(Prepared::Move(to))
        }
        Act::Trash => {
            let folder = path.parent().unwrap_or(path).to_path_buf();
            let place = places
                .trashes
                .entry(folder)
                .or_insert_with(|| trash::place_for(path, checked.file.dev))
                .as_mut()
                .map_err(|why| fail(why.clone()))?;
            let (info, files) = place.reserve(path).map_err(fail)?;
            Ok(Prepared::Trash(info, files))
        }
        Act::HardLink {
            metadata_may_differ,
        } => {
            still(&checked.keeper, places.keeper_ctime(checked))
                .map_err(|why| fail(format!("its keeper {}: {why}", checked.keeper().display())))?;
            if checked.keeper.dev != checked.file.dev {
                return Err(fail(
                    "its keeper is on another filesystem: no hard link".into(),
                ));
            }
            if !metadata_may_differ && let Some(what) = metadata_differs(path, checked.keeper()) {
                return Err(fail(format!(
                    "its {what} differ from its keeper's {}: not linked (a link has one \
                     owner, mode and set of attributes; --link-any-metadata links all the \
                     same, the keeper's winning)",
                    checked.keeper().display()
                )));
            }
            // Made just before the act, under this name, journalled first: a run killed
            // in between leaves a name its journal gives (see `clean_up`).
            Ok(Prepared::HardLink(crate::temp::temp_beside(path)))
        }
        Act::Reflink => Ok(Prepared::Reflink),
    }
}

/// What of a file's metadata a user sees that differs from `keeper`'s, if anything:
/// owner, group, permission bits, extended attributes (ACLs among them).
fn metadata_differs(file: &Path, keeper: &Path) -> Option<&'static str> {
    let attrs = |p: &Path| os::symlink_metadata(p).map(|m| os::attrs(&m));
    let (Ok(a), Ok(b)) = (attrs(file), attrs(keeper)) else {
        return Some("owner and mode (they could not be read)");
    };
    if (a.uid, a.gid) != (b.uid, b.gid) {
        return Some("owner or group");
    }
    if a.mode & 0o7777 != b.mode & 0o7777 {
        return Some("permissions");
    }
    let sorted = |p: &Path| {
        os::xattrs(p).map(|mut x| {
            x.sort();
            x
        })
    };
    match (sorted(file), sorted(keeper)) {
        (Ok(x), Ok(y)) if x == y => None,
        (Ok(_), Ok(_)) => Some("extended attributes or ACLs"),
        _ => Some("extended attributes (they could not be read)"),
    }
}

/// Flushes the directories a rename changed (best effort: the rename itself is done).
fn sync_parents(from: &Path, to: &Path) {
    for p in [from.parent(), to.parent()].into_iter().flatten() {
        let _ = os::sync_directory(p);
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

/// Shares the keeper's extents with the file, range by range (`FIDEDUPERANGE`): the kernel
/// compares the bytes under its locks and shares only what is the same. Both are opened
/// anew and must be the very files checked.
fn dedupe(checked: &Checked) -> io::Result<()> {
    let same = |path: &Path, m: &fs::Metadata, k: &Known| {
        m.is_file()
            && os::file_id(path, None, m).is_ok_and(|id| (id.dev, id.ino) == (k.dev, k.ino))
            && m.len() == k.size
    };
    os::share_extents(
        checked.keeper(),
        checked.path(),
        checked.file.size,
        |a, b| same(checked.keeper(), a, &checked.keeper) && same(checked.path(), b, &checked.file),
    )
}

/// What [`clean_up`] removed.
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
fn open_ended(path: &Path) -> Result<Option<File>, Error> {
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
                match leftover_link(&temp, &from, keeper, &e.file) {
                    Ok(true) => {
                        // A temporary of this journal's run, ended: a second name of the
                        // keeper, or the replaced duplicate (its bytes the keeper's).
                        #[allow(clippy::disallowed_methods)]
                        match os::with_path(&temp, |p| fs::remove_file(p)) {
                            Ok(()) => out.temps += 1,
                            Err(err) => reporter.error(&Error::io(&temp, err)),
                        }
                    }
                    Ok(false) => {}
                    Err(why) => reporter.warning(Some(&temp), &why),
                }
            }
            "trash" => {
                let (Some(info), Some(to)) = (&e.info, &e.to) else {
                    continue;
                };
                let (info, to, from) = (info.path(), to.path(), e.from.path());
                let in_trash = os::symlink_metadata(&to).is_ok();
                if !in_trash && os::symlink_metadata(&info).is_ok() {
                    trash::forget_info(&info, &from);
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

/// Whether the hard link temporary `temp` of an ended run may go: `Ok(false)` when there
/// is nothing there, `Err` (why not) when something is there that is neither the keeper
/// (`keeper`, with another name) nor the replaced file (`file`, its path `from` now the
/// keeper's).
fn leftover_link(temp: &Path, from: &Path, keeper: &Stamp, file: &Stamp) -> Result<bool, String> {
    let Ok(meta) = os::symlink_metadata(temp) else {
        return Ok(false);
    };
    let id_of = |p: &Path, m: &fs::Metadata| {
        os::file_id(p, None, m)
            .ok()
            .map_or((None, None), |id| (Some(id.dev), Some(id.ino)))
    };
    // Where the count is not known: never taken for a second name.
    let links = os::link_count(&meta).unwrap_or(1);
    let stamp = |v: &Stamp| (Some(v.dev), Some(v.ino), Some(v.size), Some(v.mtime_ns));
    let (k, f) = (stamp(keeper), stamp(file));
    let id = id_of(temp, &meta);
    let is = |s: (Option<u64>, Option<u64>, Option<u64>, Option<i64>)| {
        meta.is_file()
            && id == (s.0, s.1)
            && Some(meta.len()) == s.2
            && meta.modified().ok().map(ns) == s.3
    };
    if is(k) && links > 1 {
        return Ok(true);
    }
    let from_is_keeper = os::symlink_metadata(from).is_ok_and(|m| id_of(from, &m) == (k.0, k.1));
    if is(f) && from_is_keeper {
        return Ok(true);
    }
    Err(
        "left: a temporary name of a killed `dupes --act hardlink`, holding neither the \
         keeper nor the file it replaced"
            .into(),
    )
}

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
    /// What the run left behind when it was killed, removed first ([`clean_up`]).
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
        if let Err(err) = rename_noreplace(&to, &back) {
            out.failed += 1;
            let why = if err.kind() == io::ErrorKind::AlreadyExists {
                io::Error::other(format!(
                    "a file is at its old path {} now: left where it is",
                    from.display()
                ))
            } else {
                err
            };
            reporter.error(&Error::io(&to, why));
            continue;
        }
        // What went back is the file checked (another put at `to` since would not be).
        if let Err(why) = is_the_file(&back, &expect) {
            out.failed += 1;
            let again = rename_noreplace(&back, &to);
            reporter.error(&Error::io(
                &from,
                io::Error::other(match again {
                    Ok(()) => format!("{why}: put back at {}", to.display()),
                    Err(e) => format!("{why}: left here ({})", describe_io(&e)),
                }),
            ));
            continue;
        }
        sync_parents(&to, &from);
        if act == "trash"
            && let Some(info) = e.info.as_ref().map(JournalPath::path)
        {
            trash::forget_info(&info, &from);
        }
        out.restored += 1;
        journal::undone(&mut journal, n)
            .and_then(|()| journal.sync_data())
            .map_err(|e| Error::io(path, e))?;
    }
    // The folders the run made for its moves, deepest first, once empty (a folder with
    // anything in it stays).
    for folder in made.iter().rev() {
        if through_a_link(folder).is_none()
            && os::symlink_metadata(folder).is_ok_and(|m| m.is_dir())
        {
            // The one place a folder a move made goes: only empty (`rmdir`).
            #[allow(clippy::disallowed_methods)]
            let _ = os::with_path(folder, |p| fs::remove_dir(p));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Through the library, where no command line stands between a caller and the acts.
    #[cfg(unix)]
    #[test]
    fn only_bytes_read_the_same_as_the_keepers_are_linked() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let at = |n: &str| t.path().join(n);
        for (name, bytes) in [("keeper", "one"), ("differs", "two"), ("similar", "one")] {
            fs::write(at(name), bytes).unwrap();
        }
        let known = |p: &Path| {
            let (k, _) = identity(p).unwrap();
            Known {
                blake3: content_hash(p).unwrap(),
                ..k
            }
        };
        let candidates = vec![
            // Said to be identical, its bytes differ.
            Candidate {
                file: known(&at("differs")),
                keeper: known(&at("keeper")),
                identical: true,
            },
            // Not said to be identical: never replaced.
            Candidate {
                file: known(&at("similar")),
                keeper: known(&at("keeper")),
                identical: false,
            },
        ];
        let mut journal = Journal::create(&at("journal"), About::default()).unwrap();
        let mut out = Vec::new();
        let link = Act::HardLink {
            metadata_may_differ: true,
        };
        resolve(candidates, &link, &mut journal, |_, o| out.push(o)).unwrap();
        let why = |o: &Outcome| match o {
            Outcome::Skipped(why) => why.clone(),
            other => panic!("acted: {other:?}"),
        };
        assert!(why(&out[0]).contains("its bytes differ"), "{:?}", out[0]);
        assert!(why(&out[1]).contains("not identical"), "{:?}", out[1]);
        let ino = |n: &str| fs::metadata(at(n)).unwrap().ino();
        assert!(ino("differs") != ino("keeper") && ino("similar") != ino("keeper"));
        assert_eq!(fs::read(at("differs")).unwrap(), b"two");
    }

    #[test]
    fn another_file_of_the_same_size_and_time_is_the_file_only_with_its_content() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        fs::write(&a, b"one").unwrap();
        // `b` written with `bytes`, its modification time `a`'s.
        let write_b = |bytes: &[u8]| {
            fs::write(&b, bytes).unwrap();
            fs::File::options()
                .write(true)
                .open(&b)
                .unwrap()
                .set_modified(fs::metadata(&a).unwrap().modified().unwrap())
                .unwrap();
        };
        write_b(b"two");
        let (known_a, _) = identity(&a).unwrap();
        let known_a = Known {
            blake3: content_hash(&a).unwrap(),
            ..known_a
        };
        let (now_b, _) = identity(&b).unwrap();
        // Same size and time, another inode: only the same bytes make it the file (a pool
        // that renumbers inodes); other bytes do not.
        assert_eq!(same_file(&b, &known_a, &now_b), Err(ANOTHER_FILE));
        write_b(b"one");
        let (now_b, _) = identity(&b).unwrap();
        assert_eq!(same_file(&b, &known_a, &now_b), Ok(()));
        // Without a known content, another inode is another file.
        let bare = Known {
            blake3: String::new(),
            ..known_a.clone()
        };
        assert_eq!(same_file(&b, &bare, &now_b), Err(ANOTHER_FILE));
    }

    #[test]
    fn a_move_keeps_the_whole_path_under_its_folder() {
        assert_eq!(
            under(Path::new("/d/moved"), Path::new("/photos/2024/a.jpg")),
            Path::new("/d/moved/photos/2024/a.jpg")
        );
        assert_eq!(
            Act::Move("/m".into()).destination(Path::new("/a/../b")),
            Some(PathBuf::from("/m/a/b"))
        );
    }

    #[test]
    fn journal_paths_survive_bytes_that_are_not_utf8() {
        for p in ["/p/a.jpg", "/p/\u{1b}[31m.jpg"] {
            let j = JournalPath::of(Path::new(p));
            assert_eq!(j, JournalPath::Text(p.into()));
            assert_eq!(j.path(), PathBuf::from(p));
        }
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let odd = Path::new(std::ffi::OsStr::from_bytes(b"/p/\xff.jpg"));
            let j = JournalPath::of(odd);
            assert_eq!(
                serde_json::to_string(&j).unwrap(),
                r#"{"bytes":[47,112,47,255,46,106,112,103]}"#
            );
            assert_eq!(j.path(), odd);
        }
        assert!(serde_json::from_str::<JournalPath>(r#"{"bytes":[300]}"#).is_err());
    }

    #[test]
    fn a_journal_is_read_line_by_line_and_its_header_is_required() {
        let act = |n: u64, act: &str| {
            format!(
                r#"{{"act":"{act}","n":{n},"from":"/p/a{n}.jpg","keeper":"/p/k.jpg","file":{{"dev":1,"ino":{n},"size":3,"mtime_ns":5}},"to":"/m/p/a{n}.jpg"}}"#
            )
        };
        let text = format!(
            "{{\"seekless_journal\":1,\"about\":{{}}}}\n{}\n{{\"done\":1}}\n{}\n{{\"undone\":1}}\n\
             {{\"failed\":2,\"why\":null}}\n{{\"made\":\"/m/p\"}}\n{{\"act\":\"mo",
            act(1, "move"),
            act(2, "trash")
        );
        let r = parse_journal(text.as_bytes()).unwrap();
        assert_eq!(r.acts.len(), 2);
        assert_eq!(r.acts[1].act, "trash");
        assert_eq!(
            r.acts[0].to.as_ref().map(JournalPath::path),
            Some("/m/p/a1.jpg".into())
        );
        assert!(r.undone.contains(&1) && r.failed.contains(&2));
        assert_eq!(r.made, [PathBuf::from("/m/p")]);
        assert_eq!(r.passed_over, [8]);
        // An act line missing what an act needs is not an act.
        let text = b"{\"seekless_journal\":1,\"about\":{}}\n{\"act\":\"move\",\"n\":1}\n";
        let r = parse_journal(text).unwrap();
        assert!(r.acts.is_empty() && r.passed_over == [2]);
        assert!(parse_journal(act(1, "move").as_bytes()).is_err());
        assert!(parse_journal(b"garbage\n{\"seekless_journal\":1,\"about\":{}}\n").is_err());
        assert!(parse_journal(b"\n\n").is_err());
        assert!(parse_journal(b"{\"seekless_journal\":2,\"about\":{}}\n").is_err());
    }

    #[test]
    fn a_journal_written_is_a_journal_read() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("j");
        let mut j = Journal::create(
            &path,
            About::new("move", Path::new("/p.db"), Some(Path::new("/m")), 1),
        )
        .unwrap();
        j.made(Path::new("/m/p")).unwrap();
        let intent = Intent {
            n: 0,
            act: "move".into(),
            from: JournalPath::of(Path::new("/p/a.jpg")),
            keeper: JournalPath::of(Path::new("/p/b.jpg")),
            file: Stamp {
                dev: 1,
                ino: 2,
                size: 3,
                mtime_ns: -4,
                blake3: "ab".into(),
            },
            to: Some(JournalPath::of(Path::new("/m/p/a.jpg"))),
            info: None,
            temp: None,
            keeper_file: None,
        };
        assert_eq!(j.intent(intent.clone()).unwrap(), 1);
        j.outcome(1, false, Some("why")).unwrap();
        drop(j);
        let r = parse_journal(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            r.about,
            About::new("move", Path::new("/p.db"), Some(Path::new("/m")), 1)
        );
        assert_eq!(r.acts, [Intent { n: 1, ..intent }]);
        assert!(r.failed.contains(&1) && r.passed_over.is_empty());
        assert_eq!(r.made, [PathBuf::from("/m/p")]);
    }
}
