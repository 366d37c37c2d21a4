//! The one owner of every destructive act.
//!
//! Removing a file, a directory or a tree, renaming over an existing name, and forgetting
//! catalog rows happen here and nowhere else: `clippy.toml` forbids the primitives
//! (`remove_file`, `remove_dir`, `remove_dir_all`, `rename`, `unlink`, …) in the rest of
//! the crate, and this module allows itself each use, with the reason beside it. Each act
//! takes the evidence that permits it, as a value the rest of the crate cannot make:
//!
//! - [`Clearance`] (from a [`Witness`] of the run): the run saw everything it needed. Either
//!   no error at all happened that could hide an entry, or (`--ignore-errors`, and `index`,
//!   which keeps a row at or under anything it could not see) the paths it could not see
//!   are shielded, with everything under them. A clearance also spares, by identity (so a
//!   bind mount or a `..` does not fool it), every source of the run and each directory
//!   that holds one: removing them would remove what is being copied.
//! - `Durable`: a replacement's data is on the disk (or the user gave that up:
//!   `--no-sync`).
//! - `OwnTemp`: a temporary this run made, under a name only seekless makes
//!   (`.NAME.seekless-tmp-RUN-N`: its one description is in `temp.rs`), locked while it
//!   lives. A temporary of another run is removed only by `remove_dead_temps`, which
//!   proves that run has ended: the temporary's lock is free. A name alone proves nothing:
//!   a user's `.notes.seekless-tmp-2024-12` is never touched.
//! - [`Forget`]: catalog rows of files that were seen gone.
//! - [`resolve::Checked`]: a duplicate and its keeper read just now, each as the catalog
//!   knew it, and (exact duplicates) the same bytes: what `dupes --act` moves, trashes,
//!   links or reflinks, each act journalled first ([`resolve`]).
//!
//! Beyond the evidence, trees are removed conservatively: never across a mount point, never
//! a source or a directory holding one, and a directory is removed only once everything
//! in it is.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(crate) use crate::temp::may_be_live_temp;
use crate::temp::{TempState, is_temp, is_temp_of, temp_beside, temp_state};
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_core::{Plan, PlanOptions};
use seekless_sys as os;
use seekless_sys::sync::lock;
use seekless_sys::{exchange_unsupported, rename_exchange};

pub mod resolve;

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

    /// Whether something under `path` is shielded (so it may be looked into, not removed).
    fn leads_to_shield(&self, path: &Path) -> bool {
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
    fn spares(&self, path: &Path, meta: &fs::Metadata) -> Option<&'static str> {
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
    fn is_source(&self, path: &Path, meta: &fs::Metadata) -> bool {
        os::file_id(path, None, meta)
            .map(|id| self.sources.contains(&(id.dev, id.ino)))
            .unwrap_or(true)
    }
}

pub(super) fn identity(path: &Path) -> Option<(u64, u64)> {
    let meta = os::metadata(path).ok()?;
    os::file_id(path, None, &meta)
        .ok()
        .map(|id| (id.dev, id.ino))
}

