//! `index --watch`: after an ordinary run, the catalog follows the roots as they change
//! (docs/index.md, "Watching"). The watch only decides *which directories* to walk again;
//! each batch of changes is an ordinary incremental run over them, so every row removed
//! is removed by the run's own rules (the walk's clearance, the file proven gone), a
//! move is a move (the inode, on the same volume), and the files read are read in
//! physical order.
//!
//! - Events are coalesced: a batch starts once nothing changed for
//!   [`WatchOptions::settle`]; a file still being written (written to, not closed) is
//!   left out of the batches until it is closed, up to [`WatchOptions::max_wait`].
//! - A directory that cannot be watched (the inotify limit) is walked again every
//!   [`WatchOptions::rescan`], and said so; where nothing can be watched (not Linux),
//!   every root is.
//! - Lost events (a queue overflow), and a mount or unmount that changes a root's own mount
//!   or the mounts under a root, make the next batch a run over every root, caught up where
//!   it can be: an unmounted drive's volume goes offline, a remounted one is caught up.
//!   Mounts elsewhere on the machine change nothing here.
//! - The writer lock is held from the first run to the last: a second writer is refused.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use seekless_core::{Error, PlanOptions, Reporter};
use seekless_sys::{Change, DirWatch, WatchEvent};

use super::catalog::WriterLock;
use super::catchup::{CatchUp, fewest, walk_from};
use super::roots::roots_before_walk;
use super::{IndexError, IndexEvents, IndexOptions, IndexSummary, run_locked};

/// How `index --watch` batches changes.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WatchOptions {
    /// Quiet time before a batch: nothing changed for this long.
    pub settle: Duration,
    /// How long a file may stay written to without being closed before its directory is
    /// walked anyway (its row then describes it as it was; the next change reads it again).
    pub max_wait: Duration,
    /// How often directories that could not be watched are walked again.
    pub rescan: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            settle: Duration::from_secs(2),
            max_wait: Duration::from_secs(600),
            rescan: Duration::from_secs(300),
        }
    }
}

/// How long one wait for events lasts at most: how soon a stop is seen.
const TICK: Duration = Duration::from_millis(200);

/// Indexes `inputs` as [`index_with`](super::index_with) does, then keeps the catalog
/// current until `stop` is set (a signal): each batch of changes is a run, told to
/// `batch` with the directories it walked and how they are watched (`fanotify (1
/// filesystem)`, `inotify (120 directories)`, `nothing`). Pending changes are run before
/// returning.
#[allow(clippy::too_many_arguments)]
pub fn watch(
    inputs: &[PathBuf],
    plan_opts: &PlanOptions,
    opts: &IndexOptions,
    wopts: &WatchOptions,
    reporter: &dyn Reporter,
    events: &mut dyn IndexEvents,
    stop: &AtomicBool,
    batch: &mut dyn FnMut(&IndexSummary, &[PathBuf], &str),
) -> Result<(), IndexError> {
    let lock = WriterLock::take(&opts.db)?;
    let roots: Vec<PathBuf> = roots_before_walk(inputs)
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    // Watched before the first run: what changes during it is seen after it.
    let mut state = State::new(&roots, wopts.clone(), reporter);
    let first = CatchUp::prepare(inputs, plan_opts, opts);
    let (summary, mut lock) = run_locked(lock, &first, plan_opts, opts, reporter, events)?;
    batch(&summary, inputs, &state.describe());
    let mut got = Vec::new();
    let mut batch_opts = opts.clone();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        // Stopping: what the kernel has queued is still taken, not waited for.
        state.wait(
            &mut got,
            reporter,
            if stopping { Duration::ZERO } else { TICK },
        );
        let Some((dirs, everything)) = state.due(stopping) else {
            if stopping {
                return Ok(());
            }
            continue;
        };
        batch_opts.reread = state.written_under(&dirs);
        batch_opts.hold = state.still_written();
        // A batch over every root (mounts changed, events lost) catches up as a first run
        // does; one over the directories that changed walks them.
        let catchup = if everything {
            CatchUp::prepare(&dirs, plan_opts, &batch_opts)
        } else {
            CatchUp::none(&dirs)
        };
        let (summary, again) =
            run_locked(lock, &catchup, plan_opts, &batch_opts, reporter, events)?;
        lock = again;
        batch(&summary, &dirs, &state.describe());
        if stopping && state.pending.is_empty() {
            return Ok(());
        }
    }
}

