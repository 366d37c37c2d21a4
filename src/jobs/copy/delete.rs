//! `--delete`: what may be removed from the destination, decided conservatively.
//!
//! The source is the authority on what should exist only where it was seen whole. A
//! directory that could not be listed, a file that could not be opened, a mount point left
//! out by `-x`: each exists in the source, although the plan does not have it. So, as rsync
//! does ("IO error encountered -- skipping file deletion"), nothing is deleted after any
//! error; with `ignore_errors`, deletion goes on everywhere except at and under each path
//! that failed or was left out.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;
use crate::os;
use crate::report::Reporter;
use crate::sync::lock;

/// Passes everything on to the caller's reporter and remembers what the copy could not see
/// whole: how many errors, and the source paths that failed or were skipped.
pub(super) struct Watch<'a> {
    inner: &'a dyn Reporter,
    errors: AtomicU64,
    unseen: Mutex<Vec<PathBuf>>,
}

impl<'a> Watch<'a> {
    pub(super) fn new(inner: &'a dyn Reporter) -> Self {
        Watch {
            inner,
            errors: AtomicU64::new(0),
            unseen: Mutex::new(Vec::new()),
        }
    }

    /// Errors reported so far, anywhere (walk, read, write).
    pub(super) fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The paths that failed or were left out.
    pub(super) fn unseen(&self) -> Vec<PathBuf> {
        lock(&self.unseen).clone()
    }
}

impl Reporter for Watch<'_> {
    fn error(&self, err: &Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        lock(&self.unseen).push(err.path().to_path_buf());
        self.inner.error(err);
    }

    fn skipped(&self, path: &Path, why: &str) {
        // Left out on purpose (another filesystem, walked under another name): it exists,
        // so its copy is not "extra".
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

/// Destination paths that deletion must not touch: each, everything under it, and (so
/// the walk down to them goes on) each of their ancestors.
#[derive(Default)]
pub(super) struct Protected {
    exact: HashSet<PathBuf>,
    ancestors: HashSet<PathBuf>,
}

impl Protected {
    pub(super) fn new(paths: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut p = Protected::default();
        for path in paths {
            for a in path.ancestors().skip(1) {
                if !p.ancestors.insert(a.to_path_buf()) {
                    break;
                }
            }
            p.exact.insert(path);
        }
        p
    }

    /// Whether `path` itself or anything under it is protected (so it must be kept).
    fn keeps(&self, path: &Path) -> bool {
        self.exact.contains(path) || self.ancestors.contains(path)
    }

    /// Whether everything under `path` must be left as it is.
    fn covers(&self, path: &Path) -> bool {
        self.exact.contains(path)
    }
}

/// Removes what is under `dest` but neither in `wanted` nor protected. Returns how many
/// entries were removed (a directory with its contents counts once).
pub(super) fn delete_extra(
    dest: &Path,
    wanted: &HashSet<PathBuf>,
    protected: &Protected,
    reporter: &dyn Reporter,
    failed: &mut u64,
) -> u64 {
    if protected.covers(dest) {
        return 0;
    }
    let mut removed = 0;
    let mut stack = vec![dest.to_path_buf()];
    while let Some(dir) = stack.pop() {
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
            if protected.covers(&path) {
                continue;
            }
            if wanted.contains(&path) || protected.keeps(&path) {
                if is_dir {
                    stack.push(path);
                }
                continue;
            }
            let gone = if is_dir {
                os::with_path(&path, |p| fs::remove_dir_all(p))
            } else {
                os::with_path(&path, |p| fs::remove_file(p))
            };
            match gone {
                Ok(()) => removed += 1,
                Err(e) => {
                    *failed += 1;
                    reporter.error(&Error::io(&path, e));
                }
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_path_keeps_itself_its_contents_and_its_ancestors() {
        let p = Protected::new([PathBuf::from("/d/a/b")]);
        assert!(p.covers(Path::new("/d/a/b")));
        assert!(p.keeps(Path::new("/d/a")) && p.keeps(Path::new("/d")));
        assert!(!p.covers(Path::new("/d/a")));
        assert!(!p.keeps(Path::new("/d/c")) && !p.keeps(Path::new("/d/a/c")));
    }

    #[test]
    fn deletion_spares_what_is_wanted_or_protected() {
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
        let protected = Protected::new([root.join("prot")]);
        let mut failed = 0;
        let n = delete_extra(root, &wanted, &protected, &crate::Quiet, &mut failed);
        assert_eq!((n, failed), (4, 0));
        assert!(root.join("keep/f").exists() && root.join("prot/inner/f").exists());
        for gone in ["gone", "x", "wanted_dir/extra", "wanted_dir/extra_dir"] {
            assert!(!root.join(gone).exists(), "{gone}");
        }
        // A protected root: nothing at all.
        fs::write(root.join("y"), b"1").unwrap();
        let all = Protected::new([root.to_path_buf()]);
        assert_eq!(
            delete_extra(root, &HashSet::new(), &all, &crate::Quiet, &mut failed),
            0
        );
        assert!(root.join("y").exists());
    }
}