/// Removes what is under the directory `dest`, the copy of the directory `source`, but
/// neither in `wanted` nor shielded by `clearance` (`copy --delete`). Returns how many
/// entries were removed (a directory with its contents counts once); what could not be
/// removed is reported and counted in `failed`.
///
/// A `source` that is an empty directory removes nothing from a `dest` that has entries
/// (reported, counted in `failed`) unless `empty_source_allowed`: a drive that is not
/// mounted leaves an empty directory where its files were, and a backup is not to be
/// emptied because of it.
pub(crate) fn remove_extra(
    source: &Path,
    empty_source_allowed: bool,
    dest: &Path,
    wanted: &HashSet<PathBuf>,
    clearance: &Clearance,
    reporter: &dyn Reporter,
    failed: &mut u64,
) -> u64 {
    if clearance.shields(dest) {
        return 0;
    }
    if !empty_source_allowed && is_empty_dir(source) && !is_empty_dir(dest) {
        *failed += 1;
        reporter.error(&Error::io(
            dest,
            io::Error::other(format!(
                "nothing deleted: the source {} is an empty directory (a drive that is not \
                 mounted?); --allow-empty-source deletes all the same",
                source.display()
            )),
        ));
        return 0;
    }
    // Everything removed is on the destination's own mount.
    let mount = match Lies::at(dest) {
        Ok(mount) => mount,
        Err(e) => {
            *failed += 1;
            reporter.error(&Error::io(dest, e));
            return 0;
        }
    };
    let mut removed = 0;
    let mut stack = vec![dest.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let meta = match os::symlink_metadata(&dir) {
            Ok(m) => m,
            Err(e) => {
                *failed += 1;
                reporter.error(&Error::io(&dir, e));
                continue;
            }
        };
        // Another mount's contents are its own: never looked into (`--delete` must not
        // empty a filesystem, or a bind-mounted folder, mounted inside the destination).
        if dir != dest
            && let Err(e) = on_mount(&dir, &meta, mount, "nothing deleted under it")
        {
            *failed += 1;
            reporter.error(&e);
            continue;
        }
        // The contents of a source are the source's: never looked into.
        if clearance.is_source(&dir, &meta) {
            reporter.warning(
                Some(&dir),
                "nothing deleted here: it is a source of this copy",
            );
            continue;
        }
        let entries = match os::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                *failed += 1;
                reporter.error(&Error::io(&dir, e));
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    *failed += 1;
                    reporter.error(&Error::io(&dir, e));
                    break;
                }
            };
            // Not `entry.path()`: a long directory is listed through a short stand-in name.
            let path = dir.join(entry.file_name());
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if clearance.shields(&path) {
                continue;
            }
            if wanted.contains(&path) || clearance.leads_to_shield(&path) {
                if is_dir {
                    stack.push(path);
                }
                continue;
            }
            // Another run's temporary that may be alive is its own, not an extra entry.
            if is_temp(&entry.file_name()) && !matches!(temp_state(&path), TempState::Dead(_)) {
                continue;
            }
            match remove_tree(&path, mount, clearance) {
                Ok(()) => removed += 1,
                Err(e) => {
                    *failed += 1;
                    reporter.error(&e);
                }
            }
        }
    }
    removed
}

/// The folder on the way to `path` that is a symbolic link now, if one is: a path through
/// it leads elsewhere than the one recorded.
fn through_a_link(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .find(|dir| os::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()))
}

/// Whether `dir` is a directory that lists no entry (not one that cannot be listed).
fn is_empty_dir(dir: &Path) -> bool {
    os::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// Where an entry lies, for a removal: its mount ([`os::mount_id`], which tells a bind
/// mount of the same filesystem apart) and its filesystem (the device number: a btrfs
/// subvolume has one of its own, on its parent's mount). A removal stays where the tree
/// it belongs to lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lies {
    mount: u64,
    dev: u64,
}

impl Lies {
    fn at(path: &Path) -> io::Result<Lies> {
        Lies::of(path, &os::symlink_metadata(path)?)
    }

    /// Where `path`, whose metadata is `meta`, lies (one `statx` more).
    fn of(path: &Path, meta: &fs::Metadata) -> io::Result<Lies> {
        let mount = os::mount_id(path)?;
        let dev = os::file_id(path, None, meta)?.dev;
        Ok(Lies { mount, dev })
    }
}

/// Fails, naming `path` (whose metadata is `meta`), unless `path` lies where `mount` says
/// (so it is not a mount point of another filesystem, nor a bind mount, nor a btrfs
/// subvolume, nor under one): `what` says what was kept.
fn on_mount(path: &Path, meta: &fs::Metadata, mount: Lies, what: &str) -> Result<(), Error> {
    let here = Lies::of(path, meta).map_err(|e| Error::io(path, e))?;
    if here == mount {
        return Ok(());
    }
    Err(Error::io(
        path,
        io::Error::other(format!(
            "{what}: a filesystem is mounted here, or another begins here (a btrfs \
             subvolume): a mount point is never removed or emptied"
        )),
    ))
}

/// Removes `path` and, if it is a directory, everything in it, all of it where `mount`
/// says (where the tree it belongs to lies), sparing what `clearance` spares. Stops at
/// the first entry it may not or cannot remove, and says which.
fn remove_tree(path: &Path, mount: Lies, clearance: &Clearance) -> Result<(), Error> {
    let meta = os::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    remove_tree_on(path, meta, mount, clearance)
}

