//! Where `copy SOURCE... DEST` puts each source, by `cp`'s and rsync's rules, and the
//! refusals that keep a copy from running into itself.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{CopyError, CopyRoot};
use crate::atomic::{AtomicFile, parent_of};
use seekless_sys::{self as os, path_to_bytes};

/// Why sources and a destination make no copy. All but
/// [`Source`](ResolveError::Source) are mistakes in what was asked (`seekless copy` exits
/// with 2 for them, as for a usage error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// Several sources, and the destination exists but is not a directory.
    #[error("target '{}' is not a directory", dest.display())]
    NotADirectory {
        /// The destination.
        dest: PathBuf,
    },
    /// A source cannot be looked at (missing, permission denied).
    #[error("cannot stat {}", path.display())]
    Source {
        /// The source.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A directory would become a file's name.
    #[error(
        "cannot overwrite non-directory '{}' with directory '{}'",
        target.display(),
        dir.display()
    )]
    OverwriteNonDirectory {
        /// The source directory.
        dir: PathBuf,
        /// Where it would go: an existing file.
        target: PathBuf,
    },
    /// A directory would be copied to itself or into itself (directly, through `..` or
    /// through a symlink), which would copy what it is copying.
    #[error(
        "cannot copy a directory, '{}', into itself, '{}'",
        dir.display(),
        target.display()
    )]
    IntoItself {
        /// The source directory.
        dir: PathBuf,
        /// Where it would go, as `dir` or under it.
        target: PathBuf,
    },
}

/// Where each of `sources` goes when copied to `dest`, the same on every run (so a second
/// run resumes the first), as `seekless copy SOURCE... DEST` places them:
///
/// - a directory goes to `DEST/NAME` (DEST is made if missing), as `cp -a` does into an
///   existing directory; with a trailing slash (`SOURCE/`) its contents go to `DEST`, as
///   rsync does; `SOURCE/.`, `.`, `SOURCE/..` and `..` put the contents of the directory
///   they name into `DEST`, as `cp -a` and rsync both do;
/// - a file goes to `DEST/NAME` when `DEST` is a directory, ends in `/` or several sources
///   are given, else to `DEST` (a new name);
/// - several sources need `DEST` to be a directory, or not to exist yet.
///
/// Refused: a directory whose target is an existing non-directory, and a directory whose
/// target is itself or inside it, however the target is spelled (`..`, symlinks: the
/// deepest part of it that exists is resolved as the kernel will resolve it).
///
/// ```
/// use std::path::PathBuf;
/// use seekless_jobs::copy::{ResolveError, resolve_roots};
///
/// let dir = tempfile::tempdir()?;
/// let (src, backup) = (dir.path().join("photos"), dir.path().join("backup"));
/// std::fs::create_dir(&src)?;
/// let roots = resolve_roots(&[src.clone()], &backup)?;
/// assert_eq!((&roots[0].source, &roots[0].dest), (&src, &backup.join("photos")));
///
/// let inside = resolve_roots(&[src.clone()], &src.join("old/../backup"));
/// assert!(matches!(inside, Err(ResolveError::IntoItself { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve_roots(sources: &[PathBuf], dest: &Path) -> Result<Vec<CopyRoot>, ResolveError> {
    let dest_meta = std::fs::metadata(dest).ok();
    if sources.len() > 1 && dest_meta.as_ref().is_some_and(|m| !m.is_dir()) {
        return Err(ResolveError::NotADirectory {
            dest: dest.to_path_buf(),
        });
    }
    let dest_is_dir = dest_meta.as_ref().is_some_and(|m| m.is_dir())
        || sources.len() > 1
        || path_to_bytes(dest).ends_with(b"/");
    let mut roots = Vec::with_capacity(sources.len());
    for source in sources {
        let stat_error = |e| ResolveError::Source {
            path: source.clone(),
            source: e,
        };
        // A symlink named as a source is copied as the link it is (as `cp -a` and rsync copy
        // it), unless named as a directory (`LINK/`, `LINK/.`): `lstat` follows it then.
        let is_dir = std::fs::symlink_metadata(source)
            .map_err(stat_error)?
            .is_dir();
        let contents = names_contents(source);
        let target = if is_dir && contents || !is_dir && !dest_is_dir {
            dest.to_path_buf()
        } else {
            let name = std::path::absolute(source)
                .map_err(stat_error)?
                .file_name()
                .map(|n| n.to_os_string())
                .unwrap_or_else(|| ".".into());
            dest.join(name)
        };
        if is_dir && target.exists() && !target.is_dir() {
            return Err(ResolveError::OverwriteNonDirectory {
                dir: source.clone(),
                target,
            });
        }
        if is_dir && is_inside(&target, source) {
            return Err(ResolveError::IntoItself {
                dir: source.clone(),
                target,
            });
        }
        roots.push(CopyRoot::new(source.clone(), target));
    }
    Ok(roots)
}

