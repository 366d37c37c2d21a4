//! The evidence destructive acts take: a [`Witness`] of the run, the [`Clearance`] it
//! gives ([`Withheld`] when it gives none), and `Durable`, a replacement's data on the
//! disk.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use seekless_core::Error;
use seekless_core::Reporter;
use seekless_core::{Plan, PlanOptions};
use seekless_sys as os;
use seekless_sys::sync::lock;

/// Passes everything on to the caller's reporter and remembers what the run could not see
/// whole: how many errors, and the paths that failed or were left out on purpose (another
/// filesystem under `-x`, a directory walked under another name). Every job that deletes
/// or forgets reports through one.
pub struct Witness<'a, F = fn(&Error)> {
    inner: &'a dyn Reporter,
    errors: AtomicU64,
    unseen: Mutex<Vec<PathBuf>>,
    /// A walk was planned through this witness ([`walk`](Witness::walk)): without one it
    /// saw nothing, and gives no clearance.
    walked: AtomicBool,
    /// Also told of each error.
    on_error: F,
}

impl<'a> Witness<'a> {
    /// A witness that passes everything on to `inner`.
    pub fn new(inner: &'a dyn Reporter) -> Self {
        Witness::with_on_error(inner, |_| {})
    }
}

impl<'a, F: Fn(&Error) + Sync> Witness<'a, F> {
    /// A witness that hands each error to `on_error` too.
    pub fn with_on_error(inner: &'a dyn Reporter, on_error: F) -> Self {
        Witness {
            inner,
            errors: AtomicU64::new(0),
            unseen: Mutex::new(Vec::new()),
            walked: AtomicBool::new(false),
            on_error,
        }
    }

    /// Walks and plans `inputs` ([`Plan::build`]) with this witness told of every error and
    /// skip: the walk whose completeness a [`clearance`](Self::clearance) certifies.
    pub fn walk<P: AsRef<Path> + Sync>(&self, inputs: &[P], opts: &PlanOptions) -> Plan {
        let plan = Plan::build(inputs, opts, self);
        self.walked.store(true, Ordering::Relaxed);
        plan
    }

    /// Errors reported so far, anywhere (walk, read, write).
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The paths that failed or were left out, so far.
    pub fn unseen(&self) -> Vec<PathBuf> {
        lock(&self.unseen).clone()
    }

    /// The evidence that the run saw what a removal needs, once it has walked
    /// ([`walk`](Self::walk)): with `ignore_errors`, always, shielding each path that failed
    /// or was left out; without, only when nothing failed. Withheld before a walk.
    ///
    /// The witness is consumed: a clearance speaks for everything its witness saw, and
    /// nothing can be reported to that witness afterwards and go unheeded by it. (A run
    /// that acts before it is over takes [`clearance_so_far`](Self::clearance_so_far).)
    pub fn clearance(self, ignore_errors: bool) -> Result<Clearance, Withheld> {
        self.clearance_now(ignore_errors)
    }

    /// [`clearance`](Self::clearance) with errors ignored (`index`, which keeps every row
    /// at or under what it could not see, and forgets others after errors too).
    pub fn clearance_outside_unseen(self) -> Result<Clearance, Withheld> {
        self.clearance_now(true)
    }

    /// For a run that acts twice (`copy` replaces what stands in the way of a directory
    /// after its walk, and deletes after its reads): the clearance for what was seen up to
    /// now, and the witness that goes on from here, remembering everything this one saw.
    /// The first clearance speaks only for what came before it; the later one, given by
    /// the returned witness, for the whole run.
    pub fn clearance_so_far(self, ignore_errors: bool) -> (Result<Clearance, Withheld>, Self) {
        let clearance = self.clearance_now(ignore_errors);
        (clearance, self)
    }

    fn clearance_now(&self, ignore_errors: bool) -> Result<Clearance, Withheld> {
        if !self.walked.load(Ordering::Relaxed) {
            return Err(Withheld::NoWalk);
        }
        let errors = self.errors();
        if errors > 0 && !ignore_errors {
            return Err(Withheld::Errors(errors));
        }
        let mut c = Clearance::nothing_shielded();
        for path in self.unseen() {
            c.shield(path);
        }
        Ok(c)
    }
}

