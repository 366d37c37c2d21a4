//! [`Forget`]: catalog rows of files provably gone.

use std::fs;
use std::path::Path;

use super::acts;
use super::evidence::Clearance;
use super::tree::through_a_link;

/// Whether no regular file is at `path` now. There means a regular file at that very path:
/// reached through a directory that is a symbolic link now, it is at another path, one a
/// walk never takes. Only "no such file", a directory on the way that is not one any more,
/// something that is not a file any more, or a file reached through a link, is proof.
pub(super) fn absent(path: &Path) -> bool {
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
    pub fn moved_away<'m>(rows: impl IntoIterator<Item = (i64, &'m acts::Moved)>) -> Forget {
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
