//! Trees for archive tests: building them (every kind of file, odd modes and stamps,
//! extended attributes) and comparing two of them entry by entry (type, mode, owner, mtime
//! to the nanosecond, content, symlink targets, hard links, xattrs, holes), with the small
//! system calls they need (mknod, mkfifo, utimensat, setxattr).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CString, OsStr};
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

// ---------------------------------------------------------------------------------------
// Trees: building them and comparing them.

/// What a tree entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink(Vec<u8>),
    Fifo,
    Char(u64),
    Block(u64),
    Socket,
}

/// What `lstat` (and `llistxattr`) say of one entry.
#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    /// Permission bits with setuid, setgid and sticky.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// A regular file's size (0 for the rest).
    pub size: u64,
    /// Seconds and nanoseconds.
    pub mtime: (i64, i64),
    pub ino: u64,
    pub nlink: u64,
    /// Bytes allocated (`st_blocks` × 512).
    pub allocated: u64,
    /// The `user.*` extended attributes.
    pub xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

pub fn node(path: &Path) -> Node {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = m.file_type();
    let kind = if t.is_file() {
        Kind::File
    } else if t.is_dir() {
        Kind::Dir
    } else if t.is_symlink() {
        Kind::Symlink(
            std::fs::read_link(path)
                .unwrap()
                .into_os_string()
                .into_vec(),
        )
    } else if t.is_fifo() {
        Kind::Fifo
    } else if t.is_char_device() {
        Kind::Char(m.rdev())
    } else if t.is_block_device() {
        Kind::Block(m.rdev())
    } else {
        Kind::Socket
    };
    Node {
        size: if kind == Kind::File { m.len() } else { 0 },
        xattrs: if matches!(kind, Kind::File | Kind::Dir) {
            xattrs(path)
        } else {
            BTreeMap::new()
        },
        kind,
        mode: m.mode() & 0o7777,
        uid: m.uid(),
        gid: m.gid(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ino: m.ino(),
        nlink: m.nlink(),
        allocated: m.blocks() * 512,
    }
}

/// Every entry under `root`, `root` itself included (as the empty path), by its path
/// relative to `root` as bytes.
pub fn scan(root: &Path) -> BTreeMap<Vec<u8>, Node> {
    let mut all = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let path = root.join(&rel);
        let n = node(&path);
        if n.kind == Kind::Dir {
            for e in std::fs::read_dir(&path).unwrap() {
                stack.push(rel.join(e.unwrap().file_name()));
            }
        }
        all.insert(rel.into_os_string().into_vec(), n);
    }
    all
}

pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether two files hold the same bytes (read in 1 MiB pieces: some are sparse GiBs).
pub fn same_content(a: &Path, b: &Path) -> bool {
    let mut fa = std::fs::File::open(a).unwrap();
    let mut fb = std::fs::File::open(b).unwrap();
    let mut ba = vec![0u8; 1 << 20];
    let mut bb = vec![0u8; 1 << 20];
    loop {
        let na = read_full(&mut fa, &mut ba);
        let nb = read_full(&mut fb, &mut bb);
        if na != nb || ba[..na] != bb[..nb] {
            return false;
        }
        if na == 0 {
            return true;
        }
    }
}

pub fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]).unwrap() {
            0 => break,
            k => n += k,
        }
    }
    n
}

/// What a comparison of an extracted tree with its source leaves out.
#[derive(Clone, Copy)]
pub struct Compare {
    /// Compare the `user.*` extended attributes (the archive has them: `--xattrs`).
    pub xattrs: bool,
    /// Compare mtimes to the nanosecond (else to the second).
    pub nanoseconds: bool,
}

pub const EVERYTHING: Compare = Compare {
    xattrs: true,
    nanoseconds: true,
};

