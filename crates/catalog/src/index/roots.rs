//! Phases 1 to 3 of an index run: the roots as the catalog names them and what each was
//! before the walk, the walk, the rows of roots that are missing or empty, and the rows
//! of drives no longer mounted where they were; the catalog's own files, never catalogued.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use seekless_core::{Error, Plan, PlanOptions, PlannedFile, Reporter};
use seekless_jobs::destructive::{Clearance, Witness};
use seekless_sys::Scope;

use super::IndexOptions;
use super::catalog;

/// What a root was before the walk, as far as forgetting its rows goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RootState {
    /// There, with something in it (or a file).
    Present,
    /// Does not exist (a drive not mounted, a directory renamed away): not walked.
    Missing,
    /// An empty directory (the mount point of a drive not mounted, most often).
    Empty,
}

/// Of the rows about to be removed as gone (`gone`: path, recorded device, id), those of a
/// drive that is not mounted where it was: the deepest directory on each row's path that
/// still exists is empty and on another device than the row's file was. That directory
/// was, most likely, the mount point of the row's filesystem; now it is an empty
/// directory of its parent's (a drive unplugged, `umount`, `umount -l` during the run).
/// Such rows are kept (their ids returned), with one error per directory, as a missing
/// root's are; with `prune` they go, with a warning. A directory emptied on the same
/// filesystem is not this: its rows go. (A file system that got another device number
/// since the last run, and whose directory was emptied meanwhile, is taken for a vanished
/// mount: the error then asks for `--prune`, never the other way round.)
pub(super) fn vanished_mounts(
    gone: &[(&[u8], u64, i64)],
    prune: bool,
    reporter: &dyn Reporter,
) -> HashSet<i64> {
    use seekless_sys::path_from_bytes;
    /// What a directory on a row's path is: missing, or there (its device, whether it is
    /// an empty directory).
    fn look(dir: &Path) -> Option<(u64, bool)> {
        match seekless_sys::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // There, but unknown: not taken for a vanished mount.
            Err(_) => Some((u64::MAX, false)),
            Ok(m) => {
                let dev = seekless_sys::file_id(dir, None, &m).map_or(u64::MAX, |id| id.dev);
                let empty = m.is_dir()
                    && matches!(seekless_sys::read_dir(dir).map(|mut d| d.next()), Ok(None));
                Some((dev, empty))
            }
        }
    }
    let mut seen: HashMap<PathBuf, Option<(u64, bool)>> = HashMap::new();
    // The vanished mount points, with the ids of their rows.
    let mut vanished: HashMap<PathBuf, Vec<i64>> = HashMap::new();
    for &(bytes, dev, id) in gone {
        let path = path_from_bytes(bytes);
        let deepest = path.ancestors().skip(1).find_map(|dir| {
            let found = *seen.entry(dir.to_path_buf()).or_insert_with(|| look(dir));
            found.map(|f| (dir, f))
        });
        if let Some((dir, (dir_dev, true))) = deepest
            && dir_dev != dev
        {
            vanished.entry(dir.to_path_buf()).or_default().push(id);
        }
    }
    let mut dirs: Vec<_> = vanished.into_iter().collect();
    dirs.sort();
    let mut kept = HashSet::new();
    for (dir, ids) in dirs {
        let rows = ids.len();
        let rows_word = if rows == 1 { "row" } else { "rows" };
        let what = format!(
            "an empty directory now, was the mount point of another filesystem with {rows} \
             {rows_word} in the catalog"
        );
        if prune {
            reporter.warning(Some(&dir), &format!("{what}: removed (--prune)"));
        } else {
            let why = format!("{what}: kept (is the drive mounted? --prune removes them)");
            reporter.error(&Error::io(&dir, std::io::Error::other(why)));
            kept.extend(ids);
        }
    }
    kept
}