fn remove_tree_on(
    path: &Path,
    meta: fs::Metadata,
    mount: Lies,
    clearance: &Clearance,
) -> Result<(), Error> {
    let kept = |why: String| Error::io(path, io::Error::other(format!("not deleted: {why}")));
    if let Some(why) = clearance.spares(path, &meta) {
        return Err(kept(why.into()));
    }
    if path.file_name().is_some_and(is_temp) && !matches!(temp_state(path), TempState::Dead(_)) {
        return Err(kept(
            "it is the temporary of a run that may be alive".into(),
        ));
    }
    // A file can be a mount point too (a bind mount of one file).
    on_mount(path, &meta, mount, "not deleted")?;
    if !meta.is_dir() {
        // The one place a copy's extra file is removed.
        #[allow(clippy::disallowed_methods)]
        return os::with_path(path, |p| fs::remove_file(p)).map_err(|e| Error::io(path, e));
    }
    let entries = os::read_dir(path).map_err(|e| Error::io(path, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(path, e))?;
        let child = path.join(entry.file_name());
        let meta = os::symlink_metadata(&child).map_err(|e| Error::io(&child, e))?;
        remove_tree_on(&child, meta, mount, clearance)?;
    }
    // The one place a copy's extra directory is removed, once empty.
    #[allow(clippy::disallowed_methods)]
    os::with_path(path, |p| fs::remove_dir(p)).map_err(|e| Error::io(path, e))
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
fn temp_name(dest: &Path) -> io::Result<PathBuf> {
    if dest.file_name().is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name",
        ));
    }
    Ok(temp_beside(dest))
}

/// Makes the directory `dest`, the copy of `source` (a directory this run saw); returns
/// whether it made one (false: one was there). Where something else stands (a file, a
/// link), it is replaced only with a clearance (the walk saw everything) that neither
/// shields nor spares it.
pub(crate) fn make_directory(
    dest: &Path,
    source: &seekless_core::Other,
    clearance: Option<&Clearance>,
) -> io::Result<bool> {
    if !source.metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a directory in the source",
        ));
    }
    match os::symlink_metadata(dest) {
        Ok(m) if m.is_dir() => return Ok(false),
        Ok(m) => {
            let refused = match clearance {
                None => Some("errors in this run"),
                Some(c) if c.shields(dest) => Some("the run could not see everything there"),
                Some(c) => c.spares(dest, &m),
            };
            if let Some(why) = refused {
                return Err(io::Error::other(format!(
                    "a file is in the way of this directory; not replaced: {why}"
                )));
            }
            // A file bind-mounted here is another mount's.
            if let Err(e) = on_mount(
                dest,
                &m,
                Lies::at(crate::temp::parent_of(dest))?,
                "not replaced",
            ) {
                return Err(io::Error::other(format!(
                    "a file is in the way of this directory; {}",
                    e.message()
                )));
            }
            return replace_with_directory(dest);
        }
        Err(_) => {}
    }
    os::with_path(dest, |p| fs::create_dir(p)).map(|()| true)
}

/// Puts a new directory in place of the file or link at `dest` (cleared by the caller): the
/// directory is made beside it under a temporary name and exchanged with it
/// (`RENAME_EXCHANGE`), so that at every moment one of the two is at `dest`, and the file,
/// then under the temporary name, is removed after. Where the filesystem cannot exchange,
/// the file is removed first and the directory made after (a kill between the two leaves
/// neither: the next run makes the directory). A kill between making the temporary
/// directory and the exchange leaves it, empty, under its temporary name: no run removes
/// a directory by such a name (only files whose lock proves their run dead), so it stays.
fn replace_with_directory(dest: &Path) -> io::Result<bool> {
    let temp = temp_beside(dest);
    os::with_path(&temp, |p| fs::create_dir(p))?;
    // The one place a file or link in the way of a directory is removed, and the
    // temporary directory made for it if it could not be used.
    #[allow(clippy::disallowed_methods)]
    match rename_exchange(&temp, dest) {
        Ok(()) => {
            #[cfg(feature = "test-hooks")]
            seekless_core::test_hooks::mid_replace(dest);
            // `temp` is the file now.
            os::with_path(&temp, |p| fs::remove_file(p))?;
            Ok(true)
        }
        Err(e) => {
            let _ = os::with_path(&temp, |p| fs::remove_dir(p));
            if !exchange_unsupported(&e) {
                return Err(e);
            }
            os::with_path(dest, |p| fs::remove_file(p))?;
            #[cfg(feature = "test-hooks")]
            seekless_core::test_hooks::mid_replace(dest);
            os::with_path(dest, |p| fs::create_dir(p)).map(|()| true)
        }
    }
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

/// Destination directories held by one run: a second run writing into one of them sees
/// the lock (`flock` on the directory, which works across PID namespaces) and is refused,
/// naming the first. Held until dropped. Where a directory cannot be locked (not Unix, a
/// filesystem without locks) the run goes on unlocked.
#[derive(Debug)]
pub(crate) struct DestinationLock {
    _held: Vec<File>,
}

/// Another run holds a destination.
#[derive(Debug)]
pub(crate) struct Held {
    /// The directory.
    pub path: PathBuf,
    /// Who holds it, as far as the system says.
    pub holder: String,
}

impl DestinationLock {
    /// Locks each of `dirs` (each directory once, however it is named).
    pub(crate) fn take(dirs: &[PathBuf]) -> Result<DestinationLock, Held> {
        let mut held: Vec<File> = Vec::new();
        let mut ids = HashSet::new();
        for dir in dirs {
            if identity(dir).is_some_and(|id| !ids.insert(id)) {
                continue;
            }
            let Ok(file) = os::open_directory(dir) else {
                continue;
            };
            match file.try_lock() {
                Ok(()) => held.push(file),
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(Held {
                        path: dir.clone(),
                        holder: os::lock_holder(dir)
                            .unwrap_or_else(|| "another seekless run".to_string()),
                    });
                }
                Err(fs::TryLockError::Error(_)) => {}
            }
        }
        Ok(DestinationLock { _held: held })
    }
}