/// The tree extracted at `dst` is the tree at `src`: the same names (sockets aside),
/// and for each the same kind, mode, owner, mtime, symlink target, device number,
/// content (regular files), extended attributes if asked; hard links of one source file
/// are one file again, and a sparse source file is sparse again.
pub fn assert_same_tree(src: &Path, dst: &Path, what: &str, compare: Compare) {
    let want: BTreeMap<Vec<u8>, Node> = scan(src)
        .into_iter()
        .filter(|(_, n)| n.kind != Kind::Socket)
        .collect();
    let got = scan(dst);
    let names = |m: &BTreeMap<Vec<u8>, Node>| m.keys().map(|k| lossy(k)).collect::<Vec<_>>();
    assert_eq!(names(&got), names(&want), "{what}: the names extracted");
    for (rel, w) in &want {
        let g = &got[rel];
        let shown = format!("{what}: {:?}", lossy(rel));
        assert_eq!(g.kind, w.kind, "{shown}: kind");
        assert_eq!(
            (g.mode, g.uid, g.gid),
            (w.mode, w.uid, w.gid),
            "{shown}: mode {:o}, owner",
            w.mode
        );
        if compare.nanoseconds {
            assert_eq!(g.mtime, w.mtime, "{shown}: mtime (seconds, nanoseconds)");
        } else {
            assert_eq!(g.mtime.0, w.mtime.0, "{shown}: mtime (seconds)");
        }
        if compare.xattrs {
            assert_eq!(g.xattrs, w.xattrs, "{shown}: user.* extended attributes");
        }
        if w.kind == Kind::File {
            assert_eq!(g.size, w.size, "{shown}: size");
            assert!(
                same_content(
                    &src.join(OsStr::from_bytes(rel)),
                    &dst.join(OsStr::from_bytes(rel))
                ),
                "{shown}: content differs"
            );
            if w.allocated < w.size {
                assert!(
                    g.allocated <= w.allocated + (1 << 20),
                    "{shown}: sparse source ({} of {} bytes allocated) extracted with {} \
                     bytes allocated: its holes were lost",
                    w.allocated,
                    w.size,
                    g.allocated
                );
            }
        }
    }
    // Hard links: names of one source file share an inode again, all of them.
    let mut groups: BTreeMap<u64, Vec<&Vec<u8>>> = BTreeMap::new();
    for (rel, w) in &want {
        if w.kind == Kind::File && w.nlink > 1 {
            groups.entry(w.ino).or_default().push(rel);
        }
    }
    for names in groups.values().filter(|g| g.len() > 1) {
        let inodes: BTreeSet<u64> = names.iter().map(|n| got[*n].ino).collect();
        let shown: Vec<String> = names.iter().map(|n| lossy(n)).collect();
        assert_eq!(
            inodes.len(),
            1,
            "{what}: {shown:?} are one file in the source but not once extracted"
        );
        assert_eq!(
            got[names[0]].nlink,
            names.len() as u64,
            "{what}: {shown:?}: link count once extracted"
        );
    }
}