/// What the watch knows between batches.
struct State<'r> {
    roots: Vec<PathBuf>,
    opts: WatchOptions,
    watch: Option<DirWatch>,
    /// Subtrees not watched (the limit, an error): walked every `rescan`.
    unwatched: BTreeSet<PathBuf>,
    last_rescan: Instant,
    /// Directories to walk, with when they last changed.
    pending: HashMap<PathBuf, Instant>,
    /// Files written to and not closed yet, since when.
    writing: HashMap<PathBuf, Instant>,
    /// Files written and closed since their last batch: read again even if their size
    /// and mtime are the row's.
    written: BTreeSet<PathBuf>,
    /// The next batch walks every root.
    everything: bool,
    last_change: Instant,
    reporter: &'r dyn Reporter,
    /// The limit was told of (once).
    told_limit: bool,
    /// Each root's mount and the mount points under it, when last looked at.
    mounts: Vec<(Option<u64>, Vec<PathBuf>)>,
}

/// Each root's mount (its id) and the mount points under it: what a mount change must
/// change for the roots to be walked again.
fn mounts_of(roots: &[PathBuf]) -> Vec<(Option<u64>, Vec<PathBuf>)> {
    roots
        .iter()
        .map(|r| {
            (
                seekless_sys::mount_id(r).ok(),
                seekless_sys::mount_points_under(r).unwrap_or_default(),
            )
        })
        .collect()
}

impl<'r> State<'r> {
    fn new(roots: &[PathBuf], opts: WatchOptions, reporter: &'r dyn Reporter) -> State<'r> {
        let watch = match DirWatch::new() {
            Ok(w) => Some(w),
            Err(e) => {
                reporter.warning(
                    None,
                    &format!(
                        "cannot watch for changes ({}): every PATH is indexed again every {} s",
                        seekless_sys::describe_io(&e),
                        opts.rescan.as_secs_f64()
                    ),
                );
                None
            }
        };
        let mut me = State::bare(roots, opts, watch, reporter);
        if me.watch.is_none() {
            me.unwatched.extend(roots.iter().cloned());
        }
        for r in roots {
            me.watch_tree(r);
        }
        me
    }

    /// A state with nothing pending and nothing watched yet.
    fn bare(
        roots: &[PathBuf],
        opts: WatchOptions,
        watch: Option<DirWatch>,
        reporter: &'r dyn Reporter,
    ) -> State<'r> {
        let now = Instant::now();
        State {
            roots: roots.to_vec(),
            opts,
            watch,
            unwatched: BTreeSet::new(),
            last_rescan: now,
            pending: HashMap::new(),
            writing: HashMap::new(),
            written: BTreeSet::new(),
            everything: false,
            last_change: now,
            reporter,
            told_limit: false,
            mounts: mounts_of(roots),
        }
    }

    /// How the roots are watched.
    fn describe(&self) -> String {
        self.watch
            .as_ref()
            .map_or_else(|| "nothing".to_string(), DirWatch::describe)
    }

