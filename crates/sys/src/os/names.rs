//! Names as the jobs write and recognise them: a file name cut to a length, a path that
//! names an open descriptor, a path with `/` separators, and the local time as text.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::path::Path;

/// `name`, cut to at most `max` bytes (Unix: bytes; elsewhere names are left whole).
pub fn name_cut_to(name: &OsStr, max: usize) -> OsString {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = name.as_bytes();
        OsStr::from_bytes(&bytes[..bytes.len().min(max)]).to_os_string()
    }
    #[cfg(not(unix))]
    {
        let _ = max;
        name.to_os_string()
    }
}

/// Whether `path` names an open descriptor (`/proc/PID/fd/N`, `/dev/fd/N`: Unix; never
/// elsewhere).
pub fn is_descriptor_name(path: &Path) -> bool {
    let bytes = crate::path_to_bytes(path);
    cfg!(unix) && (bytes.starts_with(b"/proc/") || bytes.starts_with(b"/dev/fd/")) && {
        let parent = path.parent().and_then(Path::file_name);
        parent == Some(OsStr::new("fd"))
    }
}

/// A path's bytes with `/` for its separators: on Windows every `\` is one and is turned
/// around (as `b3sum` writes names there); elsewhere the bytes as they are.
pub fn slashed(path: &[u8]) -> Cow<'_, [u8]> {
    #[cfg(windows)]
    if path.contains(&b'\\') {
        let slashed = path.iter().map(|&b| if b == b'\\' { b'/' } else { b });
        return Cow::Owned(slashed.collect());
    }
    Cow::Borrowed(path)
}

/// Now, in local time, as `2026-12-05T14:03:09` (Unix `localtime_r`); `None` where it
/// cannot be told.
pub fn local_now() -> Option<String> {
    #[cfg(unix)]
    {
        // SAFETY: `tm` is plain old data; all zeroes is a valid value of it.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        // SAFETY: `time(NULL)` only returns the time; `localtime_r` writes the `tm` we own
        // and returns NULL on failure, checked.
        let ok = unsafe {
            let t = libc::time(std::ptr::null_mut());
            !libc::localtime_r(&t, &mut tm).is_null()
        };
        if ok {
            return Some(format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                tm.tm_year + 1900,
                tm.tm_mon + 1,
                tm.tm_mday,
                tm.tm_hour,
                tm.tm_min,
                tm.tm_sec
            ));
        }
    }
    None
}
