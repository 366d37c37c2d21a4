//! Making an act ready ([`Prepared`]) before it is journalled: what can be checked before
//! it, and what it needs put in place.

use std::io;
use std::path::{Path, PathBuf};

use super::act::{Act, under};
use super::places::Places;
use super::trash;
use seekless_core::Error;
use seekless_jobs::destructive::Lies;
use seekless_jobs::destructive::acts::{Checked, PendingInfo, TrashInfo};
use seekless_sys as os;
use seekless_sys::describe_io;

/// An act made ready, everything it needs in place, nothing done to the file yet.
pub(super) enum Prepared {
    /// Nothing to do (a hard link or reflink to the keeper's own file).
    Nothing,
    Move(PathBuf),
    /// The `.trashinfo` chosen (written once journalled), and the path in the trash.
    Trash(PendingInfo, PathBuf),
    /// The same, its `.trashinfo` written.
    Trashing(TrashInfo, PathBuf),
    /// The name the link to the keeper gets beside the file (journalled before it is made).
    HardLink(PathBuf),
    Reflink,
}

/// Makes `act` on `checked` ready: checks what can be checked before it, and puts in place
/// what it needs, leaving the file as it is (it is looked at again just before the act).
pub(super) fn prepare(
    checked: &Checked,
    act: &Act,
    places: &mut Places,
) -> Result<Prepared, Error> {
    let path = checked.path();
    let fail = |why: String| Error::io(path, io::Error::other(why));
    if !checked.identical() && !act.keeps_the_bytes() {
        return Err(fail(format!(
            "not identical to its keeper: only moved or put in the trash, never {}",
            act.name()
        )));
    }
    if checked.is_its_keeper() {
        return match act {
            // Done already.
            Act::HardLink { .. } | Act::Reflink => Ok(Prepared::Nothing),
            _ => Err(fail(format!(
                "it is its keeper {} under another name (a hard link or a bind mount): left, removing it would free nothing",
                checked.keeper().display()
            ))),
        };
    }
    match act {
        Act::Move(dir) => {
            let to = under(dir, path);
            let parent = to.parent().unwrap_or(dir);
            // Nothing is made under a folder on another filesystem; nor moved across a
            // mount point or a link inside it.
            let mount = Lies::at(path).map_err(|e| fail(describe_io(&e)))?;
            places.folder_on(parent, mount).map_err(fail)?;
            Ok(Prepared::Move(to))
        }
        Act::Trash => {
            let folder = path.parent().unwrap_or(path).to_path_buf();
            let place = places
                .trashes
                .entry(folder)
                .or_insert_with(|| trash::place_for(path, checked.known_file().dev))
                .as_mut()
                .map_err(|why| fail(why.clone()))?;
            let (info, files) = place.reserve(path).map_err(fail)?;
            Ok(Prepared::Trash(info, files))
        }
        Act::HardLink {
            metadata_may_differ,
        } => {
            checked
                .keeper_still(places.keeper_ctime(checked))
                .map_err(|why| fail(format!("its keeper {}: {why}", checked.keeper().display())))?;
            if checked.known_keeper().dev != checked.known_file().dev {
                return Err(fail(
                    "its keeper is on another filesystem: no hard link".into(),
                ));
            }
            if !metadata_may_differ && let Some(what) = metadata_differs(path, checked.keeper()) {
                return Err(fail(format!(
                    "its {what} differ from its keeper's {}: not linked (a link has one \
                     owner, mode and set of attributes; --link-any-metadata links all the \
                     same, the keeper's winning)",
                    checked.keeper().display()
                )));
            }
            // Made just before the act, under this name, journalled first: a run killed
            // in between leaves a name its journal gives (see `clean_up`).
            Ok(Prepared::HardLink(checked.link_name()))
        }
        Act::Reflink => Ok(Prepared::Reflink),
    }
}

/// What of a file's metadata a user sees that differs from `keeper`'s, if anything:
/// owner, group, permission bits, extended attributes (ACLs among them).
pub(super) fn metadata_differs(file: &Path, keeper: &Path) -> Option<&'static str> {
    let attrs = |p: &Path| os::symlink_metadata(p).map(|m| os::attrs(&m));
    let (Ok(a), Ok(b)) = (attrs(file), attrs(keeper)) else {
        return Some("owner and mode (they could not be read)");
    };
    if (a.uid, a.gid) != (b.uid, b.gid) {
        return Some("owner or group");
    }
    if a.mode & 0o7777 != b.mode & 0o7777 {
        return Some("permissions");
    }
    let sorted = |p: &Path| {
        os::xattrs(p).map(|mut x| {
            x.sort();
            x
        })
    };
    match (sorted(file), sorted(keeper)) {
        (Ok(x), Ok(y)) if x == y => None,
        (Ok(_), Ok(_)) => Some("extended attributes or ACLs"),
        _ => Some("extended attributes (they could not be read)"),
    }
}
