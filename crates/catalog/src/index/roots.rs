//! Phases 1 to 3 of an index run: the roots as the catalog names them and what each was
//! before the walk, the walk, the rows of roots that are missing or empty, and the rows
//! of drives no longer mounted where they were; the catalog's own files, never catalogued.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use seekless_core::{Error, Plan, PlanOptions, PlannedFile, Reporter};
use seekless_jobs::destructive::{Clearance, Witness};
use seekless_sys::Scope;

use super::IndexOptions;
use super::catalog::{self, Volumes};

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

/// Of the rows about to be removed as gone (`gone`: path, recorded device, volume, id),
/// those of a drive that is not mounted where it was: the deepest directory on each row's
/// path that still exists is empty and on another volume than the row's file was (by
/// identity, `volumes`; by device number for a row whose volume, or the directory's, is
/// not known). That directory was, most likely, the mount point of the row's filesystem;
/// now it is an empty directory of its parent's (a drive unplugged, `umount`, `umount -l`
/// during the run). Such rows are kept (their ids returned, with their volumes: offline),
/// with one error per directory, as a missing root's are; with `prune` they go, with a
/// warning. A directory emptied on the same filesystem is not this: its rows go, even when
/// the filesystem came back under another device number (a FUSE mount, a disk plugged in
/// again): its identity is the same.
pub(super) fn vanished_mounts(
    gone: &[(&[u8], u64, Option<i64>, i64)],
    volumes: &Volumes,
    prune: bool,
    reporter: &dyn Reporter,
) -> (HashSet<i64>, BTreeSet<i64>) {
    use seekless_sys::path_from_bytes;
    let mut seen: HashMap<PathBuf, Option<Place>> = HashMap::new();
    // The vanished mount points, with the ids of their rows.
    let mut vanished: HashMap<PathBuf, Vec<i64>> = HashMap::new();
    let mut offline = BTreeSet::new();
    for &(bytes, dev, volume, id) in gone {
        let path = path_from_bytes(bytes);
        let deepest = path.ancestors().skip(1).find_map(|dir| {
            let found = seen
                .entry(dir.to_path_buf())
                .or_insert_with(|| Place::look(dir, false))
                .clone();
            found.map(|f| (dir, f))
        });
        if let Some((dir, place)) = deepest
            && place.empty
            && place.other_than(dev, volume.and_then(|v| volumes.key(v)))
        {
            vanished.entry(dir.to_path_buf()).or_default().push(id);
            offline.extend(volume);
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
    (kept, offline)
}

/// What a directory on a row's path is, as far as telling a vanished mount point goes.
#[derive(Clone)]
struct Place {
    /// Its device number (`u64::MAX` when it could not be looked at).
    dev: u64,
    /// Its volume's identity, when it could be had.
    volume: Option<String>,
    /// An empty directory.
    empty: bool,
}

impl Place {
    /// `dir`: missing (`None`), or there; its volume identified if it is empty, or
    /// `identify`.
    fn look(dir: &Path, identify: bool) -> Option<Place> {
        match seekless_sys::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // There, but unknown: not taken for a vanished mount.
            Err(_) => Some(Place {
                dev: u64::MAX,
                volume: None,
                empty: false,
            }),
            Ok(m) => {
                let dev = seekless_sys::file_id(dir, None, &m).map_or(u64::MAX, |id| id.dev);
                let empty = m.is_dir() && matches!(seekless_sys::is_empty_dir(dir), Ok(true));
                // Its volume only where it decides something: an empty directory (a
                // vanished mount point?), or when asked (an absent root's place).
                let volume = (empty || identify)
                    .then(|| seekless_sys::volume_identity_of_device(dev, dir).ok())
                    .flatten()
                    .map(|v| v.key().to_owned());
                Some(Place { dev, volume, empty })
            }
        }
    }

    /// Whether this place is on another filesystem than a row of the device number `dev`
    /// and volume `volume`: by identity when both are known; a place whose volume could
    /// not be identified is taken for another than a row's known one (its rows kept, an
    /// error asking for `--prune`: never lost); a row whose volume is not known, by
    /// device number.
    fn other_than(&self, dev: u64, volume: Option<&str>) -> bool {
        match (volume, &self.volume) {
            (Some(row), Some(here)) => row != here,
            (Some(_), None) => true,
            (None, _) => self.dev != dev,
        }
    }
}

/// The volumes of rows under roots that are missing or empty directories (kept, phase 3)
/// whose place is now on another volume: the deepest directory of the root's path that
/// exists is not on the rows' volume, so it is absent (offline). Without a known volume a
/// row tells nothing.
pub(super) fn offline_under_absent_roots(
    roots: &[(PathBuf, RootState)],
    known: &HashMap<Vec<u8>, catalog::Known>,
    volumes: &Volumes,
) -> BTreeSet<i64> {
    let mut offline = BTreeSet::new();
    for (root, state) in roots {
        if *state == RootState::Present {
            continue;
        }
        let scope = Scope::of_resolved(root.clone());
        let rows: BTreeSet<i64> = known
            .iter()
            .filter(|(bytes, _)| scope.contains_bytes(bytes))
            .filter_map(|(_, k)| k.volume)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let Some(place) = root.ancestors().find_map(|d| Place::look(d, true)) else {
            continue;
        };
        for v in rows {
            if let Some(key) = volumes.key(v)
                && place.volume.as_deref().is_some_and(|here| here != key)
            {
                offline.insert(v);
            }
        }
    }
    offline
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
                Ok(m) if m.is_dir() => match seekless_sys::is_empty_dir(&root) {
                    Ok(true) => RootState::Empty,
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
        let here_key = seekless_sys::volume_identity(t.path())
            .unwrap()
            .key()
            .to_owned();
        // Volume 7 is this directory's filesystem, 8 another one.
        let volumes = Volumes {
            by_dev: HashMap::new(),
            keys: HashMap::from([(7, here_key), (8, "uuid:0123".to_owned())]),
        };
        let more = [
            bytes(mnt.join("e.gif")),
            bytes(emptied.join("f.gif")),
            bytes(emptied.join("g.gif")),
        ];
        let gone: Vec<(&[u8], u64, Option<i64>, i64)> = vec![
            // Another device under an empty directory: a drive not mounted.
            (&paths[0], elsewhere, None, 1),
            (&paths[1], elsewhere, None, 2),
            // The same device: files deleted, the directory emptied.
            (&paths[2], here, None, 3),
            // Another device, but the directory is not empty: deleted.
            (&paths[3], elsewhere, None, 4),
            // Another volume under an empty directory, on the same device number as the
            // directory (numbers are reused): a drive not mounted, offline.
            (&more[0], here, Some(8), 5),
            // The directory's own volume under another device number (mounted again):
            // files deleted, the directory emptied.
            (&more[1], elsewhere, Some(7), 6),
            // A volume the directory's is not known for: by device number.
            (&more[2], here, Some(9), 7),
        ];
        let said = Said::default();
        let (kept, offline) = vanished_mounts(&gone, &volumes, false, &said);
        assert_eq!(kept, HashSet::from([1, 2, 5]));
        assert_eq!(offline, BTreeSet::from([8]));
        let said = seekless_sys::sync::into_inner(said.0);
        assert_eq!(said.len(), 1, "one error per directory: {said:?}");
        assert!(
            said[0].contains("mnt") && said[0].contains("with 3 rows"),
            "{said:?}"
        );

        let said = Said::default();
        assert!(
            vanished_mounts(&gone, &volumes, true, &said).0.is_empty(),
            "--prune"
        );
        let said = seekless_sys::sync::into_inner(said.0);
        assert!(
            said[0].starts_with("warning") && said[0].contains("--prune"),
            "{said:?}"
        );
    }

    #[test]
    fn a_place_is_another_filesystem_by_identity_and_when_unknown_taken_for_another() {
        let place = |volume: Option<&str>| Place {
            dev: 7,
            volume: volume.map(str::to_owned),
            empty: true,
        };
        // Both known: the identity decides, whatever the device numbers.
        assert!(!place(Some("uuid:a")).other_than(8, Some("uuid:a")));
        assert!(place(Some("uuid:a")).other_than(7, Some("uuid:b")));
        // The place's unknown, the row's known: another (its rows kept).
        assert!(place(None).other_than(7, Some("uuid:a")));
        // The row's unknown: by device number.
        assert!(!place(Some("uuid:a")).other_than(7, None));
        assert!(place(None).other_than(8, None));
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