/// Whether a source names a directory's contents rather than the directory: `DIR/` (as
/// rsync reads it), and, as `cp -a` and rsync both read them, `DIR/.`, `.`, `DIR/..` and
/// `..` (a last component that is not a name).
fn names_contents(source: &Path) -> bool {
    let bytes = path_to_bytes(source);
    let last = bytes.rsplit(|&b| b == b'/').next().unwrap_or_default();
    bytes.ends_with(b"/") || last == b"." || last == b".."
}

/// Whether `path` (which may not exist yet) is directory `dir` or inside it.
pub(super) fn is_inside(path: &Path, dir: &Path) -> bool {
    let Ok(dir) = seekless_sys::Scope::resolve(dir) else {
        return false;
    };
    resolved(path).is_some_and(|p| dir.contains(&p))
}

/// `path` as the kernel will resolve it once the missing directories on the way are made:
/// absolute, each existing prefix resolved (symlinks followed, so a `..` after one
/// goes to the parent of where it leads), `..` after a missing name going back to the
/// directory that will hold it. `None` if the current directory is unknown.
fn resolved(path: &Path) -> Option<PathBuf> {
    let path = std::path::absolute(path).ok()?;
    let mut full = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => full.push(component),
            Component::CurDir => {}
            // `full` is resolved: no symlinks, so its parent is its parent by name.
            Component::ParentDir => {
                full.pop();
            }
            Component::Normal(name) => {
                full.push(name);
                if let Ok(real) = std::fs::canonicalize(&full) {
                    full = real;
                }
            }
        }
    }
    Some(full)
}

/// Before anything is read: roots made by hand get the protection `resolve_roots` gives
/// (a directory copied into itself would copy what it is copying); a file is not written
/// through a dangling link (as `cp` refuses it), and the link is not replaced either; each
/// destination directory is made and must be writable.
pub(super) fn check_destinations(roots: &[CopyRoot]) -> Result<(), CopyError> {
    for root in roots {
        if os::symlink_metadata(&root.source).is_ok_and(|m| m.is_dir())
            && is_inside(&root.dest, &root.source)
        {
            return Err(ResolveError::IntoItself {
                dir: root.source.clone(),
                target: root.dest.clone(),
            }
            .into());
        }
    }
    for root in roots {
        let dangling = os::symlink_metadata(&root.dest).is_ok_and(|m| m.is_symlink())
            && os::metadata(&root.dest).is_err();
        if dangling {
            return Err(CopyError::Destination {
                path: root.dest.clone(),
                source: io::Error::other("not writing through dangling symlink"),
            });
        }
    }
    for dir in destination_dirs(roots) {
        fs::create_dir_all(&dir)
            .and_then(|()| AtomicFile::create_private(&dir.join("probe")).map(drop))
            .map_err(|source| CopyError::Destination {
                path: dir.clone(),
                source,
            })?;
    }
    Ok(())
}

