//! What an archiver asks of the system beyond reading: where a sparse file's data lies,
//! a link's target, extended attributes, and the names of users and groups. Paths of any
//! length work on Linux (see `linux/longpath.rs`).

use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The byte ranges of `file` (of `size` bytes) that hold data, in order; holes read as
/// zeros. Where the system cannot tell (no `SEEK_DATA`), the whole file is one range.
/// Leaves the file's offset unspecified.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub fn data_regions(file: &File, size: u64) -> io::Result<Vec<Range<u64>>> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let seek = |offset: u64, whence: i32| -> io::Result<Option<u64>> {
        // SAFETY: lseek on a descriptor we hold open; it only moves the file offset.
        let at = unsafe { libc::lseek(fd, offset as libc::off_t, whence) };
        if at >= 0 {
            return Ok(Some(at as u64));
        }
        let err = io::Error::last_os_error();
        // ENXIO: no data (or hole) at or after `offset`.
        if err.raw_os_error() == Some(libc::ENXIO) {
            Ok(None)
        } else {
            Err(err)
        }
    };
    let mut regions = Vec::new();
    let mut at = 0;
    while at < size {
        let start = match seek(at, libc::SEEK_DATA) {
            Ok(Some(start)) => start,
            Ok(None) => break,
            // Not supported here: all of it is data.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && regions.is_empty() => {
                return Ok(std::iter::once(0..size).collect());
            }
            Err(e) => return Err(e),
        };
        if start >= size {
            break;
        }
        let end = seek(start, libc::SEEK_HOLE)?.unwrap_or(size).min(size);
        regions.push(start..end);
        at = end;
    }
    Ok(regions)
}

/// The data regions of a file: here the whole file, as one region (no `SEEK_DATA`).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn data_regions(_file: &File, size: u64) -> io::Result<Vec<Range<u64>>> {
    Ok(std::iter::once(0..size).collect())
}

/// A symlink's target.
#[cfg(target_os = "linux")]
pub fn read_link(path: &Path) -> io::Result<PathBuf> {
    std::fs::read_link(&*super::sys_path(path)?)
}

/// The target of the symbolic link at `path`.
#[cfg(not(target_os = "linux"))]
pub fn read_link(path: &Path) -> io::Result<PathBuf> {
    std::fs::read_link(path)
}

/// The extended attributes of `path` itself (a symlink's own), as (name, value) pairs in
/// the order the filesystem lists them. Empty where the system has none to offer.
#[cfg(target_os = "linux")]
pub fn xattrs(path: &Path) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    let path = super::sys_path(path)?;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // Ask for the size, then fetch; retry if the list grew in between (ERANGE).
    let fetch = |buf: &mut Vec<u8>, call: &dyn Fn(*mut libc::c_void, usize) -> isize| loop {
        let want = call(std::ptr::null_mut(), 0);
        if want < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.resize(want as usize, 0);
        let got = call(buf.as_mut_ptr().cast(), buf.len());
        if got >= 0 {
            buf.truncate(got as usize);
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ERANGE) {
            return Err(err);
        }
    };
    let mut names = Vec::new();
    // SAFETY: `c` is a NUL-terminated path; the buffer pointer and length describe memory
    // we own (or are null and 0, which asks for the size).
    let listed = fetch(&mut names, &|p, n| unsafe {
        libc::llistxattr(c.as_ptr(), p.cast(), n)
    });
    match listed {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOTSUP) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    }
    let mut out = Vec::new();
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let cname = CString::new(name).expect("split at NUL");
        let mut value = Vec::new();
        // SAFETY: as above; `cname` is NUL-terminated.
        let got = fetch(&mut value, &|p, n| unsafe {
            libc::lgetxattr(c.as_ptr(), cname.as_ptr(), p, n)
        });
        match got {
            Ok(()) => out.push((name.to_vec(), value)),
            // Removed since it was listed.
            Err(e) if e.raw_os_error() == Some(libc::ENODATA) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// A file's extended attributes: none here.
#[cfg(not(target_os = "linux"))]
pub fn xattrs(_path: &Path) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    Ok(Vec::new())
}

