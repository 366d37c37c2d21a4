//! `copy`: a tree copied with `cp -a`'s semantics, its files read in physical order, each
//! written under a temporary name and renamed into place when complete.
//!
//! - Directories are made first (in the order `find` lists them), their metadata set last;
//!   symlinks, FIFOs and device nodes (as root) are recreated, never opened.
//! - Regular files: a file whose destination has the same size and mtime is skipped
//!   without being read (rsync's quick check; `checksum` compares content instead).
//!   Others are read in physical order with the disk's queue kept full and written by
//!   worker threads to `.NAME.seekless-tmp-RUN-N` beside their destination, given the
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
//! Layout, one decision per file: `decide` (what to do with each file, pure), `nodes`
//! (directories, links, special files, metadata refresh), `content` (the workers that
//! write file content), `commit` (durable before renamed, a batch at a time), `verify`,
//! `target` (destination metadata and leftovers). What may be removed or replaced is not
//! decided here: [`crate::destructive`] owns it, given what the run saw. What a copy is
//! asked and what it reports: `options`.
//!
//! ```
//! use seekless_jobs::copy::{CopyOptions, CopyRoot, copy};
//! use seekless_core::{PlanOptions, Quiet};
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
mod content;
mod decide;
mod nodes;
mod options;
mod roots;
mod target;
mod verify;

pub use options::{CopyError, CopyEvents, CopyOptions, CopyRoot, CopySummary, Method};
pub use roots::{ResolveError, resolve_roots};
use roots::{check_destinations, destination_dirs};

use std::collections::{HashMap, HashSet};
use std::fs::{self};
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::atomic::parent_of;
use crate::destructive::{self, Clearance, DestinationLock, Withheld, Witness};
use crate::stat::Stat;
use commit::GroupCommit;
use content::Shared;
use decide::{Action, Existing, Rules};
use nodes::{Made, link_in_place, make_dir, make_other, refresh};
use seekless_core::Error;
use seekless_core::FileId;
use seekless_core::Other;
use seekless_core::Reporter;
use seekless_core::read::{self, ConsumeOptions, NoEvents};
use seekless_core::{Plan, PlanOptions};
use seekless_sys as os;
use seekless_sys::sync::into_inner;

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
    check_destinations(roots)?;
    // One writer at a time in each destination.
    let _lock =
        DestinationLock::take(&destination_dirs(roots)).map_err(|held| CopyError::Busy {
            path: held.path,
            holder: held.holder,
        })?;

    // Every error and every path left out is remembered: `delete` must not take what the
    // run did not see for what the source does not have.
    let watch = Witness::new(reporter);
    let sources: Vec<PathBuf> = roots.iter().map(|r| r.source.clone()).collect();
    let mut walk_opts = plan_opts.clone();
    walk_opts.walk.others = true;
    let plan = watch.walk(&sources, &walk_opts);
    let plan = leave_out_outputs(leave_out_live_temps(plan, &watch), opts, &watch);
    let map = Mapping::new(roots);

    // Something else where the source has a directory is replaced, as rsync replaces it,
    // but only while the run has seen everything (the walk is over: what it could not see
    // is known). The witness goes on through the read.
    let (dir_clearance, watch) = watch.clearance_so_far(false);
    let dir_clearance = dir_clearance
        .ok()
        .map(|c| c.translated(|p| map.dest_side(p)).sparing(&sources));
    let mut run = Run {
        map: &map,
        opts,
        told: Told {
            witness: Some(watch),
            caller: reporter,
        },
        as_root: os::is_root(),
        summary: CopySummary::default(),
        wanted: HashSet::new(),
    };
    let dirs = run.make_directories(&plan, dir_clearance.as_ref());
    run.make_others(&plan);
    let actions = run.decide_files(&plan);
    let firsts = run.first_names(&plan);
    let (plan, read) = run.read_and_write(plan, actions, events);
    if !run.summary.stopped {
        run.link_second_names(&plan, &firsts);
    }

    // What the run could not see whole: source paths that failed or were left out (all
    // known once the read is over; what deletion itself fails on comes after, and goes
    // straight to the caller: the witness is consumed by its clearance).
    let (unseen, clearance) = run.clearance();
    let clearance = clearance.map(|c| c.translated(|p| map.dest_side(p)).sparing(&sources));
    run.place_over_directories(read.over_dirs, &clearance);
    if opts.delete {
        run.delete_extra(roots, &clearance);
    }
    run.set_directory_metadata(&dirs, &unseen);
    if opts.sync || opts.verify {
        run.sync_destinations(roots);
    }
    let mut summary = run.summary;
    if opts.verify {
        verify::verify(&read.hashes, &walk_opts, opts, reporter, &mut summary);
    }
    Ok(summary)
}

