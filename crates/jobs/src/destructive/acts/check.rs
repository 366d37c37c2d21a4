//! The check: each candidate and its keeper read again, in physical order, and compared
//! with what the catalog knew; only what passes becomes a [`Checked`]. And the looks just
//! before an act ([`Checked::look_again`], `is_the_file`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::digest::{Algorithm, hash_stream};
use crate::hash::hash_plan;
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_core::read::ReadOptions;
use seekless_core::{Plan, PlanOptions};
use seekless_sys as os;
use seekless_sys::describe_io;
use seekless_sys::sync::lock;

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

/// Evidence that a candidate may be acted on (made only by [`check`]).
///
/// ```compile_fail
/// use seekless_jobs::destructive::acts::{Checked, Known};
/// let k = Known { path: "/a".into(), dev: 1, ino: 2, size: 3, mtime_ns: 4, blake3: String::new() };
/// let forged = Checked { file: k.clone(), keeper: k, identical: true, same_file: false,
///     file_ctime: None, keeper_ctime: None };
/// ```
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
pub type Ctime = Option<(i64, i64)>;

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

    /// The file, as read now.
    pub fn known_file(&self) -> &Known {
        &self.file
    }

    /// Its keeper, as read now.
    pub fn known_keeper(&self) -> &Known {
        &self.keeper
    }

    /// The two were said to be byte-identical, and read so now.
    pub fn identical(&self) -> bool {
        self.identical
    }

    /// The file is its keeper's, under another name (a hard link, a bind mount).
    pub fn is_its_keeper(&self) -> bool {
        self.same_file
    }

    /// The keeper's status-change time when it was read.
    pub fn keeper_ctime(&self) -> Ctime {
        self.keeper_ctime
    }

    /// The name a hard link to the keeper takes beside the file before it replaces it (a
    /// temporary name of seekless's, to be journalled before it is made).
    pub fn link_name(&self) -> PathBuf {
        crate::temp::temp_beside(self.path())
    }

    /// Looks at the file and its keeper again: each must still be the file read, the
    /// file's status-change time unmoved, the keeper's `keeper_ctime` (as read, or as
    /// this run's own links to it left it). Else why not.
    pub fn look_again(&self, keeper_ctime: Ctime) -> io::Result<()> {
        still(&self.file, self.file_ctime).map_err(io::Error::other)?;
        self.keeper_still(keeper_ctime).map_err(|why| {
            io::Error::other(format!("its keeper {}: {why}", self.keeper().display()))
        })
    }

    /// Looks at the keeper again: it must still be the file read, its status-change time
    /// `ctime`. Else why not (without its path).
    pub fn keeper_still(&self, ctime: Ctime) -> Result<(), String> {
        still(&self.keeper, ctime).map(drop)
    }
}

/// Reads every candidate and its keeper now, in physical order (one sweep per disk, as
/// `hash` reads), and returns, for each candidate in order, its evidence or why it is
/// skipped. Each candidate's paths move into its evidence (one copy of each path). The
/// status-change time of each is taken before the read and must be the same after it.
pub fn check(candidates: Vec<Candidate>) -> Vec<Result<Checked, String>> {
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
pub(super) fn differs(known: &Known, now: &Known) -> Option<&'static str> {
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
pub(super) const ANOTHER_FILE: &str = "another file at that path";

/// Whether the file `now`, found at `at`, is `k`'s (its content hash `k.blake3`, if known):
/// the same device, inode, size and modification time; or, where a filesystem gives a
/// file another inode number when it is renamed (mergerfs, some FUSE and network
/// filesystems), the same size, modification time and content, read now. Else what
/// differs.
pub fn same_file(at: &Path, k: &Known, now: &Known) -> Result<(), &'static str> {
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
pub(super) fn content_hash(path: &Path) -> Option<String> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    os::set_no_follow_no_wait(&mut opts);
    let file = os::with_path(path, |p| opts.open(p)).ok()?;
    hash_stream(file, Algorithm::Blake3).ok()
}

/// Errors of the check's walk and reads, by path.
#[derive(Default)]
pub(super) struct Collect(Mutex<HashMap<PathBuf, String>>);

impl Reporter for Collect {
    fn error(&self, err: &Error) {
        lock(&self.0).insert(err.path().to_path_buf(), err.to_string());
    }
    fn skipped(&self, path: &Path, why: &str) {
        lock(&self.0).insert(path.to_path_buf(), format!("{}: {why}", path.display()));
    }
}

/// Nanoseconds since the epoch (negative before it), as the catalog stores times.
pub(super) fn ns(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

/// The file at `path` as it is now (its content hash not read: `blake3` is empty), and
/// its status-change time.
pub fn identity(path: &Path) -> io::Result<(Known, Ctime)> {
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
pub(super) fn still(k: &Known, ctime: Ctime) -> Result<Known, String> {
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
pub(super) fn is_the_file(at: &Path, k: &Known) -> Result<(), String> {
    let (now, _) = identity(at).map_err(|e| format!("{}: {}", at.display(), describe_io(&e)))?;
    match same_file(at, k, &now) {
        Ok(()) => Ok(()),
        Err(what) => Err(format!(
            "not the file checked ({what}) was at {} when the act was done",
            k.path.display()
        )),
    }
}