/// Why a [`Witness`] gave no clearance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withheld {
    /// Errors happened (this many): the run may not have seen everything.
    Errors(u64),
    /// No walk was planned through the witness: it saw nothing.
    NoWalk,
}

impl std::fmt::Display for Withheld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Withheld::Errors(n) => {
                write!(f, "{n} error{} in this run", if *n == 1 { "" } else { "s" })
            }
            Withheld::NoWalk => f.write_str("this run walked nothing"),
        }
    }
}

impl<F: Fn(&Error) + Sync> Reporter for Witness<'_, F> {
    fn error(&self, err: &Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        lock(&self.unseen).push(err.path().to_path_buf());
        self.inner.error(err);
        (self.on_error)(err);
    }

    fn skipped(&self, path: &Path, why: &str) {
        // Left out on purpose: it exists, so nothing at or under it is "gone".
        lock(&self.unseen).push(path.to_path_buf());
        self.inner.skipped(path, why);
    }

    fn planned(&self, files: u64, bytes: u64) {
        self.inner.planned(files, bytes);
    }

    fn warning(&self, path: Option<&Path>, what: &str) {
        self.inner.warning(path, what);
    }
}

/// Evidence that the run saw what a removal needs (made only by [`Witness::clearance`],
/// after a walk): the paths it could not see are shielded, with everything under them,
/// and (after [`sparing`](Self::sparing)) the run's sources are spared.
///
/// It cannot be made otherwise: it has no `Default` and no public field.
///
/// ```compile_fail
/// let forged = seekless_jobs::destructive::Clearance::default();
/// ```
///
/// ```compile_fail
/// use std::collections::HashSet;
/// let forged = seekless_jobs::destructive::Clearance { everything: false, shielded: HashSet::new(), leading: HashSet::new(), sources: HashSet::new(), holders: HashSet::new() };
/// ```
///
/// A witness that walked nothing gives none:
///
/// ```
/// use seekless_core::Quiet;
/// use seekless_jobs::destructive::{Withheld, Witness};
/// assert_eq!(Witness::new(&Quiet).clearance(false).err(), Some(Withheld::NoWalk));
/// ```
///
/// A witness gives one clearance, and is not told anything after it:
///
/// ```compile_fail
/// use seekless_core::{PlanOptions, Quiet, Reporter};
/// use seekless_jobs::destructive::Witness;
/// let w = Witness::new(&Quiet);
/// w.walk::<&str>(&[], &PlanOptions::default());
/// let clearance = w.clearance(false);
/// w.skipped(std::path::Path::new("/mnt"), "another filesystem"); // unheeded: refused
/// ```
#[derive(Debug)]
pub struct Clearance {
    /// At and under each: nothing is removed.
    shielded: HashSet<PathBuf>,
    /// The ancestors of shielded paths: not removed whole, but looked into.
    leading: HashSet<PathBuf>,
    /// Everything is shielded.
    everything: bool,
    /// (device, inode) of each source: never removed, never looked into.
    sources: HashSet<(u64, u64)>,
    /// (device, inode) of each directory holding a source: never removed whole.
    holders: HashSet<(u64, u64)>,
}

impl Clearance {
    /// Nothing shielded, nothing spared: the start of a witness's clearance.
    fn nothing_shielded() -> Clearance {
        Clearance {
            shielded: HashSet::new(),
            leading: HashSet::new(),
            everything: false,
            sources: HashSet::new(),
            holders: HashSet::new(),
        }
    }

    fn shield(&mut self, path: PathBuf) {
        for a in path.ancestors().skip(1) {
            if !self.leading.insert(a.to_path_buf()) {
                break;
            }
        }
        self.shielded.insert(path);
    }

    /// Whether `path` is at or under a path the run could not see.
    pub fn shields(&self, path: &Path) -> bool {
        self.everything
            || (!self.shielded.is_empty() && path.ancestors().any(|a| self.shielded.contains(a)))
    }

