//! The destination lock: one run at a time writes into a destination directory.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::PathBuf;

use super::evidence::identity;
use seekless_sys as os;

/// Destination directories held by one run: a second run writing into one of them sees
/// the lock (`flock` on the directory, which works across PID namespaces) and is refused,
/// naming the first. Held until dropped. Where a directory cannot be locked (not Unix, a
/// filesystem without locks) the run goes on unlocked.
#[derive(Debug)]
pub(crate) struct DestinationLock {
    _held: Vec<File>,
}

/// Another run holds a destination.
#[derive(Debug)]
pub(crate) struct Held {
    /// The directory.
    pub path: PathBuf,
    /// Who holds it, as far as the system says.
    pub holder: String,
}

impl DestinationLock {
    /// Locks each of `dirs` (each directory once, however it is named).
    pub(crate) fn take(dirs: &[PathBuf]) -> Result<DestinationLock, Held> {
        let mut held: Vec<File> = Vec::new();
        let mut ids = HashSet::new();
        for dir in dirs {
            if identity(dir).is_some_and(|id| !ids.insert(id)) {
                continue;
            }
            let Ok(file) = os::open_directory(dir) else {
                continue;
            };
            match file.try_lock() {
                Ok(()) => held.push(file),
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(Held {
                        path: dir.clone(),
                        holder: os::lock_holder(dir)
                            .unwrap_or_else(|| "another seekless run".to_string()),
                    });
                }
                Err(fs::TryLockError::Error(_)) => {}
            }
        }
        Ok(DestinationLock { _held: held })
    }
}
