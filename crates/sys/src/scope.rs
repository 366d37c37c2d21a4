//! Whether a path is at or under a folder: the one answer `copy` (a directory copied into
//! itself), `index` (which rows a run's roots cover), `dupes` (`--protect`, `--prefer`) and
//! the destructive owner's clearances give.
//!
//! A scope is a folder resolved when it is made ([`Scope::resolve`]: absolute, every link
//! followed, as the kernel will see it) or one already resolved, as a catalog records its
//! roots ([`Scope::of_resolved`]). Containment is by whole components: `/a/bc` is not under
//! `/a/b`, and a trailing separator changes nothing. (A clearance of the destructive owner
//! holds many scopes at once and answers by looking each ancestor of a path up in a set:
//! the same rule, in time of the path's depth rather than of the number of scopes.)

use std::io;
use std::path::{Path, PathBuf};

/// A folder, resolved, that tells which paths are at or under it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scope {
    root: PathBuf,
}

impl Scope {
    /// The folder `dir` as the system resolves it (`canonicalize`): a path through a link
    /// is the folder the link leads to. An error if it cannot be resolved (it does not
    /// exist, a folder on the way cannot be searched).
    pub fn resolve(dir: &Path) -> io::Result<Scope> {
        Ok(Scope {
            root: std::fs::canonicalize(dir)?,
        })
    }

    /// A folder given already resolved (absolute, without links), as a catalog records
    /// the roots it indexed: nothing is looked up.
    pub fn of_resolved(root: impl Into<PathBuf>) -> Scope {
        Scope { root: root.into() }
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `path` (already resolved, as the scope is) is the folder or under it.
    pub fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    /// [`contains`](Self::contains) for a path's bytes (as the catalog stores them; see
    /// [`crate::path_to_bytes`]), without a copy on Unix.
    pub fn contains_bytes(&self, path: &[u8]) -> bool {
        Scope::bytes_within(&self.root, path)
    }

    /// Whether the path whose bytes are `path` is `root` (already resolved) or under it:
    /// [`contains_bytes`](Self::contains_bytes) for a caller that keeps its folders as
    /// paths and compares many paths with them (nothing is copied on Unix).
    pub fn bytes_within(root: &Path, path: &[u8]) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            Path::new(std::ffi::OsStr::from_bytes(path)).starts_with(root)
        }
        #[cfg(not(unix))]
        {
            crate::path_from_bytes(path).starts_with(root)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_is_by_whole_components() {
        let s = Scope::of_resolved("/a/b");
        for inside in ["/a/b", "/a/b/", "/a/b/c.jpg", "/a/b/c/d"] {
            assert!(s.contains(Path::new(inside)), "{inside}");
            assert!(s.contains_bytes(inside.as_bytes()), "{inside}");
        }
        for outside in ["/a/bc/d.jpg", "/a", "/a/c", "a/b/c", "/"] {
            assert!(!s.contains(Path::new(outside)), "{outside}");
            assert!(!s.contains_bytes(outside.as_bytes()), "{outside}");
        }
        assert!(Scope::of_resolved("/a/b/").contains(Path::new("/a/b/c")));
        assert!(Scope::of_resolved("/").contains(Path::new("/x/y")));
        #[cfg(unix)]
        assert!(s.contains_bytes(b"/a/b/\xff.jpg"));
        // Windows paths separate with `\` too; elsewhere it is part of a name.
        let c = Scope::of_resolved("C:\\p");
        assert_eq!(c.contains_bytes(b"C:\\p\\a.jpg"), cfg!(windows));
        assert_eq!(
            Scope::of_resolved("C:\\").contains_bytes(b"C:\\p\\a.jpg"),
            cfg!(windows)
        );
        assert!(!c.contains_bytes(b"C:\\pq\\a.jpg"));
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_named_through_a_link_is_the_folder_it_leads_to() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
        let s = Scope::resolve(&t.path().join("link")).unwrap();
        let real = std::fs::canonicalize(&real).unwrap();
        assert_eq!(s.root(), real);
        assert!(s.contains(&real.join("photo.jpg")));
        assert!(Scope::resolve(&t.path().join("missing")).is_err());
    }
}