/// A root as the catalog names it: absolute, symbolic links and `..` resolved once for
/// the root (never per file below it). A directory is made canonical whole; a file (or a
/// path that does not exist) keeps its own name, joined to its directory made canonical
/// (looked up once per directory in `dirs`, for long `--files-from` lists).
fn catalog_root(p: &Path, dirs: &mut HashMap<PathBuf, PathBuf>) -> PathBuf {
    if seekless_sys::metadata(p).is_ok_and(|m| m.is_dir())
        && let Ok(c) = std::fs::canonicalize(p)
    {
        return c;
    }
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
        return abs;
    };
    if let Some(dir) = dirs.get(parent) {
        return dir.join(name);
    }
    let dir = catalog_root(parent, dirs);
    dirs.insert(parent.to_path_buf(), dir.clone());
    dir.join(name)
}

/// Phase 1: the roots as the catalog names them, and what each was before the walk.
pub(super) fn roots_before_walk(inputs: &[PathBuf]) -> Vec<(PathBuf, RootState)> {
    let mut dirs = HashMap::new();
    inputs
        .iter()
        .map(|p| {
            let root = catalog_root(p, &mut dirs);
            let state = match seekless_sys::metadata(&root) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => RootState::Missing,
                Ok(m) if m.is_dir() => match seekless_sys::read_dir(&root).map(|mut d| d.next()) {
                    Ok(None) => RootState::Empty,
                    _ => RootState::Present,
                },
                _ => RootState::Present,
            };
            (root, state)
        })
        .collect()
}

/// What the walk gave an index run.
pub(super) struct Walked {
    pub(super) plan: Plan,
    /// What may be forgotten: everything outside what the walk could not see whole.
    pub(super) clearance: Clearance,
    /// Regular files the walk found but could not open, their metadata and why.
    pub(super) unopened: Vec<(PathBuf, std::fs::Metadata, String)>,
}

/// Phase 2: walks and plans the roots that exist, noting what could not be seen whole.
pub(super) fn walk(
    roots: &[(PathBuf, RootState)],
    plan_opts: &PlanOptions,
    reporter: &dyn Reporter,
) -> Walked {
    let walked: Vec<PathBuf> = roots
        .iter()
        .filter(|(_, s)| *s != RootState::Missing)
        .map(|(r, _)| r.clone())
        .collect();
    // Files the walk found but could not open still get a row, with their error: keep
    // the regular files among the failed paths that the filter would have taken.
    let unopened = std::sync::Mutex::new(Vec::new());
    let filter = &plan_opts.walk.filter;
    // The paths the walk could not see whole: errors (an unreadable directory, one that
    // vanished, a file that could not be opened) and skips (another filesystem under `-x`,
    // a symbolic link, a directory already walked under another name). Rows at or under
    // them are never removed.
    let recorder = Witness::with_on_error(reporter, |err: &Error| {
        let path = err.path();
        let Ok(meta) = seekless_sys::symlink_metadata(path) else {
            return;
        };
        let name = path.file_name().unwrap_or_default();
        if meta.is_file() && (filter.is_empty() || filter.keeps(path, name)) {
            let why = match err.io_error() {
                Some(e) => seekless_sys::describe_io(e),
                None => err.kind().to_string(),
            };
            seekless_sys::sync::lock(&unopened).push((path.to_path_buf(), meta, why));
        }
    });
    let plan = recorder.walk(&walked, plan_opts);
    let clearance = recorder
        .clearance_outside_unseen()
        .expect("a witness that walked gives a clearance outside what it could not see");
    Walked {
        plan,
        clearance,
        unopened: seekless_sys::sync::into_inner(unopened),
    }
}

