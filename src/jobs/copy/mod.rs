//! `copy`: a tree copied with `cp -a`'s semantics, its files read in physical order, each
//! written under a temporary name and renamed into place when complete.
//!
//! - Directories are made first (in the order `find` lists them), their metadata set last;
//!   symlinks, FIFOs and device nodes (as root) are recreated, never opened.
//! - Regular files: a file whose destination has the same size and mtime is skipped
//!   without being read (rsync's quick check; `checksum` compares content instead).
//!   Others are read in physical order with the disk's queue kept full and written by
//!   worker threads to `.NAME.seekless-tmp-PID-N` beside their destination, given the
//!   source's owner (as root), mode, times and extended attributes, and renamed. A file
//!   that changes while it is copied is reported and not put in place.
//! - Hard links among the files copied stay links.
//! - Within one filesystem, blocks are shared (`FICLONE`) or copied in the kernel
//!   (`copy_file_range`) where the filesystem can, instead of read and written.
//! - The destination is flushed (`syncfs`) before the copy reports success.
//!
//! An interrupted run leaves no partial file under a final name; its temporaries are
//! removed by the next run, which copies only what is missing or changed.
//!
//! ```
//! use seekless::jobs::copy::{CopyOptions, CopyRoot, copy};
//! use seekless::{PlanOptions, Quiet};
//!
//! let src = tempfile::tempdir()?;
//! let dst = tempfile::tempdir()?;
//! std::fs::write(src.path().join("a"), b"hello")?;
//! let roots = [CopyRoot::new(src.path(), dst.path().join("copy"))];
//! let summary = copy(&roots, &PlanOptions::default(), &CopyOptions::default(), &Quiet)?;
//! assert_eq!((summary.copied, summary.failed), (1, 0));
//! assert_eq!(std::fs::read(dst.path().join("copy/a"))?, b"hello");
//! // Again: nothing to do.
//! let again = copy(&roots, &PlanOptions::default(), &CopyOptions::default(), &Quiet)?;
//! assert_eq!((again.copied, again.skipped), (0, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod commit;
mod delete;
mod target;

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::atomic::{AtomicFile, parent_of, temp_beside};
use crate::error::Error;
use crate::file_id::FileId;
use crate::jobs::hash::{Algorithm, Hasher};
use crate::jobs::stat::{NodeKind, Stat};
use crate::os;
use crate::plan::{Plan, PlanOptions, PlannedFile};
use crate::read::{FileReader, ReadOptions, ReadStats, Reader};
use crate::report::Reporter;
use crate::sync::{into_inner, lock};
use crate::walk::Other;
use commit::{GroupCommit, Ready};
use delete::{Protected, Watch};

/// One source and where it goes: `source` itself becomes `dest` (a directory's contents
/// go under `dest`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CopyRoot {
    /// A file or directory to copy.
    pub source: PathBuf,
    /// What it becomes.
    pub dest: PathBuf,
}

impl CopyRoot {
    /// `source` copied as `dest`.
    pub fn new(source: impl Into<PathBuf>, dest: impl Into<PathBuf>) -> CopyRoot {
        CopyRoot {
            source: source.into(),
            dest: dest.into(),
        }
    }
}

/// How to copy.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CopyOptions {
    /// How to read.
    pub read: ReadOptions,
    /// Threads writing files.
    pub workers: usize,
    /// Copy extended attributes (where the destination has none, silently not).
    pub xattrs: bool,
    /// `fsync` each file before renaming it into place (more than `sync` needs: one
    /// flush per file instead of one per batch).
    pub fsync: bool,
    /// Durable before trusted: each file's data reaches the disk before the file gets its
    /// final name (a batch of files at a time, one `syncfs` per destination filesystem
    /// per batch), and the destination is flushed again at the end, so a power cut never
    /// leaves a file under its final name with the right size and mtime but not its
    /// data. Off (`--no-sync`): files are renamed as soon as written and nothing is
    /// flushed; after a power cut a copied file may hold zeros that the next run's quick
    /// check takes for unchanged.
    pub sync: bool,
    /// Compare content, not size and mtime, to decide what is unchanged.
    pub checksum: bool,
    /// Remove destination entries that the source does not have. Nothing is removed after
    /// an error anywhere in the run (a directory that could not be listed, a file that
    /// could not be read: what the plan lacks may still exist), unless `ignore_errors`.
    pub delete: bool,
    /// With `delete`: delete even after errors, but never at or under a path that failed
    /// or was left out (another filesystem, walked under another name).
    pub ignore_errors: bool,
    /// After the copy, read each file copied back from the destination (its cache dropped
    /// first) and compare its BLAKE3 hash with the source's.
    pub verify: bool,
    /// Hash every source file (skipped ones too: they are read, not written) with this
    /// algorithm and report it ([`CopyEvents::hashed`]): a manifest as a by-product.
    pub hash: Option<Algorithm>,
    /// Within one filesystem, share blocks or copy in the kernel where possible.
    pub fast_path: bool,
}

impl Default for CopyOptions {
    fn default() -> Self {
        Self {
            read: ReadOptions::default(),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            xattrs: true,
            fsync: false,
            sync: true,
            checksum: false,
            delete: false,
            ignore_errors: false,
            verify: false,
            hash: None,
            fast_path: true,
        }
    }
}

