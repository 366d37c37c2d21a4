//! Catching up without a walk (docs/index.md, "Catching up without a walk"): a root that
//! an earlier run saw whole, on btrfs, is not walked again; btrfs is asked which of its
//! directories changed since the generation that run recorded, and only those are walked
//! (each whole, as a `--watch` batch walks its directories). Every row removed is still
//! removed by the run's own rules, over what it walked.
//!
//! What decides is conservative: the root is walked whole, as before, unless all of these
//! hold. The catalog has a record for the root, written by a run of the same settings
//! that saw everything under it ([`CatchUp::judge`]: nothing failed or left out, no file
//! on another filesystem); the root is a directory on btrfs whose volume is the record's;
//! no filesystem is mounted under it and no subvolume nested in it (their changes are not
//! in its tree); btrfs answers (its tree search needs root). The directories of rows
//! whose read failed are walked too (such rows are retried every run). `--walk`,
//! `--rehash`, `--prune` and `--follow` walk every root whole.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use seekless_core::{Plan, PlanOptions};
use seekless_jobs::destructive::Clearance;
use seekless_sys::{path_from_bytes, path_to_bytes};

use super::IndexOptions;
use super::catalog::{self, CatchUpRecord};
use super::roots::{RootState, roots_before_walk};

/// A root on btrfs whose state this run may record for the next.
#[derive(Debug)]
struct Root {
    path: PathBuf,
    /// Its volume's identity key and its device number.
    volume: String,
    dev: u64,
    /// The subvolume's generation, read before the walk: what the next run asks from.
    generation: u64,
    /// The directories walked instead of the root (caught up); `None`: the root, whole.
    narrowed: Option<Vec<PathBuf>>,
}

/// How a run treats its roots: which it walks whole, which it catches up, and what it
/// may record.
#[derive(Debug)]
pub(super) struct CatchUp {
    roots: Vec<Root>,
    settings: String,
    /// What the run walks: roots, and the directories of roots caught up.
    pub(super) inputs: Vec<PathBuf>,
    /// Files (path bytes) btrfs says were written or changed since: read again even when
    /// their size and modification time are their rows' (an edit in place that put the
    /// time back).
    pub(super) reread: HashSet<Vec<u8>>,
    /// The run's roots, and the roots the catalog has records for: a record at, under
    /// or above a root of this run that this run does not write anew is dropped.
    covered: Vec<PathBuf>,
    recorded: Vec<Vec<u8>>,
}

impl CatchUp {
    /// Walk `inputs` as they are and record nothing (a `--watch` batch over some
    /// directories).
    pub(super) fn none(inputs: &[PathBuf]) -> CatchUp {
        CatchUp {
            roots: Vec::new(),
            settings: String::new(),
            inputs: inputs.to_vec(),
            reread: HashSet::new(),
            covered: Vec::new(),
            recorded: Vec::new(),
        }
    }

    /// Decides, before the walk, how each of `inputs` is walked (see the module's
    /// documentation), reading the records of the catalog at `db`.
    pub(super) fn prepare(
        inputs: &[PathBuf],
        plan_opts: &PlanOptions,
        opts: &IndexOptions,
    ) -> CatchUp {
        let settings = settings(plan_opts, opts);
        // With --follow the walk goes where links point, outside the root (or its
        // filesystem): btrfs would not say what changed there.
        let may_catch_up = !opts.full_walk && !opts.rehash && !opts.prune && !plan_opts.walk.follow;
        let stored = stored(&opts.db);
        let mut me = CatchUp {
            roots: Vec::new(),
            settings,
            inputs: Vec::new(),
            reread: HashSet::new(),
            covered: Vec::new(),
            recorded: stored.records.keys().cloned().collect(),
        };
        for (root, state) in roots_before_walk(inputs) {
            me.covered.push(root.clone());
            let Some(mut on_btrfs) = (state == RootState::Present)
                .then(|| on_btrfs(&root))
                .flatten()
            else {
                me.inputs.push(root);
                continue;
            };
            let record = stored
                .records
                .get(path_to_bytes(&root).as_ref())
                .filter(|r| r.volume == on_btrfs.volume && r.settings == me.settings);
            if may_catch_up
                && let Some(record) = record
                && let Some(Changed {
                    generation,
                    dirs,
                    files,
                }) = changed(&root, record.generation, &stored.unread)
            {
                on_btrfs.generation = generation;
                me.reread.extend(files);
                me.inputs.extend(dirs.iter().cloned());
                on_btrfs.narrowed = Some(dirs);
            } else {
                me.inputs.push(root);
                // Walked whole: recorded only if btrfs gives its generation now (it is
                // btrfs, and this run may search its tree).
                let Ok(generation) = seekless_sys::btrfs_generation(&on_btrfs.path) else {
                    continue;
                };
                on_btrfs.generation = generation;
            }
            me.roots.push(on_btrfs);
        }
        me
    }