/// The directory each root writes into: its destination for a directory, the
/// destination's parent for anything else.
pub(super) fn destination_dirs(roots: &[CopyRoot]) -> Vec<PathBuf> {
    roots
        .iter()
        .map(|root| match os::symlink_metadata(&root.source) {
            Ok(m) if m.is_dir() => root.dest.clone(),
            _ => parent_of(&root.dest).to_path_buf(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory with `src/a` and `src/sub/b`.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::write(src.join("a"), b"a").unwrap();
        std::fs::write(src.join("sub/b"), b"b").unwrap();
        (t, src)
    }

    fn slash(p: &Path) -> PathBuf {
        let mut s = p.as_os_str().to_owned();
        s.push("/");
        s.into()
    }

    fn targets(roots: &[CopyRoot]) -> Vec<(&Path, &Path)> {
        roots
            .iter()
            .map(|r| (r.source.as_path(), r.dest.as_path()))
            .collect()
    }

    fn refused_into_itself(sources: &[PathBuf], dest: &Path) -> bool {
        matches!(
            resolve_roots(sources, dest),
            Err(ResolveError::IntoItself { .. })
        )
    }

    #[test]
    fn a_last_component_that_is_not_a_name_copies_the_contents() {
        let (t, src) = tree();
        let dest = t.path().join("dest");
        for form in ["/.", "/sub/..", "/"] {
            let mut s = src.as_os_str().to_owned();
            s.push(form);
            let roots = resolve_roots(&[PathBuf::from(&s)], &dest).unwrap();
            assert_eq!(roots[0].dest, dest, "{form}");
        }
        let roots = resolve_roots(std::slice::from_ref(&src), &dest).unwrap();
        assert_eq!(roots[0].dest, dest.join("src"));
        assert!(names_contents(Path::new(".")) && names_contents(Path::new("..")));
        assert!(!names_contents(Path::new("a.")) && !names_contents(Path::new("..a")));
    }

    #[test]
    fn a_destination_inside_the_source_is_refused() {
        let (_t, src) = tree();
        let one = std::slice::from_ref(&src);
        assert!(refused_into_itself(one, &src.join("sub/new")));
        assert!(refused_into_itself(one, &src), "src into src/src");
        assert!(refused_into_itself(&[slash(&src)], &src.join("sub")));
        assert!(refused_into_itself(&[src.join("sub")], &src));
        let err = resolve_roots(one, &src.join("sub")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot copy a directory, '{}', into itself, '{}'",
                src.display(),
                src.join("sub").join("src").display()
            )
        );
    }

    #[test]
    fn a_destination_reaching_into_the_source_through_dotdot_is_refused() {
        let (t, src) = tree();
        let one = std::slice::from_ref(&src);
        // Through a directory that does not exist yet: made, then left by `..`.
        assert!(refused_into_itself(one, &src.join("new/..")));
        assert!(refused_into_itself(one, &src.join("new/deeper/../../sub")));
        assert!(refused_into_itself(
            one,
            &t.path().join("elsewhere/../src/x")
        ));
        assert!(refused_into_itself(one, &src.join("sub/../../src")));
        // Out of it again: allowed.
        let out = src.join("new/../../out");
        assert_eq!(
            targets(&resolve_roots(one, &out).unwrap()),
            [(src.as_path(), out.join("src").as_path())]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_destination_reaching_into_the_source_through_a_symlink_is_refused() {
        let (t, src) = tree();
        let one = std::slice::from_ref(&src);
        let link = t.path().join("link-into-src");
        std::os::unix::fs::symlink(src.join("sub"), &link).unwrap();
        assert!(refused_into_itself(one, &link.join("x")));
        assert!(refused_into_itself(one, &link));
        // `..` after a symlink is the parent of where it leads: inside the source.
        assert!(refused_into_itself(one, &link.join("../x")));
        // A symlink out of the source is fine.
        let out = t.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let link_out = src.join("link-out");
        std::os::unix::fs::symlink(&out, &link_out).unwrap();
        assert!(resolve_roots(&[src.join("sub")], &link_out).is_ok());
    }

    #[test]
    fn several_sources_go_into_an_existing_directory_by_name() {
        let (t, src) = tree();
        let dest = t.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        let sources = [src.join("a"), src.join("sub")];
        let roots = resolve_roots(&sources, &dest).unwrap();
        assert_eq!(
            targets(&roots),
            [
                (sources[0].as_path(), dest.join("a").as_path()),
                (sources[1].as_path(), dest.join("sub").as_path())
            ]
        );
        // Or into one not made yet.
        let new = t.path().join("new");
        let roots = resolve_roots(&sources, &new).unwrap();
        assert_eq!(roots[0].dest, new.join("a"));
    }

    #[test]
    fn several_sources_need_a_directory() {
        let (_t, src) = tree();
        let file = src.join("a");
        let got = resolve_roots(&[src.join("sub/b"), src.join("sub")], &file);
        assert!(
            matches!(&got, Err(ResolveError::NotADirectory { dest }) if *dest == file),
            "{got:?}"
        );
    }

    #[test]
    fn a_single_file_goes_to_a_new_name_or_into_a_directory() {
        let (t, src) = tree();
        let a = src.join("a");
        let new = t.path().join("renamed");
        assert_eq!(
            resolve_roots(std::slice::from_ref(&a), &new).unwrap()[0].dest,
            new
        );
        let as_dir = slash(&new);
        assert_eq!(
            resolve_roots(std::slice::from_ref(&a), &as_dir).unwrap()[0].dest,
            as_dir.join("a")
        );
        assert_eq!(
            resolve_roots(std::slice::from_ref(&a), t.path()).unwrap()[0].dest,
            t.path().join("a")
        );
    }

    #[test]
    fn a_directory_goes_under_its_name_or_its_contents_into_dest() {
        let (t, src) = tree();
        let new = t.path().join("new");
        assert_eq!(
            resolve_roots(std::slice::from_ref(&src), &new).unwrap()[0].dest,
            new.join("src")
        );
        assert_eq!(resolve_roots(&[slash(&src)], &new).unwrap()[0].dest, new);
    }

    #[test]
    fn a_directory_does_not_overwrite_a_file() {
        let (t, src) = tree();
        let file = t.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let got = resolve_roots(&[slash(&src)], &file);
        assert!(
            matches!(got, Err(ResolveError::OverwriteNonDirectory { .. })),
            "{got:?}"
        );
    }

    #[test]
    fn a_missing_source_is_named_with_its_error() {
        let (t, _src) = tree();
        let missing = t.path().join("missing");
        let got = resolve_roots(std::slice::from_ref(&missing), &t.path().join("dest"));
        match got {
            Err(ResolveError::Source { path, source }) => {
                assert_eq!(path, missing);
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn copy_refuses_a_root_made_by_hand_that_goes_into_its_source() {
        let (t, src) = tree();
        let roots = [CopyRoot::new(&src, src.join("sub/../copy"))];
        let opts = super::super::CopyOptions::default();
        let got = super::super::copy(
            &roots,
            &seekless_core::PlanOptions::default(),
            &opts,
            &seekless_core::Quiet,
        );
        assert!(
            matches!(
                got,
                Err(super::super::CopyError::Roots(
                    ResolveError::IntoItself { .. }
                ))
            ),
            "{got:?}"
        );
        assert!(!src.join("copy").exists(), "nothing was made");
        drop(t);
    }
}