/// How a file's content was put in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Read (in physical order) and written.
    ReadWrite,
    /// Blocks shared with the source (`FICLONE`).
    Clone,
    /// Copied inside the kernel (`copy_file_range`).
    CopyRange,
}

/// What a copy did.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct CopySummary {
    /// Files the destination did not have.
    pub copied: u64,
    /// Files the destination had, different.
    pub updated: u64,
    /// Files the destination had, the same (not written).
    pub skipped: u64,
    /// Unchanged files, links and special files whose mode, owner, times or extended
    /// attributes were brought up to date (as rsync does).
    pub refreshed: u64,
    /// Destination entries removed (`delete`).
    pub deleted: u64,
    /// Paths that failed.
    pub failed: u64,
    /// Content bytes written.
    pub bytes: u64,
    /// Content bytes shared with the source (`FICLONE`): not written.
    pub cloned: u64,
    /// Directories made or brought up to date.
    pub dirs: u64,
    /// Symlinks, FIFOs and device nodes made.
    pub others: u64,
    /// Hard links made.
    pub hardlinks: u64,
    /// Files compared after the copy (`verify`), and those that differed.
    pub verified: u64,
    /// Files whose copy did not match the source (`verify`).
    pub mismatched: u64,
    /// Temporaries of interrupted runs removed.
    pub leftovers_removed: u64,
    /// How each source filesystem's files were copied: (its `st_dev`, a method used for
    /// some of them), each pair once.
    pub methods: Vec<(u64, Method)>,
    /// The run stopped early (the destination is full, or cannot be written).
    pub stopped: bool,
    /// `delete` was asked for but nothing was deleted, because something failed
    /// (`ignore_errors` not given).
    pub deletion_skipped: bool,
}

/// What [`copy_with`] tells its caller as it goes; all optional. Called from worker
/// threads, one call at a time.
pub trait CopyEvents: Send {
    /// The plan is made; the files to read are about to be read.
    fn reading(&mut self, plan: &Arc<Plan>) {
        let _ = plan;
    }
    /// A planned file is done: copied, or failed (`done` false).
    fn file_done(&mut self, file: &PlannedFile, done: bool) {
        let _ = (file, done);
    }
    /// A source file's hash ([`CopyOptions::hash`]).
    fn hashed(&mut self, file: &PlannedFile, hex: &str) {
        let _ = (file, hex);
    }
    /// The read is over.
    fn read_done(&mut self, stats: &ReadStats, took: Duration) {
        let _ = (stats, took);
    }
}

struct NoEvents;
impl CopyEvents for NoEvents {}

/// Why a copy could not run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyError {
    /// The destination cannot be written (found before anything was read).
    #[error("{}: cannot write the destination: {}", path.display(), crate::error::describe_io(source))]
    Destination {
        /// The directory tried.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Copies every root. Per-path problems go to `reporter` and are counted; the run goes on
/// (and stops early only when the destination is full).
pub fn copy(
    roots: &[CopyRoot],
    plan_opts: &PlanOptions,
    opts: &CopyOptions,
    reporter: &dyn Reporter,
) -> Result<CopySummary, CopyError> {
    copy_with(roots, plan_opts, opts, reporter, &mut NoEvents)
}

/// What to do with a planned file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Not at the destination: copy.
    Copy,
    /// At the destination, different: copy over it.
    Update,
    /// Same size at the destination; compare content (`checksum`).
    Compare,
    /// Unchanged; read only to hash it (`hash`).
    HashOnly,
    /// Unchanged: nothing to do.
    Skip,
}

