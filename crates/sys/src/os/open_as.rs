//! How a file is opened or made, and what its metadata says of owners and links, as
//! portable values: the Unix flags and fields where there are some, nothing elsewhere.

use std::fs::{DirBuilder, Metadata, OpenOptions};

/// Makes `opts` create a new file with permission bits `mode` (Unix; elsewhere the
/// system's usual ones for a new file).
pub fn set_create_mode(opts: &mut OpenOptions, mode: u32) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(opts, mode);
    #[cfg(not(unix))]
    let _ = (opts, mode);
}

/// Makes `builder` create directories with permission bits `mode` (Unix; elsewhere the
/// system's usual ones).
pub fn set_dir_mode(builder: &mut DirBuilder, mode: u32) {
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(builder, mode);
    #[cfg(not(unix))]
    let _ = (builder, mode);
}

/// Makes `opts` fail on a symbolic link rather than follow it (`O_NOFOLLOW`, Unix;
/// elsewhere opened as the standard library does).
pub fn set_no_follow(opts: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(opts, libc::O_NOFOLLOW);
    #[cfg(not(unix))]
    let _ = opts;
}

/// [`set_no_follow`], and never waiting to open a FIFO or device (`O_NOFOLLOW |
/// O_NONBLOCK`, Unix; elsewhere opened as the standard library does).
pub fn set_no_follow_no_wait(opts: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(opts, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    #[cfg(not(unix))]
    let _ = opts;
}

/// How many names (hard links) the file of `meta` has (Unix); `None` where the metadata
/// does not say.
pub fn link_count(meta: &Metadata) -> Option<u64> {
    #[cfg(unix)]
    return Some(std::os::unix::fs::MetadataExt::nlink(meta));
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// The real user id of this process (Unix); `None` where files have no such owner.
pub fn process_uid() -> Option<u32> {
    #[cfg(unix)]
    // SAFETY: getuid has no preconditions and cannot fail.
    return Some(unsafe { libc::getuid() });
    #[cfg(not(unix))]
    None
}