/// Phase 3: a root that is not there, or empty, where the catalog has rows: most likely a
/// drive not mounted. Its rows stay (an error; the clearance shields them) unless `prune`
/// says they may go.
pub(super) fn absent_roots(
    roots: &[(PathBuf, RootState)],
    known: &HashMap<Vec<u8>, catalog::Known>,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    mut clearance: Clearance,
) -> Clearance {
    for (root, state) in roots {
        if *state == RootState::Present {
            continue;
        }
        let scope = Scope::of_resolved(root.clone());
        let rows = known.keys().filter(|k| scope.contains_bytes(k)).count();
        let rows_word = if rows == 1 { "row" } else { "rows" };
        let what = match state {
            RootState::Missing => "does not exist",
            _ => "is an empty directory",
        };
        if rows == 0 {
            if *state == RootState::Missing {
                let e = std::io::Error::from(std::io::ErrorKind::NotFound);
                reporter.error(&Error::io(root, e));
            }
        } else if opts.prune {
            reporter.warning(
                Some(root),
                &format!("{what}; its {rows} {rows_word} in the catalog are removed (--prune)"),
            );
        } else {
            let why = format!(
                "{what}, but the catalog has {rows} {rows_word} under it: kept (is the drive \
                 mounted? --prune removes them)"
            );
            reporter.error(&Error::io(root, std::io::Error::other(why)));
            clearance = clearance.shielding(root.clone());
        }
    }
    clearance
}

/// The catalog's own files (the database and SQLite's companions), never catalogued.
pub(super) fn own_files(db: &Path) -> Vec<PathBuf> {
    let mut own = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal", "-seekless-lock"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        own.push(PathBuf::from(p));
    }
    own.iter()
        .filter_map(|p| {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
        })
        .collect()
}

pub(super) fn is_own(own: &[PathBuf], f: &PlannedFile) -> bool {
    let Some(name) = f.entry.path.file_name() else {
        return false;
    };
    if !own.iter().any(|o| o.file_name() == Some(name)) {
        return false;
    }
    let dir = f
        .entry
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::canonicalize(dir).is_ok_and(|d| own.contains(&d.join(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use seekless_sys::path_to_bytes;

    #[test]
    fn rows_under_an_empty_directory_of_another_device_are_kept_as_a_vanished_mount() {
        let t = tempfile::tempdir().unwrap();
        let (mnt, emptied, full) = (
            t.path().join("mnt"),
            t.path().join("emptied"),
            t.path().join("full"),
        );
        for d in [&mnt, &emptied, &full] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(full.join("other.gif"), b"x").unwrap();
        let meta = std::fs::metadata(t.path()).unwrap();
        let here = seekless_sys::file_id(t.path(), None, &meta).unwrap().dev;
        let elsewhere = here.wrapping_add(1);
        let bytes = |p: PathBuf| path_to_bytes(&p).into_owned();
        let paths = [
            bytes(mnt.join("a.gif")),
            bytes(mnt.join("deep/er/b.gif")),
            bytes(emptied.join("c.gif")),
            bytes(full.join("d.gif")),
        ];
        let gone: Vec<(&[u8], u64, i64)> = vec![
            // Another device under an empty directory: a drive not mounted.
            (&paths[0], elsewhere, 1),
            (&paths[1], elsewhere, 2),
            // The same device: files deleted, the directory emptied.
            (&paths[2], here, 3),
            // Another device, but the directory is not empty: deleted.
            (&paths[3], elsewhere, 4),
        ];
        let said = Said::default();
        let kept = vanished_mounts(&gone, false, &said);
        assert_eq!(kept, HashSet::from([1, 2]));
        let said = seekless_sys::sync::into_inner(said.0);
        assert_eq!(said.len(), 1, "one error per directory: {said:?}");
        assert!(
            said[0].contains("mnt") && said[0].contains("with 2 rows"),
            "{said:?}"
        );

        let said = Said::default();
        assert!(vanished_mounts(&gone, true, &said).is_empty(), "--prune");
        let said = seekless_sys::sync::into_inner(said.0);
        assert!(
            said[0].starts_with("warning") && said[0].contains("--prune"),
            "{said:?}"
        );
    }

    /// Collects what a run reports.
    #[derive(Default)]
    struct Said(std::sync::Mutex<Vec<String>>);

    impl Reporter for Said {
        fn error(&self, err: &Error) {
            seekless_sys::sync::lock(&self.0).push(format!("error {err}"));
        }
        fn warning(&self, path: Option<&Path>, what: &str) {
            seekless_sys::sync::lock(&self.0).push(format!("warning {path:?}: {what}"));
        }
    }
}