/// [`copy`], telling `events` how it goes.
pub fn copy_with(
    roots: &[CopyRoot],
    plan_opts: &PlanOptions,
    opts: &CopyOptions,
    reporter: &dyn Reporter,
    events: &mut dyn CopyEvents,
) -> Result<CopySummary, CopyError> {
    let roots = follow_dest_links(roots);
    let roots = &roots[..];
    // The destination must be writable before anything is read.
    for root in roots {
        let dir = match os::metadata(&root.source) {
            Ok(m) if m.is_dir() => root.dest.clone(),
            _ => parent_of(&root.dest).to_path_buf(),
        };
        fs::create_dir_all(&dir)
            .and_then(|()| AtomicFile::create_private(&dir.join("probe")).map(drop))
            .map_err(|source| CopyError::Destination {
                path: dir.clone(),
                source,
            })?;
    }

    // Every error and every path left out is remembered: `delete` must not take what the
    // run did not see for what the source does not have.
    let watch = Watch::new(reporter);
    let reporter: &dyn Reporter = &watch;
    let mut plan_opts = plan_opts.clone();
    plan_opts.walk.others = true;
    let sources: Vec<PathBuf> = roots.iter().map(|r| r.source.clone()).collect();
    let plan = Plan::build(&sources, &plan_opts, reporter);
    let map = Mapping::new(roots);
    let as_root = os::is_root();
    let mut summary = CopySummary::default();

    // Directories first, then symlinks and special files.
    let mut dirs: Vec<(PathBuf, Other)> = Vec::new();
    let mut wanted: HashSet<PathBuf> = HashSet::new();
    for other in plan.others() {
        let Some(dest) = map.dest_of(&other.path) else {
            continue;
        };
        if opts.delete {
            wanted.insert(dest.clone());
        }
        if other.metadata.is_dir() {
            match make_dir(&dest) {
                Ok(existed) => {
                    if existed {
                        summary.leftovers_removed += target::remove_leftovers(&dest);
                    }
                    dirs.push((dest, other.clone()));
                }
                Err(e) => fail(&mut summary, reporter, Error::io(&dest, e)),
            }
        }
    }
    for other in plan.others() {
        if other.metadata.is_dir() {
            continue;
        }
        let Some(dest) = map.dest_of(&other.path) else {
            continue;
        };
        match make_other(other, &dest, as_root, opts.xattrs, reporter) {
            Ok(Made::New) => summary.others += 1,
            Ok(Made::Refreshed) => summary.refreshed += 1,
            Ok(Made::Same) => {}
            Err(e) => fail(&mut summary, reporter, e),
        }
    }

    // Decide per file, from the destination's metadata alone.
    let walk_failed = watch.errors() > 0;
    let mut actions = Vec::with_capacity(plan.files().len());
    for f in plan.files() {
        let Some(dest) = map.dest_of(&f.entry.path) else {
            actions.push(Action::Skip);
            continue;
        };
        if opts.delete {
            wanted.insert(dest.clone());
        }
        let mut existing = os::symlink_metadata(&dest).ok();
        if existing.as_ref().is_some_and(|d| d.is_dir()) {
            // A directory where the source now has a file: replaced only as `delete`
            // replaces things, and only when the walk saw everything.
            let why = if !opts.delete {
                Some("a directory is in the way of this file (--delete replaces it)")
            } else if walk_failed {
                Some("a directory is in the way of this file; not replaced after errors")
            } else {
                None
            };
            if let Some(why) = why {
                actions.push(Action::Skip);
                fail(
                    &mut summary,
                    reporter,
                    Error::io(&dest, io::Error::other(why)),
                );
                continue;
            }
            match os::with_path(&dest, |p| fs::remove_dir_all(p)) {
                Ok(()) => {
                    summary.deleted += 1;
                    existing = None;
                }
                Err(e) => {
                    actions.push(Action::Skip);
                    fail(&mut summary, reporter, Error::io(&dest, e));
                    continue;
                }
            }
        }
        let action = match &existing {
            None => Action::Copy,
            Some(d) if !d.is_file() => Action::Update,
            Some(d) if d.len() != f.entry.size => Action::Update,
            Some(_) if opts.checksum => Action::Compare,
            Some(d) if d.modified().ok() != f.entry.modified => Action::Update,
            Some(_) if opts.hash.is_some() => Action::HashOnly,
            Some(_) => Action::Skip,
        };
        if let (Action::Skip, Some(d)) = (action, &existing) {
            summary.skipped += 1;
            match refresh(
                &f.entry.path,
                true,
                &dest,
                &Stat::of(d),
                as_root,
                opts.xattrs,
            ) {
                Ok(true) => summary.refreshed += 1,
                Ok(false) => {}
                Err(e) => fail(&mut summary, reporter, e),
            }
        }
        actions.push(action);
    }
    for alias in plan.aliases() {
        if let Some(dest) = map.dest_of(&alias.path).filter(|_| opts.delete) {
            wanted.insert(dest);
        }
    }
    // The first name of each file that has others, whether or not it is read.
    let alias_ids: HashSet<FileId> = plan.aliases().iter().map(|a| a.id).collect();
    let firsts: HashMap<FileId, PathBuf> = plan
        .files()
        .iter()
        .filter(|f| alias_ids.contains(&f.entry.id))
        .map(|f| (f.entry.id, f.entry.path.to_path_buf()))
        .collect();
    let plan = plan.retain(|i, _| actions[i as usize] != Action::Skip);
    // `retain` keeps the order: the actions of the files kept, by their new index.
    let actions: Vec<Action> = actions.into_iter().filter(|a| *a != Action::Skip).collect();
    let plan = Arc::new(plan);

    // The read: workers write what the sweeps hand them.
    let shared = Shared {
        map: &map,
        opts,
        reporter,
        as_root,
        actions: &actions,
        events: Mutex::new(events),
        // With `fsync` each file is on the disk already: renamed at once.
        commits: GroupCommit::new(opts.sync && !opts.fsync),
        stop: AtomicBool::new(false),
        copied: AtomicU64::new(0),
        updated: AtomicU64::new(0),
        skipped: AtomicU64::new(0),
        refreshed: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        cloned: AtomicU64::new(0),
        methods: Mutex::new(HashSet::new()),
        hashes: Mutex::new(Vec::new()),
    };
    lock(&shared.events).reading(&plan);
    let started = Instant::now();
    let stats = Reader::new(plan.clone(), opts.read.clone()).par_for_each_until(
        opts.workers,
        |planned, file| {
            shared.one(planned, file);
            // A full destination: the rest would not fit either; stop reading.
            if shared.stop.load(Ordering::Relaxed) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    );
    shared.placed(shared.commits.finish());
    lock(&shared.events).read_done(&stats, started.elapsed());
    summary.copied += shared.copied.into_inner();
    summary.updated += shared.updated.into_inner();
    summary.skipped += shared.skipped.into_inner();
    summary.refreshed += shared.refreshed.into_inner();
    summary.failed += shared.failed.into_inner();
    summary.bytes += shared.bytes.into_inner();
    summary.cloned += shared.cloned.into_inner();
    summary.stopped = shared.stop.into_inner();
    let mut methods: Vec<(u64, Method)> = into_inner(shared.methods).into_iter().collect();
    methods.sort_unstable_by_key(|&(dev, m)| (dev, m as u8));
    summary.methods = methods;
    let hashes = into_inner(shared.hashes);

    if !summary.stopped {
        // Hard links: every second name of a file that is in place, linked to its first.
        for alias in plan.aliases() {
            let (Some(first), Some(dest)) = (firsts.get(&alias.id), map.dest_of(&alias.path))
            else {
                continue;
            };
            let Some(first_dest) = map.dest_of(first) else {
                continue;
            };
            if first_dest == dest {
                continue;
            }
            match link_in_place(&first_dest, &dest) {
                Ok(true) => summary.hardlinks += 1,
                Ok(false) => {}
                Err(e) => fail(&mut summary, reporter, Error::io(&dest, e)),
            }
        }
    }

    if opts.delete {
        let errors = watch.errors();
        if errors > 0 && !opts.ignore_errors {
            summary.deletion_skipped = true;
            reporter.warning(
                None,
                &format!(
                    "copy: nothing deleted: {errors} error{} in this run, so the source \
                     may have more than was seen (--ignore-errors deletes all the same, \
                     except at and under the paths that failed)",
                    if errors == 1 { "" } else { "s" }
                ),
            );
        } else {
            // Never at or under a path that failed or was left out.
            let protected = Protected::new(watch.unseen().iter().filter_map(|p| map.dest_of(p)));
            for root in roots {
                if os::metadata(&root.source).is_ok_and(|m| m.is_dir()) {
                    summary.deleted += delete::delete_extra(
                        &root.dest,
                        &wanted,
                        &protected,
                        reporter,
                        &mut summary.failed,
                    );
                }
            }
        }
    }

    // Directory metadata last, deepest first, so setting it is not undone by writing
    // inside them. A directory that could not be read keeps the metadata its copy has:
    // a backup made unreadable (mode 000) by a source the user cannot read helps nobody.
    let unreadable: HashSet<PathBuf> = watch.unseen().into_iter().collect();
    for (dest, other) in dirs.iter().rev() {
        if unreadable.contains(&*other.path) {
            continue;
        }
        let st = Stat::of(&other.metadata);
        let done = (if opts.xattrs {
            target::sync_xattrs(&other.path, dest).map(drop)
        } else {
            Ok(())
        })
        .and_then(|()| target::apply(dest, None, &st, as_root).map_err(|e| Error::io(dest, e)));
        match done {
            Ok(()) => summary.dirs += 1,
            Err(e) => fail(&mut summary, reporter, e),
        }
    }

    if opts.sync || opts.verify {
        for root in roots {
            let dir = if root.dest.is_dir() {
                root.dest.as_path()
            } else {
                parent_of(&root.dest)
            };
            if let Err(e) = os::sync_filesystem(dir) {
                fail(&mut summary, reporter, Error::io(dir, e));
            }
        }
    }

    if opts.verify {
        verify(&hashes, &plan_opts, opts, reporter, &mut summary);
    }
    Ok(summary)
}

/// The roots, with each destination that is a symlink to a directory replaced by the
/// directory it leads to: as `cp` and `rsync` do, a link given as the destination is
/// followed (`/backup` a link to another disk), never replaced. Links below it are copies
/// of the source's links, as always.
fn follow_dest_links(roots: &[CopyRoot]) -> Vec<CopyRoot> {
    roots
        .iter()
        .map(|r| {
            let is_link = os::symlink_metadata(&r.dest).is_ok_and(|m| m.file_type().is_symlink());
            let to_dir = is_link && os::metadata(&r.dest).is_ok_and(|m| m.is_dir());
            match to_dir.then(|| fs::canonicalize(&r.dest)) {
                Some(Ok(dir)) => CopyRoot::new(r.source.clone(), dir),
                _ => r.clone(),
            }
        })
        .collect()
}

fn fail(summary: &mut CopySummary, reporter: &dyn Reporter, err: Error) {
    summary.failed += 1;
    reporter.error(&err);
}

/// Where walked paths go.
struct Mapping<'a> {
    roots: &'a [CopyRoot],
    /// The device of each root's destination directory (made by the writability check),
    /// looked up once: the same-filesystem fast path is tried when a file's source is on
    /// it (a mount point further down only makes the fast path fail and fall back).
    dest_devs: Vec<Option<u64>>,
}

