//! Paths as bytes and back: the one place that converts, for manifests, path lists and
//! output that must carry any name byte-exact. A leaf: imports nothing else from the
//! crate.
//!
//! On Unix a path is any bytes, so both ways are exact. Elsewhere (Windows) paths are
//! UTF-16 and the bytes are their UTF-8 form; names that are not valid Unicode are
//! replaced lossily, which is the best a byte format can carry there.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The bytes of `path`, as they are on Unix.
///
/// ```
/// assert_eq!(&*seekless_sys::path_to_bytes(std::path::Path::new("a/b")), b"a/b");
/// ```
#[cfg(unix)]
pub fn path_to_bytes(path: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(path.as_os_str().as_bytes())
}

/// The bytes of `path`: its UTF-8 form.
#[cfg(not(unix))]
pub fn path_to_bytes(path: &Path) -> Cow<'_, [u8]> {
    match path.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

/// The path whose bytes are `bytes`.
///
/// ```
/// assert_eq!(seekless_sys::path_from_bytes(b"a/b"), std::path::Path::new("a/b"));
/// ```
#[cfg(unix)]
pub fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// The path whose UTF-8 form is `bytes` (invalid sequences replaced).
#[cfg(not(unix))]
pub fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}
