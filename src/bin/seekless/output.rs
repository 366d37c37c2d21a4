//! Writing paths: byte-exact where the format allows it.

use std::io::{self, Write};
use std::path::Path;

/// Writes the path's bytes as they are (non-UTF-8 names survive), then `end`.
pub fn write_path(out: &mut impl Write, path: &Path, end: u8) -> io::Result<()> {
    out.write_all(path_bytes(path).as_ref())?;
    out.write_all(&[end])
}

#[cfg(unix)]
pub fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(path.as_os_str().as_bytes())
}

#[cfg(not(unix))]
pub fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    match path.to_string_lossy() {
        std::borrow::Cow::Borrowed(s) => std::borrow::Cow::Borrowed(s.as_bytes()),
        std::borrow::Cow::Owned(s) => std::borrow::Cow::Owned(s.into_bytes()),
    }
}

/// The path for JSON: a string, plus the raw bytes when the name is not UTF-8 (JSON
/// strings cannot carry them).
pub fn json_path(path: &Path) -> (String, Option<Vec<u8>>) {
    match path.to_str() {
        Some(s) => (s.to_string(), None),
        None => (
            path.to_string_lossy().into_owned(),
            Some(path_bytes(path).into_owned()),
        ),
    }
}