impl<'a> Mapping<'a> {
    fn new(roots: &'a [CopyRoot]) -> Self {
        let dest_devs = roots
            .iter()
            .map(|r| {
                let dir = if r.dest.is_dir() {
                    r.dest.as_path()
                } else {
                    r.dest.parent().unwrap_or(Path::new("."))
                };
                let meta = os::metadata(dir).ok()?;
                os::file_id(dir, None, &meta).ok().map(|id| id.dev)
            })
            .collect();
        Mapping { roots, dest_devs }
    }

    /// Whether the destination of `path` (found under a root) is on device `dev`.
    fn dest_on(&self, path: &Path, dev: u64) -> bool {
        self.roots
            .iter()
            .position(|r| path.starts_with(&r.source))
            .is_some_and(|i| self.dest_devs[i] == Some(dev))
    }

    /// The destination of a path the walk found under one of the roots.
    fn dest_of(&self, path: &Path) -> Option<PathBuf> {
        self.roots.iter().find_map(|r| {
            let rest = path.strip_prefix(&r.source).ok()?;
            Some(if rest.as_os_str().is_empty() {
                r.dest.clone()
            } else {
                r.dest.join(rest)
            })
        })
    }
}

/// Makes directory `dest` (its parents exist). Returns whether it existed already. A
/// non-directory in its place is replaced.
fn make_dir(dest: &Path) -> io::Result<bool> {
    match os::symlink_metadata(dest) {
        Ok(m) if m.is_dir() => return Ok(true),
        Ok(_) => os::with_path(dest, |p| fs::remove_file(p))?,
        Err(_) => {}
    }
    match os::with_path(dest, |p| fs::create_dir(p)) {
        Ok(()) => Ok(false),
        Err(e)
            if e.kind() == io::ErrorKind::AlreadyExists
                && os::metadata(dest).is_ok_and(|m| m.is_dir()) =>
        {
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

/// What [`make_other`] did.
enum Made {
    /// Made it.
    New,
    /// The same was there; its metadata was brought up to date.
    Refreshed,
    /// The same was there, as it should be (or nothing could be made).
    Same,
}

impl Made {
    fn refreshed(changed: bool) -> Made {
        if changed { Made::Refreshed } else { Made::Same }
    }
}

/// Recreates a symlink, FIFO or device node at `dest` (through a temporary name), unless
/// the same is there already (then its metadata is brought up to date).
fn make_other(
    other: &Other,
    dest: &Path,
    as_root: bool,
    xattrs: bool,
    reporter: &dyn Reporter,
) -> Result<Made, Error> {
    let st = Stat::of(&other.metadata);
    let existing = os::symlink_metadata(dest).ok().map(|m| Stat::of(&m));
    let temp = temp_beside(dest);
    let io = |e| Error::io(dest, e);
    match st.kind {
        NodeKind::Symlink => {
            let link = os::read_link(&other.path).map_err(|e| Error::io(&*other.path, e))?;
            if let Some(d) = existing.as_ref().filter(|d| d.kind == NodeKind::Symlink)
                && os::read_link(dest).is_ok_and(|t| t == link)
            {
                return refresh(&other.path, false, dest, d, as_root, xattrs).map(Made::refreshed);
            }
            os::with_path(&temp, |t| make_symlink(&link, t)).map_err(io)?;
        }
        NodeKind::Fifo | NodeKind::CharDevice | NodeKind::BlockDevice => {
            if let Some(d) = existing
                .as_ref()
                .filter(|d| d.kind == st.kind && d.rdev == st.rdev)
            {
                return refresh(&other.path, false, dest, d, as_root, xattrs).map(Made::refreshed);
            }
            if st.kind != NodeKind::Fifo && !as_root {
                reporter.warning(Some(&other.path), "device node not copied (needs root)");
                return Ok(Made::Same);
            }
            let type_bits = match st.kind {
                NodeKind::Fifo => 0o010000,
                NodeKind::CharDevice => 0o020000,
                _ => 0o060000,
            };
            os::make_node(&temp, type_bits | st.mode, st.rdev).map_err(io)?;
        }
        _ => {
            reporter.warning(Some(&other.path), "socket ignored");
            return Ok(Made::Same);
        }
    }
    let placed = (if xattrs {
        target::sync_xattrs(&other.path, &temp).map(drop)
    } else {
        Ok(())
    })
    .and_then(|()| {
        target::apply(&temp, None, &st, as_root)
            .and_then(|()| os::with_paths(&temp, dest, |a, b| fs::rename(a, b)))
            .map_err(io)
    });
    if let Err(e) = placed {
        let _ = os::with_path(&temp, |p| fs::remove_file(p));
        return Err(e);
    }
    Ok(Made::New)
}

/// Brings an unchanged destination entry `dest` (whose metadata is `d`) up to date with
/// its source (mode, owner as root, mtime and atime, extended attributes and ACLs, removals
/// included), as rsync does. `follow`: the source's own metadata through a symlink (a file
/// copied by `-L`). Returns whether anything changed; an error names the side it
/// happened on.
fn refresh(
    src: &Path,
    follow: bool,
    dest: &Path,
    d: &Stat,
    as_root: bool,
    xattrs: bool,
) -> Result<bool, Error> {
    let s = Stat::of(
        &if follow {
            os::metadata(src)
        } else {
            os::symlink_metadata(src)
        }
        .map_err(|e| Error::io(src, e))?,
    );
    let mut changed = false;
    let owner = as_root && (s.uid, s.gid) != (d.uid, d.gid);
    let mode = s.kind != NodeKind::Symlink && s.mode != d.mode;
    if owner || mode || s.mtime != d.mtime {
        target::apply(dest, None, &s, as_root).map_err(|e| Error::io(dest, e))?;
        changed = true;
    }
    if xattrs && target::sync_xattrs(src, dest)? {
        changed = true;
    }
    Ok(changed)
}

#[cfg(unix)]
fn make_symlink(target: &Path, at: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(windows)]
fn make_symlink(target: &Path, at: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, at)
}

#[cfg(not(any(unix, windows)))]
fn make_symlink(_target: &Path, _at: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Makes `dest` a hard link to `first` (through a temporary name), unless it is one.
fn link_in_place(first: &Path, dest: &Path) -> io::Result<bool> {
    let a = os::metadata(first)?;
    if let Ok(b) = os::symlink_metadata(dest) {
        let id = |m: &fs::Metadata, p: &Path| os::file_id(p, None, m).ok();
        if id(&a, first).is_some() && id(&a, first) == id(&b, dest) {
            return Ok(false);
        }
    }
    let temp = temp_beside(dest);
    os::with_paths(first, &temp, |a, b| fs::hard_link(a, b))?;
    os::with_paths(&temp, dest, |a, b| fs::rename(a, b)).inspect_err(|_| {
        let _ = os::with_path(&temp, |p| fs::remove_file(p));
    })?;
    Ok(true)
}

/// The read phase's state, shared by the workers.
struct Shared<'a> {
    map: &'a Mapping<'a>,
    opts: &'a CopyOptions,
    reporter: &'a dyn Reporter,
    as_root: bool,
    actions: &'a [Action],
    events: Mutex<&'a mut dyn CopyEvents>,
    /// Complete copies waiting for their data to be flushed before they are renamed.
    commits: GroupCommit<Placed>,
    /// The destination is full: the rest is not written.
    stop: AtomicBool,
    copied: AtomicU64,
    updated: AtomicU64,
    skipped: AtomicU64,
    refreshed: AtomicU64,
    failed: AtomicU64,
    bytes: AtomicU64,
    cloned: AtomicU64,
    methods: Mutex<HashSet<(u64, Method)>>,
    /// (destination, BLAKE3 of the source) of each file copied, for `verify`.
    hashes: Mutex<Vec<(PathBuf, String)>>,
}

/// What is counted of a copy once it is in place under its final name.
struct Placed {
    /// Not at the destination before (else: replaced).
    new: bool,
    written: u64,
    cloned: u64,
    /// (destination, BLAKE3 of the source), for `verify`.
    check: Option<(PathBuf, String)>,
}

/// The content hashes kept while reading: the manifest's algorithm, and BLAKE3 for
/// `verify` and `checksum` (one hasher when the manifest's is BLAKE3 too).
struct Hashes {
    manifest: Option<Hasher>,
    check: Option<Hasher>,
    /// The manifest's hash is the check hash.
    shared: bool,
}

impl Hashes {
    fn new(manifest: Option<Algorithm>, check: bool) -> Hashes {
        let shared = check && manifest == Some(Algorithm::Blake3);
        Hashes {
            manifest: manifest.map(Algorithm::hasher),
            check: (check && !shared).then(|| Algorithm::Blake3.hasher()),
            shared,
        }
    }

    fn any(&self) -> bool {
        self.manifest.is_some() || self.check.is_some()
    }

    fn update(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.manifest {
            h.update(data);
        }
        if let Some(h) = &mut self.check {
            h.update(data);
        }
    }

    /// (the manifest's hex, the BLAKE3 hex to check with).
    fn finish(self) -> (Option<String>, Option<String>) {
        let manifest = self.manifest.map(Hasher::finish_hex);
        let check = if self.shared {
            manifest.clone()
        } else {
            self.check.map(Hasher::finish_hex)
        };
        (manifest, check)
    }
}

impl Shared<'_> {
    fn fail(&self, err: Error) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.reporter.error(&err);
    }

    /// Counts the copies a flush put in place (or failed to).
    fn placed(&self, outcome: commit::Outcome<Placed>) {
        for (placed, done) in outcome {
            match done {
                Ok(()) => {
                    let count = if placed.new {
                        &self.copied
                    } else {
                        &self.updated
                    };
                    count.fetch_add(1, Ordering::Relaxed);
                    self.bytes.fetch_add(placed.written, Ordering::Relaxed);
                    self.cloned.fetch_add(placed.cloned, Ordering::Relaxed);
                    if let Some(check) = placed.check {
                        lock(&self.hashes).push(check);
                    }
                }
                Err(e) => {
                    if is_full(&e) {
                        self.stop.store(true, Ordering::Relaxed);
                    }
                    self.fail(e);
                }
            }
        }
    }

    /// One file from the sweeps.
    fn one(&self, planned: &PlannedFile, file: Result<FileReader, Error>) {
        let file = match file {
            Ok(f) if !self.stop.load(Ordering::Relaxed) => f,
            Ok(_) => return,
            Err(e) => {
                self.fail(e);
                lock(&self.events).file_done(planned, false);
                return;
            }
        };
        let index = file.index() as usize;
        let action = self.actions[index];
        let done = match self.handle(planned, file, action) {
            Ok(()) => true,
            Err(e) => {
                if is_full(&e) {
                    self.stop.store(true, Ordering::Relaxed);
                }
                self.fail(e);
                false
            }
        };
        lock(&self.events).file_done(planned, done);
    }

    fn handle(
        &self,
        planned: &PlannedFile,
        mut file: FileReader,
        action: Action,
    ) -> Result<(), Error> {
        let src = &*planned.entry.path;
        let dest = self
            .map
            .dest_of(src)
            .expect("planned files have a destination");
        let needs_check = self.opts.verify || action == Action::Compare;
        let mut hashes = Hashes::new(self.opts.hash, needs_check);
        let before = file.metadata().map_err(|e| Error::io(src, e))?;
        let st = Stat::of(&before);

        match action {
            Action::HashOnly | Action::Compare => {
                let (_, complete) =
                    read_all(&mut file, &mut hashes, None, st.size).map_err(|e| e.at(src))?;
                let after = file.metadata().ok();
                if !complete || after.is_none_or(|a| Stat::of(&a).changed_from(&st)) {
                    return Err(changed_error(src));
                }
                let (manifest, check) = hashes.finish();
                self.report_hash(planned, manifest);
                if action == Action::HashOnly {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                let ours = check.unwrap_or_default();
                let theirs =
                    hash_path(&dest, Algorithm::Blake3).map_err(|e| Error::io(&dest, e))?;
                if ours == theirs {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    let d = os::symlink_metadata(&dest).map_err(|e| Error::io(&dest, e))?;
                    let changed = refresh(
                        src,
                        true,
                        &dest,
                        &Stat::of(&d),
                        self.as_root,
                        self.opts.xattrs,
                    )?;
                    if changed {
                        self.refreshed.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                // Different: copy it, reading the source again (rare).
                let mut again = crate::os::open_to_read(src).map_err(|e| Error::io(src, e))?;
                let temp = AtomicFile::create_private(&dest).map_err(|e| Error::io(&dest, e))?;
                let mut buf = vec![0u8; 1 << 20];
                let mut written = 0u64;
                loop {
                    let n = again.read(&mut buf).map_err(|e| Error::io(src, e))?;
                    if n == 0 {
                        break;
                    }
                    temp.file()
                        .write_all(&buf[..n])
                        .map_err(|e| Error::io(&dest, e))?;
                    written += n as u64;
                }
                let complete = written == st.size;
                let placed = Placed {
                    new: false,
                    written,
                    cloned: 0,
                    check: self.opts.verify.then(|| (dest.clone(), ours)),
                };
                return self.finish(
                    src,
                    &dest,
                    temp,
                    &st,
                    complete,
                    &again.metadata().ok(),
                    placed,
                );
            }
            Action::Copy | Action::Update | Action::Skip => {}
        }

        let temp = AtomicFile::create_private(&dest).map_err(|e| Error::io(&dest, e))?;
        #[cfg(any(test, debug_assertions))]
        crate::jobs::fault_point(src);
        let hashing = hashes.any();
        let mut method = Method::ReadWrite;
        let mut done = None;
        if self.opts.fast_path && !hashing && self.map.dest_on(src, planned.entry.id.dev) {
            if os::clone_file(file.file(), temp.file()).is_ok() {
                method = Method::Clone;
                done = Some((st.size, true));
            } else if st.has_holes() {
                // copy_file_range may fill holes in: read what is data, write only that.
            } else if let Ok(n) = os::copy_range(file.file(), temp.file(), st.size) {
                method = Method::CopyRange;
                done = Some((n, n == st.size));
            }
        }
        let (bytes, complete) = match done {
            Some(d) => d,
            None => {
                let sparse = st.has_holes();
                read_all(&mut file, &mut hashes, Some((temp.file(), sparse)), st.size)
                    .map_err(|e| e.at_either(src, &dest))?
            }
        };
        lock(&self.methods).insert((planned.entry.id.dev, method));
        let (manifest, check) = hashes.finish();
        let (written, cloned) = if method == Method::Clone {
            (0, bytes)
        } else {
            (bytes, 0)
        };
        let placed = Placed {
            new: action == Action::Copy,
            written,
            cloned,
            check: check
                .filter(|_| self.opts.verify)
                .map(|c| (dest.clone(), c)),
        };
        self.finish(
            src,
            &dest,
            temp,
            &st,
            complete,
            &file.metadata().ok(),
            placed,
        )?;
        self.report_hash(planned, manifest);
        Ok(())
    }

    /// Checks the source did not change, gives the temporary its metadata and hands it to
    /// the group commit, which puts it in place once its data is on the disk.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        src: &Path,
        dest: &Path,
        temp: AtomicFile,
        st: &Stat,
        complete: bool,
        after: &Option<fs::Metadata>,
        placed: Placed,
    ) -> Result<(), Error> {
        let changed = after.as_ref().is_none_or(|a| Stat::of(a).changed_from(st));
        if changed || !complete {
            return Err(changed_error(src));
        }
        let io = |e| Error::io(dest, e);
        if st.has_holes() {
            temp.file().set_len(st.size).map_err(io)?;
        }
        if self.opts.xattrs {
            target::sync_xattrs(src, temp.temp_path())?;
        }
        target::apply(temp.temp_path(), Some(temp.file()), st, self.as_root).map_err(io)?;
        if self.opts.fsync {
            temp.file().sync_all().map_err(io)?;
        }
        // A directory in the way makes the rename fail (EISDIR), and the file is reported.
        let bytes = placed.written;
        self.placed(self.commits.add(Ready { temp, done: placed }, bytes));
        Ok(())
    }

    fn report_hash(&self, planned: &PlannedFile, hex: Option<String>) {
        if let Some(hex) = hex {
            lock(&self.events).hashed(planned, &hex);
        }
    }
}

/// A read or write failure while copying a file's content.
enum CopyFault {
    Read(io::Error),
    Write(io::Error),
}

impl CopyFault {
    fn at(self, src: &Path) -> Error {
        match self {
            CopyFault::Read(e) | CopyFault::Write(e) => Error::io(src, e),
        }
    }

    fn at_either(self, src: &Path, dest: &Path) -> Error {
        match self {
            CopyFault::Read(e) => Error::io(src, e),
            CopyFault::Write(e) => Error::io(dest, e),
        }
    }
}

/// Reads the file's `size` bytes, hashing, and writes them to `out` if given (with
/// `sparse`, only its data regions, at their offsets). Returns the bytes read, and whether
/// they were exactly the file (it neither ended early nor went on past `size`).
fn read_all(
    file: &mut FileReader,
    hashes: &mut Hashes,
    out: Option<(&File, bool)>,
    size: u64,
) -> Result<(u64, bool), CopyFault> {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 1 << 20]);
    }
    let regions = match out {
        Some((_, true)) => file
            .data_regions(size)
            .map_err(|e| CopyFault::Read(e.into()))?,
        _ => std::iter::once(0..size).collect(),
    };
    BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        let mut total = 0u64;
        for region in regions {
            if file.position() != region.start {
                file.seek_to(region.start)
                    .map_err(|e| CopyFault::Read(e.into()))?;
            }
            let mut at = region.start;
            while at < region.end {
                let want = ((region.end - at) as usize).min(buf.len());
                let n = match file.read(&mut buf[..want]) {
                    Ok(0) => return Ok((total, false)),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(CopyFault::Read(e)),
                };
                hashes.update(&buf[..n]);
                if let Some((out, _)) = out {
                    write_at(out, &buf[..n], at).map_err(CopyFault::Write)?;
                }
                at += n as u64;
                total += n as u64;
            }
        }
        // Anything past `size`: the file grew.
        if file.position() != size {
            file.seek_to(size).map_err(|e| CopyFault::Read(e.into()))?;
        }
        let grew = file.read(&mut buf[..1]).is_ok_and(|n| n > 0);
        Ok((total, !grew))
    })
}

