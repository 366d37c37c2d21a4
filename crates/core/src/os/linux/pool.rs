//! Pools of filesystems that say where each file really lies: mergerfs (FUSE) answers the
//! extended attribute `user.mergerfs.fullpath` with the file's path on its branch
//! (<https://github.com/trapexit/mergerfs#runtime-interfaces>), a path FIEMAP can locate.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

const FULLPATH: &std::ffi::CStr = c"user.mergerfs.fullpath";

/// The path on its branch of the file open as `file`, if its filesystem is a pool that
/// says (mergerfs); `None` for any other answer (no such attribute, not supported).
pub fn branch_path(file: &File) -> Option<PathBuf> {
    // Asked once per file of a pool: a page on the stack first, a longer answer on the heap.
    let mut page = [0u8; 4096];
    let mut long = Vec::new();
    let mut buf: &mut [u8] = &mut page;
    for _ in 0..2 {
        // SAFETY: the descriptor is open for the call; the name is NUL-terminated; the
        // kernel writes at most `buf.len()` bytes into `buf`, which lives past the call.
        let n = unsafe {
            libc::fgetxattr(
                file.as_raw_fd(),
                FULLPATH.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n >= 0 {
            let mut answer = &buf[..n as usize];
            // mergerfs answers without a terminating NUL; take one off if a version adds it.
            if let [rest @ .., 0] = answer {
                answer = rest;
            }
            return (answer.first() == Some(&b'/'))
                .then(|| PathBuf::from(OsString::from_vec(answer.to_vec())));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::ERANGE) {
            return None;
        }
        // Longer than a page: ask for its length, once.
        // SAFETY: as above, with no buffer: the kernel only returns the length.
        let len = unsafe {
            libc::fgetxattr(file.as_raw_fd(), FULLPATH.as_ptr(), std::ptr::null_mut(), 0)
        };
        if len <= 0 {
            return None;
        }
        long.resize(len as usize, 0);
        buf = &mut long;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_no_pool_has_no_branch() {
        let f = tempfile::NamedTempFile::new().unwrap();
        assert_eq!(branch_path(f.as_file()), None);
    }
}
