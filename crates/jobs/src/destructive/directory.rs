//! A copy's directory made where something else (a file, a link) stands.

use std::fs;
use std::io;
use std::path::Path;

use super::evidence::Clearance;
use super::tree::{Lies, on_mount};
use crate::temp::temp_beside;
use seekless_sys as os;
use seekless_sys::{exchange_unsupported, rename_exchange};

/// Makes the directory `dest`, the copy of `source` (a directory this run saw); returns
/// whether it made one (false: one was there). Where something else stands (a file, a
/// link), it is replaced only with a clearance (the walk saw everything) that neither
/// shields nor spares it.
pub(crate) fn make_directory(
    dest: &Path,
    source: &seekless_core::Other,
    clearance: Option<&Clearance>,
) -> io::Result<bool> {
    if !source.metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a directory in the source",
        ));
    }
    match os::symlink_metadata(dest) {
        Ok(m) if m.is_dir() => return Ok(false),
        Ok(m) => {
            let refused = match clearance {
                None => Some("errors in this run"),
                Some(c) if c.shields(dest) => Some("the run could not see everything there"),
                Some(c) => c.spares(dest, &m),
            };
            if let Some(why) = refused {
                return Err(io::Error::other(format!(
                    "a file is in the way of this directory; not replaced: {why}"
                )));
            }
            // A file bind-mounted here is another mount's.
            if let Err(e) = on_mount(
                dest,
                &m,
                Lies::at(crate::temp::parent_of(dest))?,
                "not replaced",
            ) {
                return Err(io::Error::other(format!(
                    "a file is in the way of this directory; {}",
                    e.message()
                )));
            }
            return replace_with_directory(dest);
        }
        Err(_) => {}
    }
    os::with_path(dest, |p| fs::create_dir(p)).map(|()| true)
}

/// Puts a new directory in place of the file or link at `dest` (cleared by the caller): the
/// directory is made beside it under a temporary name and exchanged with it
/// (`RENAME_EXCHANGE`), so that at every moment one of the two is at `dest`, and the file,
/// then under the temporary name, is removed after. Where the filesystem cannot exchange,
/// the file is removed first and the directory made after (a kill between the two leaves
/// neither: the next run makes the directory). A kill between making the temporary
/// directory and the exchange leaves it, empty, under its temporary name: no run removes
/// a directory by such a name (only files whose lock proves their run dead), so it stays.
pub(super) fn replace_with_directory(dest: &Path) -> io::Result<bool> {
    let temp = temp_beside(dest);
    os::with_path(&temp, |p| fs::create_dir(p))?;
    // The one place a file or link in the way of a directory is removed, and the
    // temporary directory made for it if it could not be used.
    #[allow(clippy::disallowed_methods)]
    match rename_exchange(&temp, dest) {
        Ok(()) => {
            #[cfg(feature = "test-hooks")]
            seekless_core::test_hooks::mid_replace(dest);
            // `temp` is the file now.
            os::with_path(&temp, |p| fs::remove_file(p))?;
            Ok(true)
        }
        Err(e) => {
            let _ = os::with_path(&temp, |p| fs::remove_dir(p));
            if !exchange_unsupported(&e) {
                return Err(e);
            }
            os::with_path(dest, |p| fs::remove_file(p))?;
            #[cfg(feature = "test-hooks")]
            seekless_core::test_hooks::mid_replace(dest);
            os::with_path(dest, |p| fs::create_dir(p)).map(|()| true)
        }
    }
}