    /// Roots caught up, and the directories walked for them.
    pub(super) fn caught_up(&self) -> (u64, u64) {
        self.roots
            .iter()
            .filter_map(|r| r.narrowed.as_ref())
            .fold((0, 0), |(roots, dirs), d| {
                (roots + 1, dirs + d.len() as u64)
            })
    }

    /// The records this run drops before it changes any row: every record at, under or
    /// above a root of this run. Its rows may change in ways a record made before cannot
    /// speak for (a run of other settings, a root pruned, one not seen whole, a run
    /// killed half-way); a run that sees the root whole writes a new one as it ends
    /// ([`judge`](Self::judge)), and any other leaves the next run there walking it whole.
    /// A `--watch` batch ([`none`](Self::none)) drops nothing: it applies changes with the
    /// run's settings, which a catch-up from the recorded generation finds again.
    pub(super) fn stale(&self) -> Vec<Vec<u8>> {
        self.recorded
            .iter()
            .filter(|r| {
                let r = path_from_bytes(r);
                self.covered
                    .iter()
                    .any(|c| r.starts_with(c) || c.starts_with(&r))
            })
            .cloned()
            .collect()
    }

    /// After the walk: the records to write as the run ends, one per root on btrfs that
    /// this run saw whole (everything it walked for the root seen, nothing failed or left
    /// out, every file found on the root's own filesystem).
    pub(super) fn judge(
        &self,
        plan: &Plan,
        clearance: &Clearance,
        unopened: &[(PathBuf, std::fs::Metadata, String)],
    ) -> Vec<CatchUpRecord> {
        self.roots
            .iter()
            .filter(|root| {
                let walked = root
                    .narrowed
                    .clone()
                    .unwrap_or_else(|| vec![root.path.clone()]);
                let under = |p: &Path| walked.iter().any(|d| p.starts_with(d));
                walked.iter().all(|d| clearance.sees_whole(d))
                    && !unopened.iter().any(|(p, ..)| under(p))
                    && plan
                        .files()
                        .iter()
                        .filter(|f| under(&f.entry.path))
                        .all(|f| f.entry.id.dev == root.dev)
            })
            .map(|root| CatchUpRecord {
                root: path_to_bytes(&root.path).into_owned(),
                volume: root.volume.clone(),
                generation: root.generation,
                settings: self.settings.clone(),
            })
            .collect()
    }
}

/// What decides which files have rows and what they hold: a record made under other
/// settings is not used. seekless's version is part of it: a new version walks once.
fn settings(plan_opts: &PlanOptions, opts: &IndexOptions) -> String {
    let walk = &plan_opts.walk;
    format!(
        "seekless {}; {}; follow {}; one-file-system {}; others {}; thumbs {:?}",
        env!("CARGO_PKG_VERSION"),
        walk.filter.describe(),
        walk.follow,
        walk.one_file_system,
        walk.others,
        opts.thumbs.as_ref().map(|t| (t.size, t.max_megapixels)),
    )
}

