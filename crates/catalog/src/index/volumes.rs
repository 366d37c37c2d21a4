//! Which volume each device number of an index run is: the filesystems known by identity
//! (`seekless_sys::volume_identity`), so that a drive mounted again, on another port or from
//! another machine, keeps its rows, and one that is absent is told apart from a folder
//! emptied (docs/index.md, "Volumes").

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use seekless_core::Plan;
use seekless_sys::VolumeIdentity;

/// Looks at most this many files of one device number for its volume (each one that
/// fails, then its directory): a few unreadable files do not leave a drive unidentified.
const TRIES: usize = 4;

/// Each device number of the planned and unopened files, with its volume when one of its
/// files (or the file's directory) could be looked at and was still on that device.
pub(super) fn identify(
    plan: &Plan,
    unopened: &[(PathBuf, std::fs::Metadata, String)],
) -> Vec<(u64, Option<VolumeIdentity>)> {
    let mut tries: HashMap<u64, (usize, Option<VolumeIdentity>)> = HashMap::new();
    let mut order = Vec::new();
    let planned = plan
        .files()
        .iter()
        .map(|f| (f.entry.id.dev, &*f.entry.path));
    let failed = unopened.iter().filter_map(|(path, meta, _)| {
        let id = seekless_sys::file_id(path, None, meta).ok()?;
        Some((id.dev, path.as_path()))
    });
    for (dev, path) in planned.chain(failed) {
        let (n, found) = tries.entry(dev).or_insert_with(|| {
            order.push(dev);
            (0, None)
        });
        if found.is_some() || *n >= TRIES {
            continue;
        }
        *n += 1;
        *found = look(dev, path);
    }
    order
        .into_iter()
        .map(|dev| (dev, tries.remove(&dev).and_then(|(_, v)| v)))
        .collect()
}

/// The volume of the device `dev` of the file at `path`: through its mount point, else
/// the file itself, else its directory.
fn look(dev: u64, path: &Path) -> Option<VolumeIdentity> {
    seekless_sys::volume_identity_of_device(dev, path)
        .ok()
        .or_else(|| seekless_sys::volume_identity_of_device(dev, path.parent()?).ok())
}