/// Whether no regular file is at `path` now. There means a regular file at that very path:
/// reached through a directory that is a symbolic link now, it is at another path, one a
/// walk never takes. Only "no such file", a directory on the way that is not one any more,
/// something that is not a file any more, or a file reached through a link, is proof.
fn absent(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(meta) => !meta.is_file() || through_a_link(path).is_some(),
        // No such file, or a directory on the way that is not one any more.
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        ),
    }
}

/// Catalog rows that may be forgotten: files provably gone (made only by [`Forget::gone`],
/// from a walk's [`Clearance`], and [`Forget::moved_away`], from this run's acts).
///
/// ```compile_fail
/// let forged = seekless_jobs::destructive::Forget::default();
/// ```
///
/// ```compile_fail
/// let forged = seekless_jobs::destructive::Forget { ids: vec![1] };
/// ```
#[derive(Debug)]
pub struct Forget {
    ids: Vec<i64>,
}

impl Forget {
    /// Of `rows` (row id, the file an act of this run moved away), those whose old path
    /// holds no regular file now (as [`gone`](Self::gone) judges it).
    pub fn moved_away<'m>(rows: impl IntoIterator<Item = (i64, &'m resolve::Moved)>) -> Forget {
        Forget {
            ids: rows
                .into_iter()
                .filter(|(_, moved)| absent(moved.from()))
                .map(|(id, _)| id)
                .collect(),
        }
    }

    /// Of `candidates` (row id, path) — rows whose files the run did not find — those not
    /// at or under a path the run could not see, and whose path holds no regular file now.
    /// A file the walk passed over (a narrower `--ext` or `--glob` than the run that wrote
    /// its row) is there, and keeps its row; so does one that cannot be looked at (a
    /// permission, an I/O error): only "no such file", a directory on the way that is not
    /// one any more, something that is not a file any more, or a file reached through a
    /// symbolic link, is proof that it went.
    pub fn gone<'p>(
        candidates: impl IntoIterator<Item = (i64, &'p Path)>,
        clearance: &Clearance,
    ) -> Forget {
        Forget {
            ids: candidates
                .into_iter()
                .filter(|(_, path)| !clearance.shields(path) && absent(path))
                .map(|(id, _)| id)
                .collect(),
        }
    }

    /// Keeps only the rows `keep` says may still go (a row whose file was found under
    /// another name is not forgotten).
    pub fn retain(&mut self, keep: impl Fn(i64) -> bool) {
        self.ids.retain(|&id| keep(id));
    }

    /// The rows, by id.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }

    /// How many.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::temp::live_writer;
    use seekless_core::Quiet;

    /// A witness of a walk of nothing: the errors a test reports are all it saw.
    fn walked() -> Witness<'static> {
        let w = Witness::new(&Quiet);
        w.walk::<PathBuf>(&[], &PlanOptions::default());
        w
    }

    #[test]
    fn a_withheld_clearance_says_why() {
        assert_eq!(Withheld::Errors(1).to_string(), "1 error in this run");
        assert_eq!(Withheld::Errors(3).to_string(), "3 errors in this run");
        assert_eq!(Withheld::NoWalk.to_string(), "this run walked nothing");
    }

    #[test]
    fn a_witness_that_walked_nothing_gives_no_clearance() {
        let (c, w) = Witness::new(&Quiet).clearance_so_far(true);
        assert_eq!(c.err(), Some(Withheld::NoWalk));
        assert_eq!(w.clearance_outside_unseen().err(), Some(Withheld::NoWalk));
        assert_eq!(
            Witness::new(&Quiet).clearance(true).err(),
            Some(Withheld::NoWalk)
        );
        let w = Witness::new(&Quiet);
        w.walk::<PathBuf>(&[], &PlanOptions::default());
        assert!(w.clearance(false).is_ok());
    }

    #[test]
    fn a_clearance_so_far_speaks_for_what_came_before_and_the_witness_goes_on_remembering() {
        let w = walked();
        w.skipped(Path::new("/d/a"), "another filesystem");
        let (first, w) = w.clearance_so_far(false);
        let first = first.unwrap();
        assert!(first.shields(Path::new("/d/a/f")) && !first.shields(Path::new("/d/b")));
        w.error(&Error::io("/d/b", io::Error::other("x")));
        let (withheld, w) = w.clearance_so_far(false);
        assert_eq!(withheld.err(), Some(Withheld::Errors(1)));
        let last = w.clearance(true).unwrap();
        assert!(last.shields(Path::new("/d/a/f")) && last.shields(Path::new("/d/b/g")));
        assert!(!last.shields(Path::new("/d/c")));
    }

    fn clear() -> Clearance {
        walked().clearance(false).unwrap()
    }

    #[test]
    fn an_error_withholds_the_clearance_unless_errors_are_ignored() {
        let w = walked();
        w.error(&Error::io("/d/a/b", io::Error::other("x")));
        let (withheld, w) = w.clearance_so_far(false);
        assert_eq!(withheld.err(), Some(Withheld::Errors(1)));
        let c = w.clearance(true).unwrap();
        assert!(c.shields(Path::new("/d/a/b")) && c.shields(Path::new("/d/a/b/c")));
        assert!(!c.shields(Path::new("/d/a")) && !c.shields(Path::new("/d/a/bc")));
        assert!(c.leads_to_shield(Path::new("/d/a")) && c.leads_to_shield(Path::new("/d")));
        // Named elsewhere; a name that cannot be translated shields everything.
        let c = c.translated(|p| Some(Path::new("/x").join(p.strip_prefix("/d").ok()?)));
        assert!(c.shields(Path::new("/x/a/b/c")) && !c.shields(Path::new("/x/a/c")));
        let w = walked();
        w.skipped(Path::new("/elsewhere"), "another filesystem");
        let c = w.clearance(false).unwrap().translated(|_| None);
        assert!(c.shields(Path::new("/anything")));
    }

    // The tests below use real files, locks and identities: they run on Unix (the
    // Windows build is tested under Wine, whose locks and file identities are not the
    // system's).
    #[cfg(unix)]
    #[test]
    fn extra_entries_go_but_not_what_is_wanted_or_shielded() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for d in ["keep", "gone", "prot/inner", "wanted_dir/extra_dir"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["keep/f", "gone/f", "prot/inner/f", "x", "wanted_dir/extra"] {
            fs::write(root.join(f), b"1").unwrap();
        }
        let wanted: HashSet<PathBuf> = ["keep", "keep/f", "wanted_dir"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        let w = walked();
        w.error(&Error::io(root.join("prot"), io::Error::other("x")));
        let c = w.clearance(true).unwrap();
        let mut failed = 0;
        let s = tempfile::tempdir().unwrap();
        fs::write(s.path().join("f"), b"1").unwrap();
        let src = s.path().to_path_buf();
        let n = remove_extra(&src, false, root, &wanted, &c, &Quiet, &mut failed);
        assert_eq!((n, failed), (4, 0));
        assert!(root.join("keep/f").exists() && root.join("prot/inner/f").exists());
        for gone in ["gone", "x", "wanted_dir/extra", "wanted_dir/extra_dir"] {
            assert!(!root.join(gone).exists(), "{gone}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_empty_source_deletes_nothing_unless_allowed() {
        let t = tempfile::tempdir().unwrap();
        let (src, dest) = (t.path().join("src"), t.path().join("dest"));
        fs::create_dir_all(&src).unwrap();
        fs::create_dir_all(dest.join("album")).unwrap();
        fs::write(dest.join("album/a.jpg"), b"1").unwrap();
        let mut failed = 0;
        let none = HashSet::new();
        assert_eq!(
            remove_extra(&src, false, &dest, &none, &clear(), &Quiet, &mut failed),
            0
        );
        assert_eq!(failed, 1);
        assert!(dest.join("album/a.jpg").exists());
        // A source with anything in it, or the user's leave, and extra entries go.
        fs::write(src.join("b.jpg"), b"1").unwrap();
        assert_eq!(
            remove_extra(&src, false, &dest, &none, &clear(), &Quiet, &mut failed),
            1
        );
        fs::remove_file(src.join("b.jpg")).unwrap();
        fs::write(dest.join("c.jpg"), b"1").unwrap();
        assert_eq!(
            remove_extra(&src, true, &dest, &none, &clear(), &Quiet, &mut failed),
            1
        );
        assert_eq!(failed, 1);
        assert!(!dest.join("c.jpg").exists());
    }

    #[test]
    fn a_destination_that_cannot_be_looked_at_is_a_failure_and_nothing_is_removed() {
        let t = tempfile::tempdir().unwrap();
        let source = t.path().join("src");
        fs::create_dir(&source).unwrap();
        fs::write(source.join("a"), b"1").unwrap();
        let mut failed = 0;
        let n = remove_extra(
            &source,
            false,
            &t.path().join("missing"),
            &HashSet::new(),
            &clear(),
            &Quiet,
            &mut failed,
        );
        assert_eq!((n, failed), (0, 1));
    }

    #[test]
    fn a_translated_clearance_keeps_what_it_spares_and_shields_everything_it_did() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("photos");
        let source = dest.join("new/deep");
        fs::create_dir_all(&source).unwrap();
        let meta = |p: &Path| fs::metadata(p).unwrap();
        let spared = clear()
            .sparing(std::slice::from_ref(&source))
            .translated(|p| Some(p.to_path_buf()));
        assert!(
            spared.spares(&source, &meta(&source)).is_some(),
            "the source"
        );
        let holder = dest.join("new");
        assert!(
            spared.spares(&holder, &meta(&holder)).is_some(),
            "its holder"
        );
        assert!(spared.is_source(&source, &meta(&source)));
        // A source that cannot be looked at shields everything, named anew or not.
        let blind = clear()
            .sparing(&[t.path().join("missing")])
            .translated(|p| Some(p.to_path_buf()));
        assert!(blind.shields(Path::new("/anything")));
    }

    #[test]
    fn a_witness_passes_everything_on() {
        #[derive(Default)]
        struct Told(Mutex<Vec<String>>);
        impl Reporter for Told {
            fn error(&self, err: &Error) {
                lock(&self.0).push(format!("error {}", err.path().display()));
            }
            fn skipped(&self, path: &Path, why: &str) {
                lock(&self.0).push(format!("skipped {} {why}", path.display()));
            }
            fn planned(&self, files: u64, bytes: u64) {
                lock(&self.0).push(format!("planned {files} {bytes}"));
            }
            fn warning(&self, path: Option<&Path>, what: &str) {
                lock(&self.0).push(format!("warning {path:?} {what}"));
            }
        }
        let told = Told::default();
        let w = Witness::new(&told);
        w.error(&Error::io("/a", io::Error::other("x")));
        w.skipped(Path::new("/b"), "why");
        w.planned(3, 4);
        w.warning(None, "w");
        assert_eq!(
            lock(&told.0).clone(),
            [
                "error /a",
                "skipped /b why",
                "planned 3 4",
                "warning None w"
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_source_and_what_holds_it_are_never_removed() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("photos");
        let source = dest.join("new/deep");
        fs::create_dir_all(&source).unwrap();
        fs::write(source.join("only-copy.jpg"), b"1").unwrap();
        fs::write(dest.join("old.jpg"), b"1").unwrap();
        let c = clear().sparing(std::slice::from_ref(&source));
        let mut failed = 0;
        // Nothing of the source is wanted under `dest`: only `old.jpg` may go.
        let n = remove_extra(
            &source,
            false,
            &dest,
            &HashSet::new(),
            &c,
            &Quiet,
            &mut failed,
        );
        assert_eq!((n, failed), (1, 1));
        assert!(source.join("only-copy.jpg").exists() && !dest.join("old.jpg").exists());
        // Wanted all the way down, the source's own contents are still not looked into.
        let wanted: HashSet<PathBuf> = [dest.join("new"), source.clone()].into();
        assert_eq!(
            remove_extra(&source, false, &dest, &wanted, &c, &Quiet, &mut failed),
            0
        );
        assert!(source.join("only-copy.jpg").exists());
        // Its holder wanted (looked into), the source itself not: still never removed.
        let wanted: HashSet<PathBuf> = [dest.join("new")].into();
        let mut failed = 0;
        assert_eq!(
            remove_extra(&source, false, &dest, &wanted, &c, &Quiet, &mut failed),
            0
        );
        assert_eq!(failed, 1);
        assert!(source.join("only-copy.jpg").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_replacement_goes_over_a_directory_only_with_a_clearance_that_allows_it() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("b/x");
        fs::create_dir_all(dest.join("old")).unwrap();
        fs::write(dest.join("old/backup"), b"old").unwrap();
        let (temp, file) = OwnTemp::create_file(&dest, None).unwrap();
        let durable = Durable::synced(&file).unwrap();
        let w = walked();
        w.error(&Error::io(t.path().join("b"), io::Error::other("x")));
        let shielded = w.clearance(true).unwrap();
        assert!(temp.put_in_place_over_dir(durable, &shielded).is_err());
        assert!(dest.join("old/backup").exists(), "kept");
        let (temp, file) = OwnTemp::create_file(&dest, None).unwrap();
        let durable = Durable::synced(&file).unwrap();
        drop(file);
        temp.put_in_place_over_dir(durable, &clear()).unwrap();
        assert!(dest.is_file());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_replacement_removes_only_the_file_it_confirmed() {
        let t = tempfile::tempdir().unwrap();
        let (keeper, dup) = (t.path().join("keeper"), t.path().join("dup"));
        fs::write(&keeper, b"same").unwrap();
        fs::write(&dup, b"same").unwrap();
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).unwrap());
        let dup_ino = ino(&dup);
        // Refused: the file stays at its name, the link goes, and `confirm` was shown the
        // file that was at the destination.
        let temp = OwnTemp::hard_link(&keeper, &dup).unwrap();
        let shown = std::cell::Cell::new(0);
        let r = temp.replace_confirmed(Durable::no_data(), |at| {
            shown.set(ino(at));
            Err("not the one".into())
        });
        assert!(r.unwrap_err().to_string().contains("not the one"));
        assert_eq!(shown.get(), dup_ino);
        assert_eq!(ino(&dup), dup_ino);
        assert_eq!(
            fs::read_dir(t.path()).unwrap().count(),
            2,
            "a temporary was left"
        );
        // Confirmed: the link is at the name, the old file gone.
        let temp = OwnTemp::hard_link(&keeper, &dup).unwrap();
        temp.replace_confirmed(Durable::no_data(), |at| {
            assert_eq!(ino(at), dup_ino);
            Ok(())
        })
        .unwrap();
        assert_eq!(ino(&dup), ino(&keeper));
        assert_eq!(
            fs::read_dir(t.path()).unwrap().count(),
            2,
            "a temporary was left"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_live_temporary_keeps_the_folder_it_is_in() {
        let t = tempfile::tempdir().unwrap();
        let (src, dest) = (t.path().join("src"), t.path().join("dest"));
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("kept.jpg"), b"1").unwrap();
        // An extra folder of the destination, with another run's live temporary in it.
        let extra = dest.join("extra");
        fs::create_dir_all(&extra).unwrap();
        fs::write(extra.join("old.jpg"), b"1").unwrap();
        let (live, _held) = OwnTemp::create_file(&extra.join("new.tar"), None).unwrap();
        let mut failed = 0;
        let n = remove_extra(
            &src,
            false,
            &dest,
            &HashSet::new(),
            &clear(),
            &Quiet,
            &mut failed,
        );
        assert_eq!((n, failed), (0, 1));
        assert!(
            live.path().exists(),
            "a live temporary was removed with its folder"
        );
    }

    #[cfg(unix)]
    #[test]
    fn only_dead_temporaries_of_ours_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("a.tar");
        // A user's file that only looks like a temporary.
        let lookalike = t.path().join(".notes.seekless-tmp-2024-12");
        fs::write(&lookalike, b"mine").unwrap();
        // A live one (its lock held by the open descriptor) and a dead one.
        let (live, live_file) = OwnTemp::create_file(&dest, None).unwrap();
        let (dead, dead_file) = OwnTemp::create_file(&dest, None).unwrap();
        let dead_path = dead.path().to_path_buf();
        std::mem::forget(dead);
        drop(dead_file);
        assert!(live_writer(&dest, |_| true).is_some());
        // Unlocked but made a moment ago by a process that runs (this one): it may be
        // between making the file and locking it.
        assert!(remove_dead_temps(t.path(), |_| true).is_empty());
        let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&dead_path)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
        let removed = remove_dead_temps(t.path(), |_| true);
        assert_eq!(removed, vec![dead_path]);
        assert!(lookalike.exists() && live.path().exists());
        drop(live_file);
        drop(live);
        assert!(live_writer(&dest, |_| true).is_none());
    }

    // Elsewhere a directory cannot be opened to lock it, and the run goes on unlocked.
    #[cfg(unix)]
    #[test]
    fn a_destination_has_one_writer_at_a_time() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().to_path_buf();
        let first = DestinationLock::take(&[dir.clone(), dir.join(".")]).unwrap();
        let held = DestinationLock::take(std::slice::from_ref(&dir)).unwrap_err();
        assert_eq!(held.path, dir);
        #[cfg(target_os = "linux")]
        assert!(
            held.holder
                .contains(&format!("process {}", std::process::id())),
            "{}",
            held.holder
        );
        drop(first);
        DestinationLock::take(&[dir]).unwrap();
    }

    /// Every SQL statement that deletes rows, by file: the catalog forgets images only in
    /// `forget_rows`, which takes a [`Forget`]; the rest is named here with its
    /// reason. A new one fails this test until it is routed through the owner or added
    /// here, reviewed.
    #[cfg(unix)]
    #[test]
    fn catalog_rows_are_deleted_only_where_the_owner_allows() {
        fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    rs_files(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        // Every crate of the workspace: this one's manifest is at crates/jobs.
        let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        rs_files(&root.join("src"), &mut files);
        rs_files(&root.join("crates"), &mut files);
        let mut found: Vec<(String, String)> = Vec::new();
        for f in files {
            let text = fs::read_to_string(&f).unwrap();
            let rel = f
                .strip_prefix(root)
                .unwrap()
                .display()
                .to_string()
                .replace('\\', "/");
            if rel.ends_with("destructive.rs") {
                continue;
            }
            for at in text.match_indices("DELETE FROM ").map(|(i, _)| i) {
                let table: String = text[at + 12..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push((rel.clone(), table));
            }
        }
        found.sort();
        let allowed = [
            // `forget_rows`, given a `Forget` (by `relocate` after a walk, by `dupes --act`
            // after a move or a trash): rows of files seen gone, and their thumbnails;
            // `relocate`, given another, rows of sidecars seen gone.
            ("crates/catalog/src/index/catalog.rs", "images"),
            ("crates/catalog/src/index/catalog.rs", "thumbs"),
            ("crates/catalog/src/index/catalog.rs", "sidecars"),
            // The upgrade from version 1: a row whose canonical path already has a row of
            // the same file merges into it.
            ("crates/catalog/src/index/catalog.rs", "images"),
            // A thumbnail of other content (derived data, made again from the file).
            ("crates/catalog/src/index/catalog.rs", "thumbs"),
            // The user's own decision, removed at the user's request (`dupes --undecide ID`).
            ("crates/catalog/src/index/catalog.rs", "decisions"),
        ];
        let mut allowed: Vec<(String, String)> = allowed
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect();
        allowed.sort();
        assert_eq!(found, allowed);
    }

    #[test]
    fn rows_are_forgotten_only_outside_what_could_not_be_seen() {
        let w = walked();
        w.skipped(Path::new("/p/mnt"), "another filesystem");
        let c = w.clearance(true).unwrap();
        let rows = [(1, Path::new("/p/a.jpg")), (2, Path::new("/p/mnt/b.jpg"))];
        assert_eq!(Forget::gone(rows, &c).ids(), &[1]);
    }

    #[test]
    fn a_row_whose_file_is_still_there_is_not_forgotten() {
        let t = tempfile::tempdir().unwrap();
        let (file, dir, gone) = (
            t.path().join("a.jpg"),
            t.path().join("b.jpg"),
            t.path().join("c.jpg"),
        );
        std::fs::write(&file, b"x").unwrap();
        std::fs::create_dir(&dir).unwrap();
        let c = walked().clearance(true).unwrap();
        let mut rows = vec![
            (1, file.clone()),
            (2, dir.clone()),
            (3, gone.clone()),
            (5, file.join("inner.jpg")),
        ];
        // A file reached through a directory that is a symbolic link now is at another
        // path (unix: links to directories need privileges on Windows).
        #[cfg(unix)]
        {
            let real = t.path().join("real");
            std::fs::create_dir(&real).unwrap();
            std::fs::write(real.join("d.jpg"), b"x").unwrap();
            std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
            rows.push((4, t.path().join("link/d.jpg")));
        }
        let rows = rows.iter().map(|(id, p)| (*id, p.as_path()));
        // The file the walk passed over stays; a directory where the file was, no file at
        // all, a file where a directory on the way was, and a file through a link are proof
        // that it went.
        let want: &[i64] = if cfg!(unix) {
            &[2, 3, 5, 4]
        } else {
            &[2, 3, 5]
        };
        assert_eq!(Forget::gone(rows, &c).ids(), want);
    }
}
