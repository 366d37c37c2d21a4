//! Paths in the forms other formats write them, with `/` separators: a tar member's name
//! and a `file:` URI. On Unix a path's bytes are that form already; on Windows the
//! separators are turned around and the drive is dealt with.

use std::borrow::Cow;
use std::path::Path;

use crate::path_bytes::path_to_bytes;

/// The bytes of `path` as an archive member's name starts from: on Windows with `/`
/// separators and no drive (`C:`); elsewhere its bytes as they are.
#[cfg(windows)]
pub fn member_name_bytes(path: &Path) -> Cow<'_, [u8]> {
    let mut b: Vec<u8> = path_to_bytes(path)
        .iter()
        .map(|&c| if c == b'\\' { b'/' } else { c })
        .collect();
    if b.len() >= 2 && b[1] == b':' {
        b.drain(..2);
    }
    Cow::Owned(b)
}

/// A path's bytes as an archive member's name: on Unix its own bytes.
#[cfg(not(windows))]
pub fn member_name_bytes(path: &Path) -> Cow<'_, [u8]> {
    path_to_bytes(path)
}

/// The bytes of the absolute path `absolute` as the path of a `file:` URI, not yet
/// percent-encoded: on Unix its bytes; elsewhere its UTF-8 form with `/` separators and
/// one leading `/` (`C:\x` becomes `/C:/x`).
#[cfg(unix)]
pub fn uri_path_bytes(absolute: &Path) -> Vec<u8> {
    path_to_bytes(absolute).into_owned()
}

/// The path part of a `file:` URI for `absolute`: `/` separators, the drive after a `/`.
#[cfg(not(unix))]
pub fn uri_path_bytes(absolute: &Path) -> Vec<u8> {
    let s = absolute.to_string_lossy().replace('\\', "/");
    format!("/{}", s.trim_start_matches('/')).into_bytes()
}