    /// Whether the run saw all of `path`: nothing at, above or under it failed or was left
    /// out (an `index` run that may start from here next time, "Catching up without a
    /// walk" in docs/index.md).
    pub fn sees_whole(&self, path: &Path) -> bool {
        !self.shields(path) && !self.leads_to_shield(path)
    }

    /// Whether something under `path` is shielded (so it may be looked into, not removed).
    pub(super) fn leads_to_shield(&self, path: &Path) -> bool {
        self.everything || self.leading.contains(path)
    }

    /// The same evidence with `path` (and everything under it) shielded too.
    pub fn shielding(mut self, path: PathBuf) -> Clearance {
        self.shield(path);
        self
    }

    /// The same evidence about other names: each shielded path as `map` names it (a copy's
    /// source paths as destination paths). A path `map` cannot name shields everything.
    pub fn translated(self, map: impl Fn(&Path) -> Option<PathBuf>) -> Clearance {
        let mut c = Clearance {
            everything: self.everything,
            sources: self.sources,
            holders: self.holders,
            ..Clearance::nothing_shielded()
        };
        for path in self.shielded {
            match map(&path) {
                Some(p) => c.shield(p),
                None => c.everything = true,
            }
        }
        c
    }

    /// Spares `sources` and every directory that holds one, by identity: a removal never
    /// takes them, however they are named (nested in the destination, through a bind
    /// mount). A source that cannot be looked at spares everything.
    pub fn sparing(mut self, sources: &[PathBuf]) -> Clearance {
        for source in sources {
            let Ok(real) = std::fs::canonicalize(source) else {
                self.everything = true;
                continue;
            };
            for (i, a) in real.ancestors().enumerate() {
                let Some(id) = identity(a) else {
                    self.everything = true;
                    break;
                };
                if i == 0 {
                    self.sources.insert(id);
                } else {
                    self.holders.insert(id);
                }
            }
        }
        self
    }

    /// Why the entry `meta` may not be removed whole, if it may not.
    pub(super) fn spares(&self, path: &Path, meta: &fs::Metadata) -> Option<&'static str> {
        let id = os::file_id(path, None, meta)
            .ok()
            .map(|id| (id.dev, id.ino));
        match id {
            None => Some("its identity is unknown"),
            Some(id) if self.sources.contains(&id) => Some("it is a source of this run"),
            Some(id) if self.holders.contains(&id) => Some("it holds a source of this run"),
            Some(_) => None,
        }
    }

    /// Whether the directory `meta` is a source (whose contents are the source's own).
    pub(super) fn is_source(&self, path: &Path, meta: &fs::Metadata) -> bool {
        os::file_id(path, None, meta)
            .map(|id| self.sources.contains(&(id.dev, id.ino)))
            .unwrap_or(true)
    }
}

pub(crate) fn identity(path: &Path) -> Option<(u64, u64)> {
    let meta = os::metadata(path).ok()?;
    os::file_id(path, None, &meta)
        .ok()
        .map(|id| (id.dev, id.ino))
}

/// Evidence that a replacement's data is on the disk, or that its user gave that up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Durable(());

impl Durable {
    /// Flushes `file`'s data and metadata (`fsync`).
    pub(crate) fn synced(file: &File) -> io::Result<Durable> {
        file.sync_all().map(|()| Durable(()))
    }

    /// Flushes the whole filesystem `file` is on (`syncfs`; elsewhere the file alone):
    /// evidence for every temporary on that filesystem written before the call.
    pub(crate) fn filesystem_synced(file: &File) -> io::Result<Durable> {
        os::sync_filesystem_of(file).map(|()| Durable(()))
    }

    /// Not flushed, because the user asked so (`copy --no-sync`).
    pub(crate) fn not_asked() -> Durable {
        Durable(())
    }

    /// A symlink, FIFO, device node or hard link: nothing but metadata, made durable with
    /// the directory.
    pub(crate) fn no_data() -> Durable {
        Durable(())
    }
}
