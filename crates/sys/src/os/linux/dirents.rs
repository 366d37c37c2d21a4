//! Listing an open directory with `getdents64(2)` into a buffer the caller keeps: each
//! name is handed out borrowed from the buffer, so a listing costs no allocation per
//! entry. (`std::fs::ReadDir` makes two per entry, its name and the `OsString` handed out,
//! and opens the directory a second time; on a warm cache of 100,000 small files those
//! allocations, contended by the walk's threads, were a tenth of planning's CPU.)

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;

use crate::os::EntryType;

/// Bytes fetched per `getdents64` call (about 1,000 entries of photo-like names).
pub const LISTING_BUFFER: usize = 32 << 10;

/// `struct linux_dirent64`: `d_ino` (u64), `d_off` (i64), `d_reclen` (u16), `d_type` (u8),
/// then the NUL-terminated name.
const RECLEN_AT: usize = 16;
const TYPE_AT: usize = 18;
const NAME_AT: usize = 19;

/// Calls `each(name, inode, type)` for every entry of the directory open as `dir` but `.`
/// and `..`, reading from its current position, in `readdir` order. `buf` is the caller's
/// to reuse (grown to `LISTING_BUFFER` if smaller). An error ends the listing after the
/// entries already handed out.
pub fn list_open_dir(
    dir: &File,
    buf: &mut Vec<u8>,
    each: &mut dyn FnMut(&OsStr, u64, EntryType),
) -> io::Result<()> {
    if buf.len() < LISTING_BUFFER {
        buf.resize(LISTING_BUFFER, 0);
    }
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call, and
        // the descriptor is open; the kernel writes at most that many bytes and returns
        // how many it wrote.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                buf.as_mut_ptr().cast::<libc::c_void>(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(());
        }
        let filled = &buf[..n as usize];
        let mut at = 0;
        while at + NAME_AT < filled.len() {
            let record = &filled[at..];
            let reclen = u16::from_ne_bytes([record[RECLEN_AT], record[RECLEN_AT + 1]]) as usize;
            if reclen <= NAME_AT || reclen > record.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "malformed directory record from getdents64",
                ));
            }
            let ino = u64::from_ne_bytes(record[..8].try_into().expect("8 bytes"));
            let raw_name = &record[NAME_AT..reclen];
            let len = memchr::memchr(0, raw_name).unwrap_or(raw_name.len());
            let name = &raw_name[..len];
            at += reclen;
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match record[TYPE_AT] {
                libc::DT_REG => EntryType::File,
                libc::DT_DIR => EntryType::Dir,
                libc::DT_LNK => EntryType::Symlink,
                // FIFOs, sockets, devices, and filesystems that do not say (DT_UNKNOWN):
                // the walk asks lstat, which names them exactly.
                _ => EntryType::Unknown,
            };
            each(OsStr::from_bytes(name), ino, kind);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::DirEntryExt;

    /// What `std::fs::read_dir` lists: name → (inode, type).
    fn std_listing(dir: &std::path::Path) -> BTreeMap<Vec<u8>, (u64, EntryType)> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let ft = e.file_type().unwrap();
                (
                    e.file_name().as_bytes().to_vec(),
                    (e.ino(), EntryType::of(ft)),
                )
            })
            .collect()
    }

    #[test]
    fn lists_what_std_lists_across_many_buffer_fills_with_odd_names() {
        let t = tempfile::tempdir().unwrap();
        // Enough long names to take several getdents64 calls, and names std must not
        // see differently: non-UTF-8, 255 bytes, a newline.
        for i in 0..3000 {
            std::fs::write(t.path().join(format!("{i:04}-{}", "n".repeat(40))), b"").unwrap();
        }
        let odd = [
            OsStr::from_bytes(b"\xff\xfe latin-1 \xe9"),
            OsStr::from_bytes(&[b'x'; 255]),
            OsStr::new("line\nbreak"),
        ];
        for name in odd {
            std::fs::write(t.path().join(name), b"x").unwrap();
        }
        std::fs::create_dir(t.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", t.path().join("link")).unwrap();
        let fifo = std::ffi::CString::new(t.path().join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);

        let dir = File::open(t.path()).unwrap();
        let mut got = BTreeMap::new();
        let mut buf = Vec::new();
        list_open_dir(&dir, &mut buf, &mut |name, ino, kind| {
            assert!(
                got.insert(name.as_bytes().to_vec(), (ino, kind)).is_none(),
                "listed twice: {name:?}"
            );
        })
        .unwrap();
        let mut want = std_listing(t.path());
        // The FIFO is left for lstat to name.
        want.get_mut(&b"fifo"[..]).unwrap().1 = EntryType::Unknown;
        assert_eq!(got.len(), 3000 + 3 + 3);
        assert_eq!(got, want);
        assert_eq!(got[&b"sub"[..]].1, EntryType::Dir);
        assert_eq!(got[&b"link"[..]].1, EntryType::Symlink);
    }

    #[test]
    fn a_descriptor_that_is_not_a_directory_is_an_error() {
        let t = tempfile::NamedTempFile::new().unwrap();
        let err = list_open_dir(t.as_file(), &mut Vec::new(), &mut |_, _, _| {}).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR));
    }
}