pub fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// The `user.*` extended attributes of `path` (not following a symlink).
pub fn xattrs(path: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let c = c_path(path);
    let mut names = vec![0u8; 1 << 16];
    // SAFETY: the buffer is valid for its length; the path is NUL-terminated.
    let n = unsafe { libc::llistxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOTSUP) {
            return BTreeMap::new();
        }
        panic!("llistxattr {}: {e}", path.display());
    }
    let mut all = BTreeMap::new();
    for name in names[..n as usize].split(|b| *b == 0) {
        if !name.starts_with(b"user.") {
            continue;
        }
        let cname = CString::new(name).unwrap();
        let mut value = vec![0u8; 1 << 16];
        // SAFETY: as above; the name is NUL-terminated.
        let len = unsafe {
            libc::lgetxattr(
                c.as_ptr(),
                cname.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        assert!(
            len >= 0,
            "lgetxattr {} {}: {}",
            path.display(),
            lossy(name),
            std::io::Error::last_os_error()
        );
        value.truncate(len as usize);
        all.insert(name.to_vec(), value);
    }
    all
}

pub fn set_xattr(path: &Path, name: &str, value: &[u8]) {
    let c = c_path(path);
    let cname = CString::new(name).unwrap();
    // SAFETY: valid NUL-terminated strings and a buffer valid for its length.
    let rc = unsafe {
        libc::lsetxattr(
            c.as_ptr(),
            cname.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    assert_eq!(
        rc,
        0,
        "setting {name} on {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// Sets the mtime (and atime) of `path` itself, a symlink too.
pub fn set_mtime(path: &Path, sec: i64, nsec: i64) {
    let c = c_path(path);
    let t = libc::timespec {
        tv_sec: sec as libc::time_t,
        tv_nsec: nsec as _,
    };
    // SAFETY: a NUL-terminated path and an array of two timespecs.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            [t, t].as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(
        rc,
        0,
        "utimensat {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

pub fn mkfifo(path: &Path) {
    let c = c_path(path);
    // SAFETY: a NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// A character (`c`) or block (`b`) device node (root only).
pub fn mknod(path: &Path, kind: char, major: u32, minor: u32) {
    let c = c_path(path);
    let (fmt, perm) = match kind {
        'c' => (libc::S_IFCHR, 0o644),
        _ => (libc::S_IFBLK, 0o660),
    };
    // SAFETY: a NUL-terminated path and plain integers.
    let rc = unsafe { libc::mknod(c.as_ptr(), fmt | perm, libc::makedev(major, minor)) };
    assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
}

pub fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

pub fn symlink(target: impl AsRef<Path>, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// A tree with one of everything tar stores (`tree` is created):
///
/// plain files (empty, one block exactly, a few blocks, 100 kB), modes 0755, 0600 and
/// setuid, a sticky directory, nested directories, a file of three names, symlinks
/// (relative, absolute, dangling, to a directory), a FIFO and a socket, extended
/// attributes (one binary), and mtimes with and without nanoseconds, one before 1970 and
/// one after 2242 (past what the ustar header holds). As root also an owner that is not
/// root (uid 1234, gid 5678, no names) and two device nodes.
pub fn build_tree(tree: &Path, rng: &mut Rng) {
    let root = is_root();
    let dirs = ["", "dir", "dir/nested", "dir/nested/deep", "sticky"];
    for d in dirs {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    chmod(&tree.join("dir"), 0o750);
    chmod(&tree.join("sticky"), 0o1777);
    let files: [(&str, Vec<u8>); 10] = [
        ("empty", Vec::new()),
        ("small.txt", b"hello\n".to_vec()),
        ("exact-512", rng.bytes(512)),
        ("random-100k", rng.bytes(100_000)),
        ("exec.sh", b"#!/bin/sh\necho hi\n".to_vec()),
        ("private", rng.bytes(3000)),
        ("setuid", rng.bytes(1500)),
        ("dir/nested/deep/file", rng.bytes(20_000)),
        ("hard-a", rng.bytes(7000)),
        ("old", b"from 1950\n".to_vec()),
    ];
    for (name, data) in &files {
        std::fs::write(tree.join(name), data).unwrap();
    }
    std::fs::write(tree.join("future"), b"from 2300\n").unwrap();
    chmod(&tree.join("exec.sh"), 0o755);
    if root {
        std::os::unix::fs::lchown(tree.join("private"), Some(1234), Some(5678)).unwrap();
    }
    chmod(&tree.join("private"), 0o600);
    chmod(&tree.join("setuid"), 0o4755);
    std::fs::hard_link(tree.join("hard-a"), tree.join("dir/hard-b")).unwrap();
    std::fs::hard_link(tree.join("hard-a"), tree.join("hard-c")).unwrap();
    symlink("small.txt", &tree.join("link-rel"));
    symlink("/etc/hostname", &tree.join("link-abs"));
    symlink("nowhere", &tree.join("link-dangling"));
    symlink("dir", &tree.join("link-dir"));
    mkfifo(&tree.join("fifo"));
    if root {
        mknod(&tree.join("char-dev"), 'c', 1, 3);
        mknod(&tree.join("block-dev"), 'b', 7, 200);
    }
    drop(std::os::unix::net::UnixListener::bind(tree.join("sock")).unwrap());
    set_xattr(&tree.join("small.txt"), "user.comment", b"hello");
    set_xattr(&tree.join("random-100k"), "user.bin", b"\0\xff\x01binary\n");
    set_xattr(&tree.join("dir"), "user.dir", b"a directory's");
    // Distinct mtimes: whole seconds, nanoseconds, half seconds; then the two far ones.
    let mut all: Vec<Vec<u8>> = scan(tree).into_keys().collect();
    all.sort();
    for (i, rel) in all.iter().enumerate() {
        let nsec = match i % 3 {
            0 => 0,
            1 => (i as i64 * 123_456_789) % 1_000_000_000,
            _ => 500_000_000,
        };
        set_mtime(
            &tree.join(OsStr::from_bytes(rel)),
            1_600_000_000 + i as i64 * 86_401,
            nsec,
        );
    }
    set_mtime(&tree.join("old"), -631_152_000, 0);
    set_mtime(&tree.join("future"), 10_413_792_000, 1);
}

/// Random files under `dir`: `count` files of up to `max` bytes in a few directories.
pub fn random_files(dir: &Path, count: usize, max: u64, rng: &mut Rng) -> Vec<PathBuf> {
    (0..count)
        .map(|i| {
            let rel = PathBuf::from(format!("d{}/f{i:04}.bin", i % 3));
            std::fs::create_dir_all(dir.join(&rel).parent().unwrap()).unwrap();
            let len = rng.below(max) as usize + 1;
            std::fs::write(dir.join(&rel), rng.bytes(len)).unwrap();
            rel
        })
        .collect()
}

/// The entries of a directory, by name.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The archive as a byte stream is a POSIX one: ustar headers with the POSIX magic
/// (`ustar\0` `00`, not GNU's `ustar  \0`), two zero blocks at the end, padded to a
/// 10240-byte record.
pub fn assert_posix_layout(bytes: &[u8], what: &str) {
    assert!(bytes.len() >= 10240, "{what}: {} bytes", bytes.len());
    assert_eq!(
        bytes.len() % 10240,
        0,
        "{what}: {} bytes is not whole 10240-byte records",
        bytes.len()
    );
    assert_eq!(
        &bytes[257..265],
        b"ustar\x0000",
        "{what}: the first header's magic and version"
    );
    assert!(
        bytes[bytes.len() - 1024..].iter().all(|b| *b == 0),
        "{what}: the archive does not end with two zero blocks"
    );
}

/// `find . -print0` run in `dir`: every path under it, as bytes, sorted (find goes
/// through directories relative to each other: no path length limit).
pub fn find_paths(dir: &Path) -> Vec<Vec<u8>> {
    let out = run(Command::new("find").current_dir(dir).args([".", "-print0"]));
    let mut paths: Vec<Vec<u8>> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    paths.sort();
    paths
}