/// A statically linked glibc (the static release binary, ci/release.sh) cannot load the
/// NSS modules `/etc/nsswitch.conf` may name after `files` (`systemd`, `ldap`, …: glibc
/// loads them with dlopen, which needs the exact glibc the binary was linked with). Such a
/// build looks users and groups up in `/etc/passwd` and `/etc/group` alone (`files` is
/// built into glibc since 2.34); a name found nowhere there is left out, as for any
/// unknown owner.
#[cfg(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))]
fn files_only_lookups() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    unsafe extern "C" {
        // glibc's `nss.h`: replaces the service line of one database for this process.
        fn __nss_configure_lookup(
            db: *const std::ffi::c_char,
            service_line: *const std::ffi::c_char,
        ) -> std::ffi::c_int;
    }
    ONCE.call_once(|| {
        // SAFETY: both arguments are NUL-terminated static strings; the call happens once,
        // before any lookup of this process (every lookup goes through this `Once`).
        unsafe {
            __nss_configure_lookup(c"passwd".as_ptr(), c"files".as_ptr());
            __nss_configure_lookup(c"group".as_ptr(), c"files".as_ptr());
        }
    });
}

#[cfg(all(
    unix,
    not(all(target_os = "linux", target_env = "gnu", target_feature = "crt-static"))
))]
fn files_only_lookups() {}

/// The name of user `uid`, if it has one.
#[cfg(unix)]
pub fn user_name(uid: u32) -> Option<Vec<u8>> {
    files_only_lookups();
    // SAFETY: getpwuid_r fills `pwd` (all-zero is a valid `passwd`: null pointers, zero
    // ids), pointing into `buf` of the length given, and sets `found` to `&pwd` or null;
    // on success `pw_name` is a NUL-terminated string inside `buf`.
    with_buffer(|buf| unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        );
        (rc, (!found.is_null()).then(|| name_at(pwd.pw_name)))
    })
}

/// The name of group `gid`, if it has one.
#[cfg(unix)]
pub fn group_name(gid: u32) -> Option<Vec<u8>> {
    files_only_lookups();
    // SAFETY: as for `user_name`, with getgrgid_r, `group` and `gr_name`.
    with_buffer(|buf| unsafe {
        let mut grp: libc::group = std::mem::zeroed();
        let mut found: *mut libc::group = std::ptr::null_mut();
        let rc = libc::getgrgid_r(
            gid,
            &mut grp,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        );
        (rc, (!found.is_null()).then(|| name_at(grp.gr_name)))
    })
}

/// Calls a `get*_r` lookup with a buffer, growing it while the lookup says it is too small
/// (`ERANGE`); `None` when it fails or finds nothing.
#[cfg(unix)]
fn with_buffer(mut lookup: impl FnMut(&mut [u8]) -> (i32, Option<Vec<u8>>)) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 1024];
    loop {
        match lookup(&mut buf) {
            (libc::ERANGE, _) if buf.len() < 1 << 20 => buf.resize(buf.len() * 4, 0),
            (0, name) => return name,
            _ => return None,
        }
    }
}

/// The bytes of a NUL-terminated name.
///
/// # Safety
/// `name` points to a NUL-terminated string.
#[cfg(unix)]
unsafe fn name_at(name: *const libc::c_char) -> Vec<u8> {
    // SAFETY: the caller's promise.
    unsafe { std::ffi::CStr::from_ptr(name) }
        .to_bytes()
        .to_vec()
}

/// The name of user `uid`: unknown here.
#[cfg(not(unix))]
pub fn user_name(_uid: u32) -> Option<Vec<u8>> {
    None
}

/// The name of group `gid`: unknown here.
#[cfg(not(unix))]
pub fn group_name(_gid: u32) -> Option<Vec<u8>> {
    None
}