/// A root that may be caught up or recorded, as far as can be told without asking btrfs:
/// a directory with nothing mounted under it, on a volume that is known. Its generation
/// is filled in once btrfs is asked (a catch-up's search reads it; a root walked whole asks
/// for it alone), so that a root caught up is committed and searched once, not twice.
fn on_btrfs(root: &Path) -> Option<Root> {
    let meta = seekless_sys::metadata(root).ok().filter(|m| m.is_dir())?;
    if !seekless_sys::mount_points_under(root).ok()?.is_empty() {
        return None;
    }
    let volume = seekless_sys::volume_identity(root).ok()?;
    let dev = seekless_sys::file_id(root, None, &meta).ok()?.dev;
    Some(Root {
        path: root.to_path_buf(),
        volume: volume.key().to_string(),
        dev,
        generation: 0,
        narrowed: None,
    })
}

/// What changed under a root since its record.
struct Changed {
    /// The generation to record.
    generation: u64,
    /// The directories to walk, fewest (none under another).
    dirs: Vec<PathBuf>,
    /// The files written or changed (path bytes).
    files: Vec<Vec<u8>>,
}

/// What changed under `root` since `since`: `None` (walk the root whole) when btrfs cannot
/// say, or a subvolume is nested under the root.
fn changed(root: &Path, since: u64, unread: &[PathBuf]) -> Option<Changed> {
    let changes = seekless_sys::btrfs_changes_since(root, since).ok()?;
    if changes.subvolumes.iter().any(|s| s.starts_with(root)) {
        return None;
    }
    let dirs = changes
        .dirs
        .iter()
        .chain(unread)
        .filter(|d| d.starts_with(root))
        .map(|d| walk_from(d, root))
        .collect::<BTreeSet<_>>();
    let files = changes
        .files
        .iter()
        .filter(|f| f.starts_with(root))
        .map(|f| path_to_bytes(f).into_owned())
        .collect();
    Some(Changed {
        generation: changes.generation,
        dirs: fewest(dirs),
        files,
    })
}

/// Where to walk for a change in `dir` under `root`: `dir`, or, when it is gone or empty,
/// the nearest directory above it that is neither (a run given an empty directory takes
/// it for a drive not mounted and keeps its rows), at most `root`.
pub(super) fn walk_from(dir: &Path, root: &Path) -> PathBuf {
    let mut dir = dir.to_path_buf();
    while dir != root && dir.starts_with(root) {
        let there = seekless_sys::is_empty_dir(&dir).is_ok_and(|empty| !empty);
        if there {
            break;
        }
        match dir.parent() {
            Some(p) => dir = p.to_path_buf(),
            None => break,
        }
    }
    dir
}

/// `dirs` without those under another of them.
pub(super) fn fewest(dirs: BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    // Sorted by component: everything under a directory comes right after it, so the
    // last one kept is the only one that can hold the next.
    for d in dirs {
        if !out.last().is_some_and(|o| d.starts_with(o)) {
            out.push(d);
        }
    }
    out
}

/// What the catalog recorded for catching up.
#[derive(Default)]
struct Stored {
    records: HashMap<Vec<u8>, CatchUpRecord>,
    /// The directories of rows whose read failed (retried every run).
    unread: Vec<PathBuf>,
}

