//! The calls behind the acts: a rename that never replaces, flushing what it changed,
//! sharing a keeper's extents.

use std::fs;
use std::io;
use std::path::Path;

use super::check::{Checked, Known};
use seekless_sys as os;

/// Flushes the directories a rename changed (best effort: the rename itself is done).
pub(super) fn sync_parents(from: &Path, to: &Path) {
    for p in [from.parent(), to.parent()].into_iter().flatten() {
        let _ = os::sync_directory(p);
    }
}

/// Renames `from` to `to`, failing if `to` exists (`renameat2(RENAME_NOREPLACE)`; where
/// that is missing, a hard link then the old name's removal, which fails the same way).
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    if let Some(done) = os::rename_no_replace(from, to) {
        return done;
    }
    // No RENAME_NOREPLACE here: a link fails if the name is taken; then the old name goes
    // (the file has both names for an instant, never neither).
    os::with_paths(from, to, |a, b| fs::hard_link(a, b))?;
    // The old name of a file now also at `to`: the move's second half.
    #[allow(clippy::disallowed_methods)]
    os::with_path(from, |p| fs::remove_file(p))
}

/// Shares the keeper's extents with the file, range by range (`FIDEDUPERANGE`): the kernel
/// compares the bytes under its locks and shares only what is the same. Both are opened
/// anew and must be the very files checked.
pub(super) fn dedupe(checked: &Checked) -> io::Result<()> {
    let same = |path: &Path, m: &fs::Metadata, k: &Known| {
        m.is_file()
            && os::file_id(path, None, m).is_ok_and(|id| (id.dev, id.ino) == (k.dev, k.ino))
            && m.len() == k.size
    };
    os::share_extents(
        checked.keeper(),
        checked.path(),
        checked.file.size,
        |a, b| same(checked.keeper(), a, &checked.keeper) && same(checked.path(), b, &checked.file),
    )
}