/// The plan without another job's temporaries that may be alive (that job's, half made:
/// not files of the source to back up), each left out as a path the run did not see (so
/// `delete` keeps what the destination has there), and said.
fn leave_out_live_temps(plan: Plan, reporter: &dyn Reporter) -> Plan {
    plan.retain(|_, f| {
        if !destructive::may_be_live_temp(&f.entry.path) {
            return true;
        }
        let why = "the temporary of a seekless run that may be alive; not copied";
        reporter.skipped(&f.entry.path, why);
        reporter.warning(Some(&f.entry.path), why);
        false
    })
}

/// The plan without the files this run writes itself ([`CopyOptions::outputs`]: its
/// manifest inside a source), each named once, as a path the run left out.
fn leave_out_outputs(plan: Plan, opts: &CopyOptions, reporter: &dyn Reporter) -> Plan {
    if opts.outputs.iter().all(|o| o.ids.is_empty()) {
        return plan;
    }
    let mut named_before = Vec::new();
    plan.retain(|_, f| {
        let Some(output) = opts.outputs.iter().find(|o| o.is_output(&f.entry.id)) else {
            return true;
        };
        let named = output.shown_as(&f.entry.path);
        // Named once (the temporary by the manifest's name): nothing there is deleted.
        if !named_before.contains(&named) {
            reporter.skipped(&named, "this run writes it; not copied");
            named_before.push(named);
        }
        false
    })
}

/// One copy run's state, shared by its phases.
struct Run<'a> {
    map: &'a Mapping<'a>,
    opts: &'a CopyOptions,
    /// Where it reports: through its witness, until the witness gives its clearance.
    told: Told<'a>,
    as_root: bool,
    summary: CopySummary,
    /// With `delete`: every destination path the source has (the rest may go).
    wanted: HashSet<PathBuf>,
}

/// What the read phase leaves for the phases after it.
struct ReadDone {
    /// Each copied file's path and hash, for `verify`.
    hashes: Vec<(PathBuf, String)>,
    /// Copies waiting where the destination has a directory.
    over_dirs: Vec<content::OverDir>,
}

/// Where a copy run reports: through its witness (what the run could not see is
/// remembered) until the witness gives its clearance ([`Run::clearance`]), straight to the
/// caller after.
struct Told<'a> {
    witness: Option<Witness<'a>>,
    caller: &'a dyn Reporter,
}

impl Told<'_> {
    fn reporter(&self) -> &dyn Reporter {
        match &self.witness {
            Some(witness) => witness,
            None => self.caller,
        }
    }
}