    /// Watches `top` and every directory under it (not through symbolic links); what
    /// cannot be watched is walked at intervals instead.
    fn watch_tree(&mut self, top: &Path) {
        let Some(w) = self.watch.as_mut() else { return };
        let mut stack = vec![top.to_path_buf()];
        let mut refused = 0u64;
        while let Some(dir) = stack.pop() {
            if self.unwatched.iter().any(|u| dir.starts_with(u)) {
                continue;
            }
            match w.add(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::QuotaExceeded => {
                    refused += 1;
                    self.unwatched.insert(dir);
                    continue;
                }
                // Not a directory (a root that is a file), gone, or not readable: the runs
                // say what they find there.
                Err(_) => continue,
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                }
            }
        }
        if refused > 0 && !self.told_limit {
            self.told_limit = true;
            let limit = seekless_sys::watch_limit()
                .map_or_else(|| "unknown".to_string(), |n| n.to_string());
            self.reporter.warning(
                Some(top),
                &format!(
                    "the inotify watch limit is reached ({limit} watches: \
                     fs.inotify.max_user_watches, or the user namespace's \
                     user.max_inotify_watches): {refused} directories here are not watched \
                     but indexed again every {} s (raise the limit to watch them all)",
                    self.opts.rescan.as_secs_f64()
                ),
            );
        }
    }

    /// Waits for changes (at most `tick`) and notes them.
    fn wait(&mut self, got: &mut Vec<WatchEvent>, reporter: &dyn Reporter, tick: Duration) {
        got.clear();
        match self.watch.as_mut() {
            Some(w) => {
                if let Err(e) = w.wait(tick, got) {
                    reporter.error(&Error::io(Path::new("inotify"), e));
                    self.everything = true;
                }
            }
            None => std::thread::sleep(tick),
        }
        let now = Instant::now();
        for ev in got.drain(..) {
            // Only a change that matters here restarts the settle time: mounts and
            // unmounts elsewhere on the machine would otherwise hold a batch back.
            if self.note(ev, now) {
                self.last_change = now;
            }
        }
        if !self.unwatched.is_empty() && now - self.last_rescan >= self.opts.rescan {
            self.last_rescan = now;
            for u in self.unwatched.clone() {
                self.pending.insert(u, now - self.opts.settle);
            }
        }
    }

    /// Takes in one event; whether it was a change here (what restarts the settle time).
    fn note(&mut self, ev: WatchEvent, now: Instant) -> bool {
        let parent = |p: &Path| p.parent().map(Path::to_path_buf);
        match ev {
            WatchEvent::Entry {
                path,
                is_dir,
                change,
            } => {
                match change {
                    Change::Writing if !is_dir => {
                        self.writing.entry(path.clone()).or_insert(now);
                    }
                    Change::Closed => {
                        self.writing.remove(&path);
                        self.written.insert(path.clone());
                    }
                    Change::Removed => {
                        self.writing.remove(&path);
                    }
                    Change::MovedFrom(_) => {
                        self.writing.remove(&path);
                        if is_dir && let Some(w) = self.watch.as_mut() {
                            w.remove_tree(&path);
                        }
                    }
                    Change::Created | Change::MovedTo(_) if is_dir => {
                        self.watch_tree(&path);
                        // A new directory (made, or moved in) is walked itself: its
                        // parent's listing changed by that one name only, and a directory
                        // moved from elsewhere in the roots left its old parent pending.
                        self.pending.insert(path, now);
                        return true;
                    }
                    _ => {}
                }
                if let Some(dir) = parent(&path) {
                    self.pending.insert(dir, now);
                }
                true
            }
            WatchEvent::Unwatched(dir) | WatchEvent::Unmounted(dir) => {
                if let Some(up) = parent(&dir) {
                    self.pending.insert(up, now);
                }
                self.pending.insert(dir, now);
                true
            }
            // A mount or unmount elsewhere on the machine changes nothing here: only one
            // that changes a root's own mount or the mounts under a root is a batch over
            // every root.
            WatchEvent::MountsChanged => {
                let mounts = mounts_of(&self.roots);
                if mounts == self.mounts {
                    return false;
                }
                self.mounts = mounts;
                self.everything = true;
                true
            }
            WatchEvent::Overflow => {
                self.everything = true;
                true
            }
            _ => false,
        }
    }

    /// The files written to and not closed (for less than `max_wait`): not catalogued by
    /// a batch (not even when stopping: the next run reads them whole).
    fn still_written(&self) -> std::collections::HashSet<Vec<u8>> {
        let now = Instant::now();
        self.writing
            .iter()
            .filter(|(_, since)| now - **since < self.opts.max_wait)
            .map(|(p, _)| seekless_sys::path_to_bytes(p).into_owned())
            .collect()
    }

    /// The files written and closed under `dirs` (taken: their batch reads them), as the
    /// run's `reread`.
    fn written_under(&mut self, dirs: &[PathBuf]) -> std::collections::HashSet<Vec<u8>> {
        let (under, rest): (BTreeSet<PathBuf>, BTreeSet<PathBuf>) =
            std::mem::take(&mut self.written)
                .into_iter()
                .partition(|p| dirs.iter().any(|d| p.starts_with(d)));
        self.written = rest;
        under
            .iter()
            .map(|p| seekless_sys::path_to_bytes(p).into_owned())
            .collect()
    }

    /// The directories of the next batch, if one is due: nothing changed for the settle
    /// time (or `now_anyway`: stopping); files still being written in them are held out
    /// of the batch ([`still_written`](Self::still_written)). Each is within a root (a parent of a root
    /// is that root), exists (else its nearest existing directory within the root), and
    /// none is under another.
    /// The directories of the next batch, if one is due, and whether they are every root.
    fn due(&mut self, now_anyway: bool) -> Option<(Vec<PathBuf>, bool)> {
        let now = Instant::now();
        if self.pending.is_empty() && !self.everything {
            return None;
        }
        if !now_anyway && now - self.last_change < self.opts.settle {
            return None;
        }
        if self.everything {
            self.everything = false;
            self.pending.clear();
            let roots = self.roots.clone();
            for r in &roots {
                self.watch_tree(r);
            }
            return Some((roots, true));
        }
        let ready: Vec<PathBuf> = self.pending.keys().cloned().collect();
        for d in &ready {
            self.pending.remove(d);
        }
        let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
        for d in ready {
            let Some(root) = self
                .roots
                .iter()
                .filter(|r| d.starts_with(r) || r.starts_with(&d))
                .min_by_key(|r| r.as_os_str().len())
            else {
                continue;
            };
            let dir = if root.starts_with(&d) {
                root.clone()
            } else {
                walk_from(&d, root)
            };
            dirs.insert(dir);
        }
        let minimal = fewest(dirs);
        (!minimal.is_empty()).then_some((minimal, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(roots: &[&str]) -> State<'static> {
        let roots: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
        let opts = WatchOptions {
            settle: Duration::ZERO,
            ..WatchOptions::default()
        };
        State::bare(&roots, opts, None, &seekless_core::Quiet)
    }

    #[test]
    fn a_batch_walks_the_fewest_directories_within_the_roots() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("r");
        for d in ["a/b", "c", "d/emptied"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["a/b/1.jpg", "c/2.jpg", "d/3.jpg"] {
            std::fs::write(root.join(f), b"x").unwrap();
        }
        let mut s = state(&[root.to_str().unwrap()]);
        let now = Instant::now();
        // A directory under another, one gone (its nearest existing one within the root
        // stands for it), one emptied (its parent stands for it: a run given an empty
        // directory takes it for a drive not mounted), the root's parent (the root stands
        // for it), and one outside.
        for d in ["a/b", "a", "c/gone/deeper", "d/emptied"] {
            s.pending.insert(root.join(d), now);
        }
        s.pending.insert(PathBuf::from("/elsewhere"), now);
        let dirs = s.due(false).unwrap();
        assert_eq!(
            dirs,
            (
                [root.join("a"), root.join("c"), root.join("d")].to_vec(),
                false
            )
        );
        assert!(s.pending.is_empty());
        s.pending.insert(t.path().to_path_buf(), now);
        assert_eq!(s.due(false).unwrap(), (vec![root.clone()], false));
        assert_eq!(s.due(false), None, "nothing pending");
    }

    #[test]
    fn a_file_being_written_is_held_out_until_it_is_closed_and_then_read_again() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        let mut s = state(&[root.to_str().unwrap()]);
        let now = Instant::now();
        let file = root.join("slow.jpg");
        let bytes = seekless_sys::path_to_bytes(&file).into_owned();
        let told = |change| WatchEvent::Entry {
            path: file.clone(),
            is_dir: false,
            change,
        };
        s.note(told(Change::Writing), now);
        assert_eq!(s.due(false).unwrap(), (vec![root.clone()], false));
        assert!(s.still_written().contains(&bytes), "held out");
        s.note(told(Change::Closed), now);
        assert!(s.still_written().is_empty());
        assert_eq!(s.due(false).unwrap(), (vec![root.clone()], false));
        assert!(
            s.written_under(std::slice::from_ref(&root))
                .contains(&bytes),
            "read again"
        );
        assert!(s.written_under(&[root]).is_empty(), "once");
        // Written to for longer than max_wait: catalogued as it is.
        s.opts.max_wait = Duration::ZERO;
        s.note(told(Change::Writing), now);
        assert!(s.still_written().is_empty());
    }

    #[test]
    fn a_new_directory_is_walked_itself_not_its_parent() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        std::fs::create_dir_all(root.join("big/new")).unwrap();
        std::fs::write(root.join("big/new/1.jpg"), b"x").unwrap();
        std::fs::write(root.join("big/old.jpg"), b"x").unwrap();
        let mut s = state(&[root.to_str().unwrap()]);
        let now = Instant::now();
        for change in [Change::Created, Change::MovedTo(0)] {
            s.note(
                WatchEvent::Entry {
                    path: root.join("big/new"),
                    is_dir: true,
                    change,
                },
                now,
            );
            assert_eq!(s.due(false).unwrap(), (vec![root.join("big/new")], false));
        }
        // A file made: its directory.
        s.note(
            WatchEvent::Entry {
                path: root.join("big/new/1.jpg"),
                is_dir: false,
                change: Change::Created,
            },
            now,
        );
        assert_eq!(s.due(false).unwrap(), (vec![root.join("big/new")], false));
    }

    #[test]
    fn a_mount_change_that_leaves_the_roots_alone_walks_nothing() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        let mut s = state(&[root.to_str().unwrap()]);
        // Not a change here: it neither makes a batch nor restarts the settle time.
        assert!(!s.note(WatchEvent::MountsChanged, Instant::now()));
        assert_eq!(s.due(true), None);
        // One that changed them (as a mount under a root would): every root.
        s.mounts[0].1.push(root.join("was-mounted"));
        assert!(s.note(WatchEvent::MountsChanged, Instant::now()));
        assert_eq!(s.due(true).unwrap(), (vec![root], true));
    }

    #[test]
    fn nothing_is_due_before_the_changes_settle() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        let mut s = state(&[root.to_str().unwrap()]);
        s.opts.settle = Duration::from_secs(3600);
        s.last_change = Instant::now();
        s.pending.insert(root.clone(), Instant::now());
        assert_eq!(s.due(false), None);
        assert_eq!(s.due(true).unwrap(), (vec![root], false));
    }
}