#[cfg(unix)]
fn write_at(file: &File, data: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, at)
}

#[cfg(windows)]
fn write_at(file: &File, mut data: &[u8], mut at: u64) -> io::Result<()> {
    while !data.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, data, at)?;
        data = &data[n..];
        at += n as u64;
    }
    Ok(())
}

fn changed_error(src: &Path) -> Error {
    Error::io(
        src,
        io::Error::other("file changed while being copied; not copied"),
    )
}

/// Whether an error means the destination is full.
fn is_full(err: &Error) -> bool {
    err.io_error().is_some_and(|e| {
        e.kind() == io::ErrorKind::StorageFull || e.kind() == io::ErrorKind::QuotaExceeded
    })
}

/// The hash of a file read plainly.
fn hash_path(path: &Path, algo: Algorithm) -> io::Result<String> {
    let f = os::with_path(path, |p| File::open(p))?;
    crate::jobs::hash::hash_stream(f, algo)
}

/// Reads every file copied back from the destination, in physical order, its cache
/// dropped first, and compares its BLAKE3 hash with the source's.
fn verify(
    hashes: &[(PathBuf, String)],
    plan_opts: &PlanOptions,
    opts: &CopyOptions,
    reporter: &dyn Reporter,
    summary: &mut CopySummary,
) {
    let expected: HashMap<&Path, &str> = hashes
        .iter()
        .map(|(p, h)| (p.as_path(), h.as_str()))
        .collect();
    let paths: Vec<PathBuf> = hashes.iter().map(|(p, _)| p.clone()).collect();
    for p in &paths {
        if let Ok(f) = os::with_path(p, |p| File::open(p)) {
            let _ = os::drop_cache(&f, 0, 0);
        }
    }
    let mut verify_opts = PlanOptions::default();
    verify_opts.walk.descend_into_inputs = false;
    verify_opts.walk.threads = plan_opts.walk.threads;
    let plan = Arc::new(Plan::build(&paths, &verify_opts, reporter));
    let verified = AtomicU64::new(0);
    let mismatched = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    Reader::new(plan, opts.read.clone()).par_for_each(opts.workers, |planned, file| {
        let path = &*planned.entry.path;
        let got = file.and_then(|f| crate::jobs::hash::hash_reader(f, Algorithm::Blake3));
        match got {
            Ok(hex) => {
                verified.fetch_add(1, Ordering::Relaxed);
                if expected.get(path).is_some_and(|want| *want != hex) {
                    mismatched.fetch_add(1, Ordering::Relaxed);
                    failed.fetch_add(1, Ordering::Relaxed);
                    reporter.error(&Error::io(
                        path,
                        io::Error::other("verify: the copy differs from the source"),
                    ));
                }
            }
            Err(e) => {
                failed.fetch_add(1, Ordering::Relaxed);
                reporter.error(&e);
            }
        }
    });
    summary.verified += verified.into_inner();
    summary.mismatched += mismatched.into_inner();
    summary.failed += failed.into_inner();
}