impl Run<'_> {
    fn reporter(&self) -> &dyn Reporter {
        self.told.reporter()
    }

    /// The paths the run could not see, and the clearance its witness gives (consumed:
    /// the run reports straight to the caller from here on).
    fn clearance(&mut self) -> (HashSet<PathBuf>, Result<Clearance, Withheld>) {
        let witness = self
            .told
            .witness
            .take()
            .expect("a run's witness gives one clearance");
        let unseen = witness.unseen().into_iter().collect();
        (unseen, witness.clearance(self.opts.ignore_errors))
    }

    fn fail(&mut self, err: Error) {
        fail(&mut self.summary, self.told.reporter(), err);
    }

    /// Directories first: each made (or found; then the temporaries an interrupted run
    /// left in it are removed), a file in its way replaced only with `clearance`.
    /// Returns them with their sources, for their metadata at the end.
    fn make_directories(
        &mut self,
        plan: &Plan,
        clearance: Option<&destructive::Clearance>,
    ) -> Vec<(PathBuf, Other)> {
        let mut dirs = Vec::new();
        for other in plan.others() {
            let Some(dest) = self.map.dest_of(&other.path) else {
                continue;
            };
            if self.opts.delete {
                self.wanted.insert(dest.clone());
            }
            if other.metadata.is_dir() {
                match make_dir(&dest, other, clearance) {
                    Ok(existed) => {
                        if existed {
                            self.summary.leftovers_removed += target::remove_leftovers(&dest);
                        }
                        dirs.push((dest, other.clone()));
                    }
                    Err(e) => self.fail(Error::io(&dest, e)),
                }
            }
        }
        dirs
    }

    /// Then symlinks and special files.
    fn make_others(&mut self, plan: &Plan) {
        for other in plan.others() {
            if other.metadata.is_dir() {
                continue;
            }
            let Some(dest) = self.map.dest_of(&other.path) else {
                continue;
            };
            match make_other(
                other,
                &dest,
                self.as_root,
                self.opts.xattrs,
                self.reporter(),
            ) {
                Ok(Made::New) => self.summary.others += 1,
                Ok(Made::Refreshed) => self.summary.refreshed += 1,
                Ok(Made::Same) => {}
                Err(e) => self.fail(e),
            }
        }
    }

    /// What to do with each planned file, from the destination's metadata alone; a file
    /// skipped as unchanged gets its metadata refreshed.
    fn decide_files(&mut self, plan: &Plan) -> Vec<Action> {
        let rules = Rules {
            checksum: self.opts.checksum,
            hashing: self.opts.hash.is_some(),
        };
        let mut actions = Vec::with_capacity(plan.files().len());
        for f in plan.files() {
            let Some(dest) = self.map.dest_of(&f.entry.path) else {
                actions.push(Action::Skip);
                continue;
            };
            if self.opts.delete {
                self.wanted.insert(dest.clone());
            }
            let existing = os::symlink_metadata(&dest).ok();
            if existing.as_ref().is_some_and(|d| d.is_dir()) && !self.opts.delete {
                actions.push(Action::Skip);
                let why = "a directory is in the way of this file (--delete replaces it)";
                self.fail(Error::io(&dest, io::Error::other(why)));
                continue;
            }
            // With `delete`, a directory in the way is replaced once the copy is complete
            // and on the disk, and only if the run saw everything (see `content::OverDir`).
            let action = decide::action(
                f.entry.size,
                f.entry.modified,
                existing.as_ref().map(Existing::of).as_ref(),
                rules,
            );
            if let (Action::Skip, Some(d)) = (action, &existing) {
                self.summary.skipped += 1;
                match refresh(
                    &f.entry.path,
                    true,
                    &dest,
                    &Stat::of(d),
                    self.as_root,
                    self.opts.xattrs,
                ) {
                    Ok(true) => self.summary.refreshed += 1,
                    Ok(false) => {}
                    Err(e) => self.fail(e),
                }
            }
            actions.push(action);
        }
        actions
    }

    /// The first name of each file that has others, whether or not it is read (second
    /// names are wanted too).
    fn first_names(&mut self, plan: &Plan) -> HashMap<FileId, PathBuf> {
        for alias in plan.aliases() {
            if let Some(dest) = self.map.dest_of(&alias.path).filter(|_| self.opts.delete) {
                self.wanted.insert(dest);
            }
        }
        let alias_ids: HashSet<FileId> = plan.aliases().iter().map(|a| a.id).collect();
        plan.files()
            .iter()
            .filter(|f| alias_ids.contains(&f.entry.id))
            .map(|f| (f.entry.id, f.entry.path.to_path_buf()))
            .collect()
    }

    /// The read: the files to read, each with its action, in plan order; workers write
    /// what the sweeps hand them.
    fn read_and_write(
        &mut self,
        plan: Plan,
        actions: Vec<Action>,
        events: &mut dyn CopyEvents,
    ) -> (std::sync::Arc<Plan>, ReadDone) {
        let opts = self.opts;
        let mut actions = actions.into_iter();
        let decided = read::decide(plan, |_| actions.next().filter(|a| *a != Action::Skip));
        let (plan, actions) = (decided.plan, decided.decisions);
        let shared = Shared {
            map: self.map,
            opts,
            reporter: self.told.reporter(),
            as_root: self.as_root,
            actions: &actions,
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
            over_dirs: Mutex::new(Vec::new()),
        };
        let consume = ConsumeOptions::new(opts.read.clone(), opts.workers);
        read::run(
            &plan,
            &consume,
            &shared,
            events,
            |events, planned, outcome| {
                if let Some(hex) = &outcome.hash {
                    events.hashed(planned, hex);
                }
                // A full destination: the rest would not fit either; stop reading.
                if shared.stop.load(Ordering::Relaxed) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        shared.placed(shared.commits.finish());
        let summary = &mut self.summary;
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
        let done = ReadDone {
            hashes: into_inner(shared.hashes),
            over_dirs: into_inner(shared.over_dirs),
        };
        (plan, done)
    }

    /// Hard links: every second name of a file that is in place, linked to its first.
    fn link_second_names(&mut self, plan: &Plan, firsts: &HashMap<FileId, PathBuf>) {
        for alias in plan.aliases() {
            let (Some(first), Some(dest)) = (firsts.get(&alias.id), self.map.dest_of(&alias.path))
            else {
                continue;
            };
            let Some(first_dest) = self.map.dest_of(first) else {
                continue;
            };
            if first_dest == dest {
                continue;
            }
            match link_in_place(&first_dest, &dest) {
                Ok(true) => self.summary.hardlinks += 1,
                Ok(false) => {}
                Err(e) => self.fail(Error::io(&dest, e)),
            }
        }
    }

    /// Copies waiting where the destination has a directory: put in place now, if the
    /// run saw everything there.
    fn place_over_directories(
        &mut self,
        over_dirs: Vec<content::OverDir>,
        clearance: &Result<destructive::Clearance, destructive::Withheld>,
    ) {
        for waiting in over_dirs {
            let dest = waiting.temp.dest().to_path_buf();
            let placed = match clearance {
                Ok(c) => waiting.temp.put_in_place_over_dir(waiting.durable, c),
                Err(why) => Err(Error::io(
                    &dest,
                    io::Error::other(format!(
                        "a directory is in the way of this file; kept: {why} (--ignore-errors \
                         replaces it all the same)"
                    )),
                )),
            };
            match placed {
                Ok(()) => {
                    self.summary.deleted += 1;
                    self.summary.updated += 1;
                    self.summary.bytes += waiting.placed.written;
                    self.summary.cloned += waiting.placed.cloned;
                }
                Err(e) => self.fail(e),
            }
        }
    }

    /// With `delete`: what the destination has and the source does not, removed, only
    /// with the run's clearance.
    fn delete_extra(
        &mut self,
        roots: &[CopyRoot],
        clearance: &Result<destructive::Clearance, destructive::Withheld>,
    ) {
        match clearance {
            Err(why) => {
                self.summary.deletion_skipped = true;
                self.reporter().warning(
                    None,
                    &format!(
                        "copy: nothing deleted: {why}, so the source may have more than was \
                         seen (--ignore-errors deletes all the same, except at and under the \
                         paths that failed)"
                    ),
                );
            }
            Ok(clearance) => {
                for root in roots {
                    if os::symlink_metadata(&root.source).is_ok_and(|m| m.is_dir()) {
                        self.summary.deleted += destructive::remove_extra(
                            &root.source,
                            self.opts.allow_empty_source,
                            &root.dest,
                            &self.wanted,
                            clearance,
                            self.told.reporter(),
                            &mut self.summary.failed,
                        );
                    }
                }
            }
        }
    }

    /// Directory metadata last, deepest first, so setting it is not undone by writing
    /// inside them. A directory that could not be read keeps the metadata its copy has:
    /// a backup made unreadable (mode 000) by a source the user cannot read helps nobody.
    fn set_directory_metadata(&mut self, dirs: &[(PathBuf, Other)], unseen: &HashSet<PathBuf>) {
        for (dest, other) in dirs.iter().rev() {
            if unseen.contains(&*other.path) {
                continue;
            }
            let st = Stat::of(&other.metadata);
            let done = (if self.opts.xattrs {
                target::sync_xattrs(&other.path, dest).map(drop)
            } else {
                Ok(())
            })
            .and_then(|()| {
                target::apply(dest, None, &st, self.as_root).map_err(|e| Error::io(dest, e))
            });
            match done {
                Ok(()) => self.summary.dirs += 1,
                Err(e) => self.fail(e),
            }
        }
    }

    /// Everything flushed: the filesystem of each destination.
    fn sync_destinations(&mut self, roots: &[CopyRoot]) {
        for root in roots {
            let dir = if root.dest.is_dir() {
                root.dest.as_path()
            } else {
                parent_of(&root.dest)
            };
            if let Err(e) = os::sync_filesystem(dir) {
                self.fail(Error::io(dir, e));
            }
        }
    }
}

/// The roots, with each destination that is a symlink replaced by what it leads to: as
/// `cp` and `rsync` do, a link given as the destination is followed (`/backup` a link to
/// another disk; a file's destination a link to a file), never replaced. Links below it
/// are copies of the source's links, as always.
fn follow_dest_links(roots: &[CopyRoot]) -> Vec<CopyRoot> {
    roots
        .iter()
        .map(|r| {
            let is_link = os::symlink_metadata(&r.dest).is_ok_and(|m| m.file_type().is_symlink());
            if !is_link {
                return r.clone();
            }
            if os::metadata(&r.dest).is_ok_and(|m| m.is_dir()) {
                return match fs::canonicalize(&r.dest) {
                    Ok(dir) => CopyRoot::new(r.source.clone(), dir),
                    Err(_) => r.clone(),
                };
            }
            // A link to a file, for a file: its target is written, as `cp` writes it
            // (and, as `cp`, not through a dangling link: refused in `copy_with`).
            match os::symlink_metadata(&r.source) {
                Ok(m) if m.is_file() && os::metadata(&r.dest).is_ok() => {
                    match crate::atomic::through_links(&r.dest) {
                        Ok(target) => CopyRoot::new(r.source.clone(), target),
                        Err(_) => r.clone(),
                    }
                }
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

    /// The name on the destination side of a path the run could not see: a source path's
    /// destination, or a destination path itself (a copy that failed to be written).
    fn dest_side(&self, path: &Path) -> Option<PathBuf> {
        self.dest_of(path).or_else(|| {
            self.roots
                .iter()
                .any(|r| path.starts_with(&r.dest))
                .then(|| path.to_path_buf())
        })
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