/// The catalog's records, read-only; none when it has none, cannot be read, or is new.
fn stored(db: &Path) -> Stored {
    let Ok((records, unread)) = catalog::catchup_records(db) else {
        return Stored::default();
    };
    let unread: BTreeSet<PathBuf> = unread
        .iter()
        .filter_map(|bytes| path_from_bytes(bytes).parent().map(Path::to_path_buf))
        .collect();
    Stored {
        records: records.into_iter().map(|r| (r.root.clone(), r)).collect(),
        unread: unread.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fewest_directories_cover_the_rest() {
        let dirs: BTreeSet<PathBuf> = ["/r/a", "/r/a/b", "/r/ab", "/r/c/d", "/r/c/d/e/f"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(
            fewest(dirs),
            ["/r/a", "/r/ab", "/r/c/d"].map(PathBuf::from).to_vec()
        );
    }

    #[test]
    fn a_gone_or_empty_directory_is_walked_from_above_within_the_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("r");
        std::fs::create_dir_all(root.join("full/empty")).unwrap();
        std::fs::write(root.join("full/f.jpg"), b"x").unwrap();
        std::fs::create_dir_all(root.join("bare/emptied")).unwrap();
        assert_eq!(walk_from(&root.join("full"), &root), root.join("full"));
        assert_eq!(
            walk_from(&root.join("full/empty"), &root),
            root.join("full")
        );
        assert_eq!(
            walk_from(&root.join("full/gone/deeper"), &root),
            root.join("full")
        );
        // An emptied directory: the one holding it.
        assert_eq!(
            walk_from(&root.join("bare/emptied"), &root),
            root.join("bare")
        );
        // Nothing there up to the root: the root.
        assert_eq!(walk_from(&root.join("gone/too"), &root), root);
        assert_eq!(walk_from(&root, &root), root);
    }

    /// A walk of `dir` as a run makes it, and a catch-up that would record `dir` as a root
    /// on device `dev`.
    #[cfg(unix)]
    fn walked_and_judged(dir: &Path, dev: u64) -> Vec<CatchUpRecord> {
        let roots = vec![(dir.to_path_buf(), RootState::Present)];
        let walked =
            super::super::roots::walk(&roots, &PlanOptions::default(), &seekless_core::Quiet);
        let catchup = CatchUp {
            roots: vec![Root {
                path: dir.to_path_buf(),
                volume: "uuid:test".into(),
                dev,
                generation: 7,
                narrowed: None,
            }],
            settings: "s".into(),
            inputs: vec![dir.to_path_buf()],
            reread: HashSet::new(),
            covered: vec![dir.to_path_buf()],
            recorded: Vec::new(),
        };
        catchup.judge(&walked.plan, &walked.clearance, &walked.unopened)
    }

    #[test]
    #[cfg(unix)]
    fn a_root_is_recorded_only_when_seen_whole_on_its_own_filesystem() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::write(root.join("a/1.gif"), b"GIF89a").unwrap();
        let dev = std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(&root).unwrap());
        let whole = walked_and_judged(&root, dev);
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].generation, 7);
        // A file found on another filesystem than the root's (a mount, a subvolume).
        assert!(walked_and_judged(&root, dev + 1).is_empty());
        // Something the walk left out (a symbolic link, not followed).
        std::os::unix::fs::symlink("/", root.join("a/link")).unwrap();
        assert!(walked_and_judged(&root, dev).is_empty());
    }

    #[test]
    fn a_record_at_under_or_above_a_root_of_the_run_is_stale() {
        let mut c = CatchUp::none(&[]);
        c.covered = vec![PathBuf::from("/p/lib/a")];
        c.recorded = ["/p/lib", "/p/lib/a", "/p/lib/a/b", "/p/lib/ab", "/p/other"]
            .iter()
            .map(|p| p.as_bytes().to_vec())
            .collect();
        let stale: Vec<String> = c
            .stale()
            .iter()
            .map(|b| String::from_utf8(b.clone()).unwrap())
            .collect();
        assert_eq!(stale, ["/p/lib", "/p/lib/a", "/p/lib/a/b"]);
        // A watch batch drops nothing.
        assert!(CatchUp::none(&[PathBuf::from("/p/lib")]).stale().is_empty());
    }

    #[test]
    fn settings_tell_a_run_that_asks_for_other_files_or_thumbnails() {
        let opts = IndexOptions::new("/tmp/c.db");
        let plain = PlanOptions::default();
        let mut jpeg = PlanOptions::default();
        jpeg.walk.filter = seekless_core::Filter::new().extensions(["jpg"]);
        let mut thumbs = opts.clone();
        thumbs.thumbs = Some(super::super::ThumbOptions::default());
        let base = settings(&plain, &opts);
        assert_eq!(base, settings(&PlanOptions::default(), &opts));
        assert_ne!(base, settings(&jpeg, &opts));
        assert_ne!(base, settings(&plain, &thumbs));
    }
}
